"""Discovery for `gradcli check`: paths, selectors, -k, loading files and collecting Functions."""
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from gradcli.check import discovery
from gradcli.check.discovery import UsageError, compile_keyword, expand_paths

PY = sys.executable


def write(path, source=""):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(source))
    return path


def collect_file(path):
    item = expand_paths([str(path)])[0]
    module = discovery.load_module(item)
    assert not isinstance(module, discovery.LoadError), module
    return discovery.collect(module, item)


# ----- paths ----------------------------------------------------------------------------------
def test_directories_recurse_skipping_hidden_and_virtualenvs(tmp_path, monkeypatch):
    for rel in ["b.py", "a.py", "sub/c.py", "sub/deeper/d.py", "notes.txt", ".hidden/e.py", ".f.py",
                "venv/g.py", "env/h.py", "__pycache__/i.py", "node_modules/j.py", "pkg.egg-info/k.py",
                "myenv/l.py", "myenv/pyvenv.cfg"]:
        write(tmp_path / rel, "from gradcli.autograd import Function\nclass F(Function):\n    pass\n")
    monkeypatch.chdir(tmp_path)
    assert [i.path for i in expand_paths(["."])] == ["a.py", "b.py", os.path.join("sub", "c.py"),
                                                     os.path.join("sub", "deeper", "d.py")]
    # a file named explicitly is read even inside a skipped directory
    assert [i.path for i in expand_paths([".hidden/e.py"])] == [os.path.join(".hidden", "e.py")]


def test_selectors_merge_per_file(tmp_path, monkeypatch):
    write(tmp_path / "ops.py", "import torch\nclass A(torch.autograd.Function):\n    pass\n")
    monkeypatch.chdir(tmp_path)
    (item,) = expand_paths(["ops.py::A", "ops.py::B"])
    assert item.names == ["A", "B"]
    (item,) = expand_paths(["ops.py::A", "ops.py"])  # the whole file wins
    assert item.names is None
    (item,) = expand_paths([".", "ops.py::A"])  # listed once
    assert item.names is None


@pytest.mark.parametrize("arg, message", [
    ("missing.py", "file or directory not found: missing.py"),
    ("notes.txt", "not a Python file: notes.txt"),
    ("sub::A", "a ::Name selector needs a file, not a directory: sub::A"),
    ("ops.py::", "bad selector 'ops.py::'"),
])
def test_bad_paths_are_usage_errors(tmp_path, monkeypatch, arg, message):
    write(tmp_path / "ops.py")
    write(tmp_path / "notes.txt")
    (tmp_path / "sub").mkdir()
    monkeypatch.chdir(tmp_path)
    with pytest.raises(UsageError) as err:
        expand_paths([arg])
    assert str(err.value).startswith(message)


# ----- -k --------------------------------------------------------------------------------------
@pytest.mark.parametrize("expr, selected", [
    ("exp", ["Exp", "BuggyExp"]),
    ("EXP", ["Exp", "BuggyExp"]),
    ("exp and not buggy", ["Exp"]),
    ("buggy or sigmoid", ["BuggyExp", "Sigmoid", "BuggySigmoid"]),
    ("not (exp or sigmoid)", ["Linear"]),
    ("buggy_ops.py", ["BuggyExp", "BuggySigmoid"]),  # the file name matches too
    ("buggy_ops.py::BuggyExp", ["BuggyExp"]),
])
def test_keyword_expressions(expr, selected):
    names = {"Exp": "ops.py", "BuggyExp": "buggy_ops.py", "Sigmoid": "ops.py", "BuggySigmoid": "buggy_ops.py",
             "Linear": "layers.py"}
    match = compile_keyword(expr)
    assert [n for n, f in names.items() if match([n, f, f"{f}::{n}"])] == selected


@pytest.mark.parametrize("expr, message", [
    ("", "empty -k expression"),
    ("and", "expected a name before 'and'"),
    ("exp and", "expected a name at the end"),
    ("(exp", "missing ')'"),
    ("exp)", "unexpected ')'"),
    ("exp sigmoid", "unexpected 'sigmoid'"),
])
def test_bad_keyword_expressions(expr, message):
    with pytest.raises(UsageError, match=message.replace("(", r"\(").replace(")", r"\)")):
        compile_keyword(expr)


# ----- collecting --------------------------------------------------------------------------------
STYLES = """
    import gradcli as torch
    from gradcli.autograd import Function
    from helper import Imported          # a Function defined elsewhere: not collected

    class _Base(Function):               # abstract helper: no forward of its own
        @staticmethod
        def backward(ctx, g):
            return g

    class Static(_Base):
        @staticmethod
        def forward(ctx, x):
            return x * 1

    class Klass(Function):
        @classmethod
        def forward(cls, ctx, x, y):
            return x * y
        @classmethod
        def backward(cls, ctx, g):
            return g, g

    class Setup(Function):
        @staticmethod
        def forward(x):
            return x * 1
        @staticmethod
        def setup_context(ctx, inputs, output):
            pass
        @staticmethod
        def backward(ctx, g):
            return g

    class Legacy(torch.autograd.Function):
        def forward(self, input_x):
            return input_x * 1
        def backward(self, grad_output):
            return grad_output

    class ForwardOnly(Function):         # not a base of anything: checked (its backward is missing)
        @staticmethod
        def forward(ctx, x):
            return x * 1

    class NotAFunction:
        def forward(self, x):
            return x
"""


