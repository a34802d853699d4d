"""Linear/dense layers and convolutions written with unfold (im2col) by hand — the engine has no
``unfold``, so the patches are stacked from slices, the way a from-scratch implementation does.
``bug`` is each class's true bug; ``bug = None`` marks a correct twin.
"""
import gradcli as torch


# ------------------------------------------------------------------------------------ linear
class Linear(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, weight, bias):
        ctx.save_for_backward(x, weight)
        return x @ weight.t() + bias

    @staticmethod
    def backward(ctx, grad_output):
        x, weight = ctx.saved_tensors
        grad_x = grad_output @ weight
        grad_weight = grad_output.t() @ x
        grad_bias = grad_output.sum(0)
        return grad_x, grad_weight, grad_bias

    @staticmethod
    def example_inputs():
        return (torch.randn(3, 4, requires_grad=True), torch.randn(2, 4, requires_grad=True),
                torch.randn(2, requires_grad=True))


class LinearBiasNotReduced(torch.autograd.Function):
    bug = {"kind": "not_reduced", "input": "bias",
           "note": "grad_bias is grad_output itself, not summed over the batch"}

    @staticmethod
    def forward(ctx, x, weight, bias):
        ctx.save_for_backward(x, weight)
        return x @ weight.t() + bias

    @staticmethod
    def backward(ctx, grad_output):
        x, weight = ctx.saved_tensors
        grad_x = grad_output @ weight
        grad_weight = grad_output.t() @ x
        grad_bias = grad_output  # BUG
        return grad_x, grad_weight, grad_bias

    @staticmethod
    def example_inputs():
        return (torch.randn(3, 4, requires_grad=True), torch.randn(2, 4, requires_grad=True),
                torch.randn(2, requires_grad=True))


class LinearWeightTransposed(torch.autograd.Function):
    bug = {"kind": "transposed", "input": "weight",
           "note": "grad_weight = xᵀ @ g where gᵀ @ x is needed (square weight hides the shape)"}

    @staticmethod
    def forward(ctx, x, weight, bias):
        ctx.save_for_backward(x, weight)
        return x @ weight.t() + bias

    @staticmethod
    def backward(ctx, grad_output):
        x, weight = ctx.saved_tensors
        grad_x = grad_output @ weight
        grad_weight = x.t() @ grad_output  # BUG
        grad_bias = grad_output.sum(0)
        return grad_x, grad_weight, grad_bias

    @staticmethod
    def example_inputs():
        return (torch.randn(3, 4, requires_grad=True), torch.randn(4, 4, requires_grad=True),
                torch.randn(4, requires_grad=True))


class MatMulSwapped(torch.autograd.Function):
    bug = {"kind": "swapped", "input": "a",
           "note": "returns (grad_b, grad_a): the two gradients in the wrong order"}

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return a @ b

    @staticmethod
    def backward(ctx, grad_output):
        a, b = ctx.saved_tensors
        grad_a = grad_output @ b.t()
        grad_b = a.t() @ grad_output
        return grad_b, grad_a  # BUG

    @staticmethod
    def example_inputs():
        return (torch.randn(3, 3, requires_grad=True), torch.randn(3, 3, requires_grad=True))


# ----------------------------------------------------------------------------- conv1d (im2col)
def _unfold1d(x, k):
    """(N, C, L) -> (N, L_out, C*k): row t holds x[:, :, t:t+k] flattened channel-major."""
    n, c, length = x.shape
    l_out = length - k + 1
    cols = torch.stack([x[:, :, i:i + l_out] for i in range(k)], dim=-1)  # (N, C, L_out, k)
    return cols.permute(0, 2, 1, 3).reshape(n, l_out, c * k)


def _conv1d_forward(ctx, x, weight, bias):
    o, c, k = weight.shape
    cols = _unfold1d(x, k)
    y = cols @ weight.reshape(o, c * k).t() + bias  # (N, L_out, O)
    ctx.save_for_backward(cols, weight)
    ctx.x_shape = x.shape
    return y.permute(0, 2, 1)


def _conv1d_inputs():
    return (torch.randn(2, 2, 6, requires_grad=True), torch.randn(3, 2, 3, requires_grad=True),
            torch.randn(3, requires_grad=True))


class Conv1dUnfold(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, weight, bias):
        return _conv1d_forward(ctx, x, weight, bias)

    @staticmethod
    def backward(ctx, grad_output):
        cols, weight = ctx.saved_tensors
        n, c, length = ctx.x_shape
        o, _, k = weight.shape
        l_out = length - k + 1
        g = grad_output.permute(0, 2, 1)  # (N, L_out, O)
        grad_weight = (g.reshape(n * l_out, o).t() @ cols.reshape(n * l_out, c * k)).reshape(o, c, k)
        grad_bias = g.sum((0, 1))
        dcols = (g @ weight.reshape(o, c * k)).reshape(n, l_out, c, k).permute(0, 2, 1, 3)
        grad_x = torch.zeros(n, c, length)
        for i in range(k):
            grad_x[:, :, i:i + l_out] += dcols[..., i]
        return grad_x, grad_weight, grad_bias

    @staticmethod
    def example_inputs():
        return _conv1d_inputs()


