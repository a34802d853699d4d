"""Speed of `gradcli check` (issue 5): targets ≤ 3 s for `gradcli check examples/` end to end and
≤ 0.2 s for `gradcli check --help`; also the cost of isolation (a forked worker per file and a
forked checker per Function) against running everything in one process.

    .venv/bin/python bench/check_examples.py [--runs 5]

Prints medians (and min/max) of wall-clock times of real processes. The machine's load average
is printed too: other processes on a small machine inflate every figure.
"""
import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PY = sys.executable


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)  # every finished descendant, forks included
    return usage.ru_utime + usage.ru_stime


def wall(cmd, runs):
    """Wall-clock seconds of each run, and CPU seconds (user+sys, all processes) of each run."""
    times, cpu = [], []
    for _ in range(runs):
        start, start_cpu = time.perf_counter(), cpu_seconds()
        proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
        times.append(time.perf_counter() - start)
        cpu.append(cpu_seconds() - start_cpu)
        if proc.returncode not in (0, 1):
            raise SystemExit(f"{' '.join(cmd)} exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}")
    return (times, cpu), proc


def line(label, measured, target=None):
    times, cpu = measured
    med = statistics.median(times)
    verdict = "" if target is None else ("  OK" if med <= target else f"  OVER the {target} s target")
    print(f"{label:<44} wall median {med:6.3f} s (min {min(times):.3f}, max {max(times):.3f}, n={len(times)}), "
          f"CPU median {statistics.median(cpu):.3f} s{verdict}")


ISOLATION = """
import statistics, sys, time
from gradcli.check.discovery import expand_paths
from gradcli.check.runner import RunOptions
from gradcli.check.session import run
items = [i for i in expand_paths(["examples"]) if "torch" not in i.path]
n = None
for isolate in (False, True):
    times = []
    for _ in range({runs}):
        start = time.perf_counter()
        result = run(items, RunOptions(gradcheck={{"seed": 0}}, isolate=isolate, jobs=1))
        times.append(time.perf_counter() - start)
    n = len(result.results)
    print(isolate, statistics.median(times), n)
"""


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    files = sorted(p.name for p in (ROOT / "examples").glob("*.py"))
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}; CPUs: {os.cpu_count()}")

    times, proc = wall([PY, "-m", "gradcli", "check", "examples/"], args.runs)
    print(f"gradcli check examples/ ({len(files)} files): {proc.stdout.strip().splitlines()[-1]}")
    line("gradcli check examples/  (end to end)", times, 3.0)
    times, _ = wall([PY, "-m", "gradcli", "check", "examples/", "-j", "1"], args.runs)
    line("gradcli check examples/ -j 1  (one file at a time)", times)
    times, _ = wall([PY, "-m", "gradcli", "check", "--help"], max(args.runs, 10))
    line("gradcli check --help", times, 0.2)
    times, _ = wall([PY, "-c", "pass"], max(args.runs, 10))
    line("python -c pass  (interpreter start-up, for scale)", times)
    try:
        times, _ = wall([PY, "-c", "import torch"], args.runs)
        line("python -c 'import torch'  (the floor: 2 files need it)", times)
    except SystemExit:
        print("torch not installed: the two torch example files are skipped")

    out = subprocess.run([PY, "-c", ISOLATION.format(runs=args.runs)], cwd=ROOT, capture_output=True, text=True,
                         check=True).stdout.split("\n")
    (_, inline, n), (_, forked, _) = [row.split() for row in out[:2]]
    inline, forked, n = float(inline), float(forked), int(n)
    print(f"isolation, {n} results in the examples without torch, in-process API, -j 1:")
    print(f"  in one process {inline:.3f} s, forked worker per file + checker per Function {forked:.3f} s: "
          f"overhead {forked - inline:+.3f} s ({(forked - inline) / n * 1000:+.1f} ms per Function)")


if __name__ == "__main__":
    main()
