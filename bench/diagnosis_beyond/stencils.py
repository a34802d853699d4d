"""Finite-difference stencils and explicit PDE steps: the 1-D Laplacian by slicing, a one-sided
derivative and a channels-last stencil by F.conv1d, a heat-equation step with a learned per-channel
diffusivity, an upwind advection step and a matrix (advection-diffusion) step."""
import torch
import torch.nn.functional as F

H = 0.5  # grid spacing
DT = 0.1  # time step


def _field(seed, *shape):
    gen = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, dtype=torch.float64, generator=gen)


# ------------------------------------------------------------------------------ Laplacian by slicing
class BeyondLaplacianSlice(torch.autograd.Function):
    """(u_{i-1} - 2 u_i + u_{i+1}) / h^2 on the interior points, (B, N-2)."""
    bug = None

    @staticmethod
    def forward(ctx, u):
        ctx.shape = u.shape
        return (u[:, :-2] - 2 * u[:, 1:-1] + u[:, 2:]) / H ** 2

    @staticmethod
    def backward(ctx, grad_out):
        g = grad_out / H ** 2
        grad_u = grad_out.new_zeros(ctx.shape)
        grad_u[:, :-2] += g
        grad_u[:, 1:-1] -= 2 * g
        grad_u[:, 2:] += g
        return grad_u


class BeyondLaplacianSliceNoSpacing(torch.autograd.Function):
    bug = {"kind": "scale", "input": "u",
           "note": "the adjoint stencil forgets to divide by h^2"}

    @staticmethod
    def forward(ctx, u):
        ctx.shape = u.shape
        return (u[:, :-2] - 2 * u[:, 1:-1] + u[:, 2:]) / H ** 2

    @staticmethod
    def backward(ctx, grad_out):
        g = grad_out  # BUG
        grad_u = grad_out.new_zeros(ctx.shape)
        grad_u[:, :-2] += g
        grad_u[:, 1:-1] -= 2 * g
        grad_u[:, 2:] += g
        return grad_u


class BeyondLaplacianSliceOverwrite(torch.autograd.Function):
    bug = {"kind": "not_accumulated", "input": "u",
           "note": "the right-neighbour contribution is assigned into the overlapping slice instead of added, wiping the other two taps there"}

    @staticmethod
    def forward(ctx, u):
        ctx.shape = u.shape
        return (u[:, :-2] - 2 * u[:, 1:-1] + u[:, 2:]) / H ** 2

    @staticmethod
    def backward(ctx, grad_out):
        g = grad_out / H ** 2
        grad_u = grad_out.new_zeros(ctx.shape)
        grad_u[:, :-2] += g
        grad_u[:, 1:-1] -= 2 * g
        grad_u[:, 2:] = g  # BUG
        return grad_u


# ------------------------------------------------------------------------------ one-sided derivative by conv1d
ONE_SIDED = torch.tensor([[[-1.5, 2.0, -0.5]]], dtype=torch.float64) / H  # second-order forward difference


class BeyondForwardDiffConv(torch.autograd.Function):
    """du/dx by the second-order one-sided stencil as a cross-correlation, (B, 1, N-2)."""
    bug = None

    @staticmethod
    def forward(ctx, u):
        return F.conv1d(u, ONE_SIDED.to(u.dtype))

    @staticmethod
    def backward(ctx, grad_out):
        return F.conv_transpose1d(grad_out, ONE_SIDED.to(grad_out.dtype))

    @staticmethod
    def example_inputs():
        return (_field(41, 2, 1, 7).requires_grad_(),)


class BeyondForwardDiffConvNoFlip(torch.autograd.Function):
    bug = {"kind": "missing_flip", "input": "u",
           "note": "the adjoint is written as conv1d of the padded grad_out with the same kernel, not the flipped one"}

    @staticmethod
    def forward(ctx, u):
        return F.conv1d(u, ONE_SIDED.to(u.dtype))

    @staticmethod
    def backward(ctx, grad_out):
        return F.conv1d(F.pad(grad_out, (2, 2)), ONE_SIDED.to(grad_out.dtype))  # BUG

    @staticmethod
    def example_inputs():
        return (_field(41, 2, 1, 7).requires_grad_(),)


# ------------------------------------------------------------------------------ channels-last stencil
SMOOTH = torch.tensor([[[0.25, 0.6, 0.15]]], dtype=torch.float64)


