"""``gradcli diff`` end to end, minus printing: a DiffRequest in, a DiffResult (plain data) out.

Order of work: parse everything first (all usage errors surface before any computing); differentiate;
hand the points to the engine side (a process forked before SymPy was imported, see engine_process.py);
fork the budgeted child for simplification and proofs; compute the high-precision values, fork a second
budgeted child for exact point values, search for --check counterexamples; then collect everything.
Anything that can blow up (simplify, exact arithmetic, proofs) happens only in the budgeted children.
"""
from dataclasses import dataclass, field
from typing import Optional

from gradcli.expr import caveats, formatting
from gradcli.expr.budget import Budgeted
from gradcli.expr.calculus import choose_variables, differentiate, natural_key
from gradcli.expr.formatting import label
from gradcli.expr.errors import ExpressionError
from gradcli.expr.exact_jobs import difference_is_zero, exact_values, simplified
from gradcli.expr.model import DiffResult, Formula, Note
from gradcli.expr.precise import OUT_OF_RANGE
from gradcli.expr.parser import make_symbol, parse, parse_value, split_assignments

MAX_POINTS = 50


@dataclass
class DiffRequest:
    """The ``gradcli diff`` options, validated (see options.build_request and specs/diff.md)."""
    expressions: list
    wrt: Optional[list] = None
    order: int = 1
    hessian: bool = False
    at: list = field(default_factory=list)
    check: Optional[str] = None
    assumptions: str = "real"
    simplify: bool = True
    simplify_timeout: float = 3.0
    python_code: bool = False
    emit_function: Optional[str] = None
    style: str = "gradcli"
    styles: tuple = ("ascii", "unicode", "latex")   # text forms to produce (printing big trees is slow)


def _styles(expr, styles):
    return {style: formatting.form(expr, style) for style in styles}


def parse_point(text, variables, assumptions):
    """``x=3,y=pi/4`` (or a bare value for one variable) -> ({symbol: exact value}, "x=3, y=pi/4")."""
    import sympy
    names = [str(v) for v in variables]
    pieces = split_assignments(text)
    if len(pieces) == 1 and pieces[0][0] is None and len(names) == 1:
        pieces = [(names[0], *pieces[0][1:])]
    point = {}
    for name, value_text, column, name_column in pieces:
        if name is None:
            raise ExpressionError(f"expected NAME=VALUE (variables: {', '.join(names)})", column, text, "--at")
        if name not in names:
            raise ExpressionError(f"{name!r} is not a variable (variables: {', '.join(names)})", name_column,
                                  text, "--at")
        value = parse_value(value_text, column, text, "--at", imaginary=assumptions == "complex")
        if value.free_symbols:
            raise ExpressionError(f"the value of {name} must be a number", column, text, "--at")
        if assumptions != "complex" and not value.is_extended_real:
            if value.evalf(30).as_real_imag()[1] != 0:
                raise ExpressionError(f"the value of {name} is not real", column, text, "--at")
        if assumptions == "positive" and not value.is_positive:
            raise ExpressionError(f"{name} is declared --positive", column, text, "--at")
        if value.has(sympy.zoo, sympy.nan, sympy.oo, -sympy.oo):
            raise ExpressionError(f"the value of {name} is not finite", column, text, "--at")
        point[make_symbol(name, assumptions)] = value
    missing = [n for n in names if make_symbol(n, assumptions) not in point]
    if missing:
        raise ExpressionError(f"no value for {', '.join(missing)}", None, text, "--at")
    ordered = {v: point[v] for v in variables}
    return ordered, ", ".join(f"{v}={formatting.ascii(point[v])}" for v in variables)


def _parse_inputs(request):
    exprs, notes = [], []
    for k, text in enumerate(request.expressions):
        try:
            parsed = parse(text, request.assumptions, request.wrt or ())
        except ExpressionError as error:
            raise error.in_source("expression" if len(request.expressions) == 1 else f"expression {k + 1}")
        exprs.append(parsed.expr)
        notes += [note for note in parsed.notes if note not in notes]
    import sympy
    for k, expr in enumerate(exprs):
        if expr.has(sympy.zoo, sympy.nan):
            raise ExpressionError(f"{request.expressions[k]!r} is undefined (SymPy reduces it to "
                                  f"{formatting.ascii(expr)}: a division by zero?)")
    variables = choose_variables(exprs, request.wrt, lambda n: make_symbol(n, request.assumptions))
    if not variables:
        raise ExpressionError("the expression has no variables (name one with --wrt to get a zero derivative)")
    if len(request.at) > MAX_POINTS:
        raise ExpressionError(f"at most {MAX_POINTS} --at points")
    parameters = sorted(set().union(*(e.free_symbols for e in exprs)) - set(variables),
                        key=lambda s: natural_key(s.name))
    points = [parse_point(text, variables + parameters, request.assumptions) for text in request.at]
    answers = None
    if request.check is not None:
        if len(exprs) > 1:
            raise ExpressionError("--check works with one expression")
        from gradcli.expr.verify import parse_answers
        answers = parse_answers(request.check, variables, request.assumptions, parameters)
    if request.emit_function and parameters:
        raise ExpressionError(f"--emit-function differentiates by every variable; "
                              f"{', '.join(map(str, parameters))} not in --wrt")
    return exprs, variables, points, answers, notes


