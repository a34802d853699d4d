"""The sixth diagnosis corpus (bench/diagnosis_latest/, blind until 2026-12-02 01:15 UTC, a design corpus since) is well formed.

Static checks only (ast): nothing here imports the corpus or runs the diagnosis — scoring is
bench/diagnosis_untuned.py's job (``--corpus bench/diagnosis_latest --summary``), validation by
verdicts is bench/diagnosis_blind_verdicts.py's (``--corpus bench/diagnosis_latest``). These tests
pass with and without torch.
"""
import ast
import os


from tests.corpus_labels import (ROOT, Corpus, bench, imported_modules, label_tests)

LATEST = os.path.join(ROOT, "bench", "diagnosis_latest")
CORPUS = Corpus(LATEST)
OLDER_CORPORA = ("diagnosis_untuned", "diagnosis_heldout", "diagnosis_blind", "diagnosis_fresh",
                 "diagnosis_unseen", "diagnosis_sealed")
# torch sums an unreduced broadcast gradient itself, so gradcheck cannot fail a not_reduced bug
ABSENT_KINDS = {"precision", "not_reduced"}


def test_corpus_is_read_from_its_own_folder():
    assert {os.path.dirname(r["file"]) for r in CORPUS.records} == {LATEST}


def test_corpus_size_and_mix():
    assert len(CORPUS.buggy) >= 50
    assert len(CORPUS.correct) >= 30
    assert 8 <= len(CORPUS.files) <= 12
    kinds = set(CORPUS.kind_counts())
    assert kinds <= bench.KINDS
    assert 4 <= CORPUS.kind_counts()["none"] <= 7
    # every kind but the two gradcheck cannot fail on torch is represented
    assert kinds == bench.KINDS - ABSENT_KINDS
    assert max(CORPUS.kind_counts().values()) <= len(CORPUS.buggy) // 8  # no kind dominates


def test_both_backends_about_one_third_engine():
    engine, torch_files = CORPUS.engine_and_torch_files()
    assert sorted(engine + torch_files) == CORPUS.files
    assert not set(engine) & set(torch_files)
    assert len(CORPUS.files) // 4 <= len(engine) <= len(CORPUS.files) // 2
    assert all(n.endswith("_engine.py") for n in engine)
    on_engine = [r for r in CORPUS.records if os.path.basename(r["file"]) in engine]
    assert len(CORPUS.records) // 4 <= len(on_engine) <= len(CORPUS.records) // 2


def test_engine_files_use_no_real_torch():
    engine, _ = CORPUS.engine_and_torch_files()
    for name in engine:
        assert imported_modules(CORPUS.source(name)) <= {"gradcli", "math"}, name


def test_function_names_are_unique_here_and_across_the_older_corpora():
    names = [r["function"] for r in CORPUS.records]
    assert len(names) == len(set(names))
    for folder in OLDER_CORPORA:
        other = os.path.join(ROOT, "bench", folder)
        if os.path.isdir(other):
            assert not set(names) & {r["function"] for r in bench.read_corpus(other)}, folder


def test_coding_styles_the_brief_asks_for_occur():
    source = "\n".join(CORPUS.source(n) for n in CORPUS.files)
    for needle in ("ctx.needs_input_grad[", "ctx.mark_non_differentiable(", "torch.einsum(",
                   "index_add_(", "scatter_add_(", "scatter_(", ".sum(0", "cumsum(0", ".unfold(",
                   "triu(", ".flip(", "repeat_interleave(", ".mul_(", ".div_(",
                   ".transpose(", "F.unfold(", "F.fold(", "masked_fill(", "gather("):
        assert needle in source, needle
    trees = [ast.parse(CORPUS.source(n)) for n in CORPUS.files]
    ctx_attributes = {node.attr for tree in trees for node in ast.walk(tree)
                      if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                      and node.value.id == "ctx" and isinstance(node.ctx, ast.Store)}
    assert len(ctx_attributes) >= 4, ctx_attributes
    two_outputs = [r for r in CORPUS.records if r["function"] == "LatestMaxPoolPairsArgmax"]
    assert two_outputs and two_outputs[0]["bug"] is None


def test_readme_says_why_two_kinds_are_absent():
    readme = CORPUS.readme()
    assert all(f"`{kind}`" in readme for kind in ABSENT_KINDS)


globals().update(label_tests(CORPUS))  # the tests every corpus of this format shares


def test_readme_states_the_rules_and_matches_the_corpus():
    readme = CORPUS.readme()
    # blind until the integrator released it to the ninth diagnosis pass; a design corpus since
    assert "BLIND until 2026-12-02 01:15 UTC" in readme and "design corpus" in readme
    assert "--corpus bench/diagnosis_latest" in readme and "--summary" in readme
