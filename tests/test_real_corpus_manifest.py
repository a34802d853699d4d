"""bench/real_corpus.json (the real-package corpus) keeps its schema and its held-out rule; the bench's
classification of outcomes says what it should. No network, no corpus venv, no torch needed."""
import ast
import json
import os
import re
import sys
import types
import zlib

import pytest

BENCH = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench")
sys.path.insert(0, BENCH)
from real_packages_verdicts import category, classify, summarize  # noqa: E402
import real_packages  # noqa: E402
import real_packages_gradcheck  # noqa: E402  (imports no torch at module level)

FIELDS = {"package", "version", "module", "file", "class", "held_out", "help", "truth", "expected", "note"}
TRUTHS = {None, "correct", "surrogate", "not-a-gradient", "user-bug"}


@pytest.fixture(scope="module")
def manifest():
    with open(os.path.join(BENCH, "real_corpus.json")) as fh:
        return json.load(fh)


def test_top_level_keys(manifest):
    assert manifest["schema_version"] == 1
    for key in ("about", "selection_rule", "held_out_rule", "fields", "functions", "torch"):
        assert key in manifest
    assert set(manifest["fields"]) == FIELDS


def test_size_and_spread(manifest):
    functions = manifest["functions"]
    packages = {f["package"] for f in functions}
    assert len(functions) >= 90 and len(packages) >= 20
    held = {f["package"] for f in functions if f["held_out"]}
    assert 0.2 <= len(held) / len(packages) <= 0.4  # about 30 % of the packages held out


def test_entries(manifest):
    seen = set()
    for f in manifest["functions"]:
        assert set(f) == FIELDS, f
        assert re.fullmatch(r"[A-Za-z0-9_.\-]+", f["package"]) and f["version"]
        assert re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", f["class"])
        path = f["file"]
        assert path.endswith(".py") and not os.path.isabs(path) and ".." not in path.split("/")
        module = path[:-3].replace("/", ".")
        assert f["module"] in (module, module[: -len(".__init__")])
        assert isinstance(f["held_out"], bool)
        assert f["truth"] in TRUTHS and isinstance(f["note"], str)
        if f["expected"] is not None:  # the right SKIP/ERROR where no verdict can exist: said why, in a note too
            assert set(f["expected"]) == {"status", "message", "why"} and f["expected"]["status"] in ("skip", "error")
            re.compile(f["expected"]["message"])
            assert f["expected"]["why"] and f["note"]
        key = (path, f["class"])
        assert key not in seen, key
        seen.add(key)


def test_held_out_rule_is_the_stated_crc32(manifest):
    assert "crc32" in manifest["held_out_rule"]
    for f in manifest["functions"]:
        assert f["held_out"] == (zlib.crc32(f["package"].lower().encode()) % 10 < 3), f["package"]


def test_help_is_at_most_one_option(manifest):
    for f in manifest["functions"]:
        if f["help"] is None:
            continue
        args = f["help"]["args"]
        assert isinstance(args, list) and all(isinstance(a, str) for a in args) and f["help"]["why"]
        options = [a for a in args if a.startswith("--")]
        assert len(options) == 1 and (options[0] == "--input" or "inputs" in options[0]), args
        assert len(args) == 2


def _help_entries(manifest):
    return [f for f in manifest["functions"] if f["help"] is not None]


def test_every_help_parses_as_gradcli_check_options(manifest):
    """The options as `gradcli check` reads them: click's parsing and each --input SPEC's parser, no run."""
    from gradcli.cli import main

    check = main.commands["check"]
    for f in _help_entries(manifest):
        options = real_packages.help_options(f["help"]["args"])
        ctx = check.make_context("check", ["some_file.py", *options], resilient_parsing=False)
        if options[0] == "--input":
            name, spec = ctx.params["inputs"][0] if ctx.params.get("inputs") else (None, None)
            assert name == options[1].split("=")[0] and spec is not None, (f["class"], ctx.params.get("inputs"))
        else:
            assert os.path.isabs(options[1]) and ctx.params["inputs_from"] == options[1]


def _inputs_file_names(path):
    """Top-level function names and INPUTS keys of an inputs file, read by ast (no import: no corpus venv)."""
    tree = ast.parse(open(path).read(), path)
    names = {node.name for node in tree.body if isinstance(node, ast.FunctionDef)}
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "INPUTS" for t in node.targets):
            names |= {k.value for k in node.value.keys if isinstance(k, ast.Constant)}
    return names


