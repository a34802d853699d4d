"""`pytest --gradcli` checks the items of a serial run in one run of the runner, at the first item
(gradcli/pytest_batch.py): every selected Function of every file in one ``session.run`` (plain files
in one shared worker, as `gradcli check`), with the verdicts and JUnit of items checked one by one;
-k, --lf and -x select and stop as before."""
import textwrap
import xml.etree.ElementTree as ET

import pytest

import gradcli.autograd.namespace  # noqa: F401 -- imported before in-process pytester runs (numpy)
import gradcli.check.gradcheck  # noqa: F401
from gradcli.check import session

pytest_plugins = ["pytester"]

FUNCTION = """
    class {name}(Function):
        @staticmethod
        def forward(ctx, x):
            return x * {factor}

        @staticmethod
        def backward(ctx, grad_output):
            return grad_output * {slope}
"""
HEADER = "from gradcli.autograd import Function\n"
FILES = {  # file -> [(name, factor, slope)]: slope != factor is a wrong backward
    "ops/a_bad.py": [("Triple", 3, 2), ("Raises", 3, "undefined_name")],
    "ops/b_good.py": [("Double", 2, 2), ("Quadruple", 4, 4)],
    "ops/c_good.py": [("Half", 0.5, 0.5)],
}


@pytest.fixture
def project(pytester):
    for name, functions in FILES.items():
        path = pytester.path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(HEADER + "\n".join(textwrap.dedent(FUNCTION.format(name=n, factor=f, slope=s))
                                           for n, f, s in functions))
    return pytester


@pytest.fixture
def runs(monkeypatch):
    """Every checking run of the runner in this process: {file: names} each (collection runs left out)."""
    calls = []
    real = session.run

    def counting(items, options, *args, **kwargs):
        if not options.collect_only:
            calls.append({item.path: list(item.names or []) for item in items})
        return real(items, options, *args, **kwargs)

    monkeypatch.setattr(session, "run", counting)
    return calls


def junit(path) -> dict:
    cases = {}
    for case in ET.parse(path).getroot().iter("testcase"):
        child = next((c for c in case if c.tag in ("failure", "error", "skipped")), None)
        cases[(case.get("classname"), case.get("name"))] = (child.tag, child.text) if child is not None else None
    return cases


def test_one_run_checks_every_item_of_the_session_at_the_first(project, runs):
    result = project.runpytest("--gradcli", "ops", "--junitxml=batched.xml")
    result.assert_outcomes(passed=3, failed=1, errors=1)
    assert runs == [{"ops/a_bad.py": ["Triple", "Raises"], "ops/b_good.py": ["Double", "Quadruple"],
                     "ops/c_good.py": ["Half"]}]


def test_batched_verdicts_and_junit_equal_items_checked_one_by_one(project, runs):
    project.runpytest("--gradcli", "ops", "--junitxml=batched.xml").assert_outcomes(passed=3, failed=1, errors=1)
    alone = {}
    for file, functions in FILES.items():
        for name, _, _ in functions:
            project.runpytest("--gradcli", f"{file}::{name}", "--junitxml=alone.xml")
            alone.update(junit(project.path / "alone.xml"))
    assert len(runs) == 1 + 5  # the batch, then each Function in a run of its own
    batched = junit(project.path / "batched.xml")
    assert batched == alone  # outcomes and the panels' text, case for case
    assert batched[("ops.a_bad", "Triple")][0] == "failure"
    assert batched[("ops.a_bad", "Raises")][0] == "error"
    assert "NameError" in batched[("ops.a_bad", "Raises")][1]
    assert batched[("ops.b_good", "Double")] is None


def test_keyword_selection_batches_the_selected_items_only(project, runs):
    project.runpytest("--gradcli", "ops", "-k", "Double or Half").assert_outcomes(passed=2, deselected=3)
    assert runs == [{"ops/b_good.py": ["Double"], "ops/c_good.py": ["Half"]}]


