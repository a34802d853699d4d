"""The SPEC grammar of ``--input NAME=SPEC`` (specs/check.md §2): pure Python, so the CLI starts
without numpy. ``parse_spec`` reads text into a ``Spec``; nothing is ever evaluated.

What a SPEC becomes for one parameter (a NUMBER: a Python number or a 0-d tensor) is decided
where the arguments are built (``inputs._from_spec``), from what gradcli knows of that parameter.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Optional

import click

from gradcli.check import callable_params

FLOAT_DTYPES = ("float64", "float32", "float16")
INT_DTYPES = ("int64", "int32", "int16", "int8", "uint8")
DTYPES = FLOAT_DTYPES  # the dtypes --dtype takes
TENSOR_DTYPES = FLOAT_DTYPES + INT_DTYPES + ("bool",)
NAMED_DOMAINS = {"positive": (0.1, 2.0), "negative": (-2.0, -0.1), "unit": (-0.9, 0.9)}
DEFAULT_INT_RANGE = (0, 5)  # int64[6] without a range: 0..4
NOGRAD = "nograd:"
CALLABLE = "fn:"
# fn:NAME -- a callable forward calls (torch backend: the nn.Module of that name, so .forward and
# .parameters() work too); tanh is what automatic inputs use. Called with several arguments, these apply to the
# last one; the pairwise ones take two tensors [..., n, d] and [..., m, d] and give [..., n, m]: cdist the
# Euclidean distance between their rows, sqdist its square (what a callable named like a distance gets); sinh and
# asinh are an inverse pair (what fn and fn_inverse get)
CALLABLES = ("tanh", "sigmoid", "identity", "sinh", "asinh", "cdist", "sqdist")
PAIRWISE = ("cdist", "sqdist")
# default(): the parameter's annotated dataclass / NamedTuple built from its defaults (p: LIFParameters)
DEFAULTS = "default()"
# 4x4@sym: a symmetric matrix (uniform (-2,2), then (A+A^T)/2); 4x4@spd: positive definite (B B^T/n + I/2);
# 4x4@nsd: negative definite, -(B B^T/n + I/2) (a natural parameter -Σ⁻¹/2, the cholesky of -2·p)
STRUCTURES = ("sym", "spd", "nsd")
# words a bare-word string cannot be: they mean something else in a SPEC
RESERVED_WORDS = frozenset({"none", "true", "false", "tensor", "int", "float", "nograd"} | set(NAMED_DOMAINS))

_NUMBER = r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?"
_NUMBER_RE = re.compile(rf"^{_NUMBER}$")
_DIMS_X_RE = re.compile(r"^\d+(?:x\d+)+$")
_DTYPE_BRACKET_RE = re.compile(r"^(\w+)\[([\d,\s]*)\]$")
_DOMAIN_RE = re.compile(rf"^([\[(])\s*({_NUMBER})\s*,\s*({_NUMBER})\s*([\])])$")
_NAME_RE = re.compile(r"^[A-Za-z_]\w*$")
_WORD_RE = re.compile(r"^[A-Za-z_][\w.\-]*$")
_CAST_RE = re.compile(rf"^(int|float)\(\s*({_NUMBER})\s*\)$")
_TENSOR_RE = re.compile(r"^tensor\((.*)\)$", re.S)
_QUOTED_RE = re.compile(r"""^(?:'([^'\\]*)'|"([^"\\]*)")$""")
_BOOLS = {"true": True, "false": False}


class SpecError(ValueError):
    """A SPEC that does not parse; the message is one line meant for the user."""


@dataclass(frozen=True)
class Spec:
    """A parsed SPEC. ``kind``:

    * ``none``: None;
    * ``literal``: a NUMBER (``value`` int or float: a Python number or a 0-d tensor, by parameter)
      or a LIST / ``tensor(...)`` (``as_tensor``: always a tensor);
    * ``value``: a Python value passed as it is (a string, a bool, a tuple, ``int(3)``, ``float(3)``);
    * ``tensor``: a random tensor of ``shape``/``dtype`` drawn from ``domain`` (``structure``: sym/spd);
    * ``callable``: ``fn:tanh`` (``value`` the name);
    * ``defaults``: ``default()``, the parameter's annotated dataclass / NamedTuple from its defaults.
    """

    kind: str
    text: str
    value: Any = None
    shape: tuple = ()
    dtype: Optional[str] = None  # None means --dtype (floating) or, for tensor(...), inferred from the values
    domain: Optional[tuple] = None  # float: (low, high) uniform; int: (low, high) integers low..high-1
    requires_grad: bool = True  # False: "nograd:" (a buffer, a mask, a filter); int/bool tensors never do
    as_tensor: bool = False  # tensor(...): a literal that is a tensor whatever the parameter
    structure: Optional[str] = None  # sym | spd | nsd: a symmetric / positive / negative definite matrix (last two sizes)


