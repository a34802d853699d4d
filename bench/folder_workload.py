"""The CI workload (issue 16): a folder of many small Functions, gradcli against torch's own loop.

    .venv/bin/python bench/folder_workload.py [--runs 5] [--torch-files 87] [--engine-files 75]
                                              [--only NAME ...] [--keep DIR]

Builds, in a temporary folder, ``--torch-files`` files of one small ``torch.autograd.Function`` each
(bench/workload_functions.py: elementwise, binary, matmul and reduction Functions, all correct, 3x4
float64 inputs) and ``--engine-files`` of the same Functions on gradcli's engine
(``import gradcli as torch``). Then times, as real processes, in alternating rounds (each round runs
every configuration once, so that the machine's load hits them alike), and prints medians:

* ``torch loop``: one Python process that imports torch, then imports each file and calls
  ``torch.autograd.gradcheck`` on its Function in default and in fast mode (what a hand-written CI
  script would do; torch's import included, as in every configuration);
* ``gradcli check TORCH``: ``gradcli check`` on the torch folder (ratio against the loop: target <= 1.0);
* ``gradcli check ENGINE``: the engine folder with the exact column (target <= 2 s) and with
  ``--no-exact``;
* ``pytest -n 0`` / ``pytest -n 2``: ``pytest --gradcli`` on the torch folder, serial and on two
  pytest-xdist workers (target: -n 2 at least 1.6x faster).

The commands run without ``PYTHONDONTWRITEBYTECODE`` (``--as-environment`` keeps it): an installed
gradcli has its bytecode compiled at install, while an editable checkout in an environment that sets
the variable compiles every module in every process (specs/check.md §5). Each configuration's CPU
seconds (all its processes: ``getrusage(RUSAGE_CHILDREN)``) are printed beside its wall time: on a
shared machine they are the figure that carries over to a quiet one.

Every run's summary line is kept: the verdicts must be the same in every run (printed if not).
The load average is printed before and after: on a shared machine only ratios of medians measured
side by side mean something.
"""
import argparse
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from workload_functions import arity, sources  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
PY = sys.executable

TORCH_LOOP = r"""
import importlib.util, sys
from pathlib import Path
import torch
folder = Path(sys.argv[1])
checked = 0
for path in sorted(folder.glob("*.py")):
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    fn = next(v for v in vars(module).values()
              if isinstance(v, type) and issubclass(v, torch.autograd.Function) and v.__module__ == path.stem)
    arity = fn.forward.__code__.co_argcount - 1
    inputs = tuple(torch.randn(3, 4, dtype=torch.float64, requires_grad=True) for _ in range(arity))
    assert torch.autograd.gradcheck(fn.apply, inputs)
    assert torch.autograd.gradcheck(fn.apply, inputs, fast_mode=True)
    checked += 1
print(f"{checked} passed")
"""


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)  # every finished descendant: workers, forks
    return usage.ru_utime + usage.ru_stime


def timed(command: list, env: dict, cwd: Path = ROOT) -> tuple:
    """(wall seconds, CPU seconds of all its processes, its summary line)."""
    start, cpu = time.perf_counter(), cpu_seconds()
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, stdin=subprocess.DEVNULL, env=env)
    wall, cpu = time.perf_counter() - start, cpu_seconds() - cpu
    lines = [ln for ln in done.stdout.strip().splitlines() if ln.strip()]
    last = lines[-1] if lines else f"exit {done.returncode}: {done.stderr.strip()[-300:]}"
    summary = re.sub(r" in [\d.]+ ?s.*", "", last.strip("= "))
    if done.returncode not in (0,):
        summary += f" [exit {done.returncode}]"
    return wall, cpu, summary


def build(folder: Path, backend: str, count: int) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in sources(backend, count).items():
        (folder / name).write_text(text)
        assert arity(name) in (1, 2)
    return folder


