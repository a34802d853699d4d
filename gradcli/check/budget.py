"""Estimate before allocating: the memory and forward evaluations a check needs, and the limit.

``gradcli check`` estimates, before it draws a single input, what checking a Function at the planned
shapes needs in full and in fast mode (``estimate``), and refuses with the estimate and the cheaper
option when the mode it would run needs more than the limit (``--max-memory``; by default a fraction
of the memory available now) — instead of growing until numpy fails. The model counts what
gradcheck holds at its peak, in array elements (specs/gradcheck.md, "Cost"; calibrated against the
peak RSS of real checks, ``tests/test_budget.py``):

* always: the inputs as drawn and gradcheck's copies, the outputs and the graph's saved tensors;
* full mode: per differentiable input the backward's gradients for 3 probe cotangents, the
  reference's values, errors and bounds and the comparison's temporaries (~20 arrays of the
  input's size), the cotangents (3 × the outputs), and the broadcast strategy's line arrays
  (~30 × the outputs: Richardson's tables) or a batched chunk (2²¹ elements, a few copies);
* fast mode: float32 directions and cotangents, one gradient at a time, and per evaluation a
  perturbed copy of every input and the forward's outputs.

Pure Python (no numpy): the CLI parses ``--max-memory`` with it.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Optional, Sequence

import click

GiB = 2**30
DEFAULT_FRACTION = 0.5  # of the memory available at the start: checkers of other files run beside this one
UNITS = {"": 1, "b": 1, "k": 2**10, "kb": 2**10, "kib": 2**10, "m": 2**20, "mb": 2**20, "mib": 2**20,
         "g": GiB, "gb": GiB, "gib": GiB, "t": 2**40, "tb": 2**40, "tib": 2**40}
BATCH_CHUNK_ELEMENTS = 2**21  # numeric.vjp.BATCH_BUDGET_ELEMENTS (not imported: that pulls numpy in)
LOCALIZE_MAX_ELEMENTS = 20000  # check.gradcheck.LOCALIZE_MAX_ELEMENTS
AUTO_FULL_ELEMENTS = 4096  # check.gradcheck.AUTO_FULL_ELEMENTS
POINTS_PER_ELEMENT = 5  # full mode, per element: central difference (4) + complex step (1)
FAST_POINTS = 6  # fast mode: the same along one line (+30 where Richardson is needed)


def parse_size(text: str) -> int:
    """Bytes for ``2G``, ``512M``, ``1.5GiB``, ``3e9``; ValueError with a one-line message otherwise."""
    t = str(text).strip().lower().replace(" ", "")
    number = t.rstrip("abcdefghijklmnopqrstuvwxyz")
    unit = t[len(number):]
    try:
        value = float(number)
    except ValueError:
        value = None
    if value is None or unit not in UNITS or not value > 0 or value != value or value == float("inf"):
        raise ValueError(f"{text!r} is not a memory size: give a positive number with a unit, e.g. 2G, 512M, 1.5GiB")
    return int(value * UNITS[unit])


def format_size(size: float) -> str:
    """``1.5 GiB``, ``300 MiB``, ``12 KiB``: two significant digits, binary units."""
    for unit, factor in (("TiB", 2**40), ("GiB", GiB), ("MiB", 2**20), ("KiB", 2**10)):
        if size >= factor:
            value = size / factor
            return f"{value:.2g} {unit}" if value < 10 else f"{value:.0f} {unit}"
    return f"{int(size)} B"


class MemoryParam(click.ParamType):
    name = "SIZE"

    def convert(self, value, param, ctx):
        if isinstance(value, int):
            return value
        try:
            return parse_size(value)
        except ValueError as e:
            self.fail(str(e), param, ctx)


def available_memory() -> Optional[int]:
    """Bytes available now: /proc/meminfo's MemAvailable (else free pages), within a cgroup's limit."""
    available = None
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    available = int(line.split()[1]) * 1024
                    break
    except (OSError, ValueError, IndexError):
        pass
    if available is None:
        try:
            available = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        except (AttributeError, ValueError, OSError):
            return None
    limit = _cgroup_room()
    return available if limit is None else min(available, limit)


def _cgroup_room() -> Optional[int]:
    """What a cgroup v2 memory limit leaves (memory.max − memory.current), None without one."""
    try:
        with open("/sys/fs/cgroup/memory.max") as f:
            text = f.read().strip()
        if text == "max":
            return None
        with open("/sys/fs/cgroup/memory.current") as f:
            return max(0, int(text) - int(f.read().strip()))
    except (OSError, ValueError):
        return None


def default_limit() -> Optional[int]:
    available = available_memory()
    return None if available is None else int(DEFAULT_FRACTION * available)


@dataclass
class Needs:
    """What one input set needs in each mode: bytes at the peak and forward evaluations (points)."""

    full_bytes: int
    fast_bytes: int
    full_evaluations: int
    fast_evaluations: int
    elements: int  # differentiable input elements

    def mode(self, requested: str) -> str:
        """The mode gradcheck runs for ``requested`` (auto: full up to AUTO_FULL_ELEMENTS)."""
        if requested in ("full", "fast"):
            return requested
        return "full" if self.elements <= AUTO_FULL_ELEMENTS else "fast"

    def to_dict(self) -> dict:
        return {"full_bytes": self.full_bytes, "fast_bytes": self.fast_bytes,
                "full_evaluations": self.full_evaluations, "fast_evaluations": self.fast_evaluations,
                "elements": self.elements}


def estimate(diff_sizes: Sequence[int], other_elements: int = 0, output_sizes: Optional[Sequence[int]] = None,
             itemsize: int = 8) -> Needs:
    """Needs of gradcheck on differentiable inputs of ``diff_sizes`` elements (plus ``other_elements``
    in other tensors), with outputs of ``output_sizes`` elements (unknown before forward ran: assumed
    as large as the largest input, what element-wise and broadcasting code gives). ``itemsize``: the
    numeric side's (float64: 8, whatever the inputs' dtype when forward accepts float64)."""
    sizes = [int(n) for n in diff_sizes]
    total = sum(sizes)
    largest = max(sizes, default=0)
    outputs = sum(output_sizes) if output_sizes is not None else largest
    # Always: inputs drawn + gradcheck's leaves and numeric copies, outputs and what the graph saves.
    base = 3 * total + other_elements + 3 * outputs
    # Full: kept gradients (3 cotangents) of every input, the report's arrays (analytic, numeric, error:
    # 3 each), the reference's value/error/low/high and compare temporaries for the input at hand.
    full = base + 3 * outputs + 3 * total + 9 * total + 30 * largest
    broadcast_lines = 30 * outputs  # the broadcast strategy's tables over the outputs
    batched = 4 * min(BATCH_CHUNK_ELEMENTS, largest + outputs) if largest <= LOCALIZE_MAX_ELEMENTS else 0
    full += max(broadcast_lines, batched)
    # Fast: float32 directions (half) and cotangents (2 × half), a gradient and its product with u,
    # per evaluation a perturbed copy of every input and the outputs (and the line's few arrays).
    fast = base + total // 2 + outputs + 2 * total + total + outputs
    full_points = sum(POINTS_PER_ELEMENT * n if n <= LOCALIZE_MAX_ELEMENTS else 2 * FAST_POINTS for n in sizes)
    return Needs(int(full * itemsize), int(fast * itemsize), full_points + 4, FAST_POINTS + 1, total)


def refusal(needs: Needs, requested_mode: str, limit: Optional[int]) -> Optional[str]:
    """The one-line reason to refuse this check under ``limit`` bytes, or None when it fits."""
    if limit is None:
        return None
    mode = needs.mode(requested_mode)
    need = needs.full_bytes if mode == "full" else needs.fast_bytes
    if need <= limit:
        return None
    at = f"at {needs.elements:,} input elements"
    if mode == "full":
        over = ", over the limit too: check at a smaller --shape" if needs.fast_bytes > limit else ""
        return (f"not checked: needs ~{format_size(need)} for full mode (limit {format_size(limit)}; --mode fast "
                f"needs ~{format_size(needs.fast_bytes)}{over}) {at}, and ~{needs.full_evaluations:,} forward "
                f"evaluations (fast mode: ~{needs.fast_evaluations}); raise the limit with --max-memory")
    return (f"not checked: needs ~{format_size(need)} even in fast mode (limit {format_size(limit)}) {at}: "
            f"check at a smaller --shape, or raise the limit with --max-memory")


def planned_sizes(target, specs: dict, shape: tuple, dtype: str) -> Optional[tuple]:
    """(differentiable sizes, other tensor elements) of the input set ``gradcli check`` is about to
    draw — automatic inputs at ``shape``, ``--input`` tensors at theirs — without drawing anything;
    None when the Function's own ``example_inputs()`` give them (user code: estimated after)."""
    from gradcli.check.inputs import forward_params
    from gradcli.check.spec import FLOAT_DTYPES

    if getattr(target.cls, "example_inputs", None) is not None or getattr(target, "given_examples", None):
        return None
    params, star = forward_params(target)
    if star:
        return None
    specs = {**getattr(target, "given_specs", {}), **specs}
    auto = _elements(shape)
    diff, other = [], 0
    for p in params:
        spec = specs.get(p.name)
        if spec is None:
            if not p.has_default:
                diff.append(auto)
            continue
        if getattr(spec, "kind", None) != "tensor":
            continue
        elements = _elements(spec.shape)
        if spec.requires_grad and (spec.dtype or dtype) in FLOAT_DTYPES:
            diff.append(elements)
        else:
            other += elements
    return diff, other


