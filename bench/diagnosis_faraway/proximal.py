"""Proximal and projection operators: soft-thresholding with a learnable lambda, projection onto
the L2 ball of learnable radius, onto the box [lo, hi], onto the probability simplex by sorting."""
import torch


def _gen(seed):
    return torch.Generator().manual_seed(seed)


def _soft_inputs():
    g = _gen(11)
    return (torch.randn(4, 4, dtype=torch.float64, generator=g) * 2,
            torch.rand(4, dtype=torch.float64, generator=g) * 0.5 + 0.2)


def _soft_forward(ctx, x, lam):
    ctx.save_for_backward(x, lam)
    return torch.sign(x) * torch.relu(x.abs() - lam)


class FarawaySoftThreshold(torch.autograd.Function):
    """prox of lam*|x|: sign(x) * max(|x| - lam, 0), lam per column (C,)."""
    bug = None

    @staticmethod
    def forward(ctx, x, lam):
        return _soft_forward(ctx, x, lam)

    @staticmethod
    def backward(ctx, grad_out):
        x, lam = ctx.saved_tensors
        active = (x.abs() > lam).to(grad_out.dtype)
        grad_x = grad_out * active
        grad_lam = -(grad_out * torch.sign(x) * active).sum(0)
        return grad_x, grad_lam

    @staticmethod
    def example_inputs():
        return _soft_inputs()


class FarawaySoftThresholdDeadZoneMask(torch.autograd.Function):
    bug = {"kind": "region", "input": "x",
           "note": "the mask passes the gradient inside the dead zone |x| <= lam instead of outside it"}

    @staticmethod
    def forward(ctx, x, lam):
        return _soft_forward(ctx, x, lam)

    @staticmethod
    def backward(ctx, grad_out):
        x, lam = ctx.saved_tensors
        active = (x.abs() > lam).to(grad_out.dtype)
        grad_x = grad_out * (x.abs() <= lam)  # BUG
        grad_lam = -(grad_out * torch.sign(x) * active).sum(0)
        return grad_x, grad_lam

    @staticmethod
    def example_inputs():
        return _soft_inputs()


class FarawaySoftThresholdLambdaUp(torch.autograd.Function):
    bug = {"kind": "sign", "input": "lam",
           "note": "a larger threshold shrinks |y|, but lambda's gradient is written with a plus sign"}

    @staticmethod
    def forward(ctx, x, lam):
        return _soft_forward(ctx, x, lam)

    @staticmethod
    def backward(ctx, grad_out):
        x, lam = ctx.saved_tensors
        active = (x.abs() > lam).to(grad_out.dtype)
        grad_x = grad_out * active
        grad_lam = (grad_out * torch.sign(x) * active).sum(0)  # BUG
        return grad_x, grad_lam

    @staticmethod
    def example_inputs():
        return _soft_inputs()


class FarawaySoftThresholdLambdaRows(torch.autograd.Function):
    bug = {"kind": "wrong_axis", "input": "lam",
           "note": "the per-column lambda's gradient is summed over the columns (dim=1), not the rows"}

    @staticmethod
    def forward(ctx, x, lam):
        return _soft_forward(ctx, x, lam)

    @staticmethod
    def backward(ctx, grad_out):
        x, lam = ctx.saved_tensors
        active = (x.abs() > lam).to(grad_out.dtype)
        grad_x = grad_out * active
        grad_lam = -(grad_out * torch.sign(x) * active).sum(dim=1)  # BUG
        return grad_x, grad_lam

    @staticmethod
    def example_inputs():
        return _soft_inputs()


def _ball_inputs():
    g = _gen(12)
    x = torch.randn(6, 3, dtype=torch.float64, generator=g)
    x[:3] *= 3.0  # three rows outside the ball, three inside
    x[3:] *= 0.2
    return x, torch.tensor([1.5], dtype=torch.float64)


def _ball_forward(ctx, x, r):
    n = x.norm(dim=1, keepdim=True)
    outside = n > r
    ctx.save_for_backward(x, n, r, outside)
    return torch.where(outside, r * x / n, x)


class FarawayBallProjection(torch.autograd.Function):
    """Row-wise projection onto the L2 ball of radius r: x * min(1, r / |x|)."""
    bug = None

    @staticmethod
    def forward(ctx, x, r):
        return _ball_forward(ctx, x, r)

    @staticmethod
    def backward(ctx, grad_out):
        x, n, r, outside = ctx.saved_tensors
        u = x / n
        radial = (u * grad_out).sum(1, keepdim=True)
        grad_x = torch.where(outside, r / n * (grad_out - u * radial), grad_out)
        grad_r = (radial * outside).sum().reshape(1)
        return grad_x, grad_r

    @staticmethod
    def example_inputs():
        return _ball_inputs()


class FarawayBallProjectionNoRadialRemoval(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "x",
           "note": "outside the ball the Jacobian r/|x| (I - u u^T) loses its -u u^T part"}

    @staticmethod
    def forward(ctx, x, r):
        return _ball_forward(ctx, x, r)

    @staticmethod
    def backward(ctx, grad_out):
        x, n, r, outside = ctx.saved_tensors
        u = x / n
        radial = (u * grad_out).sum(1, keepdim=True)
        grad_x = torch.where(outside, r / n * grad_out, grad_out)  # BUG
        grad_r = (radial * outside).sum().reshape(1)
        return grad_x, grad_r

    @staticmethod
    def example_inputs():
        return _ball_inputs()


