"""Inputs for norse's adjoint LIF/LSNN steps and spike-time decoder: a batch of 3, 4 inputs, 2 neurons, the
weights of those shapes, norse's default parameter objects. Used by bench/real_packages.py as `--inputs-from`."""
import torch
from norse.torch.functional.lif import LIFParameters
from norse.torch.functional.lif_refrac import LIFRefracParameters
from norse.torch.functional.lsnn import LSNNParameters

D = torch.float64
B, I, H = 3, 4, 2


def _r(*shape):
    return torch.randn(*shape, dtype=D, requires_grad=True)


def LIFAdjointFunction():
    return _r(B, I), torch.zeros(B, H, dtype=D), _r(B, H), _r(B, H), _r(H, I), _r(H, H), LIFParameters(), 0.001


def LSNNAdjointFunction():
    return (_r(B, I), torch.zeros(B, H, dtype=D), _r(B, H), _r(B, H), _r(B, H), _r(H, I), _r(H, H),
            LSNNParameters(), 0.001)


def LIFMCAdjointFunction():
    return (_r(B, I), torch.zeros(B, H, dtype=D), _r(B, H), _r(B, H), _r(H, I), _r(H, H), _r(H, H),
            LIFParameters(), 0.001)


def LIFMCRefracAdjointFunction():
    return (_r(B, I), torch.zeros(B, H, dtype=D), _r(B, H), _r(B, H), torch.zeros(B, H, dtype=D), _r(H, I),
            _r(H, H), _r(H, H), LIFRefracParameters(), 0.001)


def LIFAdjointRefracFunction():
    return (_r(B, I), torch.zeros(B, H, dtype=D), _r(B, H), _r(B, H), torch.zeros(B, H, dtype=D), _r(H, I),
            _r(H, H), LIFRefracParameters(), 0.001)


def ToSpikeTimes():
    # spikes over 5 time steps for a batch of 2 and 3 channels; the first 2 spike times (float32: backward
    # writes into a tensor of torch's default dtype)
    spikes = (torch.rand(5, 2, 3) > 0.5).float().requires_grad_()
    return spikes, torch.tensor(2)
