"""The pieces under ``gradcli diff``: the budgeted child, reverse mode, the op mapping, number formatting."""
import os
import random
import time

import mpmath
import numpy as np
import pytest
import sympy

from gradcli.expr import formatting
from gradcli.expr.api import DiffRequest, run
from gradcli.expr.budget import Budgeted
from gradcli.expr.calculus import LARGE_TREE, differentiate
from gradcli.expr.functions import BUILDERS
from gradcli.expr.opmap import (COMPOSITE_ROWS, STRUCTURAL_ROWS, EngineFunction, engine_op_for_head,
                                    engine_unary_table, sympy_callable)
from gradcli.expr.reverse import dag_nodes, gradient_graph, tree_size

x, y = sympy.symbols("x y", real=True)


def _slow(seconds):
    time.sleep(seconds)
    return "slow"


def _fail():
    raise ValueError("nope")


def test_budget_keeps_what_finished_and_kills_the_rest():
    jobs = [("a", sympy.expand, ((x + 1) ** 2,)), ("b", _fail, ()), ("c", _slow, (60,)), ("d", _slow, (0,))]
    worker = Budgeted(jobs, 0.5)
    results = worker.collect()  # returns at the deadline: the sleeping job is cut, not waited for
    assert results == {"a": ("ok", x ** 2 + 2 * x + 1), "b": ("error", "ValueError: nope")}
    assert worker.timed_out
    with pytest.raises(ChildProcessError):
        os.waitpid(-1, os.WNOHANG)    # the child has been reaped, no zombie left


def test_budget_with_no_jobs_forks_nothing():
    assert Budgeted([], 1.0).collect() == {}


def _network(seed=0, inputs=4, hidden=4):
    rng = random.Random(seed)
    w = lambda: sympy.Rational(rng.randint(-9, 9), rng.randint(1, 9))  # noqa: E731
    xs = sympy.symbols(f"x0:{inputs}", real=True)
    h1 = [sympy.tanh(sum(w() * v for v in xs) + w()) for _ in range(hidden)]
    h2 = [sympy.tanh(sum(w() * h for h in h1) + w()) for _ in range(hidden)]
    return sum(w() * h for h in h2) + w(), xs


def test_reverse_mode_equals_sympy_diff():
    f, xs = _network()
    definitions, (row,) = gradient_graph([f], xs)
    point = {v: sympy.Rational(k + 1, 5) for k, v in enumerate(xs)}
    values = dict(point)
    for symbol, value in definitions:
        values[symbol] = value.xreplace(values).evalf(40)
    for v, entry in zip(xs, row):
        assert entry.xreplace(values).evalf(30) == pytest.approx(float(f.diff(v).evalf(30, subs=point)), rel=1e-25)


def test_reverse_mode_jacobian_rows_and_plain_variables():
    definitions, rows = gradient_graph([x * y, x], [x, y])
    assert rows[1] == [1, 0]
    resolved = [[e.xreplace(dict((s, v) for s, v in definitions)) for e in row] for row in rows]
    assert resolved[0] == [y, x]


def test_dag_is_much_smaller_than_the_tree():
    f, _ = _network(inputs=10, hidden=10)
    assert tree_size(f) > LARGE_TREE
    assert len(dag_nodes([f])) < 250


def test_large_expressions_go_through_reverse_mode_end_to_end():
    f, xs = _network(inputs=10, hidden=10)
    text = formatting.ascii(f)
    point = ",".join(f"{v}={k + 1}/10" for k, v in enumerate(xs))
    result = run(DiffRequest([text], at=[point]))
    assert result.method == "reverse mode (CSE)"
    assert result.definitions and result.info[0].startswith("large expression: gradient by reverse mode")
    (p,) = result.points
    assert p.ok, p.problem
    exact = {v: sympy.Rational(k + 1, 10) for k, v in enumerate(xs)}
    cell = p.cells[1]
    assert cell.key == (0, ("x0",))
    assert cell.value == pytest.approx(float(f.diff(xs[0]).evalf(20, subs=exact)), rel=1e-12)


def test_every_function_in_the_vocabulary_runs_on_the_engine():
    """Each whitelisted function maps to an engine op (or a documented composite) and differentiates."""
    t = sympy.Symbol("t", real=True)
    from gradcli.expr.vocabulary import SYMBOLIC_ONLY
    unary = [name for name in BUILDERS if name not in ("log", "max", "min", "logsumexp") + SYMBOLIC_ONLY]
    binary = {"atan2": lambda f: f(t, -2 * t - 1), "hypot": lambda f: f(t, 2 - t),  # atan2 off the positive axis
              "root": lambda f: f(t, 3), "pow": lambda f: f(t, 3), "xlogy": lambda f: f(t, t + 1)}
    shifted = ("acosh", "asec", "acsc", "acoth")   # defined for |t| >= 1 (or > 1)
    for name in unary:
        expr = binary[name](BUILDERS[name]) if name in binary else \
            BUILDERS[name](t) if name not in shifted else BUILDERS[name](t + 2)
        point = 0.3
        engine = EngineFunction([expr], [t])
        value, derivative = engine.partials(np.array([[point]]), [(0, ()), (0, ("t",))])[0]
        from gradcli.expr.calculus import _diff   # sympy.diff, with floor/ceiling/0**u as gradcli takes them
        exact_value = float(expr.xreplace({t: sympy.Rational(3, 10)}).evalf(30))
        exact_derivative = float(_diff(expr, t).xreplace({t: sympy.Rational(3, 10)}).evalf(30))
        assert value == pytest.approx(exact_value, rel=1e-12, abs=1e-14), name
        assert derivative == pytest.approx(exact_derivative, rel=1e-10, abs=1e-12), name


