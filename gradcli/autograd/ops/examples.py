"""What ``gradcli check gradcli/autograd`` needs to check each built-in op on its own.

An op's forward takes what the engine hands it, and some of it cannot be guessed from the source:
a Python constant (``RSub``'s ``other``: a tensor there would need a gradient the op never gives),
an index array, a shape, dims, a variadic list of tensors, a parsed einsum equation, inputs that
keep away from a jump (``remainder``'s a/b near an integer). Each such op gets the public
mechanism users have, an ``example_inputs()`` returning forward's arguments (a list: one input set
each, so that the optional arguments — a reduction's ``dim``/``keepdim`` — are exercised too).

Plain engine code: tensors are drawn from gradcli's global generator, which ``gradcli check`` seeds
from ``--seed`` and the op's name before ``example_inputs()`` runs. They are attached to the classes
when ``gradcli.autograd`` is imported (``attach``), so the op modules stay about their maths. A new
op either passes ``gradcli check`` on the inputs gradcli infers or gets an entry in ``_EXAMPLES``
(tests/test_dogfood.py fails until it does).
"""
import numpy as np

from gradcli.autograd.creation import _rng
from gradcli.autograd.ops import activation, arithmetic, elementwise, indexing, join, linalg, linalg_more
from gradcli.autograd.ops import pointwise, reduce, shape, shaping
from gradcli.autograd.tensor import Tensor


# ---- draws ------------------------------------------------------------------------------------------
def _floats(*size, low=-2.0, high=2.0):
    return Tensor(_rng().uniform(low, high, size))


def _nonzero(*size, low=0.5, high=2.0):
    """Magnitudes in [low, high), either sign: a divisor, a base kept away from 0."""
    return Tensor(_rng().uniform(low, high, size) * _rng().choice([-1.0, 1.0], size))


def _ints(size, high):
    return Tensor(_rng().integers(0, high, size).astype(np.int64))


def _mask(*size):
    m = _rng().random(size) < 0.5
    m.flat[0], m.flat[-1] = True, False  # both branches, whatever the draw
    return Tensor(m)


def _off_jumps(*size, period=1.0, offset=0.0):
    """Floats whose distance to the nearest ``offset + k·period`` is at least 0.1·period: a
    floor-like op's jumps are far from every step the numerical derivative takes."""
    k = _rng().integers(-2, 2, size)
    return Tensor(period * (k + offset + _rng().uniform(0.1, 0.9, size)))


# ---- binary arithmetic: broadcasting, and a Python number on one side ------------------------------
def _add_like():
    return [(_floats(3, 4), _floats(3, 4)), (_floats(3, 4), _floats(4)), (_floats(3, 1), _floats(1, 4)),
            (_floats(3, 4), 2.5), (1.5, _floats(3, 4))]


def _div():
    return [(_floats(3, 4), _nonzero(3, 4)), (_floats(3, 4), _nonzero(4)), (_floats(3, 4), 2.5)]


def _pow():
    base = _floats(3, 4, low=0.1, high=2)
    return [(base, _floats(3, 4)), (base, _floats(4)), (_floats(3, 4), 2), (_floats(3, 4), 3), (_floats(3, 4), 1),
            (_floats(3, 4), 0), (base, 0.5), (base, -1.5)]


def _extreme_pair():  # maximum/minimum
    return [(_floats(3, 4), _floats(3, 4)), (_floats(3, 4), _floats(4))]


def _where():
    return [(_mask(3, 4), _floats(3, 4), _floats(3, 4)), (_mask(3, 4), _floats(4), _floats(3, 1)),
            (_mask(3, 4), 1.0, _floats(3, 4))]


def _lerp():  # |weight| < 0.5 and >= 0.5 take different formulas
    a, end = _floats(3, 4), _floats(3, 4)
    return [(a, end, _floats(3, 4, low=-1, high=1.5)), (a, end, 0.3), (a, end, 0.7), (a, _floats(4), _floats(3, 1))]


def _distance_root():  # (sum of p-th powers, p): cdist's root
    s = _floats(3, 4, low=0.1, high=2)
    return [(s, 2), (s, 3.0), (s, 1.5)]


