"""Inputs for Functions the user cannot edit: ``--inputs-from FILE.py`` and ``[tool.gradcli]`` in
pyproject.toml (specs/check.md §2a)."""
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from gradcli.check.config import find_config
from gradcli.check.paths import UsageError
from gradcli.cli import main

PY = sys.executable
ROOT = Path(__file__).resolve().parents[1]

# a Function automatic inputs cannot serve: 3x4 @ 3x4 does not multiply
MATMUL = """
    from gradcli.autograd import Function

    class MatMul(Function):
        @staticmethod
        def forward(ctx, a, b):
            ctx.save_for_backward(a, b)
            return a @ b

        @staticmethod
        def backward(ctx, g):
            a, b = ctx.saved_tensors
            return g @ b.T, a.T @ g
"""


def write(path, source=""):
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(source))
    return path


def run_check(tmp_path, *args):
    out = tmp_path / "_report.json"
    result = CliRunner().invoke(main, ["check", *map(str, args), "--format", "plain", "--json", str(out)])
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result, (json.loads(out.read_text()) if out.exists() else None)


def shapes(doc):
    return [[rec["shape"] for rec in case] for case in doc["results"][0]["inputs"]]


def test_without_inputs_the_matmul_gets_shapes_inferred_from_its_source(tmp_path):
    """The baseline the inputs files below replace: `a @ b` makes gradcli choose fitting shapes."""
    path = write(tmp_path / "mm" / "ops.py", MATMUL)
    result, doc = run_check(tmp_path, path)
    assert result.exit_code == 0 and doc["results"][0]["status"] == "pass"
    assert shapes(doc) == [[[3, 4], [4, 5]]]


@pytest.mark.parametrize("inputs_source", [
    # INPUTS keyed by module.Class: a callable returning one tuple
    """
    import gradcli
    INPUTS = {"ops.MatMul": lambda: (gradcli.randn(2, 3, dtype=gradcli.float64), gradcli.randn(3, 4, dtype=gradcli.float64))}
    """,
    # a function named after the class, returning a list of input sets
    """
    import gradcli
    def MatMul():
        return [(gradcli.ones(2, 3, dtype=gradcli.float64), gradcli.ones(3, 4, dtype=gradcli.float64)),
                (gradcli.ones(1, 5, dtype=gradcli.float64), gradcli.ones(5, 2, dtype=gradcli.float64))]
    """,
    # keyed by the bare class name: --input-style SPEC strings
    """
    INPUTS = {"MatMul": ["a=2x3", "b=3x4"]}
    """,
])
def test_an_inputs_file_supplies_the_inputs(tmp_path, inputs_source):
    path = write(tmp_path / "mm" / "ops.py", MATMUL)
    inputs = write(tmp_path / "my_inputs.py", inputs_source)
    result, doc = run_check(tmp_path, path, "--inputs-from", inputs)
    assert result.exit_code == 0, result.output
    assert doc["results"][0]["status"] == "pass"
    got = shapes(doc)
    assert got in ([[[2, 3], [3, 4]]], [[[2, 3], [3, 4]], [[1, 5], [5, 2]]])
    sources = {rec["source"] for case in doc["results"][0]["inputs"] for rec in case}
    assert sources == ({"cli"} if "a=2x3" in inputs_source else {"example"})


def test_the_reproduce_line_names_the_inputs_file(tmp_path):
    path = write(tmp_path / "ops.py", MATMUL.replace("return g @ b.T, a.T @ g", "return g @ b.T, 2 * a.T @ g"))
    inputs = write(tmp_path / "inp.py", """
        import gradcli
        def MatMul():
            return gradcli.ones(2, 3, dtype=gradcli.float64), gradcli.ones(3, 4, dtype=gradcli.float64)
    """)
    result, doc = run_check(tmp_path, path, "--inputs-from", inputs)
    assert result.exit_code == 1 and doc["results"][0]["status"] == "fail"
    assert [rec["inputs_from"] for rec in doc["results"][0]["inputs"][0]] == [str(inputs)] * 2
    (line,) = [x.strip() for x in result.output.splitlines() if x.strip().startswith("reproduce:")]
    assert line == f"reproduce: gradcli check {path}::MatMul --seed 0 --inputs-from {inputs}"


def test_a_class_with_its_own_example_inputs_keeps_them(tmp_path):
    path = write(tmp_path / "ops.py", MATMUL + """
        @staticmethod
        def example_inputs():
            import gradcli
            return gradcli.ones(4, 2, dtype=gradcli.float64), gradcli.ones(2, 1, dtype=gradcli.float64)
    """)
    inputs = write(tmp_path / "inp.py", 'INPUTS = {"MatMul": ["a=2x3", "b=3x4"]}\n')
    result, doc = run_check(tmp_path, path, "--inputs-from", inputs)
    assert result.exit_code == 0 and shapes(doc) == [[[4, 2], [2, 1]]]


