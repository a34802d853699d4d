"""Inputs for ``gradcli check``: the arguments each Function is checked with.

Precedence, per forward parameter: ``--input NAME=SPEC`` / ``--at`` on the command line, then the
Function's ``example_inputs()`` (one tuple, or a list of tuples: one check each), then the
parameter's default, then automatic inputs (``auto_inputs.py``: what forward's source says about
each parameter, ``infer.py``, then a search over domains and shapes, ``shape_search.py``).

The SPEC grammar lives in ``spec.py`` (pure Python, so the CLI starts without numpy; its names are
importable from here too); ``build_cases`` (run in the checking process) imports numpy and the
Function's own framework. Random draws depend only on (seed, Function, parameter, SPEC), so
``--input x=float64[3,4]@(a,b)`` with the same ``--seed`` reproduces an automatic input exactly.
"""
from __future__ import annotations

import zlib
from dataclasses import dataclass, field
from typing import Any, Optional

from gradcli.check import special_values
from gradcli.check.spec import (DTYPES, FLOAT_DTYPES, INT_DTYPES, NAMED_DOMAINS, TENSOR_DTYPES,  # noqa: F401
                                AtParam, InputParam, ShapeParam, Spec, SpecError, format_tensor_spec,
                                _short, format_value_spec, parse_assignment, parse_at, parse_shape, parse_spec)

AUTO_DOMAINS = ((-2.0, 2.0), (0.1, 2.0), (1.1, 3.0), (-0.9, 0.9), (-2.0, -0.1))
DEFAULT_SHAPE = (3, 4)
MAX_RECORDED_ELEMENTS = 10_000  # larger tensors are recorded by spec + seed only
# Exceptions a forward raises when it is merely given unsuitable inputs (a shape mismatch in a
# matmul, a scalar where it wants an int, ...): automatic inputs then give "skip", not "error".
UNSUITABLE_INPUT_ERRORS = (ValueError, TypeError, IndexError, RuntimeError)


# ----- building the arguments (checking process only) ------------------------------------------

@dataclass
class Param:
    name: str
    has_default: bool = False
    default: Any = None
    hint: Any = None  # infer.Hint: what forward's source says about it


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
    # the *args build_cases settled on (varargs.py): named parameters from here on, as --input names them
    out += [Param(name) for name in getattr(target, "star_names", None) or ()]
    return out, star


def build_cases(target, specs: dict, *, seed: int, dtype: str = "float64", shape=DEFAULT_SHAPE) -> list:
    try:
        return _build_all(target, specs, seed=seed, dtype=dtype, shape=shape)
    except NoInputs:  # nothing gradcli built fits: what the package's own caller of Cls.apply passes (captured_calls.py)
        from gradcli.check.captured_calls import cases
        found = cases(target, {**getattr(target, "given_specs", {}), **specs}, seed, dtype)
        if found is None:
            raise
        return found


def _build_all(target, specs: dict, *, seed: int, dtype: str = "float64", shape=DEFAULT_SHAPE) -> list:
    """The argument sets to check ``target`` with (a list of Case). Raises NoInputs (-> skip);
    exceptions from user code (example_inputs, or forward failing for other reasons) propagate.
    A ``forward(ctx, x, *args)`` is tried with the argument counts its source suggests (varargs.py)."""
    from gradcli.check import varargs

    target.star_names = None
    params, star = forward_params(target)
    specs = {**getattr(target, "given_specs", {}), **specs}  # [tool.gradcli.inputs] / an inputs file (inputs_from.py)
    seed_global_generators(seed, target.name)
    has_examples = getattr(target.cls, "example_inputs", None) or getattr(target, "given_examples", None)
    if has_examples or not star:
        return _build_cases(target, params, specs, seed, dtype, shape)
    name = varargs.star_name(target)
    given = _given_star_count(specs, name)
    tries = varargs.candidates(target, len(params))
    if given:  # --input args_2=...: at least three extra arguments
        tries = ([n for n in tries if len(n) == given] + [n for n in tries if len(n) > given]
                 or [[f"{name}_{i}" for i in range(given)]])
    refused, raised = None, None
    for names in tries:
        target.star_names = names
        try:
            return _build_cases(target, forward_params(target)[0], specs, seed, dtype, shape)
        except NoInputs as e:
            refused = refused or e
        except Exception as e:  # noqa: BLE001 -- user code raising at this count: another count may run
            raised = raised or e
    target.star_names = None
    if raised is not None and refused is None and specs:  # at inputs the user chose: the exception is the result
        raise raised
    if raised is not None and refused is None:  # at arguments gradcli built (an object it took for a tensor, ...)
        refused = f"forward raised {type(raised).__name__}: {str(raised).strip()[:200]} at the arguments gradcli built"
    counts = ", ".join(str(len(n)) for n in tries)
    raise NoInputs(f"forward takes *{name}; with {counts} extra argument(s) (the counts its source suggests): "
                   f"{refused or raised}. Name the extra arguments {name}_0, {name}_1, ... in --input, or define "
                   f"example_inputs() on {target.name}")


