"""The backend layer: gradcli's engine or PyTorch behind one small interface.

gradcheck only talks to a ``Backend``: make leaf tensors, run the forward with or without a graph,
take vector-Jacobian products, convert to numpy, and list the graph's custom Functions. torch is
imported only when a torch object is seen (by its type's module name, without importing torch).
"""
from __future__ import annotations

from typing import Callable, Optional, Sequence

import numpy as np


# Inputs up to this many elements are copied before the user's code sees them, so that a forward or
# backward writing into them in place cannot touch the caller's tensors. Larger ones are shared:
# copies would cost more memory than the whole check.
COPY_INPUTS_MAX_ELEMENTS = 1 << 16


def _is_torch_object(obj) -> bool:
    return type(obj).__module__.split(".")[0] == "torch"


def _has_torch_mro(cls) -> bool:
    return any(getattr(k, "__module__", "").split(".")[0] == "torch" for k in getattr(cls, "__mro__", ()))


def detect(fn, args: Sequence) -> "Backend":
    """Torch if any argument is a torch tensor (or fn is a torch Function), else gradcli's engine."""
    owner = function_class(fn)
    if any(_is_torch_object(a) for a in args) or (owner is not None and _has_torch_mro(owner)):
        return TorchBackend()
    return GradcliBackend()


def function_class(fn) -> Optional[type]:
    """The autograd Function class behind ``fn`` when it is one (class, ``.apply``, legacy instance)."""
    candidates = [fn, getattr(fn, "__self__", None)]
    for obj in candidates:
        if obj is None:
            continue
        cls = obj if isinstance(obj, type) else type(obj)
        if _is_autograd_function(cls) and (isinstance(obj, type) or hasattr(cls, "forward")):
            return cls
    return None


def _is_autograd_function(cls) -> bool:
    names = {(k.__module__, k.__name__) for k in getattr(cls, "__mro__", ())}
    return ("gradcli.autograd.function", "Function") in names or (
        ("torch.autograd.function", "Function") in names and cls.__name__ != "Function"
    )


def is_user_function(cls) -> bool:
    """An autograd Function written by the user (not one of gradcli's or torch's built-in ops)."""
    return _is_autograd_function(cls) and not getattr(cls, "__module__", "").startswith(("gradcli.autograd", "torch."))


def fresh_container(value):
    """A shallow copy of a dict/list/set argument for one forward call: forward may pop from it
    (xitorch's ``fwd_options.pop("method")``), and the check calls forward many times."""
    return type(value)(value) if type(value) in (dict, list, set) else value


def flatten_outputs(out) -> list:
    """Tensors (and other objects) in the order gradcheck numbers outputs: nested tuples/lists flattened."""
    if isinstance(out, (tuple, list)):
        flat = []
        for item in out:
            flat.extend(flatten_outputs(item))
        return flat
    return [out]


