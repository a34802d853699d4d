"""Inputs for pyro's reparameterized samplers, as the distributions' rsample() passes them (built with pyro's
own distribution classes). Used by bench/real_packages.py as `--inputs-from` (one help)."""
import torch
import pyro.distributions as pd

D = torch.float64


def _AVFMVNSample():
    loc = torch.randn(2, dtype=D, requires_grad=True)
    scale_tril = torch.tensor([[1.0, 0.0], [0.4, 0.8]], dtype=D, requires_grad=True)
    control_var = torch.randn(2, 1, 2, dtype=D, requires_grad=True)
    d = pd.AVFMultivariateNormal(loc, scale_tril, control_var)
    return d.loc, d.scale_tril, d.control_var, torch.Size((3,)) + d.loc.shape


def _MixDiagNormalSample():
    locs = torch.randn(3, 2, dtype=D, requires_grad=True)
    coord_scale = (0.5 + torch.rand(3, 2, dtype=D)).requires_grad_()
    logits = torch.randn(3, dtype=D, requires_grad=True)
    d = pd.MixtureOfDiagNormals(locs, coord_scale, logits)
    which = d.categorical.sample(torch.Size((4,)))
    return d.locs, d.coord_scale, d.component_logits, d.categorical.probs, which, torch.Size((4, d.dim))


def _MixDiagNormalSharedCovarianceSample():
    locs = torch.randn(3, 2, dtype=D, requires_grad=True)
    coord_scale = (0.5 + torch.rand(2, dtype=D)).requires_grad_()
    logits = torch.randn(3, dtype=D, requires_grad=True)
    d = pd.MixtureOfDiagNormalsSharedCovariance(locs, coord_scale, logits)
    which = d.categorical.sample(torch.Size((4,)))
    return d.locs, d.coord_scale, d.component_logits, d.probs, which, torch.Size((4,)) + d.coord_scale.shape


def _GSMSample():
    coord_scale = (0.5 + torch.rand(2, dtype=D)).requires_grad_()
    logits = torch.randn(3, dtype=D, requires_grad=True)
    component_scale = (0.5 + torch.rand(3, dtype=D)).requires_grad_()
    d = pd.GaussianScaleMixture(coord_scale, logits, component_scale)
    which = d.categorical.sample(torch.Size((4,)))
    return (d.coord_scale, d.component_logits, d.component_scale, d.categorical.probs, which,
            torch.Size((4, d.dim)), d.coeffs)
