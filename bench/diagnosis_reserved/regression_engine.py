"""Regression losses and normalisations on gradcli's engine (runs without PyTorch)."""
import gradcli as torch

DELTA = 1.0
BETA = 0.5
TEMPERATURE = 2.0


def _pair(seed, scale=1.5):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(3, 4, dtype=torch.float64, generator=g) * scale,
            torch.randn(3, 4, dtype=torch.float64, generator=g) * scale)



class ReservedMSE(torch.autograd.Function):
    """Mean squared error of pred against target (both differentiable)."""
    bug = None

    @staticmethod
    def forward(ctx, pred, target):
        diff = pred - target
        ctx.save_for_backward(diff)
        return (diff * diff).mean()

    @staticmethod
    def backward(ctx, grad_out):
        (diff,) = ctx.saved_tensors
        g = 2 * diff * grad_out / diff.numel()
        return g, -g


class ReservedMSENoTwo(torch.autograd.Function):
    """Mean squared error of pred against target (both differentiable)."""
    bug = {'kind': 'scale', 'input': 'pred', 'note': "forgets the factor 2 of the square's derivative"}

    @staticmethod
    def forward(ctx, pred, target):
        diff = pred - target
        ctx.save_for_backward(diff)
        return (diff * diff).mean()

    @staticmethod
    def backward(ctx, grad_out):
        (diff,) = ctx.saved_tensors
        g = diff * grad_out / diff.numel()  # BUG
        return g, -g


class ReservedHuber(torch.autograd.Function):
    """Huber loss with delta = 1, reduction='none'."""
    bug = None

    @staticmethod
    def forward(ctx, pred, target):
        d = pred - target
        ctx.save_for_backward(d)
        small = d.abs() <= DELTA
        return torch.where(small, 0.5 * d * d, DELTA * (d.abs() - 0.5 * DELTA))

    @staticmethod
    def backward(ctx, grad_out):
        (d,) = ctx.saved_tensors
        local = torch.clamp(d, -DELTA, DELTA)
        return local * grad_out, -local * grad_out

    @staticmethod
    def example_inputs():
        return _pair(81)


class ReservedHuberLocalOnly(torch.autograd.Function):
    """Huber loss with delta = 1, reduction='none'."""
    bug = {'kind': 'ignores_grad_output', 'input': 'pred', 'note': 'returns the clamped residual without multiplying by grad_out'}

    @staticmethod
    def forward(ctx, pred, target):
        d = pred - target
        ctx.save_for_backward(d)
        small = d.abs() <= DELTA
        return torch.where(small, 0.5 * d * d, DELTA * (d.abs() - 0.5 * DELTA))

    @staticmethod
    def backward(ctx, grad_out):
        (d,) = ctx.saved_tensors
        local = torch.clamp(d, -DELTA, DELTA)
        return local, -local * grad_out  # BUG

    @staticmethod
    def example_inputs():
        return _pair(81)


class ReservedSmoothL1(torch.autograd.Function):
    """smooth-L1 with beta = 0.5, elementwise: 0.5 d^2 / beta inside |d| < beta, |d| - beta / 2 outside."""
    bug = None

    @staticmethod
    def forward(ctx, pred, target):
        d = pred - target
        ctx.save_for_backward(d)
        return torch.where(d.abs() < BETA, 0.5 * d * d / BETA, d.abs() - 0.5 * BETA)

    @staticmethod
    def backward(ctx, grad_out):
        (d,) = ctx.saved_tensors
        inside = d.abs() < BETA
        local = torch.where(inside, d / BETA, torch.sign(d))
        return grad_out * local, -(grad_out * local)

    @staticmethod
    def example_inputs():
        return _pair(82, scale=0.6)


class ReservedSmoothL1UnitThreshold(torch.autograd.Function):
    """smooth-L1 with beta = 0.5, elementwise: 0.5 d^2 / beta inside |d| < beta, |d| - beta / 2 outside."""
    bug = {'kind': 'region', 'input': 'pred', 'note': "the backward's quadratic zone is |d| < 1 instead of |d| < beta"}

    @staticmethod
    def forward(ctx, pred, target):
        d = pred - target
        ctx.save_for_backward(d)
        return torch.where(d.abs() < BETA, 0.5 * d * d / BETA, d.abs() - 0.5 * BETA)

    @staticmethod
    def backward(ctx, grad_out):
        (d,) = ctx.saved_tensors
        inside = d.abs() < 1.0  # BUG
        local = torch.where(inside, d / BETA, torch.sign(d))
        return grad_out * local, -(grad_out * local)

    @staticmethod
    def example_inputs():
        return _pair(82, scale=0.6)


class ReservedL2Normalize(torch.autograd.Function):
    """Row-wise L2 normalisation x / ||x||."""
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