class Backend:
    """Interface; see GradcliBackend for the reference implementation."""

    name = ""

    def is_tensor(self, obj) -> bool:
        raise NotImplementedError

    def to_numpy(self, tensor) -> np.ndarray:
        raise NotImplementedError

    def dtype_name(self, tensor) -> str:
        return str(self.to_numpy(tensor).dtype)

    def is_floating(self, tensor) -> bool:
        return self.to_numpy(tensor).dtype.kind == "f"

    def requires_grad(self, tensor) -> bool:
        return bool(getattr(tensor, "requires_grad", False))

    def leaf(self, array: np.ndarray, requires_grad: bool):
        """A tensor over ``array`` (shared, not copied: callers pass arrays they own)."""
        raise NotImplementedError

    def fresh_leaf(self, tensor):
        """A detached copy of ``tensor`` (same dtype) that requires grad: the user's tensors stay untouched."""
        raise NotImplementedError

    def shared_leaf(self, tensor):
        """A leaf that requires grad and shares ``tensor``'s storage and version counter (no copy)."""
        raise NotImplementedError

    def clone_in_graph(self, leaf):
        """A copy of ``leaf`` made by a recorded op (a non-leaf): a Function may modify it in place."""
        with self.enable_grad():
            return leaf.clone()

    def zeros_like(self, tensor):
        """Zeros shaped and typed like ``tensor``, outside any graph."""
        raise NotImplementedError

    def version(self, tensor) -> int:
        """The in-place version counter (bumped by every in-place write)."""
        return int(tensor._version)

    def no_grad(self):
        raise NotImplementedError

    def enable_grad(self):
        raise NotImplementedError

    def grad(self, outputs, inputs, cotangents, retain_graph=True, create_graph=False) -> list:
        raise NotImplementedError

    def graph_functions(self, outputs) -> list:
        """The custom Function classes whose backward nodes are in the graph of ``outputs``."""
        seen, found, stack = set(), [], [getattr(o, "grad_fn", None) for o in outputs]
        while stack:
            node = stack.pop()
            if node is None or id(node) in seen:
                continue
            seen.add(id(node))
            cls = self.node_function(node)
            if cls is not None and cls not in found:
                found.append(cls)
            stack.extend(edge[0] for edge in (getattr(node, "next_functions", None) or ()) if edge)
        return found

    def node_function(self, node) -> Optional[type]:
        """The user-defined Function behind a graph node (None for built-in operations)."""
        cls = getattr(type(node), "_forward_cls", None)
        if cls is None and _is_autograd_function(type(node)):
            cls = type(node)  # a legacy-style Function instance is its own node
        return cls if cls is not None and is_user_function(cls) else None

    def graph_fixups(self, outputs) -> list:
        """Gradients the engine had to sum down to the input's shape: [(Function name, index, got, expected)]."""
        return []

    def evaluator(self, fn: Callable, args: Sequence, diff_indices: Sequence[int]) -> Callable:
        """A plain function of numpy arrays for the numeric side: arrays replace args[diff_indices].

        Runs without a graph; outputs come back as numpy arrays (complex in, complex out when the
        forward allows it). The arrays' dtype decides the computation's precision.
        """
        positions = list(diff_indices)

        def evaluate(arrays):
            call_args = [fresh_container(a) for a in args]
            undo = []
            try:
                for index, array in zip(positions, arrays):
                    array = np.asarray(array)  # a numpy scalar would lose its 0-d shape on the way
                    if self.held_by_module(args[index]):
                        undo.append(self.write_into(args[index], array))  # the module reads it, not the argument
                        continue
                    if array.size <= COPY_INPUTS_MAX_ELEMENTS:
                        array = array.copy()  # a forward writing into its input must not reach the caller's data
                    call_args[index] = self.leaf(array, requires_grad=False)
                with self.no_grad():
                    out = fn(*call_args)
                # copies while a held tensor has the perturbed values: an output may be a view of it
                convert = (lambda o: np.array(self.to_numpy(o))) if undo else self.to_numpy
                return [convert(o) if self.is_tensor(o) else np.asarray(o) for o in flatten_outputs(out)]
            finally:
                for restore in reversed(undo):
                    restore()

        return evaluate

    def held_by_module(self, tensor) -> bool:
        """A differentiable argument that user code reads from where it lives rather than through the
        argument (a module's ``nn.Parameter``, which the module's forward reads as ``self.weight``): the
        check differentiates it as itself, and the numeric side perturbs it in place (write_into)."""
        return False

    def write_into(self, tensor, array: np.ndarray) -> Callable[[], None]:
        """Put ``array``'s values into ``tensor`` for one evaluation; returns what puts the old ones back."""
        raise NotImplementedError


class GradcliBackend(Backend):
    name = "gradcli"

    def __init__(self):
        from gradcli import autograd

        self._autograd = autograd
        self._tensor = autograd.Tensor

    def is_tensor(self, obj) -> bool:
        return isinstance(obj, self._tensor)

    def to_numpy(self, tensor) -> np.ndarray:
        return np.asarray(tensor.data)

    def leaf(self, array, requires_grad):
        return self._tensor(np.asarray(array), requires_grad=requires_grad)

    def fresh_leaf(self, tensor):
        return self._tensor(np.array(tensor.data, copy=True), requires_grad=True)

    def shared_leaf(self, tensor):
        leaf = tensor.detach()
        leaf.requires_grad = True
        return leaf

    def zeros_like(self, tensor):
        return self._tensor(np.zeros_like(np.asarray(tensor.data)))

    def no_grad(self):
        return self._autograd.no_grad()

    def enable_grad(self):
        return self._autograd.enable_grad()

    def grad(self, outputs, inputs, cotangents, retain_graph=True, create_graph=False):
        grad_outputs = [self._tensor(np.asarray(c, dtype=o.data.dtype)) for o, c in zip(outputs, cotangents)]
        return list(
            self._autograd.grad(
                list(outputs), list(inputs), grad_outputs,
                retain_graph=retain_graph, create_graph=create_graph, allow_unused=True,
            )
        )

    def graph_fixups(self, outputs):
        fixups, seen, stack = [], set(), [o.grad_fn for o in outputs]
        while stack:
            node = stack.pop()
            if node is None or id(node) in seen:
                continue
            seen.add(id(node))
            for index, got, expected in getattr(node, "_grad_fixups", None) or ():
                fixups.append((node.name(), index, tuple(got), tuple(expected)))
            stack.extend(edge[0] for edge in (node._next or ()) if edge)
        return fixups


