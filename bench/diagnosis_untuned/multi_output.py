"""Functions with several outputs (each output's grad_output must be used), torch-style on
gradcli's engine. ``bug = None`` marks a correct twin.
"""
import gradcli as torch


def _plane():
    # points away from the origin, where atan2 is smooth
    x = torch.tensor([[1.2, -0.8, 0.5], [-1.5, 0.9, 2.0]], requires_grad=True)
    y = torch.tensor([[0.7, 1.1, -1.3], [0.4, -0.6, 0.8]], requires_grad=True)
    return (x, y)


class ToPolar(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, y):
        r = torch.sqrt(x * x + y * y)
        theta = torch.atan2(y, x)
        ctx.save_for_backward(x, y, r)
        return r, theta

    @staticmethod
    def backward(ctx, grad_r, grad_theta):
        x, y, r = ctx.saved_tensors
        grad_x = grad_r * x / r - grad_theta * y / (r * r)
        grad_y = grad_r * y / r + grad_theta * x / (r * r)
        return grad_x, grad_y

    @staticmethod
    def example_inputs():
        return _plane()


class ToPolarTermSign(torch.autograd.Function):
    bug = {"kind": "term_sign", "input": "x",
           "note": "d theta / dx = -y / r^2: the theta term of grad_x has the wrong sign"}

    @staticmethod
    def forward(ctx, x, y):
        r = torch.sqrt(x * x + y * y)
        theta = torch.atan2(y, x)
        ctx.save_for_backward(x, y, r)
        return r, theta

    @staticmethod
    def backward(ctx, grad_r, grad_theta):
        x, y, r = ctx.saved_tensors
        grad_x = grad_r * x / r + grad_theta * y / (r * r)  # BUG
        grad_y = grad_r * y / r + grad_theta * x / (r * r)
        return grad_x, grad_y

    @staticmethod
    def example_inputs():
        return _plane()


class SinCos(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch.sin(x), torch.cos(x)

    @staticmethod
    def backward(ctx, grad_sin, grad_cos):
        (x,) = ctx.saved_tensors
        return grad_sin * torch.cos(x) - grad_cos * torch.sin(x)


class SinCosDropsSecondOutput(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "x", "also": ["ignores_grad_output"],
           "note": "backward uses only the first output's gradient: the -grad_cos * sin(x) term "
                   "is missing"}

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch.sin(x), torch.cos(x)

    @staticmethod
    def backward(ctx, grad_sin, grad_cos):
        (x,) = ctx.saved_tensors
        return grad_sin * torch.cos(x)  # BUG


class MeanAndCentered(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x):
        mean = x.mean(-1, keepdim=True)
        return mean, x - mean

    @staticmethod
    def backward(ctx, grad_mean, grad_centered):
        n = grad_centered.shape[-1]
        return (grad_mean / n + grad_centered
                - grad_centered.mean(-1, keepdim=True))


class MeanAndCenteredMissingTerm(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "x",
           "note": "the centred output's gradient is passed through without subtracting its mean"}

    @staticmethod
    def forward(ctx, x):
        mean = x.mean(-1, keepdim=True)
        return mean, x - mean

    @staticmethod
    def backward(ctx, grad_mean, grad_centered):
        n = grad_centered.shape[-1]
        return grad_mean / n + grad_centered  # BUG
