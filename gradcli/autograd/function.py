"""Function, its context, and the graph nodes the backward engine walks.

As in torch, the ``ctx`` handed to ``forward``/``backward`` *is* the graph node (``y.grad_fn``): an
instance of ``<Name>Backward``, a subclass made once per Function class. A legacy-style Function
(instance methods, called as ``F()(x)``) is its own node, as in old torch.
"""
import copy
import functools
import inspect
import warnings

from gradcli.autograd import grad_mode
from gradcli.autograd.grad_mode import _state
from gradcli.autograd.tensor import Tensor

_RELEASED = object()  # stands in for the saved tensors once backward has freed them
# Edges that lead nowhere (torch's next_functions shows both as (None, 0)): a tensor argument that
# needs no gradient (a gradient returned for it is dropped), and a non-tensor argument (a gradient
# returned for it is an error).
NO_EDGE = (None, 0)
NON_TENSOR = (None, -1)
_NO_GRADS = tuple((False,) * n for n in range(9))  # needs_input_grad under no_grad, for n < 9 inputs


class FunctionCtx:
    """What ``forward`` may call on ``ctx``; arbitrary attributes are allowed too (``ctx.k = 3``).
    Class-level defaults keep a fresh node free until forward actually uses a feature."""

    _to_save = ()
    _saved_versions = ()
    _versions_at_save = ()
    _non_differentiable = ()
    _dirty = ()
    _materialize_grads = True
    needs_input_grad = ()

    def save_for_backward(self, *tensors):
        for i, t in enumerate(tensors):
            if t is not None and not isinstance(t, Tensor):
                raise TypeError(f"save_for_backward can only save variables, but argument {i} is of type "
                                f"{type(t).__name__}")
        self._to_save = tensors
        # versions are recorded by _apply once forward has returned (after mark_dirty's bump), as torch does;
        # the versions at save time let the diagnosis tell a tensor changed in place *after* it was saved
        self._versions_at_save = tuple(None if t is None else t._vc[0] for t in tensors)

    def save_for_forward(self, *tensors):
        # no forward-mode AD here; gradcheck calls Function.jvp with these as saved_tensors (check/forward_ad.py)
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
        versions = self._saved_versions  # empty until forward has returned
        for i in range(len(versions)):
            t = saved[i]
            if t is not None and t._vc[0] != versions[i]:
                raise RuntimeError(_modified_message(self, i, t, versions[i]))
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


def _modified_message(node, index, t, expected):
    producer = f", which is output {t._output_nr} of {t.grad_fn.name()}," if t.grad_fn is not None else ""
    return ("one of the variables needed for gradient computation has been modified by an inplace operation: "
            f"[{t.data.dtype} tensor of shape {list(t.data.shape)}]{producer} is at version {t._vc[0]}; "
            f"expected version {expected} instead. Hint: it is saved tensor {index} of {node.name()}; "
            "clone it before modifying it in place, or save a copy.")


class Node(FunctionCtx):
    """A node of the backward graph. ``_next`` holds one edge per forward argument: ``(node,
    output_nr)``, or NO_EDGE / NON_TENSOR where no gradient flows. A gradient flowing along an edge
    must match ``node._output_meta[output_nr]``, the shape and dtype of the tensor it is for."""

    _next = ()
    _forward_cls = None  # the Function class whose backward this node runs (None: a legacy instance)
    _retained = None  # {output_nr: [hooks, tensor that retains its grad or None]}
    _n_outputs = 1
    _output_meta = ()  # per output: (shape, dtype), or None for a non-tensor output
    _grad_fixups = None  # [(input index, returned shape, input shape)]: broadcast gradients torch sums silently

    def _slot(self, output_nr):
        """``[hooks, retaining tensor or None]`` for one output, made on first use."""
        if self._retained is None:
            self._retained = {}
        slot = self._retained.get(output_nr)
        if slot is None:
            slot = self._retained[output_nr] = [[], None]
        return slot

    @property
    def next_functions(self):
        return tuple(NO_EDGE if e[0] is None else e for e in self._next)

    def __repr__(self):
        return f"<{self.name()} object at {hex(id(self))}>"


class AccumulateGrad(Node):
    """The node behind a leaf tensor: the engine adds incoming gradients into ``leaf.grad``."""

    def __init__(self, leaf):
        self.variable = leaf

    @property
    def _output_meta(self):
        data = self.variable.data
        return ((data.shape, data.dtype),)


class BackwardNode(Node):
    """Base of ``<Name>Backward``: runs the Function's backward with this node as ``ctx``."""

    def _backward(self, grads):
        return self._forward_cls.backward(self, *grads)


