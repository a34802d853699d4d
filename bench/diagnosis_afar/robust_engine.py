import gradcli as torch

# Robust distances and soft neighbours by hand on gradcli's engine: an elementwise Huber loss of a
# residual, a Charbonnier (pseudo-Huber) distance between point rows, and soft nearest-neighbour
# weights softmax(-|x - p|^2 / tau) over prototypes with a learned temperature.

DELTA = 0.5
EPS = 0.5


def _huber_inputs():
    g = torch.Generator().manual_seed(801)
    x = torch.randn(3, 4, dtype=torch.float64, generator=g)
    # residuals on both sides of +-delta, none within 0.05 of the kinks
    d = torch.tensor([[-1.3, -0.2, 0.9, 0.3], [1.6, -0.7, 0.1, -2.1], [0.35, 1.1, -0.4, -0.9]],
                     dtype=torch.float64)
    y = x - d
    return x.requires_grad_(), y.requires_grad_()


class AfarHuber(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, y):
        d = x - y
        ctx.save_for_backward(d)
        small = d.abs() <= DELTA
        return torch.where(small, 0.5 * d * d, DELTA * (d.abs() - 0.5 * DELTA))

    @staticmethod
    def backward(ctx, grad_out):
        (d,) = ctx.saved_tensors
        grad = grad_out * torch.where(d.abs() <= DELTA, d, DELTA * torch.sign(d))
        return grad, -grad

    @staticmethod
    def example_inputs():
        return _huber_inputs()


class AfarHuberSignedBranch(torch.autograd.Function):
    bug = {"kind": "region", "input": "x",
           "note": "the quadratic branch is selected by d <= delta instead of |d| <= delta, so large negative residuals get d instead of -delta"}

    @staticmethod
    def forward(ctx, x, y):
        d = x - y
        ctx.save_for_backward(d)
        small = d.abs() <= DELTA
        return torch.where(small, 0.5 * d * d, DELTA * (d.abs() - 0.5 * DELTA))

    @staticmethod
    def backward(ctx, grad_out):
        (d,) = ctx.saved_tensors
        grad = grad_out * torch.where(d <= DELTA, d, DELTA * torch.sign(d))  # BUG
        return grad, -grad

    @staticmethod
    def example_inputs():
        return _huber_inputs()


class AfarHuberCauchyDerivative(torch.autograd.Function):
    bug = {"kind": "none", "input": "x",
           "note": "the backward is the Cauchy loss's derivative d / (1 + (d / delta)^2), another robust loss than the forward's Huber"}

    @staticmethod
    def forward(ctx, x, y):
        d = x - y
        ctx.save_for_backward(d)
        small = d.abs() <= DELTA
        return torch.where(small, 0.5 * d * d, DELTA * (d.abs() - 0.5 * DELTA))

    @staticmethod
    def backward(ctx, grad_out):
        (d,) = ctx.saved_tensors
        grad = grad_out * d / (1 + (d / DELTA) ** 2)  # BUG
        return grad, -grad

    @staticmethod
    def example_inputs():
        return _huber_inputs()


# ---------------------------------------------------------------------- Charbonnier distance
def _rows():
    g = torch.Generator().manual_seed(802)
    return (torch.randn(4, 3, dtype=torch.float64, generator=g, requires_grad=True),
            torch.randn(4, 3, dtype=torch.float64, generator=g, requires_grad=True))


class AfarCharbonnierDistance(torch.autograd.Function):
    """sqrt(|x - y|^2 + eps^2) - eps per row."""

    bug = None

    @staticmethod
    def forward(ctx, x, y):
        diff = x - y
        rad = torch.sqrt((diff * diff).sum(dim=1) + EPS * EPS)
        dist = rad - EPS
        ctx.save_for_backward(diff, rad, dist)
        return dist

    @staticmethod
    def backward(ctx, grad_out):
        diff, rad, dist = ctx.saved_tensors
        grad = grad_out[:, None] * diff / rad[:, None]
        return grad, -grad

    @staticmethod
    def example_inputs():
        return _rows()


class AfarCharbonnierDistanceOverOutput(torch.autograd.Function):
    bug = {"kind": "wrong_variable", "input": "x",
           "note": "the derivative divides by the saved output dist = rad - eps instead of the radical rad"}

    @staticmethod
    def forward(ctx, x, y):
        diff = x - y
        rad = torch.sqrt((diff * diff).sum(dim=1) + EPS * EPS)
        dist = rad - EPS
        ctx.save_for_backward(diff, rad, dist)
        return dist

    @staticmethod
    def backward(ctx, grad_out):
        diff, rad, dist = ctx.saved_tensors
        grad = grad_out[:, None] * diff / dist[:, None]  # BUG
        return grad, -grad

    @staticmethod
    def example_inputs():
        return _rows()