EXACT_LIMIT = 10 ** 300   # beyond this an exact value is a page of digits (or takes forever to build)


def _exact_jobs(request, derivs, points, prepared):
    """Exact values per point, where they are worth computing (not CSE form, not astronomically large)."""
    if derivs.definitions:   # CSE form: exact values of a whole network are pages long
        return []
    items = [(entry.key, entry.expr) for entry in derivs.entries]
    jobs = []
    for k, ((point, _), (statuses, _values)) in enumerate(zip(points, prepared)):
        if all(status not in ("ok", OUT_OF_RANGE) or (status == "ok" and abs(value) < EXACT_LIMIT)
               for status, value in statuses):
            jobs.append((("exact", k), exact_values, (items, derivs.definitions, point, request.styles)))
    return jobs


def _jobs(request, derivs, answers):
    """Simplification and proofs: they do not depend on the points, so they start first."""
    jobs = []
    by_key = {entry.key: entry for entry in derivs.entries}
    for name, (_, answer) in (answers or {}).items():
        if (0, (name,)) in by_key:
            jobs.append((("proof", name), difference_is_zero, (answer - by_key[(0, (name,))].expr,)))
    if request.simplify and not derivs.definitions:
        for entry in derivs.entries:
            if entry.wrt:
                jobs.append((("simplify", entry.key), simplified, (entry.expr,)))
    return jobs


def _numbers(derivs, points, engine_process):
    """The engine side's PointNumbers per point: from the pre-forked process, else computed here."""
    from gradcli.expr.numeric_side import NumericJob, PointNumbers, run_numeric
    from gradcli.expr.opmap import NotReal, compile_program
    try:
        program = compile_program(derivs.exprs, derivs.symbols)
    except NotReal as error:
        if engine_process is not None:
            engine_process.close()
        return [PointNumbers(unavailable=f"a constant is not real ({error})") for _ in points]
    job = NumericJob(program, [entry.key for entry in derivs.entries],
                     [[_float(point[s]) for s in derivs.symbols] for point, _ in points], bool(derivs.definitions))
    if engine_process is not None:
        engine_process.submit(job)
        return engine_process
    return run_numeric(job)


def _float(value):
    try:
        return float(value)
    except (TypeError, ValueError, OverflowError):   # complex (under --complex) or beyond float64
        return float("nan")


def _engine_numbers(numbers, points, deadline):
    """The PointNumbers list, waiting for the engine process no longer than the budget allows."""
    from gradcli.expr.numeric_side import PointNumbers
    if isinstance(numbers, list):
        return numbers
    delivered = numbers.results(timeout=max(0.0, deadline.remaining() - 0.2))
    if delivered is None:
        return [PointNumbers(unavailable="the engine did not finish within the budget") for _ in points]
    return delivered


def run(request, engine_process=None, deadline=None, progress=None):
    """Compute everything ``gradcli diff`` reports. Raises ExpressionError for bad input (exit 2).

    ``engine_process``: an EngineProcess forked before SymPy was imported (the CLI does this when there
    are points); without one, the engine side runs in this process. ``deadline``: a deadline.Deadline
    (armed by the caller); phases it cuts are listed in a "budget" warning and make the exit code 2. If
    it strikes outside any phase that can be cut (while parsing, say), that is an ExpressionError too.
    """
    from gradcli.expr.deadline import BudgetExceeded, NoDeadline
    deadline = deadline or NoDeadline()
    phase = ["starting"]

    def report(name):
        phase[0] = name
        if progress is not None:
            progress(name)
    children = []   # budgeted SymPy children: killed whatever happens (an abandoned one would keep computing)
    try:
        return _run(request, engine_process, deadline, report, children)
    except BudgetExceeded:
        raise ExpressionError(f"refused: the {deadline.budget:g} s budget (--budget) ran out while {phase[0]}; "
                              "the expression is too expensive for it") from None
    finally:
        for child in children:
            child.abandon()


