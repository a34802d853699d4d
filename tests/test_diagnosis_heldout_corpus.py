"""The held-out diagnosis corpus (bench/diagnosis_heldout/: blind until session 5, a design corpus
since) is well formed, and the scorer's --corpus/--summary options work.

Static checks only (ast): nothing here imports the corpus or runs the diagnosis — scoring is
bench/diagnosis_untuned.py's job (``--corpus bench/diagnosis_heldout``). Passes with and without
torch.
"""
import os
import types

import pytest

from corpus_labels import (PATTERN_KINDS, ROOT, Corpus, bench, bug_marks_outside_function_classes,
                           bug_site_problems, example_inputs_taking_arguments, label_problems,
                           readme_table_mismatches, record_id)

HELDOUT = os.path.join(ROOT, "bench", "diagnosis_heldout")
CORPUS = Corpus(HELDOUT)
RECORDS, BUGGY, CORRECT, FILES = CORPUS.records, CORPUS.buggy, CORPUS.correct, CORPUS.files


def test_corpus_is_read_from_the_heldout_folder_not_the_default():
    assert {os.path.dirname(r["file"]) for r in RECORDS} == {HELDOUT}
    assert HELDOUT not in {os.path.dirname(r["file"]) for r in bench.read_corpus()}


def test_corpus_size_and_mix():
    assert len(BUGGY) >= 45
    assert len(CORRECT) >= 20
    kinds = {r["bug"]["kind"] for r in BUGGY}
    no_pattern = [r for r in BUGGY if r["bug"]["kind"] == "none"]
    assert 5 <= len(no_pattern) <= 8
    for kind in PATTERN_KINDS:
        assert kind in kinds, kind
    assert kinds <= bench.KINDS
    # no kind dominates: the measure is not one rule's hit rate
    most = max(sum(1 for r in BUGGY if r["bug"]["kind"] == k) for k in kinds)
    assert most <= len(BUGGY) // 5


def test_both_backends_are_represented():
    engine, torch_files = CORPUS.engine_and_torch_files()
    assert engine and torch_files
    assert sorted(engine + torch_files) == FILES  # each file is one or the other


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
def test_buggy_has_exactly_one_bug_line_in_forward_or_backward(record):
    # this corpus marks one in-place bug in backward (a saved output overwritten there)
    assert bug_site_problems(record, inplace_in_forward=False) == []


@pytest.mark.parametrize("record", CORRECT, ids=record_id)
def test_correct_twin_has_no_bug_line(record):
    assert record["bug_marks"] == []


def test_no_bug_mark_outside_a_function_class():
    assert bug_marks_outside_function_classes(CORPUS) == []


def test_example_inputs_are_static_or_classmethods():
    """example_inputs (where given) takes no argument: gradcli calls it on the class."""
    assert example_inputs_taking_arguments(CORPUS) == []


def test_readme_table_matches_the_corpus():
    readme = CORPUS.readme()
    # blind until the integrator released it in session 5; a design corpus since
    assert "blind until session 5 (2026-12-01, 19:30 UTC)" in readme and "design corpus" in readme
    assert readme_table_mismatches(CORPUS) == []
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