class Conv1dMissingReshape(torch.autograd.Function):
    bug = {"kind": "missing_reshape", "input": "x", "also": ["transposed"],
           "note": "the patch gradients are reshaped to (N, C, L_out, k) directly, without the "
                   "(N, L_out, C, k) reshape + permute that undoes the forward's layout"}

    @staticmethod
    def forward(ctx, x, weight, bias):
        return _conv1d_forward(ctx, x, weight, bias)

    @staticmethod
    def backward(ctx, grad_output):
        cols, weight = ctx.saved_tensors
        n, c, length = ctx.x_shape
        o, _, k = weight.shape
        l_out = length - k + 1
        g = grad_output.permute(0, 2, 1)
        grad_weight = (g.reshape(n * l_out, o).t() @ cols.reshape(n * l_out, c * k)).reshape(o, c, k)
        grad_bias = g.sum((0, 1))
        dcols = (g @ weight.reshape(o, c * k)).reshape(n, c, l_out, k)  # BUG
        grad_x = torch.zeros(n, c, length)
        for i in range(k):
            grad_x[:, :, i:i + l_out] += dcols[..., i]
        return grad_x, grad_weight, grad_bias

    @staticmethod
    def example_inputs():
        return _conv1d_inputs()


class Conv1dOverlapNotAccumulated(torch.autograd.Function):
    bug = {"kind": "not_accumulated", "input": "x",
           "note": "col2im assigns each patch's gradient, so overlapping patches overwrite "
                   "each other instead of adding up"}

    @staticmethod
    def forward(ctx, x, weight, bias):
        return _conv1d_forward(ctx, x, weight, bias)

    @staticmethod
    def backward(ctx, grad_output):
        cols, weight = ctx.saved_tensors
        n, c, length = ctx.x_shape
        o, _, k = weight.shape
        l_out = length - k + 1
        g = grad_output.permute(0, 2, 1)
        grad_weight = (g.reshape(n * l_out, o).t() @ cols.reshape(n * l_out, c * k)).reshape(o, c, k)
        grad_bias = g.sum((0, 1))
        dcols = (g @ weight.reshape(o, c * k)).reshape(n, l_out, c, k).permute(0, 2, 1, 3)
        grad_x = torch.zeros(n, c, length)
        for i in range(k):
            grad_x[:, :, i:i + l_out] = dcols[..., i]  # BUG
        return grad_x, grad_weight, grad_bias

    @staticmethod
    def example_inputs():
        return _conv1d_inputs()


# ----------------------------------------------------------------------------- conv2d (im2col)
def _conv2d_forward(ctx, x, weight, bias):
    n, c, h, w = x.shape
    o, _, kh, kw = weight.shape
    ho, wo = h - kh + 1, w - kw + 1
    patches = torch.stack([x[:, :, i:i + ho, j:j + wo] for i in range(kh) for j in range(kw)],
                          dim=2)  # (N, C, kh*kw, ho, wo)
    cols = patches.reshape(n, c * kh * kw, ho * wo)
    y = weight.reshape(o, c * kh * kw) @ cols  # (N, O, ho*wo)
    ctx.save_for_backward(cols, weight)
    ctx.x_shape = x.shape
    return y.reshape(n, o, ho, wo) + bias.reshape(1, o, 1, 1)


def _conv2d_inputs():
    return (torch.randn(1, 2, 4, 4, requires_grad=True), torch.randn(3, 2, 2, 2, requires_grad=True),
            torch.randn(3, requires_grad=True))


def _col2im(dcols, x_shape, kh, kw):
    n, c, h, w = x_shape
    ho, wo = h - kh + 1, w - kw + 1
    dpatches = dcols.reshape(n, c, kh * kw, ho, wo)
    grad_x = torch.zeros(n, c, h, w)
    for i in range(kh):
        for j in range(kw):
            grad_x[:, :, i:i + ho, j:j + wo] += dpatches[:, :, i * kw + j]
    return grad_x


class Conv2dUnfold(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, weight, bias):
        return _conv2d_forward(ctx, x, weight, bias)

    @staticmethod
    def backward(ctx, grad_output):
        cols, weight = ctx.saved_tensors
        o, c, kh, kw = weight.shape
        n = grad_output.shape[0]
        g = grad_output.reshape(n, o, -1)  # (N, O, L)
        grad_weight = (g @ cols.transpose(1, 2)).sum(0).reshape(o, c, kh, kw)
        grad_bias = grad_output.sum((0, 2, 3))
        grad_x = _col2im(weight.reshape(o, -1).t() @ g, ctx.x_shape, kh, kw)
        return grad_x, grad_weight, grad_bias

    @staticmethod
    def example_inputs():
        return _conv2d_inputs()


class Conv2dWeightMissingTranspose(torch.autograd.Function):
    bug = {"kind": "missing_reshape", "input": "weight", "also": ["transposed"],
           "note": "computes cols @ gᵀ, a (C*kh*kw, O) matrix, and reshapes it to (O, C, kh, kw) "
                   "without transposing it first"}

    @staticmethod
    def forward(ctx, x, weight, bias):
        return _conv2d_forward(ctx, x, weight, bias)

    @staticmethod
    def backward(ctx, grad_output):
        cols, weight = ctx.saved_tensors
        o, c, kh, kw = weight.shape
        n = grad_output.shape[0]
        g = grad_output.reshape(n, o, -1)
        grad_weight = (cols @ g.transpose(1, 2)).sum(0).reshape(o, c, kh, kw)  # BUG
        grad_bias = grad_output.sum((0, 2, 3))
        grad_x = _col2im(weight.reshape(o, -1).t() @ g, ctx.x_shape, kh, kw)
        return grad_x, grad_weight, grad_bias

    @staticmethod
    def example_inputs():
        return _conv2d_inputs()
