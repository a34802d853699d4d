"""Statistics on gradcli's engine: Pearson correlation per row, log-sum-exp with a learnable
temperature, a covariance matrix, cosine similarity and a harmonic mean."""
import gradcli as torch


def _pair_inputs(seed):
    torch.manual_seed(seed)
    return torch.randn(3, 6, dtype=torch.float64), torch.randn(3, 6, dtype=torch.float64)


def _pearson_forward(ctx, x, y):
    a = x - x.mean(dim=1, keepdim=True)
    b = y - y.mean(dim=1, keepdim=True)
    saa = (a * a).sum(dim=1, keepdim=True)
    sbb = (b * b).sum(dim=1, keepdim=True)
    r = (a * b).sum(dim=1, keepdim=True) / torch.sqrt(saa * sbb)
    ctx.save_for_backward(a, b, saa, sbb, r)
    return r[:, 0]


class DistantPearson(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, y):
        return _pearson_forward(ctx, x, y)

    @staticmethod
    def backward(ctx, grad_r):
        a, b, saa, sbb, r = ctx.saved_tensors
        root = torch.sqrt(saa * sbb)
        g = grad_r[:, None]
        grad_x = g * (b / root - r * a / saa)
        grad_y = g * (a / root - r * b / sbb)
        return grad_x, grad_y

    @staticmethod
    def example_inputs():
        return _pair_inputs(91)


class DistantPearsonSelfTermSign(torch.autograd.Function):
    bug = {"kind": "term_sign", "input": "x",
           "note": "x's gradient adds r * a / saa where it is subtracted (the derivative of 1/sqrt(saa))"}

    @staticmethod
    def forward(ctx, x, y):
        return _pearson_forward(ctx, x, y)

    @staticmethod
    def backward(ctx, grad_r):
        a, b, saa, sbb, r = ctx.saved_tensors
        root = torch.sqrt(saa * sbb)
        g = grad_r[:, None]
        grad_x = g * (b / root + r * a / saa)  # BUG
        grad_y = g * (a / root - r * b / sbb)
        return grad_x, grad_y

    @staticmethod
    def example_inputs():
        return _pair_inputs(91)


def _lse_inputs():
    torch.manual_seed(92)
    return torch.randn(4, 5, dtype=torch.float64), torch.tensor([0.7], dtype=torch.float64)


def _lse_forward(ctx, x, tau):
    scaled = x / tau
    lse = torch.logsumexp(scaled, dim=1)
    ctx.save_for_backward(x, tau, lse)
    return tau * lse


class DistantTemperatureLogSumExp(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, tau):
        return _lse_forward(ctx, x, tau)

    @staticmethod
    def backward(ctx, grad_out):
        x, tau, lse = ctx.saved_tensors
        p = torch.exp(x / tau - lse[:, None])
        grad_x = grad_out[:, None] * p
        grad_tau = (grad_out * (lse - (p * x).sum(dim=1) / tau)).sum().reshape(1)
        return grad_x, grad_tau

    @staticmethod
    def example_inputs():
        return _lse_inputs()


class DistantTemperatureLogSumExpSoftmaxOnly(torch.autograd.Function):
    bug = {"kind": "ignores_grad_output", "input": "x",
           "note": "x's gradient is the softmax alone: the upstream grad_out per row is never multiplied in"}

    @staticmethod
    def forward(ctx, x, tau):
        return _lse_forward(ctx, x, tau)

    @staticmethod
    def backward(ctx, grad_out):
        x, tau, lse = ctx.saved_tensors
        p = torch.exp(x / tau - lse[:, None])
        grad_x = p  # BUG
        grad_tau = (grad_out * (lse - (p * x).sum(dim=1) / tau)).sum().reshape(1)
        return grad_x, grad_tau

    @staticmethod
    def example_inputs():
        return _lse_inputs()


def _cov_inputs():
    torch.manual_seed(93)
    return (torch.randn(6, 3, dtype=torch.float64),)


