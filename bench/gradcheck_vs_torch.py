"""gradcli.gradcheck vs torch.autograd.gradcheck, measured side by side in one run.

    python bench/gradcheck_vs_torch.py [--repeats 3] [--quick]

Prints (medians of --repeats runs):
1. full mode: gradcli full vs torch gradcheck(fast_mode=False) on z = sqrt(x) + 1/x + 2y², n elements
   per input, n in {100, 1000, 3000} — gradcli on its own engine and on the same torch function;
2. fast mode: gradcli fast vs torch fast_mode=True;
3. gradcli fast at n = 10⁶: wall time and tracemalloc peak relative to the inputs' size;
4. accuracy of the numerical derivative on f(x) = eˣ/√(sin³x + cos³x) at x = 1.5;
5. verdicts on three small cases where the tools disagree.
"""
import argparse
import statistics
import time
import tracemalloc
import warnings

import mpmath
import numpy as np
import torch

import gradcli
from gradcli.autograd import Function
from gradcli.check import gradcheck
from gradcli.numeric import derivative, user_step


class SqrtInvSquare(Function):
    @staticmethod
    def forward(ctx, x, y):
        ctx.save_for_backward(x, y)
        return gradcli.sqrt(x) + 1 / x + 2 * y**2

    @staticmethod
    def backward(ctx, grad):
        x, y = ctx.saved_tensors
        return grad * (0.5 / gradcli.sqrt(x) - 1 / x**2), grad * 4 * y


def torch_function(x, y):
    return torch.sqrt(x) + 1 / x + 2 * y**2


def inputs(n, seed=0):
    rng = np.random.default_rng(seed)
    return rng.uniform(0.5, 2.0, n), rng.standard_normal(n)


def engine_inputs(n):
    x, y = inputs(n)
    return gradcli.tensor(x, requires_grad=True), gradcli.tensor(y, requires_grad=True)


def torch_inputs(n):
    x, y = inputs(n)
    return torch.tensor(x, requires_grad=True), torch.tensor(y, requires_grad=True)


def median_seconds(run, repeats):
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        result = run()
        times.append(time.perf_counter() - start)
        assert result, "a correct function must pass"
    return statistics.median(times)


def full_and_fast(sizes, repeats, torch_full_repeats):
    rows = []
    for n in sizes:
        ex, ey = engine_inputs(n)
        tx, ty = torch_inputs(n)
        t_torch_full = median_seconds(
            lambda: torch.autograd.gradcheck(torch_function, (tx, ty), fast_mode=False), torch_full_repeats)
        t_ours_full = median_seconds(lambda: gradcheck(SqrtInvSquare, (ex, ey), mode="full"), repeats)
        t_ours_full_torch = median_seconds(lambda: gradcheck(torch_function, (tx, ty), mode="full"), repeats)
        t_torch_fast = median_seconds(
            lambda: torch.autograd.gradcheck(torch_function, (tx, ty), fast_mode=True), repeats)
        t_ours_fast = median_seconds(lambda: gradcheck(SqrtInvSquare, (ex, ey), mode="fast"), repeats)
        t_ours_fast_torch = median_seconds(lambda: gradcheck(torch_function, (tx, ty), mode="fast"), repeats)
        rows.append((n, t_torch_full, t_ours_full, t_ours_full_torch, t_torch_fast, t_ours_fast, t_ours_fast_torch))
    print("\n1-2. z = sqrt(x) + 1/x + 2y², n elements per input (median seconds; ratio = torch / gradcli)")
    print(f"{'n':>6} | {'torch full':>10} {'gradcli full':>12} {'ratio':>7} {'(on torch fn)':>13} {'ratio':>7} | "
          f"{'torch fast':>10} {'gradcli fast':>12} {'ratio':>6} {'(on torch fn)':>13} {'ratio':>6}")
    for n, tf, of, oft, tq, oq, oqt in rows:
        print(f"{n:>6} | {tf:>10.4f} {of:>12.4f} {tf / of:>6.0f}x {oft:>13.4f} {tf / oft:>6.0f}x | "
              f"{tq:>10.4f} {oq:>12.4f} {tq / oq:>5.1f}x {oqt:>13.4f} {tq / oqt:>5.1f}x")
    return rows


