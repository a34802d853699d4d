"""Normalisations (issue 17 catalogue, written with the rules: tuning corpus, not a held-out one)."""
import torch
from torch.autograd import Function


def _xhat(x, dim, eps=1e-5):
    mu = x.mean(dim, keepdim=True)
    var = ((x - mu) ** 2).mean(dim, keepdim=True)
    return (x - mu) / torch.sqrt(var + eps), torch.sqrt(var + eps)


class LayerNormMissingMeanTerm(Function):
    bug = {"kind": "missing_term", "input": "x", "note": "dx lacks -mean(g)"}

    @staticmethod
    def forward(ctx, x):
        xhat, std = _xhat(x, -1)
        ctx.save_for_backward(xhat, std)
        return xhat

    @staticmethod
    def backward(ctx, g):
        xhat, std = ctx.saved_tensors
        dx = (g - xhat * (g * xhat).mean(-1, keepdim=True)) / std  # BUG
        return dx

    @staticmethod
    def example_inputs():
        torch.manual_seed(1)
        return (torch.randn(3, 5, dtype=torch.float64),)


class LayerNormAffineDgammaUsesX(Function):
    bug = {"kind": "wrong_variable", "input": "gamma", "note": "dgamma from x, not x̂"}

    @staticmethod
    def forward(ctx, x, gamma, beta):
        xhat, std = _xhat(x, -1)
        ctx.save_for_backward(x, xhat, std, gamma)
        return xhat * gamma + beta

    @staticmethod
    def backward(ctx, g):
        x, xhat, std, gamma = ctx.saved_tensors
        gx = g * gamma
        dx = (gx - gx.mean(-1, keepdim=True) - xhat * (gx * xhat).mean(-1, keepdim=True)) / std
        dgamma = (g * x).sum(0)  # BUG
        dbeta = g.sum(0)
        return dx, dgamma, dbeta

    @staticmethod
    def example_inputs():
        torch.manual_seed(2)
        return (torch.randn(4, 5, dtype=torch.float64), torch.rand(5, dtype=torch.float64) + 0.5,
                torch.randn(5, dtype=torch.float64))


class LayerNormDbetaMean(Function):
    bug = {"kind": "scale", "input": "beta", "note": "mean over the batch instead of sum"}

    @staticmethod
    def forward(ctx, x, gamma, beta):
        xhat, std = _xhat(x, -1)
        ctx.save_for_backward(xhat, std, gamma)
        return xhat * gamma + beta

    @staticmethod
    def backward(ctx, g):
        xhat, std, gamma = ctx.saved_tensors
        gx = g * gamma
        dx = (gx - gx.mean(-1, keepdim=True) - xhat * (gx * xhat).mean(-1, keepdim=True)) / std
        return dx, (g * xhat).sum(0), g.mean(0)  # BUG

    @staticmethod
    def example_inputs():
        torch.manual_seed(3)
        return (torch.randn(4, 5, dtype=torch.float64), torch.rand(5, dtype=torch.float64) + 0.5,
                torch.randn(5, dtype=torch.float64))


class RMSNormWrongDim(Function):
    bug = {"kind": "wrong_axis", "input": "x", "note": "backward reduces over dim 0"}

    @staticmethod
    def forward(ctx, x):
        rms = torch.sqrt((x * x).mean(-1, keepdim=True) + 1e-6)
        ctx.save_for_backward(x, rms)
        return x / rms

    @staticmethod
    def backward(ctx, g):
        x, rms = ctx.saved_tensors
        y = x / rms
        return (g - y * (g * y).mean(0, keepdim=True)) / rms  # BUG

    @staticmethod
    def example_inputs():
        torch.manual_seed(4)
        return (torch.randn(3, 4, dtype=torch.float64),)


class RMSNormWeightUsesX(Function):
    bug = {"kind": "wrong_variable", "input": "weight", "note": "dweight from x, not x/rms"}

    @staticmethod
    def forward(ctx, x, weight):
        rms = torch.sqrt((x * x).mean(-1, keepdim=True) + 1e-6)
        ctx.save_for_backward(x, rms, weight)
        return x / rms * weight

    @staticmethod
    def backward(ctx, g):
        x, rms, weight = ctx.saved_tensors
        y = x / rms
        gy = g * weight
        dx = (gy - y * (gy * y).mean(-1, keepdim=True)) / rms
        dweight = (g * x).sum(0)  # BUG
        return dx, dweight

    @staticmethod
    def example_inputs():
        torch.manual_seed(5)
        return torch.randn(4, 5, dtype=torch.float64), torch.rand(5, dtype=torch.float64) + 0.5


class BatchNormDgammaUsesX(Function):
    bug = {"kind": "wrong_variable", "input": "gamma", "note": "dgamma with x instead of x̂"}

    @staticmethod
    def forward(ctx, x, gamma, beta):
        xhat, std = _xhat(x, 0)
        ctx.save_for_backward(x, xhat, std, gamma)
        return gamma * xhat + beta

    @staticmethod
    def backward(ctx, grad_out):
        x, xhat, std, gamma = ctx.saved_tensors
        n = x.shape[0]
        dxhat = grad_out * gamma
        dx = (n * dxhat - dxhat.sum(0) - xhat * (dxhat * xhat).sum(0)) / (n * std)
        dgamma = (grad_out * x).sum(dim=0)  # BUG
        return dx, dgamma, grad_out.sum(dim=0)

    @staticmethod
    def example_inputs():
        torch.manual_seed(6)
        return (torch.randn(6, 3, dtype=torch.float64), torch.rand(3, dtype=torch.float64) + 0.5,
                torch.randn(3, dtype=torch.float64))


