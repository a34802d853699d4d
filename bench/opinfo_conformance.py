"""Conformance with PyTorch on its own ops: OpInfo's ``op_db`` run through both gradchecks.

    python bench/opinfo_conformance.py [--samples 2] [--max-elements 400] [--ops floor,lu_solve]
                                       [--limit N] [--json out.json] [--timeout 60]

For every op of ``torch.testing._internal.common_methods_invocations.op_db`` that supports autograd
in float64 (what torch's ``TestBwdGradients.test_fn_grad`` runs), its first ``--samples`` sample
inputs with at most ``--max-elements`` differentiable elements are checked by
``torch.autograd.gradcheck`` and ``gradcli.gradcheck`` on the same callable and inputs — the
callable is built as torch's own ``TestGradients._check_helper`` builds it (tensors that require
grad become the arguments, everything else is bound; ``gradcheck_wrapper`` and
``output_process_fn_grad`` applied). Samples of an op that OpInfo marks for ``test_fn_grad`` in
float64 on CPU are honoured as torch's test suite does: a ``skip`` is not run, an
``expectedFailure`` is run and recorded as expected to fail (torch failing there is no disagreement).

Prints the totals (samples, ops, agree, gradcli-only failures, torch-only failures, errors) and a
table of every disagreement with its reason (gradcli's first failed check, or torch's message).
Needs torch and ``expecttest`` (op_db imports it); nothing in gradcli needs either at runtime.

Measured (torch 2.13.0 CPU, defaults: 2 samples/op, ≤ 400 elements; 2 shared cores, 980 s):
979 samples over 509 ops (22 ops skipped as OpInfo declares); agree 971 (both fail 8, every one an
OpInfo-declared expected failure: as_strided_scatter, bfloat16, half, chalf); gradcli alone fails 2
(linalg.eig#1, linalg.eigvals#1 — fixed after that run started, by complex outputs as
stack(real, imag); re-run of those ops: all agree); torch alone fails 6, all declared expected
failures: float, cfloat (a float32/complex64 output of a float64 input: torch's own numeric
Jacobian is too coarse; the cast's derivative is 1) and native_group_norm (torch's backward drops
the mean/rstd cotangents when another output's grad is *undefined*, the way torch's gradcheck
probes one output at a time; with defined — even zero — cotangents, as gradcli passes them, it
is right: d Σmean/dx = 1/9 both ways). Before (main a7f88c8, issue 19's run): 1,002 samples, 948
agree, gradcli alone fails 50 (complex, floor/ceil/round/trunc/frac, lu_solve/ormqr, sgn).
"""
from __future__ import annotations

import argparse
import json
import signal
import sys
import time
import unittest
import warnings
from itertools import chain

CLASS_NAME, TEST_NAME = "TestBwdGradients", "test_fn_grad"


def declared(op, dtype) -> str:
    """"skip", "xfail" or "" for op's test_fn_grad in ``dtype`` on CPU (OpInfo's skips/decorators)."""
    state = ""
    for info in tuple(op.skips) + tuple(op.decorators):
        if not hasattr(info, "is_active"):  # a bare decorator applies to every test of the op
            decorators = [info]
        else:
            try:
                active = info.is_active(CLASS_NAME, TEST_NAME, "cpu", dtype, {})
            except TypeError:  # older signature without param_kwargs
                active = info.is_active(CLASS_NAME, TEST_NAME, "cpu", dtype)
            if not active:
                continue
            decorators = info.decorators
        for decorator in decorators:
            def probe():
                pass
            try:
                decorated = decorator(probe)
            except Exception:  # noqa: BLE001 -- e.g. a tolerance override that wants a test class
                continue
            if getattr(decorated, "__unittest_skip__", False):
                return "skip"
            if getattr(decorated, "__unittest_expecting_failure__", False):
                state = "xfail"
    return state


def sample_callable(op, sample):
    """(fn, gradcheck_args) exactly as torch's TestGradients._check_helper builds them."""
    import torch
    from torch.testing._internal.common_utils import is_iterable_of_tensors

    if is_iterable_of_tensors(sample.input):
        all_args = chain(sample.input, sample.args, sample.kwargs.values())
    else:
        all_args = tuple(chain((sample.input,), sample.args, sample.kwargs.values()))
    args = tuple(x for x in all_args if isinstance(x, torch.Tensor) and x.requires_grad)
    variant = op.get_op()

    def recompose(inputs, inp, index):
        if is_iterable_of_tensors(inp):
            out = []
            for x in inp:
                if isinstance(x, torch.Tensor) and x.requires_grad:
                    out.append(inputs[index])
                    index += 1
                else:
                    out.append(x)
            return out, index
        if isinstance(inp, torch.Tensor) and inp.requires_grad:
            return inputs[index], index + 1
        return inp, index

    def fn(*inputs):
        positional, index = [], 0
        inp, index = recompose(inputs, sample.input, index)
        positional.append(inp)
        for x in sample.args:
            inp, index = recompose(inputs, x, index)
            positional.append(inp)
        kwargs = {}
        for key, value in sample.kwargs.items():
            kwargs[key], index = recompose(inputs, value, index)
        output = op.gradcheck_wrapper(variant, *positional, **kwargs)
        return sample.output_process_fn_grad(output) if sample.output_process_fn_grad is not None else output

    fn.__name__ = op.name.replace(".", "_") or "op"
    return fn, args


class Timeout(Exception):
    pass


def _alarm(signum, frame):
    raise Timeout()


