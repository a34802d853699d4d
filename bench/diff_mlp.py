"""Gradient of a 2-layer tanh network written as one expression: gradcli vs plain SymPy (vs symengine).

The network has 10 inputs, two hidden layers of 10 tanh units and one linear output, with small rational
weights (seeded), written out as a single formula - every layer-1 unit appears inside each layer-2 unit.
Timed, as medians over repeats with SymPy's cache cleared before each one:

* plain SymPy: ``[sympy.diff(f, x) for x in inputs]``;
* gradcli: reverse mode over the shared-subexpression graph (``gradcli.expr.reverse``), the path
  ``gradcli diff`` takes for expressions this size - the full gradient in CSE form;
* symengine (optional accelerator, if installed): ``[g.diff(x) for x in inputs]`` on the converted
  expression.

All results are checked against each other at a random point before anything is printed.

    python bench/diff_mlp.py            # 3 SymPy repeats, 7 for the fast methods
    python bench/diff_mlp.py --quick    # 1 and 3
"""
import argparse
import random
import statistics
import time

import sympy
from sympy.core.cache import clear_cache

from gradcli.expr.parser import parse
from gradcli.expr.reverse import gradient_graph, tree_size

INPUTS, HIDDEN = 10, 10


def network_text(seed=0):
    """The network as one calculator expression (what a user would paste into gradcli diff)."""
    rng = random.Random(seed)

    def weight():
        return f"({rng.choice([-1, 1]) * rng.randint(1, 9)}/{rng.randint(1, 9)})"

    inputs = [f"x{i}" for i in range(INPUTS)]
    layer1 = [f"tanh({' + '.join(f'{weight()}*{x}' for x in inputs)} + {weight()})" for _ in range(HIDDEN)]
    layer2 = [f"tanh({' + '.join(f'{weight()}*{h}' for h in layer1)} + {weight()})" for _ in range(HIDDEN)]
    return " + ".join(f"{weight()}*{h}" for h in layer2) + f" + {weight()}"


def timed(function, repeats):
    times, result = [], None
    for _ in range(repeats):
        clear_cache()
        start = time.perf_counter()
        result = function()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def resolve(definitions, entries, point):
    values = dict(point)
    for symbol, value in definitions:
        values[symbol] = value.xreplace(values).evalf(30)
    return [float(entry.xreplace(values).evalf(30)) for entry in entries]


def main():
    options = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    options.add_argument("--quick", action="store_true", help="fewer repeats")
    args = options.parse_args()
    slow_repeats, fast_repeats = (1, 3) if args.quick else (3, 7)

    text = network_text()
    parse_time, parsed = timed(lambda: parse(text).expr, fast_repeats)
    f = parsed
    xs = sorted(f.free_symbols, key=lambda s: int(s.name[1:]))
    print(f"expression: {len(text)} characters, {tree_size(f)} nodes as a tree; parsed safely in "
          f"{parse_time * 1e3:.0f} ms")

    sympy_time, sympy_grad = timed(lambda: [sympy.diff(f, x) for x in xs], slow_repeats)
    ours_time, (definitions, (row,)) = timed(lambda: gradient_graph([f], xs), fast_repeats)

    rng = random.Random(1)
    point = {x: sympy.Rational(rng.randint(-20, 20), 10) for x in xs}
    reference = [float(g.evalf(30, subs=point)) for g in sympy_grad[:3]]
    ours = resolve(definitions, row, point)[:3]
    assert all(abs(a - b) <= 1e-12 * max(1, abs(b)) for a, b in zip(ours, reference)), (ours, reference)

    print(f"plain SymPy diff (median of {slow_repeats}):      {sympy_time:8.3f} s")
    print(f"gradcli reverse mode (median of {fast_repeats}):  {ours_time:8.3f} s   "
          f"{len(definitions)} CSE definitions   {sympy_time / ours_time:6.1f}x faster than SymPy")
    try:
        import symengine
    except ImportError:
        print("symengine: not installed (pip install symengine for the optional comparison)")
        return
    convert_time, converted = timed(lambda: symengine.sympify(f), fast_repeats)   # a SymPy object, not text
    se_xs = [symengine.Symbol(x.name) for x in xs]
    se_time, se_grad = timed(lambda: [converted.diff(x) for x in se_xs], fast_repeats)
    se_time += convert_time
    se_point = {symengine.Symbol(x.name): float(v) for x, v in point.items()}
    se_values = [float(g.subs(se_point)) for g in se_grad[:3]]
    assert all(abs(a - b) <= 1e-9 * max(1, abs(b)) for a, b in zip(se_values, reference)), se_values
    print(f"symengine diff incl. conversion (median of {fast_repeats}): {se_time:8.3f} s   "
          f"{sympy_time / se_time:6.1f}x faster than SymPy; conversion alone {convert_time:.3f} s "
          "(optional extra; gradcli does not need it)")


if __name__ == "__main__":
    main()