# ---- arithmetic with a Python constant: the constant is a number, as the engine passes it --------
def _rsub():
    return [(_floats(3, 4), 2.5), (_floats(3, 4), -1)]


def _rdiv():
    return [(_nonzero(3, 4), 1.5), (_nonzero(3, 4), -2)]


def _rpow():
    return [(_floats(3, 4), 2.5), (_floats(3, 4), 0.5)]


def _fill():
    # zero_/fill_ pass a number, uniform_/normal_ an array of x's shape
    return [(_floats(3, 4), 1.5), (_floats(3, 4), _rng().uniform(-1, 1, (3, 4)))]


def _clamp():
    x = _floats(3, 4)
    return [(x, -0.5, 0.7), (x, None, 0.3), (x, -0.2, None),
            (x, _floats(3, 4, low=-2, high=0), _floats(4, low=0, high=2)),  # tensor bounds, lo < hi
            (x, _floats(3, 4), _floats(3, 4))]  # tensor bounds in any order (lo > hi: every element hi)


# ---- piecewise ops: inputs away from their jumps -------------------------------------------------
def _floor_like():
    return [(_off_jumps(3, 4),)]


def _round():
    return [(_off_jumps(3, 4, offset=0.5),), (_off_jumps(3, 4, period=0.1, offset=0.5), 1)]


def _remainder():
    # a = b·(q + f) with f in [0.1, 0.9): a/b stays 0.1 away from the integers, where a - b·floor(a/b)
    # jumps; b kept away from 0 (there the jumps crowd together)
    b = _nonzero(3, 4)
    return [(Tensor(b.data * _off_jumps(3, 4).data), b), (Tensor(b.data[0] * _off_jumps(3, 4).data), b[0])]


# ---- reductions: every dim form ---------------------------------------------------------------------
def _reduction():
    x = _floats(3, 4)
    return [(x,), (x, 1), (x, -1, True), (x, (0, 1)), (x, (0,), True)]


def _extreme():  # max/min take one dim, not a tuple
    x = _floats(3, 4)
    return [(x,), (x, 1), (x, -1, True), (x, 0)]


def _var():  # (x, dim, correction, keepdim)
    x = _floats(3, 4)
    return [(x,), (x, 1), (x, 0, 0, True), (x, (0, 1), 2)]


def _norm():  # (x, p, dim, keepdim)
    x = _nonzero(3, 4)  # |x| away from 0, where the 1-norm and p < 1 have a kink
    return [(x,), (x, 2, 1), (x, 1, 0, True), (x, 3.5, (0, 1)), (x, float("inf"), 1), (x, 0.5, -1)]


def _nan_to_num():
    # finite inputs only: at a NaN/Inf element the exact reference (traced on finite symbols) says 1
    # where the op's 0 is right, and the numerical derivative is no judge there either
    return [(_floats(3, 4),), (_floats(3, 4), 0.5, 3.0, -3.0)]


# ---- indexing: integer indices, masks, slices ----------------------------------------------------
def _get_item():
    x = _floats(3, 4)
    return [(x, (slice(0, 2), 1)), (x, (Ellipsis, slice(1, None, 2))), (x, np.array([0, 2, 0])),
            (x, (np.array([0, 2, 2]), np.array([1, 3, 1]))), (x, _mask(3, 4).data)]


def _set_item():
    x = _floats(3, 4)
    return [(x, (slice(1, 3), slice(None)), _floats(2, 4)), (x, np.array([0, 2]), _floats(4)),
            (x, _mask(3, 4).data, 1.5)]


def _index_backward():  # (g, shape, index): scatter-add of a gradient
    return [(_floats(2, 3), (3, 4), (slice(0, 2), slice(1, 4))),
            (_floats(4), (3, 4), (np.array([0, 2, 0, 0]), np.array([1, 1, 1, 3])))]  # repeats add up


def _scatter():
    # scatter replaces: one source per position (a permutation of the rows in each column)
    index = Tensor(np.stack([_rng().permutation(3)[:2] for _ in range(4)], axis=1).astype(np.int64))
    return [(_floats(3, 4), 0, index, _floats(2, 4)), (_floats(3, 4), 0, index, 2.5)]