def _given_star_count(specs: dict, name) -> int:
    import re

    found = [int(m.group(1)) + 1 for key in specs if name and (m := re.fullmatch(rf"{re.escape(name)}_(\d+)", key))]
    return max(found, default=0)


def _build_cases(target, params, specs, seed, dtype, shape) -> list:
    from gradcli.check import auto_inputs, initializers
    from gradcli.check.infer import read_hints

    from gradcli.check.varargs import aliases

    be = backend_for(target.backend)
    # a, b = args: what forward does with a is args_0's hint (same position: backward's Nones line up)
    local = {v: k for k, v in aliases(target).items()} if getattr(target, "star_names", None) else {}
    read = read_hints(target, [local.get(p.name, p.name) for p in params])
    hints = {p.name: read.get(local.get(p.name, p.name)) for p in params}
    for p in params:
        p.hint = hints.get(p.name)
    examples = _example_tuples(target)
    if examples is not None:
        return [_case_from_example(target, be, params, ex, i, specs, seed, dtype) for i, ex in enumerate(examples)]
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
    found = auto_inputs.Builder(target, be, params, specs, seed, dtype, tuple(shape))
    if not auto:  # --input fn=fn:sinh@w: w becomes the Parameter fn holds (callable_params.py)
        from gradcli.check.callable_params import bind
        bind(be, params, args)
    base = initializers.given_case(found, args, records) if not auto else found.search(args, records, auto)
    return [base] + found.variants(base)


def probe_copy(be, value):
    """A copy of an argument for a probing forward call, which may write into it: a plain tensor's
    values in a fresh one; a tensor subclass or a sparse tensor (EdgeIndex, COO) by its own clone,
    which keeps what it is; anything else as it is."""
    if not be.is_tensor(value):
        from gradcli.check.backends import fresh_container
        return fresh_container(value)   # forward may pop from a dict argument
    if type(value).__name__ in ("Tensor", "Parameter") and str(getattr(value, "layout", "torch.strided")) == "torch.strided":
        return be.leaf(be.to_numpy(value).copy(), False)
    import copy
    for make in (lambda: value.detach().clone(), lambda: copy.deepcopy(value)):
        try:
            made = make()
        except Exception:  # noqa: BLE001 -- a tensor-like that cannot be copied this way
            continue
        if type(made) is type(value):   # EdgeIndex's clone() is a plain Tensor: not what forward needs
            return made
    return value


def output_shapes(be, fn, args) -> list:
    """Shapes of forward's tensor outputs (None for a non-tensor one) at ``args``, without a graph."""
    import warnings

    import numpy as np

    from gradcli.check.backends import flatten_outputs

    with be.no_grad(), np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = fn(*[probe_copy(be, a) for a in args])
    return [tuple(o.shape) if be.is_tensor(o) else None for o in flatten_outputs(out)]


