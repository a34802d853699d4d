"""The torch-like namespace behind ``import gradcli as torch``: creation functions, dtypes,
every op as a function, and the autograd entry points."""
import numpy as np

from gradcli.autograd import ops as _ops
from gradcli.autograd.creation import (arange, as_tensor, empty, empty_like, eye, from_numpy, full,  # noqa: F401
                                       full_like, linspace, manual_seed, ones, ones_like, rand, rand_like,
                                       randint, randn, randn_like, tensor, zeros, zeros_like)
from gradcli.autograd.function import Function, once_differentiable  # noqa: F401
from gradcli.autograd.grad_mode import enable_grad, is_grad_enabled, no_grad, set_grad_enabled  # noqa: F401
from gradcli.autograd.tensor import Tensor  # noqa: F401

float64 = double = np.dtype(np.float64)
float32 = float = np.dtype(np.float32)
float16 = half = np.dtype(np.float16)
int64 = long = np.dtype(np.int64)
int32 = int = np.dtype(np.int32)
bool = np.dtype(np.bool_)
complex128 = cdouble = np.dtype(np.complex128)
complex64 = cfloat = np.dtype(np.complex64)
Size = tuple


def is_tensor(obj):
    return isinstance(obj, Tensor)


def numel(x):
    return x.data.size


def get_default_dtype():
    return float64


def __getattr__(name):
    # ops registered after import (ops.more and extensions) resolve here
    try:
        return _ops.METHODS[name] if name in _ops.METHODS else getattr(_ops, name)
    except AttributeError:
        raise AttributeError(f"module 'gradcli' has no attribute {name!r}") from None


def _public_ops():
    return sorted(set(_ops.METHODS) | {"matmul", "where", "maximum", "minimum"})


__all__ = sorted({n for n in globals() if not n.startswith("_")} | set(_public_ops()) | {"autograd"})
