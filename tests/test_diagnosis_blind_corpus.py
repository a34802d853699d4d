"""The second blind diagnosis corpus (bench/diagnosis_blind/) is well formed, and its verdict
validator (bench/diagnosis_blind_verdicts.py) works.

The corpus checks are static (ast): nothing here imports the corpus or runs the diagnosis —
scoring is bench/diagnosis_untuned.py's job (``--corpus bench/diagnosis_blind --summary``). The
validator is tested on a small corpus written here, never on the blind one. The static checks pass
with and without torch; the validator's tests need torch.
"""
import ast
import importlib.util
import os
import sys
import textwrap

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BENCH = os.path.join(ROOT, "bench", "diagnosis_untuned.py")
VERDICTS = os.path.join(ROOT, "bench", "diagnosis_blind_verdicts.py")
BLIND = os.path.join(ROOT, "bench", "diagnosis_blind")
ENGINE_IMPORT = "import gradcli as torch"


def _load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


bench = _load(BENCH, "diagnosis_untuned_bench_blind")
RECORDS = bench.read_corpus(BLIND)
BUGGY = [r for r in RECORDS if r["bug"] is not None]
CORRECT = [r for r in RECORDS if r["bug"] is None]
FILES = sorted(n for n in os.listdir(BLIND) if n.endswith(".py"))
PATTERN_KINDS = ("scale", "sign", "zero", "ignores_grad_output", "not_reduced", "swapped",
                 "transposed", "region", "missing_term", "inplace", "term_sign", "wrong_axis",
                 "wrong_variable", "not_accumulated", "missing_flip", "missing_reshape",
                 "straight_through", "gradient_reversal", "smooth_surrogate")


def _id(record):
    return f"{os.path.basename(record['file'])}::{record['function']}"


def _source(name):
    with open(os.path.join(BLIND, name), encoding="utf-8") as handle:
        return handle.read()


def _readme():
    with open(os.path.join(BLIND, "README.md"), encoding="utf-8") as handle:
        return handle.read()


def test_corpus_is_read_from_its_own_folder_not_the_default():
    assert {os.path.dirname(r["file"]) for r in RECORDS} == {BLIND}
    assert BLIND not in {os.path.dirname(r["file"]) for r in bench.read_corpus()}


def test_corpus_size_and_mix():
    assert len(BUGGY) >= 60
    assert len(CORRECT) >= 35
    assert 10 <= len(FILES) <= 14
    kinds = {r["bug"]["kind"] for r in BUGGY}
    no_pattern = [r for r in BUGGY if r["bug"]["kind"] == "none"]
    assert 5 <= len(no_pattern) <= 8
    for kind in PATTERN_KINDS:
        assert kind in kinds, kind
    assert kinds <= bench.KINDS
    # no kind dominates: the measure is not one rule's hit rate
    most = max(sum(1 for r in BUGGY if r["bug"]["kind"] == k) for k in kinds)
    assert most <= len(BUGGY) // 8


def test_both_backends_are_represented_about_one_third_engine():
    engine = [n for n in FILES if ENGINE_IMPORT + "\n" in _source(n)]
    torch_files = [n for n in FILES if "\nimport torch\n" in _source(n)]
    assert sorted(engine + torch_files) == FILES  # each file is one or the other
    assert not set(engine) & set(torch_files)
    assert len(FILES) // 4 <= len(engine) <= len(FILES) // 2


def test_engine_files_use_no_real_torch():
    for name in FILES:
        source = _source(name)
        if ENGINE_IMPORT + "\n" not in source:
            continue
        imported = set()
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.Import):
                imported |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom):
                imported.add((node.module or "").split(".")[0])
        assert imported <= {"gradcli", "math"}, (name, imported)


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


@pytest.mark.parametrize("record", BUGGY, ids=_id)
def test_bug_sits_in_backward_unless_forward_changes_a_saved_tensor(record):
    site = record["bug_sites"][0]
    if record["bug"]["kind"] == "inplace":
        assert site["method"] == "forward"
    else:
        assert site["method"] == "backward"


@pytest.mark.parametrize("record", CORRECT, ids=_id)
def test_correct_twin_has_no_bug_line(record):
    assert record["bug_marks"] == []


def test_every_buggy_function_has_a_correct_twin_in_its_file_or_is_an_estimator():
    """Each bug is one edit of a correct Function that sits beside it (the estimators, whose
    exact derivative is zero, have none)."""
    estimators = {"straight_through", "smooth_surrogate", "gradient_reversal"}
    for name in FILES:
        rows = [r for r in RECORDS if os.path.basename(r["file"]) == name]
        twins = [r for r in rows if r["bug"] is None]
        for r in rows:
            if r["bug"] is not None and r["bug"]["kind"] not in estimators:
                assert twins, f"{name}::{r['function']}"
                assert any(t["params"] == r["params"] for t in twins), r["function"]


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


