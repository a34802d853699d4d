"""Vector geometry on gradcli's engine, with hand-written backwards: row normalisation, the cross
product, column-wise cosine similarity, a dot product with a direction broadcast along columns and
the Euclidean distance between rows (bench/diagnosis_hidden)."""
import gradcli as torch


def _gen(seed):
    return torch.Generator().manual_seed(seed)


def _randn(*shape, seed=0):
    return torch.randn(*shape, dtype=torch.float64, generator=_gen(seed))


class HiddenNormalizeRows(torch.autograd.Function):
    """y = x / |x| for every row."""

    bug = None

    @staticmethod
    def forward(ctx, x):
        norm = x.norm(dim=1, keepdim=True)
        y = x / norm
        ctx.save_for_backward(y, norm)
        return y

    @staticmethod
    def backward(ctx, grad_out):
        y, norm = ctx.saved_tensors
        return (grad_out - y * (y * grad_out).sum(1, keepdim=True)) / norm


class HiddenNormalizeRowsNoProjection(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "x",
           "note": "divides the gradient by the norm but drops the -y (y.g) projection term"}

    @staticmethod
    def forward(ctx, x):
        norm = x.norm(dim=1, keepdim=True)
        y = x / norm
        ctx.save_for_backward(y, norm)
        return y

    @staticmethod
    def backward(ctx, grad_out):
        y, norm = ctx.saved_tensors
        return grad_out / norm  # BUG


def _cross_inputs():
    return _randn(4, 3, seed=100), _randn(4, 3, seed=101)


class HiddenCross(torch.autograd.Function):
    """Row-wise cross product a x b of [N, 3] vectors."""

    bug = None

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return torch.cross(a, b, dim=1)

    @staticmethod
    def backward(ctx, grad_out):
        a, b = ctx.saved_tensors
        return torch.cross(b, grad_out, dim=1), torch.cross(grad_out, a, dim=1)

    @staticmethod
    def example_inputs():
        return _cross_inputs()


class HiddenCrossOperandOrder(torch.autograd.Function):
    bug = {"kind": "sign", "input": "a",
           "note": "a's gradient is g x b; the cross product anticommutes, so it is b x g negated"}

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return torch.cross(a, b, dim=1)

    @staticmethod
    def backward(ctx, grad_out):
        a, b = ctx.saved_tensors
        grad_a = torch.cross(grad_out, b, dim=1)  # BUG
        return grad_a, torch.cross(grad_out, a, dim=1)

    @staticmethod
    def example_inputs():
        return _cross_inputs()


def _column_cosine(x, y):
    nx = x.norm(dim=0, keepdim=True)
    ny = y.norm(dim=0, keepdim=True)
    return (x * y).sum(0, keepdim=True) / (nx * ny), nx, ny


class HiddenColumnCosine(torch.autograd.Function):
    """Cosine similarity of matching columns (reduced over dim 0): [3, 4] x [3, 4] -> [4]."""

    bug = None

    @staticmethod
    def forward(ctx, x, y):
        ctx.save_for_backward(x, y)
        return _column_cosine(x, y)[0].squeeze(0)

    @staticmethod
    def backward(ctx, grad_out):
        x, y = ctx.saved_tensors
        cos, nx, ny = _column_cosine(x, y)
        g = grad_out.unsqueeze(0)
        grad_x = g * (y / (nx * ny) - cos * x / (nx * nx))
        grad_y = g * (x / (nx * ny) - cos * y / (ny * ny))
        return grad_x, grad_y


class HiddenColumnCosineRowNorms(torch.autograd.Function):
    bug = {"kind": "wrong_axis", "input": "x",
           "note": "the backward recomputes x's norm over dim 1 (rows) instead of dim 0"}

    @staticmethod
    def forward(ctx, x, y):
        ctx.save_for_backward(x, y)
        return _column_cosine(x, y)[0].squeeze(0)

    @staticmethod
    def backward(ctx, grad_out):
        x, y = ctx.saved_tensors
        cos, _, ny = _column_cosine(x, y)
        nx = x.norm(dim=1, keepdim=True)  # BUG
        g = grad_out.unsqueeze(0)
        grad_x = g * (y / (nx * ny) - cos * x / (nx * nx))
        grad_y = g * (x / (nx * ny) - cos * y / (ny * ny))
        return grad_x, grad_y


def _direction_inputs():
    return _randn(4, 3, seed=102), _randn(4, seed=103)


class HiddenDirectionalDot(torch.autograd.Function):
    """s[j] = sum_i x[i, j] d[i]: a direction d [4] broadcast along the columns of x [4, 3]."""

    bug = None

    @staticmethod
    def forward(ctx, x, direction):
        ctx.save_for_backward(x, direction)
        return (x * direction[:, None]).sum(0)

    @staticmethod
    def backward(ctx, grad_out):
        x, direction = ctx.saved_tensors
        return direction[:, None] * grad_out, (x * grad_out).sum(1)

    @staticmethod
    def example_inputs():
        return _direction_inputs()


class HiddenDirectionalDotUnsummed(torch.autograd.Function):
    bug = {"kind": "not_reduced", "input": "direction",
           "note": "the direction's gradient x * g is returned per column, never summed over dim 1"}

    @staticmethod
    def forward(ctx, x, direction):
        ctx.save_for_backward(x, direction)
        return (x * direction[:, None]).sum(0)

    @staticmethod
    def backward(ctx, grad_out):
        x, direction = ctx.saved_tensors
        grad_direction = x * grad_out  # BUG
        return direction[:, None] * grad_out, grad_direction

    @staticmethod
    def example_inputs():
        return _direction_inputs()


class HiddenRowDistance(torch.autograd.Function):
    """|x_i - y_i| for matching rows."""

    bug = None

    @staticmethod
    def forward(ctx, x, y):
        diff = x - y
        dist = diff.norm(dim=1)
        ctx.save_for_backward(diff, dist)
        return dist

    @staticmethod
    def backward(ctx, grad_out):
        diff, dist = ctx.saved_tensors
        grad_x = grad_out[:, None] * diff / dist[:, None]
        return grad_x, -grad_x


class HiddenRowDistanceSquaredFactor(torch.autograd.Function):
    bug = {"kind": "scale", "input": "x",
           "note": "keeps the factor 2 from the derivative of the squared distance"}

    @staticmethod
    def forward(ctx, x, y):
        diff = x - y
        dist = diff.norm(dim=1)
        ctx.save_for_backward(diff, dist)
        return dist

    @staticmethod
    def backward(ctx, grad_out):
        diff, dist = ctx.saved_tensors
        grad_x = 2 * grad_out[:, None] * diff / dist[:, None]  # BUG
        return grad_x, -grad_x / 2
