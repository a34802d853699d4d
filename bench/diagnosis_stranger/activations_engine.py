import gradcli as torch

# Soft clipping and log1p(exp) variants on gradcli's engine: a learnable-scale soft clip
# s * tanh(x / s), softplus with a learnable beta, a numerically stable softplus
# max(x, 0) + log1p(exp(-|x|)), a per-row learned-gain tanh, and softplus through a saved exp.


def _clip_inputs():
    gen = torch.Generator().manual_seed(901)
    return torch.randn(3, 4, generator=gen, dtype=torch.float64) * 2, torch.tensor(1.5, dtype=torch.float64)


class StrangerSoftClip(torch.autograd.Function):
    """y = s * tanh(x / s), s a learnable 0-d scale."""

    bug = None

    @staticmethod
    def forward(ctx, x, scale):
        u = x / scale
        th = torch.tanh(u)
        ctx.save_for_backward(u, th)
        return scale * th

    @staticmethod
    def backward(ctx, grad_out):
        u, th = ctx.saved_tensors
        sech2 = 1 - th * th
        return grad_out * sech2, (grad_out * (th - u * sech2)).sum()

    @staticmethod
    def example_inputs():
        return _clip_inputs()


class StrangerSoftClipArctanDerivative(torch.autograd.Function):
    """Soft clip whose author took the derivative of another soft clipper."""

    bug = {"kind": "none", "input": "x",
           "note": "x's gradient is 1 / (1 + u^2), the derivative of arctan(u), not tanh's "
                   "1 - tanh(u)^2"}

    @staticmethod
    def forward(ctx, x, scale):
        ctx.save_for_backward(x, scale)
        return scale * torch.tanh(x / scale)

    @staticmethod
    def backward(ctx, grad_out):
        x, scale = ctx.saved_tensors
        u = x / scale
        grad_x = grad_out / (1 + u * u)  # BUG
        th = torch.tanh(u)
        grad_scale = (grad_out * (th - u * (1 - th ** 2))).sum()
        return grad_x, grad_scale

    @staticmethod
    def example_inputs():
        return _clip_inputs()


class StrangerSoftClipScaleOutsideOnly(torch.autograd.Function):
    """Soft clip whose scale gradient only sees the outer factor."""

    bug = {"kind": "missing_term", "input": "scale",
           "note": "s appears twice (s * tanh(x / s)); the inner term -u * sech^2(u) is missing"}

    @staticmethod
    def forward(ctx, x, scale):
        clipped = torch.tanh(x / scale)
        ctx.clipped = clipped
        return scale * clipped

    @staticmethod
    def backward(ctx, grad_out):
        th = ctx.clipped
        grad_x = grad_out * (1 - th.pow(2))
        grad_scale = torch.sum(grad_out * th)  # BUG
        return grad_x, grad_scale

    @staticmethod
    def example_inputs():
        return _clip_inputs()


def _beta_inputs():
    gen = torch.Generator().manual_seed(902)
    return torch.randn(3, 4, generator=gen, dtype=torch.float64), torch.tensor(2.5, dtype=torch.float64)


class StrangerSoftplusBeta(torch.autograd.Function):
    """y = log1p(exp(beta x)) / beta, beta a learnable 0-d tensor."""

    bug = None

    @staticmethod
    def forward(ctx, x, beta):
        y = torch.log1p(torch.exp(beta * x)) / beta
        ctx.save_for_backward(x, beta, y)
        return y

    @staticmethod
    def backward(ctx, grad_out):
        x, beta, y = ctx.saved_tensors
        s = torch.sigmoid(beta * x)
        grad_beta = (grad_out * (x * s - y) / beta).sum()
        return grad_out * s, grad_beta

    @staticmethod
    def example_inputs():
        return _beta_inputs()


class StrangerSoftplusBetaUnscaledGate(torch.autograd.Function):
    """Softplus-beta, its x-gradient written as the usual softplus derivative."""

    bug = {"kind": "wrong_variable", "input": "x",
           "note": "the derivative is sigmoid(beta x); the code takes sigmoid(x)"}

    @staticmethod
    def forward(ctx, x, beta):
        z = beta * x
        ctx.save_for_backward(x, z, beta)
        return torch.log1p(torch.exp(z)) / beta

    @staticmethod
    def backward(ctx, grad_out):
        x, z, beta = ctx.saved_tensors
        gate = torch.sigmoid(x)  # BUG
        grad_x = grad_out * gate
        softplus_z = torch.log1p(torch.exp(z))
        grad_beta = grad_out * (x * torch.sigmoid(z) / beta - softplus_z / beta ** 2)
        return grad_x, grad_beta.sum()

    @staticmethod
    def example_inputs():
        return _beta_inputs()


