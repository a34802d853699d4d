"""Function, its context, and the graph nodes the backward engine walks.

As in torch, the ``ctx`` handed to ``forward``/``backward`` *is* the graph node (``y.grad_fn``): an
instance of ``<Name>Backward``, a subclass made once per Function class.
"""
import functools
import inspect
import warnings

import numpy as np

from gradcli.autograd import grad_mode
from gradcli.autograd.tensor import Tensor

_RELEASED = object()


class FunctionCtx:
    """What ``forward`` may call on ``ctx``; arbitrary attributes are allowed too (``ctx.k = 3``)."""

    _to_save = ()
    _saved_versions = ()
    _non_differentiable = ()
    _dirty = ()
    _materialize_grads = True
    needs_input_grad = ()

    def save_for_backward(self, *tensors):
        for t in tensors:
            if t is not None and not isinstance(t, Tensor):
                raise TypeError("save_for_backward can only save variables, but argument "
                                f"{tensors.index(t)} is of type {type(t).__name__}")
        self._to_save = tensors
        self._saved_versions = tuple(None if t is None else t._vc[0] for t in tensors)

    def save_for_forward(self, *tensors):
        self._saved_for_forward = tensors

    @property
    def saved_tensors(self):
        saved = self._to_save
        if saved is _RELEASED:
            raise RuntimeError(
                "Trying to backward through the graph a second time (or directly access saved tensors after "
                "they have already been freed). Saved intermediate values of the graph are freed when you call "
                ".backward() or autograd.grad(). Specify retain_graph=True if you need to backward through the "
                "graph a second time or if you need to access saved tensors after calling backward.")
        for i, (t, expected) in enumerate(zip(saved, self._saved_versions)):
            if t is not None and t._vc[0] != expected:
                raise RuntimeError(
                    "one of the variables needed for gradient computation has been modified by an inplace "
                    f"operation: [{_describe(t)}], which is output {t._output_nr} of {self.name()}, "
                    f"is at version {t._vc[0]}; expected version {expected} instead. "
                    f"(saved tensor {i} of {self.name()})")
        return saved

    saved_variables = saved_tensors  # the name old tutorials (seed 002) use

    def mark_non_differentiable(self, *tensors):
        self._non_differentiable = tensors

    def mark_dirty(self, *tensors):
        self._dirty = tensors

    def set_materialize_grads(self, value):
        self._materialize_grads = bool(value)

    def name(self):
        return type(self).__name__


def _describe(t):
    return f"{t.data.dtype}{list(t.shape)}"


class Node(FunctionCtx):
    """A node of the backward graph. ``_next`` holds one edge per forward argument:
    ``(node, output_nr)`` or None where no gradient flows."""

    _next = ()
    _retained = None
    _n_outputs = 1
    _output_meta = ()
    _grad_fixups = None

    def _retain(self, tensor):
        if self._retained is None:
            self._retained = {}
        self._retained.setdefault(tensor._output_nr, []).append(tensor)

    @property
    def next_functions(self):
        return tuple((None, 0) if e is None else e for e in self._next)

    def _release(self):
        self._to_save = _RELEASED

    def __repr__(self):
        return f"<{self.name()} object at {hex(id(self))}>"


class AccumulateGrad(Node):
    """The node behind a leaf tensor: adds incoming gradients into ``leaf.grad``."""

    __slots__ = ()

    def __init__(self, leaf):
        self.variable = leaf


class BackwardNode(Node):
    """Base of ``<Name>Backward``: runs the Function's backward and checks what it returns."""

    _forward_cls = None

    def _backward(self, grads):
        return self._forward_cls.backward(self, *grads)


class Function(FunctionCtx):
    """Subclass it with ``forward(ctx, *args)`` and ``backward(ctx, *grad_outputs)`` as staticmethods
    (or classmethods, or ``forward(*args)`` plus ``setup_context(ctx, inputs, output)``), then call
    ``YourFunction.apply(...)``."""

    _legacy = False

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        cls._backward_cls = type(cls.__name__ + "Backward", (BackwardNode,),
                                 {"_forward_cls": cls, "__module__": cls.__module__})
        forward = cls.__dict__.get("forward")
        cls._legacy = forward is not None and inspect.isfunction(forward)
        cls._uses_setup_context = "setup_context" in _own_attrs(cls)

    def __init__(self, *args, **kwargs):
        if not type(self)._legacy and type(self).__call__ is Function.__call__:
            return  # torch allows instantiation; calling the instance is what is refused

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError("You must implement the forward function for custom autograd.Function.")

    @staticmethod
    def setup_context(ctx, inputs, output):
        raise NotImplementedError("setup_context is not overridden.")

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError("You must implement either the backward or vjp method for your custom "
                                  "autograd.Function to use it with backward mode AD.")

    @classmethod
    def vjp(cls, ctx, *grad_outputs):
        return cls.backward(ctx, *grad_outputs)

    def __call__(self, *args):
        cls = type(self)
        if not cls._legacy:
            raise RuntimeError(f"Legacy autograd function with non-static forward method is deprecated. "
                               f"Please use new-style autograd function with static forward method. "
                               f"(Call {cls.__name__}.apply(...) instead of {cls.__name__}()(...))")
        warnings.warn(_legacy_hint(cls), DeprecationWarning, stacklevel=2)
        return _apply(cls, self, args, {}, legacy=True)

    @classmethod
    def apply(cls, *args, **kwargs):
        if cls._legacy:
            return cls()(*args)
        return _apply(cls, cls._backward_cls(), args, kwargs)

    def name(self):
        return type(self).__name__

    def _backward(self, grads):  # a legacy Function instance is its own graph node
        return self.backward(*grads)

    # A legacy instance doubles as a Node: borrow the node machinery.
    _next = Node._next
    _retained = Node._retained
    _n_outputs = Node._n_outputs
    _output_meta = Node._output_meta
    _grad_fixups = Node._grad_fixups
    _retain = Node._retain
    _release = Node._release
    next_functions = Node.next_functions


