"""A pinhole camera: points (N, 3) projected with intrinsics (fx, fy, cx, cy) and radial distortion
(k1, k2), points behind the camera (Z <= 0.1) masked to 0; bundle-adjustment observations of
points picked by an integer index with repeats; and a straight-through pixel rounding."""
import torch


def _pinhole_inputs():
    points = torch.tensor([[0.3, -0.2, 2.0],
                           [-0.5, 0.4, 1.5],
                           [0.2, 0.6, -1.5],
                           [0.7, 0.1, 3.0]], dtype=torch.float64)
    intr = torch.tensor([1.2, 1.1, 0.1, -0.2], dtype=torch.float64)
    k = torch.tensor([0.1, -0.05], dtype=torch.float64)
    return points, intr, k


def _pinhole_forward(ctx, points, intr, k):
    X, Y, Z = points.unbind(dim=1)
    vis = Z > 0.1
    x, y = X / Z, Y / Z
    r2 = x * x + y * y
    D = 1 + k[0] * r2 + k[1] * r2 * r2
    u = intr[0] * D * x + intr[2]
    v = intr[1] * D * y + intr[3]
    ctx.save_for_backward(points, intr, k, vis)
    uv = torch.stack([u, v], dim=1)
    return torch.where(vis[:, None], uv, torch.zeros_like(uv))


def _pinhole_terms(ctx, grad_out, masked=True):
    points, intr, k, vis = ctx.saved_tensors
    X, Y, Z = points.unbind(dim=1)
    x, y = X / Z, Y / Z
    r2 = x * x + y * y
    D = 1 + k[0] * r2 + k[1] * r2 * r2
    gu, gv = grad_out[:, 0], grad_out[:, 1]
    if masked:
        gu, gv = gu * vis, gv * vis
    A = gu * intr[0] * x + gv * intr[1] * y          # dL/dD
    dr2 = A * (k[0] + 2 * k[1] * r2)
    dx = gu * intr[0] * D + 2 * x * dr2
    dy = gv * intr[1] * D + 2 * y * dr2
    return X, Y, Z, x, y, r2, D, gu, gv, A, dx, dy


class OffshorePinholeDistortion(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, points, intr, k):
        return _pinhole_forward(ctx, points, intr, k)

    @staticmethod
    def backward(ctx, grad_out):
        X, Y, Z, x, y, r2, D, gu, gv, A, dx, dy = _pinhole_terms(ctx, grad_out)
        grad_points = torch.stack([dx / Z, dy / Z, -(dx * x + dy * y) / Z], dim=1)
        grad_intr = torch.stack([gu * D * x, gv * D * y, gu, gv], dim=1).sum(dim=0)
        grad_k = torch.stack([A * r2, A * r2 * r2], dim=1).sum(dim=0)
        return grad_points, grad_intr, grad_k

    @staticmethod
    def example_inputs():
        return _pinhole_inputs()


class OffshorePinholeDistortionReshaped(torch.autograd.Function):
    bug = {"kind": "missing_reshape", "also": ["transposed"], "input": "points",
           "note": "the per-coordinate gradients are stacked (3, N) and then reshape(N, 3)d, which reorders "
                   "the elements instead of transposing them"}

    @staticmethod
    def forward(ctx, points, intr, k):
        return _pinhole_forward(ctx, points, intr, k)

    @staticmethod
    def backward(ctx, grad_out):
        X, Y, Z, x, y, r2, D, gu, gv, A, dx, dy = _pinhole_terms(ctx, grad_out)
        N = X.shape[0]
        grad_points = torch.stack([dx / Z, dy / Z, -(dx * x + dy * y) / Z]).reshape(N, 3)  # BUG
        grad_intr = torch.stack([gu * D * x, gv * D * y, gu, gv], dim=1).sum(dim=0)
        grad_k = torch.stack([A * r2, A * r2 * r2], dim=1).sum(dim=0)
        return grad_points, grad_intr, grad_k

    @staticmethod
    def example_inputs():
        return _pinhole_inputs()


class OffshorePinholeDistortionNoVisibility(torch.autograd.Function):
    bug = {"kind": "region", "input": "points",
           "note": "the point behind the camera is output as 0 but its gradient is not masked "
                   "(the intrinsics' and distortion's gradients are wrong too)"}

    @staticmethod
    def forward(ctx, points, intr, k):
        return _pinhole_forward(ctx, points, intr, k)

    @staticmethod
    def backward(ctx, grad_out):
        X, Y, Z, x, y, r2, D, gu, gv, A, dx, dy = _pinhole_terms(ctx, grad_out, masked=False)  # BUG
        grad_points = torch.stack([dx / Z, dy / Z, -(dx * x + dy * y) / Z], dim=1)
        grad_intr = torch.stack([gu * D * x, gv * D * y, gu, gv], dim=1).sum(dim=0)
        grad_k = torch.stack([A * r2, A * r2 * r2], dim=1).sum(dim=0)
        return grad_points, grad_intr, grad_k

    @staticmethod
    def example_inputs():
        return _pinhole_inputs()


