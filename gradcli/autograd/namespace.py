"""The torch-like namespace behind ``import gradcli as torch``: creation functions, dtypes,
every op as a function, and the autograd entry points."""
import builtins
import math
import types

import numpy as np

from gradcli.autograd import ops as _ops
from gradcli.autograd.creation import (Generator, arange, as_tensor, empty, empty_like, eye,  # noqa: F401
                                       from_numpy, full, full_like, get_default_dtype, linspace, logspace,
                                       manual_seed, normal, ones, ones_like, rand, rand_like, randint,
                                       randint_like, randn, randn_like, randperm, set_default_dtype, tensor,
                                       zeros, zeros_like)
from gradcli.autograd.function import Function, once_differentiable  # noqa: F401
from gradcli.autograd.grad_mode import enable_grad, is_grad_enabled, no_grad, set_grad_enabled  # noqa: F401
from gradcli.autograd.ops.more import return_types  # noqa: F401
from gradcli.autograd.printing import get_printoptions, printoptions, set_printoptions  # noqa: F401
from gradcli.autograd.tensor import Tensor  # noqa: F401

# dtypes are numpy dtypes: ``x.dtype == gradcli.float32`` and ``x.to(gradcli.float64)`` work
float64 = double = np.dtype(np.float64)
float32 = np.dtype(np.float32)
float16 = half = np.dtype(np.float16)
int64 = long = np.dtype(np.int64)
int32 = np.dtype(np.int32)
int16 = short = np.dtype(np.int16)
int8 = np.dtype(np.int8)
uint8 = np.dtype(np.uint8)
complex128 = cdouble = np.dtype(np.complex128)
complex64 = cfloat = np.dtype(np.complex64)
Size = tuple
finfo = np.finfo
iinfo = np.iinfo

pi = math.pi
e = math.e
inf = math.inf
nan = math.nan


def is_tensor(obj):
    return isinstance(obj, Tensor)


def is_floating_point(x):
    return x.data.dtype.kind == "f"


def numel(x):
    return x.data.size


def clone(x):
    return x.clone()


def detach(x):
    return x.detach()


def device(kind="cpu", index=None):
    """gradcli computes on the CPU; a device is just its name."""
    return str(kind) if index is None else f"{kind}:{index}"


# ``torch.cuda.is_available()`` in device-selection boilerplate answers False
cuda = types.SimpleNamespace(is_available=lambda: False, device_count=lambda: 0,
                             manual_seed=lambda seed: None, manual_seed_all=lambda seed: None)


def __getattr__(name):
    # ops (including those registered after import by extensions) resolve here
    try:
        return _ops.FUNCTIONS[name]
    except KeyError:
        raise AttributeError(f"module 'gradcli' has no attribute {name!r}") from None


# Names that shadow builtins are bound last, after every use of the builtins in this module.
float = float32
int = int32
bool = np.dtype(np.bool_)

__all__ = builtins.sorted({n for n in globals() if not n.startswith("_")} - {"builtins", "math", "types", "np"}
                          | builtins.set(_ops.FUNCTIONS) | {"autograd", "nn", "linalg"})
