"""Inputs for torchsde's _SdeintAdjointMethod, prepared as torchsde.sdeint_adjoint prepares them: a small
Stratonovich SDE (nn.Module with a parameter), a fixed Brownian path (BrownianInterval with an entropy), the
reversible Heun solver (its adjoint gives the discretisation's exact gradient). Used by bench/real_packages.py
as `--inputs-from` (one help)."""
import torch
import torchsde
from torchsde._core import adjoint, methods, sdeint

D = torch.float64


class SDE(torch.nn.Module):
    noise_type = "diagonal"
    sde_type = "stratonovich"

    def __init__(self):
        super().__init__()
        self.theta = torch.nn.Parameter(torch.tensor([0.5, 0.8], dtype=D))

    def f(self, t, y):
        return -self.theta * y

    def g(self, t, y):
        return 0.3 * torch.sin(y)


def _SdeintAdjointMethod():
    y0 = torch.randn(3, 2, dtype=D, requires_grad=True)
    ts = torch.tensor([0.0, 0.5, 1.0], dtype=D)
    bm = torchsde.BrownianInterval(t0=0.0, t1=1.0, size=(3, 2), dtype=D, entropy=1234)
    sde, y0, ts, bm, method, options = sdeint.check_contract(SDE(), y0, ts, bm, "reversible_heun", False, None,
                                                             None, False)
    adjoint_method = adjoint._select_default_adjoint_method(sde, method, None)
    dt = 0.05
    solver = methods.select(method=method, sde_type=sde.sde_type)(
        sde=sde, bm=bm, dt=dt, adaptive=False, rtol=1e-5, atol=1e-4, dt_min=1e-5, options=options)
    with torch.no_grad():
        extra = tuple(s.detach() for s in solver.init_extra_solver_state(ts[0], y0))
    params = tuple(p for p in sde.parameters() if p.requires_grad)
    return (sde, ts, dt, bm, solver, method, adjoint_method, False, 1e-5, 1e-4, 1e-5, {}, len(extra), y0, *extra,
            *params)
