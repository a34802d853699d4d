"""In-place operations and views: the part of autograd where one storage has several names.

Every in-place op (``add_``, ``mul_``, ``zero_``, ``copy_``, ``x[i] = v``, ``+=`` ...) computes
its result with the out-of-place Function, writes it into the tensor's storage and bumps the
storage's version counter, which every view of that storage shares. Saved tensors record the
version they were saved at, so a later backward notices the change (torch's error).

When a graph is being recorded:

* the op's input is a *copy* of the old value (torch avoids the copy with per-op formulas; a copy
  keeps every out-of-place backward usable as is), and the tensor's grad_fn becomes the op's node;
* if the tensor is a view, its base gets a ``CopySlices`` node: the base's new value is its old
  value with the view's elements replaced, so gradients reach both the old base and the new view
  value;
* any other view of the same storage now describes a stale value; ``refresh_view`` gives it a fresh
  grad_fn (a gather from the base) the next time it is used, as torch regenerates a view's grad_fn.

Views of a base are found by memory address (``index_map``), so every strided view a shape op can
make (reshape, permute, slicing, expand) is handled without knowing which op made it.
"""
import numpy as np

from gradcli.autograd.function import Function
from gradcli.autograd.grad_mode import _state, no_grad
from gradcli.autograd.tensor import Tensor


def apply(self, fn, *args):
    """Run ``fn(self, *args)`` (built from out-of-place ops) and write the result into ``self``."""
    if not _state.enabled or not _records(self, args):
        with no_grad():
            result = fn(self, *args)
        _write(self, result)
        return self

    if self._custom_view is not None:
        raise RuntimeError(_custom_view_message(self, "is being modified inplace") + " This behavior is "
                           "forbidden. You can fix this by cloning the output of the custom Function.")
    base = self._base
    if base is not None and not np.may_share_memory(base.data, self.data):
        base = None  # someone replaced .data: no longer a view
    if base is not None and base.requires_grad and base.grad_fn is None:
        raise RuntimeError("a view of a leaf Variable that requires grad is being used in an in-place operation.")
    if base is None and self.requires_grad and self.grad_fn is None:
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")
    if base is not None and self._view_version != self._vc[0]:
        refresh_view(self)

    old = Tensor(self.data.copy(), self.requires_grad)  # the value before, for the op's backward
    old.grad_fn, old._output_nr = self.grad_fn, self._output_nr
    result = fn(old, *args)
    _write(self, result)
    if result.grad_fn is not None:
        self._rebase(result.grad_fn, result._output_nr)
    if base is not None:
        self._view_version = self._vc[0]  # first: CopySlices must take this grad_fn, not refresh it
        _rebase_base(base, self)
    return self


def _records(self, args):
    if self.requires_grad or (self._base is not None and self._base.requires_grad):
        return True
    for a in args:
        if isinstance(a, Tensor) and a.requires_grad:
            return True
    return False


def _write(self, result):
    data = self.data
    if not data.flags.writeable:
        raise RuntimeError("unsupported operation: more than one element of the written-to tensor refers to a "
                           "single memory location. Please clone() the tensor before performing the operation.")
    if result.data.dtype != data.dtype and not np.can_cast(result.data.dtype, data.dtype, "same_kind"):
        raise RuntimeError(f"result type {result.data.dtype} can't be cast to the desired output type {data.dtype}")
    np.copyto(data, result.data, casting="unsafe")
    self._vc[0] += 1


def _rebase_base(base, view):
    """The base's new value is its old value with ``view``'s elements replaced by the view's new
    value: record that as a CopySlices node and make it the base's grad_fn."""
    old_base = Tensor(base.data, base.requires_grad)  # CopySlices saves nothing, so no copy is needed
    old_base.grad_fn, old_base._output_nr = base.grad_fn, base._output_nr
    out = CopySlices.apply(old_base, view, index_map(base.data, view.data))
    base._rebase(out.grad_fn, 0)


def refresh_view(view):
    """Give ``view`` a grad_fn that reads it out of its base's current graph."""
    base = view._base
    if not np.may_share_memory(base.data, view.data):
        view._base = None  # .data was replaced: an independent tensor now
        return
    if view._custom_view is not None and (view.requires_grad or base.requires_grad):
        raise RuntimeError(_custom_view_message(view, "its base or another view of its base has been modified "
                                                      "inplace"))
    view._view_version = view._vc[0]
    if not base.requires_grad:
        return
    out = ViewOfBase.apply(base, index_map(base.data, view.data), view.data)
    view.grad_fn, view._output_nr, view.requires_grad = out.grad_fn, 0, True


def _custom_view_message(view, what):
    nr, name = view._custom_view
    return (f"Output {nr} of {name} is a view and {what}. This view was created inside a custom Function (or "
            "because an input was returned as-is) and the autograd logic to handle view+inplace would override "
            "the custom backward associated with the custom Function, leading to incorrect gradients.")


def index_map(base, view):
    """For each element of ``view``, the flat (C-order) index of the element of ``base`` stored at
    the same address. Works for any strides, so for any view a shape op can make."""
    if view.dtype.itemsize != base.dtype.itemsize:
        raise RuntimeError("in-place operation on a view with a different element size than its base")
    shift = view.__array_interface__["data"][0] - base.__array_interface__["data"][0]
    base_offsets = _byte_offsets(base, 0).ravel()
    view_offsets = _byte_offsets(view, shift)
    order = np.argsort(base_offsets, kind="stable")
    sorted_offsets = base_offsets[order]
    pos = np.clip(np.searchsorted(sorted_offsets, view_offsets), 0, max(sorted_offsets.size - 1, 0))
    if sorted_offsets.size == 0 or not np.array_equal(sorted_offsets[pos], view_offsets):
        raise RuntimeError("an in-place operation on a view could not locate the view inside its base")
    return order[pos]


def _byte_offsets(a, start):
    offsets = np.full(a.shape, start, dtype=np.int64)
    for axis, (n, stride) in enumerate(zip(a.shape, a.strides)):
        shape = [1] * a.ndim
        shape[axis] = n
        offsets = offsets + (np.arange(n, dtype=np.int64) * stride).reshape(shape)
    return offsets


class CopySlices(Function):
    """``base`` with the elements at ``index`` (flat indices, shaped like the view) replaced by
    ``value``. The storage already holds the result, so forward only wraps it."""

    gradcli_collect = False  # a graph node, not an op: its forward alone is not its maths

    @staticmethod
    def forward(ctx, base, value, index):
        ctx.index, ctx.base_shape = index, base.data.shape
        return Tensor(base.data)

    @staticmethod
    def backward(ctx, g):
        g_base = None
        if ctx.needs_input_grad[0]:
            keep = np.ones(int(np.prod(ctx.base_shape)), dtype=bool)
            keep[ctx.index.ravel()] = False
            g_base = g * Tensor(keep.reshape(ctx.base_shape))
        g_value = g.reshape(-1)[ctx.index] if ctx.needs_input_grad[1] else None
        return g_base, g_value, None


class ViewOfBase(Function):
    """A view re-read from its base after the storage changed: a gather by flat index."""

    gradcli_collect = False  # a graph node, not an op: forward returns the view it is handed

    @staticmethod
    def forward(ctx, base, index, view_data):
        ctx.index, ctx.base_shape = index, base.data.shape
        return Tensor(view_data)

    @staticmethod
    def backward(ctx, g):
        from gradcli.autograd.ops import IndexBackward  # scatter-add, itself differentiable
        size = int(np.prod(ctx.base_shape))
        return IndexBackward.apply(g, (size,), ctx.index).reshape(ctx.base_shape), None, None
