"""Tensor creation mirroring torch (float64 by default)."""
import numpy as np

from gradcli.autograd.tensor import DEFAULT_DTYPE, Tensor

_generator = [np.random.default_rng()]


def _rng():
    return _generator[0]


def manual_seed(seed):
    _generator[0] = np.random.default_rng(int(seed))
    return _generator[0]


def _dtype(dtype):
    return DEFAULT_DTYPE if dtype is None else np.dtype(dtype)


def tensor(data, dtype=None, requires_grad=False, device=None):
    if isinstance(data, Tensor):
        arr = data.data.copy()
    else:
        arr = _nested_to_array(data)
    if dtype is not None:
        arr = arr.astype(dtype)
    elif arr.dtype.kind == "f" and not isinstance(data, np.ndarray):
        arr = arr.astype(DEFAULT_DTYPE)  # Python floats become the default dtype
    elif arr.dtype.kind == "i":
        arr = arr.astype(np.int64)
    else:
        arr = np.array(arr, copy=True)
    return Tensor(arr).requires_grad_(requires_grad) if requires_grad else Tensor(arr)


def _nested_to_array(data):
    if isinstance(data, (list, tuple)):
        data = [d.data if isinstance(d, Tensor) else d for d in data]
        if any(isinstance(d, (list, tuple)) for d in data):
            data = [_nested_to_array(d) for d in data]
    return np.array(data)


def as_tensor(data, dtype=None, device=None):
    if isinstance(data, Tensor) and (dtype is None or np.dtype(dtype) == data.dtype):
        return data
    if isinstance(data, np.ndarray):
        return Tensor(data if dtype is None else data.astype(dtype))
    return tensor(data, dtype=dtype)


def from_numpy(arr):
    return Tensor(arr)


def _shape(size):
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        return tuple(size[0])
    return tuple(size)


def _make(arr, requires_grad):
    t = Tensor(arr)
    return t.requires_grad_(True) if requires_grad else t


def zeros(*size, dtype=None, requires_grad=False, device=None):
    return _make(np.zeros(_shape(size), dtype=_dtype(dtype)), requires_grad)


def ones(*size, dtype=None, requires_grad=False, device=None):
    return _make(np.ones(_shape(size), dtype=_dtype(dtype)), requires_grad)


def empty(*size, dtype=None, requires_grad=False, device=None):
    return zeros(*size, dtype=dtype, requires_grad=requires_grad)


def full(size, fill_value, dtype=None, requires_grad=False, device=None):
    return _make(np.full(tuple(size), fill_value, dtype=_dtype(dtype)), requires_grad)


def eye(n, m=None, dtype=None, requires_grad=False, device=None):
    return _make(np.eye(n, m, dtype=_dtype(dtype)), requires_grad)


def arange(start, end=None, step=1, dtype=None, requires_grad=False, device=None):
    if end is None:
        start, end = 0, start
    arr = np.arange(start, end, step)
    if dtype is not None:
        arr = arr.astype(dtype)
    elif arr.dtype.kind == "f":
        arr = arr.astype(DEFAULT_DTYPE)
    return _make(arr, requires_grad)


def linspace(start, end, steps, dtype=None, requires_grad=False, device=None):
    return _make(np.linspace(start, end, steps, dtype=_dtype(dtype)), requires_grad)


def _like(x, fill, dtype, requires_grad):
    arr = np.full(x.data.shape, fill, dtype=np.dtype(dtype) if dtype is not None else x.data.dtype)
    return _make(arr, requires_grad)


def zeros_like(x, dtype=None, requires_grad=False):
    return _like(x, 0, dtype, requires_grad)


def ones_like(x, dtype=None, requires_grad=False):
    return _like(x, 1, dtype, requires_grad)


def full_like(x, fill_value, dtype=None, requires_grad=False):
    return _like(x, fill_value, dtype, requires_grad)


def empty_like(x, dtype=None, requires_grad=False):
    return _like(x, 0, dtype, requires_grad)


def rand(*size, dtype=None, requires_grad=False, device=None, generator=None):
    return _make(_rng().random(_shape(size)).astype(_dtype(dtype)), requires_grad)


def randn(*size, dtype=None, requires_grad=False, device=None, generator=None):
    return _make(_rng().standard_normal(_shape(size)).astype(_dtype(dtype)), requires_grad)


def rand_like(x, dtype=None, requires_grad=False):
    return rand(*x.data.shape, dtype=dtype or x.data.dtype, requires_grad=requires_grad)


def randn_like(x, dtype=None, requires_grad=False):
    return randn(*x.data.shape, dtype=dtype or x.data.dtype, requires_grad=requires_grad)


def randint(low, high=None, size=(), dtype=None, device=None):
    if high is None:
        low, high = 0, low
    return Tensor(_rng().integers(low, high, size=tuple(size)).astype(dtype or np.int64))
