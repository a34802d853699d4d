"""The import drawing of specs/architecture.md holds: each room imports only what its row allows, and
no import circle runs between rooms (issue 23).

Imports are read from the source (``ast``), lazy ones inside functions included, and so are the
module names given as strings to ``importlib.import_module`` / ``import_paused``.
"""
import ast
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "gradcli"
STRING_IMPORTERS = {"import_module", "import_paused"}


def room_of(module):
    """``gradcli.check.diagnosis.hints`` -> ``check/``; ``gradcli.cli`` -> ``cli.py``; the facade -> None."""
    parts = module.split(".")
    if parts[0] != "gradcli" or len(parts) == 1:
        return None
    if (PACKAGE / parts[1]).is_dir():
        return parts[1] + "/"
    return parts[1] + ".py"


def module_name(path):
    rel = path.relative_to(ROOT).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def is_module(dotted):
    path = PACKAGE.parent.joinpath(*dotted.split("."))
    return path.is_dir() or path.with_suffix(".py").is_file()


def imported_modules(path):
    """Every gradcli module ``path`` imports: absolute, relative, and named in import_module strings."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    here = module_name(path).split(".")
    package = here if path.name == "__init__.py" else here[:-1]
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            found.add(target)  # `from pkg import name`: name is a module of its own only if the file exists
            found.update(f"{target}.{alias.name}" for alias in node.names if is_module(f"{target}.{alias.name}"))
        elif isinstance(node, ast.Call):
            name = getattr(node.func, "attr", None) or getattr(node.func, "id", None)
            if name in STRING_IMPORTERS and node.args and isinstance(node.args[0], ast.Constant) \
                    and isinstance(node.args[0].value, str):
                found.add(node.args[0].value)
    return {m for m in found if m.startswith("gradcli")}


def allowed_imports():
    """The table of specs/architecture.md: room -> the set of rooms it may import."""
    text = (ROOT / "specs" / "architecture.md").read_text(encoding="utf-8")
    table = {}
    for row in re.finditer(r"^\| `([\w_]+/|[\w_]+\.py)` \| [^|]+ \| ([^|]+) \|$", text, flags=re.M):
        room, allowed = row.group(1), row.group(2).strip()
        names = [] if allowed == "—" else [a.strip() for a in allowed.split(",")]
        table[room] = {(n + "/") if (PACKAGE / n).is_dir() else (n + ".py") for n in names}
    return table


def room_graph():
    edges = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        source = room_of(module_name(path))
        if source is None:
            continue
        for module in imported_modules(path):
            target = room_of(module)
            if target is not None and target != source:
                edges.setdefault(source, {}).setdefault(target, set()).add(str(path.relative_to(ROOT)))
    return edges


def test_every_room_is_in_the_table():
    rooms = {room_of(module_name(p)) for p in PACKAGE.rglob("*.py")} - {None}
    assert rooms - set(allowed_imports()) == set(), "rooms missing from specs/architecture.md"
    assert set(allowed_imports()) - rooms == set(), "rows in specs/architecture.md for rooms that do not exist"


def test_each_room_imports_only_what_its_row_allows():
    table = allowed_imports()
    wrong = [f"{source} imports {target} ({', '.join(sorted(files))})"
             for source, targets in room_graph().items() for target, files in targets.items()
             if target not in table.get(source, set())]
    assert wrong == []


def test_no_import_circle_between_rooms():
    graph = {source: set(targets) for source, targets in room_graph().items()}
    state, cycle = {}, []

    def visit(node, path):
        state[node] = "open"
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == "open":
                cycle.extend(path[path.index(nxt):] + [nxt] if nxt in path else [node, nxt])
                return True
            if nxt not in state and visit(nxt, path + [nxt]):
                return True
        state[node] = "done"
        return False

    for node in sorted(graph):
        if node not in state and visit(node, [node]):
            break
    assert cycle == []


def test_the_engine_imports_no_checker():
    # the strongest line of the table, stated on its own: autograd/ must not reach check/, symbolic/, expr/
    assert room_graph().get("autograd/", {}) == {}


@pytest.mark.parametrize("source, text, expected", [
    ("gradcli/autograd/x.py", "from gradcli.check import runner\n", {"gradcli.check", "gradcli.check.runner"}),
    ("gradcli/check/x.py", "def f():\n    from ..symbolic import trace\n",
     {"gradcli.symbolic", "gradcli.symbolic.trace"}),
    ("gradcli/check/x.py", "import importlib\nimportlib.import_module('gradcli.expr.parser')\n",
     {"gradcli.expr.parser"}),
])
def test_the_reader_sees_lazy_relative_and_string_imports(tmp_path, monkeypatch, source, text, expected):
    # the drawing is only as good as its reader: a lazy, relative or by-name import is an import
    fake_root = tmp_path
    path = fake_root / source
    path.parent.mkdir(parents=True)
    path.write_text(text)
    monkeypatch.setattr(sys.modules[__name__], "ROOT", fake_root)
    assert imported_modules(path) == expected
