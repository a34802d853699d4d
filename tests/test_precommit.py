""".pre-commit-hooks.yaml: the gradcli-check hook is well formed for pre-commit, and its entry, run
the way pre-commit runs it, passes a correct Function and refuses a wrong backward."""
import os
import re
import shlex
import subprocess
import sys
import textwrap
from importlib.metadata import distribution
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent  # the environment's console scripts, as in pre-commit's own env

GOOD = """
    from gradcli.autograd import Function


    class Double(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, grad_output):
            return grad_output * 2
"""


def parse_hooks(text: str) -> list:
    """The manifest's subset of YAML: a list of flat mappings whose values are scalars or [a, b] lists.
    Any other line fails the test, so this parser never silently misreads the file."""
    hooks = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        m = re.fullmatch(r"(- |  )([a-z_]+): (.+)", line)
        assert m, f".pre-commit-hooks.yaml:{number}: not understood: {line!r}"
        if m.group(1) == "- ":
            hooks.append({})
        value = m.group(3).strip()
        if value.startswith("["):
            value = [v.strip() for v in value.strip("[]").split(",")]
        elif value in ("true", "false"):
            value = value == "true"
        hooks[-1][m.group(2)] = value
    return hooks


def hook() -> dict:
    hooks = parse_hooks((ROOT / ".pre-commit-hooks.yaml").read_text())
    return next(h for h in hooks if h["id"] == "gradcli-check")


def run_like_pre_commit(h: dict, args: list, filenames: list, cwd: Path):
    """pre-commit runs ``entry + args`` (+ the changed files when pass_filenames) in the hook's env."""
    command = shlex.split(h["entry"]) + args + (filenames if h.get("pass_filenames", True) else [])
    env = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ['PATH']}")
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def test_the_hook_is_declared_as_pre_commit_needs_it():
    h = hook()
    assert {"id", "name", "entry", "language"} <= set(h)
    assert h["language"] == "python"  # pre-commit installs this repository (pyproject.toml) into the hook's env
    assert h["types"] == ["python"]
    # the entry's executable is one of this package's console scripts (pyproject's [project.scripts])
    scripts = {ep.name for ep in distribution("gradcli").entry_points if ep.group == "console_scripts"}
    assert shlex.split(h["entry"])[0] in scripts
    # a changed file without Functions must not fail the commit with "nothing collected": the hook
    # checks its configured paths, not the changed files
    assert h["pass_filenames"] is False


def test_the_entry_passes_a_correct_function_and_refuses_a_wrong_backward(tmp_path):
    ops = tmp_path / "ops"
    ops.mkdir()
    (ops / "good.py").write_text(textwrap.dedent(GOOD))
    (tmp_path / "notes.py").write_text("print('not an op')\n")  # a changed file with no Function in it
    done = run_like_pre_commit(hook(), ["ops/"], ["notes.py", "ops/good.py"], tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.rstrip().splitlines()[-1].startswith("1 passed in ")

    (ops / "bad.py").write_text(textwrap.dedent(GOOD).replace("Double", "Triple").replace("x * 2", "x * 3"))
    done = run_like_pre_commit(hook(), ["ops/"], ["ops/bad.py"], tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "FAIL  Triple  (ops/bad.py:5, backward at line 11)" in done.stdout
    assert "\x1b[" not in done.stdout  # --format plain: readable in pre-commit's log
