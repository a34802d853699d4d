"""Does every ``gradcli diff`` end within its budget, and leave no process behind?

Runs expensive and hostile expressions (issue 18/20: order-20 derivatives, huge sums and max(), towers of
powers, huge exact roots, values beyond any range) as real processes with the default budget (5 s) or a
given one, and reports each wall time minus the budget. Every run gets a unique environment tag that its
forked workers inherit; after the command returns, /proc is scanned for processes still carrying it.
Run: ``python bench/diff_budget.py`` (Linux).
"""
import os
import subprocess
import sys
import time
import uuid

CASES = [
    (["exp(x*y)", "--order", "20", "--at", "x=1,y=1"], 5),
    (["exp(x*y)*sin(x+y)", "--order", "12", "--at", "x=1,y=1"], 5),
    (["exp(x*y)", "--order", "16", "--at", "x=1,y=1", "--budget", "2"], 2),
    (["max(" + ",".join(f"x^{i}" for i in range(2000)) + ")"], 5),
    (["+".join(f"sin({i}*x)" for i in range(1500)), "--at", "x=1"], 5),
    (["+".join(f"x{i}^2" for i in range(399))], 5),
    (["(2^9999+1)^(1/2)*x"], 5),
    (["exp(10^1000)*x", "--at", "x=2"], 5),
    (["x^x^x^x", "--at", "x=10"], 5),
    (["x^x^x^x^x^x^x^x", "--at", "x=3"], 5),
    (["3^(2^(2^x))", "--at", "x=32", "--simplify-timeout", "0", "--no-simplify"], 5),
    (["exp(exp(exp(x)))", "--at", "x=10"], 5),
    (["exp(exp(exp(exp(x))))", "--at", "x=10"], 5),
    (["min(rsqrt(z), 4*z, asin(5), y/y)"], 5),
    (["sin(x)", "--at", "x=1e1000"], 5),
    (["tan(x)", "--at", "x=pi/2"], 5),
    (["gamma(10^100)*x", "--at", "x=1"], 5),
    (["sin(10^100*x)", "--at", "1"], 5),
    (["x^2", "--check", "2x+10^-20"], 5),
    (["tanh(tanh(tanh(tanh(tanh(x*y*z)))))", "--hessian", "--at", "x=1,y=2,z=3"], 5),
    (["sqrt(x)+1/x+2*y^2", "--at", "x=3,y=2", "--simplify-timeout", "10"], 12),
]


def _tagged(tag):
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as environ:
                if tag.encode() in environ.read():
                    found.append(int(entry))
        except OSError:
            continue
    return found


def main():
    worst = -1e9
    survivors_total = 0
    for args, budget in CASES:
        tag = uuid.uuid4().hex
        env = dict(os.environ, GRADCLI_BENCH_TAG=tag)
        started = time.monotonic()
        done = subprocess.run([sys.executable, "-m", "gradcli", "diff", *args, "--format", "plain"],
                              capture_output=True, text=True, env=env)
        wall = time.monotonic() - started
        survivors = _tagged(tag)
        survivors_total += len(survivors)
        worst = max(worst, wall - budget)
        text = (done.stderr.strip() or done.stdout.strip().splitlines()[-1])[:110]
        shown = " ".join(args)[:50]
        print(f"{wall:6.2f} s (budget {budget:g}, over by {wall - budget:+.2f}) exit {done.returncode} "
              f"survivors {len(survivors)}  {shown}: {text}")
    print(f"\nworst overrun {worst:+.2f} s; processes left behind: {survivors_total}")
    return 0 if worst <= 1.0 and survivors_total == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