class StrangerStableSoftplus(torch.autograd.Function):
    """softplus(x) = max(x, 0) + log1p(exp(-|x|)), derivative assembled by parts."""

    bug = None

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch.clamp(x, min=0) + torch.log1p(torch.exp(-torch.abs(x)))

    @staticmethod
    def backward(ctx, grad_out):
        (x,) = ctx.saved_tensors
        e = torch.exp(-torch.abs(x))
        d_relu = (x > 0).to(x.dtype)
        d_tail = -torch.sign(x) * e / (1 + e)
        return grad_out * (d_relu + d_tail)


class StrangerStableSoftplusFlippedRelu(torch.autograd.Function):
    """Stable softplus with a torch.where for the max(x, 0) part."""

    bug = {"kind": "region", "input": "x",
           "note": "max(x, 0) passes the gradient where x > 0; the where picks x < 0"}

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch.relu(x) + torch.log1p(torch.exp(-x.abs()))

    @staticmethod
    def backward(ctx, grad_out):
        (x,) = ctx.saved_tensors
        through_max = torch.where(x < 0, grad_out, torch.zeros_like(grad_out))  # BUG
        e = torch.exp(-x.abs())
        through_tail = grad_out * torch.where(x > 0, -e, e) / (1 + e)
        return through_max + through_tail


class StrangerSoftplusSavedExp(torch.autograd.Function):
    """softplus(x) = log(1 + e^x) with e^x kept on ctx for backward (x is small here)."""

    bug = None

    @staticmethod
    def forward(ctx, x):
        e = torch.exp(x)
        ctx.e = e
        return torch.log(e + 1)

    @staticmethod
    def backward(ctx, grad_out):
        e = ctx.e
        return grad_out * e / (1 + e)


class StrangerSoftplusSavedExpAddedInPlace(torch.autograd.Function):
    """The same softplus, the 1 + e^x buffer formed in place to save memory."""

    bug = {"kind": "inplace", "input": "x",
           "note": "e.add_(1) after ctx.e = e: backward computes e / (1 + e) from 1 + e^x"}

    @staticmethod
    def forward(ctx, x):
        e = torch.exp(x)
        ctx.e = e
        one_plus = e.add_(1)  # BUG
        return torch.log(one_plus)

    @staticmethod
    def backward(ctx, grad_out):
        e = ctx.e
        return grad_out * e / (1 + e)


def _gain_inputs():
    gen = torch.Generator().manual_seed(903)
    return (torch.randn(4, 4, generator=gen, dtype=torch.float64),
            torch.rand(4, generator=gen, dtype=torch.float64) + 0.5)


class StrangerRowGainTanh(torch.autograd.Function):
    """y = gain[:, None] * tanh(x): a learned output scale per row (x square, 4 x 4)."""

    bug = None

    @staticmethod
    def forward(ctx, x, gain):
        th = torch.tanh(x)
        ctx.save_for_backward(th, gain)
        return gain.unsqueeze(1) * th

    @staticmethod
    def backward(ctx, grad_out):
        th, gain = ctx.saved_tensors
        grad_x = grad_out * gain.unsqueeze(1) * (1 - th * th)
        grad_gain = (grad_out * th).sum(dim=1)
        return grad_x, grad_gain

    @staticmethod
    def example_inputs():
        return _gain_inputs()


class StrangerRowGainTanhUnsummedGain(torch.autograd.Function):
    """Row-gain tanh whose gain gradient is left elementwise."""

    bug = {"kind": "not_reduced", "input": "gain",
           "note": "the gain broadcasts along each row, but its gradient grad_out * tanh(x) is "
                   "returned unsummed; torch then sums it over the wrong (first) axis"}

    @staticmethod
    def forward(ctx, x, gain):
        ctx.save_for_backward(x, gain)
        return gain[:, None] * torch.tanh(x)

    @staticmethod
    def backward(ctx, grad_out):
        x, gain = ctx.saved_tensors
        th = torch.tanh(x)
        grad_gain = grad_out * th  # BUG
        grad_x = grad_out * gain[:, None] * (1 - th ** 2)
        return grad_x, grad_gain

    @staticmethod
    def example_inputs():
        return _gain_inputs()