def configurations(torch_dir: Path, engine_dir: Path) -> dict:
    check = [PY, "-m", "gradcli", "check", "--format", "plain"]
    pytest = [PY, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--tb=no", "--gradcli", str(torch_dir)]
    return {
        "torch loop": [PY, "-c", TORCH_LOOP, str(torch_dir)],
        "gradcli check TORCH": check + [str(torch_dir)],
        "gradcli check ENGINE": check + [str(engine_dir)],
        "gradcli check ENGINE --no-exact": check + [str(engine_dir), "--no-exact"],
        "pytest -n 0": pytest + ["-n", "0"],
        "pytest -n 2": pytest + ["-n", "2"],
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--torch-files", type=int, default=87)
    parser.add_argument("--engine-files", type=int, default=75)
    parser.add_argument("--only", nargs="*", help="configuration names to run (substrings)")
    parser.add_argument("--keep", help="build the folders here and leave them")
    parser.add_argument("--gradcli", help="a gradcli checkout to time instead of the installed one (PYTHONPATH)")
    parser.add_argument("--as-environment", action="store_true",
                        help="keep PYTHONDONTWRITEBYTECODE as set here (by default it is removed: an installed "
                             "package has its bytecode compiled, an editable checkout only once it may write it)")
    parser.add_argument("--compare", help="another checkout (e.g. the commit before a change): its `gradcli check` "
                                          "runs are timed in the same rounds, named '... [compare]'")
    args = parser.parse_args()
    env = dict(os.environ)
    bytecode = "as in the environment" if args.as_environment else "cached"
    if not args.as_environment:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
    bytecode += f" (PYTHONDONTWRITEBYTECODE={env.get('PYTHONDONTWRITEBYTECODE', 'unset')})"
    if args.gradcli:
        env["PYTHONPATH"] = os.path.abspath(args.gradcli) + os.pathsep + env.get("PYTHONPATH", "")
    base = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="gradcli-workload-"))
    torch_dir = build(base / "torch_fns", "torch", args.torch_files)
    engine_dir = build(base / "engine_fns", "gradcli", args.engine_files)
    here = Path(args.gradcli).resolve() if args.gradcli else ROOT
    configs = {name: (command, env, here) for name, command in configurations(torch_dir, engine_dir).items()}
    if args.compare:
        # run from the other checkout too: `python -m` puts the working directory first on sys.path
        other = dict(env, PYTHONPATH=os.path.abspath(args.compare) + os.pathsep + os.environ.get("PYTHONPATH", ""))
        for name, command in configurations(torch_dir, engine_dir).items():
            if name.startswith("gradcli check"):
                configs[name + " [compare]"] = (command, other, Path(args.compare).resolve())
    if args.only:
        configs = {k: v for k, v in configs.items() if any(s in k for s in args.only)}
    times = {name: [] for name in configs}
    cpus = {name: [] for name in configs}
    summaries = {name: [] for name in configs}
    load_before = os.getloadavg()
    for _ in range(args.runs):
        for name, (command, command_env, cwd) in configs.items():
            wall, cpu, summary = timed(command, command_env, cwd)
            times[name].append(wall)
            cpus[name].append(cpu)
            summaries[name].append(summary)
            print(f"round {len(times[name])}: {name}: {wall:.2f} s wall, {cpu:.2f} s CPU  {summary}", file=sys.stderr,
                  flush=True)
    load_after = os.getloadavg()
    print(f"gradcli: {args.gradcli or 'installed'}, compared with {args.compare or '-'}; {args.torch_files} torch files, {args.engine_files} engine files; {args.runs} alternating rounds; "
          f"{os.cpu_count()} CPUs; load average {load_before[0]:.1f} before, {load_after[0]:.1f} after "
          f"(1-min), {load_after[1]:.1f} (5-min); bytecode {bytecode}")
    medians = {name: statistics.median(t) for name, t in times.items()}
    for name in configs:
        runs = ", ".join(f"{t:.2f}" for t in times[name])
        distinct = sorted(set(summaries[name]))
        print(f"  {name:<32} median {medians[name]:6.2f} s wall, {statistics.median(cpus[name]):6.2f} s CPU "
              f"(runs: {runs})  {' | '.join(distinct)}{'  VERDICTS DIFFER' if len(distinct) > 1 else ''}")
    ratios = [("gradcli check TORCH", "torch loop", "<= 1.0"), ("gradcli check TORCH [compare]", "torch loop", ""),
              ("pytest -n 2", "pytest -n 0", "<= 0.625")]
    for a, b, target in ratios:
        if a in medians and b in medians:
            print(f"  {a} / {b}: {medians[a] / medians[b]:.2f}" + (f" (target {target})" if target else ""))
    if not args.keep:
        import shutil

        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