def format_tensor_spec(shape, dtype, domain, requires_grad: bool = True, structure: Optional[str] = None) -> str:
    """The SPEC that draws this tensor again (same seed, same Function and parameter)."""
    dims = "[" + ",".join(str(d) for d in shape) + "]"
    dtype = dtype or "float64"
    text = f"{dtype}{dims}"
    if structure is not None:
        text += f"@{structure}"
    elif domain is not None and dtype in INT_DTYPES:
        text += f"@[{int(domain[0])},{int(domain[1])})"
    elif domain is not None and dtype != "bool":
        text += "@(" + ",".join(_short(v) for v in domain) + ")"
    nograd = not requires_grad and dtype in FLOAT_DTYPES
    return (NOGRAD if nograd else "") + text


def format_value_spec(value) -> str:
    """A SPEC for a Python value: ``true``, ``'reflect'``/``reflect``, ``(0,1)``, ``int(1)``, ``float(1.5)``
    (the cast forms: a Python number whatever the parameter)."""
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return f"int({value})"
    if isinstance(value, float):
        return f"float({value!r})"
    if isinstance(value, str):
        return value if _WORD_RE.match(value) and value.lower() not in RESERVED_WORDS else f"'{value}'"
    if isinstance(value, tuple):
        inner = ",".join(_tuple_item_spec(v) for v in value)
        return f"({inner},)" if len(value) == 1 else f"({inner})"
    raise SpecError(f"no SPEC for a {type(value).__name__}")


def _tuple_item_spec(v) -> str:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return format_value_spec(v)
    return repr(v)


def _short(v: float) -> str:
    return str(int(v)) if float(v).is_integer() else repr(float(v))


def parse_shape(text: str) -> tuple:
    """``3x4``, ``3,4``, ``5`` or ``[3,4]`` -> a shape tuple."""
    t = text.strip().strip("[]()").replace(" ", "")
    if t == "":
        return ()
    parts = re.split(r"[x,]", t)
    if not all(p.isdigit() for p in parts):
        raise SpecError(f"bad shape {text!r}: expected sizes like 3x4, 3,4 or 5")
    return tuple(int(p) for p in parts)


def parse_spec(text: str) -> Spec:
    """Parse one SPEC (grammar in specs/check.md §2). Raises SpecError with a one-line message."""
    t = text.strip()
    if not t:
        raise SpecError("empty SPEC: give a number (3, 2.5), a shape (3x4, float32[3,4], int64[6]@[0,5)), "
                        "a list ([2,3,4]), a word (reflect), true/false, a tuple ((0,1)) or none")
    if t.lower().startswith(NOGRAD):
        inner = _parse_body(t[len(NOGRAD):].strip(), t)
        if inner.kind not in ("tensor", "literal") or (inner.kind == "literal" and not inner.as_tensor
                                                       and not isinstance(inner.value, list)):
            raise SpecError(f"{NOGRAD} applies to tensors (nograd:3x4, nograd:[1,2], nograd:tensor(2.0)), "
                            f"not to {t[len(NOGRAD):].strip()!r}")
        return Spec(inner.kind, t, inner.value, inner.shape, inner.dtype, inner.domain, False, True,
                    inner.structure)
    if t.replace(" ", "").lower() == DEFAULTS:
        return Spec("defaults", t)
    if t.lower().startswith(CALLABLE):
        name = t[len(CALLABLE):].strip().lower()
        scaled = callable_params.parse(t[len(CALLABLE):])  # fn:sinh@w: a stand-in holding the input w
        if scaled is not None:
            return Spec("callable", t, value=scaled)
        if name not in CALLABLES:
            raise SpecError(f"unknown callable {t!r}: use one of {', '.join(CALLABLE + c for c in CALLABLES)}, "
                            f"or fn:NAME@INPUT (NAME {'/'.join(callable_params.SCALED)}) holding INPUT as its Parameter")
        return Spec("callable", t, value=name)
    return _parse_body(t, t)


