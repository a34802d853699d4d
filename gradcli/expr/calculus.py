"""Which derivatives to compute, and computing them: gradient/Jacobian, Hessian, all N-th order partials.

Small expressions go through ``sympy.diff`` (readable results, later simplified). Expressions that are
large as trees but small as DAGs (one formula for a whole network) go through reverse mode over the
CSE'd graph (``reverse.py``), which returns the gradient in CSE form: named definitions plus entries that
refer to them.
"""
import re
from dataclasses import dataclass, field
from itertools import combinations_with_replacement

import sympy

from gradcli.expr.errors import ExpressionError
from gradcli.expr.formatting import label
from gradcli.expr.reverse import gradient_graph, tree_size

LARGE_TREE = 1500      # tree nodes beyond which the gradient is taken in reverse mode over the DAG
MAX_ORDER = 20
MAX_ENTRIES = 400


@dataclass
class Entry:
    """One quantity: output ``output`` differentiated by ``wrt`` (``()`` is the output's value)."""
    output: int
    wrt: tuple
    expr: object
    name: str          # "f", "f1", ...

    @property
    def key(self):
        return (self.output, self.wrt)

    def label(self, style="unicode"):
        return label(self.name, self.wrt, style)


@dataclass
class Derivatives:
    exprs: list
    names: list
    variables: list                                  # SymPy symbols, in display order
    entries: list                                    # values first, then order 1, then higher orders
    definitions: list = field(default_factory=list)  # CSE form: [(symbol, expr)] shared by entries
    method: str = "sympy.diff"
    parameters: list = field(default_factory=list)   # free symbols not differentiated by (see --wrt)
    cut: list = field(default_factory=list)          # planned keys the budget left uncomputed

    def of_order(self, order):
        return [entry for entry in self.entries if len(entry.wrt) == order]

    @property
    def variable_names(self):
        return [str(v) for v in self.variables]

    @property
    def symbols(self):
        """Every symbol a point must give a value for: the variables, then the parameters."""
        return list(self.variables) + list(self.parameters)


def natural_key(name):
    """x2 before x10; otherwise alphabetical."""
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", name)]


def choose_variables(exprs, wrt_names, make_symbol):
    """--wrt names (validated) or every free symbol, in natural alphabetical order."""
    if wrt_names:
        seen = []
        for name in wrt_names:
            if not re.fullmatch(r"[A-Za-z][A-Za-z0-9_]*", name):
                raise ExpressionError(f"--wrt: {name!r} is not a variable name")
            if name in seen:
                raise ExpressionError(f"--wrt: {name!r} given twice")
            seen.append(name)
        return [make_symbol(name) for name in seen]
    free = set()
    for expr in exprs:
        free |= expr.free_symbols
    return sorted(free, key=lambda s: natural_key(s.name))


def output_names(count):
    return ["f"] if count == 1 else [f"f{i + 1}" for i in range(count)]


def plan(n_outputs, variables, order, hessian):
    """The list of (output, wrt) keys to compute, in display order."""
    if order < 1 or order > MAX_ORDER:
        raise ExpressionError(f"--order must be between 1 and {MAX_ORDER}")
    names = [str(v) for v in variables]
    keys = [(i, ()) for i in range(n_outputs)]
    keys += [(i, (v,)) for i in range(n_outputs) for v in names]
    if hessian:
        keys += [(i, pair) for i in range(n_outputs) for pair in combinations_with_replacement(names, 2)]
    if order > 1 and not (hessian and order == 2):
        keys += [(i, combo) for i in range(n_outputs) for combo in combinations_with_replacement(names, order)]
    if len(keys) > MAX_ENTRIES:
        raise ExpressionError(f"that asks for {len(keys)} derivatives (at most {MAX_ENTRIES}); "
                              "use fewer variables (--wrt) or a lower --order")
    return keys


def _diff(expr, variable):
    """sympy.diff, except that 0**u (0 where u > 0, its only differentiable region) and floor/ceiling
    have derivative 0: SymPy's 0**u*log(0) is nan, which would turn the exact 0 of d/dx 0^x into
    "undefined"."""
    zero_powers = [p for p in expr.atoms(sympy.Pow) if p.base == 0 and p.exp.free_symbols]
    # floor/ceiling are constant between integers: derivative 0 there (SymPy leaves an unevaluated
    # Derivative); the jumps at integers are reported as kinks at the points.
    zero_powers += [f for f in expr.atoms(sympy.floor, sympy.ceiling) if f.free_symbols]
    if not zero_powers:
        return sympy.diff(expr, variable)
    held = {p: sympy.Dummy(f"zero_power{k}") for k, p in enumerate(zero_powers)}
    derivative = sympy.diff(expr.xreplace(held), variable)
    return derivative.xreplace({dummy: p for p, dummy in held.items()})


def differentiate(exprs, variables, order=1, hessian=False, deadline=None):
    """All planned derivatives. Large expressions: gradient only, in reverse mode (CSE form).

    With a ``deadline`` (deadline.Deadline), derivatives still missing when it passes are listed in
    ``cut`` instead of computed (lower orders come first, so what is shown is complete per order).
    """
    derivs = _differentiate(exprs, variables, order, hessian, deadline)
    free = set().union(*(expr.free_symbols for expr in exprs)) - set(variables)
    derivs.parameters = sorted(free, key=lambda s: natural_key(s.name))
    return derivs


def _differentiate(exprs, variables, order, hessian, deadline):
    names = output_names(len(exprs))
    keys = plan(len(exprs), variables, order, hessian)
    by_name = {str(v): v for v in variables}
    large = any(tree_size(expr) > LARGE_TREE for expr in exprs)
    if large:
        if hessian or order > 1:
            raise ExpressionError(f"expression too large for --hessian/--order (over {LARGE_TREE} nodes "
                                  "as a tree); ask for the gradient only")
        definitions, rows = gradient_graph(exprs, variables)
        values = {(i, ()): expr for i, expr in enumerate(exprs)}
        values.update({(i, (str(v),)): rows[i][j] for i in range(len(exprs)) for j, v in enumerate(variables)})
        entries = [Entry(i, wrt, values[(i, wrt)], names[i]) for i, wrt in keys]
        return Derivatives(list(exprs), names, list(variables), entries, definitions, "reverse mode (CSE)")
    cache = {}

    def derivative(i, wrt):
        if (i, wrt) not in cache:
            cache[(i, wrt)] = exprs[i] if not wrt else _diff(derivative(i, wrt[:-1]), by_name[wrt[-1]])
        return cache[(i, wrt)]

    from gradcli.expr.deadline import CUT
    entries, cut = [], []
    for i, wrt in keys:
        expr = deadline.attempt("differentiation", derivative, i, wrt) if deadline and not cut else \
            (CUT if cut else derivative(i, wrt))
        if expr is CUT:
            cut.append((i, wrt))
            continue
        entries.append(Entry(i, wrt, expr, names[i]))
    return Derivatives(list(exprs), names, list(variables), entries, cut=cut)