def _scatter_add():
    return [(_floats(3, 4), 0, _ints((3, 4), 3), _floats(3, 4)), (_floats(3, 4), 1, _ints((3, 2), 4), _floats(3, 3))]


def _index_add():
    return [(_floats(3, 4), 1, Tensor(np.array([0, 2, 0])), _floats(3, 3)),
            (_floats(3, 4), 0, Tensor(np.array([1, 1])), _floats(2, 4))]


def _index_fill():
    index = Tensor(np.array([0, 2]))
    return [(_floats(3, 4), 1, index, 2.5), (_floats(3, 4), 0, index, _floats())]


def _masked_scatter():
    return [(_floats(3, 4), _mask(3, 4), _floats(3, 4)), (_floats(4), _mask(3, 4), _floats(14))]


def _index_put_add():
    return [(_floats(3, 4), (np.array([0, 2, 0]), np.array([1, 1, 1])), _floats(3)),
            (_floats(3, 4), (np.array([1, 1]),), _floats(4))]


def _gather():
    return [(_floats(3, 4), 1, _ints((3, 2), 4)), (_floats(3, 4), 0, _ints((4, 4), 3))]


# ---- dims, sizes, shapes, dtypes: Python values, as the engine passes them ----------------------
def _along_dim():  # softmax, log_softmax, cumsum, cumprod, unbind
    return [(_floats(3, 4), 1), (_floats(3, 4), 0), (_floats(2, 3, 4), -1)]


def _cumprod():
    x = _floats(3, 4).data
    x[1, 1] = 0.0  # a zero takes the other gradient formula (no division by x)
    return _along_dim() + [(Tensor(x), 1), (Tensor(x), 0)]


def _split():  # (x, sizes, dim)
    return [(_floats(3, 4), (1, 3), 1), (_floats(3, 4), (2, 1), 0), (_floats(3, 4), (2, 2), -1)]


def _reshape():
    return [(_floats(3, 4), (4, 3)), (_floats(3, 4), (2, -1)), (_floats(3, 4), (12,)), (_floats(1), ())]


def _expand():
    return [(_floats(3, 1), (3, 4)), (_floats(4), (2, 3, 4)), (_floats(3, 1), (-1, 4)), (_floats(), (2, 2))]


def _cast():
    return [(_floats(3, 4), np.float64), (Tensor(_rng().uniform(-2, 2, (3, 4)).astype(np.float32)), np.float64)]


def _copy_into():
    return [(_floats(3, 4), _floats(3, 4)), (_floats(3, 4), _floats(4)), (_floats(3, 4), 2.5)]


# ---- linear algebra: shapes that fit --------------------------------------------------------------
def _matmul():  # matrices and batches (``matmul`` turns 1-d operands into matrices before the op)
    return [(_floats(3, 4), _floats(4, 5)), (_floats(2, 3, 4), _floats(4, 5)), (_floats(2, 1, 3, 4), _floats(3, 4, 2))]


def _mm():
    return [(_floats(3, 4), _floats(4, 5))]


def _bmm():
    return [(_floats(2, 3, 4), _floats(2, 4, 5))]


def _dot():
    return [(_floats(4), _floats(4))]


def _diag():  # (x, offset): a vector to a matrix and back
    return [(_floats(4), 0), (_floats(3), 1), (_floats(3), -2), (_floats(3, 4), 0), (_floats(3, 4), -1),
            (_floats(3, 4), 2)]


def _trace():
    return [(_floats(3, 4),), (_floats(4, 4),)]


# ---- joins and shapes -----------------------------------------------------------------------------
def _cat():
    return [(1, _floats(3, 2), _floats(3, 4)), (0, _floats(1, 4), _floats(2, 4), _floats(3, 4))]


def _stack():
    return [(0, _floats(3, 4), _floats(3, 4)), (-1, _floats(3), _floats(3), _floats(3))]


