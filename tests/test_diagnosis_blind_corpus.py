"""The second blind diagnosis corpus (bench/diagnosis_blind/) is well formed, and its verdict
validator (bench/diagnosis_blind_verdicts.py) works.

The corpus checks are static (ast): nothing here imports the corpus or runs the diagnosis —
scoring is bench/diagnosis_untuned.py's job (``--corpus bench/diagnosis_blind --summary``). The
validator is tested on a small corpus written here, never on the blind one. The static checks pass
with and without torch; the validator's tests need torch.
"""
import os
import sys
import textwrap

import pytest

from corpus_labels import (PATTERN_KINDS, ROOT, Corpus, bench, bug_marks_outside_function_classes,
                           bug_site_problems, example_inputs_taking_arguments, imported_modules,
                           label_problems, load, readme_kind_counts, readme_table_mismatches,
                           record_id, twinless_buggy)

VERDICTS = os.path.join(ROOT, "bench", "diagnosis_blind_verdicts.py")
BLIND = os.path.join(ROOT, "bench", "diagnosis_blind")
CORPUS = Corpus(BLIND)
RECORDS, BUGGY, CORRECT, FILES = CORPUS.records, CORPUS.buggy, CORPUS.correct, CORPUS.files


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
    engine, torch_files = CORPUS.engine_and_torch_files()
    assert sorted(engine + torch_files) == FILES  # each file is one or the other
    assert not set(engine) & set(torch_files)
    assert len(FILES) // 4 <= len(engine) <= len(FILES) // 2


def test_engine_files_use_no_real_torch():
    for name in CORPUS.engine_and_torch_files()[0]:
        assert imported_modules(CORPUS.source(name)) <= {"gradcli", "math"}, name


def test_function_names_are_unique():
    names = [r["function"] for r in RECORDS]
    assert len(names) == len(set(names))


@pytest.mark.parametrize("record", RECORDS, ids=record_id)
def test_every_function_declares_bug(record):
    assert record["has_bug_attribute"], "declare bug = {...} or bug = None (a correct twin)"


@pytest.mark.parametrize("record", BUGGY, ids=record_id)
def test_buggy_label_is_valid(record):
    assert label_problems(record) == []


@pytest.mark.parametrize("record", BUGGY, ids=record_id)
def test_bug_sits_in_backward_unless_forward_changes_a_saved_tensor(record):
    assert bug_site_problems(record, inplace_in_forward=True) == []


@pytest.mark.parametrize("record", CORRECT, ids=record_id)
def test_correct_twin_has_no_bug_line(record):
    assert record["bug_marks"] == []


def test_every_buggy_function_has_a_correct_twin_in_its_file_or_is_an_estimator():
    """Each bug is one edit of a correct Function that sits beside it (the estimators, whose
    exact derivative is zero, have none)."""
    assert twinless_buggy(CORPUS) == []


def test_no_bug_mark_outside_a_function_class():
    assert bug_marks_outside_function_classes(CORPUS) == []


def test_example_inputs_are_static_or_classmethods():
    """example_inputs (where given) takes no argument: gradcli calls it on the class."""
    assert example_inputs_taking_arguments(CORPUS) == []


def test_readme_states_the_rules_and_matches_the_corpus():
    readme = CORPUS.readme()
    assert "BLIND until 2026-12-01 20:30 UTC" in readme and "design corpus" in readme
    assert "--corpus bench/diagnosis_blind" in readme and "--summary" in readme
    assert readme_table_mismatches(CORPUS) == []
    no_pattern = sum(1 for r in BUGGY if r["bug"]["kind"] == "none")
    assert (f"{len(BUGGY)} buggy Functions ({len(BUGGY) - no_pattern} with a pattern, "
            f"{no_pattern} without)") in readme
    assert f"{len(CORRECT)} correct twins" in readme


def test_readme_counts_by_kind_match_the_labels():
    assert readme_kind_counts(CORPUS) == CORPUS.kind_counts()


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
    verdicts = load(VERDICTS, "diagnosis_blind_verdicts_test")
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
    verdicts = load(VERDICTS, "diagnosis_blind_verdicts_test_engine")
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
    verdicts = load(VERDICTS, "diagnosis_blind_verdicts_test_gradcli")
    corpus = _tiny_corpus(tmp_path)
    (corpus / "tiny_torch.py").unlink()
    code = verdicts.main(["--corpus", str(corpus), "--gradcli", ROOT, "--python", sys.executable])
    out = capsys.readouterr().out.splitlines()
    assert code == 0
    assert out[-2:] == ["gradcli check statuses: {'fail': 1, 'pass': 1, 'other': 0}",
                        "unexpected verdicts: 0"]