def _own_attrs(cls):
    names = set()
    for klass in cls.__mro__:
        if klass is Function:
            break
        names.update(klass.__dict__)
    return names


def _legacy_hint(cls):
    return (f"{cls.__name__} uses the legacy autograd.Function style (instance methods forward(self, ...)/"
            f"backward(self, ...), called as {cls.__name__}()(...)), which current PyTorch refuses. Use:\n"
            f"    class {cls.__name__}(Function):\n"
            f"        @staticmethod\n"
            f"        def forward(ctx, ...): ...  # ctx.save_for_backward(...)\n"
            f"        @staticmethod\n"
            f"        def backward(ctx, grad_output): ...  # ctx.saved_tensors\n"
            f"    y = {cls.__name__}.apply(...)")


def _apply(cls, ctx, args, kwargs, legacy=False):
    grad_on = grad_mode.is_grad_enabled()
    tracked = False
    if grad_on:
        needs = tuple(type(a) is Tensor and a.requires_grad for a in args)
        tracked = True in needs
        ctx.needs_input_grad = needs
    else:
        ctx.needs_input_grad = (False,) * len(args)

    grad_mode._set(False)
    try:
        if legacy:
            outputs = ctx.forward(*args)
        elif cls._uses_setup_context:
            outputs = cls.forward(*args, **kwargs)
            cls.setup_context(ctx, args, outputs)
        else:
            outputs = cls.forward(ctx, *args, **kwargs)
    finally:
        grad_mode._set(grad_on)

    single = not isinstance(outputs, tuple)
    outs = (outputs,) if single else outputs
    dirty = ctx._dirty
    nondiff = ctx._non_differentiable
    result = []
    for out in outs:
        if type(out) is Tensor:
            if out.grad_fn is not None or (out.requires_grad and not any(out is d for d in dirty)):
                # forward returned a tensor that already belongs to a graph (e.g. an input): alias it
                alias = Tensor(out.data)
                alias._vc = out._vc
                out = alias
            elif any(out is d for d in dirty):
                out._vc[0] += 1
        elif out is not None and not isinstance(out, (int, float, bool, str, np.ndarray, np.generic)):
            if not isinstance(out, Tensor):
                pass  # foreign objects pass through untouched
        result.append(out)

    if tracked:
        ctx._next = tuple(_edge(a) if need else None for a, need in zip(args, ctx.needs_input_grad))
        meta = []
        for i, out in enumerate(result):
            if isinstance(out, Tensor):
                meta.append((out.data.shape, out.data.dtype))
                if not any(out is n for n in nondiff) and out.data.dtype.kind in "fcO":
                    out.grad_fn = ctx
                    out._output_nr = i
                    out.requires_grad = True
            else:
                meta.append(None)
        ctx._n_outputs = len(result)
        ctx._output_meta = tuple(meta)
        ctx._input_meta = tuple((a.data.shape, a.data.dtype) if type(a) is Tensor else None for a in args)
    else:
        ctx._to_save = _RELEASED if ctx._to_save else ()

    return result[0] if single else tuple(result)


def _edge(t):
    if t.grad_fn is not None:
        return (t.grad_fn, t._output_nr)
    acc = t._accumulator
    if acc is None:
        acc = t._accumulator = AccumulateGrad(t)
    return (acc, 0)


def once_differentiable(backward):
    """Mark a backward as not differentiable itself: it runs without recording, and a double
    backward through it raises instead of silently returning wrong second derivatives."""

    @functools.wraps(backward)
    def wrapper(ctx, *grad_outputs):
        with grad_mode.no_grad():
            grads = backward(ctx, *grad_outputs)
        if not grad_mode.is_grad_enabled() or not any(isinstance(g, Tensor) and g.requires_grad
                                                       for g in grad_outputs):
            return grads
        single = not isinstance(grads, tuple)
        deps = [g for g in grad_outputs if isinstance(g, Tensor) and g.requires_grad]
        wrapped = tuple(_DelayedError.apply(g, *deps) if isinstance(g, Tensor) else g
                        for g in ((grads,) if single else grads))
        return wrapped[0] if single else wrapped

    return wrapper


class _DelayedError(Function):
    @staticmethod
    def forward(ctx, g, *deps):
        return Tensor(g.data)

    @staticmethod
    def backward(ctx, grad):
        raise RuntimeError("trying to differentiate twice a function that was marked with @once_differentiable")
