"""How much of a derivative table ``gradcli diff`` accepts, and whether what it prints is right.

For each row of bench/diff_table_data.py (≥ 230 expressions: a calculus table, SymPy spellings, ML functions,
calculator notation): run ``gradcli diff EXPR --at POINT`` in-process, then compare
* the printed value of df/dx (10 significant digits) with mpmath.diff of the plain-mpmath reference at
  30 digits (right: within 1e-9 relative), and
* the printed derivative formula, parsed back by gradcli's parser and evaluated at 30 digits (within 1e-20).
Accepted = parsed and df/dx has a real value at the point. Run: ``python bench/diff_table.py [-v]``.
"""
import os
import sys
import time

import mpmath

sys.path.insert(0, os.path.dirname(__file__))

from diff_table_data import TABLE  # noqa: E402

from gradcli.expr.api import DiffRequest, run  # noqa: E402
from gradcli.expr.errors import ExpressionError  # noqa: E402
from gradcli.expr.parser import make_symbol, parse  # noqa: E402
from gradcli.expr.precise import precise  # noqa: E402


def _point_text(point):
    return repr(float(point)) if not isinstance(point, str) else point


def check_row(expr, reference, point):
    """(status, detail): status in accepted-right, accepted-wrong, refused."""
    text = _point_text(point)
    try:
        result = run(DiffRequest([expr], at=[text], simplify_timeout=3.0))
    except ExpressionError as error:
        return "refused", str(error)
    cell = next(c for c in result.points[0].cells if c.key[1] == ("x",)) if result.variables == ["x"] else None
    if cell is None or cell.status != "ok":
        return "refused", f"df/dx at {text}: {cell.status if cell else 'variables ' + str(result.variables)}"
    with mpmath.workdps(30):
        x0 = mpmath.mpf(text)
        truth = mpmath.diff(reference, x0)
        printed = mpmath.mpf(cell.value_text)
        value_ok = abs(printed - truth) <= 1e-9 * abs(truth) + mpmath.mpf(10) ** -25
        formula = next(f for f in result.formulas if f.key == (0, ("x",))).text["ascii"]
        x = make_symbol("x")
        try:
            ((status, from_formula),), _ = precise([parse(formula).expr], [], {x: parse(text).expr})
        except ExpressionError as error:
            return "accepted-wrong", f"the printed formula {formula!r} does not parse back: {error}"
        formula_ok = status == "ok" and abs(from_formula - truth) <= 1e-20 * max(1, abs(truth))
    detail = f"printed {cell.value_text}, mpmath {mpmath.nstr(truth, 15)}, formula {formula}"
    if not value_ok or not formula_ok:
        return "accepted-wrong", detail
    return "accepted-right", detail + ("" if result.exit_code == 0 else f" (exit {result.exit_code}: "
                                       f"{result.points[0].problem})")


def main(verbose=False):
    counts, rows, started = {}, [], time.monotonic()
    for expr, reference, point, group in TABLE:
        status, detail = check_row(expr, reference, point)
        counts[status] = counts.get(status, 0) + 1
        rows.append((group, expr, status, detail))
        if verbose or status != "accepted-right" or "exit" in detail:
            print(f"{status:15} {group:15} {expr!r} at {_point_text(point)}: {detail}")
    total = len(TABLE)
    accepted = counts.get("accepted-right", 0) + counts.get("accepted-wrong", 0)
    right = counts.get("accepted-right", 0)
    print(f"\n{total} expressions: accepted {accepted} ({100 * accepted / total:.1f}%), right {right} of the "
          f"accepted ({100 * right / max(accepted, 1):.1f}%); {time.monotonic() - started:.0f} s")
    return 0 if accepted / total >= 0.98 and right == accepted else 1


if __name__ == "__main__":
    raise SystemExit(main("-v" in sys.argv))