def _parse_body(t: str, whole: str) -> Spec:
    low = t.lower()
    if low == "none":
        return Spec("none", whole)
    if low in _BOOLS:
        return Spec("value", whole, value=_BOOLS[low])
    if _NUMBER_RE.match(t):
        return Spec("literal", whole, value=_number(t))
    if m := _CAST_RE.match(t):
        cast = int if m.group(1) == "int" else float
        number = _number(m.group(2))
        if cast is int and not float(number).is_integer():
            raise SpecError(f"int(...) needs a whole number, got {whole!r}")
        return Spec("value", whole, value=cast(number))
    if m := _QUOTED_RE.match(t):
        return Spec("value", whole, value=m.group(1) if m.group(1) is not None else m.group(2))
    if t.startswith("["):
        value = _parse_list(t)
        return Spec("literal", whole, value=value, shape=_list_shape(value, t))
    if m := _TENSOR_RE.match(t):
        return _parse_tensor_literal(m.group(1).strip(), whole)
    if t.startswith("("):
        return Spec("value", whole, value=_parse_tuple(t, whole))
    if "@" not in t and _WORD_RE.match(t) and not _DTYPE_BRACKET_RE.match(t) and low not in RESERVED_WORDS:
        return Spec("value", whole, value=t)  # a bare word: a string (mode=reflect)
    return _parse_random_tensor(t, whole)


def _parse_random_tensor(t: str, whole: str) -> Spec:
    body, domain_text = t, None
    if "@" in t:
        body, _, domain_text = t.partition("@")
    body = body.strip()
    dtype = None
    if _DIMS_X_RE.match(body):
        shape = tuple(int(p) for p in body.split("x"))
    elif m := _DTYPE_BRACKET_RE.match(body):
        dtype = m.group(1)
        if dtype not in TENSOR_DTYPES:
            raise SpecError(f"unknown dtype {dtype!r} in {whole!r}: use one of {', '.join(TENSOR_DTYPES)}")
        shape = parse_shape(m.group(2)) if m.group(2).strip() else ()
    else:
        raise SpecError(f"cannot read SPEC {whole!r}: expected a number, a list like [2,3,4], a shape like 3x4, "
                        f"float32[3,4] or int64[6]@[0,5) (optionally @(low,high) or @positive), a word, "
                        f"true/false, a tuple like (0,1), or none")
    if any(d == 0 for d in shape):
        raise SpecError(f"empty shape in {whole!r}: every size must be at least 1")
    domain, structure = None, None
    if domain_text is not None and domain_text.strip() in STRUCTURES:
        structure = domain_text.strip()
        if dtype not in (None,) + FLOAT_DTYPES or len(shape) < 2 or shape[-1] != shape[-2]:
            raise SpecError(f"@{structure} needs a floating square matrix (4x4, float64[2,3,3]@{structure}), "
                            f"not {whole!r}")
        return Spec("tensor", whole, shape=shape, dtype=dtype, domain=(-2.0, 2.0), structure=structure)
    if domain_text is not None:
        if dtype == "bool":
            raise SpecError(f"a bool tensor takes no range: write bool[3,4], not {whole!r}")
        domain = _parse_domain(domain_text.strip(), whole, integer=dtype in INT_DTYPES)
    elif dtype in INT_DTYPES:
        domain = DEFAULT_INT_RANGE
    return Spec("tensor", whole, shape=shape, dtype=dtype, domain=domain)


def _parse_domain(dom: str, whole: str, integer: bool = False) -> tuple:
    if dom in NAMED_DOMAINS and not integer:
        return NAMED_DOMAINS[dom]
    m = _DOMAIN_RE.match(dom)
    if not m:
        form = "@[low,high) or @[low,high]" if integer else (
            f"@(low,high) or one of {', '.join('@' + n for n in NAMED_DOMAINS)}")
        raise SpecError(f"bad range {dom!r} in {whole!r}: use {form}")
    opening, low, high, closing = m.group(1), float(m.group(2)), float(m.group(3)), m.group(4)
    if integer:
        if opening != "[" or not (low.is_integer() and high.is_integer()):
            raise SpecError(f"bad range {dom!r} in {whole!r}: an integer range is whole numbers "
                            f"@[low,high) (high excluded) or @[low,high]")
        high = high + 1 if closing == "]" else high
        if not low < high:
            raise SpecError(f"bad range {dom!r} in {whole!r}: it holds no integer")
        return (int(low), int(high))
    if not (math.isfinite(low) and math.isfinite(high) and low < high):
        raise SpecError(f"bad range {dom!r} in {whole!r}: need finite low < high")
    return (low, high)


