"""Fuzzed ``gradcli diff`` runs through the real worker path: how long each takes against the budget, and
whether any ends in an internal error (exit 3) or a traceback.

Random expressions (seeded) over the whole vocabulary, hostile numbers (1e300, 2^999, 10^100) and random
points, each run as the CLI runs it: ``supervise`` forks the worker, which computes under the total budget
(default 5 s) and renders plain text. SymPy is imported once here first, so the times are the command's
work, not its import (bench/cli_startup.py measures that). The cases are drawn in this process, in order,
so a seed names the same cases for any ``--jobs``; the jobs are forked processes that run slices of them.

    python bench/diff_fuzz.py [--cases 200] [--seed 0] [--first 0] [--jobs 1] [--budget 5] [--progress 500] [-v]

Prints a progress line every ``--progress`` cases per job, then: exit codes, median and max time, the
cases over the budget and over budget + 1 s (the kill's grace), internal errors with their expressions,
and the ten slowest cases. Exit status 1 when any case is an internal error or exceeds the budget + 1 s.
"""
import argparse
import os
import random
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context

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


def draw_cases(cases, seed):
    """[(text, point values, options)] in the order the seed gives (no SymPy: cheap for 10^4 cases)."""
    rng = random.Random(seed)
    drawn = []
    for _ in range(cases):
        text = expression(rng, rng.randint(1, 5))
        values = {"x": rng.choice(["1", "-2", "0", "1e10", "pi/2", "1/3"]), "y": "2", "z": "-1"}
        options = dict(wrt=None, order=rng.choice(["1", "1", "2", "3"]), hessian=rng.random() < 0.2,
                       at=[], check=None, positive=False, complex_=False, fmt="plain",
                       simplify=True, simplify_timeout="3", emit_function=None, style="gradcli", tty=False)
        drawn.append((text, values, options))
    return drawn


def with_point(text, values, options):
    """The options with ``--at`` for the expression's own variables (parsed here, outside the timed run)."""
    import re

    from gradcli.expr.deadline import BudgetExceeded, Deadline
    from gradcli.expr.errors import ExpressionError
    from gradcli.expr.parser import parse
    deadline = Deadline(time.monotonic() + 5.0, 5.0)   # this process has no budget of its own: bound the parse
    deadline.arm()
    try:
        names = sorted(str(s) for s in parse(text).expr.free_symbols)
    except ExpressionError:
        names = []
    except (BudgetExceeded, MemoryError):  # digamma(gamma(exp(2^999))) grew this process to 18 GB once
        names = [n for n in ("x", "y", "z") if re.search(rf"\b{n}\b", text)]
    except Exception as error:  # noqa: BLE001  (a parser bug: the CLI run shows how it surfaces)
        names = [n for n in ("x", "y", "z") if re.search(rf"\b{n}\b", text)]
        print(f"  parse raised {type(error).__name__} on {text!r}", flush=True)
    finally:
        deadline.disarm()
    point = ",".join(f"{name}={values[name]}" for name in names)
    return dict(options, at=[point] if point else [])


def run_slice(job, indexed_cases, budget, progress_every, verbose):
    """Run (index, text, values, options) cases in turn; [(index, seconds, exit code, bad text or None)]."""
    from gradcli.diff_worker import diff_outcome
    from gradcli.expr.supervisor import supervise
    results = []
    for count, (index, text, values, options) in enumerate(indexed_cases, 1):
        options = with_point(text, values, options)

        def work(progress, deadline_end, text=text, options=options):
            return diff_outcome([text], options, progress, deadline_end, budget)
        started = time.monotonic()
        outcome = supervise(work, budget, started)
        elapsed = time.monotonic() - started
        bad = None
        if outcome.code == 3 or "Traceback" in outcome.stderr + outcome.stdout:
            bad = outcome.stderr.strip()[:200]
            print(f"  internal error (case {index}): {text!r}: {bad}", flush=True)
        results.append((index, elapsed, outcome.code, bad))
        if verbose:
            print(f"{elapsed:5.2f} s exit {outcome.code} {text[:60]!r}: {(outcome.stderr or outcome.stdout)[:100]!r}",
                  flush=True)
        if progress_every and count % progress_every == 0:
            slow = sum(r[1] > budget for r in results)
            print(f"job {job}: {count}/{len(indexed_cases)} cases, max {max(r[1] for r in results):.2f} s, "
                  f"over budget {slow}, internal errors {sum(r[3] is not None for r in results)}", flush=True)
    return results


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--first", type=int, default=0, help="skip the seed's first N cases (resume a long run)")
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--budget", type=float, default=5.0)
    parser.add_argument("--progress", type=int, default=500)
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args(argv)
    import sympy  # noqa: F401  (imported once here; each worker is forked with it loaded)
    import gradcli.diff_worker  # noqa: F401
    drawn = draw_cases(args.cases, args.seed)
    indexed = [(i, *case) for i, case in enumerate(drawn)][args.first:]
    slices = [indexed[job::args.jobs] for job in range(args.jobs)]
    started = time.monotonic()
    if args.jobs == 1:
        results = run_slice(0, slices[0], args.budget, args.progress, args.verbose)
    else:
        with ProcessPoolExecutor(args.jobs, mp_context=get_context("fork")) as pool:
            futures = [pool.submit(run_slice, job, part, args.budget, args.progress, args.verbose)
                       for job, part in enumerate(slices)]
            results = [r for future in futures for r in future.result()]
    results.sort()
    times = sorted(r[1] for r in results)
    codes = {}
    for r in results:
        codes[r[2]] = codes.get(r[2], 0) + 1
    bad = [(drawn[r[0]][0], r[3]) for r in results if r[3] is not None]
    over_budget = sum(t > args.budget for t in times)
    over_grace = sum(t > args.budget + 1 for t in times)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"{len(results)} cases (seed {args.seed} from case {args.first}, {args.jobs} jobs, {time.monotonic() - started:.0f} s, load "
          f"{load:.1f}), budget {args.budget:g} s: exit codes {dict(sorted(codes.items()))}; time median "
          f"{times[len(times) // 2]:.2f} s, max {times[-1]:.2f} s; over budget: {over_budget}; over budget + 1 s: "
          f"{over_grace}; internal errors: {len(bad)}")
    for text, error in bad:
        print(f"  internal error: {text!r}: {error}")
    print("slowest:")
    for r in sorted(results, key=lambda r: -r[1])[:10]:
        print(f"  {r[1]:5.2f} s exit {r[2]} {drawn[r[0]][0][:90]!r}")
    return 0 if not bad and over_grace == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
