"""Wall time of `pytest --gradcli examples/` serial (-n 0) and on pytest-xdist workers (-n 2).

    python bench/pytest_xdist.py [--runs 3] [--workers 2] [--shape 3x4] [PATH]

Runs each configuration --runs times, alternating them so that a change in the machine's load hits
both alike, and prints the median and every run. `gradcli check PATH` is timed alongside for
reference. CPU seconds (all processes) are printed too: on a busy machine they show the fixed cost of
each xdist worker better than wall time. The verdict counts of every run must not depend on -n.
--shape sets the automatic inputs' shape (larger: more work per Function, where xdist can pay off).
"""
import argparse
import os
import re
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)  # every finished descendant: workers, forks
    return usage.ru_utime + usage.ru_stime


def timed(command: list) -> tuple:
    """(wall seconds, CPU seconds of all its processes, the closing summary line)."""
    start, cpu = time.perf_counter(), cpu_seconds()
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    wall, cpu = time.perf_counter() - start, cpu_seconds() - cpu
    last = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else done.stderr.strip()[-200:]
    counts = re.sub(r" in [\d.]+s.*", "", last.strip("= "))
    return wall, cpu, counts


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path", nargs="?", default="examples/")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--shape", default="3x4")
    args = parser.parse_args()
    pytest = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--tb=no", "--gradcli", args.path,
              "--gradcli-shape", args.shape]
    configs = {
        "pytest --gradcli -n 0": pytest + ["-n", "0"],
        f"pytest --gradcli -n {args.workers}": pytest + ["-n", str(args.workers)],
        "gradcli check": [str(BIN / "gradcli"), "check", args.path, "--format", "plain", "--shape", args.shape],
    }
    times = {name: [] for name in configs}
    cpus = {name: [] for name in configs}
    counts = {name: set() for name in configs}
    for _ in range(args.runs):
        for name, command in configs.items():
            wall, cpu, summary = timed(command)
            times[name].append(wall)
            cpus[name].append(cpu)
            counts[name].add(summary)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"{args.path} (shape {args.shape}): {args.runs} runs each, {os.cpu_count()} CPUs, "
          f"load average {load:.1f} at the end")
    for name in configs:
        runs = ", ".join(f"{t:.1f}" for t in times[name])
        print(f"  {name:<24} median {statistics.median(times[name]):5.1f} s wall, "
              f"{statistics.median(cpus[name]):5.1f} s CPU   (wall runs: {runs})   {' | '.join(counts[name])}")


if __name__ == "__main__":
    main()
