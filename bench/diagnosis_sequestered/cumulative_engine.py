"""Cumulative ops and row normalisation on gradcli's engine (it runs without PyTorch): cumsum,
reverse cumsum, cumprod, logcumsumexp, discounted returns, L2 normalisation (sequestered corpus)."""
import gradcli as torch

GAMMA = 0.9


def _reverse_cumsum(t, dim):
    return t.flip(dim).cumsum(dim).flip(dim)


# ------------------------------------------------------------------------------------ cumsum
class SequesteredCumsumRows(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x):
        return torch.cumsum(x, dim=1)

    @staticmethod
    def backward(ctx, grad_out):
        return _reverse_cumsum(grad_out, 1)


class SequesteredCumsumRowsForwardScan(torch.autograd.Function):
    bug = {"kind": "missing_flip", "input": "x",
           "note": "the gradient of a prefix sum is a suffix sum; the backward scans forwards again"}

    @staticmethod
    def forward(ctx, x):
        return torch.cumsum(x, dim=1)

    @staticmethod
    def backward(ctx, grad_out):
        return torch.cumsum(grad_out, dim=1)  # BUG


# ---------------------------------------------------------------------------- reverse cumsum
class SequesteredSuffixSum(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x):
        return _reverse_cumsum(x, 1)

    @staticmethod
    def backward(ctx, grad_out):
        return grad_out.cumsum(1)


class SequesteredSuffixSumDownColumns(torch.autograd.Function):
    bug = {"kind": "wrong_axis", "input": "x",
           "note": "the backward's prefix sum runs down dim 0 instead of along dim 1"}

    @staticmethod
    def forward(ctx, x):
        return _reverse_cumsum(x, 1)

    @staticmethod
    def backward(ctx, grad_out):
        return grad_out.cumsum(0)  # BUG


# ----------------------------------------------------------------------------------- cumprod
def _positive():
    gen = torch.Generator().manual_seed(71)
    return (torch.rand(3, 4, dtype=torch.float64, generator=gen) + 0.5,)


class SequesteredCumprod(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x):
        y = torch.cumprod(x, dim=1)
        ctx.save_for_backward(x, y)
        return y

    @staticmethod
    def backward(ctx, grad_out):
        x, y = ctx.saved_tensors
        return _reverse_cumsum(grad_out * y, 1) / x

    @staticmethod
    def example_inputs():
        return _positive()


class SequesteredCumprodDividesByOutput(torch.autograd.Function):
    bug = {"kind": "wrong_variable", "input": "x",
           "note": "dy_j/dx_i = y_j / x_i: the suffix sum is divided by the running product y, not by x"}

    @staticmethod
    def forward(ctx, x):
        y = torch.cumprod(x, dim=1)
        ctx.save_for_backward(x, y)
        return y

    @staticmethod
    def backward(ctx, grad_out):
        x, y = ctx.saved_tensors
        return _reverse_cumsum(grad_out * y, 1) / y  # BUG

    @staticmethod
    def example_inputs():
        return _positive()


# ------------------------------------------------------------------------------ logcumsumexp
class SequesteredLogCumSumExp(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x):
        top = x.amax(dim=1, keepdim=True)
        y = torch.log(torch.cumsum(torch.exp(x - top), dim=1)) + top
        ctx.save_for_backward(x, y)
        return y

    @staticmethod
    def backward(ctx, grad_out):
        x, y = ctx.saved_tensors
        return torch.exp(x) * _reverse_cumsum(grad_out * torch.exp(-y), 1)


class SequesteredLogCumSumExpAsSoftmax(torch.autograd.Function):
    bug = {"kind": "none", "input": "x",
           "note": "the backward of a whole-row logsumexp (softmax times the summed gradient) for the running one"}

    @staticmethod
    def forward(ctx, x):
        top = x.amax(dim=1, keepdim=True)
        y = torch.log(torch.cumsum(torch.exp(x - top), dim=1)) + top
        ctx.save_for_backward(x, y)
        return y

    @staticmethod
    def backward(ctx, grad_out):
        x, y = ctx.saved_tensors
        return torch.softmax(x, dim=1) * grad_out.sum(dim=1, keepdim=True)  # BUG


# ------------------------------------------------------------------------- discounted returns
class SequesteredDiscountedReturns(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, rewards):
        running = rewards[:, -1] * 0
        out = []
        for t in reversed(range(rewards.shape[1])):
            running = rewards[:, t] + GAMMA * running
            out.append(running)
        return torch.stack(out[::-1], dim=1)

    @staticmethod
    def backward(ctx, grad_out):
        acc = grad_out[:, 0] * 0
        grads = []
        for t in range(grad_out.shape[1]):
            acc = grad_out[:, t] + GAMMA * acc
            grads.append(acc)
        return torch.stack(grads, dim=1)


class SequesteredDiscountedReturnsSameDirection(torch.autograd.Function):
    bug = {"kind": "missing_flip", "input": "rewards", "also": ["transposed"],
           "note": "the backward discounts from the end like the forward; the adjoint must run from the start"}

    @staticmethod
    def forward(ctx, rewards):
        running = rewards[:, -1] * 0
        out = []
        for t in reversed(range(rewards.shape[1])):
            running = rewards[:, t] + GAMMA * running
            out.append(running)
        return torch.stack(out[::-1], dim=1)

    @staticmethod
    def backward(ctx, grad_out):
        acc = grad_out[:, 0] * 0
        grads = []
        for t in reversed(range(grad_out.shape[1])):  # BUG
            acc = grad_out[:, t] + GAMMA * acc
            grads.append(acc)
        return torch.stack(grads[::-1], dim=1)


# -------------------------------------------------------------------------- L2 normalisation
class SequesteredL2Normalise(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x):
        norm = torch.sqrt((x * x).sum(dim=1, keepdim=True))
        y = x / norm
        ctx.save_for_backward(y, norm)
        return y

    @staticmethod
    def backward(ctx, grad_out):
        y, norm = ctx.saved_tensors
        radial = (grad_out * y).sum(dim=1, keepdim=True)
        return (grad_out - y * radial) / norm


class SequesteredL2NormaliseNoRadial(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "x",
           "note": "the norm is treated as a constant: the - y (g . y) term is missing"}

    @staticmethod
    def forward(ctx, x):
        norm = torch.sqrt((x * x).sum(dim=1, keepdim=True))
        y = x / norm
        ctx.save_for_backward(y, norm)
        return y

    @staticmethod
    def backward(ctx, grad_out):
        y, norm = ctx.saved_tensors
        return grad_out / norm  # BUG
