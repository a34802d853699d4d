"""torch's linear-algebra ops beyond linalg.py: mv, addmm, addmv, baddbmm, einsum, tensordot, kron,
cross, cdist. einsum is a Function whose backward is einsums (plus an expand for a label summed
over one operand only, and a diagonal scatter for a label repeated in one operand); tensordot is an
einsum; the others are compositions of existing ops."""
import builtins
import string
import warnings

import numpy as np

from gradcli.autograd.function import Function
from gradcli.autograd.grad_mode import no_grad
from gradcli.autograd.ops import register
from gradcli.autograd.ops._base import wrap_dim
from gradcli.autograd.ops.elementwise import Where, symbolic_unary
from gradcli.autograd.ops.linalg import bmm, matmul, mm
from gradcli.autograd.ops.shape import IndexBackward
from gradcli.autograd.tensor import Tensor


# ---- products with an added term ------------------------------------------------------------
def _with_input(input, product, beta, alpha, what):
    from gradcli.autograd.ops.shaping import broadcast_to
    shape, ishape = product.data.shape, input.data.shape
    with no_grad():
        broadcast_to(Tensor(np.empty(ishape)), shape)  # torch's error when input does not broadcast
    term = product if alpha == 1 else product * alpha
    if beta == 0:  # torch ignores input (its NaN and inf too); its gradient is 0
        return term + Where.apply(Tensor(np.zeros(ishape, dtype=bool)), input, 0.0)
    return term + (input if beta == 1 else input * beta)


def mv(mat, vec):
    if mat.data.ndim != 2 or vec.data.ndim != 1:
        raise RuntimeError(f"vector + matrix @ vector expected, got 1, {mat.data.ndim}, {vec.data.ndim}")
    if mat.data.shape[1] != vec.data.shape[0]:
        raise RuntimeError(f"size mismatch, got input ({mat.data.shape[0]}), mat ({mat.data.shape[0]}x"
                           f"{mat.data.shape[1]}), vec ({vec.data.shape[0]})")
    return matmul(mat, vec)


def addmv(input, mat, vec, *, beta=1, alpha=1):
    return _with_input(input, mv(mat, vec), beta, alpha, "addmv")


def addmm(input, mat1, mat2, *, beta=1, alpha=1):
    return _with_input(input, mm(mat1, mat2), beta, alpha, "addmm")


def baddbmm(input, batch1, batch2, *, beta=1, alpha=1):
    s1, s2 = batch1.data.shape, batch2.data.shape
    if len(s1) == 3 and len(s2) == 3 and (s2[0] != s1[0] or s2[1] != s1[2]):
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: [{s1[0]}, {s1[2]}] but "
                           f"got: [{s2[0]}, {s2[1]}].")
    return _with_input(input, bmm(batch1, batch2), beta, alpha, "baddbmm")


# ---- einsum ---------------------------------------------------------------------------------
_TORCH_DTYPE = {"float32": "Float", "float64": "Double", "int64": "Long", "int32": "Int", "float16": "Half",
                "bool": "Bool"}