def test_mapping_table_agrees_with_the_engine_table_both_ways():
    from gradcli.expr.functions import sigmoid
    table = engine_unary_table()
    for op, sympy_name in table.items():
        built = sympy_callable(op)(x)                       # engine -> SymPy
        head = type(built).__name__
        if head == sympy_name:                              # a real SymPy head: SymPy -> engine comes back
            assert engine_op_for_head(head) == op, op
    assert sympy_callable("sigmoid")(x) == sigmoid(x)
    assert sympy_callable("rsqrt")(x) == 1 / sympy.sqrt(x)
    assert engine_op_for_head("Abs") == "abs" and engine_op_for_head("sigmoid") == "sigmoid"
    assert engine_op_for_head("Pow") is None          # structural, handled by the Pow row
    assert set(STRUCTURAL_ROWS) == {"Add", "Mul", "Pow", "Max", "Min", "logsumexp", "atan2"}
    assert set(COMPOSITE_ROWS) == {"cot", "sec", "csc", "erfc", "Heaviside"}


def test_engine_partials_run_batched_and_to_third_order():
    engine = EngineFunction([x ** 3 * y], [x, y])
    X = np.array([[1.0, 2.0], [2.0, 3.0]])
    table = engine.partials(X, [(0, ()), (0, ("x",)), (0, ("x", "x", "x")), (0, ("x", "y", "y"))])
    assert table.tolist() == [[2.0, 6.0, 12.0, 0.0], [24.0, 36.0, 18.0, 0.0]]


@pytest.mark.parametrize("value, text", [
    (mpmath.mpf("10.065384140902210626860779674"), "10.06538414"),
    (mpmath.mpf(8), "8"), (0.5, "0.5"), (-0.000123456789012, "-0.000123456789"), (1e-20, "1e-20"),
    (123456789012.5, "1.23456789e11"), (float("inf"), "inf"), (float("nan"), "nan"), (None, "—"),
])
def test_numbers_are_rounded_not_truncated(value, text):
    assert formatting.number(value) == text


def test_honest_digits_follow_the_error_estimate():
    assert formatting.honest_digits(0.1775640235, 3e-14) == 10
    assert formatting.honest_digits(0.1775640235, 3e-6) == 4
    assert formatting.number(0.17756402348373276, formatting.honest_digits(0.1775, 3e-6)) == "0.1776"


def test_printers_put_positive_terms_first_and_read_back():
    from gradcli.expr.parser import parse
    d = differentiate([sympy.sqrt(x) + 1 / x], [x]).entries[1].expr
    assert formatting.ascii(d) == "1/(2*sqrt(x)) - 1/x**2"
    assert formatting.unicode(d) == "1/(2√x) − 1/x²"
    for expr in [sympy.Abs(x) * sympy.Max(x, y), sympy.Heaviside(x - y), sympy.exp(x) + sympy.E, (x + 1) ** -2]:
        assert parse(formatting.ascii(expr)).expr == expr


def test_engine_process_gives_the_same_numbers_as_in_process():
    from gradcli.expr.engine_process import EngineProcess
    from gradcli.expr.numeric_side import NumericJob, run_numeric
    from gradcli.expr.opmap import compile_program
    f = sympy.sqrt(x) + 1 / x + 2 * y ** 2
    keys = [(0, ()), (0, ("x",)), (0, ("y",))]
    job = NumericJob(compile_program([f], [x, y]), keys, [[3.0, 2.0], [1.0, -1.0]])
    process = EngineProcess()
    process.submit(job)
    assert process.results() == run_numeric(job)
    assert process.pid is None                           # reaped


def test_engine_process_falls_back_when_the_child_is_gone():
    import signal

    from gradcli.expr.engine_process import EngineProcess
    from gradcli.expr.numeric_side import NumericJob
    from gradcli.expr.opmap import compile_program
    job = NumericJob(compile_program([x ** 2], [x]), [(0, ()), (0, ("x",))], [[3.0]])
    process = EngineProcess()
    os.kill(process.pid, signal.SIGKILL)
    process.submit(job)
    (numbers,) = process.results()
    assert numbers.autograd == [9.0, 6.0]