def test_last_failed_batches_only_what_failed(project, runs):
    project.runpytest("--gradcli", "ops").assert_outcomes(passed=3, failed=1, errors=1)
    project.runpytest("--gradcli", "ops", "--lf").assert_outcomes(failed=1, errors=1)  # files without failures skipped
    assert runs[1] == {"ops/a_bad.py": ["Triple", "Raises"]}


def test_exitfirst_stops_the_batch_at_the_first_failure(project, runs):
    result = project.runpytest("--gradcli", "ops", "-x", "-rA")
    result.assert_outcomes(failed=1)  # ops/a_bad.py::Triple comes first
    result.stdout.fnmatch_lines(["*stopping after 1 failures*"])
    assert len(runs) == 1  # nothing checked after the batch stopped at Triple


def test_exitfirst_checks_an_item_past_a_passing_batch_when_pytest_reaches_it(pytester, runs):
    # the batch stops at the first failure in the runner's order; pytest's own order decides the rest
    (pytester.path / "ops").mkdir()
    (pytester.path / "ops" / "fns.py").write_text(HEADER + textwrap.dedent(FUNCTION.format(
        name="Good", factor=2, slope=2)) + textwrap.dedent(FUNCTION.format(name="Bad", factor=3, slope=1)))
    result = pytester.runpytest("--gradcli", "ops", "-x")
    result.assert_outcomes(passed=1, failed=1)
    assert runs == [{"ops/fns.py": ["Good", "Bad"]}]


def test_the_plugin_loads_without_xdist(project, runs):
    # pytest_xdist_make_scheduler is an optional hook: unknown without xdist, it must not be an error
    project.runpytest("-p", "no:xdist", "--gradcli", "ops/b_good.py").assert_outcomes(passed=2)
    assert runs == [{"ops/b_good.py": ["Double", "Quadruple"]}]


def test_ctrl_c_during_the_batch_stops_pytest(pytester):
    import os
    import signal
    import subprocess
    import sys
    import time

    (pytester.path / "ops").mkdir()
    (pytester.path / "ops" / "a_hangs.py").write_text(HEADER + textwrap.dedent("""
        import time


        class Hangs(Function):
            @staticmethod
            def forward(ctx, x):
                open("started", "w").close()
                time.sleep(600)
                return x

            @staticmethod
            def backward(ctx, grad_output):
                return grad_output
    """))
    (pytester.path / "ops" / "b_good.py").write_text(HEADER + textwrap.dedent(FUNCTION.format(
        name="Double", factor=2, slope=2)))
    process = subprocess.Popen([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--gradcli", "ops",
                                "--gradcli-timeout", "300", "-rA"], cwd=pytester.path,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 240
        while not (pytester.path / "started").exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert (pytester.path / "started").exists()  # the batch is checking Hangs
        os.kill(process.pid, signal.SIGINT)
        output, _ = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 2, output  # pytest's "interrupted"
    assert "KeyboardInterrupt" in output
    assert "PASSED" not in output  # Double, later in the batch, was never reported


def test_after_the_batch_the_pytest_process_is_frozen_for_its_garbage_collector(project):
    # pytest's collections at its end and the interpreter's at exit then skip torch, SymPy and gradcli
    (project.path / "ops" / "test_zz_after.py").write_text(
        "import gc\n\n\ndef test_frozen():\n    assert gc.get_freeze_count() > 10000, gc.get_freeze_count()\n")
    result = project.runpytest_subprocess("--gradcli", "ops", "-p", "no:cacheprovider", "-rA")
    result.assert_outcomes(passed=4, failed=1, errors=1)
    result.stdout.fnmatch_lines(["PASSED ops/test_zz_after.py::test_frozen"])
    alone = project.runpytest_subprocess("ops/test_zz_after.py", "-p", "no:cacheprovider")
    alone.assert_outcomes(failed=1)  # without a batch before it nothing is frozen
