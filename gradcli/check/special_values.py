"""Values a SPEC asks for beyond plain tensors and Python values (specs/check.md §2, SPEC grammar):
``@sym``/``@spd``/``@nsd`` matrices, ``fn:NAME`` callables, and the ``default()`` test for a parameter's
default object. Used by ``inputs._from_spec`` and ``inputs._record``.
"""
from __future__ import annotations


def structured(array, structure):
    """``@sym``: (A + A^T)/2; ``@spd``: A A^T / n + I/2 (eigenvalues at least 1/2); ``@nsd``: minus that; on the
    last two axes."""
    import numpy as np

    if structure is None:
        return array
    swapped = np.swapaxes(array, -1, -2)
    if structure == "sym":
        return (array + swapped) / 2
    n = array.shape[-1]
    definite = array @ swapped / n + np.eye(n) / 2
    return -definite if structure == "nsd" else definite


def make_callable(be, name: str):
    """``fn:NAME``: on the torch backend the nn.Module (``.forward``/``.parameters()`` work, no parameters);
    on gradcli's engine a function of the same name. Called with several arguments (an ODE right-hand
    side ``func(t, y)``), either applies to the last one: ``tanh(y)``, shaped like the state. ``fn:cdist`` /
    ``fn:sqdist`` take two tensors [..., n, d] and [..., m, d] and give the (squared) Euclidean distances
    between their rows, [..., n, m]."""
    from gradcli.check.spec import PAIRWISE

    if "@" in name:  # fn:sinh@w: holds the input w as its Parameter (callable_params.py)
        from gradcli.check import callable_params

        return callable_params.make(be, name)
    if name in PAIRWISE:
        return _pairwise(be, squared=name == "sqdist")
    if name in ("sinh", "asinh"):
        return _elementwise(be, name)
    if be.name == "torch":
        import torch

        base = {"tanh": torch.nn.Tanh, "sigmoid": torch.nn.Sigmoid, "identity": torch.nn.Identity}[name]
        of_last = type(base.__name__, (base,), {"forward": lambda self, *args: base.forward(self, args[-1]),
                                                "__module__": base.__module__})
        return of_last()
    import gradcli

    fn = {"tanh": gradcli.tanh, "sigmoid": gradcli.sigmoid, "identity": lambda x: x}[name]
    return lambda *args: fn(args[-1])


def _elementwise(be, name: str):
    """sinh / asinh of the last argument: a module on the torch backend (torch.nn has none of these)."""
    if be.name == "torch":
        import torch

        fn = getattr(torch, name)

        class Elementwise(torch.nn.Module):
            def forward(self, *args):
                return fn(args[-1])

        Elementwise.__name__ = name.capitalize()
        return Elementwise()
    import gradcli

    fn = getattr(gradcli, name)
    return lambda *args: fn(args[-1])


def pairwise_distances(x1, x2, squared: bool):
    """sum_k (x1[..., i, k] - x2[..., j, k])^2 (its square root unless ``squared``), by broadcasting: the same
    operations on a torch tensor and on one of gradcli's engine (no cdist, whose gradient at 0 differs)."""
    diff = x1.unsqueeze(-2) - x2.unsqueeze(-3)
    total = (diff * diff).sum(-1)
    return total if squared else total.sqrt()


def _pairwise(be, squared: bool):
    if be.name == "torch":
        import torch

        class PairwiseDistance(torch.nn.Module):
            def forward(self, x1, x2):
                return pairwise_distances(x1, x2, squared)

        PairwiseDistance.__name__ = "SquaredDistance" if squared else "Distance"
        return PairwiseDistance()
    return lambda x1, x2: pairwise_distances(x1, x2, squared)


def is_default_object(value) -> bool:
    from gradcli.check.infer_calls import constructible

    cls = type(value)
    if constructible(cls) is None:
        return False
    try:
        return repr(value) == repr(cls())
    except Exception:  # noqa: BLE001 -- a class whose construction fails is not rebuilt
        return False
