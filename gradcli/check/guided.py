"""Shapes an exception from forward asks for (``auto_inputs.Builder``, before the blind shape search).

When forward raises at a plan, the message often says what was wrong with a tensor gradcli built,
and the raising line says which one (``skip_advice.blocking``):

| forward raised | the tensor gets |
|---|---|
| ``not enough values to unpack (expected 4, got 2)`` (``b, c, h, w = x.shape``) | 4 dimensions |
| ``too many indices for tensor of dimension 2`` | one dimension more |
| ``tuple index out of range`` (``x.shape[2]``), ``Dimension out of range (... but got 3)`` | more dimensions |
| ``... must be batches of square matrices`` / ``must be square`` | square in its last two dimensions |
| ``only one element tensors can be converted to Python scalars`` | 0-d |
| ``Given groups=3, weight of size [6, 3, 4, 4], expected input[2, 3, 4, 4] to have 9 channels, but got 3 ...`` | the tensor the weight was made from (``[2, 3, 4, 4]``, by shape: the raising line may use a copy of it) gets the input's channels per group: ``[2, 1, 4, 4]`` |

When forward runs but backward raises that it needs one number (``The vector v can only be None if the
user-provided function returns a single Tensor with a single element``: ``vjp`` of a callable without
cotangents), every float tensor is made 0-d (``single_elements``): backward's frames do not say which.

When forward raises ``tensors used as indices must be long, int, byte or bool tensors`` at a line naming no
parameter (the index went through locals: ``masked = target.clone() - start``), the float tensors whose
gradient backward never returns (None in every return) become class targets of the first tensor (int64, one
per row, in the range of its last size: ``float_indices``), the layout of ``F.cross_entropy``'s target.

When backward raises ``output with shape [1, 4] doesn't match the broadcast shape [3, 4]`` (a gradient reduced
over the batch, accumulated in place with a term of another input: batch statistics such as a mean or an
inverse standard deviation), every float tensor after the first shaped like the broadcast gets the reduced
shape (``reduced_shapes``): they are statistics of the first.

When backward runs once but raises the second time on the same forward, naming an int parameter gradcli
guessed and asking to raise it (``Try raising `num_bwd_passes` by one``: a Function that allows so many
backward passes), that parameter gets LARGE_COUNT (``larger_count``): a check takes many products of one
forward.

Each guess is tried like any plan (forward running is the oracle); a refusal at the guessed plan
guides the next guess, a few rounds deep.
"""
from __future__ import annotations

import re
from dataclasses import replace
from typing import Optional

from gradcli.check.shape_search import Plan

ROUNDS = 8  # guesses in a row, each from the refusal of the one before
_UNPACK = re.compile(r"not enough values to unpack \(expected (\d+), got (\d+)\)")
_INDICES = re.compile(r"too many indices for tensor of dimension (\d+)")
_DIM_RANGE = re.compile(r"Dimension out of range \(expected to be in range of \[-?\d+, -?\d+\], but got (-?\d+)\)")
# a tensor where forward (or a function it hands the tensor to: vjp, float()) needs one number
SINGLE = re.compile(r"only one element tensors|with a single element|Tensor with \d+ elements cannot be converted to "
                    r"Scalar", re.I)
_SQUARE = re.compile(r"square matri|must be square|expected a square|matrices? (?:is|are) not square", re.I)


def shape_with_dims(n: int, square: bool = False) -> tuple:
    """A small shape with ``n`` dimensions (square in the last two when asked): 4, 3x4, 2x3x4, 2x3x4x4 ..."""
    if n <= 0:
        return ()
    if n == 1:
        return (4,)
    tail = (4, 4) if square else (3, 4)
    if n == 2:
        return tail
    if n == 3:
        return (2, 3, 3) if square else (2, 3, 4)
    return (2,) * (n - 4) + (2, 3, 4, 4)


def guess(plans: dict, exc: BaseException, blockers: list) -> Optional[dict]:
    """The plans with the blocking tensors reshaped as ``exc``'s message asks, or None when it says nothing
    gradcli can use (or names no tensor it built)."""
    text = str(exc)
    weight = conv_weight(plans, text, blockers)
    if weight is not None:
        return weight
    tensors = [n for n in blockers if n in plans and plans[n].kind == "tensor"]
    if not tensors:
        return None
    out = dict(plans)
    for name in tensors:
        shape = tuple(plans[name].shape or ())
        wanted = _wanted(text, exc, shape)
        if wanted is None or wanted == shape:
            continue
        out[name] = replace(plans[name], shape=wanted, why=f"a shape forward's error asked for ({_short(text)})")
    return out if out != plans else None


def _wanted(text: str, exc: BaseException, shape: tuple) -> Optional[tuple]:
    rank = len(shape)
    m = _UNPACK.search(text)
    if m and int(m.group(2)) == rank:
        return shape_with_dims(int(m.group(1)))
    m = _INDICES.search(text)
    if m and int(m.group(1)) == rank:
        return shape_with_dims(rank + 1)
    m = _DIM_RANGE.search(text)
    if m:
        got = int(m.group(1))
        needed = got + 1 if got >= 0 else -got
        return shape_with_dims(max(needed, rank + 1))
    if isinstance(exc, IndexError) and "tuple index out of range" in text:
        return shape_with_dims(rank + 1)
    if SINGLE.search(text) and rank:
        return ()
    if _SQUARE.search(text) and rank >= 2 and shape[-1] != shape[-2]:
        return shape_with_dims(rank, square=True)
    return None


