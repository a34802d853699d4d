"""Tensor: a numpy array plus the autograd bookkeeping (requires_grad, grad, grad_fn, version).

Every differentiable operation is a Function in ``ops/``; the methods here only forward to them.
"""
import numpy as np

from gradcli.autograd import grad_mode, printing

DEFAULT_DTYPE = np.dtype(np.float64)  # a gradient checker needs float64; torch defaults to float32

# Comparisons of symbolic tensors (numpy object arrays of SymPy expressions): filled by
# gradcli.symbolic when it is imported; numeric code never looks at it.
SYMBOLIC_COMPARE = {}


class Tensor:
    # The hot fields are slots; rarely-set state lives in the instance __dict__ (created on first
    # write) and reads the class-level defaults below until then, which keeps construction cheap.
    __slots__ = ("data", "requires_grad", "grad_fn", "_vc", "__dict__", "__weakref__")
    __array_priority__ = 1000  # ndarray + Tensor defers to Tensor.__radd__

    grad = None
    _output_nr = 0  # which output of grad_fn this tensor is
    _retains_grad = False
    _accumulator = None  # a leaf's AccumulateGrad node, made on first use
    _hooks = None  # a leaf's gradient hooks (a non-leaf's live on its grad_fn, per output)
    _base = None  # for a view made by a shape op: the tensor that owns the storage
    _view_version = 0  # for a view: the storage version its grad_fn describes
    _custom_view = None  # (output_nr, node name) when a user Function returned a view: no in-place

    def __init__(self, data, requires_grad=False):
        self.data = data if type(data) is np.ndarray else np.asarray(data)
        self.requires_grad = requires_grad
        self.grad_fn = None
        self._vc = [0]  # version counter: one list shared by every tensor over the same storage

    # ----- metadata -------------------------------------------------------------------------
    @property
    def shape(self):
        return self.data.shape

    @property
    def dtype(self):
        return self.data.dtype

    @property
    def ndim(self):
        return self.data.ndim

    @property
    def is_leaf(self):
        return self.grad_fn is None

    def is_floating_point(self):
        return bool(np.issubdtype(self.data.dtype, np.floating))

    def is_complex(self):
        return bool(np.issubdtype(self.data.dtype, np.complexfloating))

    @property
    def _version(self):
        return self._vc[0]

    @property
    def device(self):
        return "cpu"

    def size(self, dim=None):
        return self.data.shape if dim is None else self.data.shape[dim]

    def dim(self):
        return self.data.ndim

    def numel(self):
        return self.data.size

    def __len__(self):
        if self.data.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self.data.shape[0]

    # ----- conversion -----------------------------------------------------------------------
    def item(self):
        if self.data.size != 1:
            raise RuntimeError(f"a Tensor with {self.data.size} elements cannot be converted to Scalar")
        return self.data.reshape(()).item()

    def tolist(self):
        return self.data.tolist()

    def numpy(self):
        if self.requires_grad and grad_mode.is_grad_enabled():
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. "
                               "Use tensor.detach().numpy() instead.")
        return self.data

    def __array__(self, dtype=None, copy=None):
        return self.data if dtype is None else self.data.astype(dtype)

    def __float__(self):
        return float(self.item())

    def __int__(self):
        return int(self.item())

    def __bool__(self):
        if self.data.size != 1:
            raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
        value = self.data.reshape(()).item()
        if self.data.dtype.kind == "O" and getattr(value, "free_symbols", None):
            # symbolic tracing: Python would call any SymPy expression true; refuse instead
            raise TypeError(f"cannot determine truth value of the symbolic value {value}")
        return bool(value)

    def __index__(self):
        return self.data.__index__()

    def __hash__(self):
        return id(self)

    def detach(self):
        out = Tensor(self.data)
        out._vc = self._vc  # shares storage, hence the version counter (but is no autograd view)
        return out

    def detach_(self):
        self.grad_fn = None
        self.requires_grad = False
        return self

    def clone(self):
        return _ops.Clone.apply(self)

    def contiguous(self):
        return self

    def cpu(self):
        return self

    def to(self, *args, **kwargs):
        dtype = kwargs.get("dtype")
        for a in args:
            if isinstance(a, np.dtype) or (isinstance(a, type) and issubclass(a, np.generic)):
                dtype = a
        return self if dtype is None or np.dtype(dtype) == self.dtype else _ops.Cast.apply(self, np.dtype(dtype))

    def type(self, dtype=None):
        return str(self.dtype) if dtype is None else self.to(dtype)

    def double(self):
        return self.to(np.float64)

    def float(self):
        return self.to(np.float32)

    # integer and bool casts (index tensors, masks): no gradient flows through them, as in torch
    def long(self):
        return self.to(np.int64)

    def int(self):  # noqa: A003 -- torch's name; int(t) still goes through __int__
        return self.to(np.int32)

    def short(self):
        return self.to(np.int16)

    def char(self):
        return self.to(np.int8)

    def byte(self):
        return self.to(np.uint8)

    def bool(self):  # noqa: A003 -- torch's name; bool(t) still goes through __bool__
        return self.to(np.bool_)

    # ----- autograd -------------------------------------------------------------------------
    def requires_grad_(self, requires_grad=True):
        if not self.is_leaf and not requires_grad:
            raise RuntimeError("you can only change requires_grad flags of leaf variables. If you want to "
                               "use a computed variable in a subgraph that doesn't require differentiation "
                               "use var_no_grad = var.detach().")
        if requires_grad and self.data.dtype.kind not in "fcO":
            raise RuntimeError("only Tensors of floating point dtype can require gradients")
        self.requires_grad = requires_grad
        return self

    def retain_grad(self):
        """Keep this non-leaf's gradient in ``.grad`` during backward (a leaf always does)."""
        if not self.requires_grad:
            raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
        if self.grad_fn is not None and not self._retains_grad:
            self._retains_grad = True
            self.grad_fn._slot(self._output_nr)[1] = self

    @property
    def retains_grad(self):
        return self._retains_grad

    def register_hook(self, hook):
        """``hook(grad) -> Tensor or None`` runs when this tensor's gradient is computed; a returned
        tensor replaces the gradient. Returns a handle whose ``remove()`` unregisters the hook."""
        if not self.requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        if self.grad_fn is None:
            if self._hooks is None:
                self._hooks = []
            hooks = self._hooks
        else:
            # a non-leaf's hook belongs to the current version: after an in-place op it still sees
            # the gradient of the value it was registered on, as in torch
            hooks = self.grad_fn._slot(self._output_nr)[0]
        hooks.append(hook)
        return _HookHandle(hooks, hook)

    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
        from gradcli.autograd.engine import backward
        backward(self, gradient, retain_graph, create_graph, inputs=inputs)

    def _share_storage(self, source):
        """Make this tensor a view of ``source``: one version counter, and the base remembered so an
        in-place op on either side keeps the graph right (see inplace.py)."""
        self._vc = source._vc
        self._base = source if source._base is None else source._base
        self._view_version = source._vc[0]
        if source._custom_view is not None:
            self._custom_view = source._custom_view
        return self

    def _alias(self):
        """A new tensor over the same storage (torch's ``view_as(self)``)."""
        return Tensor(self.data)._share_storage(self)

    def _rebase(self, node, output_nr):
        """Make ``node`` this tensor's grad_fn (an in-place op wrote a new value); retain_grad()
        follows the newest version, as in torch."""
        if self._retains_grad and self.grad_fn is not None:
            self.grad_fn._slot(self._output_nr)[1] = None
            node._slot(output_nr)[1] = self
        self.grad_fn = node
        self._output_nr = output_nr
        self.requires_grad = True

    # ----- in-place: every op writes into self's storage and bumps the version (inplace.py) -----
    def add_(self, other, alpha=1):
        return _inplace.apply(self, lambda a, b: a + (b if alpha == 1 else b * alpha), other)

    def sub_(self, other, alpha=1):
        return _inplace.apply(self, lambda a, b: a - (b if alpha == 1 else b * alpha), other)

    def mul_(self, other):
        return _inplace.apply(self, lambda a, b: a * b, other)

    def div_(self, other):
        return _inplace.apply(self, lambda a, b: a / b, other)

    def pow_(self, other):
        return _inplace.apply(self, lambda a, b: a ** b, other)

    def clamp_(self, min=None, max=None):
        return _inplace.apply(self, lambda a: a.clamp(min, max))

    def neg_(self):
        return _inplace.apply(self, lambda a: -a)

    def exp_(self):
        return _inplace.apply(self, lambda a: a.exp())

    def sqrt_(self):
        return _inplace.apply(self, lambda a: a.sqrt())

    def relu_(self):
        return _inplace.apply(self, lambda a: a.relu())

    def zero_(self):
        return self.fill_(0)

    def fill_(self, value):
        v = value.data if isinstance(value, Tensor) else value
        return _inplace.apply(self, lambda a: _ops.Fill.apply(a, v))

    def copy_(self, src):
        return _inplace.apply(self, lambda a, s: _ops.CopyInto.apply(a, s), src)

    def uniform_(self, a=0.0, b=1.0):
        from gradcli.autograd import creation
        return _inplace.apply(self, lambda t: _ops.Fill.apply(t, creation._rng().uniform(a, b, t.shape)))

    def normal_(self, mean=0.0, std=1.0):
        from gradcli.autograd import creation
        return _inplace.apply(self, lambda t: _ops.Fill.apply(t, creation._rng().normal(mean, std, t.shape)))

    __iadd__ = add_
    __isub__ = sub_
    __imul__ = mul_
    __itruediv__ = div_
    __ipow__ = pow_

    def __setitem__(self, index, value):
        _inplace.apply(self, lambda a, v: _ops.SetItem.apply(a, _ops.unwrap_index(index), v), value)

    def __getitem__(self, index):
        return _ops.GetItem.apply(self, _ops.unwrap_index(index))

    # ----- representation -------------------------------------------------------------------
    def __repr__(self):
        return printing.tensor_repr(self)  # torch's layout, honouring set_printoptions

    def __format__(self, spec):
        # as torch: a 0-d tensor formats as its number (f"{g}" gives "2.5", the seed's output)
        if self.data.ndim == 0:
            return format(self.data.item(), spec)
        if spec:
            raise TypeError("unsupported format string passed to Tensor.__format__")
        return repr(self)

    # ----- arithmetic: every operator is a Function in ops/ (its bound ``apply``, see the end) --
    def __add__(self, other):
        return _Add(self, other)

    def __radd__(self, other):
        return _Add(self, other)

    def __sub__(self, other):
        return _Sub(self, other)

    def __rsub__(self, other):
        return _RSub(self, other)

    def __mul__(self, other):
        return _Mul(self, other)

    def __rmul__(self, other):
        return _Mul(self, other)

    def __truediv__(self, other):
        return _Div(self, other)

    def __rtruediv__(self, other):
        return _RDiv(self, other)

    def __pow__(self, other):
        return _Pow(self, other)

    def __rpow__(self, other):
        return _RPow(self, other)

    def __matmul__(self, other):
        return _ops.matmul(self, other)

    def __rmatmul__(self, other):
        return _ops.matmul(_ops.as_tensor_like(other, self), self)

    def __neg__(self):
        return _Neg(self)

    def __pos__(self):
        return self

    def __abs__(self):
        return _Abs(self)

    def _compare(self, other, np_op):
        b = other.data if isinstance(other, Tensor) else other
        if self.data.dtype.kind == "O" or (type(b) is np.ndarray and b.dtype.kind == "O"):
            # symbolic tracing: a comparison of expressions is an indicator expression (gradcli.symbolic)
            return Tensor(SYMBOLIC_COMPARE["compare"](np_op, self.data, b))
        return Tensor(np_op(self.data, b))

    def __lt__(self, other):
        return self._compare(other, np.less)

    def __le__(self, other):
        return self._compare(other, np.less_equal)

    def __gt__(self, other):
        return self._compare(other, np.greater)

    def __ge__(self, other):
        return self._compare(other, np.greater_equal)

    def __eq__(self, other):
        return self._compare(other, np.equal)

    def __ne__(self, other):
        return self._compare(other, np.not_equal)

    def __and__(self, other):
        return self._compare(other, np.logical_and)

    def __or__(self, other):
        return self._compare(other, np.logical_or)

    def __invert__(self):
        if self.data.dtype.kind == "O":
            return Tensor(SYMBOLIC_COMPARE["compare"](np.logical_not, self.data))
        return Tensor(np.logical_not(self.data))

    @property
    def T(self):
        return _ops.permute(self, tuple(reversed(range(self.data.ndim))))

    @property
    def mT(self):
        return _ops.transpose(self, -2, -1)


class _HookHandle:
    def __init__(self, hooks, hook):
        self._hooks, self._hook = hooks, hook

    def remove(self):
        for i, h in enumerate(self._hooks):
            if h is self._hook:
                del self._hooks[i]
                return


# Late imports: ops and inplace need Tensor and Function; methods above reach them through these names.
from gradcli.autograd import inplace as _inplace  # noqa: E402
from gradcli.autograd import ops as _ops  # noqa: E402
_ops.install_methods(Tensor)
# The operators' Functions, bound once: ``x * y`` is the hottest path of every program.
_Add, _Sub, _RSub, _Mul = _ops.Add.apply, _ops.Sub.apply, _ops.RSub.apply, _ops.Mul.apply
_Div, _RDiv, _Pow, _RPow = _ops.Div.apply, _ops.RDiv.apply, _ops.Pow.apply, _ops.RPow.apply
_Neg, _Abs = _ops.Neg.apply, _ops.Abs.apply
