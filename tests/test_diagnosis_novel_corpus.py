"""The ninth diagnosis corpus (bench/diagnosis_novel/, blind until 2026-12-02 06:05 UTC) is well formed.

Static checks only (ast): nothing here imports the corpus or runs the diagnosis — scoring is
bench/diagnosis_untuned.py's job (``--corpus bench/diagnosis_novel --summary``), validation by
verdicts is bench/diagnosis_blind_verdicts.py's (``--corpus bench/diagnosis_novel``). These tests
pass with and without torch.
"""
import ast
import os


from tests.corpus_labels import (ROOT, Corpus, bench, imported_modules, label_tests)

NOVEL = os.path.join(ROOT, "bench", "diagnosis_novel")
CORPUS = Corpus(NOVEL)
OLDER_CORPORA = ("diagnosis_untuned", "diagnosis_heldout", "diagnosis_blind", "diagnosis_fresh",
                 "diagnosis_unseen", "diagnosis_sealed", "diagnosis_latest", "diagnosis_hidden",
                 "diagnosis_withheld")
RAISING = ("NovelGroupNormBiasKeepsLength", "NovelPositionalAddPerSample")
ENGINE_FILES = ["activations_engine.py", "cumulative_engine.py", "regression_losses_engine.py"]


def test_corpus_is_read_from_its_own_folder():
    assert {os.path.dirname(r["file"]) for r in CORPUS.records} == {NOVEL}


def test_corpus_size_and_mix():
    assert len(CORPUS.buggy) == 60
    assert len(CORPUS.correct) == 45
    assert len(CORPUS.files) == 10
    kinds = set(CORPUS.kind_counts())
    assert kinds <= bench.KINDS
    assert CORPUS.kind_counts()["none"] == 5
    # every kind but precision (which gradcheck's tolerance cannot catch) is represented
    assert kinds == bench.KINDS - {"precision"}
    assert max(CORPUS.kind_counts().values()) <= len(CORPUS.buggy) // 8  # no kind dominates


def test_both_backends_about_one_third_engine():
    engine, torch_files = CORPUS.engine_and_torch_files()
    assert engine == ENGINE_FILES
    assert sorted(engine + torch_files) == CORPUS.files
    assert all(n.endswith("_engine.py") for n in engine)
    assert not any(n.endswith("_engine.py") for n in torch_files)
    on_engine = [r for r in CORPUS.records if os.path.basename(r["file"]) in engine]
    assert len(CORPUS.records) // 4 <= len(on_engine) <= len(CORPUS.records) // 2
    assert len(on_engine) == 34  # 19 buggy + 15 twins


def test_engine_files_use_no_real_torch():
    for name in ENGINE_FILES:
        assert imported_modules(CORPUS.source(name)) <= {"gradcli", "math"}, name


def test_function_names_are_prefixed_and_unique_here_and_across_the_older_corpora():
    names = [r["function"] for r in CORPUS.records]
    assert all(n.startswith("Novel") for n in names)
    assert len(names) == len(set(names))
    for folder in OLDER_CORPORA:
        other = os.path.join(ROOT, "bench", folder)
        if os.path.isdir(other):
            assert not set(names) & {r["function"] for r in bench.read_corpus(other)}, folder


def test_coding_styles_the_brief_asks_for_occur():
    source = "\n".join(CORPUS.source(n) for n in CORPUS.files)
    for needle in ("ctx.needs_input_grad[", "torch.einsum(", ".mT", " @ ", "index_add_(",
                   "scatter_add_(", "F.unfold(", "F.fold(", "F.conv1d(", "F.conv_transpose1d(",
                   ".unfold(", "masked_fill(", ".transpose(", ".permute(", "gather(", "dim=",
                   ".chunk(", ".flip(", "cumsum(", "cumprod(", "reversed(", "+=", "div_(",
                   "torch.where(", "repeat_interleave("):
        assert needle in source, needle
    trees = [ast.parse(CORPUS.source(n)) for n in CORPUS.files]
    ctx_attributes = {node.attr for tree in trees for node in ast.walk(tree)
                      if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                      and node.value.id == "ctx" and isinstance(node.ctx, ast.Store)}
    assert len(ctx_attributes) >= 4, ctx_attributes


def test_the_also_labels():
    with_also = [r for r in CORPUS.buggy if r["bug"].get("also")]
    assert sorted((r["function"], r["bug"]["kind"], r["bug"]["also"]) for r in with_also) == [
        ("NovelMultiHeadQueryMergedByReshape", "missing_reshape", ["transposed"]),
        ("NovelRoPEForwardRotation", "transposed", ["term_sign"])]


def test_readme_names_the_functions_that_fail_by_raising():
    readme = CORPUS.readme()
    names = {r["function"] for r in CORPUS.buggy}
    for name in RAISING:
        assert f"`{name}`" in readme and name in names


globals().update(label_tests(CORPUS))  # the tests every corpus of this format shares


def test_readme_states_the_rules_and_matches_the_corpus():
    readme = CORPUS.readme()
    assert "**This corpus is BLIND: it may be used only to *score* gradcli's diagnosis" in readme
    assert "--corpus bench/diagnosis_novel" in readme and "--summary" in readme


def test_readme_backend_split_matches_the_labels():
    engine, _ = CORPUS.engine_and_torch_files()
    split = {True: [0, 0], False: [0, 0]}
    for r in CORPUS.records:
        split[os.path.basename(r["file"]) in engine][r["bug"] is None] += 1
    (torch_buggy, torch_twins), (engine_buggy, engine_twins) = split[False], split[True]
    assert (f"Torch files: {torch_buggy} buggy + {torch_twins} twins; engine files: "
            f"{engine_buggy} buggy + {engine_twins} twins.") in CORPUS.readme()
