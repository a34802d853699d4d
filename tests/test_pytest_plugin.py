"""The pytest plugin, run through pytest itself (pytester) on a temporary project with a correct and a
buggy Function: verdicts equal to `gradcli check`'s, the failure panel as the report, -k, -x, the
input and gradcheck options, the fixture and the marker. xdist and JUnit: test_pytest_plugin_xdist.py."""
import json
import os
import re
import subprocess
import sys
import textwrap

import pytest
from click.testing import CliRunner

import gradcli.autograd.namespace  # noqa: F401 -- see below
import gradcli.check.gradcheck  # noqa: F401
from gradcli.cli import main

# In-process pytester runs remove the modules an inner run imported when it ends, and numpy cannot be
# imported twice in a process: what the inner runs need is imported here, before them.
pytest_plugins = ["pytester"]

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

BAD = """
    import os
    from gradcli.autograd import Function

    with open("imported-by.txt", "a") as f:  # which process ran this file's code
        f.write(f"{os.getpid()}\\n")


    class Triple(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 3

        @staticmethod
        def backward(ctx, grad_output):
            return grad_output * 2


    class Raises(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 3

        @staticmethod
        def backward(ctx, grad_output):
            raise ValueError("boom in backward")
"""

MATMUL = """
    from gradcli.autograd import Function


    class MatMul(Function):
        @staticmethod
        def forward(ctx, a, b):
            if a.shape[0] != 7:  # no automatic shape has 7 rows: the inputs must be given
                raise ValueError("a needs 7 rows")
            ctx.save_for_backward(a, b)
            return a @ b

        @staticmethod
        def backward(ctx, grad_output):
            a, b = ctx.saved_tensors
            return grad_output @ b.t(), a.t() @ grad_output
"""


def write(pytester, files: dict):
    for name, text in files.items():
        path = pytester.path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))


@pytest.fixture
def project(pytester):
    write(pytester, {"ops/good.py": GOOD, "ops/bad.py": BAD})
    return pytester


def outcomes_by_id(result) -> dict:
    """nodeid -> PASSED/FAILED/ERROR/SKIPPED from the -rA short summary."""
    found = {}
    for line in result.outlines:
        m = re.match(r"(PASSED|FAILED|ERROR|SKIPPED) (?:\[\d+\] )?(\S+?)(?::\d+)?(?: - .*|: .*)?$", line)
        if m:
            found[m.group(2)] = m.group(1)
    return found


def test_every_function_is_an_item_with_gradcli_checks_verdict(project):
    result = project.runpytest("--gradcli", "ops", "-rA")
    result.assert_outcomes(passed=1, failed=1, errors=1)
    assert outcomes_by_id(result) == {"ops/good.py::Double": "PASSED", "ops/bad.py::Triple": "FAILED",
                                      "ops/bad.py::Raises": "ERROR"}
    # the same verdicts from the command line
    cli = CliRunner().invoke(main, ["check", "ops", "--json", "report.json"])
    assert cli.exit_code == 1, cli.output
    report = json.loads((project.path / "report.json").read_text())
    assert report["summary"] == {"passed": 1, "partial": 0, "failed": 1, "errors": 1, "skipped": 0, "surrogates": 0}
    assert {f"{r['file']}::{r['function']}": r["status"] for r in report["results"]} == {
        "ops/good.py::Double": "pass", "ops/bad.py::Triple": "fail", "ops/bad.py::Raises": "error"}


def test_user_code_runs_in_forked_processes_never_in_pytests(project):
    project.runpytest("--gradcli", "ops/bad.py").assert_outcomes(failed=1, errors=1)
    pids = {int(p) for p in (project.path / "imported-by.txt").read_text().split()}
    assert pids and os.getpid() not in pids  # collected and checked in workers: pytest survives exit/hang


def test_a_failure_is_reported_with_the_plain_panel_of_gradcli_check(project):
    result = project.runpytest("--gradcli", "ops/bad.py::Triple")
    result.assert_outcomes(failed=1)
    cli = CliRunner().invoke(main, ["check", "ops/bad.py::Triple", "--format", "plain"])
    start = cli.output.index("\nFAIL  Triple") + 1  # the panel (not the compact line above it)
    panel = cli.output[start:].split("\n\nshort summary")[0].splitlines()  # up to the short summary
    assert panel[0].startswith("FAIL  Triple  (ops/bad.py:9, backward at line 15)")
    assert any("Looks like: backward is 1.5× too small" in line for line in panel)
    out = result.outlines
    start = out.index(panel[0])
    assert out[start:start + len(panel)] == panel  # line for line what `gradcli check` prints
    assert "pytest_plugin.py" not in result.stdout.str()  # no traceback of the plugin


def test_an_error_in_user_code_is_a_pytest_error_with_its_panel(project):
    result = project.runpytest("--gradcli", "ops/bad.py::Raises")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*ERROR at setup of Raises*", "ERROR  Raises  (ops/bad.py:*)",
                                 "    backward: backward raised ValueError: boom in backward*"])


