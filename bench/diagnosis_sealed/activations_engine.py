"""Activations with parameters on gradcli's engine: PReLU, Swish-beta, ELU-alpha, softplus-beta,
Snake, a sigmoid gate, and a step's straight-through and surrogate estimators."""
import gradcli as torch


def _gen(seed):
    return torch.Generator().manual_seed(seed)


def _channels():
    g = _gen(83)
    return (torch.randn(2, 4, 3, dtype=torch.float64, generator=g),
            torch.rand(4, dtype=torch.float64, generator=g) * 0.5)


class SealedPReLUChannels(torch.autograd.Function):
    """PReLU on (N, C, L) with one slope per channel."""
    bug = None

    @staticmethod
    def forward(ctx, x, slope):
        ctx.save_for_backward(x, slope)
        return torch.where(x > 0, x, slope.view(1, -1, 1) * x)

    @staticmethod
    def backward(ctx, grad):
        x, slope = ctx.saved_tensors
        neg = x <= 0
        dx = torch.where(neg, slope.view(1, -1, 1) * grad, grad)
        dslope = (grad * x * neg).sum(dim=(0, 2))
        return dx, dslope

    @staticmethod
    def example_inputs():
        return _channels()


class SealedPReLUChannelsSlopeGrad(torch.autograd.Function):
    bug = {"kind": "not_reduced", "input": "slope",
           "note": "the slope gradient is summed over the batch only, leaving a (C, L) tensor"}

    @staticmethod
    def forward(ctx, x, slope):
        ctx.save_for_backward(x, slope)
        return torch.where(x > 0, x, slope.view(1, -1, 1) * x)

    @staticmethod
    def backward(ctx, grad):
        x, slope = ctx.saved_tensors
        neg = x <= 0
        dx = torch.where(neg, slope.view(1, -1, 1) * grad, grad)
        dslope = (grad * x * neg).sum(dim=0)  # BUG
        return dx, dslope

    @staticmethod
    def example_inputs():
        return _channels()


def _with_scalar(value, seed):
    return torch.randn(3, 4, dtype=torch.float64, generator=_gen(seed)), value


class SealedSwishBeta(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, beta):
        s = torch.sigmoid(beta * x)
        ctx.save_for_backward(x, s)
        ctx.beta = beta
        return x * s

    @staticmethod
    def backward(ctx, grad):
        x, s = ctx.saved_tensors
        return grad * (s + ctx.beta * x * s * (1 - s)), None

    @staticmethod
    def example_inputs():
        return _with_scalar(1.5, 84)


class SealedSwishBetaSharedBuffer(torch.autograd.Function):
    bug = {"kind": "inplace", "input": "x",
           "note": "the sigmoid kept on ctx is reused as the output buffer (mul_), so backward sees x*s"}

    @staticmethod
    def forward(ctx, x, beta):
        s = torch.sigmoid(beta * x)
        ctx.x, ctx.s, ctx.beta = x, s, beta
        return s.mul_(x)  # BUG

    @staticmethod
    def backward(ctx, grad):
        x, s = ctx.x, ctx.s
        return grad * (s + ctx.beta * x * s * (1 - s)), None

    @staticmethod
    def example_inputs():
        return _with_scalar(1.5, 84)


class SealedELUAlpha(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, alpha):
        y = torch.where(x > 0, x, alpha * torch.expm1(x))
        ctx.save_for_backward(x, y)
        ctx.alpha = alpha
        return y

    @staticmethod
    def backward(ctx, grad):
        x, y = ctx.saved_tensors
        return grad * torch.where(x > 0, torch.ones_like(x), y + ctx.alpha), None

    @staticmethod
    def example_inputs():
        return _with_scalar(0.8, 85)


class SealedELUAlphaNoOffset(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "x",
           "note": "the negative branch's derivative alpha*e^x is written y, dropping the + alpha"}

    @staticmethod
    def forward(ctx, x, alpha):
        y = torch.where(x > 0, x, alpha * torch.expm1(x))
        ctx.save_for_backward(x, y)
        ctx.alpha = alpha
        return y

    @staticmethod
    def backward(ctx, grad):
        x, y = ctx.saved_tensors
        return grad * torch.where(x > 0, torch.ones_like(x), y), None  # BUG

    @staticmethod
    def example_inputs():
        return _with_scalar(0.8, 85)


