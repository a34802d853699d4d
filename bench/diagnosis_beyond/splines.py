"""Spline interpolation at fixed integer knots with learned knot values: Catmull-Rom (uniform) and
cubic Hermite with learned slopes; the query positions are learned too."""
import torch


def _cr_weights(u):
    """Catmull-Rom basis at the fractional positions u: (N, 4), times 1/2 applied here."""
    u2, u3 = u * u, u * u * u
    return 0.5 * torch.stack([-u + 2 * u2 - u3, 2 - 5 * u2 + 3 * u3,
                              u + 4 * u2 - 3 * u3, -u2 + u3], dim=1)


def _cr_dweights(u):
    """d/du of the bracket of the basis (without the 1/2 prefactor)."""
    return torch.stack([-1 + 4 * u - 3 * u * u, -10 * u + 9 * u * u,
                        1 + 8 * u - 9 * u * u, -2 * u + 3 * u * u], dim=1)


def _cr_forward(ctx, values, t):
    i = t.detach().floor().long()
    u = t - i
    idx = (i - 1)[:, None] + torch.arange(4)[None, :]  # (N, 4) knot ids, repeats across queries
    w = _cr_weights(u)
    ctx.save_for_backward(values, u, idx, w)
    return (values[idx] * w).sum(dim=1)


def _cr_inputs():
    gen = torch.Generator().manual_seed(21)
    values = torch.randn(7, dtype=torch.float64, generator=gen)
    t = torch.tensor([1.2, 1.7, 2.35, 2.6, 3.45, 3.8, 4.15, 4.7], dtype=torch.float64)
    return values.requires_grad_(), t.requires_grad_()


class BeyondCatmullRom(torch.autograd.Function):
    """Uniform Catmull-Rom spline through learned knot values, queried at learned t in [1, K-2)."""
    bug = None

    @staticmethod
    def forward(ctx, values, t):
        return _cr_forward(ctx, values, t)

    @staticmethod
    def backward(ctx, grad_out):
        values, u, idx, w = ctx.saved_tensors
        grad_values = torch.zeros_like(values)
        grad_values.index_add_(0, idx.reshape(-1), (w * grad_out[:, None]).reshape(-1))
        dy_du = 0.5 * (values[idx] * _cr_dweights(u)).sum(dim=1)
        return grad_values, grad_out * dy_du

    @staticmethod
    def example_inputs():
        return _cr_inputs()


class BeyondCatmullRomOverwrite(torch.autograd.Function):
    bug = {"kind": "not_accumulated", "input": "values",
           "note": "the basis weights are written into the knot gradient with index_put_ without accumulate, so queries sharing a knot overwrite each other"}

    @staticmethod
    def forward(ctx, values, t):
        return _cr_forward(ctx, values, t)

    @staticmethod
    def backward(ctx, grad_out):
        values, u, idx, w = ctx.saved_tensors
        grad_values = torch.zeros_like(values)
        grad_values.index_put_((idx.reshape(-1),), (w * grad_out[:, None]).reshape(-1))  # BUG
        dy_du = 0.5 * (values[idx] * _cr_dweights(u)).sum(dim=1)
        return grad_values, grad_out * dy_du

    @staticmethod
    def example_inputs():
        return _cr_inputs()


class BeyondCatmullRomNoHalf(torch.autograd.Function):
    bug = {"kind": "scale", "input": "t",
           "note": "the derivative of the basis bracket is used without the spline's 1/2 prefactor"}

    @staticmethod
    def forward(ctx, values, t):
        return _cr_forward(ctx, values, t)

    @staticmethod
    def backward(ctx, grad_out):
        values, u, idx, w = ctx.saved_tensors
        grad_values = torch.zeros_like(values)
        grad_values.index_add_(0, idx.reshape(-1), (w * grad_out[:, None]).reshape(-1))
        dy_du = (values[idx] * _cr_dweights(u)).sum(dim=1)  # BUG
        return grad_values, grad_out * dy_du

    @staticmethod
    def example_inputs():
        return _cr_inputs()


# ------------------------------------------------------------------------------ cubic Hermite
def _hermite_basis(u):
    u2, u3 = u * u, u * u * u
    return 2 * u3 - 3 * u2 + 1, u3 - 2 * u2 + u, -2 * u3 + 3 * u2, u3 - u2


def _hermite_dbasis(u):
    u2 = u * u
    return 6 * u2 - 6 * u, 3 * u2 - 4 * u + 1, -6 * u2 + 6 * u, 3 * u2 - 2 * u


