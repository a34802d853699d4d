"""The eleventh diagnosis corpus (bench/diagnosis_withheld/, blind until 2026-12-02 06:05 UTC) is well formed.

Static checks only (ast): nothing here imports the corpus or runs the diagnosis — scoring is
bench/diagnosis_untuned.py's job (``--corpus bench/diagnosis_withheld --summary``), validation by
verdicts is bench/diagnosis_blind_verdicts.py's (``--corpus bench/diagnosis_withheld``). These
tests pass with and without torch.
"""
import ast
import os

from tests.corpus_labels import (ROOT, Corpus, bench, imported_modules, label_tests)

WITHHELD = os.path.join(ROOT, "bench", "diagnosis_withheld")
CORPUS = Corpus(WITHHELD)
OLDER_CORPORA = ("diagnosis_untuned", "diagnosis_heldout", "diagnosis_blind", "diagnosis_fresh",
                 "diagnosis_unseen", "diagnosis_sealed", "diagnosis_latest", "diagnosis_hidden")
RAISING = ("WithheldPACTClipAlphaPerElement",)
TWO_OUTPUTS = ("WithheldLeapfrogPendulum", "WithheldNeighbourMax")


def test_corpus_is_read_from_its_own_folder():
    assert {os.path.dirname(r["file"]) for r in CORPUS.records} == {WITHHELD}


def test_corpus_size_and_mix():
    assert len(CORPUS.buggy) == 57 and len(CORPUS.correct) == 37
    assert len(CORPUS.files) == 10
    kinds = CORPUS.kind_counts()
    assert set(kinds) == bench.KINDS - {"precision"}  # gradcheck's tolerance cannot catch precision
    assert kinds["none"] == 6
    assert max(kinds.values()) <= len(CORPUS.buggy) // 8  # no kind dominates


def test_both_backends_about_one_third_engine():
    engine, torch_files = CORPUS.engine_and_torch_files()
    assert sorted(engine + torch_files) == CORPUS.files
    assert not set(engine) & set(torch_files)
    assert engine == ["fused_engine.py", "masked_engine.py", "spiking_engine.py"]
    on_engine = [r for r in CORPUS.records if os.path.basename(r["file"]) in engine]
    assert len(on_engine) == 26  # 18 buggy + 8 twins of 94
    assert len(CORPUS.records) // 4 <= len(on_engine) <= len(CORPUS.records) // 2


def test_engine_files_use_no_real_torch():
    engine, _ = CORPUS.engine_and_torch_files()
    for name in engine:
        assert imported_modules(CORPUS.source(name)) <= {"gradcli", "math"}, name


def test_complex_ops_are_on_real_torch_only():
    engine, torch_files = CORPUS.engine_and_torch_files()
    assert "complex_ops.py" in torch_files
    assert not any("complex128" in CORPUS.source(n) for n in engine)


def test_function_names_are_unique_here_and_across_the_older_corpora():
    names = [r["function"] for r in CORPUS.records]
    assert len(names) == len(set(names))
    assert all(n.startswith("Withheld") for n in names)
    for folder in OLDER_CORPORA:
        other = os.path.join(ROOT, "bench", folder)
        if os.path.isdir(other):
            assert not set(names) & {r["function"] for r in bench.read_corpus(other)}, folder


def test_coding_styles_the_brief_asks_for_occur():
    source = "\n".join(CORPUS.source(n) for n in CORPUS.files)
    for needle in ("ctx.needs_input_grad[", "ctx.mark_non_differentiable(", "torch.einsum(",
                   "index_add_(", "scatter_(", "+=", "mul_(", ".mT", "torch.where(", "masked_fill(",
                   "log1p(", "expm1(", ".conj()", "F.pad(", "keepdim=True", "unsqueeze(1)"):
        assert needle in source, needle
    trees = [ast.parse(CORPUS.source(n)) for n in CORPUS.files]
    ctx_attributes = {node.attr for tree in trees for node in ast.walk(tree)
                      if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                      and node.value.id == "ctx" and isinstance(node.ctx, ast.Store)}
    assert ctx_attributes >= {"mask", "counts", "lam", "shape"}, ctx_attributes
    by_name = {r["function"]: r for r in CORPUS.records}
    for name in TWO_OUTPUTS:
        assert by_name[name]["bug"] is None
    assert by_name["WithheldLeapfrogPendulum"]["params"] == ["q", "p"]


def test_every_class_whose_default_inputs_would_not_fit_has_example_inputs():
    # broadcast parameters, square matrices, complex or positive inputs, edge lists
    needs = {"WithheldPACTClip", "WithheldGCNLayer", "WithheldInverse", "WithheldSolve",
             "WithheldQuadraticForms", "WithheldComplexMultiply", "WithheldLog1mExp",
             "WithheldWeightedScatterAdd", "WithheldBiasSiluDropout", "WithheldResidualRMSNorm",
             "WithheldLeakyIntegrate", "WithheldCausalFIR", "WithheldEulerStep"}
    with_inputs = set()
    for name in CORPUS.files:
        for node in ast.parse(CORPUS.source(name)).body:
            if isinstance(node, ast.ClassDef) and "example_inputs" in bench._methods(node):
                with_inputs.add(node.name)
    assert needs <= with_inputs, needs - with_inputs


def test_readme_names_the_functions_that_fail_by_raising():
    readme = CORPUS.readme()
    names = {r["function"] for r in CORPUS.buggy}
    for name in RAISING:
        assert f"`{name}`" in readme and name in names


globals().update(label_tests(CORPUS))  # the tests every corpus of this format shares


def test_readme_states_the_rules_and_matches_the_corpus():
    readme = CORPUS.readme()
    assert "BLIND" in readme and "corpus9" in readme
    assert "--corpus bench/diagnosis_withheld" in readme and "--summary" in readme
    assert "Torch files: 39 buggy + 29 twins; engine files: 18 buggy + 8 twins." in readme
