"""Seeded fuzzing of the whole diff pipeline (parse, differentiate, evaluate at a point, simplify) under a
budget: every case ends with a result or a one-line ExpressionError (a refusal, also when the budget runs
out outside a phase that can be cut) - never another exception. Bounded: each case has a 2 s total budget
(the deadline cuts what does not finish), 40 cases."""
import random
import time

import pytest

from gradcli.expr.api import DiffRequest, run
from gradcli.expr.deadline import Deadline
from gradcli.expr.errors import ExpressionError

UNARY = ["sin", "cos", "tan", "exp", "log", "sqrt", "abs", "sigmoid", "softplus", "relu", "gelu", "atanh", "acot",
         "sech", "cbrt", "floor", "gamma", "erf", "silu", "mish", "asin", "tanh", "LambertW", "|", "sin^2"]
BINARY = ["+", "-", "*", "/", "^"]
LEAVES = ["x", "y", "2", "0", "1e300", "10^100", "pi", "e", "0.5", "-3", "1e-30", "2^999"]


def _expression(rng, depth):
    if depth == 0 or rng.random() < 0.25:
        return rng.choice(LEAVES)
    kind = rng.random()
    if kind < 0.4:
        name = rng.choice(UNARY)
        inner = _expression(rng, depth - 1)
        return f"|{inner}|" if name == "|" else f"{name}({inner})"
    if kind < 0.5:
        args = ", ".join(_expression(rng, depth - 1) for _ in range(rng.randint(2, 4)))
        return f"{rng.choice(['max', 'min', 'logsumexp', 'Max'])}({args})"
    return f"({_expression(rng, depth - 1)}){rng.choice(BINARY)}({_expression(rng, depth - 1)})"


CASES = [(_expression(random.Random(seed), 4), random.Random(seed).choice(["1", "-2", "0", "1e10", "pi/2", "1/3"]))
         for seed in range(40)]


@pytest.mark.parametrize("expression, point", CASES)
def test_fuzzed_expression_ends_cleanly_within_its_budget(expression, point):
    deadline = Deadline(time.monotonic() + 2.0, 2.0)
    deadline.arm()
    try:
        result = run(DiffRequest([expression], at=[f"x={point},y=2" if "y" in expression else f"x={point}"],
                                 wrt=["x"] if "x" not in expression else None, simplify_timeout=1.0),
                     deadline=deadline)
    except ExpressionError as error:
        assert "\n" not in str(error)
        return
    finally:
        deadline.disarm()
    assert result.exit_code in (0, 1, 2)
    assert all("internal error" not in (p.problem or "") for p in result.points)