def _run(request, engine_process, deadline, progress, children):
    from gradcli.expr.deadline import CUT
    progress("parsing")
    exprs, variables, points, answers, reading_notes = _parse_inputs(request)
    if request.emit_function:
        from gradcli.expr.emit import check_name
        check_name(request.emit_function)
    progress("differentiating")
    derivs = differentiate(exprs, variables, request.order, request.hessian, deadline)
    if answers and derivs.definitions:
        raise ExpressionError("--check needs an expression small enough for sympy.diff (this one is in CSE form)")
    progress("evaluating at the points")
    numbers = deadline.attempt("the engine and finite-difference columns", _numbers, derivs, points,
                               engine_process) if points else []

    def symbolic_budget():   # a budgeted child never outlives the total budget
        return max(0.0, min(request.simplify_timeout, deadline.remaining() - 0.2))

    worker = Budgeted(_jobs(request, derivs, answers), symbolic_budget())
    children.append(worker)

    progress("printing the expressions")
    result = DiffResult(list(request.expressions), {s: [formatting.form(e, s) for e in exprs]
                                                    for s in request.styles},
                        derivs.names, derivs.variable_names, request.assumptions, derivs.method,
                        order=request.order, hessian=request.hessian,
                        parameters=[str(p) for p in derivs.parameters])
    result.info += reading_notes
    result.warnings += caveats.scan(derivs.entries)
    exact_worker = None
    if points:
        from gradcli.expr.evaluate import PointEvaluator
        progress("evaluating at the points")
        evaluator = PointEvaluator(derivs)
        prepared = []   # SymPy side, while the engine runs
        for point, _ in points:
            values = deadline.attempt(f"values at {len(points) - len(prepared)} point(s)", evaluator.prepare, point)
            if values is CUT:
                break
            prepared.append(values)
        exact_jobs = _exact_jobs(request, derivs, points[:len(prepared)], prepared)
        exact_seconds = symbolic_budget()
        exact_worker = Budgeted(exact_jobs, exact_seconds)
        children.append(exact_worker)
        if numbers is not CUT:
            numbers = deadline.attempt("the engine column", _engine_numbers, numbers, points, deadline)
        if numbers is CUT:
            numbers = _unavailable(points, "not computed within the budget")
        for (point, text), exact, point_numbers in zip(points, prepared, numbers):
            outcome = deadline.attempt(f"the comparison at {text}", evaluator.evaluate, point, text,
                                       point_numbers, exact)
            if outcome is CUT:
                break
            point_result, notes = outcome
            result.points.append(point_result)
            result.warnings += notes
        skipped = len(prepared) - len(exact_jobs) if not derivs.definitions else 0
        if skipped:
            result.info.append(f"exact values not shown at {skipped} point(s): numbers beyond 1e300 (or out of range)")
    progress("checking your answer" if answers else "simplifying")
    searches = deadline.attempt("the --check counterexample search", _counterexamples, derivs, answers,
                                request) if answers else {}
    if searches is CUT:
        searches = {}
    found = _collected(deadline, "simplification and proofs", worker)
    if exact_worker is not None:
        found.update(_collected(deadline, "exact values", exact_worker))

    progress("printing the derivatives")
    final = _apply_simplification(request, derivs, found, result, worker.seconds)
    for k, point_result in enumerate(result.points):
        status, exact = found.get(("exact", k), (None, None))
        if status == "ok":
            for cell in point_result.cells:
                cell.exact = exact.get(cell.key)
    if exact_worker is not None and exact_worker.timed_out:
        result.warnings.append(Note("budget", {s: f"exact values not computed within {exact_seconds:.3g} s"
                                               " (the floats are exact to the digits shown)"
                                               for s in ("unicode", "ascii")}))
    if answers:
        _checks(result, derivs, answers, found, searches, request)
    from gradcli.expr.codegen import CodegenError
    try:
        _code(request, derivs, final, variables, exprs, deadline, result)
    except CodegenError as error:
        raise ExpressionError(f"{'--emit-function' if request.emit_function else '--format python'}: {error}")
    failed = any(not p.ok for p in result.points) or any(c.verdict == "refuted" for c in result.checks)
    result.exit_code = 1 if failed else 0
    if derivs.cut or deadline.cut:
        _cut_warning(result, derivs, deadline)
        result.exit_code = 1 if failed else 2
    return result