class BatchNormMissingProjection(Function):
    bug = {"kind": "missing_term", "input": "x", "note": "dx lacks -x̂·mean(dx̂·x̂)"}

    @staticmethod
    def forward(ctx, x, gamma, beta):
        xhat, std = _xhat(x, 0)
        ctx.save_for_backward(xhat, std, gamma)
        return gamma * xhat + beta

    @staticmethod
    def backward(ctx, grad_out):
        xhat, std, gamma = ctx.saved_tensors
        dxhat = grad_out * gamma
        dx = (dxhat - dxhat.mean(0)) / std  # BUG
        return dx, (grad_out * xhat).sum(0), grad_out.sum(0)

    @staticmethod
    def example_inputs():
        torch.manual_seed(7)
        return (torch.randn(6, 3, dtype=torch.float64), torch.rand(3, dtype=torch.float64) + 0.5,
                torch.randn(3, dtype=torch.float64))


class L2NormalizeMissingProjection(Function):
    bug = {"kind": "missing_term", "input": "x", "note": "x/|x| backward lacks -y·(g·y)/|x|"}

    @staticmethod
    def forward(ctx, x):
        norm = x.norm(dim=1, keepdim=True)
        y = x / norm
        ctx.save_for_backward(y, norm)
        return y

    @staticmethod
    def backward(ctx, g):
        y, norm = ctx.saved_tensors
        return g / norm  # BUG

    @staticmethod
    def example_inputs():
        torch.manual_seed(8)
        return (torch.randn(3, 5, dtype=torch.float64),)


class SoftmaxWrongDim(Function):
    bug = {"kind": "wrong_axis", "input": "x", "note": "sum over dim 0 in backward"}

    @staticmethod
    def forward(ctx, x):
        y = torch.softmax(x, dim=-1)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return y * (g - (g * y).sum(dim=0, keepdim=True))  # BUG

    @staticmethod
    def example_inputs():
        torch.manual_seed(9)
        return (torch.randn(4, 3, dtype=torch.float64),)


class SoftmaxMissingTerm(Function):
    bug = {"kind": "missing_term", "input": "x", "note": "softmax backward is only y·g"}

    @staticmethod
    def forward(ctx, x):
        y = x.softmax(-1)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return y * g  # BUG

    @staticmethod
    def example_inputs():
        torch.manual_seed(10)
        return (torch.randn(3, 4, dtype=torch.float64),)


class LogSoftmaxTermSign(Function):
    bug = {"kind": "term_sign", "input": "x", "note": "+softmax·sum(g)"}

    @staticmethod
    def forward(ctx, x):
        y = torch.log_softmax(x, dim=1)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return g + y.exp() * g.sum(dim=1, keepdim=True)  # BUG

    @staticmethod
    def example_inputs():
        torch.manual_seed(11)
        return (torch.randn(3, 4, dtype=torch.float64),)


class LogSoftmaxUsesOutput(Function):
    bug = {"kind": "wrong_variable", "input": "x", "note": "uses y (log-probs) where exp(y) is needed"}

    @staticmethod
    def forward(ctx, x):
        y = torch.log_softmax(x, dim=1)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return g - y * g.sum(dim=1, keepdim=True)  # BUG

    @staticmethod
    def example_inputs():
        torch.manual_seed(12)
        return (torch.randn(3, 4, dtype=torch.float64),)


class SoftmaxTemperatureMissing(Function):
    bug = {"kind": "scale", "input": "x", "note": "softmax(x/T) backward misses 1/T"}

    @staticmethod
    def forward(ctx, x, temperature: float = 2.0):
        y = torch.softmax(x / temperature, dim=-1)
        ctx.save_for_backward(y)
        ctx.temperature = temperature
        return y

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        dx = y * (g - (g * y).sum(-1, keepdim=True))  # BUG
        return dx, None

    @staticmethod
    def example_inputs():
        torch.manual_seed(13)
        return torch.randn(3, 4, dtype=torch.float64), 2.0


class LayerNormOk(Function):
    bug = None

    @staticmethod
    def forward(ctx, x, gamma, beta):
        xhat, std = _xhat(x, -1)
        ctx.save_for_backward(xhat, std, gamma)
        return xhat * gamma + beta

    @staticmethod
    def backward(ctx, g):
        xhat, std, gamma = ctx.saved_tensors
        gx = g * gamma
        dx = (gx - gx.mean(-1, keepdim=True) - xhat * (gx * xhat).mean(-1, keepdim=True)) / std
        return dx, (g * xhat).sum(0), g.sum(0)

    @staticmethod
    def example_inputs():
        torch.manual_seed(14)
        return (torch.randn(4, 5, dtype=torch.float64), torch.rand(5, dtype=torch.float64) + 0.5,
                torch.randn(5, dtype=torch.float64))
