"""Inputs for pytorch_wavelets' DTCWT and scattering Functions, with the filters, modes and flags their modules
(DTCWTForward, ScatLayer) pass. Used by bench/real_packages.py as `--inputs-from` (one help)."""
import torch
from pytorch_wavelets import DTCWTForward, ScatLayer
from pytorch_wavelets.dwt.lowlevel import mode_to_int

D = torch.float64


def _image():
    return torch.randn(1, 1, 8, 8, dtype=D, requires_grad=True)


def FWD_J1():
    xfm = DTCWTForward(J=2).double()
    return (_image(), xfm.h0o.detach(), xfm.h1o.detach(), xfm.skip_hps[0], xfm.o_dim, xfm.ri_dim,
            mode_to_int(xfm.mode))


def FWD_J2PLUS():
    xfm = DTCWTForward(J=2).double()
    return (_image(), xfm.h0a.detach(), xfm.h1a.detach(), xfm.h0b.detach(), xfm.h1b.detach(), xfm.skip_hps[1],
            xfm.o_dim, xfm.ri_dim, mode_to_int(xfm.mode))


def ScatLayerj1_f():
    layer = ScatLayer().double()
    return (_image(), layer.h0o.detach(), layer.h1o.detach(), layer.mode, layer.magbias, layer.combine_colour)
