"""Tensor creation mirroring torch. The default float dtype is float64 (a gradient checker needs
it; torch's is float32); ``set_default_dtype`` changes it as in torch."""
import numbers

import numpy as np

from gradcli.autograd import tensor as _tensor_module
from gradcli.autograd.tensor import Tensor


def get_default_dtype():
    return _tensor_module.DEFAULT_DTYPE


def set_default_dtype(dtype):
    """The dtype Python floats become (float64 unless changed). Tensor's repr reads the same
    setting, so it shows ``dtype=`` exactly for the tensors that are not of the default."""
    dtype = np.dtype(dtype)
    if dtype.kind != "f":
        raise TypeError(f"only floating-point types are supported as the default type, got {dtype}")
    _tensor_module.DEFAULT_DTYPE = dtype


class Generator:
    """A random stream (torch.Generator): ``Generator().manual_seed(0)``, passed as ``generator=``."""

    def __init__(self, device="cpu"):
        self._rng = np.random.default_rng()
        self._seed = None

    def manual_seed(self, seed):
        self._seed = int(seed)
        self._rng = np.random.default_rng(self._seed)
        return self

    def initial_seed(self):
        return self._seed


_default_generator = Generator()


def _rng(generator=None):
    return (generator or _default_generator)._rng


def manual_seed(seed):
    """Reseed the default stream: the same seed gives the same rand/randn/randint values
    (gradcli's own values, not torch's)."""
    return _default_generator.manual_seed(seed)


def _dtype(dtype):
    return _tensor_module.DEFAULT_DTYPE if dtype is None else np.dtype(dtype)


def _python_float_source(data):
    """Whether float values in ``data`` came from Python floats (which become the default
    dtype) rather than from numpy arrays/scalars or tensors (which keep their dtype)."""
    if isinstance(data, (list, tuple)):
        return all(_python_float_source(d) for d in data)
    return not isinstance(data, (np.ndarray, np.generic, Tensor))


def tensor(data, dtype=None, requires_grad=False, device=None, pin_memory=False):
    if isinstance(data, Tensor):
        arr = data.data.copy()
    else:
        arr = np.array(_unwrap(data))
    if dtype is not None:
        arr = arr.astype(dtype)
    elif arr.dtype.kind == "f" and _python_float_source(data):
        arr = arr.astype(_dtype(None))
    elif arr.dtype.kind in "iu" and _python_float_source(data):
        arr = arr.astype(np.int64)
    if not arr.flags.owndata:
        arr = arr.copy()
    return _make(arr, requires_grad)


def _unwrap(data):
    """Nested lists may hold tensors (torch.tensor([t1, t2]) works for 0-d tensors)."""
    if isinstance(data, (list, tuple)):
        return [_unwrap(d) for d in data]
    return data.data if isinstance(data, Tensor) else data


def as_tensor(data, dtype=None, device=None):
    """No copy when ``data`` already is a tensor or array of the dtype asked for."""
    if isinstance(data, Tensor):
        return data if dtype is None or np.dtype(dtype) == data.dtype else data.to(dtype)
    if isinstance(data, np.ndarray):
        return Tensor(data if dtype is None or np.dtype(dtype) == data.dtype else data.astype(dtype))
    return tensor(data, dtype=dtype)


def from_numpy(arr):
    """A tensor sharing ``arr``'s memory."""
    if not isinstance(arr, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(arr).__name__})")
    return Tensor(arr)


def _shape(size, kwargs=None):
    if kwargs and "size" in kwargs:
        size = (kwargs.pop("size"),)
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        return tuple(int(s) for s in size[0])
    return tuple(int(s) for s in size)


def _make(arr, requires_grad):
    t = Tensor(arr)
    return t.requires_grad_(True) if requires_grad else t


def zeros(*size, dtype=None, requires_grad=False, device=None, **kwargs):
    return _make(np.zeros(_shape(size, kwargs), dtype=_dtype(dtype)), requires_grad)


def ones(*size, dtype=None, requires_grad=False, device=None, **kwargs):
    return _make(np.ones(_shape(size, kwargs), dtype=_dtype(dtype)), requires_grad)


def empty(*size, dtype=None, requires_grad=False, device=None, **kwargs):
    return zeros(*size, dtype=dtype, requires_grad=requires_grad, **kwargs)


def _fill_dtype(value):
    """torch.full's dtype from the fill value: bool, int64, complex or the default float."""
    if isinstance(value, (bool, np.bool_)):
        return np.dtype(np.bool_)
    if isinstance(value, numbers.Integral):
        return np.dtype(np.int64)
    if isinstance(value, numbers.Complex) and not isinstance(value, numbers.Real):
        return np.dtype(np.complex128)
    return _dtype(None)


