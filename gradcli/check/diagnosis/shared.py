"""A mistake several gradients share, quoted where they share it.

When two or more inputs get one and the same finding — ``sign``, ``scale`` with one factor,
``missing_term`` leaving out one and the same output (or holding one piece of forward constant),
``wrong_variable`` misreading one tensor in how grad_output is applied, or
``ignores_grad_output`` where backward never reads grad_output at all — the mistake is usually made once, in a
statement all their gradients read and none of the right ones does (a softmax backward's score
gradient feeding dq and dk; an LSTM's ``dc = grad_c`` where ``grad_c + grad_h * o * (1 - t²)``
is needed, feeding the gates' gradients). The findings then carry that statement's line as
``params.at_line`` and the hints quote it.
"""
from __future__ import annotations

import ast

from gradcli.check.diagnosis.source import (FACTOR_OPS, SIGN_OPS, backward_source, grad_output_names,
                                            gradient_statement, shared_statement)


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
            positions = [diag.positions.get(f.input, f.input) for f in group]
            stmt = None
            if src is not None and isinstance(ops, tuple) and ops and ops[0] == "held":
                held = _names(ops[1])  # where the piece held constant is read (`grad_h = rinv * g_hat`)
                reads = lambda n: isinstance(n, ast.Name) and n.id in held and isinstance(n.ctx, ast.Load)  # noqa: E731
                stmt = shared_statement(src, positions, right, reads) if held else None
                own = {id(s): s for s in (gradient_statement(src, p)[0] for p in positions)}
                if held and not stmt and len(own) == 1:  # `grad_h = rinv * g_hat` returned for x and residual
                    only = next(iter(own.values()))
                    stmt = only if isinstance(only, ast.Assign) and any(reads(n) for n in ast.walk(only.value)) else None
                ops = "cotangent"
            if src is not None and ops == "cotangent":
                names = grad_output_names(src)
                ops = lambda n: isinstance(n, ast.Name) and n.id in names  # noqa: E731
            stmt = stmt or (src and shared_statement(src, positions, right, ops))
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
    alike = {}  # one tensor misread, one piece held constant, for several inputs: in the adjoint they share
    for f, _ in found:
        if f.input is not None and f.kind == "wrong_variable" and f.params.get("side") == "grad_output":
            alike.setdefault((f.kind, f.params.get("used"), f.params.get("needed")), []).append(f)
        elif f.input is not None and f.kind == "missing_term" and f.params.get("variant") == "held_constant":
            alike.setdefault((f.kind, f.params.get("factor")), []).append(f)
    for key, group in alike.items():
        if len(group) >= 2:  # `g_z = grad / out` feeding g_spec and g_fb: made once, where grad_output is read
            yield group, ("held", key[1]) if key[0] == "missing_term" else "cotangent"


def _names(code) -> set:
    try:
        return {n.id for n in ast.walk(ast.parse(str(code), mode="eval")) if isinstance(n, ast.Name)}
    except SyntaxError:
        return set()

