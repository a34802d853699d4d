"""Inputs for ``gradcli check``: the SPEC grammar, and the arguments each Function is checked with.

Precedence, per forward parameter: ``--input NAME=SPEC`` / ``--at`` on the command line, then the
Function's ``example_inputs()`` (one tuple, or a list of tuples: one check each), then the
parameter's default, then an automatic random tensor drawn from the first domain of
``AUTO_DOMAINS`` on which forward's outputs are finite.

Parsing (``parse_spec`` and the click types) is pure Python so that the CLI starts without numpy;
``build_cases`` (run in the checking process) imports numpy and the Function's own framework.
Random draws depend only on (seed, Function, parameter, shape, domain), so ``--input x=3x4@(a,b)``
with the same ``--seed`` reproduces an automatic input exactly.
"""
from __future__ import annotations

import math
import re
import zlib
from dataclasses import dataclass, field
from typing import Any, Optional

import click

DTYPES = ("float64", "float32", "float16")
NAMED_DOMAINS = {"positive": (0.1, 2.0), "negative": (-2.0, -0.1), "unit": (-0.9, 0.9)}
AUTO_DOMAINS = ((-2.0, 2.0), (0.1, 2.0), (1.1, 3.0), (-0.9, 0.9), (-2.0, -0.1))
DEFAULT_SHAPE = (3, 4)
MAX_RECORDED_ELEMENTS = 10_000  # larger tensors are recorded by spec + seed only
# Exceptions a forward raises when it is merely given unsuitable inputs (a shape mismatch in a
# matmul, a scalar where it wants an int, ...): automatic inputs then give "skip", not "error".
UNSUITABLE_INPUT_ERRORS = (ValueError, TypeError, IndexError, RuntimeError)

_NUMBER = r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?"
_NUMBER_RE = re.compile(rf"^{_NUMBER}$")
_DIMS_X_RE = re.compile(r"^\d+(?:x\d+)+$")
_DTYPE_BRACKET_RE = re.compile(r"^(\w+)\[([\d,\s]*)\]$")
_DOMAIN_RE = re.compile(rf"^\(\s*({_NUMBER})\s*,\s*({_NUMBER})\s*\)$")
_NAME_RE = re.compile(r"^[A-Za-z_]\w*$")


class SpecError(ValueError):
    """A SPEC that does not parse; the message is one line meant for the user."""


@dataclass(frozen=True)
class Spec:
    """A parsed SPEC: ``kind`` is "none", "literal" or "tensor"."""

    kind: str
    text: str
    value: Any = None  # literal: a number or a (nested, rectangular) list of numbers
    shape: tuple = ()
    dtype: Optional[str] = None  # tensor/literal dtype; None means --dtype
    domain: Optional[tuple] = None  # tensor: (low, high); None means automatic


def format_tensor_spec(shape, dtype, domain) -> str:
    dims = "[" + ",".join(str(d) for d in shape) + "]"
    text = f"{dtype or 'float64'}{dims}"
    if domain is not None:
        text += "@(" + ",".join(_short(v) for v in domain) + ")"
    return text


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
    """Parse one SPEC (grammar in specs/check.md). Raises SpecError with a one-line message."""
    t = text.strip()
    if not t:
        raise SpecError("empty SPEC: give a literal (3, 2.5, [2,3,4]), a shape (3x4, float32[3,4]) or none")
    if t.lower() == "none":
        return Spec("none", t)
    if _NUMBER_RE.match(t):
        return Spec("literal", t, value=float(t) if any(c in t for c in ".eE") else int(t))
    if t.startswith("["):
        return Spec("literal", t, value=_parse_list(t), shape=_list_shape(_parse_list(t), t))
    body, domain = t, None
    if "@" in t:
        body, _, dom = t.partition("@")
        domain = _parse_domain(dom.strip(), t)
    body = body.strip()
    dtype = None
    if _DIMS_X_RE.match(body):
        shape = tuple(int(p) for p in body.split("x"))
    elif m := _DTYPE_BRACKET_RE.match(body):
        dtype = m.group(1)
        if dtype not in DTYPES:
            raise SpecError(f"unknown dtype {dtype!r} in {t!r}: use one of {', '.join(DTYPES)}")
        shape = parse_shape(m.group(2)) if m.group(2).strip() else ()
    else:
        raise SpecError(f"cannot read SPEC {t!r}: expected a number, a list like [2,3,4], a shape like 3x4 "
                        f"or float32[3,4] (optionally @(low,high) or @positive), or none")
    if any(d == 0 for d in shape):
        raise SpecError(f"empty shape in {t!r}: every size must be at least 1")
    return Spec("tensor", t, shape=shape, dtype=dtype, domain=domain)


