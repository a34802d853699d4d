"""The third diagnosis corpus (bench/diagnosis_fresh/: blind until 2026-12-01 22:30 UTC, a design
corpus since) is well formed.

Static checks only (ast): nothing here imports the corpus or runs the diagnosis — scoring is
bench/diagnosis_untuned.py's job (``--corpus bench/diagnosis_fresh``), validation by verdicts is
bench/diagnosis_blind_verdicts.py's (``--corpus bench/diagnosis_fresh``). These tests pass with and
without torch.
"""
import os

import pytest

from corpus_labels import (ROOT, Corpus, bench, bug_marks_outside_function_classes,
                           bug_site_problems, example_inputs_taking_arguments, imported_modules,
                           label_problems, readme_kind_counts, readme_table_mismatches,
                           record_id, twinless_buggy)

FRESH = os.path.join(ROOT, "bench", "diagnosis_fresh")
CORPUS = Corpus(FRESH)
RECORDS, BUGGY, CORRECT, FILES = CORPUS.records, CORPUS.buggy, CORPUS.correct, CORPUS.files


def test_corpus_is_read_from_its_own_folder():
    assert {os.path.dirname(r["file"]) for r in RECORDS} == {FRESH}
    assert FRESH not in {os.path.dirname(r["file"]) for r in bench.read_corpus()}


def test_corpus_size_and_mix():
    assert len(BUGGY) >= 50
    assert len(CORRECT) >= 30
    assert 8 <= len(FILES) <= 12
    kinds = {r["bug"]["kind"] for r in BUGGY}
    assert kinds <= bench.KINDS
    no_pattern = [r for r in BUGGY if r["bug"]["kind"] == "none"]
    assert 4 <= len(no_pattern) <= 7
    # every kind but precision (which gradcheck's tolerance cannot catch) is represented
    assert kinds == bench.KINDS - {"precision"}
    most = max(sum(1 for r in BUGGY if r["bug"]["kind"] == k) for k in kinds)
    assert most <= len(BUGGY) // 8  # no kind dominates the score


def test_both_backends_about_one_third_engine():
    engine, torch_files = CORPUS.engine_and_torch_files()
    assert sorted(engine + torch_files) == FILES
    assert not set(engine) & set(torch_files)
    assert len(FILES) // 4 <= len(engine) <= len(FILES) // 2
    assert all(n.endswith("_engine.py") for n in engine)


def test_engine_files_use_no_real_torch():
    for name in CORPUS.engine_and_torch_files()[0]:
        assert imported_modules(CORPUS.source(name)) <= {"gradcli", "math"}, name


def test_function_names_are_unique_here_and_across_blind_corpora():
    names = [r["function"] for r in RECORDS]
    assert len(names) == len(set(names))
    other = os.path.join(ROOT, "bench", "diagnosis_blind")
    if os.path.isdir(other):
        assert not set(names) & {r["function"] for r in bench.read_corpus(other)}


@pytest.mark.parametrize("record", RECORDS, ids=record_id)
def test_every_function_declares_bug(record):
    assert record["has_bug_attribute"], "declare bug = {...} or bug = None (a correct twin)"


@pytest.mark.parametrize("record", BUGGY, ids=record_id)
def test_buggy_label_is_valid(record):
    assert label_problems(record) == []
    assert "also" not in record["bug"]  # this corpus labels one kind per bug


@pytest.mark.parametrize("record", BUGGY, ids=record_id)
def test_buggy_has_exactly_one_bug_line_in_backward_or_forward_for_inplace(record):
    assert bug_site_problems(record, inplace_in_forward=True) == []


@pytest.mark.parametrize("record", CORRECT, ids=record_id)
def test_correct_twin_has_no_bug_line(record):
    assert record["bug_marks"] == []


def test_every_buggy_function_has_a_twin_with_the_same_parameters_unless_an_estimator():
    assert twinless_buggy(CORPUS) == []


def test_no_bug_mark_outside_a_function_class():
    assert bug_marks_outside_function_classes(CORPUS) == []


def test_example_inputs_are_static_and_take_no_argument():
    assert example_inputs_taking_arguments(CORPUS, allow_classmethod=False) == []


def test_readme_states_its_release_and_matches_the_corpus():
    readme = CORPUS.readme()
    # blind until the integrator released it to the sixth diagnosis pass; a design corpus since
    assert "BLIND until 2026-12-01 22:30 UTC" in readme and "design corpus" in readme
    assert "36/48 right kind + location (75.0 %)" in " ".join(readme.split())
    assert "--corpus bench/diagnosis_fresh" in readme and "--summary" in readme
    assert readme_table_mismatches(CORPUS) == []
    no_pattern = sum(1 for r in BUGGY if r["bug"]["kind"] == "none")
    assert (f"{len(BUGGY)} buggy Functions ({len(BUGGY) - no_pattern} with a pattern, "
            f"{no_pattern} without)") in readme
    assert f"{len(CORRECT)} correct twins" in readme


def test_readme_counts_by_kind_match_the_labels():
    assert readme_kind_counts(CORPUS) == CORPUS.kind_counts()