class BeyondChannelsLastStencil(torch.autograd.Function):
    """A 3-tap stencil along the length of a channels-last field (B, N, C) -> (B, N-2, C)."""
    bug = None

    @staticmethod
    def forward(ctx, u):
        B, N, C = u.shape
        ctx.dims = (B, N, C)
        y = F.conv1d(u.permute(0, 2, 1).reshape(B * C, 1, N), SMOOTH.to(u.dtype))
        return y.reshape(B, C, N - 2).permute(0, 2, 1)

    @staticmethod
    def backward(ctx, grad_out):
        B, N, C = ctx.dims
        g = grad_out.permute(0, 2, 1).reshape(B * C, 1, N - 2)
        gu = F.conv_transpose1d(g, SMOOTH.to(g.dtype))
        return gu.reshape(B, C, N).permute(0, 2, 1)

    @staticmethod
    def example_inputs():
        return (_field(42, 2, 6, 3).requires_grad_(),)


class BeyondChannelsLastStencilFlat(torch.autograd.Function):
    bug = {"kind": "missing_reshape", "input": "u",
           "note": "the (B*C, 1, N) adjoint is reshaped straight to (B, N, C) without going back through (B, C, N) and the permute"}

    @staticmethod
    def forward(ctx, u):
        B, N, C = u.shape
        ctx.dims = (B, N, C)
        y = F.conv1d(u.permute(0, 2, 1).reshape(B * C, 1, N), SMOOTH.to(u.dtype))
        return y.reshape(B, C, N - 2).permute(0, 2, 1)

    @staticmethod
    def backward(ctx, grad_out):
        B, N, C = ctx.dims
        g = grad_out.permute(0, 2, 1).reshape(B * C, 1, N - 2)
        gu = F.conv_transpose1d(g, SMOOTH.to(g.dtype))
        return gu.reshape(B, N, C)  # BUG

    @staticmethod
    def example_inputs():
        return (_field(42, 2, 6, 3).requires_grad_(),)


# ------------------------------------------------------------------------------ heat-equation step
def _lap_periodic(u):
    return (torch.roll(u, 1, dims=-1) - 2 * u + torch.roll(u, -1, dims=-1)) / H ** 2


def _heat_inputs():
    gen = torch.Generator().manual_seed(43)
    u = torch.randn(2, 3, 5, dtype=torch.float64, generator=gen)
    kappa = torch.rand(3, dtype=torch.float64, generator=gen) * 0.5 + 0.1
    return u.requires_grad_(), kappa.requires_grad_()


class BeyondHeatStep(torch.autograd.Function):
    """u + dt * kappa_c * Laplacian(u), periodic, a diffusivity per channel: u (B, C, N), kappa (C,)."""
    bug = None

    @staticmethod
    def forward(ctx, u, kappa):
        lap = _lap_periodic(u)
        ctx.save_for_backward(kappa, lap)
        return u + DT * kappa[:, None] * lap

    @staticmethod
    def backward(ctx, grad_out):
        kappa, lap = ctx.saved_tensors
        grad_u = grad_out + DT * _lap_periodic(kappa[:, None] * grad_out)
        grad_kappa = DT * (grad_out * lap).sum(dim=(0, 2))
        return grad_u, grad_kappa

    @staticmethod
    def example_inputs():
        return _heat_inputs()


class BeyondHeatStepNoIdentity(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "u",
           "note": "the field gradient keeps only the diffusion part and drops the identity term grad_out of u + dt*kappa*lap(u)"}

    @staticmethod
    def forward(ctx, u, kappa):
        lap = _lap_periodic(u)
        ctx.save_for_backward(kappa, lap)
        return u + DT * kappa[:, None] * lap

    @staticmethod
    def backward(ctx, grad_out):
        kappa, lap = ctx.saved_tensors
        grad_u = DT * _lap_periodic(kappa[:, None] * grad_out)  # BUG
        grad_kappa = DT * (grad_out * lap).sum(dim=(0, 2))
        return grad_u, grad_kappa

    @staticmethod
    def example_inputs():
        return _heat_inputs()


class BeyondHeatStepKappaNoGrad(torch.autograd.Function):
    bug = {"kind": "ignores_grad_output", "input": "kappa",
           "note": "the diffusivity gradient sums dt * lap(u) without multiplying by grad_out"}

    @staticmethod
    def forward(ctx, u, kappa):
        lap = _lap_periodic(u)
        ctx.save_for_backward(kappa, lap)
        return u + DT * kappa[:, None] * lap

    @staticmethod
    def backward(ctx, grad_out):
        kappa, lap = ctx.saved_tensors
        grad_u = grad_out + DT * _lap_periodic(kappa[:, None] * grad_out)
        grad_kappa = DT * lap.sum(dim=(0, 2))  # BUG
        return grad_u, grad_kappa

    @staticmethod
    def example_inputs():
        return _heat_inputs()