def test_every_inputs_file_exists_parses_and_has_an_entry_for_each_function_it_helps(manifest):
    used = set()
    for f in _help_entries(manifest):
        args = f["help"]["args"]
        if args[0] != "--inputs-from":
            continue
        assert args[1] == f"bench/real_inputs/{f['package']}.py", args  # one file per package
        path = os.path.join(os.path.dirname(BENCH), args[1])
        assert os.path.isfile(path), path
        names = _inputs_file_names(path)
        assert f["class"] in names or f"{f['module']}.{f['class']}" in names, (path, f["class"])
        used.add(os.path.basename(path))
    assert used == set(os.listdir(os.path.join(BENCH, "real_inputs"))) - {"__pycache__"}  # no stray file


def test_help_options_make_an_inputs_file_path_absolute_against_the_repository():
    assert real_packages.help_options(["--inputs-from", "bench/real_inputs/x.py"]) == [
        "--inputs-from", os.path.join(os.path.dirname(BENCH), "bench", "real_inputs", "x.py")]
    assert real_packages.help_options(["--input", "dim=tensor(1)"]) == ["--input", "dim=tensor(1)"]


def test_the_torch_side_seeds_an_inputs_file_entry_as_gradcli_seeds_example_inputs(monkeypatch):
    """bench/real_packages_gradcheck.py rebuilds an inputs file's inputs: the same seed gradcli gives torch."""
    from gradcli.check.inputs import seed_global_generators

    seen = []
    fake = types.SimpleNamespace(manual_seed=seen.append)
    monkeypatch.setitem(sys.modules, "torch", fake)
    seed_global_generators(7, "LIFAdjointFunction")
    real_packages_gradcheck.seed_like_gradcli(fake, 7, "LIFAdjointFunction")
    assert len(seen) == 2 and seen[0] == seen[1] == (7 * 1_000_003 + zlib.crc32(b"LIFAdjointFunction")) % 2**32


def test_the_torch_side_finds_the_entry_gradcli_finds(tmp_path):
    path = tmp_path / "inputs.py"
    path.write_text("from os import path as Op2\n"
                    "INPUTS = {'pkg.ops.Op': 'by module.Class', 'Op': 'by Class'}\n"
                    "def Other():\n    return 'a function'\n")
    module = real_packages_gradcheck.load_inputs_file(str(path))
    assert real_packages_gradcheck.inputs_entry(module, {"module": "pkg.ops", "class": "Op"}) == "by module.Class"
    assert real_packages_gradcheck.inputs_entry(module, {"module": "other", "class": "Op"}) == "by Class"
    assert real_packages_gradcheck.inputs_entry(module, {"module": "m", "class": "Other"})() == "a function"
    assert real_packages_gradcheck.inputs_entry(module, {"module": "m", "class": "Op2"}) is None  # imported


class _Meta(type):
    def __new__(mcls, name, bases, ns):
        ns["__module__"] = "somewhere.else"  # as norse's NamedTuple metaclass does
        return super().__new__(mcls, name, bases, ns)


class Params(metaclass=_Meta):
    def __init__(self, tau=0.5):
        self.tau = tau


class _Fn:
    @staticmethod
    def forward(ctx, x, p: Params = Params(), dt: float = 0.001):
        return x


def test_a_default_object_is_rebuilt_from_forwards_signature_when_its_class_path_does_not_import():
    rec = {"name": "p", "type": "object", "spec": "default()", "class": "somewhere.else.Params"}
    value, why = real_packages_gradcheck.default_object(rec, _Fn)
    assert why == "" and type(value) is Params and value.tau == 0.5
    value, why = real_packages_gradcheck.default_object(dict(rec, name="q", **{"class": "nowhere.Q"}), _Fn)
    assert value is None and why == "q: cannot build nowhere.Q() again (not found)"


# ---- the classification in bench/real_packages_verdicts.py, on outcomes shaped like gradcli's JSON ----

ENTRY = {"key": "pkg/ops.py::Op", "package": "pkg", "class": "Op", "file": "pkg/ops.py", "held_out": False,
         "truth": None}
AUTO = [[{"name": "x", "source": "auto", "spec": "float64[3,4]@(-2,2)", "type": "tensor"}]]
CLI = [[{"name": "x", "source": "cli", "spec": "2x3", "type": "tensor"}]]


def outcome(status, message="", inputs=AUTO, function="Op", collected=True):
    return {"result": {"function": function, "status": status, "message": message, "inputs": inputs},
            "collected": collected, "process": {"tail": ""}}


