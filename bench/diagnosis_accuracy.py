"""Diagnosis accuracy over the seeded-bug catalogue of tests/test_diagnosis_cases.py.

    python bench/diagnosis_accuracy.py [--verbose]

Every seeded bug is run on both backends (torch skipped when absent) along two routes: the
report straight from ``gradcli.gradcheck`` and a report that kept no per-element arrays (the
diagnosis re-runs the function). The kink case runs on the second route only: gradcheck accepts
a kink, so its report passes.

Counted per run:
- right kind: the finding about the bug's input has the seeded kind;
- right kind and parameters: ... and its parameters (factor, other input, region, ...) match;
- wrong diagnoses: a finding that names a *different* bug kind (``none`` = no diagnosis, and
  ``kink`` = "not a bug", do not count as wrong) — for seeded bugs, pattern-free failures and
  correct Functions alike.
Targets (issues 8 and 17): right kind ≥ 90 %, wrong diagnoses = 0. The catalogue covers every kind
of specs/diagnosis.md, including issue 17's (term_sign, wrong_axis, wrong_variable,
not_accumulated, missing_flip, missing_reshape, inplace after save_for_backward, a factor that
a ones-cotangent alone would have called a cotangent story) and the undeclared surrogates of
issue 14.4 (straight_through, smooth_surrogate, gradient_reversal). It is the diagnosis's own
tuning corpus: figures on bugs the rules were not designed on come from the untuned corpus, scored
separately.

A second part of the own catalogue is ``bench/diagnosis_catalogue/`` (issue 17): torch-style
Functions in the untuned corpus's format (a ``bug`` label and a ``# BUG`` mark per class), run
as a user runs them and scored — kind *and* location — by ``bench/diagnosis_untuned.py``'s
scorer: ``python bench/diagnosis_accuracy.py --catalogue`` (needs torch). It is tuning corpus too.

The catalogue was written together with the diagnosis, so it is also scored on a held-out set:
the seeded bugs of tests/test_gradcheck_bugs.py (written independently, for gradcheck), each
given the kind its docstring describes (HELD_OUT below), in gradcheck's full and fast modes.
"""
import argparse
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from test_diagnosis_cases import CORRECT, NO_PATTERN, SEEDED, Backend, params_match  # noqa: E402

from gradcli.check.diagnosis import diagnose  # noqa: E402
from gradcli.check.gradcheck import gradcheck  # noqa: E402
from gradcli.check.report import Check, CheckReport  # noqa: E402

NOT_A_BUG = {"none", "kink"}


# tests/test_gradcheck_bugs.py BUGS id -> the kind its docstring describes (None: nothing to
# diagnose beyond the check's own message, e.g. a wrapper that never calls the custom backward)
HELD_OUT = {
    "factor 2": "scale", "sign flip": "sign", "dropped term": "missing_term",
    "missing transpose": "transposed", "bias not reduced": "not_reduced", "bias (1,4) not reduced": "not_reduced",
    "swapped gradients": "swapped", "ignores grad_output": "ignores_grad_output", "wrong for negatives": "region",
    "1e-3 relative error": "scale", "too few gradients": "zero", "wrong shape": "transposed",
    "saved output modified in place": "inplace", "forward modifies saved input": "inplace",
    "backward modifies saved tensor": "inplace", "wrapper calls legacy .forward()": None,
    "wrapper calls static forward()": None,
}


def held_out():
    """(runs, right, wrong, lines) over the independent seeded bugs; None if they moved."""
    try:
        import test_gradcheck_bugs as bugs
    except ImportError:
        return None
    runs = right = wrong = 0
    lines = []
    for mode in ("full", "fast"):
        for name, fn, inputs, _ in bugs.BUGS:
            if name not in HELD_OUT:
                lines.append(f"  (held-out case {name!r} has no expected kind here: skipped)")
                continue
            expected = HELD_OUT[name]
            fresh = lambda: tuple(bugs.leaf(t.data.copy()) for t in inputs)  # noqa: E731
            findings = diagnose(gradcheck(fn, fresh(), mode=mode), fn, fresh())
            kinds = [f.kind for f in findings]
            runs += 1
            ok = (kinds == []) if expected is None else (bool(kinds) and kinds[0] == expected)
            bad = [k for k in kinds if k not in NOT_A_BUG and k != expected]
            right += ok
            wrong += bool(bad)
            if not ok or bad:
                lines.append(f"  {'WRONG' if bad else 'MISSED'} {mode} {name}: {kinds}")
    return runs, right, wrong, lines


