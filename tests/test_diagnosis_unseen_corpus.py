"""The fourth diagnosis corpus (bench/diagnosis_unseen/: blind until 2026-12-01 23:25 UTC, a design
corpus since) is well formed.

Static checks only (ast): nothing here imports the corpus or runs the diagnosis — scoring is
bench/diagnosis_untuned.py's job (``--corpus bench/diagnosis_unseen --summary``), validation by
verdicts is bench/diagnosis_blind_verdicts.py's (``--corpus bench/diagnosis_unseen``). These tests
pass with and without torch. The readers are tests/corpus_labels.py's, shared with the other corpora.
"""
import ast
import os

import pytest

from tests.corpus_labels import (ENGINE_IMPORT, ROOT, Corpus, bench,
                                 bug_marks_outside_function_classes, bug_site_problems,
                                 example_inputs_taking_arguments, imported_modules,
                                 label_problems, readme_kind_counts, readme_table_mismatches,
                                 record_id, twinless_buggy)

UNSEEN = os.path.join(ROOT, "bench", "diagnosis_unseen")
CORPUS = Corpus(UNSEEN)
RECORDS, BUGGY, CORRECT, FILES = CORPUS.records, CORPUS.buggy, CORPUS.correct, CORPUS.files
_id, _source, _readme = record_id, CORPUS.source, CORPUS.readme


def test_corpus_is_read_from_its_own_folder():
    assert {os.path.dirname(r["file"]) for r in RECORDS} == {UNSEEN}
    assert UNSEEN not in {os.path.dirname(r["file"]) for r in bench.read_corpus()}


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
    engine = [n for n in FILES if ENGINE_IMPORT + "\n" in _source(n)]
    torch_files = [n for n in FILES if "\nimport torch\n" in _source(n)]
    assert sorted(engine + torch_files) == FILES
    assert not set(engine) & set(torch_files)
    assert len(FILES) // 4 <= len(engine) <= len(FILES) // 2
    assert all(n.endswith("_engine.py") for n in engine)


def test_engine_files_use_no_real_torch():
    engine, _ = CORPUS.engine_and_torch_files()
    for name in engine:
        assert imported_modules(_source(name)) <= {"gradcli", "math"}, name


OLDER_CORPORA = ("diagnosis_untuned", "diagnosis_heldout", "diagnosis_blind", "diagnosis_fresh")


def test_function_names_are_unique_here_and_across_the_older_corpora():
    names = [r["function"] for r in RECORDS]
    assert len(names) == len(set(names))
    for folder in OLDER_CORPORA:
        other = os.path.join(ROOT, "bench", folder)
        if os.path.isdir(other):
            assert not set(names) & {r["function"] for r in bench.read_corpus(other)}, folder


def test_engine_files_hold_about_a_third_of_the_functions():
    engine = {n for n in FILES if ENGINE_IMPORT + "\n" in _source(n)}
    on_engine = [r for r in RECORDS if os.path.basename(r["file"]) in engine]
    assert len(RECORDS) // 4 <= len(on_engine) <= len(RECORDS) // 2


def test_coding_styles_the_brief_asks_for_occur():
    """needs_input_grad, mark_non_differentiable, einsum, in-place accumulation, ctx attributes,
    several outputs and reductions over a dim other than the last are each used somewhere."""
    source = "\n".join(_source(n) for n in FILES)
    for needle in ("ctx.needs_input_grad[", "ctx.mark_non_differentiable(", "torch.einsum(",
                   "index_add_(", "scatter_add_(", "scatter_(", "+=", ".sum(0", "cumsum(0"):
        assert needle in source, needle
    ctx_attributes = {node.attr for n in FILES for node in ast.walk(ast.parse(_source(n)))
                      if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                      and node.value.id == "ctx" and isinstance(node.ctx, ast.Store)}
    assert len(ctx_attributes) >= 4, ctx_attributes
    several_outputs = [r for r in RECORDS if r["function"] == "MaxPoolPairs"]
    assert several_outputs and several_outputs[0]["bug"] is None


def test_readme_names_the_functions_that_fail_by_raising():
    readme = _readme()
    names = {r["function"] for r in BUGGY}
    for name in ("GroupNormBiasKeepsLength", "Conv2dBiasMissesWidth"):
        assert f"`{name}`" in readme and name in names


@pytest.mark.parametrize("record", RECORDS, ids=_id)
def test_every_function_declares_bug(record):
    assert record["has_bug_attribute"], "declare bug = {...} or bug = None (a correct twin)"


@pytest.mark.parametrize("record", BUGGY, ids=_id)
def test_buggy_label_is_valid(record):
    assert label_problems(record) == []


@pytest.mark.parametrize("record", BUGGY, ids=_id)
def test_buggy_has_exactly_one_bug_line(record):
    # the bug is in backward, except an in-place change forward makes after saving
    assert bug_site_problems(record) == []


@pytest.mark.parametrize("record", CORRECT, ids=_id)
def test_correct_twin_has_no_bug_line(record):
    assert record["bug_marks"] == []


def test_every_buggy_function_has_a_twin_with_the_same_parameters_unless_an_estimator():
    assert twinless_buggy(CORPUS) == []


def test_no_bug_mark_outside_a_function_class():
    assert bug_marks_outside_function_classes(CORPUS) == []


def test_example_inputs_are_static_and_take_no_argument():
    assert example_inputs_taking_arguments(CORPUS, allow_classmethod=False) == []


def test_readme_states_the_rules_and_matches_the_corpus():
    readme = _readme()
    # blind until the integrator released it to the seventh diagnosis pass; a design corpus since
    assert "BLIND until 2026-12-01 23:25 UTC" in readme and "design corpus" in readme
    assert "--corpus bench/diagnosis_unseen" in readme and "--summary" in readme
    assert readme_table_mismatches(CORPUS) == []
    no_pattern = CORPUS.kind_counts()["none"]
    assert (f"{len(BUGGY)} buggy Functions ({len(BUGGY) - no_pattern} with a pattern, "
            f"{no_pattern} without)") in readme
    assert f"{len(CORRECT)} correct twins" in readme


def test_readme_counts_by_kind_match_the_labels():
    assert readme_kind_counts(CORPUS) == CORPUS.kind_counts()
