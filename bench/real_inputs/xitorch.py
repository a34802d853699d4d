"""Inputs for xitorch's autograd Functions, built the way xitorch's public functions (xitorch.linalg.solve,
xitorch.linalg.symeig, xitorch.integrate.quad / mcquad / solve_ivp) call them: wrapped pure functions and
LinearOperators from xitorch's own API. Used by bench/real_packages.py as `--inputs-from` (one help)."""
import torch
import xitorch

D = torch.float64


def _spd(n):
    a = torch.randn(n, n, dtype=D)
    return a @ a.T / n + 0.5 * torch.eye(n, dtype=D)


def _integrand(x, a, b):
    return a * torch.sin(b * x)


def solve_torchfcn():
    amat = _spd(3).requires_grad_()
    A = xitorch.LinearOperator.m(amat, is_hermitian=True)
    B = torch.randn(3, 2, dtype=D, requires_grad=True)
    params = A.getlinopparams()
    return (A, B, None, None, "custom_exactsolve", {}, {}, len(params), *params)


def symeig_torchfcn():
    amat = _spd(3)
    amat = (0.5 * (amat + amat.T)).requires_grad_()
    A = xitorch.LinearOperator.m(amat, is_hermitian=True)
    params = A.getlinopparams()
    return (A, 3, "lowest", None, {"method": "custom_exacteig"}, {}, len(params), *params)


def _Quadrature():
    a = torch.tensor([1.3, 0.7], dtype=D, requires_grad=True)
    b = torch.tensor([0.9, 1.1], dtype=D, requires_grad=True)
    xl = torch.tensor(0.0, dtype=D, requires_grad=True)
    xu = torch.tensor(1.2, dtype=D, requires_grad=True)
    pfunc = xitorch.get_pure_function(_integrand)
    fwd = {"method": "leggauss", "n": 64}
    return (pfunc, xl, xu, fwd, {"n": 64}, 2, D, torch.device("cpu"), a, b, *pfunc.objparams())


def _ode(t, y, a):
    return -a * y


def _SolveIVP():
    a = torch.tensor([0.8, 1.2], dtype=D, requires_grad=True)
    y0 = torch.tensor([1.0, -0.5], dtype=D, requires_grad=True)
    ts = torch.linspace(0.0, 1.0, 41, dtype=D)
    pfcn = xitorch.get_pure_function(_ode)
    fwd = {"method": "rk4"}
    return (pfcn, ts, fwd, {"method": "rk4"}, 1, y0, a, *pfcn.objparams())


def _f(x, w):
    return (w * x).sum(-1)


def _logp(x, mu):
    return -0.5 * ((x - mu) ** 2).sum(-1)


def _MCQuad():
    w = torch.tensor([0.5, -0.3], dtype=D, requires_grad=True)
    mu = torch.tensor([0.2, 0.1], dtype=D, requires_grad=True)
    x0 = torch.zeros(2, dtype=D)
    ffcn, logpfcn = xitorch.get_pure_function(_f), xitorch.get_pure_function(_logp)
    fwd = {"nsamples": 200, "nburnout": 20}
    return (ffcn, logpfcn, x0, None, None, "mh", fwd, {"nsamples": 200, "nburnout": 20},
            1, len(ffcn.objparams()), 1, w, *ffcn.objparams(), mu, *logpfcn.objparams())
