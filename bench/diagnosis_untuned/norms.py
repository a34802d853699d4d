"""Normalisation layers written torch-style on gradcli's engine: LayerNorm, RMSNorm, BatchNorm,
L2-normalize. Each buggy class carries its true bug in ``bug``; ``bug = None`` is a correct twin.
"""
import gradcli as torch


def _rows(seed_shape=(3, 4)):
    return torch.randn(*seed_shape, requires_grad=True)


def _features(n=4):
    return (torch.rand(n) + 0.5).requires_grad_()


# --------------------------------------------------------------------------------- LayerNorm
class LayerNorm(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, gamma, beta, eps=1e-5):
        mu = x.mean(-1, keepdim=True)
        var = ((x - mu) ** 2).mean(-1, keepdim=True)
        rstd = 1.0 / torch.sqrt(var + eps)
        xhat = (x - mu) * rstd
        ctx.save_for_backward(xhat, rstd, gamma)
        return xhat * gamma + beta

    @staticmethod
    def backward(ctx, grad_output):
        xhat, rstd, gamma = ctx.saved_tensors
        gxhat = grad_output * gamma
        dx = rstd * (gxhat - gxhat.mean(-1, keepdim=True)
                     - xhat * (gxhat * xhat).mean(-1, keepdim=True))
        dgamma = (grad_output * xhat).sum(0)
        dbeta = grad_output.sum(0)
        return dx, dgamma, dbeta, None

    @staticmethod
    def example_inputs():
        return (_rows(), _features(), torch.randn(4, requires_grad=True))


class LayerNormMissingTerm(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "x",
           "note": "dx lacks the -xhat * mean(gxhat * xhat) term (the variance's dependence on x)"}

    @staticmethod
    def forward(ctx, x, gamma, beta, eps=1e-5):
        mu = x.mean(-1, keepdim=True)
        var = ((x - mu) ** 2).mean(-1, keepdim=True)
        rstd = 1.0 / torch.sqrt(var + eps)
        xhat = (x - mu) * rstd
        ctx.save_for_backward(xhat, rstd, gamma)
        return xhat * gamma + beta

    @staticmethod
    def backward(ctx, grad_output):
        xhat, rstd, gamma = ctx.saved_tensors
        gxhat = grad_output * gamma
        dx = rstd * (gxhat - gxhat.mean(-1, keepdim=True))  # BUG
        dgamma = (grad_output * xhat).sum(0)
        dbeta = grad_output.sum(0)
        return dx, dgamma, dbeta, None

    @staticmethod
    def example_inputs():
        return (_rows(), _features(), torch.randn(4, requires_grad=True))


class LayerNormGammaUsesX(torch.autograd.Function):
    bug = {"kind": "wrong_variable", "input": "gamma",
           "note": "dgamma sums grad_output * x where the normalised xhat is needed"}

    @staticmethod
    def forward(ctx, x, gamma, beta, eps=1e-5):
        mu = x.mean(-1, keepdim=True)
        var = ((x - mu) ** 2).mean(-1, keepdim=True)
        rstd = 1.0 / torch.sqrt(var + eps)
        xhat = (x - mu) * rstd
        ctx.save_for_backward(x, xhat, rstd, gamma)
        return xhat * gamma + beta

    @staticmethod
    def backward(ctx, grad_output):
        x, xhat, rstd, gamma = ctx.saved_tensors
        gxhat = grad_output * gamma
        dx = rstd * (gxhat - gxhat.mean(-1, keepdim=True)
                     - xhat * (gxhat * xhat).mean(-1, keepdim=True))
        dgamma = (grad_output * x).sum(0)  # BUG
        dbeta = grad_output.sum(0)
        return dx, dgamma, dbeta, None

    @staticmethod
    def example_inputs():
        return (_rows(), _features(), torch.randn(4, requires_grad=True))


# ----------------------------------------------------------------------------------- RMSNorm
class RMSNorm(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, weight, eps=1e-6):
        rstd = torch.rsqrt((x * x).mean(-1, keepdim=True) + eps)
        ctx.save_for_backward(x, rstd, weight)
        return x * rstd * weight

    @staticmethod
    def backward(ctx, grad_output):
        x, rstd, weight = ctx.saved_tensors
        gw = grad_output * weight
        dx = rstd * gw - x * rstd ** 3 * (gw * x).mean(-1, keepdim=True)
        dweight = (grad_output * x * rstd).sum(0)
        return dx, dweight, None

    @staticmethod
    def example_inputs():
        return (_rows(), _features())


