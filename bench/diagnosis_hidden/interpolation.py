"""Interpolation with hand-written backwards: 1-D linear interpolation in a table, hand-written
bilinear sampling of an image, nearest 2x upsampling of rows, linear 2x upsampling of columns
(bench/diagnosis_hidden)."""
import torch


def _gen(seed):
    return torch.Generator().manual_seed(seed)


def _interp_inputs():
    table = torch.randn(6, dtype=torch.float64, generator=_gen(50))
    # several points share a cell, so the table gradient must accumulate repeated indices
    t = torch.tensor([0.3, 0.7, 2.2, 2.45, 2.8, 4.6, 4.1, 1.5], dtype=torch.float64)
    return table, t


def _interp_parts(table, t):
    idx = t.floor().long()
    frac = t - idx.to(t.dtype)
    return idx, frac


class HiddenLinearInterp(torch.autograd.Function):
    """y = (1 - f) table[i] + f table[i + 1], i = floor(t), f = t - i."""

    bug = None

    @staticmethod
    def forward(ctx, table, t):
        idx, frac = _interp_parts(table, t)
        ctx.save_for_backward(table, idx, frac)
        return (1 - frac) * table[idx] + frac * table[idx + 1]

    @staticmethod
    def backward(ctx, grad_out):
        table, idx, frac = ctx.saved_tensors
        grad_table = torch.zeros_like(table)
        grad_table.index_add_(0, idx, grad_out * (1 - frac))
        grad_table.index_add_(0, idx + 1, grad_out * frac)
        return grad_table, grad_out * (table[idx + 1] - table[idx])

    @staticmethod
    def example_inputs():
        return _interp_inputs()


class HiddenLinearInterpTableWrite(torch.autograd.Function):
    bug = {"kind": "not_accumulated", "input": "table",
           "note": "indexed assignment: points sharing a cell overwrite each other's gradient"}

    @staticmethod
    def forward(ctx, table, t):
        idx, frac = _interp_parts(table, t)
        ctx.save_for_backward(table, idx, frac)
        return (1 - frac) * table[idx] + frac * table[idx + 1]

    @staticmethod
    def backward(ctx, grad_out):
        table, idx, frac = ctx.saved_tensors
        grad_table = torch.zeros_like(table)
        grad_table[idx] = grad_out * (1 - frac)  # BUG
        grad_table.index_add_(0, idx + 1, grad_out * frac)
        return grad_table, grad_out * (table[idx + 1] - table[idx])

    @staticmethod
    def example_inputs():
        return _interp_inputs()


def _bilinear_inputs():
    image = torch.randn(4, 5, dtype=torch.float64, generator=_gen(51))
    xs = torch.tensor([0.25, 1.6, 3.3, 2.7, 0.9], dtype=torch.float64)
    ys = torch.tensor([0.4, 2.35, 1.2, 0.65, 2.8], dtype=torch.float64)
    return image, xs, ys


def _corners(image, xs, ys):
    x0 = xs.floor().long()
    y0 = ys.floor().long()
    fx = xs - x0.to(xs.dtype)
    fy = ys - y0.to(ys.dtype)
    c00 = image[y0, x0]
    c01 = image[y0, x0 + 1]
    c10 = image[y0 + 1, x0]
    c11 = image[y0 + 1, x0 + 1]
    return x0, y0, fx, fy, (c00, c01, c10, c11)


def _bilinear_forward(ctx, image, xs, ys):
    x0, y0, fx, fy, (c00, c01, c10, c11) = _corners(image, xs, ys)
    ctx.save_for_backward(image, xs, ys)
    ctx.image_shape = image.shape
    top = c00 * (1 - fx) + c01 * fx
    bottom = c10 * (1 - fx) + c11 * fx
    return top * (1 - fy) + bottom * fy


def _image_grad(shape, x0, y0, fx, fy, grad_out):
    grad = torch.zeros(shape, dtype=grad_out.dtype)
    grad.index_put_((y0, x0), grad_out * (1 - fx) * (1 - fy), accumulate=True)
    grad.index_put_((y0, x0 + 1), grad_out * fx * (1 - fy), accumulate=True)
    grad.index_put_((y0 + 1, x0), grad_out * (1 - fx) * fy, accumulate=True)
    grad.index_put_((y0 + 1, x0 + 1), grad_out * fx * fy, accumulate=True)
    return grad


class HiddenBilinearSample(torch.autograd.Function):
    """Samples image[H, W] at points (xs, ys) by hand-written bilinear interpolation."""

    bug = None

    @staticmethod
    def forward(ctx, image, xs, ys):
        return _bilinear_forward(ctx, image, xs, ys)

    @staticmethod
    def backward(ctx, grad_out):
        image, xs, ys = ctx.saved_tensors
        x0, y0, fx, fy, (c00, c01, c10, c11) = _corners(image, xs, ys)
        grad_image = _image_grad(ctx.image_shape, x0, y0, fx, fy, grad_out)
        grad_xs = grad_out * ((1 - fy) * (c01 - c00) + fy * (c11 - c10))
        grad_ys = grad_out * ((1 - fx) * (c10 - c00) + fx * (c11 - c01))
        return grad_image, grad_xs, grad_ys


    @staticmethod
    def example_inputs():
        return _bilinear_inputs()