def _parse_domain(dom: str, whole: str) -> tuple:
    if dom in NAMED_DOMAINS:
        return NAMED_DOMAINS[dom]
    m = _DOMAIN_RE.match(dom)
    if not m:
        raise SpecError(f"bad range {dom!r} in {whole!r}: use @(low,high) or one of "
                        f"{', '.join('@' + n for n in NAMED_DOMAINS)}")
    low, high = float(m.group(1)), float(m.group(2))
    if not (math.isfinite(low) and math.isfinite(high) and low < high):
        raise SpecError(f"bad range {dom!r} in {whole!r}: need finite low < high")
    return (low, high)


def _parse_list(t: str):
    import json

    try:
        value = json.loads(t)
    except ValueError:
        raise SpecError(f"cannot read list {t!r}: write numbers like [2,3,4] or [[1,2],[3,4]]") from None
    return value


def _list_shape(value, t: str) -> tuple:
    if isinstance(value, bool) or not isinstance(value, (list, int, float)):
        raise SpecError(f"list {t!r} must contain only numbers")
    if not isinstance(value, list):
        return ()
    if not value:
        raise SpecError(f"empty list {t!r}: give at least one number")
    shapes = {_list_shape(v, t) for v in value}
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


# ----- building the arguments (checking process only) ------------------------------------------

@dataclass
class Param:
    name: str
    has_default: bool = False
    default: Any = None


@dataclass
class Case:
    """One set of forward arguments: the values to pass, and their JSON records."""

    args: list
    records: list
    # What this input set leaves unexercised: [{"input": name, "reason": "..."}] (a None default that
    # no tensor could replace, a guessed number, ...). Renderers list it as "not checked:".
    not_checked: list = field(default_factory=list)


class NoInputs(Exception):
    """Automatic inputs could not be built; the message says how to supply them (result: skip)."""


class ForwardBroken(Exception):
    """forward gives NaN/Inf everywhere, whatever the inputs (a "NaN storm": result error)."""


def forward_params(target) -> tuple:
    """(positional parameters of forward after ctx/self, whether forward takes *args)."""
    import inspect

    sig = inspect.signature(target.forward)
    params = list(sig.parameters.values())
    if target.style in ("static", "classmethod", "legacy"):
        params = params[1:]  # ctx (bound classmethods and legacy self already drop cls)
    out, star = [], False
    for p in params:
        if p.kind is p.VAR_POSITIONAL:
            star = True
        elif p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            out.append(Param(p.name, p.default is not p.empty, None if p.default is p.empty else p.default))
    return out, star


