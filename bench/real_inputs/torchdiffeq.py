"""Inputs for torchdiffeq's autograd Functions: a small ODE right-hand side (an nn.Module with a parameter), an
event function, and OdeintAdjointMethod's arguments prepared as torchdiffeq.odeint_adjoint prepares them.
Used by bench/real_packages.py as `--inputs-from` (one help)."""
import torch
from torchdiffeq._impl.adjoint import handle_adjoint_norm_
from torchdiffeq._impl.misc import _check_inputs
from torchdiffeq._impl.odeint import SOLVERS

D = torch.float64


class Decay(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.k = torch.nn.Parameter(torch.tensor([0.7, 1.3], dtype=D))

    def forward(self, t, y):
        return -self.k * y


def _event(t, y):
    return y.sum() - 0.25


def OdeintAdjointMethod():
    func = Decay()
    y0 = torch.tensor([1.0, -0.4], dtype=D, requires_grad=True)
    t = torch.tensor([0.0, 0.5, 1.0], dtype=D)
    rtol = atol = 1e-12
    shapes, func, y0, t, rtol, atol, method, options, event_fn, _ = _check_inputs(
        func, y0, t, rtol, atol, "dopri5", None, None, SOLVERS)
    adjoint_options = {}
    handle_adjoint_norm_(adjoint_options, shapes, options["norm"])
    params = tuple(p for p in func.parameters() if p.requires_grad)
    return (shapes, func, y0, t, rtol, atol, method, options, event_fn, rtol, atol, method, adjoint_options,
            t.requires_grad, *params)


def ImplicitFnGradientRerouting():
    func = Decay()
    event_t = torch.tensor(0.3, dtype=D, requires_grad=True)
    state_t = torch.tensor([0.8, -0.2], dtype=D, requires_grad=True)
    return func, _event, event_t, state_t


def _UncheckedAssign():
    # as _runge_kutta_step calls it: a scratch buffer, a stage value, the index (..., i)
    scratch = torch.zeros(3, 2, dtype=D, requires_grad=True)
    value = torch.randn(3, dtype=D, requires_grad=True)
    return scratch, value, (..., 0)
