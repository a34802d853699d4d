"""Files checked where they live: inside packages (relative imports, a folder named like its package,
src-layouts, namespace packages, installed modules named by their dotted name), only files whose
syntax defines a Function imported, abstract bases skipped, folders walked like pytest collects."""
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from gradcli.check import imports, scan
from gradcli.check.paths import expand_paths
from gradcli.cli import main

PY = sys.executable
ROOT = Path(__file__).resolve().parents[1]

SQUARE = """
    class Square(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return helper(x)

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 2 * x * g
"""


def write(path, source=""):
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(source))
    return path


def run_check(*args, cwd=None):
    """`gradcli check ARGS --json` through CliRunner: (result, JSON report)."""
    import tempfile

    out = Path(tempfile.mkdtemp()) / "report.json"
    old = os.getcwd()
    if cwd:
        os.chdir(cwd)
    try:
        result = CliRunner().invoke(main, ["check", *map(str, args), "--format", "plain", "--json", str(out)])
    finally:
        os.chdir(old)
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    doc = json.loads(out.read_text()) if out.exists() else None
    return result, doc


def verdicts(doc):
    return {(Path(r["file"]).name, r["function"]): r["status"] for r in doc["results"]}


def relative_package(top):
    """pkg/__init__.py imports a helper relatively; pkg/ops.py uses it with ``from .util import``."""
    write(top / "pkg" / "__init__.py", "from .util import helper\n")
    write(top / "pkg" / "util.py", "def helper(x):\n    return x * x\n")
    return write(top / "pkg" / "ops.py", "from gradcli.autograd import Function\nfrom .util import helper\n" +
                 textwrap.dedent(SQUARE))


# ----- importing the way the package does --------------------------------------------------------
def test_a_package_with_relative_imports_is_imported_by_its_dotted_name(tmp_path):
    ops = relative_package(tmp_path)
    result, doc = run_check(ops)
    assert result.exit_code == 0, result.output
    assert verdicts(doc) == {("ops.py", "Square"): "pass"}
    plan = imports.plan_import(str(ops), 1, set())
    assert (plan.name, plan.kind, plan.root) == ("pkg.ops", "package", os.path.realpath(tmp_path))