def available_backends():
    names = ["gradcli"]
    try:
        import torch  # noqa: F401

        names.append("torch")
    except ImportError:
        print("torch not installed: gradcli backend only")
    return names


def run(case, backend, route):
    """(findings, seconds spent in diagnose)."""
    fn, inputs = case.build(Backend(backend))
    if route == "gradcheck":
        report = gradcheck(fn, inputs, **case.gradcheck_options)
    else:
        report = CheckReport(function=case.name, checks=[Check("values", "fail", "mismatch")])
    fn, inputs = case.build(Backend(backend))
    started = time.perf_counter()
    findings = diagnose(report, fn, inputs)
    return findings, time.perf_counter() - started


def about(findings, case):
    return [f for f in findings if f.input == case.input]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--verbose", action="store_true", help="print every run")
    parser.add_argument("--catalogue", action="store_true",
                        help="score bench/diagnosis_catalogue/ (gradcli check in a subprocess) instead")
    args = parser.parse_args()
    if args.catalogue:
        import diagnosis_untuned

        here = os.path.dirname(os.path.abspath(__file__))
        return diagnosis_untuned.main(["--corpus", os.path.join(here, "diagnosis_catalogue"),
                                       "--gradcli", os.path.dirname(here)] + (["-v"] if args.verbose else []))
    seeded_runs = right_kind = right_params = wrong = 0
    wrong_runs, missed_runs, times = [], [], []
    clean_runs = 0
    for backend in available_backends():
        for route in ("gradcheck", "recomputed"):
            for case in SEEDED:
                if route == "gradcheck" and not case.gradcheck_fails:
                    continue
                findings, seconds = run(case, backend, route)
                times.append(seconds)
                seeded_runs += 1
                mine = about(findings, case)
                kinds = [f.kind for f in mine]
                ok_kind = bool(mine) and mine[0].kind == case.kind
                ok_params = ok_kind and params_match(case.params, mine[0].params)
                right_kind += ok_kind
                right_params += ok_params
                accusing = [f for f in findings if f.kind not in NOT_A_BUG and f.kind != case.kind
                            and f.input == case.input]
                wrong += bool(accusing)
                label = f"{backend:7} {route:10} {case.name}"
                if accusing:
                    wrong_runs.append(f"{label}: {[f.kind for f in accusing]}")
                elif not ok_params:
                    missed_runs.append(f"{label}: got {kinds or [f.kind for f in findings]}")
                if args.verbose:
                    print(f"{'ok  ' if ok_params else 'MISS'} {label:60} {kinds}")
            for case in NO_PATTERN + CORRECT:
                # a correct Function passes gradcheck (diagnose returns []); on the recomputed
                # route its report claims a failure that the diagnosis must not explain by a bug
                findings, _ = run(case, backend, route)
                clean_runs += 1
                accusing = [f for f in findings if f.kind not in NOT_A_BUG]
                wrong += bool(accusing)
                if accusing:
                    wrong_runs.append(f"{backend:7} {route:10} {case.name}: {[f.kind for f in accusing]}")
    print(f"seeded-bug runs:                 {seeded_runs} ({len(SEEDED)} bugs × backends × routes)")
    print(f"right kind:                      {right_kind}/{seeded_runs} = {right_kind / seeded_runs:.1%}")
    print(f"right kind and parameters:       {right_params}/{seeded_runs} = {right_params / seeded_runs:.1%}")
    print(f"pattern-free and correct runs:   {clean_runs}")
    print(f"wrong diagnoses (all runs):      {wrong}")
    print(f"diagnose() time per run:         median {sorted(times)[len(times) // 2] * 1e3:.1f} ms, "
          f"max {max(times) * 1e3:.1f} ms")
    for line in wrong_runs:
        print("  WRONG", line)
    for line in missed_runs:
        print("  MISSED", line)
    result = held_out()
    if result is None:
        print("held-out set (tests/test_gradcheck_bugs.py) not importable: skipped")
        return
    runs, right, wrong_held, lines = result
    print(f"held-out runs (gradcli engine):  {runs}")
    print(f"held-out right kind:             {right}/{runs} = {right / runs:.1%}")
    print(f"held-out wrong diagnoses:        {wrong_held}")
    for line in lines:
        print(line)


if __name__ == "__main__":
    main()