def _elements(shape) -> int:
    n = 1
    for d in shape:
        n *= int(d)
    return n


class TooLarge(Exception):
    """A check refused before allocating: the message says what it needs and the cheaper option."""


def limit_for(options) -> Optional[int]:
    """The memory limit of a run: ``--max-memory``, else a fraction of what is available now."""
    given = getattr(options, "max_memory", None)
    return int(given) if given is not None else default_limit()


def requested_mode(options) -> str:
    return (getattr(options, "gradcheck", None) or {}).get("mode") or "auto"


def refuse_before_drawing(target, options):
    """Raise TooLarge when the input set about to be drawn (``--shape``, ``--input`` shapes) would need
    more than the limit; nothing is allocated (milliseconds, whatever the shape)."""
    planned = planned_sizes(target, options.specs, tuple(options.shape), options.dtype)
    if planned is None:
        return
    why = refusal(estimate(*planned), requested_mode(options), limit_for(options))
    if why is not None:
        raise TooLarge(why)


def refusal_for_case(be, args, options) -> Optional[str]:
    """The refusal for an input set as built (the Function's own example inputs included), or None."""
    tensors = [a for a in args if be.is_tensor(a)]
    floating = [a for a in tensors if be.is_floating(a)]
    diff = [a for a in floating if be.requires_grad(a)] or floating
    diff_ids = {id(a) for a in diff}
    sizes = [_elements(tuple(a.shape)) for a in diff]
    other = sum(_elements(tuple(a.shape)) for a in tensors if id(a) not in diff_ids)
    return refusal(estimate(sizes, other), requested_mode(options), limit_for(options))