def run_torch(op, fn, args, timeout):
    import torch

    signal.alarm(timeout)
    try:
        ok = torch.autograd.gradcheck(fn, args, nondet_tol=op.gradcheck_nondet_tol, check_undefined_grad=True,
                                      check_batched_grad=False, raise_exception=True)
        return ("pass" if ok else "fail"), ""
    except Timeout:
        return "error", f"timeout after {timeout} s"
    except Exception as exc:  # noqa: BLE001 -- GradcheckError or the op raising: both are torch's verdict
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        kind = "fail" if type(exc).__name__ == "GradcheckError" else "error"
        return kind, f"{type(exc).__name__}: {first}"[:200]
    finally:
        signal.alarm(0)


def run_gradcli(op, fn, args, timeout):
    import gradcli

    signal.alarm(timeout)
    try:
        report = gradcli.gradcheck(fn, args, nondet_tol=op.gradcheck_nondet_tol)
        if report.ok:
            return "pass", ""
        failed = [c for c in report.checks if c.status == "fail"]
        reason = "; ".join(f"{c.name}: {c.message}" for c in failed[:2]) or "failed"
        return "fail", reason[:300]
    except Timeout:
        return "error", f"timeout after {timeout} s"
    except Exception as exc:  # noqa: BLE001 -- the forward raising at the inputs, or gradcli crashing
        return "error", f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}"[:300]
    finally:
        signal.alarm(0)


def selected_ops(names, limit):
    import torch
    from torch.testing._internal.common_methods_invocations import op_db

    ops = []
    for op in op_db:
        full = op.name + (f".{op.variant_test_name}" if op.variant_test_name else "")
        if names and op.name not in names and full not in names:
            continue
        if not op.supports_autograd:
            continue
        if torch.float64 not in op.supported_backward_dtypes("cpu"):
            continue
        ops.append((full, op))
    return ops[:limit] if limit else ops


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--samples", type=int, default=2, help="samples per op (default 2)")
    parser.add_argument("--max-elements", type=int, default=400, help="skip samples with more differentiable elements")
    parser.add_argument("--ops", default="", help="comma-separated op names (default: all)")
    parser.add_argument("--limit", type=int, default=0, help="first N selected ops only")
    parser.add_argument("--timeout", type=int, default=60, help="seconds per checker per sample")
    parser.add_argument("--json", default="", help="write every sample's verdicts here")
    options = parser.parse_args(argv)

    import torch

    warnings.filterwarnings("ignore")
    signal.signal(signal.SIGALRM, _alarm)
    torch.manual_seed(0)
    names = {n.strip() for n in options.ops.split(",") if n.strip()}
    started = time.perf_counter()
    rows, declared_skips = [], 0
    for full, op in selected_ops(names, options.limit):
        state = declared(op, torch.float64)
        if state == "skip":
            declared_skips += 1
            continue
        try:
            samples = op.sample_inputs("cpu", torch.float64, requires_grad=True)
            taken = 0
            for index, sample in enumerate(samples):
                if taken >= options.samples:
                    break
                fn, args = sample_callable(op, sample)
                if not args or sum(a.numel() for a in args) > options.max_elements:
                    continue
                taken += 1
                torch_verdict, torch_reason = run_torch(op, fn, args, options.timeout)
                ours, our_reason = run_gradcli(op, fn, args, options.timeout)
                rows.append({"op": full, "sample": index, "declared": state, "torch": torch_verdict,
                             "torch_reason": torch_reason, "gradcli": ours, "gradcli_reason": our_reason})
                print(f"{full}#{index}: torch {torch_verdict}, gradcli {ours}", file=sys.stderr, flush=True)
        except Exception as exc:  # noqa: BLE001 -- sample generation itself failed
            rows.append({"op": full, "sample": -1, "declared": state, "torch": "error", "gradcli": "error",
                         "torch_reason": f"sample_inputs: {type(exc).__name__}: {exc}"[:200], "gradcli_reason": ""})
    elapsed = time.perf_counter() - started
    summarize(rows, declared_skips, elapsed)
    if options.json:
        with open(options.json, "w") as handle:
            json.dump(rows, handle, indent=1)
    return 0


def summarize(rows, declared_skips, elapsed):
    def ok(verdict):
        return verdict == "pass"

    agree = [r for r in rows if ok(r["torch"]) == ok(r["gradcli"])]
    ours_only = [r for r in rows if ok(r["torch"]) and not ok(r["gradcli"])]
    torch_only = [r for r in rows if not ok(r["torch"]) and ok(r["gradcli"])]
    both_fail = [r for r in agree if not ok(r["torch"])]
    print(f"{len(rows)} samples over {len({r['op'] for r in rows})} ops in {elapsed:.0f} s "
          f"({declared_skips} ops skipped as OpInfo declares for {TEST_NAME})")
    print(f"agree {len(agree)} (both fail {len(both_fail)}); gradcli alone fails {len(ours_only)}; "
          f"torch alone fails {len(torch_only)} "
          f"(of which OpInfo-declared expected failures {sum(r['declared'] == 'xfail' for r in torch_only)})")
    if ours_only or torch_only:
        print("\n| op | sample | torch | gradcli | reason |\n|---|---|---|---|---|")
        for r in ours_only + torch_only:
            reason = r["gradcli_reason"] if not ok(r["gradcli"]) else r["torch_reason"]
            if r["declared"]:
                reason = f"[OpInfo: {r['declared']}] {reason}"
            print(f"| {r['op']} | {r['sample']} | {r['torch']} | {r['gradcli']} | {reason.replace('|', '/')} |")
    if both_fail:
        print("\nboth fail: " + ", ".join(f"{r['op']}#{r['sample']}" for r in both_fail))
    sys.stdout.flush()


if __name__ == "__main__":
    sys.exit(main())
