"""Activations with parameters and piecewise activations, on gradcli's engine (runs without PyTorch)."""
import gradcli as torch
import gradcli.nn.functional as F


def _x_and_scalar(seed, low=0.5):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(3, 4, dtype=torch.float64, generator=g) * 2
    return x, torch.rand((), dtype=torch.float64, generator=g) + low



class ReservedPReLU(torch.autograd.Function):
    """PReLU with one learnable slope per column: where(x > 0, x, a * x)."""
    bug = None

    @staticmethod
    def forward(ctx, x, a):
        ctx.save_for_backward(x, a)
        return torch.where(x > 0, x, a * x)

    @staticmethod
    def backward(ctx, grad_out):
        x, a = ctx.saved_tensors
        grad_x = torch.where(x > 0, grad_out, a * grad_out)
        grad_a = torch.where(x > 0, torch.zeros_like(x), x * grad_out).sum(0)
        return grad_x, grad_a

    @staticmethod
    def example_inputs():
        g = torch.Generator().manual_seed(71)
        return (torch.randn(5, 4, dtype=torch.float64, generator=g),
                torch.rand(4, dtype=torch.float64, generator=g) * 0.5)


class ReservedPReLUSlopeOnPositive(torch.autograd.Function):
    """PReLU with one learnable slope per column: where(x > 0, x, a * x)."""
    bug = {'kind': 'region', 'input': 'a', 'note': "collects the slope's gradient where x > 0 instead of where x <= 0"}

    @staticmethod
    def forward(ctx, x, a):
        ctx.save_for_backward(x, a)
        return torch.where(x > 0, x, a * x)

    @staticmethod
    def backward(ctx, grad_out):
        x, a = ctx.saved_tensors
        grad_x = torch.where(x > 0, grad_out, a * grad_out)
        grad_a = torch.where(x > 0, x * grad_out, torch.zeros_like(x)).sum(0)  # BUG
        return grad_x, grad_a

    @staticmethod
    def example_inputs():
        g = torch.Generator().manual_seed(71)
        return (torch.randn(5, 4, dtype=torch.float64, generator=g),
                torch.rand(4, dtype=torch.float64, generator=g) * 0.5)


class ReservedSwishBeta(torch.autograd.Function):
    """Swish-beta x * sigmoid(beta * x) with a learnable scalar beta."""
    bug = None

    @staticmethod
    def forward(ctx, x, beta):
        s = torch.sigmoid(beta * x)
        ctx.save_for_backward(x, beta, s)
        return x * s

    @staticmethod
    def backward(ctx, grad_out):
        x, beta, s = ctx.saved_tensors
        ds = s * (1 - s)
        grad_x = grad_out * (s + beta * x * ds)
        grad_beta = (grad_out * x * x * ds).sum()
        return grad_x, grad_beta

    @staticmethod
    def example_inputs():
        return _x_and_scalar(72)


class ReservedSwishBetaOnlySigmoid(torch.autograd.Function):
    """Swish-beta x * sigmoid(beta * x) with a learnable scalar beta."""
    bug = {'kind': 'missing_term', 'input': 'x', 'note': "keeps only sigmoid(beta x) and drops beta x sigmoid'(beta x)"}

    @staticmethod
    def forward(ctx, x, beta):
        s = torch.sigmoid(beta * x)
        ctx.save_for_backward(x, beta, s)
        return x * s

    @staticmethod
    def backward(ctx, grad_out):
        x, beta, s = ctx.saved_tensors
        ds = s * (1 - s)
        grad_x = grad_out * s  # BUG
        grad_beta = (grad_out * x * x * ds).sum()
        return grad_x, grad_beta

    @staticmethod
    def example_inputs():
        return _x_and_scalar(72)


class ReservedELUAlpha(torch.autograd.Function):
    """ELU with a learnable alpha: x for x > 0, alpha (exp(x) - 1) otherwise."""
    bug = None

    @staticmethod
    def forward(ctx, x, alpha):
        em1 = torch.expm1(torch.clamp(x, max=0.0))
        out = torch.where(x > 0, x, alpha * em1)
        ctx.save_for_backward(x, alpha, em1)
        return out

    @staticmethod
    def backward(ctx, grad_out):
        x, alpha, em1 = ctx.saved_tensors
        negative = x <= 0
        local = torch.where(negative, alpha * (em1 + 1), torch.ones_like(x))
        grad_alpha = (grad_out * torch.where(negative, em1, torch.zeros_like(x))).sum()
        return grad_out * local, grad_alpha

    @staticmethod
    def example_inputs():
        return _x_and_scalar(73)