class RMSNormWrongAxis(torch.autograd.Function):
    bug = {"kind": "wrong_axis", "input": "x",
           "note": "backward averages gw * x over dim 0; forward's mean is over the last dim"}

    @staticmethod
    def forward(ctx, x, weight, eps=1e-6):
        rstd = torch.rsqrt((x * x).mean(-1, keepdim=True) + eps)
        ctx.save_for_backward(x, rstd, weight)
        return x * rstd * weight

    @staticmethod
    def backward(ctx, grad_output):
        x, rstd, weight = ctx.saved_tensors
        gw = grad_output * weight
        dx = rstd * gw - x * rstd ** 3 * (gw * x).mean(0, keepdim=True)  # BUG
        dweight = (grad_output * x * rstd).sum(0)
        return dx, dweight, None

    @staticmethod
    def example_inputs():
        return (_rows(), _features())


class RMSNormTermSign(torch.autograd.Function):
    bug = {"kind": "term_sign", "input": "x",
           "note": "the rstd**3 term is added instead of subtracted"}

    @staticmethod
    def forward(ctx, x, weight, eps=1e-6):
        rstd = torch.rsqrt((x * x).mean(-1, keepdim=True) + eps)
        ctx.save_for_backward(x, rstd, weight)
        return x * rstd * weight

    @staticmethod
    def backward(ctx, grad_output):
        x, rstd, weight = ctx.saved_tensors
        gw = grad_output * weight
        dx = rstd * gw + x * rstd ** 3 * (gw * x).mean(-1, keepdim=True)  # BUG
        dweight = (grad_output * x * rstd).sum(0)
        return dx, dweight, None

    @staticmethod
    def example_inputs():
        return (_rows(), _features())


class RMSNormWeightUsesX(torch.autograd.Function):
    bug = {"kind": "wrong_variable", "input": "weight",
           "note": "dweight uses x where the normalised x * rstd is needed"}

    @staticmethod
    def forward(ctx, x, weight, eps=1e-6):
        rstd = torch.rsqrt((x * x).mean(-1, keepdim=True) + eps)
        ctx.save_for_backward(x, rstd, weight)
        return x * rstd * weight

    @staticmethod
    def backward(ctx, grad_output):
        x, rstd, weight = ctx.saved_tensors
        gw = grad_output * weight
        dx = rstd * gw - x * rstd ** 3 * (gw * x).mean(-1, keepdim=True)
        dweight = (grad_output * x).sum(0)  # BUG
        return dx, dweight, None

    @staticmethod
    def example_inputs():
        return (_rows(), _features())


# --------------------------------------------------------------------------------- BatchNorm
class BatchNorm(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, gamma, beta, eps=1e-5):
        mu = x.mean(0, keepdim=True)
        var = x.var(0, unbiased=False, keepdim=True)
        rstd = 1.0 / torch.sqrt(var + eps)
        xhat = (x - mu) * rstd
        ctx.save_for_backward(xhat, rstd, gamma)
        return gamma * xhat + beta

    @staticmethod
    def backward(ctx, grad_output):
        xhat, rstd, gamma = ctx.saved_tensors
        n = grad_output.shape[0]
        gxhat = grad_output * gamma
        dx = (rstd / n) * (n * gxhat - gxhat.sum(0, keepdim=True)
                           - xhat * (gxhat * xhat).sum(0, keepdim=True))
        dgamma = (grad_output * xhat).sum(0)
        dbeta = grad_output.sum(0)
        return dx, dgamma, dbeta, None

    @staticmethod
    def example_inputs():
        return (torch.randn(5, 4, requires_grad=True), _features(), torch.randn(4, requires_grad=True))


class BatchNormGammaUsesX(torch.autograd.Function):
    bug = {"kind": "wrong_variable", "input": "gamma",
           "note": "dgamma uses the raw input x instead of xhat"}

    @staticmethod
    def forward(ctx, x, gamma, beta, eps=1e-5):
        mu = x.mean(0, keepdim=True)
        var = x.var(0, unbiased=False, keepdim=True)
        rstd = 1.0 / torch.sqrt(var + eps)
        xhat = (x - mu) * rstd
        ctx.save_for_backward(x, xhat, rstd, gamma)
        return gamma * xhat + beta

    @staticmethod
    def backward(ctx, grad_output):
        x, xhat, rstd, gamma = ctx.saved_tensors
        n = grad_output.shape[0]
        gxhat = grad_output * gamma
        dx = (rstd / n) * (n * gxhat - gxhat.sum(0, keepdim=True)
                           - xhat * (gxhat * xhat).sum(0, keepdim=True))
        dgamma = (grad_output * x).sum(0)  # BUG
        dbeta = grad_output.sum(0)
        return dx, dgamma, dbeta, None

    @staticmethod
    def example_inputs():
        return (torch.randn(5, 4, requires_grad=True), _features(), torch.randn(4, requires_grad=True))


