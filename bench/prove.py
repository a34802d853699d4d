"""Proof time per Function for the examples (issue 6: <= 2 s per elementwise/broadcast Function at
the default shape, median of runs).

    python bench/prove.py [--runs 5] [--timeout 10]

Every autograd Function defined in examples/*.py is proved twice: at the default symbolic shape
(every input 2×2) and, when the class has ``example_inputs``, at the shapes of its first example
(what ``gradcli check --prove`` uses). Times are wall-clock per Function, fork and trace included.
"""
import argparse
import importlib.util
import inspect
import statistics
import sys
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from gradcli.autograd import Function  # noqa: E402
from gradcli.symbolic.prove import prove  # noqa: E402

TARGET_SECONDS = 2.0


def example_functions():
    """(file, class) for every gradcli Function defined in examples/ (torch files are skipped: a
    torch Function is not traceable, its proof is an instant "not_traceable")."""
    found = []
    for path in sorted((ROOT / "examples").glob("*.py")):
        if "import torch" in path.read_text():
            continue
        spec = importlib.util.spec_from_file_location(f"examples_{path.stem}", path)
        module = importlib.util.module_from_spec(spec)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            spec.loader.exec_module(module)
        for name, cls in vars(module).items():
            if (inspect.isclass(cls) and issubclass(cls, Function) and cls.__module__ == module.__name__
                    and "forward" in cls.__dict__ and not name.startswith("_")):
                found.append((path.name, cls))
    return found


def first_example(cls):
    maker = getattr(cls, "example_inputs", None)
    if maker is None:
        return None
    examples = maker()
    return examples[0] if isinstance(examples, list) else examples


def timed(cls, inputs, runs, timeout):
    times, results = [], None
    for _ in range(runs):
        started = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            results = prove(cls, timeout=timeout, example_inputs=inputs)
        times.append(time.perf_counter() - started)
    return statistics.median(times), results


def verdicts(results):
    return ", ".join(f"{r.input}:{r.verdict}" for r in results)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--timeout", type=float, default=10.0)
    args = parser.parse_args()
    rows, slow = [], []
    for filename, cls in example_functions():
        median, results = timed(cls, None, args.runs, args.timeout)
        rows.append((f"{filename}::{cls.__name__}", "2×2", median, verdicts(results)))
        traced = [r for r in results if r.verdict != "not_traceable"]
        if traced and median > TARGET_SECONDS:
            slow.append(rows[-1][0])
        example = first_example(cls)
        if example is not None:
            shapes = "×".join(str(tuple(getattr(a, "shape", ()))) for a in example if a is not None)
            median, results = timed(cls, example, args.runs, args.timeout)
            rows.append((f"{filename}::{cls.__name__}", shapes, median, verdicts(results)))
    width = max(len(r[0]) for r in rows)
    print(f"{'Function':{width}}  {'shape':18}  {'median s':>8}  verdicts")
    for name, shape, median, text in rows:
        print(f"{name:{width}}  {shape:18}  {median:8.3f}  {text}")
    print(f"\nmedian of {args.runs} runs each; target <= {TARGET_SECONDS} s per Function at the default shape: "
          + ("met" if not slow else f"MISSED by {', '.join(slow)}"))
    return 1 if slow else 0


if __name__ == "__main__":
    sys.exit(main())
