"""Wall time of `pytest --gradcli examples/` serial (-n 0) and on pytest-xdist workers (-n 2).

    python bench/pytest_xdist.py [--runs 3] [--workers 2] [--shape 3x4] [--per-process] [--workload N] [PATH]

Runs each configuration --runs times, alternating them so that a change in the machine's load hits
both alike, and prints the median and every run. `gradcli check PATH` is timed alongside for
reference. CPU seconds (all processes) are printed too: on a busy machine they show the fixed cost of
each xdist worker better than wall time. The verdict counts of every run must not depend on -n.
--shape sets the automatic inputs' shape (larger: more work per Function, where xdist can pay off).
--workload N times, instead of PATH, a temporary folder of N one-Function torch files: the CI workload
of bench/folder_workload.py (87 files there).

--per-process loads a small plugin into every pytest process (the controller and each xdist worker)
that records, at its end, its own CPU seconds, those of its children (the forked collectors,
workers and checkers) and how long it lived: where -n N's extra CPU goes (a worker's fixed cost --
interpreter, pytest, torch -- against its share of the items). Printed as medians per process role.
"""
import argparse
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)  # every finished descendant: workers, forks
    return usage.ru_utime + usage.ru_stime


PLUGIN = r"""
import json, os, resource, time
_START = time.time()
def pytest_unconfigure(config):
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    role = getattr(config, "workerinput", {}).get("workerid", "main")
    with open(os.environ["GRADCLI_BENCH_PROCESSES"], "a") as f:
        f.write(json.dumps({"role": role, "self": own.ru_utime + own.ru_stime,
                            "children": kids.ru_utime + kids.ru_stime, "alive": time.time() - _START}) + "\n")
"""


def timed(command: list, env=None) -> tuple:
    """(wall seconds, CPU seconds of all its processes, the closing summary line)."""
    start, cpu = time.perf_counter(), cpu_seconds()
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, stdin=subprocess.DEVNULL, env=env)
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
    parser.add_argument("--workload", type=int, metavar="N",
                        help="time a temporary folder of N torch Function files (bench/workload_functions.py)")
    parser.add_argument("--per-process", action="store_true",
                        help="CPU seconds and lifetime of each pytest process (controller, each xdist worker)")
    args = parser.parse_args()
    if args.workload:
        sys.path.insert(0, str(ROOT / "bench"))
        from workload_functions import sources

        workload = Path(tempfile.mkdtemp(prefix="gradcli-workload-"))
        for name, text in sources("torch", args.workload).items():
            (workload / name).write_text(text)
        args.path = str(workload)
    env, log = None, None
    if args.per_process:
        folder = tempfile.mkdtemp(prefix="gradcli-bench-")
        Path(folder, "gradcli_bench_processes.py").write_text(PLUGIN)
        log = Path(folder, "processes.jsonl")
        env = dict(os.environ, GRADCLI_BENCH_PROCESSES=str(log),
                   PYTHONPATH=os.pathsep.join(p for p in (folder, os.environ.get("PYTHONPATH")) if p))
    pytest = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--tb=no", "--gradcli", args.path,
              "--gradcli-shape", args.shape] + (["-p", "gradcli_bench_processes"] if args.per_process else [])
    configs = {
        "pytest --gradcli -n 0": pytest + ["-n", "0"],
        f"pytest --gradcli -n {args.workers}": pytest + ["-n", str(args.workers)],
        "gradcli check": [str(BIN / "gradcli"), "check", args.path, "--format", "plain", "--shape", args.shape],
    }
    times = {name: [] for name in configs}
    cpus = {name: [] for name in configs}
    counts = {name: set() for name in configs}
    processes = {name: {} for name in configs}  # role -> [(self, children, alive)] over the runs
    for _ in range(args.runs):
        for name, command in configs.items():
            if log is not None and log.exists():
                log.unlink()
            wall, cpu, summary = timed(command, env)
            times[name].append(wall)
            cpus[name].append(cpu)
            counts[name].add(summary)
            for line in (log.read_text().splitlines() if log is not None and log.exists() else ()):
                row = json.loads(line)
                processes[name].setdefault(row["role"], []).append((row["self"], row["children"], row["alive"]))
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"{args.path} (shape {args.shape}): {args.runs} runs each, {os.cpu_count()} CPUs, "
          f"load average {load:.1f} at the end")
    for name in configs:
        runs = ", ".join(f"{t:.1f}" for t in times[name])
        print(f"  {name:<24} median {statistics.median(times[name]):5.1f} s wall, "
              f"{statistics.median(cpus[name]):5.1f} s CPU   (wall runs: {runs})   {' | '.join(counts[name])}")
        for role, rows in sorted(processes[name].items()):
            own, kids, alive = (statistics.median(column) for column in zip(*rows))
            print(f"      {role:<6} itself {own:5.2f} s CPU, its children {kids:5.2f} s CPU, alive {alive:5.1f} s")
    if args.workload:
        import shutil

        shutil.rmtree(args.path, ignore_errors=True)


if __name__ == "__main__":
    main()
