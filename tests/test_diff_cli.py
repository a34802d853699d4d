"""``gradcli diff`` end to end: the seed's numbers, every format, exit codes, CliRunner and a real process."""
import io
import json
import subprocess
import sys

import pytest
from click.testing import CliRunner

from gradcli.cli import main
from gradcli.report.diff_render import render, render_table
from gradcli.expr.api import DiffRequest, run

SEED = "sqrt(x)+1/x+2*y**2"
PYTHON = sys.executable


def diff(*args):
    result = CliRunner().invoke(main, ["diff", *args])
    return result.exit_code, result.output


def test_seed_numbers_and_exact_derivatives():
    code, out = diff(SEED, "--at", "x=3,y=2", "--format", "json")
    assert code == 0
    data = json.loads(out)
    assert data["gradient"] == {"x": "1/(2*sqrt(x)) - 1/x**2", "y": "4*y"}
    (point,) = data["points"]
    assert round(point["value"], 4) == 10.0654
    assert round(point["gradient"]["x"], 4) == 0.1776
    assert point["gradient"]["y"] == 8
    assert point["exact"] == {"value": "sqrt(3) + 25/3", "gradient": {"x": "sqrt(3)/6 - 1/9", "y": "8"}}
    assert round(point["autograd"]["gradient"]["x"], 4) == 0.1776
    assert round(point["finite_difference"]["gradient"]["x"], 4) == 0.1776
    assert point["ok"] is True and point["max_error"] < 1e-12


def test_json_shape_is_the_specs():
    code, out = diff(SEED, "--at", "x=3,y=2", "--at", "x=1,y=0", "--hessian", "--format", "json")
    data = json.loads(out)
    assert set(data) == {"expression", "variables", "assumptions", "method", "gradient", "hessian", "points",
                         "warnings", "notes"}
    assert data["expression"] == "sqrt(x) + 2*y**2 + 1/x"
    assert data["variables"] == ["x", "y"]
    assert data["hessian"] == {"x": {"x": "2/x**3 - 1/(4*x**(3/2))", "y": "0"}, "y": {"x": "0", "y": "4"}}
    assert len(data["points"]) == 2
    point = data["points"][1]
    assert set(point) == {"at", "at_text", "value", "gradient", "hessian", "exact", "autograd", "finite_difference",
                          "max_error", "ok", "problem"}
    assert point["at"] == {"x": 1.0, "y": 0.0}
    assert point["hessian"]["x"]["x"] == 1.75
    assert set(point["finite_difference"]) == {"gradient", "hessian"}


def test_jacobian_and_order_json():
    code, out = diff("x*y", "x+y^2", "--format", "json")
    data = json.loads(out)
    assert data["expression"] == ["x*y", "x + y**2"]
    assert data["jacobian"] == [{"x": "y", "y": "x"}, {"x": "1", "y": "2*y"}]
    code, out = diff("x^3*y", "--order", "3", "--format", "json")
    data = json.loads(out)
    assert data["order"] == 3
    assert data["derivatives"] == {"x,x,x": "6*y", "x,x,y": "6*x", "x,y,y": "0", "y,y,y": "0"}


def test_plain_output_for_pipes():
    code, out = diff(SEED, "--at", "x=3,y=2")
    assert code == 0
    assert out.splitlines()[:3] == ["f(x, y) = sqrt(x) + 2*y**2 + 1/x", "df/dx = 1/(2*sqrt(x)) - 1/x**2",
                                    "df/dy = 4*y"]
    assert "  df/dx     sqrt(3)/6 - 1/9  0.1775640235  0.1775640235  0.1775640235" in out
    assert out.isascii()


def test_table_rendering_at_fixed_width():
    result = run(DiffRequest([SEED], at=["x=3,y=2"]))
    console_file = io.StringIO()
    from rich.console import Console
    render_table(result, Console(file=console_file, width=100))
    lines = [line.rstrip() for line in console_file.getvalue().splitlines()]
    assert lines[:3] == ["f(x, y) = √x + 2y² + 1/x", "  ∂f/∂x = 1/(2√x) − 1/x²", "  ∂f/∂y = 4y"]
    assert lines[5] == "┏━━━━━━━┳━━━━━━━━━━━━┳━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━┳━━━━━━━━━┳━━━┓"
    assert lines[6] == "┃       ┃ exact      ┃        value ┃     autograd ┃  finite diff ┃   error ┃   ┃"
    assert lines[8] == "│ f     │ √3 + 25/3  │  10.06538414 │  10.06538414 │            — │ 4.8e-17 │ ✓ │"
    assert lines[9].startswith("│ ∂f/∂x │ √3/6 − 1/9 │ 0.1775640235 │ 0.1775640235 │ 0.1775640235 │")
    assert lines[10] == "│ ∂f/∂y │ 8          │            8 │            8 │            8 │       0 │ ✓ │"
    assert lines[12].startswith("largest disagreement") and lines[12].endswith("✓")