def forward_problem(be, fn, args) -> tuple:
    """(None, False) when forward runs and its floating outputs are finite, else (why not, whether
    every output element is non-finite). Exceptions from forward propagate."""
    import warnings

    import numpy as np

    from gradcli.check.backends import flatten_outputs

    with be.no_grad(), np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # probing a domain: "invalid value in sqrt" is expected
        # copies: a forward that writes into its input (ctx.mark_dirty) must not change the input set it probes
        out = fn(*[probe_copy(be, a) for a in args])
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
    if spec.kind == "value":
        return spec.value, _record(be, param.name, spec.value, source=source, spec=spec.text)
    if spec.kind == "defaults":
        cls = getattr(param.hint, "object_class", None)
        if cls is None:
            raise NoInputs(f"{param.name}=default() needs {param.name} annotated with a dataclass or NamedTuple "
                           f"whose fields all have defaults")
        value = cls()
        return value, {"name": param.name, "source": source, "spec": spec.text, "type": "object",
                       "class": f"{cls.__module__}.{cls.__qualname__}", "value": repr(value)[:200]}
    if spec.kind == "callable":
        return special_values.make_callable(be, spec.value), {"name": param.name, "source": source, "spec": spec.text,
                                               "type": "callable", "value": spec.value}
    requires_grad = spec.requires_grad
    if spec.kind == "literal":
        if not spec.as_tensor and not isinstance(spec.value, list):
            number = python_number(param, spec.value)
            if number is not None:  # a Python scalar option (dim=1, k=3.0, constant=3, ...)
                return number, _record(be, param.name, number, source=source, spec=spec.text)
        array = np.asarray(spec.value, dtype=spec.dtype or dtype)
        text = spec.text
    else:
        domain = spec.domain or AUTO_DOMAINS[0]
        rng = np.random.default_rng([seed, zlib.crc32(key.encode())])
        kind = spec.dtype or dtype
        if kind in INT_DTYPES:
            array = rng.integers(int(domain[0]), int(domain[1]), size=spec.shape).astype(kind)
        elif kind == "bool":
            array = rng.integers(0, 2, size=spec.shape).astype(bool)
        else:
            array = special_values.structured(rng.uniform(domain[0], domain[1], size=spec.shape), spec.structure).astype(kind)
        text = format_tensor_spec(spec.shape, kind, None if kind == "bool" else domain, requires_grad, spec.structure)
    value = be.leaf(array, requires_grad and array.dtype.kind in "fc")
    return value, _record(be, param.name, value, source=source, spec=text)


def python_number(param: Param, number):
    """What a NUMBER SPEC is for ``param`` when it is a Python number there (specs/check.md §2), else
    None (a 0-d tensor). The parameter is one when its default is a Python number/bool, its
    annotation or its use in forward says int/float/bool, or backward returns None in its place."""
    default = param.default if param.has_default else None
    if isinstance(default, (bool, int, float)):
        return type(default)(number)
    hint = param.hint
    kind = getattr(hint, "kind", None)
    if kind == "int":
        return int(number) if float(number).is_integer() else number
    if kind == "bool":
        return bool(number)
    if kind == "float" or getattr(hint, "backward_none", False) and kind not in ("index", "mask"):
        return float(number)
    return None


def _record(be, name: str, value, source: str, spec: Optional[str] = None, case: Optional[int] = None) -> dict:
    """The JSON record of one argument: enough to reproduce it (values up to MAX_RECORDED_ELEMENTS)."""
    rec = {"name": name, "source": source, "spec": spec}
    if case is not None:
        rec["case"] = case
    if be.is_tensor(value):
        try:
            array = be.to_numpy(value)
        except (TypeError, RuntimeError):   # a sparse tensor (torch: "can't convert Sparse layout tensor to numpy")
            array = None
        rec.update(type="tensor", dtype=be.dtype_name(value), shape=list(value.shape),
                   requires_grad=bool(value.requires_grad),
                   value=array.tolist() if array is not None and array.size <= MAX_RECORDED_ELEMENTS else None)
        if array is None or type(value).__name__ != "Tensor":
            rec["layout"] = f"{type(value).__module__}.{type(value).__qualname__} {getattr(value, 'layout', '')}".strip()
    elif value is None or isinstance(value, (bool, int, float, str)):
        rec.update(type="none" if value is None else type(value).__name__, value=value)
    elif isinstance(value, tuple) and all(v is None or isinstance(v, (bool, int, float, str)) for v in value):
        rec.update(type="tuple", value=list(value))
    else:
        rec.update(type=type(value).__name__, value=repr(value)[:200])
        if special_values.is_default_object(value):  # a Params() default: default() builds it again
            rec.update(type="object", spec=rec["spec"] or "default()",
                       **{"class": f"{type(value).__module__}.{type(value).__qualname__}"})
    return rec


from gradcli.check.reshaped_inputs import reduced_shapes, reshape_auto  # noqa: E402,F401  (the runner imports them here)