def _parse(equation, shapes):
    """The equation with every ellipsis spelled out as letters: (input subscripts, output
    subscripts, size of each letter). Errors as torch words them."""
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) < len(shapes):
        raise RuntimeError("einsum(): more operands were provided than specified in the equation")
    if len(terms) > len(shapes):
        raise RuntimeError("einsum(): fewer operands were provided than specified in the equation")
    for term in terms + ([rhs] if arrow else []):
        rest = term.replace("...", "", 1)
        bad = [c for c in rest if not c.isalpha() or c not in string.ascii_letters]
        if bad:
            if "." in rest:
                raise RuntimeError("einsum(): found '.' for operand that is not part of any ellipsis")
            raise RuntimeError(f"einsum(): invalid subscript given at index {eq.index(bad[0])} in the equation "
                               f"string, subscripts must be in [a-zA-Z]")
    used = set(c for c in eq if c.isalpha())
    spare = [c for c in string.ascii_letters if c not in used]
    ell = []
    for k, (term, shape) in enumerate(zip(terms, shapes)):
        n = len(term.replace("...", ""))
        if "..." in term:
            if len(shape) < n:
                raise RuntimeError(f"einsum(): the number of subscripts in the equation ({n}) is more than the "
                                   f"number of dimensions ({len(shape)}) for operand {k}")
            ell.append(len(shape) - n)
        else:
            if len(shape) != n:
                raise RuntimeError(f"einsum(): the number of subscripts in the equation ({n}) does not match the "
                                   f"number of dimensions ({len(shape)}) for operand {k} and no ellipsis was given")
            ell.append(0)
    n_ell = builtins.max(ell, default=0)
    letters = "".join(spare[:n_ell])
    ins = [t.replace("...", letters[n_ell - e:]) for t, e in zip(terms, ell)]
    if arrow:
        out = rhs.replace("...", letters)
        for c in out:
            if out.count(c) > 1:
                raise RuntimeError(f"einsum(): output subscript {c} appears more than once in the output")
            if not builtins.any(c in t for t in ins):
                raise RuntimeError(f"einsum(): output subscript {c} does not appear in the equation for any "
                                   "input operand")
    else:  # implicit output: the ellipsis, then the letters seen once, in alphabetical (ASCII) order
        counts = {}
        for t in terms:
            for c in t.replace("...", ""):
                counts[c] = counts.get(c, 0) + 1
        out = letters + "".join(sorted(c for c, n in counts.items() if n == 1))
    sizes = {}
    for k, (t, shape) in enumerate(zip(ins, shapes)):
        for c in set(t):
            dims = [s for l, s in zip(t, shape) if l == c]
            if len(set(dims)) > 1:
                raise RuntimeError(f"einsum(): subscript {c} is repeated for operand {k} but the sizes don't match, "
                                   f"{dims[1]} != {dims[0]}")
        for c, s in zip(t, shape):
            seen = sizes.get(c)
            if seen is None or seen == 1:
                sizes[c] = s
            elif s != 1 and s != seen:
                raise RuntimeError(f"einsum(): subscript {c} has size {s} for operand {k} which does not broadcast "
                                   f"with previously seen size {seen}")
    return tuple(ins), out, sizes


def _unique(subs):
    return "".join(dict.fromkeys(subs))


class Einsum(Function):
    """``Einsum.apply((ins, out, sizes), *operands)`` with the equation already parsed (``_parse``).
    The gradient of operand k is the einsum of the gradient with the other operands onto k's letters."""

    @staticmethod
    def forward(ctx, spec, *operands):
        ins, out, sizes = spec
        arrays = []
        for t, x in zip(ins, operands):
            a = x.data
            full = tuple(sizes[c] for c in t)
            if a.shape != full:  # size-1 dims broadcast, as in torch
                a = np.broadcast_to(a, full)
            arrays.append(a)
        ctx.spec = spec
        ctx.save_for_backward(*operands)
        result = np.asarray(np.einsum(",".join(ins) + "->" + out, *arrays, optimize=len(arrays) > 1))
        if any(np.may_share_memory(result, a) for a in arrays):  # 'ii->i', 'ij->ji' give numpy views
            result = result.copy()
        return Tensor(result)

    @staticmethod
    def backward(ctx, g):
        ins, out, sizes = ctx.spec
        operands = ctx.saved_tensors
        grads = [None]
        for k, subs in enumerate(ins):
            if not ctx.needs_input_grad[k + 1]:
                grads.append(None)
                continue
            others = [(o, t) for j, (o, t) in enumerate(zip(operands, ins)) if j != k]
            labels = set(out).union(*[set(t) for _, t in others])
            uniq = _unique(subs)
            kept = "".join(c for c in uniq if c in labels)
            missing = "".join(c for c in uniq if c not in labels)
            grad = Einsum.apply(((out,) + tuple(t for _, t in others), kept, sizes), g, *[o for o, _ in others])
            if missing:  # a letter summed over this operand only: its gradient is constant along it
                grad = grad.reshape(*grad.data.shape, *([1] * len(missing)))
                grad = grad.expand(*[sizes[c] for c in kept + missing])
            order = kept + missing
            if order != uniq:
                grad = grad.permute(*[order.index(c) for c in uniq])
            if len(uniq) < len(subs):  # a repeated letter: the gradient sits on that diagonal
                grids = np.indices([sizes[c] for c in uniq], sparse=True)
                index = tuple(grids[uniq.index(c)] for c in subs)
                grad = IndexBackward.apply(grad, tuple(sizes[c] for c in subs), index)
            shape = operands[k].data.shape
            if grad.data.shape != shape:  # a size-1 dim that broadcast
                grad = grad.sum(dim=tuple(i for i, s in enumerate(shape) if s != grad.data.shape[i]), keepdim=True)
            grads.append(grad)
        return tuple(grads)


