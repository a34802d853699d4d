"""The held-out diagnosis corpus (bench/diagnosis_heldout/: blind until session 5, a design corpus
since) is well formed, and the scorer's --corpus/--summary options work.

Static checks only (ast): nothing here imports the corpus or runs the diagnosis — scoring is
bench/diagnosis_untuned.py's job (``--corpus bench/diagnosis_heldout``). Passes with and without
torch.
"""
import ast
import importlib.util
import os
import types

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BENCH = os.path.join(ROOT, "bench", "diagnosis_untuned.py")
HELDOUT = os.path.join(ROOT, "bench", "diagnosis_heldout")
ENGINE_IMPORT = "import gradcli as torch"


def _load_bench():
    spec = importlib.util.spec_from_file_location("diagnosis_untuned_bench_heldout", BENCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


bench = _load_bench()
RECORDS = bench.read_corpus(HELDOUT)
BUGGY = [r for r in RECORDS if r["bug"] is not None]
CORRECT = [r for r in RECORDS if r["bug"] is None]
FILES = sorted(n for n in os.listdir(HELDOUT) if n.endswith(".py"))


def _id(record):
    return f"{os.path.basename(record['file'])}::{record['function']}"


def _source(name):
    with open(os.path.join(HELDOUT, name), encoding="utf-8") as handle:
        return handle.read()


def test_corpus_is_read_from_the_heldout_folder_not_the_default():
    assert {os.path.dirname(r["file"]) for r in RECORDS} == {HELDOUT}
    assert HELDOUT not in {os.path.dirname(r["file"]) for r in bench.read_corpus()}


def test_corpus_size_and_mix():
    assert len(BUGGY) >= 45
    assert len(CORRECT) >= 20
    kinds = {r["bug"]["kind"] for r in BUGGY}
    no_pattern = [r for r in BUGGY if r["bug"]["kind"] == "none"]
    assert 5 <= len(no_pattern) <= 8
    for kind in ("scale", "sign", "zero", "ignores_grad_output", "not_reduced", "swapped",
                 "transposed", "region", "missing_term", "inplace", "term_sign", "wrong_axis",
                 "wrong_variable", "not_accumulated", "missing_flip", "missing_reshape",
                 "straight_through", "gradient_reversal", "smooth_surrogate"):
        assert kind in kinds, kind
    assert kinds <= bench.KINDS
    # no kind dominates: the measure is not one rule's hit rate
    most = max(sum(1 for r in BUGGY if r["bug"]["kind"] == k) for k in kinds)
    assert most <= len(BUGGY) // 5


def test_both_backends_are_represented():
    engine = [n for n in FILES if ENGINE_IMPORT + "\n" in _source(n)]
    torch_files = [n for n in FILES if "\nimport torch\n" in _source(n)]
    assert engine and torch_files
    assert sorted(engine + torch_files) == FILES  # each file is one or the other


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
    for name in FILES:
        source = _source(name)
        tree = ast.parse(source)
        spans = [(n.lineno, n.end_lineno) for n in tree.body
                 if isinstance(n, ast.ClassDef) and bench._is_function_class(n)]
        for number, line in enumerate(source.splitlines(), 1):
            if bench.BUG_MARK in line:
                assert any(lo <= number <= hi for lo, hi in spans), f"{name}:{number}"


def test_example_inputs_are_static_or_classmethods():
    """example_inputs (where given) takes no argument: gradcli calls it on the class."""
    for name in FILES:
        for node in ast.parse(_source(name)).body:
            if not (isinstance(node, ast.ClassDef) and bench._is_function_class(node)):
                continue
            method = bench._methods(node).get("example_inputs")
            if method is None:
                continue
            decorators = {ast.unparse(d) for d in method.decorator_list}
            assert decorators & {"staticmethod", "classmethod"}, f"{name}::{node.name}"
            expected = 1 if "classmethod" in decorators else 0
            assert len(method.args.args) == expected, f"{name}::{node.name}"


def test_readme_table_matches_the_corpus():
    with open(os.path.join(HELDOUT, "README.md"), encoding="utf-8") as handle:
        readme = handle.read()
    # blind until the integrator released it in session 5; a design corpus since
    assert "blind until session 5 (2026-12-01, 19:30 UTC)" in readme and "design corpus" in readme
    for name in FILES:
        rows = [r for r in RECORDS if os.path.basename(r["file"]) == name]
        buggy = sum(1 for r in rows if r["bug"] is not None)
        correct = len(rows) - buggy
        line = next(line for line in readme.splitlines() if line.startswith(f"| {name}"))
        cells = [c.strip() for c in line.strip("|").split("|")]
        assert cells[-2:] == [str(buggy), str(correct)], line
    assert f"{len(BUGGY)} buggy Functions" in readme
    assert f"{len(CORRECT)} correct twins" in readme


# ------------------------------------------------------------- the scorer's new options
def _fake_check(calls):
    def run_check(corpus, gradcli_checkout, python, exact, timeout, extra):
        calls.append(corpus)
        results = [{"file": r["file"], "function": r["function"], "status": "pass",
                    "checks": []} for r in RECORDS]
        return {"results": results}, types.SimpleNamespace(returncode=0)
    return run_check


def test_corpus_option_is_made_absolute_and_summary_prints_only_totals(monkeypatch, capsys):
    calls = []
    monkeypatch.setattr(bench, "run_check", _fake_check(calls))
    monkeypatch.chdir(ROOT)
    assert bench.main(["--corpus", os.path.join("bench", "diagnosis_heldout"), "--summary"]) == 0
    assert calls == [HELDOUT]
    out = capsys.readouterr().out
    assert "norms.py" not in out and "LayerNormAffine" not in out
    lines = out.strip().splitlines()
    assert len(lines) == 7  # the totals block alone
    # every buggy Function "passed" in the fake report: all missed, and the twins all pass
    pattern = sum(1 for r in BUGGY if r["bug"]["kind"] != "none")
    assert lines[0] == f"pattern bugs: {pattern} (0 failed the check)"
    assert f"missed: {pattern}  no verdict: 0" in out
    assert f"correct twins: {len(CORRECT)}: {len(CORRECT)} pass," in out


def test_without_summary_the_per_function_lines_are_printed(monkeypatch, capsys):
    monkeypatch.setattr(bench, "run_check", _fake_check([]))
    bench.main(["--corpus", HELDOUT])
    out = capsys.readouterr().out
    assert "\nnorms.py\n" in out and "LayerNormAffine" in out
    assert "pattern bugs: " in out


def test_corpus_option_refuses_a_missing_folder(monkeypatch, capsys):
    monkeypatch.setattr(bench, "run_check", _fake_check([]))
    with pytest.raises(SystemExit) as exit_info:
        bench.main(["--corpus", os.path.join(ROOT, "no-such-folder")])
    assert exit_info.value.code == 2
    assert "not a folder" in capsys.readouterr().err
