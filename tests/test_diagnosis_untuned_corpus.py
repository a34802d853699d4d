"""The untuned diagnosis corpus (bench/diagnosis_untuned/) is well-formed, and its scorer scores.

Static checks only (ast): nothing here imports the corpus or runs the diagnosis — that is the
bench's job (bench/diagnosis_untuned.py). Passes with and without torch.
"""
import ast
import importlib.util
import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BENCH = os.path.join(ROOT, "bench", "diagnosis_untuned.py")


def _load_bench():
    spec = importlib.util.spec_from_file_location("diagnosis_untuned_bench", BENCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


bench = _load_bench()
RECORDS = bench.read_corpus()
BUGGY = [r for r in RECORDS if r["bug"] is not None]
CORRECT = [r for r in RECORDS if r["bug"] is None]


def _id(record):
    return f"{os.path.basename(record['file'])}::{record['function']}"


def test_corpus_size_and_mix():
    assert len(BUGGY) >= 45
    assert len(CORRECT) >= 10
    kinds = {r["bug"]["kind"] for r in BUGGY}
    no_pattern = [r for r in BUGGY if r["bug"]["kind"] == "none"]
    assert 4 <= len(no_pattern) <= 8
    # the new kinds of issue 17 are all represented, not only those gradcli already names
    for kind in ("term_sign", "wrong_axis", "wrong_variable", "not_accumulated", "missing_flip",
                 "missing_reshape", "straight_through", "gradient_reversal", "smooth_surrogate"):
        assert kind in kinds, kind
    assert kinds <= bench.KINDS


def test_function_names_are_unique():
    names = [r["function"] for r in RECORDS]
    assert len(names) == len(set(names))


@pytest.mark.parametrize("record", RECORDS, ids=_id)
def test_every_function_declares_bug(record):
    assert record["has_bug_attribute"], "declare bug = {...} or bug = None (a correct twin)"


@pytest.mark.parametrize("record", BUGGY, ids=_id)
def test_buggy_label_is_valid(record):
    bug = record["bug"]
    assert isinstance(bug, dict)
    assert set(bug) <= {"kind", "input", "note", "also"}
    assert bug["kind"] in bench.KINDS
    assert bug["input"] in record["params"], f"{bug['input']} is not a parameter of forward"
    assert isinstance(bug["note"], str) and len(bug["note"]) > 10
    also = bug.get("also", [])
    assert isinstance(also, list) and set(also) <= bench.KINDS - {"none", bug["kind"]}


@pytest.mark.parametrize("record", BUGGY, ids=_id)
def test_buggy_has_exactly_one_bug_line_in_forward_or_backward(record):
    assert len(record["bug_marks"]) == 1, record["bug_marks"]
    assert len(record["bug_sites"]) == 1, "the # BUG line must be in forward or backward"
    site = record["bug_sites"][0]
    assert site["method"] in ("forward", "backward")
    low, high = site["statement"]
    assert low <= site["line"] <= high


@pytest.mark.parametrize("record", CORRECT, ids=_id)
def test_correct_twin_has_no_bug_line(record):
    assert record["bug_marks"] == []


def test_no_bug_mark_outside_a_function_class():
    for name in os.listdir(bench.CORPUS):
        if not name.endswith(".py"):
            continue
        path = os.path.join(bench.CORPUS, name)
        with open(path, encoding="utf-8") as handle:
            source = handle.read()
        tree = ast.parse(source)
        spans = [(n.lineno, n.end_lineno) for n in tree.body
                 if isinstance(n, ast.ClassDef) and bench._is_function_class(n)]
        for number, line in enumerate(source.splitlines(), 1):
            if line.rstrip().endswith(bench.BUG_MARK):
                assert any(lo <= number <= hi for lo, hi in spans), f"{name}:{number}"


# ------------------------------------------------------------------------- the scorer itself
def _record(kind="scale", also=None, statement=(20, 21)):
    bug = None if kind is None else {"kind": kind, "input": "x", "note": "a note on the bug"}
    if bug and also:
        bug["also"] = also
    return {"file": "/c/ops.py", "function": "F", "params": ["x", "w"], "bug": bug,
            "bug_sites": [{"method": "backward", "line": statement[1],
                           "statement": list(statement)}] if bug else []}


def _result(status="fail", findings=()):
    diagnosis = [{"kind": k, "input": i, "message": "m",
                  "params": {"source": {"file": "/c/ops.py", "line": line}} if line else {}}
                 for k, i, line in findings]
    return {"status": status, "checks": [{"inputs": [{"index": 0, "name": "x"},
                                                      {"index": 1, "name": "w"}],
                                          "diagnosis": diagnosis}]}


def test_score_right_kind_and_location():
    row = bench.score(_record(), _result(findings=[("scale", 0, 21)]))
    assert (row["outcome"], row["kind_right"], row["location_right"]) == ("right", True, True)
    row = bench.score(_record(), _result(findings=[("scale", 0, 25)]))
    assert (row["outcome"], row["location_right"]) == ("right", False)


def test_score_wrong_vague_missed_alternative():
    assert bench.score(_record(), _result(findings=[("sign", 0, 21)]))["outcome"] == "wrong"
    # a bug kind named for another input is wrong too; none and kink never are
    assert bench.score(_record(), _result(findings=[("scale", 0, 21), ("zero", 1, 3)]))[
        "outcome"] == "wrong"
    assert bench.score(_record(), _result(findings=[("none", 0, None), ("kink", 1, None)]))[
        "outcome"] == "vague"
    assert bench.score(_record(), _result(findings=[]))["outcome"] == "vague"
    assert bench.score(_record(), _result(status="pass"))["outcome"] == "missed"
    assert bench.score(_record(), _result(status="error"))["outcome"] == "no_verdict"
    assert bench.score(_record(), None)["outcome"] == "no_verdict"
    reversal = _record("gradient_reversal", also=["sign"])
    row = bench.score(reversal, _result(findings=[("sign", 0, 21)]))
    assert (row["outcome"], row["kind_right"]) == ("alternative", False)


def test_score_function_wide_finding_counts_for_the_labelled_input():
    row = bench.score(_record("inplace"), _result(findings=[("inplace", None, 20)]))
    assert (row["outcome"], row["location_right"]) == ("right", True)


def test_score_no_pattern_bugs_and_correct_twins():
    assert bench.score(_record("none"), _result(findings=[("none", 0, None)]))["outcome"] == "right"
    assert bench.score(_record("none"), _result(findings=[("scale", 0, 21)]))["outcome"] == "wrong"
    assert bench.score(_record(None), _result(status="pass"))["outcome"] == "pass"
    assert bench.score(_record(None), _result(findings=[("none", None, None)]))[
        "outcome"] == "false_alarm"
    assert bench.score(_record(None), _result(findings=[("scale", 0, 3)]))["outcome"] == "wrong"


def test_totals():
    rows = [bench.score(_record(), _result(findings=[("scale", 0, 21)])),
            bench.score(_record(), _result(findings=[("scale", 0, 9)])),
            bench.score(_record(), _result(findings=[("sign", 0, 21)])),
            bench.score(_record(), _result(status="pass")),
            bench.score(_record("none"), _result(findings=[("none", 0, None)])),
            bench.score(_record(None), _result(findings=[("zero", 0, 2)]))]
    summary = bench.totals(rows)
    assert summary["pattern_bugs"] == 4 and summary["pattern_bugs_failed"] == 3
    assert (summary["right_kind"], summary["right_kind_and_location"]) == (2, 1)
    assert summary["right_kind_pct"] == 50.0 and summary["right_kind_of_failed_pct"] == 66.7
    assert (summary["wrong"], summary["missed"], summary["no_pattern_said_none"]) == (1, 1, 1)
    assert summary["correct_wrong"] == 1 and summary["wrong_total"] == 2
