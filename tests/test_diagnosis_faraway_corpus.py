"""The twenty-first diagnosis corpus (bench/diagnosis_faraway/, released 2026-12-04) is well formed.

Static checks only (ast): nothing here imports the corpus or runs the diagnosis — scoring is
bench/diagnosis_untuned.py's job (``--corpus bench/diagnosis_faraway --summary``), validation by
verdicts is bench/diagnosis_blind_verdicts.py's (``--corpus bench/diagnosis_faraway``). These tests
pass with and without torch.
"""
import ast
import os


from tests.corpus_labels import (ROOT, Corpus, bench, imported_modules, label_tests)

FARAWAY = os.path.join(ROOT, "bench", "diagnosis_faraway")
CORPUS = Corpus(FARAWAY)
RAISING = ("FarawayEulerPerSampleRateUnsummed", "FarawayUnfoldStencilBatchOnly")
ENGINE_FILES = ["piecewise_engine.py", "series_engine.py", "specialfn_engine.py"]


def test_corpus_is_read_from_its_own_folder():
    assert {os.path.dirname(r["file"]) for r in CORPUS.records} == {FARAWAY}


def test_corpus_size_and_mix():
    assert len(CORPUS.buggy) == 58
    assert len(CORPUS.correct) == 42
    assert len(CORPUS.files) == 10
    kinds = set(CORPUS.kind_counts())
    assert kinds <= bench.KINDS
    assert CORPUS.kind_counts()["none"] == 4
    assert len(CORPUS.buggy) - CORPUS.kind_counts()["none"] >= 50
    assert kinds == bench.KINDS - {"precision"}
    assert max(CORPUS.kind_counts().values()) <= len(CORPUS.buggy) // 8  # no kind dominates


def test_both_backends_engine_files_and_split():
    engine, torch_files = CORPUS.engine_and_torch_files()
    assert engine == ENGINE_FILES
    assert len(torch_files) == 7
    assert sorted(engine + torch_files) == CORPUS.files
    assert all(n.endswith("_engine.py") for n in engine)
    assert not any(n.endswith("_engine.py") for n in torch_files)
    on_engine = [r for r in CORPUS.records if os.path.basename(r["file"]) in engine]
    assert len(on_engine) == 32  # 16 buggy + 16 twins


def test_engine_files_use_no_real_torch():
    for name in ENGINE_FILES:
        assert imported_modules(CORPUS.source(name)) <= {"gradcli", "math"}, name


def test_every_class_is_prefixed_and_names_are_unique_here_and_across_the_other_corpora():
    names = [r["function"] for r in CORPUS.records]
    assert len(names) == len(set(names))
    assert all(n.startswith("Faraway") for n in names)
    for folder in sorted(os.listdir(os.path.join(ROOT, "bench"))):
        other = os.path.join(ROOT, "bench", folder)
        if (folder.startswith("diagnosis_") and folder not in ("diagnosis_faraway", "diagnosis_catalogue")
                and os.path.isdir(other)):
            assert not set(names) & {r["function"] for r in bench.read_corpus(other)}, folder


def test_coding_styles_the_brief_asks_for_occur():
    source = "\n".join(CORPUS.source(n) for n in CORPUS.files)
    for needle in ("ctx.needs_input_grad[", "torch.einsum(", "F.unfold(", "F.fold(", "F.conv1d(",
                   "index_add_(", ".gather(", ".mT", " @ ", "dim=", "reversed(", ".permute(",
                   "masked_fill(", ".flip(", "torch.cumprod(", "torch.cumsum(", "mul_(", "log_(",
                   "torch.sort(", "torch.stack(", "for ", "torch.where("):
        assert needle in source, needle
    trees = [ast.parse(CORPUS.source(n)) for n in CORPUS.files]
    ctx_attributes = {node.attr for tree in trees for node in ast.walk(tree)
                      if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                      and node.value.id == "ctx" and isinstance(node.ctx, ast.Store)}
    assert len(ctx_attributes) >= 4, ctx_attributes


def test_the_one_also_label_is_the_channel_mix_flat_back():
    with_also = [r for r in CORPUS.buggy if r["bug"].get("also")]
    assert [(r["function"], r["bug"]["kind"], r["bug"]["also"]) for r in with_also] == [
        ("FarawayChannelMixFlatBack", "missing_reshape", ["transposed"])]


def test_readme_names_the_functions_that_fail_by_raising():
    readme = CORPUS.readme()
    names = {r["function"] for r in CORPUS.buggy}
    for name in RAISING:
        assert f"`{name}`" in readme and name in names


globals().update(label_tests(CORPUS))  # the tests every corpus of this format shares


def test_readme_states_the_rules_and_matches_the_corpus():
    readme = CORPUS.readme()
    assert readme.splitlines()[0].startswith("# The twenty-first diagnosis corpus (issue 17, deliverable 3) — BLIND — a design corpus since 2026-12-04")  # released, as written blind
    assert "**This corpus is BLIND: it is used only to *score* gradcli's diagnosis, never to design it.**" in readme
    assert "--corpus bench/diagnosis_faraway" in readme and "--summary" in readme


def test_readme_backend_split_matches_the_labels():
    engine, _ = CORPUS.engine_and_torch_files()
    split = {True: [0, 0], False: [0, 0]}
    for r in CORPUS.records:
        split[os.path.basename(r["file"]) in engine][r["bug"] is None] += 1
    (torch_buggy, torch_twins), (engine_buggy, engine_twins) = split[False], split[True]
    assert (f"Torch files: {torch_buggy} buggy + {torch_twins} twins; engine files: "
            f"{engine_buggy} buggy + {engine_twins} twins.") in CORPUS.readme()