def test_latex_output():
    code, out = diff(SEED, "--at", "x=3,y=2", "--format", "latex")
    assert r"\frac{\partial f}{\partial x} &= \frac{1}{2 \sqrt{x}} - \frac{1}{x^{2}}" in out
    assert r"\frac{\partial f}{\partial x} &= \frac{\sqrt{3}}{6} - \frac{1}{9} \approx 0.1775640235" in out
    assert out.startswith(r"\begin{align*}")


def test_python_output_runs_and_matches():
    code, out = diff(SEED, "sigmoid(x)*y", "--format", "python")
    namespace = {}
    exec(compile(out, "<generated>", "exec"), namespace)  # the test executes gradcli's output, not user text
    assert namespace["f1"](3.0, 2.0) == pytest.approx(10.0653841409022)
    dx, dy = namespace["grad_f1"](3.0, 2.0)
    assert dx == pytest.approx(0.17756402348370176) and dy == 8
    gx, gy = namespace["grad_f2"](0.5, 2.0)
    s = 1 / (1 + 2.718281828459045 ** -0.5)
    assert gx == pytest.approx(2 * s * (1 - s)) and gy == pytest.approx(s)


def test_check_verdicts_and_exit_codes():
    # a proof is SymPy work under --simplify-timeout: a generous one, so a loaded machine decides the same
    code, out = diff("sigmoid(x)", "--check", "exp(-x)/(1+exp(-x))^2", "--simplify-timeout", "60")
    assert code == 0 and "check df/dx: proved" in out
    code, out = diff(SEED, "--check", "x=1/(2*sqrt(x)) - 1/x, y=4y", "--simplify-timeout", "60")
    assert code == 1
    assert "check df/dx: refuted: at x=2, y=-1 your answer gives -0.1464466094, but df/dx = 0.1035533906" in out
    assert "check df/dy: proved" in out
    code, out = diff("sin(x)^2", "--check", "sin(2x)", "--simplify-timeout", "0")
    assert code == 0 and "check df/dx: undecided:" in out and "numerically equal at" in out


def test_check_json():
    code, out = diff("x^2", "--check", "3x", "--format", "json")
    data = json.loads(out)
    assert data["check"] == [{"variable": "x", "answer": "3*x", "verdict": "refuted",
                              "detail": "at x=1 your answer gives 3, but df/dx = 2", "point": {"x": "1"}}]


def test_disagreement_at_a_kink_exits_1_and_says_so():
    code, out = diff("relu(x)", "--at", "0")
    assert code == 1
    assert "FAIL: non-differentiable point x=0" in out
    assert "warning: f is not differentiable at x=0; one-sided derivatives 0 and 1" in out


@pytest.mark.parametrize("args, message", [
    (["x+*2"], "error: unexpected '*' at column 3 in expression 'x+*2'"),
    (["10**10**10"], "error: power too large"),
    (["__import__('os').getcwd()"], "error: names may not start with '_'"),
    (["x", "--order", "abc"], "error: --order: 'abc' is not an integer"),
    (["x", "--order", "0"], "error: --order: must be between 1 and 20, got 0"),
    (["x", "--format", "xml"], "error: --format: 'xml' is not one of table, plain, json, latex, python"),
    (["x", "--at", "y=2"], "error: 'y' is not a variable (variables: x) at column 1 in --at 'y=2'"),
    (["x+y", "--at", "x=2"], "error: no value for y in --at 'x=2'"),
    (["x", "--at", "x=1+"], "error: unexpected end of expression after '+' at column 5 in --at 'x=1+'"),
    (["x", "--at", "x=y"], "error: the value of x must be a number at column 3 in --at 'x=y'"),
    (["sqrt(x)", "--positive", "--at", "x=-1"], "error: x is declared --positive"),
    (["x", "--positive", "--complex"], "error: --positive and --complex exclude each other"),
    (["x", "--ordr", "2"], "error: no such option: --ordr"),
    (["1/0 + x"], "error: '1/0 + x' is undefined"),
    (["3"], "error: the expression has no variables"),
    (["x", "y", "--check", "1"], "error: --check works with one expression"),
    (["x+y", "--check", "1"], "error: --check: give one answer per variable, e.g. x=..., y=..."),
    (["x", "--emit-function", "class"], "error: --emit-function: 'class' is not a valid class name"),
    (["x", "--style", "torch"], "error: --style only applies to --emit-function"),
    (["x", "x", "--hessian", "--order", "20", "--wrt", "a,b,c,d"], "error: that asks for"),
    ([], "error: give an expression"),
])
def test_every_bad_input_is_one_line_and_exit_2(args, message):
    result = CliRunner().invoke(main, ["diff", *args])
    assert result.exit_code == 2
    assert result.output.startswith(message), result.output
    assert result.output.count("\n") == 1
    assert "Traceback" not in result.output