def million(repeats):
    n = 1_000_000
    ex, ey = engine_inputs(n)
    gradcheck(SqrtInvSquare, (ex, ey), mode="fast")  # warm-up
    seconds = median_seconds(lambda: gradcheck(SqrtInvSquare, (ex, ey), mode="fast"), repeats)
    inputs_bytes = ex.data.nbytes + ey.data.nbytes
    tracemalloc.start()
    report = gradcheck(SqrtInvSquare, (ex, ey), mode="fast")
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    print(f"\n3. gradcli fast at n = 10⁶ per input: {seconds:.3f} s (target ≤ 2 s); "
          f"peak traced memory {peak / 2**20:.1f} MiB = {peak / inputs_bytes:.2f}× the inputs' "
          f"{inputs_bytes / 2**20:.1f} MiB (target ≤ 5×); {report.timing['forward_evals']} forward evaluations, "
          f"{report.timing['backward_calls']} backward calls; verdict {report.status}")
    return seconds, peak / inputs_bytes


def accuracy():
    with mpmath.workdps(50):
        exact = mpmath.mpf("4.0534278938986206577141879256080007143826567052026")

    def f(x):
        return np.exp(x) / np.sqrt(np.sin(x) ** 3 + np.cos(x) ** 3)

    def error(value):
        with mpmath.workdps(50):
            return float(abs(mpmath.mpf(float(value)) - exact))

    print("\n4. f(x) = exp(x)/sqrt(sin³x + cos³x) at x = 1.5, f' = 4.05342789389862065771...")
    print(f"{'method':<34} {'value':>22} {'rel. error':>11} {'estimate':>10} {'est/true':>9} {'evals':>6}")
    # eps=1e-6 (gradcheck's option) adds a second central step; the better one per element is kept.
    for label, method, step in (("complex_step", "complex_step", None), ("richardson", "richardson", None),
                                ("central", "central", None), ("central, eps=1e-6", "central", user_step(1e-6))):
        e = derivative(f, 1.5, method=method, step=step)
        err = error(e.value)
        print(f"{'gradcli ' + label:<34} {float(e.value):>22.17g} {err / float(exact):>11.2e} {float(e.error):>10.2e} "
              f"{float(e.error) / err:>9.2f} {e.evaluations:>6}")
    h = 1e-6  # torch.autograd.gradcheck's default eps, central difference
    torch_value = (f(1.5 + h) - f(1.5 - h)) / (2 * h)
    err = error(torch_value)
    print(f"{'torch gradcheck (central, eps=1e-6)':<34} {torch_value:>22.17g} {err / float(exact):>11.2e} "
          f"{'none':>10} {'':>9} {2:>6}")


class SinOff1e3(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return gradcli.sin(x)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * gradcli.cos(x) * 1.001


class TorchSinOff1e3(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch.sin(x)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * torch.cos(x) * 1.001


def verdicts():
    def torch_verdict(fn, args):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # torch warns that float32 inputs will likely fail
                return "pass" if torch.autograd.gradcheck(fn, args, raise_exception=True) else "fail"
        except Exception as exc:  # noqa: BLE001 -- torch raises GradcheckError
            return "fail (" + type(exc).__name__ + ")"

    x = np.array([-1.0, 0.0, 0.5, 0.0, 2.0])
    cases = [
        ("backward off by 1e-3 (wrong)", TorchSinOff1e3.apply, (torch.tensor(x + 1, requires_grad=True),),
         SinOff1e3, (gradcli.tensor(x + 1, requires_grad=True),)),
        ("relu at exact zeros (correct)", torch.relu, (torch.tensor(x, requires_grad=True),),
         gradcli.relu, (gradcli.tensor(x, requires_grad=True),)),
        ("sin in float32 (correct)", torch.sin, (torch.tensor(x + 1, dtype=torch.float32, requires_grad=True),),
         gradcli.sin, (gradcli.tensor(x + 1, dtype=gradcli.float32, requires_grad=True),)),
    ]
    print("\n5. verdicts (torch.autograd.gradcheck defaults vs gradcli.gradcheck)")
    for name, tfn, targs, gfn, gargs in cases:
        report = gradcheck(gfn, gargs)
        note = "; kinks accepted" if report.check("kinks").status == "warn" else ""
        print(f"  {name:<32} torch: {torch_verdict(tfn, targs):<28} gradcli: {report.status}{note}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--torch-full-repeats", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="n in {100, 1000} only, 1 torch full repeat")
    args = parser.parse_args()
    sizes = (100, 1000) if args.quick else (100, 1000, 3000)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads; numpy {np.__version__}")
    # Warm both libraries up so first-call costs do not land in the first row.
    torch.autograd.gradcheck(torch_function, torch_inputs(10))
    gradcheck(SqrtInvSquare, engine_inputs(10))
    full_and_fast(sizes, args.repeats, 1 if args.quick else args.torch_full_repeats)
    million(args.repeats)
    accuracy()
    verdicts()


if __name__ == "__main__":
    main()
