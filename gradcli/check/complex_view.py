"""Complex tensors on the torch backend: checked as the real function of their real and imaginary parts.

torch's convention for a complex z = a + ib is the gradient of a real-valued loss L: the backward
of a complex input returns ∂L/∂a + i·∂L/∂b (twice the conjugate Wirtinger derivative ∂L/∂z̄), and
a complex output's cotangent v enters L as Re(Σ v̄·y). Under that convention checking a function
with complex inputs or outputs is *exactly* checking its real view: each complex input becomes a
real tensor of shape (..., 2) (``torch.view_as_real``), turned back by ``view_as_complex`` inside
the call, and each complex output is returned as ``stack([y.real, y.imag], -1)``. autograd's backward through
those two views maps the cotangents and gradients one to one, so the user's (or torch's) complex
backward is what is compared, and the numeric reference perturbs real and imaginary parts
separately. specs/gradcheck.md, "Complex tensors".

The engine backend has no complex tensors: ``refuse_engine_complex`` says so in one line.
"""
from __future__ import annotations

import functools
from typing import Optional, Sequence


def _torch_complex(obj) -> bool:
    """A complex torch tensor (a ``torch.dtype`` argument has ``is_complex`` as a bool property, not a method)."""
    method = getattr(obj, "is_complex", None) if type(obj).__module__.startswith("torch") else None
    return callable(method) and method() is True


def has_complex_outputs(outputs: Sequence) -> bool:
    return any(_torch_complex(o) for o in outputs)


def refuse_engine_complex(args: Sequence) -> None:
    """One-line ValueError for a complex gradcli (engine) tensor or numpy array among ``args``."""
    import numpy as np

    for a in args:
        data = getattr(a, "data", a) if not _torch_complex(a) else None
        if data is not None and isinstance(data, np.ndarray) and data.dtype.kind == "c":
            raise ValueError("complex tensors are not supported by gradcli's engine; check complex code on "
                             "PyTorch tensors (torch backend), where they are checked in torch's convention")


def _real_out(torch, out):
    if isinstance(out, (tuple, list)):
        return type(out)(_real_out(torch, o) for o in out)
    if isinstance(out, torch.Tensor) and out.is_complex():
        # stack(real, imag) rather than view_as_real: its backward takes cotangents of any strides
        # (view_as_real's backward is view_as_complex, which refuses a broadcast "ones" cotangent).
        return torch.stack([out.real, out.imag], dim=-1)
    return out


def realified(fn, args: Sequence, function: Optional[type]):
    """(fn', args', function') checking ``fn`` through its real view; complex inputs become (..., 2)."""
    import torch

    positions = [i for i, a in enumerate(args) if isinstance(a, torch.Tensor) and a.is_complex()]
    real_args = list(args)
    for i in positions:
        a = args[i].detach().resolve_conj()
        view = torch.view_as_real(a).clone()
        real_args[i] = view.requires_grad_(True) if args[i].requires_grad else view
    call = fn.apply if isinstance(fn, type) else fn

    @functools.wraps(call)
    def real_view(*inputs):
        inputs = list(inputs)
        for i in positions:
            inputs[i] = torch.view_as_complex(inputs[i])
        return _real_out(torch, call(*inputs))

    if function is None and isinstance(fn, type):
        function = fn
    if function is None:
        from gradcli.check.backends import function_class

        function = function_class(fn)
    return real_view, tuple(real_args), function
