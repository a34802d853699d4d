"""The thirty-second diagnosis corpus (bench/diagnosis_wayward/, BLIND) is well formed.

Static checks only (ast): nothing here imports the corpus or runs the diagnosis — scoring is
bench/diagnosis_untuned.py's job (``--corpus bench/diagnosis_wayward --summary``), validation by
verdicts is bench/diagnosis_blind_verdicts.py's (``--corpus bench/diagnosis_wayward``). These tests
pass with and without torch.
"""
import ast
import os


from tests.corpus_labels import (ROOT, Corpus, bench, imported_modules, label_tests)

WAYWARD = os.path.join(ROOT, "bench", "diagnosis_wayward")
CORPUS = Corpus(WAYWARD)
RAISING = ("WaywardWeightedSqCostWeightMap", "WaywardGaussianEmissionsMeanMap")
ENGINE_FILES = ["editdist_engine.py", "hmm_engine.py", "softdtw_engine.py"]
ESTIMATORS = {"WaywardViterbiStraightThrough": "straight_through",
              "WaywardSequenceGradReversal": "gradient_reversal",
              "WaywardErrorCountSurrogate": "smooth_surrogate"}
NO_PATTERN = {"WaywardCrfLocalSoftmaxGuess", "WaywardInfoNCETemperatureGuess",
              "WaywardSoftDTWNearestGuess", "WaywardSoftEditDistanceGapGuess"}


def test_corpus_is_read_from_its_own_folder():
    assert {os.path.dirname(r["file"]) for r in CORPUS.records} == {WAYWARD}


def test_corpus_size_and_mix():
    assert len(CORPUS.buggy) == 64
    assert len(CORPUS.correct) == 28
    assert len(CORPUS.files) == 10
    kinds = set(CORPUS.kind_counts())
    assert kinds <= bench.KINDS
    assert CORPUS.kind_counts()["none"] == 4
    assert kinds == bench.KINDS - {"precision"}
    assert max(CORPUS.kind_counts().values()) <= len(CORPUS.buggy) // 8  # no kind dominates
    assert len(CORPUS.buggy) - CORPUS.kind_counts()["none"] >= 50


def test_the_no_pattern_bugs():
    assert {r["function"] for r in CORPUS.buggy if r["bug"]["kind"] == "none"} == NO_PATTERN


def test_both_backends_engine_files_and_split():
    engine, torch_files = CORPUS.engine_and_torch_files()
    assert engine == ENGINE_FILES
    assert len(torch_files) == 7
    assert sorted(engine + torch_files) == CORPUS.files
    assert all(n.endswith("_engine.py") for n in engine)
    assert not any(n.endswith("_engine.py") for n in torch_files)
    on_engine = [r for r in CORPUS.records if os.path.basename(r["file"]) in engine]
    assert len(on_engine) == 23  # 16 buggy + 7 twins


def test_engine_files_import_gradcli_first_and_use_no_real_torch():
    for name in ENGINE_FILES:
        source = CORPUS.source(name)
        assert source.splitlines()[0] == "import gradcli as torch", name
        assert imported_modules(source) <= {"gradcli", "math"}, name


def test_torch_files_import_only_torch_and_math():
    _, torch_files = CORPUS.engine_and_torch_files()
    for name in torch_files:
        assert imported_modules(CORPUS.source(name)) <= {"torch", "math"}, name


def test_every_class_is_prefixed_and_names_are_unique_here_and_across_the_other_corpora():
    names = [r["function"] for r in CORPUS.records]
    assert len(names) == len(set(names))
    assert all(n.startswith("Wayward") for n in names)
    for folder in sorted(os.listdir(os.path.join(ROOT, "bench"))):
        other = os.path.join(ROOT, "bench", folder)
        if (folder.startswith("diagnosis_") and folder not in ("diagnosis_wayward", "diagnosis_catalogue")
                and os.path.isdir(other)):
            assert not set(names) & {r["function"] for r in bench.read_corpus(other)}, folder


def test_the_estimators_are_the_only_twinless_ones():
    estimators = {r["function"]: r["bug"]["kind"] for r in CORPUS.buggy
                  if r["bug"]["kind"] in ("straight_through", "gradient_reversal", "smooth_surrogate")}
    assert estimators == ESTIMATORS


def test_coding_styles_the_brief_asks_for_occur():
    source = "\n".join(CORPUS.source(n) for n in CORPUS.files)
    for needle in ("ctx.save_for_backward(", "ctx.needs_input_grad[", "torch.einsum(", " @ ", ".T",
                   ".unfold(", "index_add_(", "index_put_(", "scatter_add_(", "scatter_(", ".gather(",
                   "masked_fill(", "torch.where(", "torch.logsumexp(", "torch.logcumsumexp(",
                   "torch.cumsum(", "torch.flip(", "for t in reversed(range(", "for t in range(",
                   "torch.stack(", "torch.cat(", "keepdim=True", ".permute(", ".reshape(", ".view(",
                   ".expand(", "dim=", "mul_(", "div_(", "F.softplus(", "accumulate=True"):
        assert needle in source, needle
    trees = [ast.parse(CORPUS.source(n)) for n in CORPUS.files]
    ctx_attributes = {node.attr for tree in trees for node in ast.walk(tree)
                      if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                      and node.value.id == "ctx" and isinstance(node.ctx, ast.Store)}
    assert len(ctx_attributes) >= 4, ctx_attributes


def test_integer_and_bool_inputs_occur():
    source = "\n".join(CORPUS.source(n) for n in CORPUS.files)
    assert "dtype=torch.int64" in source and "torch.tensor([True" in source


def test_the_also_labels():
    with_also = sorted((r["function"], r["bug"]["kind"], r["bug"]["also"])
                       for r in CORPUS.buggy if r["bug"].get("also"))
    assert with_also == [
        ("WaywardCrfGoldScoreNextPrev", "swapped", ["transposed"]),
        ("WaywardGaussianEmissionsStepMajor", "missing_reshape", ["transposed"]),
        ("WaywardSegmentSumsUnfoldLayout", "missing_reshape", ["transposed"])]


def test_readme_names_the_functions_that_fail_by_raising():
    readme = CORPUS.readme()
    names = {r["function"] for r in CORPUS.buggy}
    for name in RAISING:
        assert f"`{name}`" in readme and name in names


def test_readme_names_the_no_pattern_bugs():
    readme = CORPUS.readme()
    for name in NO_PATTERN:
        assert f"`{name}`" in readme


globals().update(label_tests(CORPUS))  # the tests every corpus of this format shares


def test_readme_states_the_rules_and_matches_the_corpus():
    readme = CORPUS.readme()
    assert readme.splitlines()[0] == "# The thirty-second diagnosis corpus (issue 17, deliverable 3) — BLIND"
    assert "**This corpus is BLIND: it is used only to *score* gradcli's diagnosis, never to design it.**" in readme
    assert "python bench/diagnosis_untuned.py --corpus bench/diagnosis_wayward --summary" in readme


def test_readme_backend_split_matches_the_labels():
    engine, _ = CORPUS.engine_and_torch_files()
    split = {True: [0, 0], False: [0, 0]}
    for r in CORPUS.records:
        split[os.path.basename(r["file"]) in engine][r["bug"] is None] += 1
    (torch_buggy, torch_twins), (engine_buggy, engine_twins) = split[False], split[True]
    assert (f"Torch files: {torch_buggy} buggy + {torch_twins} twins; engine files: "
            f"{engine_buggy} buggy + {engine_twins} twins.") in CORPUS.readme()