class ReservedL2NormalizeColumnRadial(torch.autograd.Function):
    """Row-wise L2 normalisation x / ||x||."""
    bug = {'kind': 'wrong_axis', 'input': 'x', 'note': 'projects out the radial part with a sum over dim 0 instead of each row'}

    @staticmethod
    def forward(ctx, x):
        norm = torch.sqrt((x * x).sum(dim=1, keepdim=True))
        y = x / norm
        ctx.save_for_backward(y, norm)
        return y

    @staticmethod
    def backward(ctx, grad_out):
        y, norm = ctx.saved_tensors
        radial = (grad_out * y).sum(dim=0, keepdim=True)  # BUG
        return (grad_out - y * radial) / norm


class ReservedLogSoftmaxTemperature(torch.autograd.Function):
    """log_softmax(x / T) over the last dim, T = 2."""
    bug = None

    @staticmethod
    def forward(ctx, x):
        y = torch.log_softmax(x / TEMPERATURE, dim=-1)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad_out):
        (y,) = ctx.saved_tensors
        p = torch.exp(y)
        return (grad_out - p * grad_out.sum(-1, keepdim=True)) / TEMPERATURE


class ReservedLogSoftmaxTemperatureNoTemperature(torch.autograd.Function):
    """log_softmax(x / T) over the last dim, T = 2."""
    bug = {'kind': 'scale', 'input': 'x', 'note': 'forgets the 1/T of the chain rule through x / T'}

    @staticmethod
    def forward(ctx, x):
        y = torch.log_softmax(x / TEMPERATURE, dim=-1)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad_out):
        (y,) = ctx.saved_tensors
        p = torch.exp(y)
        return grad_out - p * grad_out.sum(-1, keepdim=True)  # BUG


class ReservedWeightStandardize(torch.autograd.Function):
    """Weight standardisation: each row (output unit) to zero mean and unit (population) std."""
    bug = None

    @staticmethod
    def forward(ctx, w):
        mu = w.mean(dim=1, keepdim=True)
        std = torch.sqrt(((w - mu) ** 2).mean(dim=1, keepdim=True) + 1e-5)
        what = (w - mu) / std
        ctx.save_for_backward(what, std)
        return what

    @staticmethod
    def backward(ctx, grad_out):
        what, std = ctx.saved_tensors
        g_mean = grad_out.mean(dim=1, keepdim=True)
        g_proj = (grad_out * what).mean(dim=1, keepdim=True)
        return (grad_out - g_mean - what * g_proj) / std


class ReservedWeightStandardizeTanhLike(torch.autograd.Function):
    """Weight standardisation: each row (output unit) to zero mean and unit (population) std."""
    bug = {'kind': 'none', 'input': 'w', 'note': 'guesses a tanh-like derivative (1 - what^2) / std for the standardisation'}

    @staticmethod
    def forward(ctx, w):
        mu = w.mean(dim=1, keepdim=True)
        std = torch.sqrt(((w - mu) ** 2).mean(dim=1, keepdim=True) + 1e-5)
        what = (w - mu) / std
        ctx.save_for_backward(what, std)
        return what

    @staticmethod
    def backward(ctx, grad_out):
        what, std = ctx.saved_tensors
        g_mean = grad_out.mean(dim=1, keepdim=True)
        g_proj = (grad_out * what).mean(dim=1, keepdim=True)
        return grad_out * (1 - what * what) / std  # BUG


class ReservedKLDiv(torch.autograd.Function):
    """kl_div(log_q, p, reduction='sum') = sum p (log p - log_q), p positive."""
    bug = None

    @staticmethod
    def forward(ctx, log_q, p):
        ctx.save_for_backward(log_q, p)
        return (p * (torch.log(p) - log_q)).sum()

    @staticmethod
    def backward(ctx, grad_out):
        log_q, p = ctx.saved_tensors
        grad_log_q = -p * grad_out
        grad_p = (torch.log(p) + 1 - log_q) * grad_out
        return grad_log_q, grad_p

    @staticmethod
    def example_inputs():
        g = torch.Generator().manual_seed(83)
        return (torch.randn(3, 4, dtype=torch.float64, generator=g),
                torch.rand(3, 4, dtype=torch.float64, generator=g) + 0.2)


class ReservedKLDivTargetNoOne(torch.autograd.Function):
    """kl_div(log_q, p, reduction='sum') = sum p (log p - log_q), p positive."""
    bug = {'kind': 'missing_term', 'input': 'p', 'note': 'the derivative of p log p loses its + 1'}

    @staticmethod
    def forward(ctx, log_q, p):
        ctx.save_for_backward(log_q, p)
        return (p * (torch.log(p) - log_q)).sum()

    @staticmethod
    def backward(ctx, grad_out):
        log_q, p = ctx.saved_tensors
        grad_log_q = -p * grad_out
        grad_p = (torch.log(p) - log_q) * grad_out  # BUG
        return grad_log_q, grad_p

    @staticmethod
    def example_inputs():
        g = torch.Generator().manual_seed(83)
        return (torch.randn(3, 4, dtype=torch.float64, generator=g),
                torch.rand(3, 4, dtype=torch.float64, generator=g) + 0.2)