def test_collects_functions_defined_in_the_file(tmp_path):
    write(tmp_path / "helper.py", """
        from gradcli.autograd import Function
        class Imported(Function):
            @staticmethod
            def forward(ctx, x):
                return x
            @staticmethod
            def backward(ctx, g):
                return g
    """)
    path = write(tmp_path / "ops.py", STYLES)
    found = [(t.name, t.style, t.backend, t.line, t.backward_line) for t in collect_file(path)]
    assert found == [
        ("Static", "static", "gradcli", 11, 8),  # backward inherited from the helper; def lines
        ("Klass", "classmethod", "gradcli", 16, 21),
        ("Setup", "setup_context", "gradcli", 24, 32),
        ("Legacy", "legacy", "gradcli", 35, 38),
        ("ForwardOnly", "static", "gradcli", 41, None),
    ]
    params = {t.name: t.info().params for t in collect_file(path)}
    assert params == {"Static": ["x"], "Klass": ["x", "y"], "Setup": ["x"], "Legacy": ["input_x"],
                      "ForwardOnly": ["x"]}


def test_gradcli_files_never_import_torch(tmp_path):
    path = write(tmp_path / "ops.py", STYLES)
    write(tmp_path / "helper.py", "from gradcli.autograd import Function\nImported = Function\n")
    code = ("import sys; from gradcli.check import discovery as d; it = d.expand_paths([sys.argv[1]])[0]; "
            "print(len(d.collect(d.load_module(it), it)), 'torch' in sys.modules)")
    out = subprocess.run([PY, "-c", code, str(path)], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["5", "False"]


def test_torch_functions_are_collected_on_the_torch_backend(tmp_path):
    pytest.importorskip("torch")
    path = write(tmp_path / "t.py", """
        import torch
        class Square(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * x
            @staticmethod
            def backward(ctx, g):
                return 2 * g
        class Old(torch.autograd.Function):
            def forward(self, x):
                return x
            def backward(self, g):
                return g
    """)
    assert [(t.name, t.style, t.backend) for t in collect_file(path)] == [
        ("Square", "static", "torch"), ("Old", "legacy", "torch")]


@pytest.mark.parametrize("source, message, line", [
    ("x = 1\ny = 1 / 0\n", "ZeroDivisionError: division by zero ({path}:2)", 2),
    ("def f(:\n    pass\n", "SyntaxError: invalid syntax ({path}:1)", 1),
    ("import sys\nsys.exit(4)\n", "SystemExit: sys.exit(4) called ({path}:2)", 2),
    ("import no_such_module_xyz\n", "ModuleNotFoundError: No module named 'no_such_module_xyz' ({path}:1)", 1),
    ("def f():\n    raise KeyError('k')\n\nf()\n", "KeyError: 'k' ({path}:2)", 2),
])
def test_import_errors_name_the_exception_and_line(tmp_path, monkeypatch, source, message, line):
    write(tmp_path / "bad.py", source)
    monkeypatch.chdir(tmp_path)
    (item,) = expand_paths(["bad.py"])
    err = discovery.load_module(item)
    assert isinstance(err, discovery.LoadError) and not err.skip
    assert (err.message, err.line) == (message.format(path="bad.py"), line)
    assert err.traceback.strip().splitlines()[-1].startswith(message.split(":")[0] + ":")
    assert "gradcli" not in err.traceback  # gradcli's own frames are left out


def test_missing_torch_is_a_skip(tmp_path, monkeypatch):
    path = write(tmp_path / "t.py", "import torch\n")
    monkeypatch.setitem(sys.modules, "torch", None)  # as if torch were not installed
    (item,) = expand_paths([str(path)])
    err = discovery.load_module(item)
    assert err.skip and err.message == "needs PyTorch, which is not installed (pip install torch): not checked"


def test_select_by_name_and_keyword(tmp_path):
    path = write(tmp_path / "ops.py", STYLES)
    write(tmp_path / "helper.py", "from gradcli.autograd import Function\nImported = Function\n")
    item = expand_paths([f"{path}::Klass", f"{path}::Nope", f"{path}::Setup"])[0]
    targets = collect_file(path)
    chosen, deselected, missing = discovery.select(targets, item, compile_keyword("not setup"))
    assert [t.name for t in chosen] == ["Klass"] and deselected == 1 and missing == ["Nope"]


def test_gradclis_own_ops_are_collected_like_user_functions():
    """gradcli's ops are imported by their dotted names (gradcli.autograd.ops.*) and are Functions written
    with the public API: they are collected; only the Function base class itself is the framework's."""
    from click.testing import CliRunner

    from gradcli.cli import main

    root = Path(__file__).resolve().parents[1]
    result = CliRunner().invoke(main, ["check", str(root / "gradcli" / "autograd" / "ops" / "elementwise.py"),
                                       "--collect-only"])
    assert result.exit_code == 0, result.output
    assert "elementwise.py::Maximum  (static, gradcli)" in result.output
