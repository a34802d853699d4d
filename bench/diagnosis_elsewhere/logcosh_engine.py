import gradcli as torch

"""On gradcli's engine: a log-cosh regression loss with a learned per-column offset, one loss per
row: L_n = mean_j log(cosh(pred_nj - target_nj - offset_j))."""


def _logcosh_inputs():
    gen = torch.Generator().manual_seed(101)
    pred = torch.randn(3, 4, generator=gen, dtype=torch.float64)
    target = torch.randn(3, 4, generator=gen, dtype=torch.float64)
    offset = 0.3 * torch.randn(4, generator=gen, dtype=torch.float64)
    return pred, target, offset


def _logcosh(ctx, pred, target, offset):
    r = pred - target - offset
    ctx.save_for_backward(r)
    return torch.log(torch.cosh(r)).mean(1)


class ElsewhereLogCoshOffset(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, pred, target, offset):
        return _logcosh(ctx, pred, target, offset)

    @staticmethod
    def backward(ctx, grad):
        (r,) = ctx.saved_tensors
        slope = torch.tanh(r) / r.shape[1]
        grad_pred = grad[:, None] * slope
        return grad_pred, -grad_pred, -grad_pred.sum(0)

    @staticmethod
    def example_inputs():
        return _logcosh_inputs()


class ElsewhereLogCoshSechSquared(torch.autograd.Function):
    bug = {"kind": "none", "input": "pred",
           "note": "the derivative of log cosh r is taken as sech(r)**2 (that is tanh's derivative) instead of tanh r"}

    @staticmethod
    def forward(ctx, pred, target, offset):
        return _logcosh(ctx, pred, target, offset)

    @staticmethod
    def backward(ctx, grad):
        (r,) = ctx.saved_tensors
        slope = 1 / torch.cosh(r) ** 2 / r.shape[1]  # BUG
        grad_pred = grad[:, None] * slope
        return grad_pred, -grad_pred, -grad_pred.sum(0)

    @staticmethod
    def example_inputs():
        return _logcosh_inputs()


class ElsewhereLogCoshTargetSign(torch.autograd.Function):
    bug = {"kind": "sign", "input": "target",
           "note": "the target enters the residual with a minus, but gets the prediction's gradient unchanged"}

    @staticmethod
    def forward(ctx, pred, target, offset):
        return _logcosh(ctx, pred, target, offset)

    @staticmethod
    def backward(ctx, grad):
        (r,) = ctx.saved_tensors
        slope = torch.tanh(r) / r.shape[1]
        grad_pred = grad[:, None] * slope
        return grad_pred, grad_pred, -grad_pred.sum(0)  # BUG

    @staticmethod
    def example_inputs():
        return _logcosh_inputs()


class ElsewhereLogCoshOffsetNoGrad(torch.autograd.Function):
    bug = {"kind": "ignores_grad_output", "input": "offset",
           "note": "the offset's gradient sums the bare slopes, never weighted by each row's upstream gradient"}

    @staticmethod
    def forward(ctx, pred, target, offset):
        return _logcosh(ctx, pred, target, offset)

    @staticmethod
    def backward(ctx, grad):
        (r,) = ctx.saved_tensors
        slope = torch.tanh(r) / r.shape[1]
        grad_pred = grad[:, None] * slope
        return grad_pred, -grad_pred, -slope.sum(0)  # BUG

    @staticmethod
    def example_inputs():
        return _logcosh_inputs()