class ReservedELUAlphaSavedOutput(torch.autograd.Function):
    """ELU with a learnable alpha: x for x > 0, alpha (exp(x) - 1) otherwise."""
    bug = {'kind': 'wrong_variable', 'input': 'x', 'note': 'uses alpha (exp(x) - 1), the output, where alpha exp(x) is the derivative'}

    @staticmethod
    def forward(ctx, x, alpha):
        em1 = torch.expm1(torch.clamp(x, max=0.0))
        out = torch.where(x > 0, x, alpha * em1)
        ctx.save_for_backward(x, alpha, em1)
        return out

    @staticmethod
    def backward(ctx, grad_out):
        x, alpha, em1 = ctx.saved_tensors
        negative = x <= 0
        local = torch.where(negative, alpha * em1, torch.ones_like(x))  # BUG
        grad_alpha = (grad_out * torch.where(negative, em1, torch.zeros_like(x))).sum()
        return grad_out * local, grad_alpha

    @staticmethod
    def example_inputs():
        return _x_and_scalar(73)


class ReservedSoftplusBeta(torch.autograd.Function):
    """softplus with learnable beta: log(1 + exp(beta x)) / beta."""
    bug = None

    @staticmethod
    def forward(ctx, x, beta):
        out = torch.log1p(torch.exp(beta * x)) / beta
        ctx.save_for_backward(x, beta, out)
        return out

    @staticmethod
    def backward(ctx, grad_out):
        x, beta, out = ctx.saved_tensors
        s = torch.sigmoid(beta * x)
        grad_beta = (grad_out * (x * s - out) / beta).sum()
        return grad_out * s, grad_beta

    @staticmethod
    def example_inputs():
        return _x_and_scalar(74)


class ReservedSoftplusBetaBetaPlus(torch.autograd.Function):
    """softplus with learnable beta: log(1 + exp(beta x)) / beta."""
    bug = {'kind': 'term_sign', 'input': 'beta', 'note': 'adds the out / beta term of the beta gradient instead of subtracting it'}

    @staticmethod
    def forward(ctx, x, beta):
        out = torch.log1p(torch.exp(beta * x)) / beta
        ctx.save_for_backward(x, beta, out)
        return out

    @staticmethod
    def backward(ctx, grad_out):
        x, beta, out = ctx.saved_tensors
        s = torch.sigmoid(beta * x)
        grad_beta = (grad_out * (x * s + out) / beta).sum()  # BUG
        return grad_out * s, grad_beta

    @staticmethod
    def example_inputs():
        return _x_and_scalar(74)


class ReservedSnake(torch.autograd.Function):
    """Snake activation x + sin(a x)^2 / a with a learnable frequency a."""
    bug = None

    @staticmethod
    def forward(ctx, x, a):
        ctx.save_for_backward(x, a)
        return x + torch.sin(a * x) ** 2 / a

    @staticmethod
    def backward(ctx, grad_out):
        x, a = ctx.saved_tensors
        grad_x = grad_out * (1 + torch.sin(2 * a * x))
        grad_a = (grad_out * (x * torch.sin(2 * a * x) / a - torch.sin(a * x) ** 2 / (a * a))).sum()
        return grad_x, grad_a

    @staticmethod
    def example_inputs():
        return _x_and_scalar(75)


class ReservedSnakeFrequencyNoCorrection(torch.autograd.Function):
    """Snake activation x + sin(a x)^2 / a with a learnable frequency a."""
    bug = {'kind': 'missing_term', 'input': 'a', 'note': "drops the -sin(a x)^2 / a^2 term of the frequency's gradient"}

    @staticmethod
    def forward(ctx, x, a):
        ctx.save_for_backward(x, a)
        return x + torch.sin(a * x) ** 2 / a

    @staticmethod
    def backward(ctx, grad_out):
        x, a = ctx.saved_tensors
        grad_x = grad_out * (1 + torch.sin(2 * a * x))
        grad_a = (grad_out * x * torch.sin(2 * a * x) / a).sum()  # BUG
        return grad_x, grad_a

    @staticmethod
    def example_inputs():
        return _x_and_scalar(75)


