"""`pytest --gradcli` under pytest-xdist gives the verdicts of a serial run, and pytest's JUnit XML
reads like `gradcli check --junit` (same testcases, same outcomes, the panel as the failure text)."""
import textwrap
import xml.etree.ElementTree as ET

import pytest
from click.testing import CliRunner

import gradcli.autograd.namespace  # noqa: F401 -- imported before in-process pytester runs (numpy)
import gradcli.check.gradcheck  # noqa: F401
from gradcli.cli import main

pytest_plugins = ["pytester"]
pytest.importorskip("xdist")

FUNCTIONS = {
    "ops/good.py": """
        from gradcli.autograd import Function


        class Double(Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2

            @staticmethod
            def backward(ctx, grad_output):
                return grad_output * 2


        class Square(Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x * x

            @staticmethod
            def backward(ctx, grad_output):
                (x,) = ctx.saved_tensors
                return 2 * x * grad_output
    """,
    "ops/bad.py": """
        from gradcli.autograd import Function


        class Triple(Function):
            @staticmethod
            def forward(ctx, x):
                return x * 3

            @staticmethod
            def backward(ctx, grad_output):
                return grad_output * 2


        class IgnoresGradOutput(Function):
            @staticmethod
            def forward(ctx, x):
                return x * 3

            @staticmethod
            def backward(ctx, grad_output):
                return grad_output * 0 + 3


        class Raises(Function):
            @staticmethod
            def forward(ctx, x):
                return x * 3

            @staticmethod
            def backward(ctx, grad_output):
                raise ValueError("boom in backward")
    """,
}

OUTCOME = {None: "pass", "failure": "fail", "error": "error", "skipped": "skip"}


def junit_cases(path) -> dict:
    """(classname, name) -> (outcome, text of the failure/error element) from a JUnit XML file."""
    cases = {}
    for case in ET.parse(path).getroot().iter("testcase"):
        child = next((c for c in case if c.tag in ("failure", "error", "skipped")), None)
        tag = child.tag if child is not None else None
        cases[(case.get("classname"), case.get("name"))] = (OUTCOME[tag], (child.text or "") if tag else "")
    return cases


@pytest.fixture
def project(pytester):
    for name, text in FUNCTIONS.items():
        path = pytester.path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return pytester


def test_two_workers_give_the_verdicts_and_junit_of_a_serial_run(project):
    serial = project.runpytest("--gradcli", "ops", "--junitxml=serial.xml")
    serial.assert_outcomes(passed=2, failed=2, errors=1)
    # xdist's workers are separate pytest processes that load the plugin through its entry point
    parallel = project.runpytest_subprocess("--gradcli", "ops", "-n", "2", "--junitxml=parallel.xml")
    parallel.assert_outcomes(passed=2, failed=2, errors=1)
    parallel.stdout.fnmatch_lines(["*2 workers*"])  # it did run on two workers

    cases = junit_cases(project.path / "serial.xml")
    assert junit_cases(project.path / "parallel.xml") == cases  # outcomes and failure texts, case for case
    assert {key: outcome for key, (outcome, _) in cases.items()} == {
        ("ops.good", "Double"): "pass", ("ops.good", "Square"): "pass", ("ops.bad", "Triple"): "fail",
        ("ops.bad", "IgnoresGradOutput"): "fail", ("ops.bad", "Raises"): "error"}
    failure = cases[("ops.bad", "Triple")][1]
    assert failure.startswith("FAIL  Triple  (ops/bad.py:5, backward at line 11)")
    assert "Looks like: backward is 1.5× too small for input x" in failure

    # `gradcli check --junit` names the same testcases and gives them the same outcomes
    cli = CliRunner().invoke(main, ["check", "ops", "--junit", "gradcli.xml"])
    assert cli.exit_code == 1, cli.output
    assert {k: v[0] for k, v in junit_cases(project.path / "gradcli.xml").items()} == \
        {k: v[0] for k, v in cases.items()}
