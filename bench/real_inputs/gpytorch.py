"""Inputs for gpytorch's autograd Functions (bench/real_packages.py's help: --inputs-from this file)."""
import torch


def _sq_dist(x1, x2):
    return torch.cdist(x1, x2).pow(2)


def _dist(x1, x2):
    return torch.cdist(x1, x2)


def RBFCovariance():
    x1, x2 = torch.randn(4, 2, dtype=torch.float64), torch.randn(3, 2, dtype=torch.float64)
    lengthscale = torch.full((1, 1), 0.8, dtype=torch.float64, requires_grad=True)
    return x1, x2, lengthscale, _sq_dist


def MaternCovariance():
    x1, x2 = torch.randn(4, 2, dtype=torch.float64), torch.randn(3, 2, dtype=torch.float64)
    lengthscale = torch.full((1, 1), 0.8, dtype=torch.float64, requires_grad=True)
    return x1, x2, lengthscale, 2.5, _dist


def _NaturalToMuVarSqrt():
    # natural parameters of a Gaussian: nat_mean = S^-1 mu, nat_covar = -S^-1 / 2 (negative definite)
    a = torch.randn(3, 3, dtype=torch.float64)
    prec = a @ a.T / 3 + 0.5 * torch.eye(3, dtype=torch.float64)
    nat_mean = torch.randn(3, dtype=torch.float64, requires_grad=True)
    return nat_mean, (-0.5 * prec).requires_grad_()


def _NgdInterpTerms():
    a = torch.randn(3, 3, dtype=torch.float64)
    prec = a @ a.T / 3 + 0.5 * torch.eye(3, dtype=torch.float64)
    interp = torch.randn(3, 2, dtype=torch.float64, requires_grad=True)
    nat_vec = torch.randn(3, dtype=torch.float64, requires_grad=True)
    return interp, nat_vec, (-0.5 * prec).requires_grad_()