class SealedSoftplusBeta(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, beta):
        ctx.save_for_backward(x)
        ctx.beta = beta
        return torch.log1p(torch.exp(beta * x)) / beta

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * torch.sigmoid(ctx.beta * x), None

    @staticmethod
    def example_inputs():
        return _with_scalar(2.5, 86)


class SealedSoftplusBetaChainTwice(torch.autograd.Function):
    bug = {"kind": "scale", "input": "x",
           "note": "the inner beta of the chain rule is kept though the forward divides by beta"}

    @staticmethod
    def forward(ctx, x, beta):
        ctx.save_for_backward(x)
        ctx.beta = beta
        return torch.log1p(torch.exp(beta * x)) / beta

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * ctx.beta * torch.sigmoid(ctx.beta * x), None  # BUG

    @staticmethod
    def example_inputs():
        return _with_scalar(2.5, 86)


class SealedSnake(torch.autograd.Function):
    """Snake: x + sin(a x)^2 / a."""
    bug = None

    @staticmethod
    def forward(ctx, x, a):
        ctx.save_for_backward(x)
        ctx.a = a
        return x + torch.sin(a * x) ** 2 / a

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * (1 + torch.sin(2 * ctx.a * x)), None

    @staticmethod
    def example_inputs():
        return _with_scalar(1.3, 87)


class SealedSnakeNoChain(torch.autograd.Function):
    bug = {"kind": "none", "input": "x",
           "note": "backward is 1 + sin(a x)^2, the periodic part copied from forward, not differentiated"}

    @staticmethod
    def forward(ctx, x, a):
        ctx.save_for_backward(x)
        ctx.a = a
        return x + torch.sin(a * x) ** 2 / a

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * (1 + torch.sin(ctx.a * x) ** 2), None  # BUG

    @staticmethod
    def example_inputs():
        return _with_scalar(1.3, 87)


class SealedSigmoidGate(torch.autograd.Function):
    """x * sigmoid(gate)."""
    bug = None

    @staticmethod
    def forward(ctx, x, gate):
        s = gate.sigmoid()
        ctx.save_for_backward(x, s)
        return x * s

    @staticmethod
    def backward(ctx, grad):
        x, s = ctx.saved_tensors
        return grad * s, grad * x * s * (1 - s)


class SealedSigmoidGateSwapped(torch.autograd.Function):
    bug = {"kind": "swapped", "input": "x",
           "note": "returns (dgate, dx): the two gradients in the wrong order"}

    @staticmethod
    def forward(ctx, x, gate):
        s = gate.sigmoid()
        ctx.save_for_backward(x, s)
        return x * s

    @staticmethod
    def backward(ctx, grad):
        x, s = ctx.saved_tensors
        dx, dgate = grad * s, grad * x * s * (1 - s)
        return dgate, dx  # BUG


class SealedBinarizeSTE(torch.autograd.Function):
    """0/1 step with the identity straight-through estimator, on purpose."""
    bug = {"kind": "straight_through", "input": "x",
           "note": "forward is a hard step, backward passes grad through unchanged"}

    @staticmethod
    def forward(ctx, x):
        return (x > 0).to(x.dtype)

    @staticmethod
    def backward(ctx, grad):
        return grad.clone()  # BUG


class SealedSpikeSurrogate(torch.autograd.Function):
    """Spiking neuron's firing step with a fast-sigmoid surrogate gradient, on purpose."""
    bug = {"kind": "smooth_surrogate", "input": "v",
           "note": "forward is a hard step at 0, backward is the derivative of sigmoid(4 v)"}

    @staticmethod
    def forward(ctx, v):
        ctx.save_for_backward(v)
        return (v > 0).to(v.dtype)

    @staticmethod
    def backward(ctx, grad):
        (v,) = ctx.saved_tensors
        s = torch.sigmoid(4.0 * v)
        return grad * 4.0 * s * (1 - s)  # BUG