def test_keyword_selection_and_exitfirst(project):
    result = project.runpytest("--gradcli", "ops", "-k", "Double or Triple", "-rA")
    result.assert_outcomes(passed=1, failed=1, deselected=1)
    result = project.runpytest("--gradcli", "ops", "-x")
    result.assert_outcomes(failed=1)  # ops/bad.py::Triple comes first; Raises and Double never run
    result.stdout.fnmatch_lines(["*stopping after 1 failures*"])


def test_gradcli_paths_alone_replace_testpaths_and_add_to_explicit_paths(project):
    write(project, {"tests/test_plain.py": "def test_plain():\n    assert True\n"})
    project.makeini("[pytest]\ntestpaths = tests\n")
    project.runpytest("--gradcli", "ops/good.py").assert_outcomes(passed=1)  # the Function only
    result = project.runpytest("tests", "--gradcli", "ops/good.py", "-rA")
    assert outcomes_by_id(result) == {"tests/test_plain.py::test_plain": "PASSED", "ops/good.py::Double": "PASSED"}


def test_a_test_module_under_the_path_keeps_its_tests_and_adds_its_functions(pytester):
    write(pytester, {"ops/test_sample_ops_xyz.py": GOOD + "\n\n    def test_double_doubles():\n        assert True\n"})
    result = pytester.runpytest("--gradcli", "ops", "-rA")
    assert outcomes_by_id(result) == {"ops/test_sample_ops_xyz.py::test_double_doubles": "PASSED",
                                      "ops/test_sample_ops_xyz.py::Double": "PASSED"}


def test_inputs_options_and_strict(pytester):
    write(pytester, {"ops/matmul.py": MATMUL})
    result = pytester.runpytest("--gradcli", "ops", "-rs")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["SKIPPED [[]1] ops/matmul.py:5: cannot build inputs automatically*"
                                 "forward refuses the a gradcli built: give --gradcli-input a=SPEC*"
                                 "b will still be built automatically*"])
    pytester.runpytest("--gradcli", "ops", "--gradcli-strict").assert_outcomes(failed=1)
    passed = pytester.runpytest("--gradcli", "ops", "--gradcli-input", "a=7x4", "--gradcli-input", "b=4x2")
    passed.assert_outcomes(passed=1)
    pytester.runpytest("--gradcli", "ops", "--gradcli-input", "a=7x4").assert_outcomes(passed=1)  # b: automatic


def test_inputs_from_a_file_and_from_pyproject(pytester):
    write(pytester, {"ops/matmul.py": MATMUL,
                     "my_inputs.py": "INPUTS = {'matmul.MatMul': ['a=7x4', 'b=4x3']}\n"})
    result = pytester.runpytest("--gradcli", "ops", "--gradcli-inputs-from", "my_inputs.py", "-rA")
    result.assert_outcomes(passed=1)
    bad = pytester.runpytest("--gradcli", "ops", "--gradcli-inputs-from", "nothing.py")
    assert bad.ret == pytest.ExitCode.USAGE_ERROR
    bad.stderr.fnmatch_lines(["*--gradcli-inputs-from takes an existing Python file: nothing.py*"])
    write(pytester, {"pyproject.toml": '[tool.gradcli.inputs]\n"matmul.MatMul" = ["a=7x4"]\n'})
    pytester.runpytest("--gradcli", "ops").assert_outcomes(passed=1)  # [tool.gradcli] as `gradcli check` reads it
    write(pytester, {"pyproject.toml": '[tool.gradcli.inputs]\n"matmul.MatMul" = ["a=3x4"]\n'})
    pytester.runpytest("--gradcli", "ops").assert_outcomes(skipped=1)


def test_seed_and_tolerances_reach_the_check(project):
    result = project.runpytest("--gradcli", "ops/bad.py::Triple", "--gradcli-seed", "7")
    result.stdout.fnmatch_lines(["*reproduce: gradcli check ops/bad.py::Triple --seed 7 *"])
    # Triple's backward is off by 1/3 of the gradient (|error| <= 3 * 2): tolerances that wide pass it
    loose = project.runpytest("--gradcli", "ops/bad.py::Triple", "--gradcli-atol", "10", "--gradcli-rtol", "1")
    loose.assert_outcomes(passed=1)


def test_a_hang_and_a_broken_file_are_errors_and_the_run_goes_on(pytester):
    write(pytester, {"ops/hang.py": GOOD.replace("return x * 2", "import time; time.sleep(600)"),
                     "ops/broken.py": "from gradcli.autograd import Function\nx = 1 / 0\nclass F(Function):\n    pass\n",
                     "ops/good.py": GOOD})  # broken.py defines a Function: imported, its error is an item
    # 8 s, not 1: the timeout also bounds good.py, which a loaded CI machine can take seconds to check
    result = pytester.runpytest("--gradcli", "ops", "--gradcli-timeout", "8", "-rA")
    assert outcomes_by_id(result) == {"ops/broken.py::(import)": "ERROR", "ops/good.py::Double": "PASSED",
                                      "ops/hang.py::Double": "ERROR"}
    result.stdout.fnmatch_lines(["ERROR  importing ops/broken.py:2",
                                 "    ZeroDivisionError: division by zero (ops/broken.py:2)"])
    result.stdout.fnmatch_lines(["    timed out after 32 s of wall time, 4x the CPU-time limit of 8 s (--gradcli-timeout)*"])  # it sleeps