def einsum(equation, *operands):
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    if not isinstance(equation, str):
        raise TypeError("einsum(): the sublist format is not provided by gradcli; pass an equation string")
    kinds = {o.data.dtype for o in operands if o.data.dtype.kind != "O"}
    if len(kinds) > 1:
        first = operands[0].data.dtype
        other = next(o.data.dtype for o in operands if o.data.dtype != first)
        raise RuntimeError(f"expected scalar type {_TORCH_DTYPE.get(first.name, first.name)} but found "
                           f"{_TORCH_DTYPE.get(other.name, other.name)}")
    spec = _parse(equation, [o.data.shape for o in operands])
    return Einsum.apply(spec, *operands)


def tensordot(a, b, dims=2, out=None):
    if isinstance(dims, Tensor):
        dims = dims.data.tolist()
    if isinstance(dims, int):
        if dims < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
        if dims > a.data.ndim or dims > b.data.ndim:
            raise RuntimeError(f"tensordot expects dims < ndim_a or ndim_b, but got dims={dims}")
        da = [d - dims for d in range(dims)]
        db = list(range(dims))
    else:
        da, db = dims
        da = [da] if isinstance(da, int) else list(da)
        db = [db] if isinstance(db, int) else list(db)
        if len(da) != len(db):
            raise RuntimeError("both dimension lists should have same length")
    la = string.ascii_letters[:a.data.ndim]
    lb = list(string.ascii_letters[a.data.ndim:a.data.ndim + b.data.ndim])
    for x, y in zip(da, db):
        i, j = wrap_dim(x, a.data.ndim), wrap_dim(y, b.data.ndim)
        sa, sb = a.data.shape[i], b.data.shape[j]
        if sa != sb:
            raise RuntimeError(f"contracted dimensions need to match, but first has size {sa} in dim {x} and second "
                               f"has size {sb} in dim {y}")
        lb[j] = la[i]
    lb = "".join(lb)
    contracted = set(la) & set(lb)
    out_subs = "".join(c for c in la if c not in contracted) + "".join(c for c in lb if c not in contracted)
    return einsum(f"{la},{lb}->{out_subs}", a, b)


# ---- kron, cross, cdist ---------------------------------------------------------------------
def kron(a, b):
    n = builtins.max(a.data.ndim, b.data.ndim)
    sa = (1,) * (n - a.data.ndim) + a.data.shape
    sb = (1,) * (n - b.data.ndim) + b.data.shape
    # a's dims interleaved with b's: (a0, b0, a1, b1, ...), then each pair merged
    pa = tuple(v for s in sa for v in (s, 1))
    pb = tuple(v for s in sb for v in (1, s))
    return (a.reshape(pa) * b.reshape(pb)).reshape(tuple(x * y for x, y in zip(sa, sb)))


def _cross(a, b, d):
    from gradcli.autograd.ops.shaping import broadcast_tensors
    if a.data.ndim != b.data.ndim:
        raise RuntimeError("linalg.cross: inputs must have the same number of dimensions.")
    a, b = broadcast_tensors(a, b)

    def at(x, i):
        return x[(slice(None),) * d + (i,)]

    a0, a1, a2 = at(a, 0), at(a, 1), at(a, 2)
    b0, b1, b2 = at(b, 0), at(b, 1), at(b, 2)
    from gradcli.autograd.ops.more import stack
    return stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], dim=d)


