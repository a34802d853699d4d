"""Time steps of damped oscillators x'' = -k x - c v with learned stiffness k and damping c (one per
degree of freedom): explicit Euler, a coupled Euler step with a learned stiffness matrix, and the
RK2 midpoint step. Every step returns the new state stacked as (2, B, D): position, velocity."""
import torch

DT = 0.3


def _state(seed):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(3, 2, dtype=torch.float64, generator=gen)
    v = torch.randn(3, 2, dtype=torch.float64, generator=gen)
    k = torch.rand(2, dtype=torch.float64, generator=gen) + 0.5
    c = torch.rand(2, dtype=torch.float64, generator=gen) * 0.5 + 0.1
    return x.requires_grad_(), v.requires_grad_(), k.requires_grad_(), c.requires_grad_()


# ------------------------------------------------------------------------------ explicit Euler
def _euler(ctx, x, v, k, c):
    x1 = x + DT * v
    v1 = v + DT * (-k * x - c * v)
    ctx.save_for_backward(x, v, k, c, x1)
    return torch.stack([x1, v1])


class BeyondEulerOscillator(torch.autograd.Function):
    """x1 = x + dt v, v1 = v + dt (-k x - c v)."""
    bug = None

    @staticmethod
    def forward(ctx, x, v, k, c):
        return _euler(ctx, x, v, k, c)

    @staticmethod
    def backward(ctx, grad_out):
        x, v, k, c, x1 = ctx.saved_tensors
        gx1, gv1 = grad_out[0], grad_out[1]
        grad_x = gx1 - DT * k * gv1
        grad_v = DT * gx1 + (1 - DT * c) * gv1
        grad_k = -DT * (gv1 * x).sum(dim=0)
        grad_c = -DT * (gv1 * v).sum(dim=0)
        return grad_x, grad_v, grad_k, grad_c

    @staticmethod
    def example_inputs():
        return _state(51)


class BeyondEulerOscillatorSwapped(torch.autograd.Function):
    bug = {"kind": "swapped", "input": "k",
           "note": "the stiffness and damping gradients are returned in each other's positions"}

    @staticmethod
    def forward(ctx, x, v, k, c):
        return _euler(ctx, x, v, k, c)

    @staticmethod
    def backward(ctx, grad_out):
        x, v, k, c, x1 = ctx.saved_tensors
        gx1, gv1 = grad_out[0], grad_out[1]
        grad_x = gx1 - DT * k * gv1
        grad_v = DT * gx1 + (1 - DT * c) * gv1
        grad_k = -DT * (gv1 * x).sum(dim=0)
        grad_c = -DT * (gv1 * v).sum(dim=0)
        return grad_x, grad_v, grad_c, grad_k  # BUG

    @staticmethod
    def example_inputs():
        return _state(51)


class BeyondEulerOscillatorDampingSign(torch.autograd.Function):
    bug = {"kind": "term_sign", "input": "v",
           "note": "the damping term of the velocity Jacobian is added, (1 + dt c), where v1 = v - dt c v subtracts it"}

    @staticmethod
    def forward(ctx, x, v, k, c):
        return _euler(ctx, x, v, k, c)

    @staticmethod
    def backward(ctx, grad_out):
        x, v, k, c, x1 = ctx.saved_tensors
        gx1, gv1 = grad_out[0], grad_out[1]
        grad_x = gx1 - DT * k * gv1
        grad_v = DT * gx1 + (1 + DT * c) * gv1  # BUG
        grad_k = -DT * (gv1 * x).sum(dim=0)
        grad_c = -DT * (gv1 * v).sum(dim=0)
        return grad_x, grad_v, grad_k, grad_c

    @staticmethod
    def example_inputs():
        return _state(51)


class BeyondEulerOscillatorNewPosition(torch.autograd.Function):
    bug = {"kind": "wrong_variable", "input": "k",
           "note": "the stiffness gradient uses the updated position x1 saved on ctx instead of the position x the force was evaluated at"}

    @staticmethod
    def forward(ctx, x, v, k, c):
        return _euler(ctx, x, v, k, c)

    @staticmethod
    def backward(ctx, grad_out):
        x, v, k, c, x1 = ctx.saved_tensors
        gx1, gv1 = grad_out[0], grad_out[1]
        grad_x = gx1 - DT * k * gv1
        grad_v = DT * gx1 + (1 - DT * c) * gv1
        grad_k = -DT * (gv1 * x1).sum(dim=0)  # BUG
        grad_c = -DT * (gv1 * v).sum(dim=0)
        return grad_x, grad_v, grad_k, grad_c

    @staticmethod
    def example_inputs():
        return _state(51)


# ------------------------------------------------------------------------------ coupled Euler step
DAMP = 0.2


def _coupled_inputs():
    gen = torch.Generator().manual_seed(52)
    x = torch.randn(2, 3, dtype=torch.float64, generator=gen)
    v = torch.randn(2, 3, dtype=torch.float64, generator=gen)
    K = torch.eye(3, dtype=torch.float64) + 0.4 * torch.randn(3, 3, dtype=torch.float64, generator=gen)
    return x.requires_grad_(), v.requires_grad_(), K.requires_grad_()