def full(size, fill_value, dtype=None, requires_grad=False, device=None):
    size = (size,) if isinstance(size, numbers.Integral) else tuple(size)
    if isinstance(fill_value, Tensor):
        fill_value = fill_value.item()
    dtype = np.dtype(dtype) if dtype is not None else _fill_dtype(fill_value)
    return _make(np.full(size, fill_value, dtype=dtype), requires_grad)


def eye(n, m=None, dtype=None, requires_grad=False, device=None):
    return _make(np.eye(n, m, dtype=_dtype(dtype)), requires_grad)


def arange(start, end=None, step=1, dtype=None, requires_grad=False, device=None):
    if end is None:
        start, end = 0, start
    arr = np.arange(start, end, step)
    if dtype is not None:
        arr = arr.astype(dtype)
    elif arr.dtype.kind == "f":
        arr = arr.astype(_dtype(None))
    else:
        arr = arr.astype(np.int64)
    return _make(arr, requires_grad)


def linspace(start, end, steps, dtype=None, requires_grad=False, device=None):
    return _make(np.linspace(start, end, int(steps), dtype=_dtype(dtype)), requires_grad)


def logspace(start, end, steps, base=10.0, dtype=None, requires_grad=False, device=None):
    return _make(np.logspace(start, end, int(steps), base=base, dtype=_dtype(dtype)), requires_grad)


def _like(x, fill, dtype, requires_grad):
    arr = np.full(x.data.shape, fill, dtype=np.dtype(dtype) if dtype is not None else x.data.dtype)
    return _make(arr, requires_grad)


def zeros_like(x, dtype=None, requires_grad=False, device=None, memory_format=None):
    return _like(x, 0, dtype, requires_grad)


def ones_like(x, dtype=None, requires_grad=False, device=None, memory_format=None):
    return _like(x, 1, dtype, requires_grad)


def full_like(x, fill_value, dtype=None, requires_grad=False, device=None, memory_format=None):
    return _like(x, fill_value, dtype, requires_grad)


def empty_like(x, dtype=None, requires_grad=False, device=None, memory_format=None):
    return _like(x, 0, dtype, requires_grad)


def _random(draw, size, dtype, requires_grad, generator, kwargs):
    arr = np.asarray(draw(_rng(generator), _shape(size, kwargs)), dtype=_dtype(dtype))
    return _make(arr, requires_grad)


def rand(*size, dtype=None, requires_grad=False, device=None, generator=None, **kwargs):
    """Uniform on [0, 1)."""
    return _random(lambda rng, s: rng.random(s), size, dtype, requires_grad, generator, kwargs)


def randn(*size, dtype=None, requires_grad=False, device=None, generator=None, **kwargs):
    """Standard normal."""
    return _random(lambda rng, s: rng.standard_normal(s), size, dtype, requires_grad, generator, kwargs)


def rand_like(x, dtype=None, requires_grad=False, device=None, memory_format=None):
    return rand(*x.data.shape, dtype=dtype or x.data.dtype, requires_grad=requires_grad)


def randn_like(x, dtype=None, requires_grad=False, device=None, memory_format=None):
    return randn(*x.data.shape, dtype=dtype or x.data.dtype, requires_grad=requires_grad)


def randint(*args, size=None, dtype=None, generator=None, requires_grad=False, device=None):
    """torch's overloads: randint(high, size) and randint(low, high, size)."""
    args = list(args)
    if size is None and args and isinstance(args[-1], (tuple, list)):
        size = args.pop()
    if size is None:
        raise TypeError("randint() missing 1 required positional argument: 'size'")
    low, high = (0, args[0]) if len(args) == 1 else args
    return Tensor(_rng(generator).integers(low, high, size=tuple(size)).astype(dtype or np.int64))


def randint_like(x, low=0, high=None, dtype=None):
    if high is None:
        low, high = 0, low
    return Tensor(_rng().integers(low, high, size=x.data.shape).astype(dtype or x.data.dtype))


def randperm(n, dtype=None, generator=None, requires_grad=False, device=None):
    return Tensor(_rng(generator).permutation(int(n)).astype(dtype or np.int64))


def normal(mean=0.0, std=1.0, size=None, generator=None, dtype=None, requires_grad=False):
    """normal(mean, std, size) with numbers, or elementwise with tensor mean/std."""
    m = mean.data if isinstance(mean, Tensor) else mean
    s = std.data if isinstance(std, Tensor) else std
    shape = tuple(size) if size is not None else np.broadcast_shapes(np.shape(m), np.shape(s))
    arr = _rng(generator).normal(m, s, shape)
    if dtype is None and isinstance(mean, Tensor):
        dtype = mean.data.dtype
    return _make(np.asarray(arr, dtype=_dtype(dtype)), requires_grad)