class HiddenBilinearSampleXWeights(torch.autograd.Function):
    bug = {"kind": "wrong_variable", "input": "xs",
           "note": "the x-derivative blends the row differences with fx instead of fy"}

    @staticmethod
    def forward(ctx, image, xs, ys):
        return _bilinear_forward(ctx, image, xs, ys)

    @staticmethod
    def backward(ctx, grad_out):
        image, xs, ys = ctx.saved_tensors
        x0, y0, fx, fy, (c00, c01, c10, c11) = _corners(image, xs, ys)
        grad_image = _image_grad(ctx.image_shape, x0, y0, fx, fy, grad_out)
        grad_xs = grad_out * ((1 - fx) * (c01 - c00) + fx * (c11 - c10))  # BUG
        grad_ys = grad_out * ((1 - fx) * (c10 - c00) + fx * (c11 - c01))
        return grad_image, grad_xs, grad_ys

    @staticmethod
    def example_inputs():
        return _bilinear_inputs()


class HiddenBilinearSampleYDirection(torch.autograd.Function):
    bug = {"kind": "sign", "input": "ys",
           "note": "the y-derivative takes top minus bottom, so it points the wrong way"}

    @staticmethod
    def forward(ctx, image, xs, ys):
        return _bilinear_forward(ctx, image, xs, ys)

    @staticmethod
    def backward(ctx, grad_out):
        image, xs, ys = ctx.saved_tensors
        x0, y0, fx, fy, (c00, c01, c10, c11) = _corners(image, xs, ys)
        grad_image = _image_grad(ctx.image_shape, x0, y0, fx, fy, grad_out)
        grad_xs = grad_out * ((1 - fy) * (c01 - c00) + fy * (c11 - c10))
        grad_ys = grad_out * ((1 - fx) * (c00 - c10) + fx * (c01 - c11))  # BUG
        return grad_image, grad_xs, grad_ys

    @staticmethod
    def example_inputs():
        return _bilinear_inputs()


class HiddenUpsampleRowsNearest(torch.autograd.Function):
    """Nearest 2x upsampling along dim 0: [3, 4] -> [6, 4], every row repeated twice."""

    bug = None

    @staticmethod
    def forward(ctx, x):
        return x.repeat_interleave(2, dim=0)

    @staticmethod
    def backward(ctx, grad_out):
        rows, cols = grad_out.shape
        return grad_out.view(rows // 2, 2, cols).sum(1)


class HiddenUpsampleRowsNearestFirstCopy(torch.autograd.Function):
    bug = {"kind": "not_accumulated", "input": "x",
           "note": "takes the gradient of the first copy of each row only, not the sum of both"}

    @staticmethod
    def forward(ctx, x):
        return x.repeat_interleave(2, dim=0)

    @staticmethod
    def backward(ctx, grad_out):
        return grad_out[0::2].clone()  # BUG


class HiddenUpsampleColsLinear(torch.autograd.Function):
    """Linear 2x upsampling along dim 1 (align corners): [3, 5] -> [3, 9]."""

    bug = None

    @staticmethod
    def forward(ctx, x):
        out = x.new_zeros(x.shape[0], 2 * x.shape[1] - 1)
        out[:, 0::2] = x
        out[:, 1::2] = 0.5 * (x[:, :-1] + x[:, 1:])
        return out

    @staticmethod
    def backward(ctx, grad_out):
        mid = grad_out[:, 1::2]
        grad = grad_out[:, 0::2].clone()
        grad[:, :-1] += 0.5 * mid
        grad[:, 1:] += 0.5 * mid
        return grad

    @staticmethod
    def example_inputs():
        return (torch.randn(3, 5, dtype=torch.float64, generator=_gen(52)),)


class HiddenUpsampleColsLinearNeighbour(torch.autograd.Function):
    bug = {"kind": "region", "input": "x",
           "note": "the midpoints' second half goes to the left neighbour again (off-by-one slice)"}

    @staticmethod
    def forward(ctx, x):
        out = x.new_zeros(x.shape[0], 2 * x.shape[1] - 1)
        out[:, 0::2] = x
        out[:, 1::2] = 0.5 * (x[:, :-1] + x[:, 1:])
        return out

    @staticmethod
    def backward(ctx, grad_out):
        mid = grad_out[:, 1::2]
        grad = grad_out[:, 0::2].clone()
        grad[:, :-1] += 0.5 * mid
        grad[:, :-1] += 0.5 * mid  # BUG
        return grad

    @staticmethod
    def example_inputs():
        return (torch.randn(3, 5, dtype=torch.float64, generator=_gen(52)),)
