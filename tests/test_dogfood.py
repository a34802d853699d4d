"""gradcli checks its own engine: `gradcli check gradcli/autograd` passes clean — every built-in op
with the inputs it declares (gradcli/autograd/ops/examples.py), graph nodes and configurable bases
left out by `gradcli_collect = False`. One test per file (xdist spreads them), the gradcli backend:
torch is not needed, and is not imported when it is installed."""
import re
import subprocess
import sys
from pathlib import Path

import pytest

import gradcli
from check_run import by_name, check, check_json, write

AUTOGRAD = Path(gradcli.__file__).parent / "autograd"
# the files that define built-in ops (the others hold none: the syntax pre-scan does not import them)
OP_FILES = {"ops/activation.py": 2, "ops/arithmetic.py": 8, "ops/elementwise.py": 36,
            "ops/indexing.py": 6, "ops/join.py": 6, "ops/linalg.py": 7, "ops/linalg_more.py": 2,
            "ops/pointwise.py": 10, "ops/reduce.py": 12, "ops/shape.py": 10, "ops/shaping.py": 3}
LEFT_OUT = {"inplace.py": ["CopySlices", "ViewOfBase"], "ops/elementwise.py": ["_Rounding"],
            "ops/pointwise.py": ["_Binary"]}


def test_the_whole_engine_is_collected_file_by_file():
    result = check(AUTOGRAD, "--collect-only")
    assert result.exit_code == 0, result.output
    listed = re.findall(r"^(\S+)::(\w+)  \(", result.output, re.M)
    per_file = {}
    for path, _name in listed:
        rel = Path(path).resolve().relative_to(AUTOGRAD.resolve()).as_posix()
        per_file[rel] = per_file.get(rel, 0) + 1
    assert per_file == OP_FILES  # the tests below cover the directory (inplace.py's two nodes are left out)
    assert f"{sum(OP_FILES.values())} Functions collected" in result.output
    names = {name for _path, name in listed}
    for left_out in LEFT_OUT.values():
        assert not names & set(left_out)
    # the marker is not inherited: the bases' subclasses are checked, and so is a scatter-add node
    assert {"Round", "Trunc", "Atan2", "Fmod", "Remainder", "IndexBackward"} <= names


@pytest.mark.parametrize("rel", sorted(OP_FILES))
def test_every_builtin_op_passes_its_own_check(tmp_path, rel):
    result, doc = check_json(tmp_path, AUTOGRAD / rel)
    assert result.exit_code == 0, result.output
    assert doc["summary"] == {"passed": OP_FILES[rel], "partial": 0, "failed": 0, "errors": 0, "skipped": 0,
                              "surrogates": 0}, result.output
    assert all(r["status"] == "pass" and not r["partial"] and not r["not_checked"] for r in doc["results"])
    assert not set(by_name(doc)) & set(LEFT_OUT.get(rel, []))
    assert {r["backend"] for r in doc["results"]} <= {"gradcli"}


def test_constants_are_python_numbers_and_indices_integers(tmp_path):
    """What used to fail: RSub/RDiv/RPow/Fill got a tensor for their constant ("backward returned None
    for other"), the index ops a float tensor for their index."""
    _, doc = check_json(tmp_path, f"{AUTOGRAD / 'ops/arithmetic.py'}::RSub", f"{AUTOGRAD / 'ops/shape.py'}::Fill",
                        f"{AUTOGRAD / 'ops/join.py'}::Gather")
    results = by_name(doc)
    assert [r["status"] for r in results.values()] == ["pass", "pass", "pass"]
    rsub = results["RSub"]["inputs"]
    assert [(s[1]["name"], s[1]["source"], s[1]["type"], s[1]["value"]) for s in rsub] == [
        ("other", "example", "float", 2.5), ("other", "example", "int", -1)]
    assert [s[0]["requires_grad"] for s in rsub] == [True, True]  # the tensor still gets its gradient checked
    assert results["Fill"]["inputs"][0][1]["value"] == 1.5
    index = results["Gather"]["inputs"][0][2]
    assert (index["type"], index["dtype"], index["requires_grad"]) == ("tensor", "int64", False)


def test_every_reduction_form_is_an_input_set(tmp_path):
    _, doc = check_json(tmp_path, f"{AUTOGRAD / 'ops/reduce.py'}::Sum")
    sets = by_name(doc)["Sum"]["inputs"]
    assert [[(i["name"], i.get("value")) for i in s[1:]] for s in sets] == [
        [], [("dim", 1)], [("dim", -1), ("keepdim", True)], [("dim", [0, 1])], [("dim", [0]), ("keepdim", True)]]


def test_gradcli_collect_false_leaves_a_class_out_but_not_its_subclasses(tmp_path):
    path = write(tmp_path, "nodes.py", """
        import gradcli

        class Node(gradcli.autograd.Function):
            gradcli_collect = False  # forward only wraps what the caller computed

            @staticmethod
            def forward(ctx, x):
                return x * 1

            @staticmethod
            def backward(ctx, g):
                return g * 2

        class Scaled(gradcli.autograd.Function):
            gradcli_collect = False
            factor = None

            @classmethod
            def forward(cls, ctx, x):
                return x * cls.factor

            @classmethod
            def backward(cls, ctx, g):
                return g * cls.factor

        class Triple(Scaled):
            factor = 3.0

        class Off(gradcli.autograd.Function):
            gradcli_collect = 0  # only False leaves a class out

            @staticmethod
            def forward(ctx, x):
                return x.exp()

            @staticmethod
            def backward(ctx, g):
                return g
    """)
    listed = check(path, "--collect-only")
    assert re.findall(r"::(\w+)  \(", listed.output) == ["Triple", "Off"]
    assert "2 Functions collected" in listed.output
    result, doc = check_json(tmp_path, path)
    assert {r["function"]: r["status"] for r in doc["results"]} == {"Triple": "pass", "Off": "fail"}
    assert result.exit_code == 1
    missing = check(f"{path}::Node")
    assert missing.exit_code == 2
    assert "not found" in missing.output and "Triple" in missing.output


def test_the_engine_imports_neither_the_checker_nor_torch_for_its_example_inputs():
    """The inputs are plain engine code (issue 23: the engine does not depend on the checker)."""
    probe = ("import sys, gradcli.autograd; from gradcli.autograd.ops import reduce; reduce.Sum.example_inputs(); "
             "print(sorted(m for m in sys.modules if m == 'torch' or m.startswith('gradcli.check')))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