def test_internal_errors_are_one_line_exit_3(monkeypatch):
    import gradcli.expr.api as api

    def boom(request, engine=None, deadline=None, progress=None):
        raise RuntimeError("kaput")
    monkeypatch.setattr(api, "run", boom)
    result = CliRunner().invoke(main, ["diff", "x"])
    assert result.exit_code == 3
    assert result.output == "internal error: RuntimeError: kaput (run with --debug)\n"
    result = CliRunner().invoke(main, ["diff", "x", "--debug"])   # the worker's traceback, printed here
    assert result.exit_code == 3
    assert result.output.startswith("Traceback (most recent call last):")
    assert result.output.endswith("RuntimeError: kaput\n") and "in boom" in result.output


def test_negative_expressions_are_not_options():
    code, out = diff("-x^2", "--at", "-3")
    assert code == 0
    assert "df/dx = -2*x" in out and "df/dx     6" in out


def _process(*args, env=None):
    return subprocess.run([PYTHON, "-m", "gradcli", "diff", *args], capture_output=True, text=True, timeout=120,
                          env=env)


def test_real_process_json_and_errors():
    done = _process(SEED, "--at", "x=3,y=2", "--format", "json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["points"][0]["exact"]["gradient"]["x"] == "sqrt(3)/6 - 1/9"
    done = _process("sin x^2")
    assert done.returncode == 2
    assert done.stderr == "error: ambiguous 'sin x^...': put the argument of sin in parentheses at column 1 in " \
                          "expression 'sin x^2'\n"
    assert done.stdout == ""


def test_real_process_plain_when_piped_and_exit_1():
    done = _process("relu(x)", "--at", "x=0")
    assert done.returncode == 1
    assert done.stdout.isascii() and "FAIL" in done.stdout


def _modules_after(code):
    script = ("import sys\n" + code + "\nprint('\\nloaded: ' + ' '.join(sorted(m for m in ('numpy', 'sympy', "
              "'rich', 'torch') if m in sys.modules)))")
    done = subprocess.run([PYTHON, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()[-1].split()[1:]


def test_startup_imports_stay_light():
    run_cli = ("from gradcli.cli import main\ntry:\n    main([{args}])\nexcept SystemExit:\n    pass")
    assert _modules_after(run_cli.format(args="'--help'")) == []
    assert _modules_after(run_cli.format(args="'diff', '--help'")) == []
    # the CLI process only supervises: SymPy, rich, numpy and the engine load in the forked worker (and
    # its engine process), never here
    assert _modules_after(run_cli.format(args=f"'diff', '{SEED}', '--at', 'x=3,y=2'")) == []
    assert _modules_after(run_cli.format(args=f"'diff', '{SEED}', '--format', 'table'")) == []


def test_render_dispatch():
    result = run(DiffRequest(["x^2"]))
    assert render(result, "plain").startswith("f(x) = x**2\ndf/dx = 2*x\n")
    assert json.loads(render(result, "json"))["gradient"] == {"x": "2*x"}


def test_default_format_is_table_on_a_terminal_and_plain_in_pipes():
    from gradcli.expr.options import build_request
    options = dict(wrt=None, order="1", hessian=False, at=(), check=None, positive=False, complex_=False, fmt=None,
                   simplify=True, simplify_timeout="3", emit_function=None, style="gradcli")
    assert build_request(["x"], tty=True, **options)[1] == "table"
    assert build_request(["x"], tty=False, **options)[1] == "plain"