# ----------------------------------------------------------------- soft nearest neighbour
def _soft_nn_inputs():
    g = torch.Generator().manual_seed(803)
    x = torch.randn(4, 2, dtype=torch.float64, generator=g, requires_grad=True)
    protos = torch.randn(3, 2, dtype=torch.float64, generator=g, requires_grad=True)
    tau = torch.tensor([0.8], dtype=torch.float64, requires_grad=True)
    return x, protos, tau


class AfarSoftNearestNeighbour(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, protos, tau):
        diff = x[:, None, :] - protos[None, :, :]
        d2 = (diff * diff).sum(dim=-1)
        w = torch.softmax(-d2 / tau, dim=1)
        ctx.save_for_backward(diff, d2, w, tau)
        return w

    @staticmethod
    def backward(ctx, grad_out):
        diff, d2, w, tau = ctx.saved_tensors
        g_logit = w * (grad_out - (grad_out * w).sum(dim=1, keepdim=True))
        g_d2 = -g_logit / tau
        grad_x = 2 * (g_d2[:, :, None] * diff).sum(dim=1)
        grad_protos = -2 * (g_d2[:, :, None] * diff).sum(dim=0)
        grad_tau = ((g_logit * d2).sum() / (tau * tau)).reshape(1)
        return grad_x, grad_protos, grad_tau

    @staticmethod
    def example_inputs():
        return _soft_nn_inputs()


class AfarSoftNearestNeighbourPointAxis(torch.autograd.Function):
    bug = {"kind": "wrong_axis", "input": "x",
           "note": "the softmax backward's sum(g * w) is taken over the points dim=0 instead of over the prototypes dim=1"}

    @staticmethod
    def forward(ctx, x, protos, tau):
        diff = x[:, None, :] - protos[None, :, :]
        d2 = (diff * diff).sum(dim=-1)
        w = torch.softmax(-d2 / tau, dim=1)
        ctx.save_for_backward(diff, d2, w, tau)
        return w

    @staticmethod
    def backward(ctx, grad_out):
        diff, d2, w, tau = ctx.saved_tensors
        g_logit = w * (grad_out - (grad_out * w).sum(dim=0, keepdim=True))  # BUG
        g_d2 = -g_logit / tau
        grad_x = 2 * (g_d2[:, :, None] * diff).sum(dim=1)
        grad_protos = -2 * (g_d2[:, :, None] * diff).sum(dim=0)
        grad_tau = ((g_logit * d2).sum() / (tau * tau)).reshape(1)
        return grad_x, grad_protos, grad_tau

    @staticmethod
    def example_inputs():
        return _soft_nn_inputs()


class AfarSoftNearestNeighbourNoTwo(torch.autograd.Function):
    bug = {"kind": "scale", "input": "x",
           "note": "the derivative of the squared distance loses its factor 2 in x's gradient"}

    @staticmethod
    def forward(ctx, x, protos, tau):
        diff = x[:, None, :] - protos[None, :, :]
        d2 = (diff * diff).sum(dim=-1)
        w = torch.softmax(-d2 / tau, dim=1)
        ctx.save_for_backward(diff, d2, w, tau)
        return w

    @staticmethod
    def backward(ctx, grad_out):
        diff, d2, w, tau = ctx.saved_tensors
        g_logit = w * (grad_out - (grad_out * w).sum(dim=1, keepdim=True))
        g_d2 = -g_logit / tau
        grad_x = (g_d2[:, :, None] * diff).sum(dim=1)  # BUG
        grad_protos = -2 * (g_d2[:, :, None] * diff).sum(dim=0)
        grad_tau = ((g_logit * d2).sum() / (tau * tau)).reshape(1)
        return grad_x, grad_protos, grad_tau

    @staticmethod
    def example_inputs():
        return _soft_nn_inputs()


class AfarSoftNearestNeighbourFixedTemperature(torch.autograd.Function):
    bug = {"kind": "zero", "input": "tau",
           "note": "the learned temperature gets None, as if it were a constant"}

    @staticmethod
    def forward(ctx, x, protos, tau):
        diff = x[:, None, :] - protos[None, :, :]
        d2 = (diff * diff).sum(dim=-1)
        w = torch.softmax(-d2 / tau, dim=1)
        ctx.save_for_backward(diff, d2, w, tau)
        return w

    @staticmethod
    def backward(ctx, grad_out):
        diff, d2, w, tau = ctx.saved_tensors
        g_logit = w * (grad_out - (grad_out * w).sum(dim=1, keepdim=True))
        g_d2 = -g_logit / tau
        grad_x = 2 * (g_d2[:, :, None] * diff).sum(dim=1)
        grad_protos = -2 * (g_d2[:, :, None] * diff).sum(dim=0)
        return grad_x, grad_protos, None  # BUG

    @staticmethod
    def example_inputs():
        return _soft_nn_inputs()
