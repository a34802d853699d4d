"""A mistake several gradients share, quoted where they share it.

When two or more inputs get one and the same finding — ``sign``, ``scale`` with one factor,
``missing_term`` leaving out one and the same output, or ``ignores_grad_output`` where backward
never reads grad_output at all — the mistake is usually made once, in a
statement all their gradients read and none of the right ones does (a softmax backward's score
gradient feeding dq and dk; an LSTM's ``dc = grad_c`` where ``grad_c + grad_h * o * (1 - t²)``
is needed, feeding the gates' gradients). The findings then carry that statement's line as
``params.at_line`` and the hints quote it.
"""
from __future__ import annotations

import ast

from gradcli.check.diagnosis.source import (FACTOR_OPS, SIGN_OPS, backward_source, grad_output_names,
                                            shared_statement)


def shared_mistake(diag, found):
    """``found``: [(finding, evidence)] of ``diag`` (the driver); sets ``at_line`` in place."""
    for group, ops in _groups(found):
        right = [diag.positions.get(i, i) for i in diag.indices if i not in {f.input for f, _ in found}]
        try:
            src = backward_source(diag.cls, diag.executed)
            if src is not None and ops == "unread":
                names = grad_output_names(src)
                if any(isinstance(n, ast.Name) and n.id in names and isinstance(n.ctx, ast.Load)
                       for n in ast.walk(src.tree)):
                    continue  # grad_output is read: each gradient's own statement says how it is misused
                ops = FACTOR_OPS  # never read: it is missing where the factor all gradients share is made
            if src is not None and ops == "cotangent":
                names = grad_output_names(src)
                ops = lambda n: isinstance(n, ast.Name) and n.id in names  # noqa: E731
            stmt = src and shared_statement(src, [diag.positions.get(f.input, f.input) for f in group], right, ops)
        except Exception:  # unparsable source: each hint quotes its own statement
            continue
        for f in group if stmt is not None else ():
            f.params.setdefault("at_line", src.line_of(stmt))


def _groups(found):
    """(findings, what the shared statement must hold) for each shared mistake."""
    scaled = [f for f, _ in found if f.kind in ("sign", "scale") and f.input is not None]
    factors = {round(float(f.params.get("factor", -1.0)), 9) for f in scaled}
    if len(scaled) >= 2 and len(factors) == 1:  # one factor shared by all, a sign or another
        yield scaled, SIGN_OPS if factors == {-1.0} else FACTOR_OPS
    dropped = [f for f, _ in found if f.kind == "missing_term" and f.params.get("variant") == "output"]
    if len(dropped) >= 2 and len({f.params.get("output") for f in dropped}) == 1:
        # the statement where the dropped output's cotangent must enter: one reading a cotangent
        yield dropped, "cotangent"
    ignored = [f for f, _ in found if f.kind == "ignores_grad_output" and f.input is not None]
    if len(ignored) >= 2:  # grad_output never read: left out once, where the shared factor is made
        yield ignored, "unread"