def _repeat():
    return [(_floats(2, 3), (2, 1)), (_floats(2, 3), (2, 1, 3))]


def _permute():
    return [(_floats(3, 4), (1, 0)), (_floats(2, 3, 4), (2, 0, 1))]


def _roll():
    return [(_floats(3, 4), (1,), (0,)), (_floats(3, 4), (2, -1), (0, 1)), (_floats(3, 4), (5,), None)]


def _diagonal():  # (x, offset, dim1, dim2)
    return [(_floats(3, 4), 1, 0, 1), (_floats(2, 3, 4), -1, 2, 1)]


def _diagonal_scatter():  # (x, shape, offset, dim1, dim2)
    return [(_floats(3), (3, 4), 1, 0, 1), (_floats(2, 3), (2, 3, 4), 0, 1, 2)]


def _outer():
    return [(_floats(3), _floats(4))]


def _einsum():  # (parsed equation: input subscripts, output subscripts, sizes), *operands
    return [((("ij", "jk"), "ik", {"i": 3, "j": 4, "k": 5}), _floats(3, 4), _floats(4, 5)),
            ((("bij", "bjk"), "bi", {"b": 2, "i": 3, "j": 4, "k": 2}), _floats(2, 3, 4), _floats(2, 4, 2)),
            ((("ii",), "i", {"i": 3}), _floats(3, 3))]


_EXAMPLES = {
    arithmetic.Add: _add_like, arithmetic.Sub: _add_like, arithmetic.Mul: _add_like, arithmetic.Div: _div,
    arithmetic.Pow: _pow, elementwise.Maximum: _extreme_pair, elementwise.Minimum: _extreme_pair,
    elementwise.Where: _where, pointwise.Lerp: _lerp, linalg_more._DistanceRoot: _distance_root,
    activation.Softmax: _along_dim, activation.LogSoftmax: _along_dim, reduce.Cumsum: _along_dim,
    pointwise.Cumprod: _cumprod, join.Unbind: _along_dim, join.Split: _split, shape.Reshape: _reshape,
    shape.Expand: _expand, shape.Cast: _cast, shape.CopyInto: _copy_into,
    linalg.MatMul: _matmul, linalg.Mm: _mm, linalg.Bmm: _bmm, linalg.Dot: _dot, linalg.Diag: _diag,
    linalg.Trace: _trace,
    arithmetic.RSub: _rsub, arithmetic.RDiv: _rdiv, arithmetic.RPow: _rpow, shape.Fill: _fill,
    elementwise.Clamp: _clamp, elementwise.Floor: _floor_like, elementwise.Ceil: _floor_like,
    elementwise.Trunc: _floor_like, elementwise.Round: _round,
    pointwise.Remainder: _remainder, pointwise.Fmod: _remainder,
    reduce.Sum: _reduction, reduce.Mean: _reduction, reduce.Prod: _reduction, reduce.Amax: _reduction,
    reduce.Amin: _reduction, reduce.Max: _extreme, reduce.Min: _extreme, reduce.LogSumExp: _reduction,
    reduce.Var: _var, reduce.Std: _var, reduce.Norm: _norm, pointwise.NanToNum: _nan_to_num,
    shape.GetItem: _get_item, shape.SetItem: _set_item, shape.IndexBackward: _index_backward,
    indexing.Scatter: _scatter, indexing.ScatterAdd: _scatter_add, indexing.IndexAdd: _index_add,
    indexing.IndexFill: _index_fill, indexing.MaskedScatter: _masked_scatter,
    indexing.IndexPutAdd: _index_put_add, join.Gather: _gather,
    join.Cat: _cat, join.Stack: _stack, join.Repeat: _repeat, shape.Permute: _permute, shaping.Roll: _roll,
    shaping.Diagonal: _diagonal, shaping.DiagonalScatter: _diagonal_scatter,
    linalg.Outer: _outer, linalg_more.Einsum: _einsum,
}


def attach():
    """Give each op above its ``example_inputs`` (a staticmethod, as a user's Function has it)."""
    for cls, examples in _EXAMPLES.items():
        cls.example_inputs = staticmethod(examples)


attach()