def _collected(deadline, what, worker):
    """The budgeted child's results ({} if the total budget cut the collection)."""
    from gradcli.expr.deadline import CUT
    if not worker.jobs:
        return {}
    found = deadline.attempt(what, worker.collect)
    return {} if found is CUT else found


def _code(request, derivs, final, variables, exprs, deadline, result):
    """--format python and --emit-function (each within the budget)."""
    from gradcli.expr.deadline import CUT
    if request.python_code:
        from gradcli.expr.codegen import numpy_module
        code = deadline.attempt("the Python code", numpy_module, derivs,
                                [(entry, final[entry.key]) for entry in derivs.entries])
        result.python_code = None if code is CUT else code
    if request.emit_function and derivs.cut:
        deadline.cut.append("the emitted Function (it needs every first derivative)")
    elif request.emit_function:
        from gradcli.expr.emit import emit_function
        jacobian = [[final[(i, (str(v),))] for v in variables] for i in range(len(exprs))]
        code = deadline.attempt("the emitted Function", emit_function, request.emit_function, derivs, jacobian,
                                request.style, request.assumptions)
        result.python_code = None if code is CUT else code


def _unavailable(points, why):
    from gradcli.expr.numeric_side import PointNumbers
    return [PointNumbers(unavailable=why) for _ in points]


def _cut_warning(result, derivs, deadline):
    parts = []
    if derivs.cut:
        labels = [label("f" if len(derivs.names) == 1 else derivs.names[o], wrt, "ascii") for o, wrt in derivs.cut]
        shown = ", ".join(labels[:4]) + (f" and {len(labels) - 4} more" if len(labels) > 4 else "")
        parts.append(f"derivatives not computed: {shown}")
    parts += [f"not done: {what}" for what in deadline.cut if what != "differentiation"]
    text = f"the {deadline.budget:g} s budget (--budget) ran out; " + "; ".join(parts)
    result.warnings.append(Note("budget", {"unicode": text, "ascii": text}))


def _apply_simplification(request, derivs, found, result, seconds):
    """Formulas from the simplified forms where simplify finished and helped; notes where it did not."""
    final, unfinished = {}, []
    for entry in derivs.entries:
        expr, was_simplified = entry.expr, False
        if entry.wrt and request.simplify and not derivs.definitions:
            outcome = found.get(("simplify", entry.key))
            if outcome is None:
                unfinished.append(entry)
            elif outcome[0] == "ok" and outcome[1] is not None:
                expr, was_simplified = outcome[1], True
        final[entry.key] = expr
        if entry.wrt:
            result.formulas.append(Formula(entry.key, {s: entry.label(s) for s in ("unicode", "ascii", "latex")},
                                           _styles(expr, request.styles), was_simplified))
    if unfinished:
        shown = unfinished[:6]
        more = f" and {len(unfinished) - 6} more" if len(unfinished) > 6 else ""
        labels = {s: ", ".join(e.label(s) for e in shown) + more for s in ("unicode", "ascii")}
        result.warnings.append(Note("simplify", {
            s: f"simplification did not finish within {seconds:.3g} s for {labels[s]}: "
               "showing the unsimplified form" for s in ("unicode", "ascii")}))
    if derivs.definitions:
        result.definitions = [(str(symbol), _styles(value, request.styles)) for symbol, value in derivs.definitions]
        result.info.append(f"large expression: gradient by reverse mode over its shared subexpressions, shown "
                           f"in CSE form ({len(derivs.definitions)} definitions); simplification skipped")
    return final


def _counterexamples(derivs, answers, request):
    """The numeric half of --check, run while the budgeted child tries the proofs."""
    from gradcli.expr.verify import search_counterexample
    by_key = {entry.key: entry for entry in derivs.entries}
    return {name: search_counterexample(by_key[(0, (name,))].expr, answer, derivs.symbols, request.assumptions)
            for name, (_text, answer) in answers.items() if (0, (name,)) in by_key}


def _checks(result, derivs, answers, found, searches, request):
    from gradcli.expr.verify import verdict
    by_key = {entry.key: entry for entry in derivs.entries}
    for name, (_text, answer) in answers.items():
        entry = by_key.get((0, (name,)))
        if entry is None or name not in searches:
            continue   # cut by the budget (the budget warning says so)
        result.checks.append(verdict(name, entry.label("ascii"), formatting.ascii(answer), searches[name],
                                     found.get(("proof", name)), request.simplify_timeout))