def _hermite_inputs():
    gen = torch.Generator().manual_seed(22)
    values = torch.randn(6, dtype=torch.float64, generator=gen)
    slopes = torch.randn(6, dtype=torch.float64, generator=gen)
    t = torch.tensor([0.3, 0.8, 1.4, 2.25, 2.7, 3.6, 4.2, 4.75], dtype=torch.float64)
    return values.requires_grad_(), slopes.requires_grad_(), t.requires_grad_()


def _hermite_forward(ctx, values, slopes, t):
    K = values.shape[0]
    i = t.detach().floor().clamp(max=K - 2).long()
    u = t - i
    h00, h10, h01, h11 = _hermite_basis(u)
    ctx.save_for_backward(values, slopes, t)
    ctx.K = K
    return h00 * values[i] + h10 * slopes[i] + h01 * values[i + 1] + h11 * slopes[i + 1]


class BeyondCubicHermite(torch.autograd.Function):
    """Cubic Hermite interpolation with learned knot values and slopes at knots 0..K-1."""
    bug = None

    @staticmethod
    def forward(ctx, values, slopes, t):
        return _hermite_forward(ctx, values, slopes, t)

    @staticmethod
    def backward(ctx, grad_out):
        values, slopes, t = ctx.saved_tensors
        i = t.floor().clamp(max=ctx.K - 2).long()
        u = t - i
        h00, h10, h01, h11 = _hermite_basis(u)
        d00, d10, d01, d11 = _hermite_dbasis(u)
        grad_values = torch.zeros_like(values).index_add_(0, i, grad_out * h00).index_add_(0, i + 1, grad_out * h01)
        grad_slopes = torch.zeros_like(slopes).index_add_(0, i, grad_out * h10).index_add_(0, i + 1, grad_out * h11)
        dy = d00 * values[i] + d10 * slopes[i] + d01 * values[i + 1] + d11 * slopes[i + 1]
        return grad_values, grad_slopes, grad_out * dy

    @staticmethod
    def example_inputs():
        return _hermite_inputs()


class BeyondCubicHermiteSwapped(torch.autograd.Function):
    bug = {"kind": "swapped", "input": "values",
           "note": "the knot-value and knot-slope gradients are returned in each other's positions"}

    @staticmethod
    def forward(ctx, values, slopes, t):
        return _hermite_forward(ctx, values, slopes, t)

    @staticmethod
    def backward(ctx, grad_out):
        values, slopes, t = ctx.saved_tensors
        i = t.floor().clamp(max=ctx.K - 2).long()
        u = t - i
        h00, h10, h01, h11 = _hermite_basis(u)
        d00, d10, d01, d11 = _hermite_dbasis(u)
        grad_values = torch.zeros_like(values).index_add_(0, i, grad_out * h00).index_add_(0, i + 1, grad_out * h01)
        grad_slopes = torch.zeros_like(slopes).index_add_(0, i, grad_out * h10).index_add_(0, i + 1, grad_out * h11)
        dy = d00 * values[i] + d10 * slopes[i] + d01 * values[i + 1] + d11 * slopes[i + 1]
        return grad_slopes, grad_values, grad_out * dy  # BUG

    @staticmethod
    def example_inputs():
        return _hermite_inputs()


class BeyondCubicHermiteLastInterval(torch.autograd.Function):
    bug = {"kind": "region", "input": "values",
           "note": "backward recomputes the interval index with clamp(max=K-3), so queries in the last interval use the wrong knots"}

    @staticmethod
    def forward(ctx, values, slopes, t):
        return _hermite_forward(ctx, values, slopes, t)

    @staticmethod
    def backward(ctx, grad_out):
        values, slopes, t = ctx.saved_tensors
        i = t.floor().clamp(max=ctx.K - 3).long()  # BUG
        u = t - i
        h00, h10, h01, h11 = _hermite_basis(u)
        d00, d10, d01, d11 = _hermite_dbasis(u)
        grad_values = torch.zeros_like(values).index_add_(0, i, grad_out * h00).index_add_(0, i + 1, grad_out * h01)
        grad_slopes = torch.zeros_like(slopes).index_add_(0, i, grad_out * h10).index_add_(0, i + 1, grad_out * h11)
        dy = d00 * values[i] + d10 * slopes[i] + d01 * values[i + 1] + d11 * slopes[i + 1]
        return grad_values, grad_slopes, grad_out * dy

    @staticmethod
    def example_inputs():
        return _hermite_inputs()