def linalg_cross(a, b, *, dim=-1):
    d = wrap_dim(dim, a.data.ndim)
    sa, sb = a.data.shape[d], b.data.shape[wrap_dim(dim, b.data.ndim)]
    if sa != 3 or sb != 3:
        raise RuntimeError(f"linalg.cross: inputs dimension {dim} must have length 3. Got {sa} and {sb}")
    return _cross(a, b, d)


def cross(a, b, dim=None):
    if dim is None:  # torch 2.13: the first dim of size 3 of the broadcast shape, with a warning
        warnings.warn("Using torch.cross without specifying the dim arg is deprecated.\nPlease either pass the dim "
                      "explicitly or simply use torch.linalg.cross.\nThe default value of dim will change to agree "
                      "with that of linalg.cross in a future release.", UserWarning, stacklevel=2)
        from gradcli.autograd.ops.shaping import _broadcast_shape
        shape = _broadcast_shape([a.data.shape, b.data.shape])
        if 3 not in shape:
            raise RuntimeError("no dimension of size 3 in input")
        dim = shape.index(3)
    return linalg_cross(a, b, dim=dim)


class _DistanceRoot(Function):
    """``s ** (1/p)`` of a sum of p-th powers (sqrt for p = 2), whose gradient is 0 where the sum is
    0, as torch's cdist gives (cdist(x, x) has zeros on its diagonal: a plain root would give NaN
    gradients there)."""

    @staticmethod
    def forward(ctx, s, p):
        ctx.save_for_backward(s)
        ctx.p = p
        a = s.data
        ctx.zero = None if a.dtype.kind == "O" or a.all() else (a == 0)
        if p == 2:
            return Tensor(np.sqrt(a) if a.dtype.kind != "O" else symbolic_unary("sqrt", a))
        return Tensor(a ** (1.0 / p))

    @staticmethod
    def backward(ctx, g):
        (s,) = ctx.saved_tensors
        p = ctx.p
        if ctx.zero is not None:
            zero = Tensor(ctx.zero)
            safe = Where.apply(zero, 1.0, s)
        else:
            safe = s
        grad = g / (2 * safe.sqrt()) if p == 2 else g * safe ** (1.0 / p - 1) / p
        return (grad if ctx.zero is None else Where.apply(zero, 0.0, grad)), None


def cdist(x1, x2, p=2.0, compute_mode=None):
    if x1.data.ndim < 2:
        raise RuntimeError(f"cdist only supports at least 2D tensors, X1 got: {x1.data.ndim}D")
    if x2.data.ndim < 2:
        raise RuntimeError(f"cdist only supports at least 2D tensors, X2 got: {x2.data.ndim}D")
    if x1.data.shape[-1] != x2.data.shape[-1]:
        raise RuntimeError(f"X1 and X2 must have the same number of columns. X1: {x1.data.shape[-1]} X2: "
                           f"{x2.data.shape[-1]}")
    if p < 0:
        raise RuntimeError("cdist only supports non-negative p values")
    diff = x1.unsqueeze(-2) - x2.unsqueeze(-3)  # (..., P, R, M)
    if p == 2:
        return _DistanceRoot.apply((diff * diff).sum(-1), 2)
    if p == 1:
        return diff.abs().sum(-1)
    if p == float("inf"):
        return diff.abs().amax(-1)
    if p == 0:
        return (diff != 0).sum(-1).to(x1.dtype)
    return _DistanceRoot.apply((diff.abs() ** p).sum(-1), p)


for _name, _fn in {"mv": mv, "addmv": addmv, "addmm": addmm, "baddbmm": baddbmm, "kron": kron,
                   "cross": cross}.items():
    register(_name, _fn)
for _name, _fn in {"einsum": einsum, "tensordot": tensordot, "cdist": cdist}.items():
    register(_name, _fn, method=False)
