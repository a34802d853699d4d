"""The diagnosis corpus bench/diagnosis_foreign/ (BLIND) is well formed.

Static checks only (ast): nothing here imports the corpus or runs the diagnosis — scoring is
bench/diagnosis_untuned.py's job (``--corpus bench/diagnosis_foreign --summary``), validation by
verdicts is bench/diagnosis_blind_verdicts.py's (``--corpus bench/diagnosis_foreign``). These tests
pass with and without torch.
"""
import ast
import os

from tests.corpus_labels import (ROOT, Corpus, ENGINE_IMPORT, bench, imported_modules, label_tests)

FOREIGN = os.path.join(ROOT, "bench", "diagnosis_foreign")
CORPUS = Corpus(FOREIGN)
RAISING = ()  # no buggy Function here fails by raising
ENGINE_FILES = ["activations_engine.py", "losses_engine.py", "moving_engine.py"]
NO_PATTERN = {"ForeignGaussianRsampleVarianceParam", "ForeignAngleBetweenUnitDifference",
              "ForeignSquareplusSoftplusSlope", "ForeignLogCoshLossSech"}


def test_corpus_is_read_from_its_own_folder():
    assert {os.path.dirname(r["file"]) for r in CORPUS.records} == {FOREIGN}


def test_corpus_size_and_mix():
    assert len(CORPUS.buggy) == 64
    assert len(CORPUS.correct) == 41
    assert len(CORPUS.files) == 10
    counts = CORPUS.kind_counts()
    assert set(counts) == bench.KINDS - {"precision"}  # every kind but precision, at least once
    assert counts["none"] == 4
    assert {r["function"] for r in CORPUS.buggy if r["bug"]["kind"] == "none"} == NO_PATTERN
    assert len(CORPUS.buggy) - counts["none"] >= 50
    assert max(counts.values()) <= len(CORPUS.buggy) // 8  # no kind dominates
    estimators = sum(counts.get(k, 0) for k in ("straight_through", "smooth_surrogate",
                                                "gradient_reversal"))
    assert 2 <= estimators <= 3


def test_both_backends_engine_files_and_split():
    engine, torch_files = CORPUS.engine_and_torch_files()
    assert engine == ENGINE_FILES
    assert len(torch_files) == 7
    assert sorted(engine + torch_files) == CORPUS.files
    assert all(n.endswith("_engine.py") for n in engine)
    assert not any(n.endswith("_engine.py") for n in torch_files)
    on_engine = [r for r in CORPUS.records if os.path.basename(r["file"]) in engine]
    assert len(on_engine) == 29  # 16 buggy + 13 twins


def test_engine_files_import_gradcli_first_and_no_real_torch():
    for name in ENGINE_FILES:
        source = CORPUS.source(name)
        assert source.startswith(ENGINE_IMPORT), name
        assert imported_modules(source) <= {"gradcli", "math"}, name


def test_every_class_is_prefixed_and_names_are_unique_here_and_across_the_other_corpora():
    names = [r["function"] for r in CORPUS.records]
    assert len(names) == len(set(names))
    assert all(n.startswith("Foreign") for n in names)
    for folder in sorted(os.listdir(os.path.join(ROOT, "bench"))):
        other = os.path.join(ROOT, "bench", folder)
        if (folder.startswith("diagnosis_") and folder not in ("diagnosis_foreign", "diagnosis_catalogue")
                and os.path.isdir(other)):
            assert not set(names) & {r["function"] for r in bench.read_corpus(other)}, folder


def test_every_buggy_backward_carries_the_bug_mark():
    for r in CORPUS.buggy:
        method = "forward" if r["bug"]["kind"] == "inplace" else "backward"
        assert [s["method"] for s in r["bug_sites"]] == [method], r["function"]


def test_coding_styles_the_brief_asks_for_occur():
    source = "\n".join(CORPUS.source(n) for n in CORPUS.files)
    for needle in ("ctx.needs_input_grad[", "torch.einsum(", "index_add_(", "scatter_add_(",
                   "scatter_(", ".gather(", ".permute(", ".view(", "reversed(", "torch.tril(",
                   "torch.triu(", "torch.stack(", ".chunk(", ".unbind(", "torch.bmm(",
                   "example_inputs", "manual_seed", "+= ", "mul_(", "div_("):
        assert needle in source, needle
    trees = [ast.parse(CORPUS.source(n)) for n in CORPUS.files]
    ctx_attributes = {node.attr for tree in trees for node in ast.walk(tree)
                      if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                      and node.value.id == "ctx" and isinstance(node.ctx, ast.Store)}
    assert len(ctx_attributes) >= 4, ctx_attributes
    loops = sum(isinstance(node, ast.For) for tree in trees for node in ast.walk(tree))
    assert loops >= 10
    two_outputs = [r for r in CORPUS.records if r["function"].startswith("ForeignLSTMCell")]
    assert len(two_outputs) == 3


def test_the_also_labels():
    with_also = sorted((r["function"], r["bug"]["kind"], r["bug"]["also"])
                       for r in CORPUS.buggy if r["bug"].get("also"))
    assert with_also == [
        ("ForeignGradientReversal", "gradient_reversal", ["sign"]),
        ("ForeignQuaternionProductStackedByComponent", "missing_reshape", ["transposed"])]


def test_readme_names_the_functions_that_fail_by_raising():
    readme = CORPUS.readme()
    names = {r["function"] for r in CORPUS.buggy}
    for name in RAISING:
        assert f"`{name}`" in readme and name in names
    assert "No buggy Function fails by raising" in readme


globals().update(label_tests(CORPUS))  # the tests every corpus of this format shares


def test_readme_states_the_rules_and_matches_the_corpus():
    readme = CORPUS.readme()
    assert "**This corpus is BLIND: it is used only to *score* gradcli's diagnosis, never to design it.**" in readme
    assert "--corpus bench/diagnosis_foreign" in readme and "--summary" in readme


def test_readme_backend_split_matches_the_labels():
    engine, _ = CORPUS.engine_and_torch_files()
    split = {True: [0, 0], False: [0, 0]}
    for r in CORPUS.records:
        split[os.path.basename(r["file"]) in engine][r["bug"] is None] += 1
    (torch_buggy, torch_twins), (engine_buggy, engine_twins) = split[False], split[True]
    assert (f"Torch files: {torch_buggy} buggy + {torch_twins} twins; engine files: "
            f"{engine_buggy} buggy + {engine_twins} twins.") in CORPUS.readme()
