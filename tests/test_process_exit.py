"""The console entry point ``gradcli.cli.run``: a quick exit (os._exit) only after a command that wrote
everything and ran no user code in this process; output and report files complete; exit codes kept.
Also the helpers behind the start-up figures: GC-paused imports and the checker warm-up."""
import gc
import json
import math
import subprocess
import sys
import textwrap

import pytest

from gradcli import cli
from gradcli.heavy_import import import_paused

PYTHON = sys.executable


class _Exited(Exception):
    def __init__(self, code):
        self.code = code


@pytest.fixture
def exits(monkeypatch):
    """Replace os._exit: a quick exit raises _Exited(code) instead of ending the test process."""
    import os

    real_exit, test_process = os._exit, os.getpid()

    def fake_exit(code):
        if os.getpid() != test_process:  # a forked child of the command (engine, budget): a real exit
            real_exit(code)
        raise _Exited(code)

    monkeypatch.setattr(os, "_exit", fake_exit)
    monkeypatch.setattr(cli, "_quick_exit", False)


def run_cli(monkeypatch, *args):
    monkeypatch.setattr(sys, "argv", ["gradcli", *args])
    cli.run()


def test_diff_leaves_quickly_with_its_exit_code(exits, monkeypatch, capsys):
    with pytest.raises(_Exited) as stop:
        run_cli(monkeypatch, "diff", "x**3", "--at", "x=2", "--format", "json")
    assert stop.value.code == 0
    doc = json.loads(capsys.readouterr().out)  # everything was flushed before leaving
    assert doc["gradient"] == {"x": "3*x**2"} and doc["points"][0]["gradient"] == {"x": 12.0}


def test_diff_disagreement_leaves_quickly_with_exit_1(exits, monkeypatch, capsys):
    with pytest.raises(_Exited) as stop:  # relu at its kink: exit 1, "not differentiable"
        run_cli(monkeypatch, "diff", "relu(x)", "--at", "x=0", "--format", "plain")
    assert stop.value.code == 1
    assert "not differentiable at x=0" in capsys.readouterr().out


def test_diff_usage_error_leaves_quickly_with_exit_2(exits, monkeypatch, capsys):
    with pytest.raises(_Exited) as stop:   # the worker found the error; this process only prints it
        run_cli(monkeypatch, "diff", "x+", "--format", "plain")
    assert stop.value.code == 2
    assert capsys.readouterr().err == "error: unexpected end of expression after '+' at column 3 in expression 'x+'\n"


@pytest.mark.parametrize("args, code", [
    (["--help"], 0),                             # click's own exit
    (["check", "--no-such-option"], 2),
])
def test_other_exits_are_ordinary_system_exits(exits, monkeypatch, args, code):
    with pytest.raises(SystemExit) as stop:
        run_cli(monkeypatch, *args)
    assert stop.value.code == code


def test_check_in_process_without_isolation_never_leaves_quickly(exits, monkeypatch, tmp_path):
    # with user code imported into this process (no fork), atexit handlers and buffers are the user's: keep them
    import gradcli.check.runner as runner

    path = tmp_path / "op.py"
    path.write_text(textwrap.dedent("""
        from gradcli.autograd import Function

        class Double(Function):
            @staticmethod
            def forward(ctx, x):
                return 2 * x

            @staticmethod
            def backward(ctx, g):
                return 2 * g
    """))
    real_options = runner.RunOptions

    def no_isolation(*args, **kwargs):
        options = real_options(*args, **kwargs)
        options.isolate = False
        return options

    monkeypatch.setattr(runner, "RunOptions", no_isolation)
    with pytest.raises(SystemExit) as stop:
        run_cli(monkeypatch, "check", str(path), "--format", "plain")
    assert stop.value.code == 0


def test_check_process_writes_reports_and_output_completely(tmp_path):
    """A real process through the console entry: JSON and JUnit complete, stdout complete, exit code 1."""
    report, junit = tmp_path / "r.json", tmp_path / "j.xml"
    done = subprocess.run([PYTHON, "-m", "gradcli", "check", "examples/buggy_ops.py", "--format", "plain",
                           "--json", str(report), "--junit", str(junit)],
                          capture_output=True, text=True, timeout=300, cwd=cli_root())
    assert done.returncode == 1, done.stderr
    assert done.stdout.rstrip().splitlines()[-1].startswith("3 failed in ")
    assert json.loads(report.read_text())["summary"] == {"passed": 0, "partial": 0, "failed": 3, "errors": 0, "skipped": 0,
                                                         "surrogates": 0}
    import xml.etree.ElementTree as ET

    assert ET.parse(junit).getroot().find("testsuite").get("failures") == "3"


def test_diff_process_output_through_a_pipe_is_complete():
    """Long output (numpy code for a 3x3 Hessian) fully delivered before the quick exit."""
    done = subprocess.run([PYTHON, "-m", "gradcli", "diff", "exp(x*y*z) + sin(x) * cos(y) / (1 + z^2)",
                           "--hessian", "--format", "python"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    code = done.stdout
    namespace = {}
    exec(compile(code, "<emitted>", "exec"), namespace)  # our own generated code, not user input
    x, y, z = 0.5, 0.3, 0.2
    d2 = namespace["d2_f"](x, y, z)  # the last function printed: present and right
    assert d2[0] == pytest.approx((y * z) ** 2 * math.exp(x * y * z) - math.sin(x) * math.cos(y) / (1 + z * z),
                                  rel=1e-14)
    assert len(d2) == 6


def cli_root():
    from pathlib import Path

    return Path(__file__).resolve().parents[1]


def test_import_paused_restores_the_collector_and_returns_the_module():
    assert gc.isenabled()
    module = import_paused("json")
    assert module is json and gc.isenabled()
    gc.disable()
    try:
        import_paused("json")
        assert not gc.isenabled()  # a caller's choice is kept
    finally:
        gc.enable()
    with pytest.raises(ModuleNotFoundError):
        import_paused("no_such_module_here")
    assert gc.isenabled()


def test_the_checker_warm_up_is_a_passing_exact_check():
    from gradcli.check.symbolic_checks import warm_up

    assert warm_up() == "pass"  # its backward is right: a failure here would be a bug in the exact check