class DistantCovariance(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x):
        xc = x - x.mean(dim=0, keepdim=True)
        ctx.save_for_backward(xc)
        return xc.t() @ xc / (x.shape[0] - 1)

    @staticmethod
    def backward(ctx, grad_c):
        (xc,) = ctx.saved_tensors
        return xc @ (grad_c + grad_c.t()) / (xc.shape[0] - 1)

    @staticmethod
    def example_inputs():
        return _cov_inputs()


class DistantCovarianceBiasedDivisor(torch.autograd.Function):
    bug = {"kind": "scale", "input": "x",
           "note": "backward divides by n (the biased estimator) while forward divides by n - 1"}

    @staticmethod
    def forward(ctx, x):
        xc = x - x.mean(dim=0, keepdim=True)
        ctx.save_for_backward(xc)
        return xc.t() @ xc / (x.shape[0] - 1)

    @staticmethod
    def backward(ctx, grad_c):
        (xc,) = ctx.saved_tensors
        return xc @ (grad_c + grad_c.t()) / xc.shape[0]  # BUG

    @staticmethod
    def example_inputs():
        return _cov_inputs()


def _cos_forward(ctx, a, b):
    na = torch.sqrt((a * a).sum(dim=-1, keepdim=True))
    nb = torch.sqrt((b * b).sum(dim=-1, keepdim=True))
    cos = (a * b).sum(dim=-1, keepdim=True) / (na * nb)
    ctx.save_for_backward(a, b, na, nb, cos)
    return cos[:, 0]


class DistantCosineSimilarity(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, a, b):
        return _cos_forward(ctx, a, b)

    @staticmethod
    def backward(ctx, grad_out):
        a, b, na, nb, cos = ctx.saved_tensors
        g = grad_out[:, None]
        grad_a = g * (b / (na * nb) - cos * a / (na * na))
        grad_b = g * (a / (na * nb) - cos * b / (nb * nb))
        return grad_a, grad_b

    @staticmethod
    def example_inputs():
        return _pair_inputs(94)


class DistantCosineSimilarityOtherNorm(torch.autograd.Function):
    bug = {"kind": "wrong_variable", "input": "a",
           "note": "a's self term divides by nb**2 (copied from b's line) where na**2 is needed"}

    @staticmethod
    def forward(ctx, a, b):
        return _cos_forward(ctx, a, b)

    @staticmethod
    def backward(ctx, grad_out):
        a, b, na, nb, cos = ctx.saved_tensors
        g = grad_out[:, None]
        grad_a = g * (b / (na * nb) - cos * a / (nb * nb))  # BUG
        grad_b = g * (a / (na * nb) - cos * b / (nb * nb))
        return grad_a, grad_b

    @staticmethod
    def example_inputs():
        return _pair_inputs(94)


def _hm_inputs():
    torch.manual_seed(95)
    return (torch.rand(3, 5, dtype=torch.float64) * 2 + 0.5,)


class DistantHarmonicMean(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x):
        hm = x.shape[1] / (1.0 / x).sum(dim=1)
        ctx.save_for_backward(x, hm)
        return hm

    @staticmethod
    def backward(ctx, grad_out):
        x, hm = ctx.saved_tensors
        n = x.shape[1]
        return grad_out[:, None] * (hm * hm)[:, None] / (n * x * x)

    @staticmethod
    def example_inputs():
        return _hm_inputs()


class DistantHarmonicMeanOneMinusTooMany(torch.autograd.Function):
    bug = {"kind": "sign", "input": "x",
           "note": "of the two minus signs (d(1/x) and d(n/s)) only one is kept, so the gradient is negated"}

    @staticmethod
    def forward(ctx, x):
        hm = x.shape[1] / (1.0 / x).sum(dim=1)
        ctx.save_for_backward(x, hm)
        return hm

    @staticmethod
    def backward(ctx, grad_out):
        x, hm = ctx.saved_tensors
        n = x.shape[1]
        return -grad_out[:, None] * (hm * hm)[:, None] / (n * x * x)  # BUG

    @staticmethod
    def example_inputs():
        return _hm_inputs()