class Function(Node):
    """Subclass it with ``forward(ctx, *args)`` and ``backward(ctx, *grad_outputs)`` as staticmethods
    (or classmethods, or ``forward(*args)`` plus ``setup_context(ctx, inputs, output)``), then call
    ``YourFunction.apply(...)``."""

    _legacy = False
    _uses_setup_context = False
    _plain = True  # forward(ctx, *args): neither legacy nor setup_context style
    _signature = None

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        cls._backward_cls = type(cls.__name__ + "Backward", (BackwardNode,),
                                 {"_forward_cls": cls, "__module__": cls.__module__})
        cls._legacy = inspect.isfunction(inspect.getattr_static(cls, "forward"))
        cls._uses_setup_context = inspect.getattr_static(cls, "setup_context") is not _BASE_SETUP_CONTEXT
        cls._plain = not (cls._legacy or cls._uses_setup_context)
        cls._signature = None
        backward = inspect.getattr_static(cls, "backward")
        vjp = inspect.getattr_static(cls, "vjp")
        if backward is _BASE_BACKWARD and vjp is not _BASE_VJP:
            cls.backward = vjp  # torch accepts either name; the engine calls ``backward``

    def __init__(self, *args, **kwargs):
        if not type(self)._legacy:
            warnings.warn(f"{type(self).__name__} should not be instantiated: its methods are static, call "
                          f"{type(self).__name__}.apply(...) on the class itself.", DeprecationWarning, stacklevel=2)

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

    @staticmethod
    def vjp(ctx, *grad_outputs):
        return type(ctx)._forward_cls.backward(ctx, *grad_outputs)

    @classmethod
    def apply(cls, *args, **kwargs):
        if cls._plain and not kwargs:
            ctx = cls._backward_cls()
            if _state.enabled:
                return _apply(cls, ctx, args, kwargs)
            # grad mode off (e.g. the ops inside a backward): no bookkeeping at all, inlined for speed
            ctx.needs_input_grad = _NO_GRADS[len(args)] if len(args) < len(_NO_GRADS) else (False,) * len(args)
            outputs = cls.forward(ctx, *args)
            for t in ctx._dirty:
                t._vc[0] += 1
            return outputs
        if cls._legacy:
            return cls()(*args, **kwargs)
        args, kwargs = _bind(cls, args, kwargs)
        return _apply(cls, cls._backward_cls(), args, kwargs)

    def __call__(self, *args, **kwargs):
        cls = type(self)
        if not cls._legacy:
            raise RuntimeError("Legacy autograd function with non-static forward method is deprecated. "
                               "Please use new-style autograd function with static forward method. "
                               f"(Call {cls.__name__}.apply(...) instead of {cls.__name__}()(...))")
        warnings.warn(_legacy_hint(cls), DeprecationWarning, stacklevel=2)
        state = self.__dict__
        if "_legacy_snapshot" in state:
            # old torch clobbered the first call's saved tensors here; a fresh node keeps both graphs right
            node = object.__new__(cls)
            node.__dict__.update(copy.copy(state["_legacy_snapshot"]))
        else:
            state["_legacy_snapshot"] = dict(state)
            node = self
        return _apply(cls, node, args, kwargs)

    def _backward(self, grads):  # a legacy Function instance is its own graph node
        return self.backward(*grads)

    __repr__ = object.__repr__  # old torch printed a legacy grad_fn as <__main__.F object at 0x...>


_BASE_SETUP_CONTEXT = Function.__dict__["setup_context"]
_BASE_BACKWARD = Function.__dict__["backward"]
_BASE_VJP = Function.__dict__["vjp"]


def _bind(cls, args, kwargs):
    """torch binds keyword arguments to forward's parameters, so a keyword argument is an input like
    any other (backward returns a gradient slot for it); keyword-only parameters stay keywords. With
    setup_context, defaults are filled in too, so ``inputs`` is complete."""
    sig = cls._signature
    if sig is None:
        sig = cls._signature = inspect.signature(cls.forward)
    takes_ctx = not cls._uses_setup_context
    bound = sig.bind(None, *args, **kwargs) if takes_ctx else sig.bind(*args, **kwargs)
    if cls._uses_setup_context:
        bound.apply_defaults()
    args = bound.args[1:] if takes_ctx else bound.args
    return args, bound.kwargs


def _legacy_hint(cls):
    return (f"{cls.__name__} uses the legacy autograd.Function style (instance methods forward(self, ...)/"
            f"backward(self, ...), called as {cls.__name__}()(...)), which current PyTorch refuses. Use:\n"
            f"    class {cls.__name__}(Function):\n"
            f"        @staticmethod\n"
            f"        def forward(ctx, ...): ...  # ctx.save_for_backward(...)\n"
            f"        @staticmethod\n"
            f"        def backward(ctx, grad_output): ...  # ctx.saved_tensors\n"
            f"    y = {cls.__name__}.apply(...)")