def test_from_inside_the_package_folder_in_a_real_process(tmp_path):
    """``python -m gradcli`` from inside pkg/ puts pkg/ first on sys.path: it must not shadow pkg."""
    ops = relative_package(tmp_path)
    write(tmp_path / "pkg" / "pkg.py", "raise RuntimeError('pkg/pkg.py must never be imported as pkg')\n")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run([PY, "-m", "gradcli", "check", "ops.py", "--format", "plain"], cwd=ops.parent,
                          capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.splitlines()[-1].startswith("1 passed in ")


def test_a_file_whose_folder_has_the_package_name(tmp_path):
    """sparse/sparse.py importing ``sparse.utils``: with sparse/ first on sys.path, ``sparse`` would
    be sparse/sparse.py ("'sparse' is not a package")."""
    write(tmp_path / "sparse" / "__init__.py", "from sparse.sparse import Square\n")
    write(tmp_path / "sparse" / "utils.py", "def helper(x):\n    return x * x\n")
    path = write(tmp_path / "sparse" / "sparse.py",
                 "from gradcli.autograd import Function\nfrom sparse.utils import helper\n" + textwrap.dedent(SQUARE))
    result, doc = run_check(path)
    assert result.exit_code == 0, result.output
    assert verdicts(doc) == {("sparse.py", "Square"): "pass"}


def test_a_package_whose_init_needs_a_missing_dependency(tmp_path):
    """The file itself needs nothing of its package: it is loaded on its own (as before packages
    were imported); a file importing relatively cannot be, and reports the package's error."""
    write(tmp_path / "heavy" / "__init__.py", "import not_installed_dependency_xyz\n")
    write(tmp_path / "heavy" / "ops.py", "from gradcli.autograd import Function\nhelper = lambda x: x * x\n"
          + textwrap.dedent(SQUARE))
    write(tmp_path / "heavy" / "rel.py", "from gradcli.autograd import Function\nfrom .ops import helper\n"
          + textwrap.dedent(SQUARE).replace("Square", "RelSquare"))
    result, doc = run_check(tmp_path / "heavy")
    assert verdicts(doc) == {("ops.py", "Square"): "pass", ("rel.py", None): "error"}
    assert doc["results"][1]["message"] == ("ModuleNotFoundError: No module named 'not_installed_dependency_xyz' "
                                            f"({tmp_path / 'heavy' / '__init__.py'}:1)")


def test_src_layout(tmp_path):
    write(tmp_path / "proj" / "pyproject.toml", "[project]\nname = 'mypkg'\n")
    write(tmp_path / "proj" / "src" / "mypkg" / "__init__.py", "")
    write(tmp_path / "proj" / "src" / "mypkg" / "core.py", "def helper(x):\n    return x * x\n")
    write(tmp_path / "proj" / "src" / "mypkg" / "ops" / "__init__.py", "from .square import Square\n")
    write(tmp_path / "proj" / "src" / "mypkg" / "ops" / "square.py",
          "from gradcli.autograd import Function\nfrom mypkg.core import helper\nfrom .. import core\n"
          + textwrap.dedent(SQUARE))
    result, doc = run_check(tmp_path / "proj")
    assert result.exit_code == 0, result.output
    assert verdicts(doc) == {("square.py", "Square"): "pass"}  # __init__ re-exports Square: collected once


def test_namespace_package_without_init(tmp_path):
    write(tmp_path / "ns" / "sub" / "helpers.py", "def helper(x):\n    return x * x\n")
    path = write(tmp_path / "ns" / "sub" / "ops.py",
                 "from gradcli.autograd import Function\nfrom ns.sub.helpers import helper\nfrom . import helpers\n"
                 + textwrap.dedent(SQUARE))
    result, doc = run_check(path)
    assert result.exit_code == 0, result.output
    assert verdicts(doc) == {("ops.py", "Square"): "pass"}
    s = scan.scan_file(str(path))
    plan = imports.plan_import(str(path), s.relative_level, s.absolute_tops)
    assert (plan.name, plan.kind) == ("ns.sub.ops", "package")


def test_a_module_named_by_its_dotted_name(tmp_path, monkeypatch):
    site = tmp_path / "site"
    write(site / "instpkg" / "__init__.py", "")
    write(site / "instpkg" / "util.py", "def helper(x):\n    return x * x\n")
    write(site / "instpkg" / "inner" / "__init__.py", "")
    write(site / "instpkg" / "inner" / "mod.py",
          "from gradcli.autograd import Function\nfrom ..util import helper\n" + textwrap.dedent(SQUARE))
    monkeypatch.syspath_prepend(str(site))
    result, doc = run_check("instpkg.inner.mod::Square", cwd=tmp_path)
    assert result.exit_code == 0, result.output
    assert verdicts(doc) == {("mod.py", "Square"): "pass"}
    assert doc["results"][0]["file"] == os.path.join("site", "instpkg", "inner", "mod.py")  # relative to the cwd
    result, doc = run_check("instpkg", cwd=tmp_path)  # a package: its folder is walked
    assert result.exit_code == 0 and verdicts(doc) == {("mod.py", "Square"): "pass"}
    result, _ = run_check("instpkg.nothing_here", cwd=tmp_path)
    assert result.exit_code == 2
    assert result.output.splitlines()[-1] == (
        "Error: file or directory not found: instpkg.nothing_here (and no importable module has that name)")


def test_a_module_name_in_a_real_process(tmp_path):
    site = tmp_path / "site"
    write(site / "instmod.py", "from gradcli.autograd import Function\nhelper = lambda x: x * x\n"
          + textwrap.dedent(SQUARE))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), str(site)]))
    proc = subprocess.run([PY, "-m", "gradcli", "check", "instmod", "--format", "plain"], cwd=tmp_path,
                          capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Square" in proc.stdout and proc.stdout.splitlines()[-1].startswith("1 passed in ")
    proc = subprocess.run([PY, "-m", "gradcli", "check", "no_such_module_xyz"], cwd=tmp_path,
                          capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.splitlines()[-1] == (
        "Error: file or directory not found: no_such_module_xyz (and no importable module has that name)")


# ----- the syntax pre-scan and abstract bases --------------------------------------------------------
@pytest.mark.parametrize("source, found", [
    ("import torch\nclass A(torch.autograd.Function): pass\n", {"A": "torch"}),
    ("from torch.autograd import Function as F\nclass A(F): pass\n", {"A": "torch"}),
    ("from torch import autograd\nclass A(autograd.Function): pass\n", {"A": "torch"}),
    ("import torch.autograd as ag\nclass A(ag.Function): pass\n", {"A": "torch"}),
    ("import gradcli as torch\nclass A(torch.autograd.Function): pass\n", {"A": "gradcli"}),
    ("from gradcli.autograd import Function\nclass B(Function): pass\nclass C(B): pass\n",
     {"B": "gradcli", "C": "gradcli"}),
    ("import torch\nFn = torch.autograd.Function\nclass A(Fn): pass\n", {"A": "torch"}),
    ("try:\n    from torch.autograd import Function\nexcept ImportError:\n    Function = object\n"
     "class A(Function): pass\n", {"A": "torch"}),
    ("from sympy import Function\nclass A(Function): pass\n", {}),
    ("import torch\nclass A(torch.nn.Module): pass\n", {}),
    ("def make():\n    from torch.autograd import Function\n    class A(Function): pass\n", {}),
])
def test_scan_finds_function_classes_in_the_syntax(tmp_path, source, found):
    path = write(tmp_path / "m.py", source)
    assert scan.scan_file(str(path)).functions == found


def test_scan_follows_a_base_imported_from_another_file(tmp_path):
    write(tmp_path / "pkg" / "__init__.py", "from .base import Base\n")
    write(tmp_path / "pkg" / "base.py", "from torch.autograd import Function\nclass Base(Function): pass\n")
    a = write(tmp_path / "pkg" / "a.py", "from .base import Base\nclass A(Base): pass\n")
    b = write(tmp_path / "pkg" / "b.py", "from pkg import Base\nclass B(Base): pass\n")
    c = write(tmp_path / "pkg" / "c.py", "from . import base\nclass C(base.Base): pass\n")
    assert [scan.scan_file(str(p)).functions for p in (a, b, c)] == [{"A": "torch"}, {"B": "torch"}, {"C": "torch"}]


ABSTRACT = """
    from gradcli.autograd import Function

    class _GenericLoss(Function):
        @classmethod
        def forward(cls, ctx, x):
            ctx.save_for_backward(x)
            return cls.project(x)

        @classmethod
        def backward(cls, ctx, g):
            (x,) = ctx.saved_tensors
            return cls.project_grad(x) * g

    class SquareLoss(_GenericLoss):
        @classmethod
        def project(cls, x):
            return x * x

        @classmethod
        def project_grad(cls, x):
            return 2 * x

    class Stub(Function):
        @staticmethod
        def forward(ctx, x):
            "subclasses define it"
            raise NotImplementedError

        @staticmethod
        def backward(ctx, g):
            return g
"""


def test_abstract_bases_are_skips_saying_why_and_subclasses_are_checked(tmp_path):
    write(tmp_path / "losses.py", ABSTRACT)
    result, doc = run_check(tmp_path)
    assert result.exit_code == 0, result.output
    by_name = {r["function"]: r for r in doc["results"]}
    assert {n: r["status"] for n, r in by_name.items()} == {"_GenericLoss": "skip", "SquareLoss": "pass",
                                                             "Stub": "skip"}
    assert by_name["_GenericLoss"]["message"] == (
        "abstract base: forward uses cls.project, which only its subclasses define; not checked on its own "
        "(its subclasses SquareLoss are checked)")
    assert by_name["Stub"]["message"] == "abstract base: forward raises NotImplementedError; not checked on its own"


def test_an_abstract_base_whose_subclasses_live_in_another_module_of_its_package(tmp_path):
    base, losses = ABSTRACT.split("    class SquareLoss")
    write(tmp_path / "lossy" / "__init__.py", "from . import base, losses\n")
    write(tmp_path / "lossy" / "base.py", base)
    write(tmp_path / "lossy" / "losses.py", "from .base import _GenericLoss\n\nclass SquareLoss" +
          textwrap.dedent("    class SquareLoss" + losses).split("class SquareLoss", 1)[1].split("class Stub")[0])
    result, doc = run_check(tmp_path / "lossy")
    assert result.exit_code == 0, result.output
    assert verdicts(doc) == {("base.py", "_GenericLoss"): "skip", ("losses.py", "SquareLoss"): "pass"}
    assert doc["results"][0]["message"] == (
        "abstract base: forward uses cls.project, which only its subclasses define; not checked on its own")


def test_files_without_a_function_are_not_imported_when_a_folder_is_checked(tmp_path):
    write(tmp_path / "ops.py", "from gradcli.autograd import Function\nhelper = lambda x: x * x\n"
          + textwrap.dedent(SQUARE))
    write(tmp_path / "test_ops.py", "import pytest_plugin_that_is_not_installed\n")
    write(tmp_path / "broken_fn.py", "import not_installed_xyz\nfrom gradcli.autograd import Function\n"
          "class Broken(Function):\n    pass\n")
    result, doc = run_check(tmp_path)
    assert verdicts(doc) == {("ops.py", "Square"): "pass", ("broken_fn.py", None): "error"}
    assert doc["results"][0]["message"] == (
        f"ModuleNotFoundError: No module named 'not_installed_xyz' ({tmp_path / 'broken_fn.py'}:1)")
    assert result.exit_code == 3
    result, doc = run_check(tmp_path / "test_ops.py")  # named explicitly: imported, its error reported
    assert verdicts(doc) == {("test_ops.py", None): "error"}


def test_an_inherited_backward_is_reported_in_the_file_that_defines_it(tmp_path):
    write(tmp_path / "pkg" / "__init__.py", "")
    base = write(tmp_path / "pkg" / "base.py", """
        from gradcli.autograd import Function

        class WrongBackward(Function):
            @staticmethod
            def backward(ctx, g):
                (x,) = ctx.saved_tensors
                return 3 * x * g
    """)
    ops = write(tmp_path / "pkg" / "ops.py", """
        from .base import WrongBackward

        class Square(WrongBackward):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x * x
    """)
    result = CliRunner().invoke(main, ["check", str(ops), "--format", "github", "--no-exact"])
    assert result.exit_code == 1, result.output
    (annotation,) = [line for line in result.output.splitlines() if line.startswith("::error")]
    assert annotation.startswith(f"::error file={str(base).replace(':', '%3A')},line=6,")
    assert f"FAIL  Square  ({ops}:4, backward at {base}:6)" in result.output


# ----- walking folders like pytest ------------------------------------------------------------------
MARKER_FN = """
    import pathlib
    pathlib.Path(__file__).with_suffix(".imported").write_text("imported")
    from gradcli.autograd import Function

    class Marked(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return 2 * g
"""

NEVER_WALKED = ["setup.py", "conftest.py", "noxfile.py", "manage.py", "build/lib/m.py", "dist/m.py", "x.egg/m.py",
                "x.egg-info/m.py", ".hidden/m.py", "venv/m.py", "env/m.py", ".venv/m.py", "myenv/m.py",
                "conda/lib/python3.11/m.py", "lib/python3.11/site-packages/m.py", "dist-packages/m.py",
                "__pypackages__/3.11/lib/m.py", "node_modules/m.py", "__pycache__/m.py"]


def test_folders_are_walked_like_pytest_collects(tmp_path):
    for rel in NEVER_WALKED:
        write(tmp_path / "proj" / rel, MARKER_FN)
    write(tmp_path / "proj" / "myenv" / "pyvenv.cfg", "home = /usr/bin\n")
    write(tmp_path / "proj" / "conda" / "conda-meta" / "history", "")
    write(tmp_path / "proj" / "src" / "good.py", MARKER_FN)
    result, doc = run_check(tmp_path / "proj")
    assert result.exit_code == 0, result.output
    assert verdicts(doc) == {("good.py", "Marked"): "pass"}
    assert sorted(p.relative_to(tmp_path / "proj").as_posix() for p in (tmp_path / "proj").rglob("*.imported")) \
        == ["src/good.imported"]
    # named explicitly, each is read: a setup.py, a file in build/, an installed package's folder
    for named in ("setup.py", "build/lib/m.py", "lib/python3.11/site-packages"):
        result, doc = run_check(tmp_path / "proj" / named)
        assert result.exit_code == 0 and [r["status"] for r in doc["results"]] == ["pass"], named


def test_norecursedirs_in_pyproject_replaces_the_default(tmp_path):
    write(tmp_path / "pyproject.toml", "[tool.gradcli]\nnorecursedirs = ['skipme']\n")
    write(tmp_path / "build" / "m.py", MARKER_FN)
    write(tmp_path / "skipme" / "m.py", MARKER_FN)
    write(tmp_path / "venv" / "pyvenv.cfg", "")
    write(tmp_path / "venv" / "m.py", MARKER_FN)  # an environment stays skipped whatever the patterns
    result, doc = run_check(tmp_path)
    assert result.exit_code == 0, result.output
    assert [Path(r["file"]).parent.name for r in doc["results"]] == ["build"]


def test_symlinks_loops_dangling_and_out_of_tree_are_skipped_with_a_note(tmp_path):
    outside = write(tmp_path / "outside" / "far.py", MARKER_FN)
    tree = tmp_path / "tree"
    write(tree / "good.py", MARKER_FN)
    (tree / "sub").mkdir()
    os.symlink(tree, tree / "sub" / "loop")  # a folder link back up the tree
    os.symlink(tree / "missing.py", tree / "dangling.py")
    os.symlink(outside, tree / "linked_far.py")
    os.symlink(outside.parent, tree / "linked_dir")
    os.symlink(tree / "good.py", tree / "alias.py")  # inside the tree: the same file, checked once
    result, doc = run_check(tree, cwd=tmp_path)
    assert result.exit_code == 0, result.output
    assert verdicts(doc) == {("good.py", "Marked"): "pass"}
    assert not (outside.parent / "far.imported").exists()
    notes = sorted(line for line in result.stderr.splitlines() if line.startswith("note: "))
    assert notes == [
        f"note: skipped tree/dangling.py: a dangling symlink to {tree / 'missing.py'}",
        f"note: skipped tree/linked_dir: a symlink to {outside.parent}, outside tree",
        f"note: skipped tree/linked_far.py: a symlink to {outside}, outside tree",
        "note: skipped tree/sub/loop: a symlink loop",
    ]


def test_expand_paths_notes_and_explicit_flags(tmp_path, monkeypatch):
    write(tmp_path / "a.py", "from gradcli.autograd import Function\nclass A(Function):\n    pass\n")
    write(tmp_path / "plain.py", "x = 1\n")
    monkeypatch.chdir(tmp_path)
    notes = []
    assert [(i.path, i.explicit) for i in expand_paths([".", "plain.py"], notes)] == [("a.py", False),
                                                                                       ("plain.py", True)]
    assert notes == []


def test_a_script_beside_a_package_of_its_repository_name(tmp_path, monkeypatch):
    """repo ``myproj/`` holding the package ``myproj/myproj/`` (installed editable: a finder, no
    sys.path entry) and ``scripts/ops.py`` importing it: the repository folder is no namespace
    package ``myproj`` (that name is the installed package), so the file is a script."""
    import importlib.util

    repo = tmp_path / "myproj"
    init = write(repo / "myproj" / "__init__.py", "def helper(x):\n    return x * x\n")
    path = write(repo / "scripts" / "ops.py", "from gradcli.autograd import Function\nfrom myproj import helper\n"
                 + textwrap.dedent(SQUARE))

    class EditableFinder:  # what setuptools' editable installs put on sys.meta_path
        @staticmethod
        def find_spec(name, path=None, target=None):
            if name == "myproj":
                return importlib.util.spec_from_file_location(name, init, submodule_search_locations=[str(init.parent)])
            return None

    monkeypatch.setattr(sys, "meta_path", [EditableFinder, *sys.meta_path])
    s = scan.scan_file(str(path))
    assert imports.plan_import(str(path), s.relative_level, s.absolute_tops).kind == "script"
    result, doc = run_check(path)
    assert result.exit_code == 0 and verdicts(doc) == {("ops.py", "Square"): "pass"}