def build_cases(target, specs: dict, *, seed: int, dtype: str = "float64", shape=DEFAULT_SHAPE) -> list:
    """The argument sets to check ``target`` with (a list of Case). Raises NoInputs (-> skip);
    exceptions from user code (example_inputs, or forward failing for other reasons) propagate."""
    be = backend_for(target.backend)
    params, star = forward_params(target)
    specs = {**getattr(target, "given_specs", {}), **specs}  # [tool.gradcli.inputs] / an inputs file (inputs_from.py)
    seed_global_generators(seed, target.name)
    examples = _example_tuples(target)
    if examples is not None:
        return [_case_from_example(target, be, params, ex, i, specs, seed, dtype) for i, ex in enumerate(examples)]
    if star:
        raise NoInputs(f"forward takes *args, so its inputs cannot be built automatically: define "
                       f"example_inputs() on {target.name} returning a tuple of forward's arguments")
    args, records, auto = [], [], []
    for p in params:
        key = f"{target.name}.{p.name}"
        if p.name in specs:
            value, rec = _from_spec(be, specs[p.name], key, seed, dtype, p, source="cli")
        elif p.has_default:
            value, rec = p.default, _record(be, p.name, p.default, source="default")
        else:
            auto.append(len(args))
            value, rec = (p, key), None
        args.append(value)
        records.append(rec)
    if not auto:
        return [Case(args, records)]
    problems: dict = {}  # why forward was unusable -> the domains where it happened
    storm = True  # every output element non-finite on every domain: forward itself is broken
    for domain in AUTO_DOMAINS:
        trial, trial_records = _trial(be, args, records, auto, shape, dtype, domain, seed)
        try:
            why, everywhere = forward_problem(be, target.fn, trial)
            reason = why and "forward's output is NaN/Inf"
        except UNSUITABLE_INPUT_ERRORS as e:
            text = str(e).strip().splitlines()[0] if str(e).strip() else ""
            reason, everywhere = f"forward raised {type(e).__name__}: {text}", False
        if reason is None:
            return [Case(trial, trial_records)]
        storm = storm and everywhere
        problems.setdefault(reason, []).append(format_domain(domain))
    dims = "x".join(str(d) for d in shape)
    if storm:
        raise ForwardBroken(f"forward returns NaN/Inf for every element of its output, for {dims} inputs in every "
                            f"domain tried: {', '.join(format_domain(d) for d in AUTO_DOMAINS)}")
    with_numbers = _trailing_numbers(be, target, args, records, auto, shape, dtype, seed)
    if with_numbers is not None:
        return [with_numbers]
    found = "; ".join(f"{why} on {', '.join(domains)}" if len(domains) < len(AUTO_DOMAINS) else
                      f"{why} for {dims} inputs in every domain tried" for why, domains in problems.items())
    names = [args[i][0].name for i in auto]
    raise NoInputs(f"cannot build inputs automatically: {found}. Give them with "
                   f"{' '.join(f'--input {n}=SPEC' for n in names)} (SPEC like 3x4, float32[2,5], 3x4@(1,5) or "
                   f"[1,2,3]; see specs/check.md), or add a staticmethod example_inputs() to {target.name} "
                   f"returning ({', '.join(p.name for p in params)})")


def _trial(be, args, records, auto, shape, dtype, domain, seed, numbers_from=None):
    """``args`` with the automatic parameters filled in: tensors of ``shape`` drawn from ``domain``,
    except those from position ``numbers_from`` of ``auto`` on, which become the int 1."""
    trial, trial_records = list(args), list(records)
    for position, i in enumerate(auto):
        p, key = args[i]
        if numbers_from is not None and position >= numbers_from:
            trial[i] = 1
            trial_records[i] = dict(_record(be, p.name, 1, source="auto", spec="1"), number=True)
        else:
            spec = Spec("tensor", "", shape=tuple(shape), dtype=dtype, domain=domain)
            trial[i], trial_records[i] = _from_spec(be, spec, key, seed, dtype, p, source="auto")
    return trial, trial_records


def _trailing_numbers(be, target, args, records, auto, shape, dtype, seed) -> Optional[Case]:
    """forward(ctx, x, dim) or forward(ctx, x, k): a later parameter that must be a number, not a
    tensor. Tried once tensors everywhere failed: the last automatic parameters (as few as work)
    become the Python int 1, the others tensors as usual. None if that does not make forward run."""
    for cut in range(len(auto) - 1, 0, -1):
        for domain in AUTO_DOMAINS:
            trial, trial_records = _trial(be, args, records, auto, shape, dtype, domain, seed, numbers_from=cut)
            try:
                why, _ = forward_problem(be, target.fn, trial)
            except Exception:  # noqa: BLE001 -- any exception: numbers there do not work (x @ 1, ...)
                break  # and it does not depend on the domain: try more numbers
            if why is None:
                return Case(trial, trial_records)
    return None


