"""Mixture-of-experts gating: temperature softmax gates, Gumbel-softmax with the noise passed in,
a load-balancing loss, and expert dispatch (reshape + permute)."""
import torch

TAU = 2.0


def _gate(logits, tau):
    return torch.softmax(logits / tau, dim=1)


class GateSoftmaxTemperature(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, logits):
        p = _gate(logits, TAU)
        ctx.save_for_backward(p)
        return p

    @staticmethod
    def backward(ctx, grad):
        (p,) = ctx.saved_tensors
        inner = (grad * p).sum(dim=1, keepdim=True)
        return p * (grad - inner) / TAU


class GateSoftmaxTemperatureNoTau(torch.autograd.Function):
    bug = {"kind": "scale", "input": "logits", "note": "the 1/tau of the chain rule through logits / tau is forgotten"}

    @staticmethod
    def forward(ctx, logits):
        p = _gate(logits, TAU)
        ctx.save_for_backward(p)
        return p

    @staticmethod
    def backward(ctx, grad):
        (p,) = ctx.saved_tensors
        inner = (grad * p).sum(dim=1, keepdim=True)
        return p * (grad - inner)  # BUG


class GateSoftmaxSumOverBatch(torch.autograd.Function):
    bug = {"kind": "wrong_axis", "input": "logits", "note": "the softmax backward's inner product is summed over the batch dim"}

    @staticmethod
    def forward(ctx, logits):
        p = _gate(logits, TAU)
        ctx.save_for_backward(p)
        return p

    @staticmethod
    def backward(ctx, grad):
        (p,) = ctx.saved_tensors
        inner = (grad * p).sum(dim=0, keepdim=True)  # BUG
        return p * (grad - inner) / TAU


class GumbelSoftmaxRelaxed(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, logits, noise):
        y = torch.softmax((logits + noise) / 0.5, dim=-1)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved_tensors
        g = y * (grad - (grad * y).sum(-1, keepdim=True)) / 0.5
        return g, g

    @staticmethod
    def example_inputs():
        gen = torch.Generator().manual_seed(3)
        logits = torch.randn(3, 4, dtype=torch.float64, generator=gen)
        u = torch.rand(3, 4, dtype=torch.float64, generator=gen) * 0.9 + 0.05
        noise = -torch.log(-torch.log(u))
        return logits.requires_grad_(), noise.requires_grad_()


class GumbelSoftmaxNoiseGradDropped(torch.autograd.Function):
    bug = {"kind": "zero", "input": "noise", "note": "the noise is treated as a constant although it requires grad"}

    @staticmethod
    def forward(ctx, logits, noise):
        y = torch.softmax((logits + noise) / 0.5, dim=-1)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved_tensors
        g = y * (grad - (grad * y).sum(-1, keepdim=True)) / 0.5
        return g, None  # BUG

    @staticmethod
    def example_inputs():
        return GumbelSoftmaxRelaxed.example_inputs()


class GumbelSoftmaxLogSoftmaxBackward(torch.autograd.Function):
    bug = {"kind": "none", "input": "logits", "note": "backward of log_softmax written for a softmax output"}

    @staticmethod
    def forward(ctx, logits, noise):
        y = torch.softmax((logits + noise) / 0.5, dim=-1)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved_tensors
        g = (grad - y * grad.sum(-1, keepdim=True)) / 0.5  # BUG
        return g, g

    @staticmethod
    def example_inputs():
        return GumbelSoftmaxRelaxed.example_inputs()


class LoadBalanceSquaredMean(torch.autograd.Function):
    """aux = E * sum_e mean_b(p)^2."""
    bug = None

    @staticmethod
    def forward(ctx, probs):
        ctx.save_for_backward(probs)
        ctx.experts = probs.shape[1]
        return ctx.experts * probs.mean(0).pow(2).sum()

    @staticmethod
    def backward(ctx, grad):
        (probs,) = ctx.saved_tensors
        m = probs.mean(0, keepdim=True)
        return (grad * ctx.experts * 2 * m / probs.shape[0]).expand_as(probs)


class LoadBalanceSquaredMeanNoBatchDivide(torch.autograd.Function):
    bug = {"kind": "scale", "input": "probs", "note": "the 1/B of the batch mean is forgotten"}

    @staticmethod
    def forward(ctx, probs):
        ctx.save_for_backward(probs)
        ctx.experts = probs.shape[1]
        return ctx.experts * probs.mean(0).pow(2).sum()

    @staticmethod
    def backward(ctx, grad):
        (probs,) = ctx.saved_tensors
        m = probs.mean(0, keepdim=True)
        return (grad * ctx.experts * 2 * m).expand_as(probs)  # BUG


class ExpertDispatch(torch.autograd.Function):
    """x (B, E*D) -> (E, B, D), each expert's slice scaled by w[e]."""
    bug = None

    @staticmethod
    def forward(ctx, x, w):
        b = x.shape[0]
        e = w.shape[0]
        xr = x.reshape(b, e, -1).permute(1, 0, 2)
        ctx.save_for_backward(xr, w)
        return xr * w[:, None, None]

    @staticmethod
    def backward(ctx, grad):
        xr, w = ctx.saved_tensors
        gx = (grad * w[:, None, None]).permute(1, 0, 2).reshape(xr.shape[1], -1)
        gw = (grad * xr).sum(dim=(1, 2))
        return gx, gw

    @staticmethod
    def example_inputs():
        gen = torch.Generator().manual_seed(5)
        x = torch.randn(3, 6, dtype=torch.float64, generator=gen)
        w = torch.randn(2, dtype=torch.float64, generator=gen)
        return x.requires_grad_(), w.requires_grad_()


class ExpertDispatchNoPermuteBack(torch.autograd.Function):
    bug = {"kind": "missing_reshape", "input": "x", "note": "grad_output reshaped to x's shape without undoing the permute"}

    @staticmethod
    def forward(ctx, x, w):
        b = x.shape[0]
        e = w.shape[0]
        xr = x.reshape(b, e, -1).permute(1, 0, 2)
        ctx.save_for_backward(xr, w)
        return xr * w[:, None, None]

    @staticmethod
    def backward(ctx, grad):
        xr, w = ctx.saved_tensors
        gx = (grad * w[:, None, None]).reshape(xr.shape[1], -1)  # BUG
        gw = (grad * xr).sum(dim=(1, 2))
        return gx, gw

    @staticmethod
    def example_inputs():
        return ExpertDispatch.example_inputs()