class ReservedHardSwish(torch.autograd.Function):
    """hard-swish x * relu6(x + 3) / 6."""
    bug = None

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * F.relu6(x + 3) / 6

    @staticmethod
    def backward(ctx, grad_out):
        (x,) = ctx.saved_tensors
        middle = torch.where(x < 3, (2 * x + 3) / 6, torch.ones_like(x))
        return grad_out * torch.where(x > -3, middle, torch.zeros_like(x))

    @staticmethod
    def example_inputs():
        return (torch.randn(4, 5, dtype=torch.float64, generator=torch.Generator().manual_seed(76)) * 3,)


class ReservedHardSwishHardSigmoidSlope(torch.autograd.Function):
    """hard-swish x * relu6(x + 3) / 6."""
    bug = {'kind': 'none', 'input': 'x', 'note': "returns the hard-sigmoid's derivative (1/6 inside, 0 outside) for hard-swish"}

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * F.relu6(x + 3) / 6

    @staticmethod
    def backward(ctx, grad_out):
        (x,) = ctx.saved_tensors
        middle = torch.where(x < 3, (2 * x + 3) / 6, torch.ones_like(x))
        return grad_out * torch.where(x.abs() < 3, torch.full_like(x, 1 / 6), torch.zeros_like(x))  # BUG

    @staticmethod
    def example_inputs():
        return (torch.randn(4, 5, dtype=torch.float64, generator=torch.Generator().manual_seed(76)) * 3,)


class ReservedHardSigmoid(torch.autograd.Function):
    """hard-sigmoid relu6(x + 3) / 6: slope 1/6 on (-3, 3)."""
    bug = None

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return F.relu6(x + 3) / 6

    @staticmethod
    def backward(ctx, grad_out):
        (x,) = ctx.saved_tensors
        inside = (x > -3) & (x < 3)
        return grad_out * inside.to(grad_out.dtype) / 6

    @staticmethod
    def example_inputs():
        return (torch.randn(4, 5, dtype=torch.float64, generator=torch.Generator().manual_seed(77)) * 3,)


class ReservedHardSigmoidImpossibleMask(torch.autograd.Function):
    """hard-sigmoid relu6(x + 3) / 6: slope 1/6 on (-3, 3)."""
    bug = {'kind': 'zero', 'input': 'x', 'note': 'the inside mask is written (x < -3) & (x > 3), which is never true'}

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return F.relu6(x + 3) / 6

    @staticmethod
    def backward(ctx, grad_out):
        (x,) = ctx.saved_tensors
        inside = (x < -3) & (x > 3)  # BUG
        return grad_out * inside.to(grad_out.dtype) / 6

    @staticmethod
    def example_inputs():
        return (torch.randn(4, 5, dtype=torch.float64, generator=torch.Generator().manual_seed(77)) * 3,)


class ReservedTemperatureSoftmax(torch.autograd.Function):
    """softmax(x / t) over the last dim with a learnable temperature t."""
    bug = None

    @staticmethod
    def forward(ctx, x, t):
        y = torch.softmax(x / t, dim=-1)
        ctx.save_for_backward(x, t, y)
        return y

    @staticmethod
    def backward(ctx, grad_out):
        x, t, y = ctx.saved_tensors
        gz = y * (grad_out - (grad_out * y).sum(-1, keepdim=True))
        return gz / t, -(gz * x).sum() / (t * t)

    @staticmethod
    def example_inputs():
        return _x_and_scalar(78)


class ReservedTemperatureSoftmaxTemperatureSign(torch.autograd.Function):
    """softmax(x / t) over the last dim with a learnable temperature t."""
    bug = {'kind': 'sign', 'input': 't', 'note': "the temperature's gradient lost its minus sign (d(x/t)/dt = -x/t^2)"}

    @staticmethod
    def forward(ctx, x, t):
        y = torch.softmax(x / t, dim=-1)
        ctx.save_for_backward(x, t, y)
        return y

    @staticmethod
    def backward(ctx, grad_out):
        x, t, y = ctx.saved_tensors
        gz = y * (grad_out - (grad_out * y).sum(-1, keepdim=True))
        return gz / t, (gz * x).sum() / (t * t)  # BUG

    @staticmethod
    def example_inputs():
        return _x_and_scalar(78)
