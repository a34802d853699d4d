"""The seventeenth diagnosis corpus (bench/diagnosis_unheard/, released 2026-12-03) is well formed.

Static checks only (ast): nothing here imports the corpus or runs the diagnosis — scoring is
bench/diagnosis_untuned.py's job (``--corpus bench/diagnosis_unheard --summary``), validation by
verdicts is bench/diagnosis_blind_verdicts.py's (``--corpus bench/diagnosis_unheard``). These tests
pass with and without torch.
"""
import ast
import os


from tests.corpus_labels import (ROOT, Corpus, bench, imported_modules, label_tests)

UNHEARD = os.path.join(ROOT, "bench", "diagnosis_unheard")
CORPUS = Corpus(UNHEARD)
RAISING = ()  # no buggy Function of this corpus fails by raising
ENGINE_FILES = ["pair_physics_engine.py", "rational_engine.py", "recurrence_norm_engine.py"]
TORCH_FILES = ["contractions.py", "finance.py", "modern_style.py", "physics.py", "rendering.py",
               "statistics.py", "transport_ranking.py"]
ESTIMATORS = ("straight_through", "smooth_surrogate", "gradient_reversal")


def test_corpus_is_read_from_its_own_folder():
    assert {os.path.dirname(r["file"]) for r in CORPUS.records} == {UNHEARD}


def test_corpus_size_and_mix():
    assert len(CORPUS.buggy) == 68
    assert len(CORPUS.correct) == 40
    assert len(CORPUS.files) == 10
    kinds = set(CORPUS.kind_counts())
    assert kinds <= bench.KINDS
    assert CORPUS.kind_counts()["none"] == 4
    assert kinds == bench.KINDS - {"precision"}
    assert len(CORPUS.buggy) - CORPUS.kind_counts()["none"] >= 50
    assert max(CORPUS.kind_counts().values()) <= len(CORPUS.buggy) // 8  # no kind dominates
    assert sum(CORPUS.kind_counts()[k] for k in ESTIMATORS) == 3


def test_both_backends_engine_files_and_split():
    engine, torch_files = CORPUS.engine_and_torch_files()
    assert engine == ENGINE_FILES
    assert torch_files == TORCH_FILES
    assert sorted(engine + torch_files) == CORPUS.files
    assert all(n.endswith("_engine.py") for n in engine)
    assert not any(n.endswith("_engine.py") for n in torch_files)
    for name in engine:
        assert CORPUS.source(name).startswith("import gradcli as torch\n"), name
    on_engine = [r for r in CORPUS.records if os.path.basename(r["file"]) in engine]
    assert len(on_engine) == 25  # 16 buggy + 9 twins


def test_engine_files_use_no_real_torch():
    for name in ENGINE_FILES:
        assert imported_modules(CORPUS.source(name)) <= {"gradcli", "math"}, name


def test_every_class_is_prefixed_and_names_are_unique_here_and_across_the_other_corpora():
    names = [r["function"] for r in CORPUS.records]
    assert len(names) == len(set(names))
    assert all(n.startswith("Unheard") for n in names)
    for folder in sorted(os.listdir(os.path.join(ROOT, "bench"))):
        other = os.path.join(ROOT, "bench", folder)
        if (folder.startswith("diagnosis_") and folder not in ("diagnosis_unheard", "diagnosis_catalogue")
                and os.path.isdir(other)):
            assert not set(names) & {r["function"] for r in bench.read_corpus(other)}, folder


def test_coding_styles_the_brief_asks_for_occur():
    source = "\n".join(CORPUS.source(n) for n in CORPUS.files)
    for needle in ("ctx.needs_input_grad[", "torch.einsum(", "index_add_(", "scatter_(",
                   ".scatter(", ".gather(", "index_select(", "def setup_context(",
                   "ctx.set_materialize_grads(False)", "ctx.mark_non_differentiable(",
                   "reversed(", ".flip(", "torch.cumprod(", ".permute(", ".transpose(", " @ ",
                   ".view(", "keepdim=True", "mul_(", "div_(", "+= ", "torch.where("):
        assert needle in source, needle
    trees = [ast.parse(CORPUS.source(n)) for n in CORPUS.files]
    ctx_attributes = {node.attr for tree in trees for node in ast.walk(tree)
                      if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                      and node.value.id == "ctx" and isinstance(node.ctx, ast.Store)}
    assert len(ctx_attributes) >= 4, ctx_attributes


def test_setup_context_functions_label_a_later_parameter():
    """forward(x, ...) without ctx: the static reader drops the first parameter as if it were
    ctx, so these Functions label one of the later parameters (and all give example_inputs)."""
    source = CORPUS.source("modern_style.py")
    tree = ast.parse(source)
    new_style = [n.name for n in tree.body if isinstance(n, ast.ClassDef)
                 and "setup_context" in bench._methods(n)]
    assert len(new_style) == 10
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name in new_style:
            methods = bench._methods(node)
            assert methods["forward"].args.args[0].arg != "ctx"
            assert any(isinstance(item, ast.Assign) and item.targets[0].id == "example_inputs"
                       for item in node.body if isinstance(item, ast.Assign)), node.name


def test_no_label_carries_an_also():
    assert [r["function"] for r in CORPUS.buggy if r["bug"].get("also")] == []


def test_readme_says_no_function_fails_by_raising():
    readme = " ".join(CORPUS.readme().split())
    assert RAISING == ()
    assert "No buggy Function fails by raising" in readme


globals().update(label_tests(CORPUS))  # the tests every corpus of this format shares


def test_readme_states_the_rules_and_matches_the_corpus():
    readme = CORPUS.readme()
    assert "**This corpus is BLIND: it is used only to *score* gradcli's diagnosis, never to design it.**" in readme
    assert "--corpus bench/diagnosis_unheard" in readme and "--summary" in readme


def test_readme_backend_split_matches_the_labels():
    engine, _ = CORPUS.engine_and_torch_files()
    split = {True: [0, 0], False: [0, 0]}
    for r in CORPUS.records:
        split[os.path.basename(r["file"]) in engine][r["bug"] is None] += 1
    (torch_buggy, torch_twins), (engine_buggy, engine_twins) = split[False], split[True]
    assert (f"Torch files: {torch_buggy} buggy + {torch_twins} twins; engine files: "
            f"{engine_buggy} buggy + {engine_twins} twins.") in CORPUS.readme()
