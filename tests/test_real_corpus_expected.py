"""bench/real_packages_verdicts.py: a Function no verdict can exist for (an export stub with no backward, a
CUDA-only forward, an abstract base, a package's backward that raises) is right when its outcome is the SKIP/ERROR
its manifest entry's ``expected`` names, counted apart from verdicts. Pure Python: no torch, no corpus venv."""
import os
import sys

BENCH = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench")
sys.path.insert(0, BENCH)
from real_packages_verdicts import classify, summarize  # noqa: E402

ENTRY = {"key": "pkg/ops.py::Op", "package": "pkg", "class": "Op", "file": "pkg/ops.py", "held_out": False,
         "truth": None, "expected": None}
NO_BACKWARD = {"status": "skip", "message": r"NotImplementedError: You must implement either the backward",
               "why": "an export stub"}
RAISES = {"status": "error", "message": r"backward raised AttributeError: .*'linear' \(.*ops\.py:\d+\)",
          "why": "a package bug"}
AUTO = [[{"name": "x", "source": "auto", "spec": "float64[3,4]@(-2,2)", "type": "tensor"}]]
SKIP_MESSAGE = ("cannot build inputs automatically: forward runs at --input 'x=float64[3,4]@(-2,2)' but backward "
                "raises there (NotImplementedError: You must implement either the backward or vjp method for your "
                "custom autograd.Function to use it with backward mode AD.), and at every other plan tried.")


def outcome(status, message="", inputs=AUTO):
    return {"result": {"function": "Op", "status": status, "message": message, "inputs": inputs},
            "collected": True, "process": {"tail": ""}}


def test_the_expected_skip_is_right_and_counted_apart():
    row = classify(dict(ENTRY, expected=NO_BACKWARD), outcome("skip", SKIP_MESSAGE), None, None)
    assert (row["verdict"], row["correct"], row["judged_by"], row["expected_ok"]) == (None, True, "expected", True)
    totals = summarize([row])["totals"]["design"]
    assert (totals["correct_auto"], totals["correct_help"], totals["expected_ok"]) == (0, 1, 1)


def test_another_skip_than_the_expected_one_is_not_right():
    row = classify(dict(ENTRY, expected=NO_BACKWARD), outcome("skip", "forward took too long"), None, None)
    assert (row["correct"], row["expected_ok"]) == (False, False)
    assert summarize([row])["totals"]["design"]["correct_help"] == 0


def test_the_expected_status_must_match_as_well_as_the_message():
    row = classify(dict(ENTRY, expected=NO_BACKWARD), outcome("error", SKIP_MESSAGE), None, None)
    assert row["correct"] is False


def test_without_expected_a_skip_is_never_right():
    row = classify(ENTRY, outcome("skip", SKIP_MESSAGE), None, None)
    assert (row["correct"], row["expected_ok"]) == (False, False)


def test_the_helped_outcome_is_the_one_compared_when_a_help_ran():
    entry = dict(ENTRY, truth="user-bug", expected=RAISES, help={"args": ["--inputs-from", "x.py"], "why": "w"})
    error = "backward raised AttributeError: module 'torch' has no attribute 'linear' (/site/pkg/ops.py:70)"
    row = classify(entry, outcome("skip", "cannot build inputs automatically: ..."), outcome("error", error), None)
    assert (row["correct"], row["judged_by"]) == (True, "expected")
    assert row["auto_whose_error"] is None  # the automatic outcome was a skip
    wrong_line = classify(entry, outcome("skip", "..."), outcome("error", error.replace("ops.py", "x.py")), None)
    assert wrong_line["correct"] is False


def test_a_verdict_is_judged_as_before_even_with_expected():
    torch_fail = {"importable": True, "status": "fail", "values_status": "fail",
                  "input_sets": [{"default": {"status": "fail", "message": "m"},
                                  "no_undefined": {"status": "fail", "message": "m"}}]}
    row = classify(dict(ENTRY, expected=NO_BACKWARD), outcome("pass"), None, torch_fail)
    assert (row["correct"], row["review"], row["expected_ok"]) == (False, "false PASS?", False)
