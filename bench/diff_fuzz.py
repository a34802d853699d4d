"""Fuzzed ``gradcli diff`` runs through the real worker path: how long each takes against the budget, and
whether any ends in an internal error (exit 3) or a traceback.

Random expressions (seeded) over the whole vocabulary, hostile numbers (1e300, 2^999, 10^100) and random
points, each run as the CLI runs it: ``supervise`` forks the worker, which computes under the total budget
(default 5 s) and renders plain text. SymPy is imported once here first, so the times are the command's
work, not its import. Run: ``python bench/diff_fuzz.py [CASES] [SEED]`` (default 200 cases, seed 0).
"""
import random
import sys
import time

UNARY = ["sin", "cos", "tan", "exp", "log", "sqrt", "abs", "sigmoid", "softplus", "relu", "gelu", "atanh", "acot",
         "sech", "cbrt", "floor", "gamma", "erf", "silu", "mish", "asin", "tanh", "LambertW", "|", "sin^2", "log1p",
         "coth", "acsch", "digamma", "elu", "leaky_relu", "Abs", "sign", "heaviside", "rsqrt", "expm1"]
BINARY = ["+", "-", "*", "/", "^"]
LEAVES = ["x", "y", "z", "2", "0", "1e300", "10^100", "pi", "e", "0.5", "-3", "1e-30", "2^999", "x²", "7"]


def expression(rng, depth):
    if depth == 0 or rng.random() < 0.2:
        return rng.choice(LEAVES)
    kind = rng.random()
    if kind < 0.45:
        name = rng.choice(UNARY)
        inner = expression(rng, depth - 1)
        return f"|{inner}|" if name == "|" else f"{name}({inner})"
    if kind < 0.55:
        args = ", ".join(expression(rng, depth - 1) for _ in range(rng.randint(2, 5)))
        return f"{rng.choice(['max', 'min', 'logsumexp', 'Max', 'hypot', 'atan2'])}({args})"
    return f"({expression(rng, depth - 1)}){rng.choice(BINARY)}({expression(rng, depth - 1)})"


def main(cases=200, seed=0, budget=5.0, verbose=False):
    import sympy  # noqa: F401  (imported once here; each worker is forked with it loaded)

    from gradcli.diff_worker import diff_outcome
    from gradcli.expr.errors import ExpressionError
    from gradcli.expr.parser import parse
    from gradcli.expr.supervisor import supervise
    rng = random.Random(seed)
    times, codes, bad = [], {}, []
    for _ in range(cases):
        text = expression(rng, rng.randint(1, 5))
        try:
            names = sorted(str(s) for s in parse(text).expr.free_symbols)
        except ExpressionError:
            names = []
        values = {"x": rng.choice(["1", "-2", "0", "1e10", "pi/2", "1/3"]), "y": "2", "z": "-1"}
        point = ",".join(f"{name}={values[name]}" for name in names)
        options = dict(wrt=None, order=rng.choice(["1", "1", "2", "3"]), hessian=rng.random() < 0.2,
                       at=[point] if point else [], check=None, positive=False, complex_=False, fmt="plain",
                       simplify=True, simplify_timeout="3", emit_function=None, style="gradcli", tty=False)

        def work(progress, deadline_end, text=text, options=options):
            return diff_outcome([text], options, progress, deadline_end, budget)
        started = time.monotonic()
        outcome = supervise(work, budget, started)
        elapsed = time.monotonic() - started
        times.append(elapsed)
        codes[outcome.code] = codes.get(outcome.code, 0) + 1
        if outcome.code == 3 or "Traceback" in outcome.stderr + outcome.stdout:
            bad.append((text, outcome.stderr.strip()[:200]))
        elif verbose:
            print(f"{elapsed:5.2f} s exit {outcome.code} {text[:60]!r}: {(outcome.stderr or outcome.stdout)[:100]!r}")
    times.sort()
    print(f"{cases} cases, budget {budget:g} s: exit codes {dict(sorted(codes.items()))}; time median "
          f"{times[len(times) // 2]:.2f} s, max {times[-1]:.2f} s; over budget + 1 s: "
          f"{sum(t > budget + 1 for t in times)}; internal errors: {len(bad)}")
    for text, error in bad:
        print(f"  {text!r}: {error}")
    return 0 if not bad and times[-1] <= budget + 1 else 1


if __name__ == "__main__":
    arguments = [int(a) for a in sys.argv[1:3] if a != "-v"]
    raise SystemExit(main(*arguments, verbose="-v" in sys.argv))