class OffshorePinholeDistortionIntrinsicsAxis(torch.autograd.Function):
    bug = {"kind": "wrong_axis", "input": "intr",
           "note": "the intrinsics' gradient sums its (N, 4) table over the four parameters (dim 1) instead of the points (dim 0)"}

    @staticmethod
    def forward(ctx, points, intr, k):
        return _pinhole_forward(ctx, points, intr, k)

    @staticmethod
    def backward(ctx, grad_out):
        X, Y, Z, x, y, r2, D, gu, gv, A, dx, dy = _pinhole_terms(ctx, grad_out)
        grad_points = torch.stack([dx / Z, dy / Z, -(dx * x + dy * y) / Z], dim=1)
        grad_intr = torch.stack([gu * D * x, gv * D * y, gu, gv], dim=1).sum(dim=1)  # BUG
        grad_k = torch.stack([A * r2, A * r2 * r2], dim=1).sum(dim=0)
        return grad_points, grad_intr, grad_k

    @staticmethod
    def example_inputs():
        return _pinhole_inputs()


def _obs_inputs():
    gen = torch.Generator().manual_seed(79)
    points = torch.randn(4, 3, generator=gen, dtype=torch.float64)
    points[:, 2] = points[:, 2].abs() + 1.5
    idx = torch.tensor([0, 2, 2, 1, 3, 0, 2], dtype=torch.int64)
    return points, idx, 1.3


def _obs_grad(points, idx, f, grad_out):
    P = points[idx]
    X, Y, Z = P[:, 0], P[:, 1], P[:, 2]
    gu, gv = grad_out[:, 0], grad_out[:, 1]
    return torch.stack([gu * f / Z, gv * f / Z, -f * (gu * X + gv * Y) / Z ** 2], dim=1)


class OffshoreObservationProjection(torch.autograd.Function):
    """Observation j sees point idx[j]: uv_j = f (X, Y) / Z; points observed several times add up."""

    bug = None

    @staticmethod
    def forward(ctx, points, idx, f):
        P = points.index_select(0, idx)
        ctx.save_for_backward(points, idx)
        ctx.f = f
        return f * P[:, :2] / P[:, 2:3]

    @staticmethod
    def backward(ctx, grad_out):
        points, idx = ctx.saved_tensors
        per_obs = _obs_grad(points, idx, ctx.f, grad_out)
        grad_points = torch.zeros_like(points).index_add_(0, idx, per_obs)
        return grad_points, None, None

    @staticmethod
    def example_inputs():
        return _obs_inputs()


class OffshoreObservationProjectionScatter(torch.autograd.Function):
    """The same observations by gather / scatter_add_."""

    bug = None

    @staticmethod
    def forward(ctx, points, idx, f):
        P = points.gather(0, idx[:, None].expand(-1, 3))
        ctx.save_for_backward(points, idx)
        ctx.f = f
        return f * P[:, :2] / P[:, 2:3]

    @staticmethod
    def backward(ctx, grad_out):
        points, idx = ctx.saved_tensors
        per_obs = _obs_grad(points, idx, ctx.f, grad_out)
        grad_points = torch.zeros_like(points)
        grad_points.scatter_add_(0, idx[:, None].expand(-1, 3), per_obs)
        return grad_points, None, None

    @staticmethod
    def example_inputs():
        return _obs_inputs()


class OffshoreObservationProjectionIndexAssign(torch.autograd.Function):
    bug = {"kind": "not_accumulated", "input": "points",
           "note": "grad[idx] += per_obs with repeated indices keeps one observation per point instead of summing them"}

    @staticmethod
    def forward(ctx, points, idx, f):
        P = points.index_select(0, idx)
        ctx.save_for_backward(points, idx)
        ctx.f = f
        return f * P[:, :2] / P[:, 2:3]

    @staticmethod
    def backward(ctx, grad_out):
        points, idx = ctx.saved_tensors
        per_obs = _obs_grad(points, idx, ctx.f, grad_out)
        grad_points = torch.zeros_like(points)
        grad_points[idx] += per_obs  # BUG
        return grad_points, None, None

    @staticmethod
    def example_inputs():
        return _obs_inputs()


class OffshoreObservationProjectionFlat(torch.autograd.Function):
    bug = {"kind": "missing_reshape", "input": "points",
           "note": "the gradient is accumulated into a flat (P * 3,) buffer by index_add_ and returned without "
                   "the view back to (P, 3) (torch refuses it: this one fails by raising)"}

    @staticmethod
    def forward(ctx, points, idx, f):
        P = points.index_select(0, idx)
        ctx.save_for_backward(points, idx)
        ctx.f = f
        return f * P[:, :2] / P[:, 2:3]

    @staticmethod
    def backward(ctx, grad_out):
        points, idx = ctx.saved_tensors
        per_obs = _obs_grad(points, idx, ctx.f, grad_out)
        flat_idx = (idx[:, None] * 3 + torch.arange(3)).reshape(-1)
        grad_flat = torch.zeros(points.numel(), dtype=points.dtype).index_add_(0, flat_idx, per_obs.reshape(-1))
        return grad_flat, None, None  # BUG

    @staticmethod
    def example_inputs():
        return _obs_inputs()


class OffshorePixelRoundSTE(torch.autograd.Function):
    """Snap projected coordinates to the pixel grid (round), straight-through backward."""

    bug = {"kind": "straight_through", "input": "uv",
           "note": "deliberate: round's zero derivative replaced by the identity"}

    @staticmethod
    def forward(ctx, uv):
        return torch.round(uv)

    @staticmethod
    def backward(ctx, grad_out):
        return grad_out.clone()  # BUG