def reduced_shapes(case: Case, returned_shapes) -> dict:
    """{argument index: shape} for automatic inputs whose gradient came back in a shape they broadcast
    from (a ``[4]`` gradient for a ``3x4`` gamma: the backward treats gamma as a per-feature ``[4]``)."""
    import numpy as np

    found = {}
    for i, rec in enumerate(case.records):
        got = returned_shapes[i] if returned_shapes is not None and i < len(returned_shapes) else None
        if rec is None or rec.get("source") != "auto" or rec.get("type") != "tensor" or got is None:
            continue
        got, have = tuple(got), tuple(rec["shape"])
        try:
            broadcasts = np.broadcast_shapes(got, have) == have
        except ValueError:
            broadcasts = False
        if broadcasts and got != have and int(np.prod(got)) < int(np.prod(have)):
            found[i] = got
    return found


def reshape_auto(target, case: Case, shapes: dict, *, seed: int, dtype: str) -> Optional[Case]:
    """``case`` with the automatic inputs in ``shapes`` rebuilt in those shapes (same domain, same
    seeded draw), or None when forward does not run on them. Their records say ``shape_from: backward``."""
    be = backend_for(target.backend)
    params, _ = forward_params(target)
    args, records = list(case.args), list(case.records)
    for i, shape in shapes.items():
        old = parse_spec(records[i]["spec"])
        spec = Spec("tensor", "", shape=tuple(shape), dtype=old.dtype or dtype, domain=old.domain)
        args[i], records[i] = _from_spec(be, spec, f"{target.name}.{params[i].name}", seed, dtype, params[i],
                                         source="auto")
        records[i]["shape_from"] = "backward"
    try:
        why, _ = forward_problem(be, target.fn, args)
    except UNSUITABLE_INPUT_ERRORS:
        return None
    return Case(args, records) if why is None else None


def forward_problem(be, fn, args) -> tuple:
    """(None, False) when forward runs and its floating outputs are finite, else (why not, whether
    every output element is non-finite). Exceptions from forward propagate."""
    import warnings

    import numpy as np

    from gradcli.check.backends import flatten_outputs

    with be.no_grad(), np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # probing a domain: "invalid value in sqrt" is expected
        # copies: a forward that writes into its input (ctx.mark_dirty) must not change the input set it probes
        out = fn(*[be.leaf(be.to_numpy(a).copy(), False) if be.is_tensor(a) else a for a in args])
    bad, everywhere = [], True
    for i, o in enumerate(flatten_outputs(out)):
        if be.is_tensor(o):
            array = be.to_numpy(o)
            if array.dtype.kind in "fc":
                n = int((~np.isfinite(array)).sum())
                everywhere = everywhere and n == array.size
                if n:
                    bad.append(f"output {i}: {n} of {array.size} elements")
    return (f"forward's output is NaN/Inf ({', '.join(bad)})", everywhere) if bad else (None, False)


def format_domain(domain) -> str:
    return "(" + ", ".join(_short(v) for v in domain) + ")"


def _example_tuples(target) -> Optional[list]:
    # the class's own example_inputs, else an inputs file's entry for it (inputs_from.py)
    fn = getattr(target.cls, "example_inputs", None) or getattr(target, "given_examples", None)
    if fn is None:
        return None
    value = fn()
    if isinstance(value, list):
        if not value:
            raise NoInputs(f"{target.name}.example_inputs() returned an empty list")
        return [v if isinstance(v, tuple) else (v,) for v in value]
    return [value if isinstance(value, tuple) else (value,)]