def test_the_class_imported_into_the_inputs_file_is_not_an_inputs_function(tmp_path):
    """``from ops import MatMul`` binds the class under its own name: not a function giving inputs."""
    path = write(tmp_path / "lib" / "ops.py", MATMUL)
    inputs = write(tmp_path / "inp.py", f"""
        import sys
        sys.path.insert(0, {str(path.parent)!r})
        from ops import MatMul
        INPUTS = {{"MatMul": ["a=1x2", "b=2x2"]}}
    """)
    result, doc = run_check(tmp_path, path, "--inputs-from", inputs)
    assert result.exit_code == 0, result.output
    assert shapes(doc) == [[[1, 2], [2, 2]]]


def test_an_inputs_file_that_fails_to_import_is_an_error_naming_it(tmp_path):
    path = write(tmp_path / "ops.py", MATMUL)
    inputs = write(tmp_path / "bad_inputs.py", "x = 1\ny = x / 0\n")
    result, doc = run_check(tmp_path, path, "--inputs-from", inputs)
    assert result.exit_code == 3
    assert doc["results"][0]["status"] == "error"
    assert doc["results"][0]["message"] == (
        f"the inputs file {inputs} failed to import: ZeroDivisionError: division by zero ({inputs}:2)")


def test_inputs_from_must_be_a_python_file(tmp_path):
    path = write(tmp_path / "ops.py", MATMUL)
    notes = write(tmp_path / "inputs.txt", "")
    result = CliRunner().invoke(main, ["check", str(path), "--inputs-from", str(notes)])
    assert result.exit_code == 2
    assert result.output.splitlines()[-1] == f"Error: --inputs-from takes a Python file: {notes}"


# ----- pyproject.toml ------------------------------------------------------------------------------
def test_pyproject_inputs_table_keyed_by_module_and_class(tmp_path):
    write(tmp_path / "pyproject.toml", """
        [project]
        name = "demo"

        [tool.gradcli.inputs]
        "mm.ops.MatMul" = ["a=2x3", "b=float64[3,5]@(1,2)"]
    """)
    write(tmp_path / "mm" / "__init__.py", "")
    path = write(tmp_path / "mm" / "ops.py", MATMUL)
    result, doc = run_check(tmp_path, path)
    assert result.exit_code == 0, result.output
    assert shapes(doc) == [[[2, 3], [3, 5]]]
    b = doc["results"][0]["inputs"][0][1]
    assert b["spec"] == "float64[3,5]@(1,2)" and all(1 <= v < 2 for row in b["value"] for v in row)


def test_pyproject_inputs_from_is_relative_to_the_pyproject(tmp_path):
    write(tmp_path / "pyproject.toml", '[tool.gradcli]\ninputs-from = "tools/gradcli_inputs.py"\n')
    write(tmp_path / "tools" / "gradcli_inputs.py", 'INPUTS = {"MatMul": ["a=3x2", "b=2x2"]}\n')
    path = write(tmp_path / "deep" / "er" / "ops.py", MATMUL)
    result, doc = run_check(tmp_path, path)
    assert result.exit_code == 0, result.output
    assert shapes(doc) == [[[3, 2], [2, 2]]]


def test_the_first_pyproject_with_a_gradcli_table_walking_up(tmp_path):
    write(tmp_path / "pyproject.toml", '[tool.gradcli]\nnorecursedirs = ["x"]\n')
    write(tmp_path / "sub" / "pyproject.toml", '[project]\nname = "no-table-here"\n')
    config = find_config([str(tmp_path / "sub")])
    assert config.path == str(tmp_path / "pyproject.toml") and config.norecursedirs == ("x",)
    assert find_config([str(tmp_path.parent)]).path is None


@pytest.mark.parametrize("toml, message", [
    ('[tool.gradcli.inputs]\n"MatMul" = ["a=3y4"]\n',
     "[tool.gradcli] inputs 'MatMul': cannot read SPEC '3y4'"),
    ('[tool.gradcli]\ninputs-from = "nope.py"\n', "[tool.gradcli] inputs-from: not a Python file: "),
    ('[tool.gradcli]\nnorecursedirs = 3\n', "[tool.gradcli] norecursedirs: expected a list of folder patterns"),
    ('[tool.gradcli\n', "not valid TOML"),
])
def test_bad_configuration_is_a_one_line_usage_error(tmp_path, toml, message):
    write(tmp_path / "pyproject.toml", toml)
    path = write(tmp_path / "ops.py", MATMUL)
    with pytest.raises(UsageError, match="^" + __import__("re").escape(f"{tmp_path / 'pyproject.toml'}: {message}")):
        find_config([str(path)])
    result = CliRunner().invoke(main, ["check", str(path)])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert result.output.splitlines()[-1].startswith(f"Error: {tmp_path / 'pyproject.toml'}: ")


