"""Where a ``region`` finding's hint points: the mask among the statements computing the
gradient (not one whose edge is the region's own), else where the gradient is sliced or padded
for a positional region (the edges, a row), else the first mask in backward."""
from __future__ import annotations

import ast
import re

from gradcli.check.diagnosis.source import chain, first_statement_with


def region_statement(src, params, statement, expr, gradient):
    """(advice, statement to quote or None) for a region finding with ``params``."""
    def masks(n):
        return isinstance(n, ast.Compare) or (
            isinstance(n, ast.Attribute) and n.attr in ("where", "clamp", "sign", "maximum", "minimum"))
    # the first mask among the statements computing this gradient, else the first in backward;
    # a mask whose edge is the region's own edge (`pos = x > 0` where x < 0 is wrong) is right:
    # what is wrong is the value the gradient takes on one side of it — unless some elements
    # told nothing (zero both ways), which can hide that the region's true edge is elsewhere
    found = [] if not src or expr is None else [
        c for c in chain(src, statement, expr) if any(masks(n) for n in ast.walk(c))]
    # (or whose one side is exactly the wrong elements, evaluated: `mask_sides`)
    edged = [] if gradient[0] is None else [
        c for c in chain(src, *gradient) if c is not gradient[0] and _pure_mask(c) and (
            (params.get("all_informative") and _same_edge(src, c, params.get("description", "")))
            or _assigns_one_of(c, params.get("mask_sides", ())))]
    stmt = next((c for c in found if c not in edged), None)
    if edged and stmt is None:
        stmt = gradient[0]
    if stmt is None and not edged and gradient[0] is not None and params.get("description", "").startswith(
            POSITIONAL):  # no mask: the edges or a row are lost where the gradient is sliced or padded
        stmt = next((c for c in reversed(list(chain(src, *gradient))) if any(  # the last before the return
            isinstance(n, ast.Subscript) and isinstance(n.slice, (ast.Slice, ast.Tuple)) and any(
                isinstance(e, ast.Slice) for e in ast.walk(n.slice)) for n in ast.walk(c))), None)
        if stmt is not None:
            return f"check what the slicing or padding does to {params['description']}", stmt
    stmt = stmt or (src and not edged and first_statement_with(src, masks))
    return f"check the branch or mask for {params.get('description', 'that region')}", stmt


CASTS = ("to", "float", "double", "type_as", "half", "bool", "int", "long")
REGION_EDGE = re.compile(r"^\|?[A-Za-z_]\w*\|? ?(?:<=|>=|<|>) ?(-?\d+(?:\.\d+)?(?:e-?\d+)?)$")


POSITIONAL = ("the first", "the last", "the diagonal", "off the diagonal", "above the", "below the", "on and")


def _pure_mask(stmt) -> bool:
    """``keep = x > 0`` or ``keep = (x > 0).to(g.dtype)``: a comparison only, holding no branch
    value (``where(x > 0, ones, …)`` holds the values of both sides, which may be the mistake)."""
    node = getattr(stmt, "value", None) if isinstance(stmt, ast.Assign) else None
    while isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in CASTS:
        node = node.func.value
    return isinstance(node, ast.Compare)


def _assigns_one_of(stmt, names) -> bool:
    return isinstance(stmt, ast.Assign) and any(isinstance(t, ast.Name) and t.id in names for t in stmt.targets)


def _same_edge(src, stmt, description: str) -> bool:
    """Whether ``stmt`` compares against the number that bounds the region ``description`` (``x <
    0.5`` for a mask ``x > 0.5``): the mask's edge is where the region's is."""
    match = REGION_EDGE.match(description.strip())
    if not match:
        return False
    edge = abs(float(match.group(1)))
    for node in ast.walk(stmt):
        if not isinstance(node, ast.Compare):
            continue
        for side in [node.left] + list(node.comparators):
            value = side.value if isinstance(side, ast.Constant) else (
                -side.operand.value if isinstance(side, ast.UnaryOp) and isinstance(side.operand, ast.Constant)
                else src.constants.get(side.id) if isinstance(side, ast.Name) else None)
            if isinstance(value, (int, float)) and not isinstance(value, bool) and abs(abs(value) - edge) <= 1e-9 * (
                    1 + edge):
                return True
    return False