def torch(status, values=None, importable=True):
    return {"importable": importable, "status": status, "values_status": values or status,
            "input_sets": [{"default": {"status": status, "message": "Jacobian mismatch"},
                            "no_undefined": {"status": values or status, "message": "Jacobian mismatch"}}]}


def test_agreeing_pass_is_a_correct_automatic_verdict():
    row = classify(ENTRY, outcome("pass"), None, torch("pass"))
    assert (row["verdict"], row["correct"], row["review"]) == ("auto", True, None)


def test_pass_where_torch_fails_the_values_is_a_possible_false_pass():
    row = classify(ENTRY, outcome("pass"), None, torch("fail"))
    assert (row["correct"], row["review"]) == (False, "false PASS?")
    assert summarize([row])["totals"]["design"]["false_pass"] == 1


def test_fail_where_torch_passes_is_a_possible_false_alarm():
    row = classify(ENTRY, outcome("fail"), None, torch("pass"))
    assert row["review"] == "false alarm?"
    assert summarize([row])["totals"]["all"]["false_fail"] == 1


def test_torch_failing_only_its_undefined_grad_check_is_not_a_false_pass():
    row = classify(ENTRY, outcome("pass"), None, torch("fail", values="pass"))
    assert (row["correct"], row["review"]) == (True, "torch undefined-grad check only")


def test_relative_import_of_an_importable_module_is_gradclis_doing():
    message = "ImportError: attempted relative import with no known parent package (ops.py:3)"
    row = classify(ENTRY, outcome("error", message, inputs=[], function=None, collected=False), None,
                   torch(None, importable=True))
    assert row["auto_category"] == "relative import"
    assert row["auto_whose_error"] == "gradcli"
    assert summarize([row])["totals"]["design"]["error_ours"] == 1


def test_import_error_of_a_module_that_does_not_import_anywhere_is_the_environment():
    message = "ModuleNotFoundError: No module named 'onnx' (ops.py:3)"
    row = classify(ENTRY, outcome("error", message, inputs=[], function=None, collected=False), None,
                   torch(None, importable=False))
    assert row["auto_whose_error"] == "environment"


def test_error_at_inputs_gradcli_built_is_ours_but_at_given_inputs_is_the_users():
    auto = classify(ENTRY, outcome("error", "AssertionError (ops.py:9)"), None, torch(None))
    assert (auto["auto_category"], auto["auto_whose_error"]) == ("shape/type assert in forward", "gradcli")
    given = classify(ENTRY, outcome("error", "ZeroDivisionError (ops.py:9)", inputs=CLI), None, torch(None))
    assert given["auto_whose_error"] == "user"


def test_verdict_after_help_counts_for_at_most_one_help_only():
    entry = dict(ENTRY, help={"args": ["--input", "x=2x3"], "why": "a matrix"})
    message = ("cannot build inputs automatically: forward raised RuntimeError: mat1 and mat2 shapes cannot be "
               "multiplied (3x4 and 3x4) for 3x4 inputs in every domain tried. Give them with --input x=SPEC")
    row = classify(entry, outcome("skip", message), outcome("pass", inputs=CLI), torch("pass"))
    assert (row["verdict"], row["auto_category"]) == ("help", "inputs: shapes (3x4 does not fit)")
    totals = summarize([row])["totals"]["design"]
    assert (totals["verdict_auto"], totals["correct_auto"], totals["correct_help"]) == (0, 0, 1)


def test_surrogate_without_a_torch_verdict_is_judged_by_the_truth_label():
    entry = dict(ENTRY, truth="surrogate")
    row = classify(entry, outcome("fail"), None, torch("error"))
    assert (row["correct"], row["judged_by"]) == (True, "truth")


def test_category_of_an_unknown_message_names_the_status():
    assert category("skip", "something else") == "other skip"


def test_varargs_skip_and_a_number_parameter_drawn_as_a_tensor_are_named():
    varargs = classify(ENTRY, outcome("skip", "forward takes *args, so its inputs cannot be built automatically"),
                       None, torch(None))
    assert varargs["auto_category"] == "forward takes *args" and varargs["auto_whose_error"] is None
    inputs = [[{"name": "x", "source": "auto", "type": "tensor"}, {"name": "b", "source": "auto", "type": "tensor"}]]
    message = "structure: backward returned None for b, but the function depends on it"
    row = classify(ENTRY, outcome("fail", message, inputs=inputs), None, torch("fail"))
    assert row["fail_on_built_number"] == ["b"] and row["review"] is None