def test_bad_options_are_usage_errors(project):
    result = project.runpytest("--gradcli", "ops", "--gradcli-input", "x=3y4")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--gradcli: cannot read SPEC '3y4'*"])
    result = project.runpytest("--gradcli", "nowhere")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--gradcli: file or directory not found: nowhere*"])


FIXTURE_TESTS = """
    import pytest
    import gradcli
    from ops.good import Double
    from ops.bad import Triple

    pytestmark = pytest.mark.gradcheck(mode="full", shape="2x5")


    def test_fixture_passes(gradcheck):
        assert gradcheck(Double.apply, gradcli.tensor([1.0, 2.0], requires_grad=True)).ok


    def test_fixture_fails(gradcheck):
        gradcheck(Triple.apply, gradcli.tensor([1.0, 2.0], requires_grad=True))


    def test_a_class_alone_gets_built_inputs(gradcheck):
        gradcheck(Triple)


    @pytest.mark.gradcheck(seed=5)
    def test_marker_options_reach_the_fixture(gradcheck):
        (report,) = gradcheck(Double)
        assert (report.seed, report.requested_mode, report.inputs[0].shape) == (5, "full", (2, 5))
        assert gradcheck(Double, seed=6)[0].seed == 6  # the call's own options win


    @pytest.mark.gradcheck.with_args(Double)  # (a lone class would be *decorated* by the marker)
    def test_a_function_in_the_marker_is_refused(gradcheck):
        gradcheck(Double)
"""


def test_the_fixture_and_the_marker_inside_ordinary_tests(project):
    write(project, {"ops/__init__.py": "", "test_uses.py": FIXTURE_TESTS})
    result = project.runpytest("test_uses.py", "-rA")
    assert outcomes_by_id(result) == {
        "test_uses.py::test_fixture_passes": "PASSED", "test_uses.py::test_fixture_fails": "FAILED",
        "test_uses.py::test_a_class_alone_gets_built_inputs": "FAILED",
        "test_uses.py::test_marker_options_reach_the_fixture": "PASSED",
        "test_uses.py::test_a_function_in_the_marker_is_refused": "ERROR"}
    text = result.stdout.str()
    assert re.search(r">\s+gradcheck\(Triple\.apply", text)  # the failing line of the test itself
    assert "E       gradcli.testing.GradcheckAssertionError: FAIL  Triple  (ops/bad.py:9, backward at line 15)" in text
    assert "reproduce: gradcli.gradcheck(Triple.apply, (x,), mode='full', seed=0)" in text
    # a class alone: inputs built as `gradcli check` builds them (shape from the marker) and its command
    assert "reproduce: gradcli check ops/bad.py::Triple --seed 0 --input 'x=float64[2,5]@(-2,2)'" in text
    assert "@pytest.mark.gradcheck takes options only" in text


def test_the_plugin_imports_nothing_of_gradcli_in_a_run_without_it(tmp_path):
    (tmp_path / "test_x.py").write_text("def test_x():\n    assert True\n")
    code = ("import sys, pytest\n"
            "code = pytest.main(['-q', '-p', 'no:cacheprovider', 'test_x.py'])\n"
            "assert 'gradcli.pytest_plugin' in sys.modules, 'the entry point did not load the plugin'\n"
            "heavy = sorted(m for m in sys.modules if m == 'numpy' or m.startswith(('gradcli.check', "
            "'gradcli.report', 'gradcli.autograd')))\n"
            "print('HEAVY', heavy)\n"
            "sys.exit(code)\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "HEAVY []" in done.stdout


def test_gradclis_own_modules_are_not_assertion_rewritten_by_pytest(tmp_path):
    # pytest marks every module of an entry-point plugin's distribution for assertion rewriting (an
    # installed gradcli's RECORD lists them all; from the checkout, gradcli.egg-info's SOURCES.txt
    # does): gradcli unmarks its package, so its checking modules, imported by a test, are plain imports
    (tmp_path / "test_probe.py").write_text(textwrap.dedent("""
        import importlib

        def test_loaders():
            for name in ("gradcli.check.scheduler", "gradcli.check.gradcheck", "gradcli.symbolic.mp_compile"):
                module = importlib.import_module(name)
                assert type(module.__loader__).__name__ == "SourceFileLoader", (name, module.__loader__)

        def test_a_test_modules_own_asserts_are_still_rewritten():
            left, right = [1, 2], [1, 3]
            assert left == right
    """))
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rA", "-p", "no:cacheprovider", "--rootdir",
                           str(tmp_path), "-o", "addopts=", str(tmp_path / "test_probe.py")],
                          cwd=root, capture_output=True, text=True, timeout=300)
    assert "1 failed, 1 passed" in done.stdout, done.stdout + done.stderr
    assert re.search(r"PASSED \S*test_probe.py::test_loaders", done.stdout), done.stdout
    assert "assert [1, 2] == [1, 3]" in done.stdout  # a test module's asserts are still rewritten
