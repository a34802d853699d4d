"""Start-up of the command line (issues 4 and 5): `gradcli --help` and `gradcli check --help` ≤ 0.2 s,
the seed command `gradcli diff "sqrt(x)+1/x+2*y**2" --at x=3,y=2` ≤ 0.8 s wall.

    .venv/bin/python bench/cli_startup.py [--runs 15]

Every command is a real process (the installed console script next to this interpreter), run in
rounds that alternate all the commands, so machine noise hits each of them alike; medians, with
min and max. `python -c "import sympy"` is printed for scale: the diff command cannot be faster than
the interpreter plus SymPy's import, and its ratio to that floor is the machine-independent figure.
Set PYTHONDONTWRITEBYTECODE=1 and every run recompiles gradcli's own modules: the figures are then
not what a user sees, so the script says so.
"""
import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PY = sys.executable
SCRIPT = str(Path(PY).with_name("gradcli"))
SEED = [SCRIPT, "diff", "sqrt(x)+1/x+2*y**2", "--at", "x=3,y=2"]

COMMANDS = [  # label, argv, target seconds (None: for scale)
    ("python -c pass", [PY, "-c", "pass"], None),
    ("python -c 'import sympy'", [PY, "-c", "import sympy"], None),
    ("gradcli --help", [SCRIPT, "--help"], 0.2),
    ("gradcli check --help", [SCRIPT, "check", "--help"], 0.2),
    ("gradcli diff --help", [SCRIPT, "diff", "--help"], 0.2),
    ('gradcli diff "sqrt(x)+1/x+2*y**2" --at x=3,y=2', SEED, 0.8),
    ('  ... --format json', SEED + ["--format", "json"], None),
    ('  ... --no-simplify', SEED + ["--no-simplify"], None),
]


def timed(argv) -> float:
    start = time.perf_counter()
    proc = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}")
    return elapsed


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    if not Path(SCRIPT).exists():
        raise SystemExit(f"no console script at {SCRIPT}: pip install -e . into this interpreter's venv")
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}; CPUs: {os.cpu_count()}")
    if os.environ.get("PYTHONDONTWRITEBYTECODE"):
        print("warning: PYTHONDONTWRITEBYTECODE is set: modules without a cached .pyc compile on every run")
    for _, argv, _ in COMMANDS:  # warm-up: .pyc files written, disk cache filled
        timed(argv)
    times = {label: [] for label, _, _ in COMMANDS}
    for _ in range(args.runs):
        for label, argv, _ in COMMANDS:
            times[label].append(timed(argv))
    medians = {label: statistics.median(t) for label, t in times.items()}
    for label, _, target in COMMANDS:
        t = times[label]
        verdict = "" if target is None else ("  OK" if medians[label] <= target else f"  OVER the {target} s target")
        print(f"{label:<48} median {medians[label]:6.3f} s (min {min(t):.3f}, max {max(t):.3f}, "
              f"n={len(t)}){verdict}")
    floor = medians["python -c 'import sympy'"]
    seed = medians['gradcli diff "sqrt(x)+1/x+2*y**2" --at x=3,y=2']
    print(f"seed diff command / (interpreter + SymPy import): {seed / floor:.2f}x "
          f"(the command's own work: {seed - floor:+.3f} s)")


if __name__ == "__main__":
    main()
