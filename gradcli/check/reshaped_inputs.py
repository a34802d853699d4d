"""Automatic inputs drawn again in the shapes backward's gradients show they broadcast from (the runner calls
these after a first check: a ``[4]`` gamma gradient for a ``3x4`` gamma). Split from ``inputs.py``;
re-exported there.
"""
from __future__ import annotations

from typing import Optional

from gradcli.check.inputs import (UNSUITABLE_INPUT_ERRORS, Case, Spec, _from_spec, backend_for, forward_params,
                                  forward_problem, output_shapes, parse_spec)


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
    seeded draw), or None when forward does not run on them. Their records say ``shape_from: backward``.

    Only a re-draw that forward's own broadcasting asks for is kept: forward's outputs must keep
    their shapes (a per-feature ``[4]`` gamma or bias is broadcast back against the ``3x4`` batch).
    A re-draw that changes them (``x*x`` with a 0-d gradient for a ``3x4`` x: x itself would become
    0-d) would fit the input to a wrong gradient and hide the shape bug: None."""
    be = backend_for(target.backend)
    params, _ = forward_params(target)
    args, records = list(case.args), list(case.records)
    for i, shape in shapes.items():
        old = parse_spec(records[i]["spec"])
        spec = Spec("tensor", "", shape=tuple(shape), dtype=old.dtype or dtype, domain=old.domain,
                    requires_grad=old.requires_grad)
        args[i], records[i] = _from_spec(be, spec, f"{target.name}.{params[i].name}", seed, dtype, params[i],
                                         source="auto")
        records[i]["shape_from"] = "backward"
    try:
        why, _ = forward_problem(be, target.fn, args)
        if why is None and output_shapes(be, target.fn, args) != output_shapes(be, target.fn, case.args):
            return None
    except UNSUITABLE_INPUT_ERRORS:
        return None
    return Case(args, records, list(case.not_checked)) if why is None else None