def _parse_tensor_literal(inner: str, whole: str) -> Spec:
    """``tensor(3.0)``, ``tensor([0,2,1])``: dtype as torch.tensor infers it (ints -> int64, bools -> bool)."""
    if _NUMBER_RE.match(inner):
        value = _number(inner)
        shape = ()
    elif inner.startswith("["):
        value = _parse_list(inner, allow_bool=True)
        shape = _list_shape(value, inner, allow_bool=True)
    elif inner.lower() in _BOOLS:
        value, shape = _BOOLS[inner.lower()], ()
    else:
        raise SpecError(f"tensor(...) takes a number or a list, like tensor(3.0) or tensor([0,2,1]); got {whole!r}")
    flat = list(_flatten(value))
    dtype = ("bool" if all(isinstance(v, bool) for v in flat) else
             "int64" if all(isinstance(v, int) and not isinstance(v, bool) for v in flat) else None)
    if dtype is None and any(isinstance(v, bool) for v in flat):
        raise SpecError(f"tensor(...) mixes true/false with numbers in {whole!r}")
    return Spec("literal", whole, value=value, shape=shape, dtype=dtype, as_tensor=True)


def _flatten(value):
    if isinstance(value, list):
        for v in value:
            yield from _flatten(v)
    else:
        yield value


def _number(t: str):
    return float(t) if any(c in t for c in ".eE") else int(t)


def _parse_tuple(t: str, whole: str) -> tuple:
    if not t.endswith(")"):
        raise SpecError(f"cannot read tuple {whole!r}: write it like (0,1) or ('a',2)")
    inner = t[1:-1].strip()
    if not inner:
        return ()
    items = [p.strip() for p in inner.split(",")]
    if items[-1] == "":
        items = items[:-1]  # (0,) -- a one-element tuple
    values = []
    for item in items:
        if _NUMBER_RE.match(item):
            values.append(_number(item))
        elif item.lower() in _BOOLS:
            values.append(_BOOLS[item.lower()])
        elif item.lower() == "none":
            values.append(None)
        elif m := _QUOTED_RE.match(item):
            values.append(m.group(1) if m.group(1) is not None else m.group(2))
        elif _WORD_RE.match(item) and item.lower() not in RESERVED_WORDS:
            values.append(item)
        else:
            raise SpecError(f"cannot read tuple {whole!r}: its items are numbers, words, true/false or none")
    return tuple(values)


def _parse_list(t: str, allow_bool: bool = False):
    import json

    try:
        value = json.loads(t)
    except ValueError:
        raise SpecError(f"cannot read list {t!r}: write numbers like [2,3,4] or [[1,2],[3,4]]") from None
    return value


def _list_shape(value, t: str, allow_bool: bool = False) -> tuple:
    if (isinstance(value, bool) and not allow_bool) or not isinstance(value, (list, int, float)):
        raise SpecError(f"list {t!r} must contain only numbers")
    if not isinstance(value, list):
        return ()
    if not value:
        raise SpecError(f"empty list {t!r}: give at least one number")
    shapes = {_list_shape(v, t, allow_bool) for v in value}
    if len(shapes) != 1:
        raise SpecError(f"ragged list {t!r}: every row must have the same length")
    return (len(value),) + shapes.pop()


def parse_assignment(text: str) -> tuple:
    """``NAME=SPEC`` -> (name, Spec)."""
    name, sep, spec = text.partition("=")
    name = name.strip()
    if not sep or not _NAME_RE.match(name):
        raise SpecError(f"expected NAME=SPEC (e.g. x=3x4), got {text!r}")
    return name, parse_spec(spec)


def parse_at(text: str) -> list:
    """``x=3,y=2`` -> [(name, literal Spec), ...]."""
    pairs = []
    for part in text.split(","):
        name, sep, value = part.partition("=")
        name, value = name.strip(), value.strip()
        if not sep or not _NAME_RE.match(name) or not _NUMBER_RE.match(value):
            raise SpecError(f"--at takes NAME=NUMBER pairs separated by commas (e.g. x=3,y=2), got {text!r}")
        pairs.append((name, parse_spec(value)))
    return pairs


class InputParam(click.ParamType):
    """click type for ``--input NAME=SPEC``: a bad SPEC is a usage error (exit 2), one line."""

    name = "NAME=SPEC"

    def convert(self, value, param, ctx):
        if isinstance(value, tuple):
            return value
        try:
            return parse_assignment(value)
        except SpecError as e:
            self.fail(str(e), param, ctx)


class AtParam(click.ParamType):
    name = "NAME=NUMBER,..."

    def convert(self, value, param, ctx):
        if isinstance(value, list):
            return value
        try:
            return parse_at(value)
        except SpecError as e:
            self.fail(str(e), param, ctx)


class ShapeParam(click.ParamType):
    name = "SHAPE"

    def convert(self, value, param, ctx):
        if isinstance(value, tuple):
            return value
        try:
            shape = parse_shape(value)
        except SpecError as e:
            self.fail(str(e), param, ctx)
        if any(size < 1 for size in shape):
            self.fail(f"empty shape in {value!r}: every size must be at least 1", param, ctx)
        return shape