class BeyondCoupledEuler(torch.autograd.Function):
    """Coupled oscillators: a = -x K^T - DAMP v (rows are systems), one Euler step."""
    bug = None

    @staticmethod
    def forward(ctx, x, v, K):
        ctx.save_for_backward(x, K)
        a = -x @ K.mT - DAMP * v
        return torch.stack([x + DT * v, v + DT * a])

    @staticmethod
    def backward(ctx, grad_out):
        x, K = ctx.saved_tensors
        gx1, gv1 = grad_out.unbind(0)
        ga = DT * gv1
        grad_x = gx1 - ga @ K
        grad_v = DT * gx1 + gv1 - DAMP * ga
        grad_K = -ga.mT @ x
        return grad_x, grad_v, grad_K

    @staticmethod
    def example_inputs():
        return _coupled_inputs()


class BeyondCoupledEulerStiffnessT(torch.autograd.Function):
    bug = {"kind": "transposed", "input": "K",
           "note": "the stiffness-matrix gradient is computed as x^T ga, the transpose of ga^T x"}

    @staticmethod
    def forward(ctx, x, v, K):
        ctx.save_for_backward(x, K)
        a = -x @ K.mT - DAMP * v
        return torch.stack([x + DT * v, v + DT * a])

    @staticmethod
    def backward(ctx, grad_out):
        x, K = ctx.saved_tensors
        gx1, gv1 = grad_out.unbind(0)
        ga = DT * gv1
        grad_x = gx1 - ga @ K
        grad_v = DT * gx1 + gv1 - DAMP * ga
        grad_K = -x.mT @ ga  # BUG
        return grad_x, grad_v, grad_K

    @staticmethod
    def example_inputs():
        return _coupled_inputs()


# ------------------------------------------------------------------------------ RK2 midpoint
def _rk2(ctx, x, v, k, c):
    a0 = -k * x - c * v
    xm = x + 0.5 * DT * v
    vm = v + 0.5 * DT * a0
    am = -k * xm - c * vm
    ctx.save_for_backward(x, v, k, c, xm, vm)
    return torch.stack([x + DT * vm, v + DT * am])


class BeyondMidpointOscillator(torch.autograd.Function):
    """RK2 midpoint step of the damped oscillator, backward through both stages."""
    bug = None

    @staticmethod
    def forward(ctx, x, v, k, c):
        return _rk2(ctx, x, v, k, c)

    @staticmethod
    def backward(ctx, grad_out):
        x, v, k, c, xm, vm = ctx.saved_tensors
        gx1, gv1 = grad_out[0], grad_out[1]
        g_am = DT * gv1
        g_vm = DT * gx1 - c * g_am
        g_xm = -k * g_am
        g_a0 = 0.5 * DT * g_vm
        grad_x = gx1 + g_xm - k * g_a0
        grad_v = gv1 + 0.5 * DT * g_xm + g_vm - c * g_a0
        grad_k = -(xm * g_am + x * g_a0).sum(dim=0)
        grad_c = -(vm * g_am + v * g_a0).sum(dim=0)
        return grad_x, grad_v, grad_k, grad_c

    @staticmethod
    def example_inputs():
        return _state(53)


class BeyondMidpointOscillatorDampingVelocity(torch.autograd.Function):
    bug = {"kind": "wrong_variable", "input": "c",
           "note": "the damping gradient of the midpoint stage multiplies by the start velocity v instead of the midpoint velocity vm"}

    @staticmethod
    def forward(ctx, x, v, k, c):
        return _rk2(ctx, x, v, k, c)

    @staticmethod
    def backward(ctx, grad_out):
        x, v, k, c, xm, vm = ctx.saved_tensors
        gx1, gv1 = grad_out[0], grad_out[1]
        g_am = DT * gv1
        g_vm = DT * gx1 - c * g_am
        g_xm = -k * g_am
        g_a0 = 0.5 * DT * g_vm
        grad_x = gx1 + g_xm - k * g_a0
        grad_v = gv1 + 0.5 * DT * g_xm + g_vm - c * g_a0
        grad_k = -(xm * g_am + x * g_a0).sum(dim=0)
        grad_c = -(v * g_am + v * g_a0).sum(dim=0)  # BUG
        return grad_x, grad_v, grad_k, grad_c

    @staticmethod
    def example_inputs():
        return _state(53)


class BeyondMidpointOscillatorEulerJacobian(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "x",
           "note": "the position gradient is written as the explicit Euler step's gx1 - dt k gv1, dropping the path through the first stage (-k g_a0)"}

    @staticmethod
    def forward(ctx, x, v, k, c):
        return _rk2(ctx, x, v, k, c)

    @staticmethod
    def backward(ctx, grad_out):
        x, v, k, c, xm, vm = ctx.saved_tensors
        gx1, gv1 = grad_out[0], grad_out[1]
        g_am = DT * gv1
        g_vm = DT * gx1 - c * g_am
        g_xm = -k * g_am
        g_a0 = 0.5 * DT * g_vm
        grad_x = gx1 - DT * k * gv1  # BUG
        grad_v = gv1 + 0.5 * DT * g_xm + g_vm - c * g_a0
        grad_k = -(xm * g_am + x * g_a0).sum(dim=0)
        grad_c = -(vm * g_am + v * g_a0).sum(dim=0)
        return grad_x, grad_v, grad_k, grad_c

    @staticmethod
    def example_inputs():
        return _state(53)
