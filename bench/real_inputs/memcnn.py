"""Inputs for memcnn's InvertibleCheckpointFunction as InvertibleModuleWrapper calls it: an AdditiveCoupling's
forward and inverse, its input and its parameters. Used by bench/real_packages.py as `--inputs-from`."""
import torch
from memcnn import AdditiveCoupling


def InvertibleCheckpointFunction():
    coupling = AdditiveCoupling(Fm=torch.nn.Linear(2, 2).double())
    x = torch.randn(3, 4, dtype=torch.float64, requires_grad=True)
    params = [p for p in coupling.parameters() if p.requires_grad]
    # num_bwd_passes: gradcheck runs backward once per output element and more
    return (coupling.forward, coupling.inverse, True, 10_000, False, 1, x, *params)