def test_readme_states_the_rules_and_matches_the_corpus():
    readme = _readme()
    assert "BLIND until 2026-12-01 20:30 UTC" in readme and "design corpus" in readme
    assert "--corpus bench/diagnosis_blind" in readme and "--summary" in readme
    for name in FILES:
        rows = [r for r in RECORDS if os.path.basename(r["file"]) == name]
        buggy = sum(1 for r in rows if r["bug"] is not None)
        correct = len(rows) - buggy
        line = next(line for line in readme.splitlines() if line.startswith(f"| {name}"))
        cells = [c.strip() for c in line.strip("|").split("|")]
        assert cells[-2:] == [str(buggy), str(correct)], line
    no_pattern = sum(1 for r in BUGGY if r["bug"]["kind"] == "none")
    assert (f"{len(BUGGY)} buggy Functions ({len(BUGGY) - no_pattern} with a pattern, "
            f"{no_pattern} without)") in readme
    assert f"{len(CORRECT)} correct twins" in readme


def test_readme_counts_by_kind_match_the_labels():
    readme = " ".join(_readme().split())
    line = readme.split("By kind: ", 1)[1].split(".", 1)[0]
    stated = {}
    for part in line.split(", "):
        kind, count = part.rsplit(" ", 1)
        stated[kind] = int(count)
    actual = {}
    for r in BUGGY:
        actual[r["bug"]["kind"]] = actual.get(r["bug"]["kind"], 0) + 1
    assert stated == actual


# ------------------------------------------------------------------ the verdict validator
TINY_TORCH = '''
    """A tiny corpus for the validator's test."""
    import torch


    class Square(torch.autograd.Function):
        bug = None

        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, grad_out):
            (x,) = ctx.saved_tensors
            return 2 * x * grad_out


    class SquareHalf(torch.autograd.Function):
        bug = {"kind": "scale", "input": "x", "note": "forgot the factor 2 of the square"}

        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, grad_out):
            (x,) = ctx.saved_tensors
            return x * grad_out  # BUG


    class SquareLooksBuggyButIsRight(torch.autograd.Function):
        bug = {"kind": "sign", "input": "x", "note": "mislabelled: this backward is right"}

        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, grad_out):
            (x,) = ctx.saved_tensors
            return x * grad_out * 2  # BUG
'''

TINY_ENGINE = '''
    """Engine twin: gradcheck runs it on real torch with the import replaced."""
    import gradcli as torch


    class Cube(torch.autograd.Function):
        bug = None

        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x ** 3

        @staticmethod
        def backward(ctx, grad_out):
            (x,) = ctx.saved_tensors
            return 3 * x ** 2 * grad_out

        @staticmethod
        def example_inputs():
            return (torch.rand(2, 3, dtype=torch.float64) + 0.5,)


    class CubeWrongShape(torch.autograd.Function):
        bug = {"kind": "not_reduced", "input": "x", "note": "a gradient torch refuses"}

        @staticmethod
        def forward(ctx, x):
            return x.sum() ** 3

        @staticmethod
        def backward(ctx, grad_out):
            return torch.ones(5, 7, dtype=torch.float64) * grad_out  # BUG

        @staticmethod
        def example_inputs():
            return (torch.rand(2, 3, dtype=torch.float64) + 0.5,)
'''


def _tiny_corpus(tmp_path):
    (tmp_path / "tiny_torch.py").write_text(textwrap.dedent(TINY_TORCH), encoding="utf-8")
    (tmp_path / "tiny_engine.py").write_text(textwrap.dedent(TINY_ENGINE), encoding="utf-8")
    return tmp_path


def test_validator_reports_only_the_unexpected_verdict(tmp_path, capsys):
    pytest.importorskip("torch")
    verdicts = _load(VERDICTS, "diagnosis_blind_verdicts_test")
    corpus = _tiny_corpus(tmp_path)
    code = verdicts.main(["--corpus", str(corpus), "--no-gradcli"])
    out = capsys.readouterr().out.splitlines()
    assert code == 1
    assert out == [
        "gradcheck: tiny_torch.py::SquareLooksBuggyButIsRight: pass, expected fail",
        "gradcheck on torch, torch files: 1/2 buggy fail, 1/1 twins pass",
        "gradcheck on torch, engine files: 1/1 buggy fail, 1/1 twins pass",
        "unexpected verdicts: 1",
    ]


def test_validator_runs_engine_files_on_real_torch_and_restores_the_default_dtype(tmp_path):
    torch = pytest.importorskip("torch")
    verdicts = _load(VERDICTS, "diagnosis_blind_verdicts_test_engine")
    corpus = _tiny_corpus(tmp_path)
    before = torch.get_default_dtype()
    results, engine = verdicts.torch_verdicts(str(corpus / "tiny_engine.py"))
    assert engine is True
    assert torch.get_default_dtype() == before
    assert results["Cube"] == ("pass", None)
    raised = [name for name in results if name.startswith("CubeWrongShape")]
    assert raised == ["CubeWrongShape (raised: RuntimeError)"]
    assert results[raised[0]][0] == "fail"


def test_validator_reads_gradcli_statuses_not_diagnoses(tmp_path, capsys):
    pytest.importorskip("torch")
    verdicts = _load(VERDICTS, "diagnosis_blind_verdicts_test_gradcli")
    corpus = _tiny_corpus(tmp_path)
    (corpus / "tiny_torch.py").unlink()
    code = verdicts.main(["--corpus", str(corpus), "--gradcli", ROOT, "--python", sys.executable])
    out = capsys.readouterr().out.splitlines()
    assert code == 0
    assert out[-2:] == ["gradcli check statuses: {'fail': 1, 'pass': 1, 'other': 0}",
                        "unexpected verdicts: 0"]
