"""What ``gradcli diff`` found, as plain data for the renderers (no SymPy objects in here).

Text that differs by output style is kept as a dict {"ascii": ..., "unicode": ..., "latex": ...}: ASCII is
what plain/JSON output print (and what the parser reads back), Unicode is for the terminal table.
"""
from dataclasses import dataclass, field
from typing import Optional


@dataclass
class Formula:
    key: tuple                 # (output index, wrt tuple)
    label: dict                # style -> "∂f/∂x" / "df/dx" / LaTeX
    text: dict                 # style -> the derivative
    simplified: bool = False   # True when simplify() shortened it


@dataclass
class Cell:
    """One quantity (f or a derivative) at one point, from every source."""
    key: tuple
    label: dict
    exact: Optional[dict] = None        # style -> exact value text; None if not computed or too long
    status: str = "ok"                  # ok | not real | undefined
    value: Optional[float] = None       # the exact value as the nearest float
    value_text: str = "—"               # the exact value rounded to the digits shown
    autograd: Optional[float] = None    # the engine's value (forward for f, backward for derivatives)
    autograd_text: str = "—"
    finite_difference: Optional[float] = None
    fd_error: Optional[float] = None    # the finite-difference estimator's own error estimate
    fd_text: str = "—"                  # only the digits the error estimate vouches for
    error: Optional[float] = None       # largest |column - exact|
    ok: Optional[bool] = None           # None when nothing could be compared


@dataclass
class PointResult:
    at: dict                            # variable -> float
    at_text: str                        # "x=3, y=2" (exact values as typed/parsed)
    cells: list = field(default_factory=list)
    max_error: Optional[float] = None
    ok: bool = True
    problem: Optional[str] = None       # why it failed: engine bug / non-differentiable point / ...


@dataclass
class Note:
    kind: str                           # heaviside, sign, diracdelta, piecewise, zoo, derivative, domain,
    text: dict                          # kink, simplify, engine, ... ; style -> message


@dataclass
class CheckVerdict:
    variable: str
    answer: str                         # the user's answer, ASCII
    verdict: str                        # proved | refuted | undecided
    detail: str
    point: Optional[dict] = None        # for refuted: where the answer differs


@dataclass
class DiffResult:
    inputs: list                        # the expressions as typed
    expressions: dict                   # style -> list of parsed expressions
    names: list                         # ["f"] or ["f1", "f2", ...]
    variables: list
    assumptions: str                    # real | positive | complex
    method: str                         # "sympy.diff" or "reverse mode (CSE)"
    formulas: list = field(default_factory=list)
    definitions: list = field(default_factory=list)   # CSE form: [(name, style -> text)]
    points: list = field(default_factory=list)
    warnings: list = field(default_factory=list)
    checks: list = field(default_factory=list)
    info: list = field(default_factory=list)          # non-warning remarks (e.g. shown in CSE form)
    python_code: Optional[str] = None
    exit_code: int = 0
    order: int = 1
    hessian: bool = False
    parameters: list = field(default_factory=list)    # free symbols held fixed (not in --wrt)

    def formulas_of_order(self, order):
        return [f for f in self.formulas if len(f.key[1]) == order]