def test_an_unknown_key_is_a_warning(tmp_path):
    write(tmp_path / "pyproject.toml", '[tool.gradcli]\nshape-of-things = "3x4"\n')
    path = write(tmp_path / "ops.py", MATMUL)
    result, _ = run_check(tmp_path, path)
    assert result.exit_code == 0
    assert (f"warning: {tmp_path / 'pyproject.toml'}: [tool.gradcli] shape-of-things: unknown key, ignored"
            in result.stderr.splitlines())


# ----- torch Functions, and a real process ------------------------------------------------------------
def test_an_inputs_file_for_a_torch_function_in_a_real_process(tmp_path):
    pytest.importorskip("torch")
    write(tmp_path / "thirdparty" / "__init__.py", "")
    write(tmp_path / "thirdparty" / "losses.py", """
        import torch

        class PickLoss(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x, index):
                ctx.save_for_backward(index)
                ctx.shape = x.shape
                return x.gather(1, index.unsqueeze(1)).sum()

            @staticmethod
            def backward(ctx, g):
                (index,) = ctx.saved_tensors
                grad = torch.zeros(ctx.shape, dtype=g.dtype)
                grad.scatter_(1, index.unsqueeze(1), 1.0)
                return grad * g, None
    """)
    inputs = write(tmp_path / "my_inputs.py", """
        import torch

        def PickLoss():
            return torch.randn(4, 3, dtype=torch.float64, requires_grad=True), torch.tensor([0, 2, 1, 2])
    """)
    out = tmp_path / "report.json"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run([PY, "-m", "gradcli", "check", "thirdparty", "--inputs-from", str(inputs), "--json",
                           str(out), "--format", "plain"], cwd=tmp_path, capture_output=True, text=True, env=env,
                          timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (result,) = json.loads(out.read_text())["results"]
    assert (result["function"], result["backend"], result["status"]) == ("PickLoss", "torch", "pass")
    x, index = result["inputs"][0]
    assert (x["shape"], x["requires_grad"], index["dtype"], index["value"]) == ([4, 3], True, "int64", [0, 2, 1, 2])


def test_an_inputs_file_named_after_the_package_it_imports_does_not_shadow_it(tmp_path):
    """`--inputs-from norse.py` next to nothing: its folder goes at the END of sys.path, so the installed
    package `scales` (imported only inside the inputs file) is found, not the inputs file `scales.py` itself.
    With the folder in front, `import scales.values` failed: "'scales' is not a package"."""
    write(tmp_path / "site" / "scales" / "__init__.py", "")
    write(tmp_path / "site" / "scales" / "values.py", "FACTOR = 2.0\n")
    write(tmp_path / "site" / "scaled" / "__init__.py", "")
    write(tmp_path / "site" / "scaled" / "ops.py", """
        from gradcli.autograd import Function

        class Scale(Function):
            @staticmethod
            def forward(ctx, x, factor):
                ctx.factor = factor
                return x * factor

            @staticmethod
            def backward(ctx, g):
                return g * ctx.factor, None
    """)
    inputs = write(tmp_path / "mine" / "scales.py", """
        import gradcli

        def Scale():
            from scales.values import FACTOR  # the installed package, not this file
            return gradcli.ones(2, 3, dtype=gradcli.float64), FACTOR
    """)
    out = tmp_path / "report.json"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), str(tmp_path / "site")]))
    proc = subprocess.run([PY, "-m", "gradcli", "check", "scaled.ops", "--inputs-from", str(inputs), "--json",
                           str(out), "--format", "plain"], cwd=tmp_path, capture_output=True, text=True, env=env,
                          timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (result,) = json.loads(out.read_text())["results"]
    assert (result["function"], result["status"]) == ("Scale", "pass")
    x, factor = result["inputs"][0]
    assert (x["shape"], factor["type"], factor["value"]) == ([2, 3], "float", 2.0)


def test_without_a_toml_reader_the_table_is_ignored_with_a_warning(tmp_path, monkeypatch):
    """Python 3.10 without tomli: the run goes on, the user is told why the table had no effect."""
    from gradcli.check import config as config_module

    write(tmp_path / "pyproject.toml", '[tool.gradcli.inputs]\n"MatMul" = ["a=2x3", "b=3x4"]\n')
    monkeypatch.setattr(config_module, "_toml_loader", lambda: None)
    config = find_config([str(tmp_path)])
    assert config.inputs == {} and config.warnings == [
        f"{tmp_path / 'pyproject.toml'}: [tool.gradcli] ignored: reading TOML on Python 3.10 needs tomli "
        f"(pip install tomli)"]