def _apply(cls, ctx, args, kwargs):
    """Run forward with grad mode off, then, if any input requires grad, make ``ctx`` the grad_fn
    of the outputs. This is the hot path of every op (built-in ones included), hence the inlining."""
    if not _state.enabled:
        ctx.needs_input_grad = _NO_GRADS[len(args)] if len(args) < len(_NO_GRADS) else (False,) * len(args)
        outputs = cls.forward(ctx, *args) if cls._plain and not kwargs else _call_forward(cls, ctx, args, kwargs)
        for t in ctx._dirty:
            t._vc[0] += 1
        return outputs

    # One pass over the arguments: which need a gradient, and the edge each gradient flows into
    # (taken before forward, which may mark an input dirty and make it this node's own output).
    # Plain loops: faster than comprehensions on Python 3.11.
    needs = []
    edges = []
    tracked = False
    for a in args:
        if isinstance(a, Tensor):
            if a.requires_grad or (a._base is not None and _stale_view_needs_grad(a)):
                tracked = True
                needs.append(True)
                fn = a.grad_fn
                edges.append((fn, a._output_nr) if fn is not None and a._base is None else _edge(a))
            else:
                needs.append(False)
                edges.append(NO_EDGE)
        else:
            needs.append(False)
            edges.append(NON_TENSOR)
    ctx.needs_input_grad = needs = tuple(needs)
    _state.enabled = False
    try:
        outputs = cls.forward(ctx, *args) if cls._plain and not kwargs else _call_forward(cls, ctx, args, kwargs)
    finally:
        _state.enabled = True
    if not tracked:
        for t in ctx._dirty:
            t._vc[0] += 1
        return outputs

    ctx._next = tuple(edges)
    if type(outputs) is tuple:
        result = tuple([_attach(ctx, i, out, args) for i, out in enumerate(outputs)])
        ctx._n_outputs = len(result)
        ctx._output_meta = tuple([(o.data.shape, o.data.dtype) if isinstance(o, Tensor) else None for o in result])
    elif (type(outputs) is Tensor and outputs.grad_fn is None and not outputs.requires_grad
          and outputs._base is None and not ctx._dirty and not ctx._non_differentiable
          and outputs.data.dtype.kind in "fcO" and not _contains(args, outputs)):
        # the common case, inlined: one fresh floating-point tensor made by forward
        outputs.grad_fn = ctx
        outputs.requires_grad = True
        result = outputs
        ctx._output_meta = ((outputs.data.shape, outputs.data.dtype),)
    else:
        result = _attach(ctx, 0, outputs, args)
        ctx._output_meta = ((result.data.shape, result.data.dtype),) if isinstance(result, Tensor) else (None,)
    saved = ctx._to_save
    if saved:
        versions = []
        for t in saved:
            versions.append(None if t is None else t._vc[0])
        ctx._saved_versions = versions
    return result


def _attach(ctx, i, out, args):
    """Make ``ctx`` the grad_fn of output ``i`` (unless it is non-differentiable) and return it."""
    if not isinstance(out, Tensor):
        return out
    dirty = ctx._dirty
    if dirty and _contains(dirty, out):
        if out.requires_grad and out.grad_fn is None:
            raise RuntimeError("a leaf Variable that requires grad has been used in an in-place operation.")
        out._vc[0] += 1
    elif out.grad_fn is not None or out.requires_grad or _contains(args, out):
        out = out._alias()  # an input returned as is: a new tensor gets the grad_fn, the input stays put
    if out.data.dtype.kind not in "fcO" or (ctx._non_differentiable and _contains(ctx._non_differentiable, out)):
        return out
    if out.grad_fn is None and out._output_nr == i:  # the common case: a fresh tensor made by forward
        out.grad_fn = ctx
        out.requires_grad = True
    else:
        out._rebase(ctx, i)
    if out._base is not None:
        out._view_version = out._vc[0]
        if not type(ctx).__module__.startswith("gradcli.autograd"):
            # a user Function's view: torch forbids in-place on it, since the view+in-place logic
            # (CopySlices, re-reading the view from its base) would bypass the custom backward
            out._custom_view = (i, ctx.name())
    return out


def _stale_view_needs_grad(view):
    """A view that does not require grad, whose base gained a graph through an in-place op."""
    return view._view_version != view._vc[0] and view._base.requires_grad


def _call_forward(cls, ctx, args, kwargs):
    if cls._plain:
        return cls.forward(ctx, *args, **kwargs)
    if cls._legacy:
        return ctx.forward(*args, **kwargs)
    outputs = cls.forward(*args, **kwargs)  # setup_context style
    cls.setup_context(ctx, args, outputs)
    return outputs


def _contains(items, obj):
    for item in items:
        if item is obj:
            return True
    return False


def _edge(t):
    """The (node, output_nr) a gradient for ``t`` flows into: its grad_fn, or its leaf accumulator."""
    if t._base is not None and t._view_version != t._vc[0]:
        from gradcli.autograd.inplace import refresh_view
        refresh_view(t)  # the storage changed under this view since its grad_fn was made
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
        if not _state.enabled or not any(isinstance(g, Tensor) and g.requires_grad for g in grad_outputs):
            return grads
        deps = [g for g in grad_outputs if isinstance(g, Tensor) and g.requires_grad]
        single = not isinstance(grads, tuple)
        wrapped = tuple(_DelayedError.apply(g, *deps) if isinstance(g, Tensor) else g
                        for g in ((grads,) if single else grads))
        return wrapped[0] if single else wrapped

    return wrapper


class _DelayedError(Function):
    """Carries a once_differentiable gradient; differentiating it again raises."""

    @staticmethod
    def forward(ctx, g, *deps):
        return Tensor(g.data)

    @staticmethod
    def backward(ctx, grad):
        raise RuntimeError("trying to differentiate twice a function that was marked with @once_differentiable")