def test_a_file_whose_folder_shadows_a_module_is_an_import_category():
    message = "ModuleNotFoundError: No module named 'pkg.utils'; 'pkg' is not a package (pkg.py:3)"
    row = classify(ENTRY, outcome("error", message, inputs=[], function=None, collected=False), None,
                   torch(None, importable=True))
    assert row["auto_category"] == "import: a module shadowed by the file's folder"
    assert row["auto_whose_error"] == "gradcli"


def test_a_gradcli_that_crashes_is_gradclis_doing_not_a_missing_function():
    crashed = {"result": None, "collected": False,
               "process": {"tail": "Traceback (most recent call last):\n  ...\nSyntaxError: invalid syntax\n"}}
    row = classify(ENTRY, crashed, None, torch(None))
    assert row["auto_message"] == "bench: gradcli crashed without a result: SyntaxError: invalid syntax"
    assert (row["auto_category"], row["auto_whose_error"]) == ("gradcli crashed", "gradcli")


def test_torch_gradcheck_gets_only_the_tensor_arguments_the_others_bound():
    """A NamedTuple of parameters is passed to forward as it is, not recursed into by gradcheck."""
    class T:
        def __init__(self, v):
            self.v = v

    fake = types.SimpleNamespace(Tensor=T)
    params = ("tau", 0.5)
    a, b = T(1), T(2)
    fn, tensors = real_packages_gradcheck.over_tensors(fake, lambda *args: args, [a, params, b, 3.0])
    assert tensors == (a, b)
    c, d = T(5), T(6)
    assert fn(c, d) == (c, params, d, 3.0)


def test_a_user_bug_without_a_torch_verdict_is_a_correct_fail_and_never_a_correct_pass():
    entry = dict(ENTRY, truth="user-bug")
    fail = classify(entry, outcome("fail", "inplace: modified by an inplace operation"), None, torch("error"))
    assert (fail["correct"], fail["judged_by"]) == (True, "truth")
    passed = classify(entry, outcome("pass"), None, torch("error"))
    assert (passed["correct"], passed["judged_by"]) == (False, "truth")


def test_the_torch_side_rebuilds_an_inputs_file_set_and_refuses_other_values(tmp_path):
    torch = pytest.importorskip("torch")
    path = tmp_path / "inputs.py"
    path.write_text("import torch\n"
                    "def Op():\n"
                    "    return torch.randn(3, dtype=torch.float64), ('kept', 1)\n")
    real_packages_gradcheck.seed_like_gradcli(torch, 0, "Op")
    drawn = torch.randn(3, dtype=torch.float64)  # what gradcli's seeded call drew (and recorded)
    records = [{"name": "x", "source": "example", "type": "tensor", "dtype": "float64", "requires_grad": True,
                "value": drawn.tolist(), "inputs_from": str(path), "case": 0},
               {"name": "opts", "source": "example", "type": "tuple", "value": "('kept', 1)",
                "inputs_from": str(path), "case": 0}]
    job = {"module": "pkg.ops", "class": "Op", "seed": 0}
    args, why = real_packages_gradcheck.rebuild(records, torch, job, None)
    assert why == "" and torch.equal(args[0].detach(), drawn) and args[0].requires_grad  # marked as recorded
    assert args[1] == ("kept", 1)
    records[0]["value"] = (drawn + 1).tolist()
    assert real_packages_gradcheck.rebuild(records, torch, job, None) == (
        None, "x: the inputs file gave other values than gradcli recorded")


def test_a_float32_only_function_is_judged_by_its_label_not_by_torchs_float32_gradcheck():
    # torch_geometric's _TorchSPMM: sparse_mm_reduce takes float32 only; torch's gradcheck fails it there on
    # precision alone, its backward is exactly A^T w (verified by hand, recorded as truth "correct")
    float32 = [[{"name": "other", "source": "example", "type": "tensor", "dtype": "float32", "requires_grad": True}]]
    labelled = dict(ENTRY, truth="correct")
    row = classify(labelled, outcome("pass", inputs=float32), None, torch("fail"))
    assert (row["correct"], row["judged_by"], row["review"]) == (True, "truth", "torch fail below float64 (judged by the label)")
    assert summarize([row])["totals"]["design"]["false_pass"] == 0
    # without a label, or in float64, torch still decides
    assert classify(ENTRY, outcome("pass", inputs=float32), None, torch("fail"))["review"] == "false PASS?"
    assert classify(labelled, outcome("pass"), None, torch("fail"))["review"] == "false PASS?"