class FarawayBallProjectionRadiusCount(torch.autograd.Function):
    bug = {"kind": "ignores_grad_output", "input": "r",
           "note": "the radius gradient sums the unit directions of the projected rows, not grad_out along them"}

    @staticmethod
    def forward(ctx, x, r):
        return _ball_forward(ctx, x, r)

    @staticmethod
    def backward(ctx, grad_out):
        x, n, r, outside = ctx.saved_tensors
        u = x / n
        radial = (u * grad_out).sum(1, keepdim=True)
        grad_x = torch.where(outside, r / n * (grad_out - u * radial), grad_out)
        grad_r = (u * outside).sum().reshape(1)  # BUG
        return grad_x, grad_r

    @staticmethod
    def example_inputs():
        return _ball_inputs()


def _box_inputs():
    g = _gen(13)
    return (torch.randn(5, 4, dtype=torch.float64, generator=g) * 1.5,
            -torch.rand(4, dtype=torch.float64, generator=g) - 0.3,
            torch.rand(4, dtype=torch.float64, generator=g) + 0.3)


def _box_forward(ctx, x, lo, hi):
    ctx.save_for_backward(x, lo, hi)
    return torch.maximum(torch.minimum(x, hi), lo)


class FarawayBoxProjection(torch.autograd.Function):
    """Projection onto the box [lo, hi] with per-column bounds."""
    bug = None

    @staticmethod
    def forward(ctx, x, lo, hi):
        return _box_forward(ctx, x, lo, hi)

    @staticmethod
    def backward(ctx, grad_out):
        x, lo, hi = ctx.saved_tensors
        below, above = x < lo, x > hi
        grad_x = grad_out.masked_fill(below | above, 0.0)
        grad_lo = grad_out.masked_fill(~below, 0.0).sum(0)
        grad_hi = grad_out.masked_fill(~above, 0.0).sum(0)
        return grad_x, grad_lo, grad_hi

    @staticmethod
    def example_inputs():
        return _box_inputs()


class FarawayBoxProjectionBoundsCrossed(torch.autograd.Function):
    bug = {"kind": "swapped", "input": "lo",
           "note": "the lower and upper bounds' gradients are returned in each other's slot"}

    @staticmethod
    def forward(ctx, x, lo, hi):
        return _box_forward(ctx, x, lo, hi)

    @staticmethod
    def backward(ctx, grad_out):
        x, lo, hi = ctx.saved_tensors
        below, above = x < lo, x > hi
        grad_x = grad_out.masked_fill(below | above, 0.0)
        grad_lo = grad_out.masked_fill(~below, 0.0).sum(0)
        grad_hi = grad_out.masked_fill(~above, 0.0).sum(0)
        return grad_x, grad_hi, grad_lo  # BUG

    @staticmethod
    def example_inputs():
        return _box_inputs()


class FarawayBoxProjectionFixedUpper(torch.autograd.Function):
    bug = {"kind": "zero", "input": "hi",
           "note": "the upper bound is treated as a constant: its gradient is returned as None"}

    @staticmethod
    def forward(ctx, x, lo, hi):
        return _box_forward(ctx, x, lo, hi)

    @staticmethod
    def backward(ctx, grad_out):
        x, lo, hi = ctx.saved_tensors
        below, above = x < lo, x > hi
        grad_x = grad_out.masked_fill(below | above, 0.0)
        grad_lo = grad_out.masked_fill(~below, 0.0).sum(0)
        return grad_x, grad_lo, None  # BUG

    @staticmethod
    def example_inputs():
        return _box_inputs()


def _simplex_forward(ctx, x):
    u, _ = torch.sort(x, dim=1, descending=True)
    css = u.cumsum(1) - 1
    ks = torch.arange(1, x.shape[1] + 1, dtype=x.dtype)
    rho = ((u - css / ks) > 0).sum(1, keepdim=True)
    tau = css.gather(1, rho - 1) / rho
    y = torch.clamp(x - tau, min=0)
    ctx.save_for_backward(y)
    return y


def _simplex_inputs():
    return (torch.randn(4, 5, dtype=torch.float64, generator=_gen(14)),)


class FarawaySimplexProjection(torch.autograd.Function):
    """Euclidean projection of each row onto the probability simplex (sort + threshold)."""
    bug = None

    @staticmethod
    def forward(ctx, x):
        return _simplex_forward(ctx, x)

    @staticmethod
    def backward(ctx, grad_out):
        (y,) = ctx.saved_tensors
        support = (y > 0).to(grad_out.dtype)
        mean_g = (grad_out * support).sum(1, keepdim=True) / support.sum(1, keepdim=True)
        return support * (grad_out - mean_g)

    @staticmethod
    def example_inputs():
        return _simplex_inputs()


class FarawaySimplexProjectionColumnMean(torch.autograd.Function):
    bug = {"kind": "wrong_axis", "input": "x",
           "note": "the mean over the support is taken down the batch (dim 0) instead of along each row"}

    @staticmethod
    def forward(ctx, x):
        return _simplex_forward(ctx, x)

    @staticmethod
    def backward(ctx, grad_out):
        (y,) = ctx.saved_tensors
        support = (y > 0).to(grad_out.dtype)
        mean_g = (grad_out * support).sum(0, keepdim=True) / support.sum(0, keepdim=True).clamp(min=1)  # BUG
        return support * (grad_out - mean_g)

    @staticmethod
    def example_inputs():
        return _simplex_inputs()
