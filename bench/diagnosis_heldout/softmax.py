"""softmax, softmax with a temperature and log-softmax over the last dim.

Written against gradcli's engine (`import gradcli as torch`), which speaks the
torch.autograd.Function API, so this file runs without PyTorch. Blind corpus: see README.md.
"""
import gradcli as torch

TEMPERATURE = 0.7


class Softmax(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x):
        y = torch.softmax(x, dim=-1)
        ctx.save_for_backward(x, y)
        return y

    @staticmethod
    def backward(ctx, grad_out):
        x, y = ctx.saved_tensors
        return y * (grad_out - (grad_out * y).sum(-1, keepdim=True))


class SoftmaxBackwardUsesLogits(torch.autograd.Function):
    bug = {"kind": "wrong_variable", "input": "x",
           "note": "the weighted sum <g, y> is taken with the logits x instead of the "
                   "probabilities y"}

    @staticmethod
    def forward(ctx, x):
        y = torch.softmax(x, dim=-1)
        ctx.save_for_backward(x, y)
        return y

    @staticmethod
    def backward(ctx, grad_out):
        x, y = ctx.saved_tensors
        return y * (grad_out - (grad_out * x).sum(-1, keepdim=True))  # BUG


class SoftmaxWithTemperature(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x):
        y = torch.softmax(x / TEMPERATURE, dim=-1)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad_out):
        (y,) = ctx.saved_tensors
        return y * (grad_out - (grad_out * y).sum(-1, keepdim=True)) / TEMPERATURE


class SoftmaxWithTemperatureUnscaled(torch.autograd.Function):
    bug = {"kind": "scale", "input": "x",
           "note": "forgets the 1/T of the chain rule through x / T"}

    @staticmethod
    def forward(ctx, x):
        y = torch.softmax(x / TEMPERATURE, dim=-1)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad_out):
        (y,) = ctx.saved_tensors
        return y * (grad_out - (grad_out * y).sum(-1, keepdim=True))  # BUG


class LogSoftmax(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x):
        y = torch.log_softmax(x, dim=-1)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad_out):
        (y,) = ctx.saved_tensors
        return grad_out - torch.exp(y) * grad_out.sum(-1, keepdim=True)


class LogSoftmaxUpstreamSumOverBatch(torch.autograd.Function):
    bug = {"kind": "wrong_axis", "input": "x",
           "note": "the upstream gradient is summed over dim 0 (the batch) instead of dim -1"}

    @staticmethod
    def forward(ctx, x):
        y = torch.log_softmax(x, dim=-1)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad_out):
        (y,) = ctx.saved_tensors
        return grad_out - torch.exp(y) * grad_out.sum(0, keepdim=True)  # BUG


class LogSoftmaxAsElementwise(torch.autograd.Function):
    bug = {"kind": "none", "input": "x",
           "note": "treats log-softmax as elementwise, g * (1 - softmax): only the Jacobian's "
                   "diagonal, a wrong formula with no simple pattern"}

    @staticmethod
    def forward(ctx, x):
        y = torch.log_softmax(x, dim=-1)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad_out):
        (y,) = ctx.saved_tensors
        return grad_out * (1 - torch.exp(y))  # BUG