class TorchBackend(Backend):
    name = "torch"

    def __init__(self):
        import torch

        self.torch = torch

    def is_tensor(self, obj) -> bool:
        return isinstance(obj, self.torch.Tensor)

    def to_numpy(self, tensor) -> np.ndarray:
        tensor = tensor.detach().cpu()
        # Tensors autograd represents lazily are materialised before numpy sees them: a ZeroTensor
        # (a backward's "all zeros", e.g. sgn's) has no storage; conjugate and negative views have bits.
        if getattr(tensor, "_is_zerotensor", lambda: False)():
            tensor = self.torch.zeros(tensor.shape, dtype=tensor.dtype)
        if tensor.is_conj():
            tensor = tensor.resolve_conj()
        if tensor.is_neg():
            tensor = tensor.resolve_neg()
        if tensor.dtype == self.torch.bfloat16:
            tensor = tensor.float()
        return tensor.numpy()

    def dtype_name(self, tensor) -> str:
        return str(tensor.dtype).replace("torch.", "")

    def is_floating(self, tensor) -> bool:
        return bool(tensor.is_floating_point())

    def leaf(self, array, requires_grad):
        array = np.asarray(array)
        if not array.flags.c_contiguous:
            array = array.copy(order="C")  # not np.ascontiguousarray: it turns a 0-d array into shape (1,)
        tensor = self.torch.from_numpy(array)
        if array.size <= COPY_INPUTS_MAX_ELEMENTS:
            # torch's own storage (numpy's cannot be resized): a forward may free its input with
            # untyped_storage().resize_(0) (reversible layers: torch_geometric's rev_gnn)
            tensor = tensor.clone()
        return tensor.requires_grad_(requires_grad) if requires_grad else tensor

    def fresh_leaf(self, tensor):
        if self.held_by_module(tensor):
            return tensor
        return tensor.detach().clone().requires_grad_(True)

    def shared_leaf(self, tensor):
        if self.held_by_module(tensor):
            return tensor
        return tensor.detach().requires_grad_(True)

    def held_by_module(self, tensor) -> bool:
        # A Parameter given as an argument is most often also read by a module the Function calls
        # (reversible/checkpointing Functions pass fn and its weights: memcnn, torch_geometric's rev_gnn);
        # a copy of it would not be in the graph fn builds ("differentiated Tensor ... not used in the graph").
        # torch.autograd.gradcheck and loss.backward() differentiate the Parameter itself, and so does this.
        return isinstance(tensor, self.torch.nn.Parameter) and tensor.requires_grad

    def write_into(self, tensor, array):
        expected = self.to_numpy(tensor)
        if array.shape != expected.shape or array.dtype != expected.dtype:
            # a batched or complex-step evaluation, or an upcast: the Parameter holds one real point of its
            # own dtype; the numeric side then falls back to real, one-point evaluations at that dtype
            raise ValueError(f"a module's Parameter {list(expected.shape)} {expected.dtype} is perturbed in place: "
                             f"cannot hold {list(array.shape)} {array.dtype}")
        saved = tensor.detach().clone()
        with self.torch.no_grad():
            # through .data: no version-counter bump, so tensors saved for backward stay valid once restored
            # not np.ascontiguousarray: it makes a 0-d array shape (1,), which a 0-d Parameter cannot take
            tensor.data.copy_(self.torch.from_numpy(array if array.flags.c_contiguous else array.copy(order="C")))

        def restore():
            with self.torch.no_grad():
                tensor.data.copy_(saved)

        return restore

    def zeros_like(self, tensor):
        return self.torch.zeros_like(tensor.detach())

    def no_grad(self):
        return self.torch.no_grad()

    def enable_grad(self):
        return self.torch.enable_grad()

    def grad(self, outputs, inputs, cotangents, retain_graph=True, create_graph=False):
        from gradcli.check import torch_vjp

        grad_outputs = [self.torch.as_tensor(np.asarray(c)).to(o.dtype) for o, c in zip(outputs, cotangents)]
        return torch_vjp.vjp(self.torch, list(outputs), list(inputs), grad_outputs, retain_graph, create_graph)
