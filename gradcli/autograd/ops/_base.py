"""Helpers every op module shares: argument coercion and the single broadcast reduction."""
import numpy as np

from gradcli.autograd.tensor import Tensor


def data_of(x):
    """The array behind a Tensor, or a Python/numpy scalar as is."""
    return x.data if type(x) is Tensor else x


def as_tensor_like(x, like):
    if isinstance(x, Tensor):
        return x
    return Tensor(np.asarray(x, dtype=like.data.dtype if np.isscalar(x) else None))


def unbroadcast(g, shape):
    """Sum a gradient of a broadcast result down to ``shape`` (the one reduction every
    broadcasting op's backward uses). Written with Tensor ops so that it records a graph
    under create_graph."""
    if g.data.shape == shape:
        return g
    lead = g.data.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(lead + i for i, s in enumerate(shape) if s == 1 and g.data.shape[lead + i] != 1)
    if axes:
        g = g.sum(dim=axes, keepdim=True)
    if lead or g.data.shape != shape:
        g = g.reshape(shape)
    return g


def normalize_dims(dim, ndim):
    if dim is None:
        return tuple(range(ndim))
    if isinstance(dim, (tuple, list)):
        return tuple(sorted(d % ndim if ndim else 0 for d in dim))
    return ((dim % ndim) if ndim else 0,)