class BatchNormWrongAxis(torch.autograd.Function):
    bug = {"kind": "wrong_axis", "input": "x",
           "note": "dx's two sums run over the feature dim 1 instead of the batch dim 0"}

    @staticmethod
    def forward(ctx, x, gamma, beta, eps=1e-5):
        mu = x.mean(0, keepdim=True)
        var = x.var(0, unbiased=False, keepdim=True)
        rstd = 1.0 / torch.sqrt(var + eps)
        xhat = (x - mu) * rstd
        ctx.save_for_backward(xhat, rstd, gamma)
        return gamma * xhat + beta

    @staticmethod
    def backward(ctx, grad_output):
        xhat, rstd, gamma = ctx.saved_tensors
        n = grad_output.shape[0]
        gxhat = grad_output * gamma
        dx = (rstd / n) * (n * gxhat - gxhat.sum(1, keepdim=True)
                           - xhat * (gxhat * xhat).sum(1, keepdim=True))  # BUG
        dgamma = (grad_output * xhat).sum(0)
        dbeta = grad_output.sum(0)
        return dx, dgamma, dbeta, None

    @staticmethod
    def example_inputs():
        return (torch.randn(5, 4, requires_grad=True), _features(), torch.randn(4, requires_grad=True))


class BatchNormBetaMean(torch.autograd.Function):
    bug = {"kind": "scale", "input": "beta",
           "note": "dbeta averages grad_output over the batch instead of summing (factor 1/5)"}

    @staticmethod
    def forward(ctx, x, gamma, beta, eps=1e-5):
        mu = x.mean(0, keepdim=True)
        var = x.var(0, unbiased=False, keepdim=True)
        rstd = 1.0 / torch.sqrt(var + eps)
        xhat = (x - mu) * rstd
        ctx.save_for_backward(xhat, rstd, gamma)
        return gamma * xhat + beta

    @staticmethod
    def backward(ctx, grad_output):
        xhat, rstd, gamma = ctx.saved_tensors
        n = grad_output.shape[0]
        gxhat = grad_output * gamma
        dx = (rstd / n) * (n * gxhat - gxhat.sum(0, keepdim=True)
                           - xhat * (gxhat * xhat).sum(0, keepdim=True))
        dgamma = (grad_output * xhat).sum(0)
        dbeta = grad_output.mean(0)  # BUG
        return dx, dgamma, dbeta, None

    @staticmethod
    def example_inputs():
        return (torch.randn(5, 4, requires_grad=True), _features(), torch.randn(4, requires_grad=True))


# ------------------------------------------------------------------------------ L2-normalize
class L2Normalize(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x):
        norm = torch.sqrt((x * x).sum(-1, keepdim=True))
        y = x / norm
        ctx.save_for_backward(y, norm)
        return y

    @staticmethod
    def backward(ctx, grad_output):
        y, norm = ctx.saved_tensors
        return (grad_output - y * (grad_output * y).sum(-1, keepdim=True)) / norm


class L2NormalizeUsesInput(torch.autograd.Function):
    bug = {"kind": "wrong_variable", "input": "x",
           "note": "the projection uses x where the unit vector y = x / |x| is needed"}

    @staticmethod
    def forward(ctx, x):
        norm = torch.sqrt((x * x).sum(-1, keepdim=True))
        ctx.save_for_backward(x, norm)
        return x / norm

    @staticmethod
    def backward(ctx, grad_output):
        x, norm = ctx.saved_tensors
        return (grad_output - x * (grad_output * x).sum(-1, keepdim=True)) / norm  # BUG


class L2NormalizeWrongAxis(torch.autograd.Function):
    bug = {"kind": "wrong_axis", "input": "x",
           "note": "the projection's dot product runs over dim 0; the norm is over the last dim"}

    @staticmethod
    def forward(ctx, x):
        norm = torch.sqrt((x * x).sum(-1, keepdim=True))
        y = x / norm
        ctx.save_for_backward(y, norm)
        return y

    @staticmethod
    def backward(ctx, grad_output):
        y, norm = ctx.saved_tensors
        return (grad_output - y * (grad_output * y).sum(0, keepdim=True)) / norm  # BUG
