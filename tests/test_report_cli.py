"""The report as a user meets it (issue 15): a mixed folder at 80 columns ends with its failures and
its reproduce lines run; a backward that raises points at the raising line and -v shows the user's
traceback; the progress bar's total is fixed before the first Function runs, and nothing reaches
stderr when it is not a terminal."""
import io
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from check_run import LIBS, check, check_json, need, write

ROOT = Path(__file__).resolve().parents[1]
PY = sys.executable

RAISING = """\
import {lib}
from {lib}.autograd import Function


def helper(g):
    return g * undefined_name


class RaisesDeep(Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, grad_output):
        scaled = grad_output * 2
        return helper(scaled)
"""

MIXED = {
    "good.py": """\
        from gradcli.autograd import Function


        class Square(Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x * x

            @staticmethod
            def backward(ctx, grad_output):
                (x,) = ctx.saved_tensors
                return 2 * x * grad_output


        class Cube(Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x * x * x

            @staticmethod
            def backward(ctx, grad_output):
                (x,) = ctx.saved_tensors
                return 3 * x * x * grad_output
        """,
    "wrong.py": """\
        from gradcli.autograd import Function


        class DoubledSquare(Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x * x

            @staticmethod
            def backward(ctx, grad_output):
                (x,) = ctx.saved_tensors
                return 4 * x * grad_output


        class Raises(Function):
            @staticmethod
            def forward(ctx, x):
                return x + 1

            @staticmethod
            def backward(ctx, grad_output):
                raise RuntimeError("no backward today")
        """,
}


@pytest.mark.parametrize("lib", LIBS)
def test_a_raising_backward_points_at_the_raising_line(tmp_path, lib):
    need(lib)
    path = write(tmp_path, "raising.py", RAISING, lib)
    result, doc = check_json(tmp_path, path)
    (r,) = doc["results"]
    assert r["status"] == "error" and result.exit_code == 3
    assert r["message"] == f"backward raised NameError: name 'undefined_name' is not defined ({path}:6)"
    raised = next(c for c in r["checks"][0]["checks"] if c["name"] == "backward")
    assert (raised["details"]["file"], raised["details"]["line"]) == (str(path), 6)
    assert [frame[1:] for frame in raised["details"]["frames"]] == [[17, "backward"], [6, "helper"]]
    assert f"ERROR  RaisesDeep  ({path}:6)" in result.output.splitlines()  # the panel title: file:line
    assert "Traceback" not in result.output  # -v shows it
    verbose = check("--format", "plain", path, "-v").output
    assert f'      File "{path}", line 17, in backward' in verbose.splitlines()
    assert f'      File "{path}", line 6, in helper' in verbose.splitlines()
    assert "    NameError: name 'undefined_name' is not defined" in verbose.splitlines()
    github = check("--format", "github", path).output
    assert f"::error file={path},line=6,title=gradcli check%3A RaisesDeep error::" in github


def mixed(tmp_path) -> Path:
    folder = tmp_path / "ops"
    folder.mkdir()
    for name, source in MIXED.items():
        write(folder, name, source)
    return folder


def test_at_80_columns_every_name_and_status_then_the_failures_and_the_reproduce_lines_run(tmp_path):
    folder = mixed(tmp_path)
    env = dict(os.environ, COLUMNS="80", LINES="24")
    env.pop("NO_COLOR", None)
    run = subprocess.run([PY, "-m", "gradcli", "check", "ops", "--format", "rich"], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 1 and run.stderr == ""  # stderr is no terminal here: no progress bar
    plain = __import__("re").sub(r"\x1b\[[0-9;]*m", "", run.stdout)
    lines = plain.splitlines()
    assert "ops/good.py  2 passed: Square, Cube" in lines
    assert "ops/wrong.py  1 failed, 1 error" in lines
    assert any(line.startswith("  FAIL   DoubledSquare — backward is 2× too large for input x") for line in lines)
    assert any(line.startswith("  ERROR  Raises — backward raised RuntimeError: no backward today") for line in lines)
    assert all(len(line) <= 80 for line in lines if not line.startswith(("    reproduce:", "    inputs:")))
    error = "ERROR ops/wrong.py::Raises — backward raised RuntimeError: no backward today (ops/wrong.py:23)"
    fail = "FAIL ops/wrong.py::DoubledSquare — backward is 2× too large for input x (factor 2)"
    assert lines[-4:-1] == ["short summary: 1 failed, 1 error", fail[:79] + "…", error[:79] + "…"]  # cut to 80
    assert lines[-1].startswith("2 passed, 1 failed, 1 error in ")
    repros = [line.split("reproduce: ", 1)[1] for line in lines if line.startswith("    reproduce: ")]
    assert len(repros) == 2
    for repro, code in zip(repros, (1, 3)):  # pasted as they are, they run the same check again
        argv = shlex.split(repro)
        assert argv[:2] == ["gradcli", "check"]
        again = subprocess.run([PY, "-m", "gradcli", *argv[1:], "--format", "plain"], cwd=tmp_path,
                               capture_output=True, text=True, timeout=300)
        assert again.returncode == code, again.stdout
        assert again.stdout.splitlines()[-1].startswith("1 failed in " if code == 1 else "1 error in ")


def test_progress_total_is_fixed_from_the_scan_and_names_the_running_function(tmp_path):
    from gradcli.check.discovery import compile_keyword, expand_paths
    from gradcli.report.check_output import Output

    folder = mixed(tmp_path)

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    out = Output("plain", 0, False, stderr=Terminal())
    items = expand_paths([str(folder)])
    out.plan(items, compile_keyword("not Cube"))
    try:
        assert out.planned == {items[0].path: 1, items[1].path: 2} and out.total == 3  # before anything ran
        assert out.progress is None  # fewer than 4: no bar
        clock = iter([100.0, 100.5, 114.0])
        out.clock = lambda: next(clock)
        out.started(items[1].path, "DoubledSquare")
        out.started(items[1].path, "Raises")
        assert out.now_running() == "wrong.py::DoubledSquare 14s (+1)"  # the longest-running one, and how long
    finally:
        if out.progress is not None:
            out.progress.stop()
    write(folder, "more.py", MIXED["good.py"])
    items = expand_paths([str(folder)])
    bar = Output("plain", 0, False, stderr=Terminal())
    bar.plan(items)  # 6 Functions: a bar, its total known before the first result
    try:
        assert bar.progress is not None and bar.progress.tasks[0].total == 6
        bar.file_done(items[0].path, [])  # more.py's import found nothing: the total says so, once
        assert bar.progress.tasks[0].total == 4
    finally:
        bar.progress.stop()
    quiet = Output("plain", 0, False, stderr=io.StringIO())  # not a terminal: nothing on stderr
    quiet.plan(items)
    assert quiet.progress is None and quiet.stderr.getvalue() == ""