def _short(text: str) -> str:
    first = text.strip().splitlines()[0] if text.strip() else ""
    return first if len(first) <= 60 else first[:57] + "..."


_FLOAT_INDEX = re.compile(r"tensors used as indices must be long|expected .{0,40}(?:Long|Int)|must be an? "
                          r"(?:integer|long|int64)", re.I)


def float_indices(plans: dict, exc: BaseException, hints: dict) -> Optional[dict]:
    if not _FLOAT_INDEX.search(str(exc)):
        return None
    tensors = [n for n, p in plans.items() if p.kind == "tensor"]
    if len(tensors) < 2:
        return None
    first = tensors[0]
    targets = [n for n in tensors[1:] if getattr(hints.get(n), "backward_none", False)]
    if not targets:
        return None
    return dict(plans, **{n: Plan("index", value=("target", first), why=f"a class target of {first} (forward's error "
                                  f"asked for integers: {_short(str(exc))})") for n in targets})


_REDUCED = re.compile(r"output with shape \[([\d, ]*)\] doesn't match the broadcast shape \[([\d, ]*)\]")


def reduced_shapes(plans: dict, backward_error: str, hints: Optional[dict] = None) -> Optional[dict]:
    """The tensors after the first shaped like the broadcast at the reduced shape; one reshaped into one of them
    (``w.reshape_as(mean)``: ``hints[w].reshaped_to``) a vector of its number of elements instead."""
    m = _REDUCED.search(backward_error)
    if m is None:
        return None
    small, big = (tuple(int(k) for k in g.split(",") if k.strip()) for g in m.groups())
    shaped = [n for n, p in plans.items() if p.kind == "tensor" and tuple(p.shape or ()) == big]
    if len(shaped) < 2 or len(small) != len(big):
        return None
    why = f"a shape backward's error asked for (a statistic of {shaped[0]}: {_short(backward_error)})"
    out = dict(plans, **{n: replace(plans[n], shape=small, why=why) for n in shaped[1:]})
    numel = 1
    for k in small:
        numel *= k
    for n in shaped[1:]:
        target = getattr((hints or {}).get(n), "reshaped_to", None)
        if target in shaped[1:]:
            out[n] = replace(plans[n], shape=(numel,), why=f"{n}.reshape_as({target}): {target}'s {numel} elements "
                             f"({why[2:]})")
    return out


LARGE_COUNT = 10_000  # more backward passes than a check of small inputs takes
_RAISE_IT = re.compile(r"\b(?:rais|increas)", re.I)


def larger_count(plans: dict, backward_error: str) -> Optional[dict]:
    """The plans with the int parameters ``backward_error`` names (and asks to raise) at LARGE_COUNT; else None."""
    if not _RAISE_IT.search(backward_error):
        return None
    named = [n for n, p in plans.items() if p.kind == "int" and (p.value or 0) < LARGE_COUNT
             and re.search(rf"(?<![\w.]){re.escape(n)}(?!\w)", backward_error)]
    if not named:
        return None
    return dict(plans, **{n: replace(plans[n], value=LARGE_COUNT, why=f"backward's error asked for more when run "
                                     f"twice ({_short(backward_error)})") for n in named})


def single_elements(plans: dict, backward_error: str) -> Optional[dict]:
    """The plans with every float tensor 0-d, when backward's error says it needs single elements; else None."""
    if not SINGLE.search(backward_error):
        return None
    out = {n: replace(p, shape=(), why=f"a shape backward's error asked for ({_short(backward_error)})")
           if p.kind == "tensor" and p.shape != () and p.structure is None else p for n, p in plans.items()}
    return out if out != plans else None


_CONV = re.compile(r"Given groups=(\d+), weight of size \[([\d, ]+)\], expected input\[[\d, ]+\] to have \d+ "
                   r"channels, but got (\d+) channels instead")


def conv_weight(plans: dict, text: str, blockers=()) -> Optional[dict]:
    """``F.conv2d(x, w, groups=g)`` with ``w``'s in-channels wrong: the automatic tensor the weight was made
    from (the same sizes after dim 0, dim 0 dividing the weight's: ``w`` itself or ``w.repeat(c, 1, 1, 1)``)
    gets the in-channels the input has per group (a depthwise filter ``[n, 1, k, k]``). The tensors the raising
    line uses as they are (``blockers``: the input) and those shaped like the input are the last candidates;
    among equals, later parameters first (a weight follows the input it filters)."""
    m = _CONV.search(text)
    if m is None:
        return None
    groups, size, channels = int(m.group(1)), tuple(int(k) for k in m.group(2).split(",")), int(m.group(3))
    given = tuple(int(k) for k in m.group(0).split("input[", 1)[1].split("]", 1)[0].split(","))
    if groups <= 0 or channels % groups:
        return None
    names = list(plans)[::-1]
    for name in sorted(names, key=lambda n: (tuple(plans[n].shape or ()) == given, n in blockers)):
        plan, shape = plans[name], tuple(plans[name].shape or ())
        if plan.kind == "tensor" and len(shape) == len(size) >= 3 and shape[2:] == size[2:] \
                and shape[1] == size[1] and size[0] % shape[0] == 0 and shape[1] != channels // groups:
            wanted = (shape[0], channels // groups) + shape[2:]
            return dict(plans, **{name: replace(plan, shape=wanted, why=f"a shape forward's error asked for "
                                                f"(a conv weight with {channels // groups} in-channel(s) per group)")})
    return None