class BeyondHeatStepKappaPerPoint(torch.autograd.Function):
    bug = {"kind": "not_reduced", "input": "kappa",
           "note": "the per-channel diffusivity gradient is summed over the batch only and left (C, N) instead of summed over the grid too"}

    @staticmethod
    def forward(ctx, u, kappa):
        lap = _lap_periodic(u)
        ctx.save_for_backward(kappa, lap)
        return u + DT * kappa[:, None] * lap

    @staticmethod
    def backward(ctx, grad_out):
        kappa, lap = ctx.saved_tensors
        grad_u = grad_out + DT * _lap_periodic(kappa[:, None] * grad_out)
        grad_kappa = DT * (grad_out * lap).sum(dim=0)  # BUG
        return grad_u, grad_kappa

    @staticmethod
    def example_inputs():
        return _heat_inputs()


# ------------------------------------------------------------------------------ upwind advection
def _adv_inputs():
    gen = torch.Generator().manual_seed(44)
    u = torch.randn(3, 5, dtype=torch.float64, generator=gen)
    speed = torch.tensor([0.8], dtype=torch.float64)
    return u.requires_grad_(), speed.requires_grad_()


class BeyondUpwindAdvect(torch.autograd.Function):
    """First-order upwind step, periodic: u - c dt/h (u_i - u_{i-1}), the learned speed c > 0."""
    bug = None

    @staticmethod
    def forward(ctx, u, speed):
        diff = u - torch.roll(u, 1, dims=1)
        ctx.save_for_backward(speed, diff)
        return u - speed * DT / H * diff

    @staticmethod
    def backward(ctx, grad_out):
        speed, diff = ctx.saved_tensors
        nu = speed * DT / H
        grad_u = grad_out - nu * (grad_out - torch.roll(grad_out, -1, dims=1))
        grad_speed = -(DT / H) * (grad_out * diff).sum().reshape(1)
        return grad_u, grad_speed

    @staticmethod
    def example_inputs():
        return _adv_inputs()


class BeyondUpwindAdvectShift(torch.autograd.Function):
    bug = {"kind": "transposed", "input": "u", "also": ["missing_flip"],
           "note": "the adjoint of the shift u_{i-1} is applied as the same shift roll(+1) instead of its transpose roll(-1)"}

    @staticmethod
    def forward(ctx, u, speed):
        diff = u - torch.roll(u, 1, dims=1)
        ctx.save_for_backward(speed, diff)
        return u - speed * DT / H * diff

    @staticmethod
    def backward(ctx, grad_out):
        speed, diff = ctx.saved_tensors
        nu = speed * DT / H
        grad_u = grad_out - nu * (grad_out - torch.roll(grad_out, 1, dims=1))  # BUG
        grad_speed = -(DT / H) * (grad_out * diff).sum().reshape(1)
        return grad_u, grad_speed

    @staticmethod
    def example_inputs():
        return _adv_inputs()


# ------------------------------------------------------------------------------ matrix step
def _matrix_inputs():
    gen = torch.Generator().manual_seed(45)
    u = torch.randn(2, 4, dtype=torch.float64, generator=gen)
    A = torch.eye(4, dtype=torch.float64) + 0.3 * torch.randn(4, 4, dtype=torch.float64, generator=gen)
    return u.requires_grad_(), A.requires_grad_()


class BeyondMatrixStep(torch.autograd.Function):
    """One explicit step u_{n+1} = A u_n for a batch of row states: u @ A.mT, A learned (non-symmetric)."""
    bug = None

    @staticmethod
    def forward(ctx, u, A):
        ctx.save_for_backward(u, A)
        return u @ A.mT

    @staticmethod
    def backward(ctx, grad_out):
        u, A = ctx.saved_tensors
        grad_u = grad_out @ A if ctx.needs_input_grad[0] else None
        grad_A = grad_out.mT @ u if ctx.needs_input_grad[1] else None
        return grad_u, grad_A

    @staticmethod
    def example_inputs():
        return _matrix_inputs()


class BeyondMatrixStepTransposed(torch.autograd.Function):
    bug = {"kind": "transposed", "input": "u",
           "note": "the state gradient multiplies grad_out by A.mT (as in forward) instead of A"}

    @staticmethod
    def forward(ctx, u, A):
        ctx.save_for_backward(u, A)
        return u @ A.mT

    @staticmethod
    def backward(ctx, grad_out):
        u, A = ctx.saved_tensors
        grad_u = grad_out @ A.mT if ctx.needs_input_grad[0] else None  # BUG
        grad_A = grad_out.mT @ u if ctx.needs_input_grad[1] else None
        return grad_u, grad_A

    @staticmethod
    def example_inputs():
        return _matrix_inputs()