def _case_from_example(target, be, params, example, index, specs, seed, dtype) -> Case:
    args, records = [], []
    grad_given = any(_requires_grad(be, v) for v in example)
    for i, value in enumerate(example):
        p = params[i] if i < len(params) else Param(f"arg{i}")
        if p.name in specs:
            value, rec = _from_spec(be, specs[p.name], f"{target.name}.{p.name}", seed, dtype, p, source="cli")
        else:
            if not grad_given:  # nobody marked requires_grad: check every floating tensor
                value = _mark_grad(be, value)
            rec = _record(be, p.name, value, source="example", case=index)
        args.append(value)
        records.append(rec)
    rest = params[len(example):]
    wanted = [i for i, p in enumerate(rest) if p.name in specs]
    for p in rest[: wanted[-1] + 1] if wanted else ():  # --input for parameters after the example's
        if p.name in specs:
            value, rec = _from_spec(be, specs[p.name], f"{target.name}.{p.name}", seed, dtype, p, source="cli")
        else:
            value, rec = p.default, _record(be, p.name, p.default, source="default")
        args.append(value)
        records.append(rec)
    return Case(args, records)


def seed_global_generators(seed: int, name: str):
    """Seed the generators an ``example_inputs()`` may draw from (gradcli's, numpy's legacy global one,
    and torch's when the user's file loaded it), per Function: same --seed, same inputs, same report."""
    import sys

    import numpy as np

    import gradcli

    derived = (seed * 1_000_003 + zlib.crc32(name.encode())) % 2**32
    gradcli.manual_seed(derived)
    np.random.seed(derived)
    torch = sys.modules.get("torch")
    if torch is not None and hasattr(torch, "manual_seed"):
        torch.manual_seed(derived)


def backend_for(name: str):
    """gradcheck's backend object for "gradcli" or "torch" (the user's file already imported torch)."""
    from gradcli.check.backends import GradcliBackend, TorchBackend

    return TorchBackend() if name == "torch" else GradcliBackend()


def _requires_grad(be, value) -> bool:
    return be.is_tensor(value) and bool(value.requires_grad)


def _mark_grad(be, value):
    if be.is_tensor(value) and not value.requires_grad and be.to_numpy(value).dtype.kind in "fc":
        return be.leaf(be.to_numpy(value), True)
    return value


def _from_spec(be, spec: Spec, key: str, seed: int, dtype: str, param: Param, source: str):
    import numpy as np

    if spec.kind == "none":
        return None, {"name": param.name, "source": source, "spec": "none", "type": "none", "value": None}
    if spec.kind == "literal":
        if param.has_default and isinstance(param.default, (int, float)) and not isinstance(spec.value, list):
            value = type(param.default)(spec.value)  # a Python scalar option (dim=1, k=3.0, ...)
            return value, _record(be, param.name, value, source=source, spec=spec.text)
        array = np.asarray(spec.value, dtype=spec.dtype or dtype)
        text = spec.text
    else:
        domain = spec.domain or AUTO_DOMAINS[0]
        rng = np.random.default_rng([seed, zlib.crc32(key.encode())])
        array = rng.uniform(domain[0], domain[1], size=spec.shape).astype(spec.dtype or dtype)
        text = format_tensor_spec(spec.shape, spec.dtype or dtype, domain)
    value = be.leaf(array, True)
    return value, _record(be, param.name, value, source=source, spec=text)


def _record(be, name: str, value, source: str, spec: Optional[str] = None, case: Optional[int] = None) -> dict:
    """The JSON record of one argument: enough to reproduce it (values up to MAX_RECORDED_ELEMENTS)."""
    rec = {"name": name, "source": source, "spec": spec}
    if case is not None:
        rec["case"] = case
    if be.is_tensor(value):
        array = be.to_numpy(value)
        rec.update(type="tensor", dtype=be.dtype_name(value), shape=list(array.shape),
                   requires_grad=bool(value.requires_grad),
                   value=array.tolist() if array.size <= MAX_RECORDED_ELEMENTS else None)
    elif value is None or isinstance(value, (bool, int, float, str)):
        rec.update(type="none" if value is None else type(value).__name__, value=value)
    else:
        rec.update(type=type(value).__name__, value=repr(value)[:200])
    return rec
