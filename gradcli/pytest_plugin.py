"""pytest plugin (registered through the pytest11 entry point): specs/testing.md.

* ``pytest --gradcli PATH`` collects every autograd Function under PATH as a test item
  ``file.py::ClassName`` -- gradcli's own discovery, inputs and runner, so each item's verdict is
  the one ``gradcli check`` gives: pass -> passed, fail -> failed, error (user code raised, exited
  or hung) -> error, skip -> skipped. ``-k``, ``-x``, ``--junitxml`` and pytest-xdist's ``-n``
  work as for any test item.
* The ``gradcheck`` fixture checks a Function from inside an ordinary test
  (``gradcli.testing.assert_gradcheck``); the ``@pytest.mark.gradcheck(**options)`` marker sets its
  options for a test, a class or a module.

Every pytest run of every project that installs gradcli loads this module, so it imports nothing
beyond pytest and the standard library: gradcli itself is imported only when ``--gradcli`` is
given or the fixture is used.
"""
from __future__ import annotations

import os
import sys
from fnmatch import fnmatch

import pytest



def _not_rewritten():
    """pytest rewrites the ``assert`` statements of every module of a plugin's distribution
    (pytest11 entry points: all of ``gradcli``), so each gradcli module a test session imports was
    parsed, rewritten and compiled again -- never cached where bytecode is not written
    (``PYTHONDONTWRITEBYTECODE``): ~3-5 s of CPU in every pytest process that imports gradcli's
    checking modules, each xdist worker included. gradcli's code is no test code (its failures raise
    their own ``AssertionError`` messages), so its package is unmarked here, before any of it but
    this module and the package top is imported. Only pytest's import hook is touched; without it
    nothing happens."""
    for finder in sys.meta_path:
        marked = getattr(finder, "_must_rewrite", None)
        if type(finder).__name__ == "AssertionRewritingHook" and isinstance(marked, set) and "gradcli" in marked:
            marked.discard("gradcli")
            cache = getattr(finder, "_marked_for_rewrite_cache", None)
            if isinstance(cache, dict):
                cache.clear()


_not_rewritten()

IMPORT_ITEM = "(import)"  # the item of a file that fails to import (gradcli's JUnit name for it)
_STATE = pytest.StashKey()  # config.stash[_STATE]: the --gradcli run's settings and collection


def pytest_addoption(parser):
    group = parser.getgroup("gradcli", "gradcli: check the backward passes of autograd Functions")
    add = group.addoption
    add("--gradcli", action="append", default=[], metavar="PATH", dest="gradcli_paths",
        help="Collect every autograd Function under PATH (file, directory or file.py::Name; repeatable) "
             "as a test item checked like `gradcli check`. Without other paths, only these are collected.")
    add("--gradcli-mode", choices=("auto", "full", "fast"), help="gradcheck mode (default: auto).")
    add("--gradcli-method", choices=("auto", "complex_step", "richardson", "central"),
        help="Numerical reference (default: auto).")
    add("--gradcli-atol", type=float, metavar="X", help="Absolute tolerance override.")
    add("--gradcli-rtol", type=float, metavar="X", help="Relative tolerance override.")
    add("--gradcli-eps", type=float, metavar="X", help="Central-difference step tried besides the default one.")
    add("--gradcli-seed", type=int, metavar="N", help="Seed for inputs and cotangents (default: 0).")
    add("--gradcli-second-order", action="store_true", default=None, help="Also check double backward.")
    add("--gradcli-dtype", choices=("float64", "float32"), help="dtype of built inputs (default: float64).")
    add("--gradcli-shape", metavar="SHAPE", help="Shape of automatic inputs (default: 3x4).")
    add("--gradcli-input", action="append", default=[], metavar="NAME=SPEC",
        help="Input for forward's parameter NAME (SPEC grammar: specs/check.md; repeatable).")
    add("--gradcli-at", action="append", default=[], metavar="NAME=NUMBER,...", help="Scalar inputs, e.g. x=3,y=2.")
    add("--gradcli-exact", choices=("auto", "on", "off"), default="auto",
        help="Exact (symbolic) reference: auto (default, as `gradcli check`), on (--exact), off (--no-exact).")
    add("--gradcli-prove", action="store_true", help="Prove each backward for every input (`gradcli check --prove`).")
    add("--gradcli-timeout", type=float, default=60.0, metavar="SECONDS",
        help="Seconds per Function before it is an error (default: 60).")
    add("--gradcli-inputs-from", metavar="FILE.py", dest="gradcli_inputs_from",
        help="Example inputs for Functions you cannot edit (as `gradcli check --inputs-from`; specs/check.md 2a).")
    add("--gradcli-strict", action="store_true",
        help="A Function that cannot be checked (skip) or is not checked fully (partial) fails.")


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "gradcheck(**options): default options (mode, atol, rtol, seed, ...) of the gradcheck "
                   "fixture in the marked tests")
    if config.option.gradcli_paths:
        from gradcli.pytest_state import RunState

        config.stash[_STATE] = RunState.from_config(config)


def pytest_unconfigure(config):
    state = config.stash.get(_STATE, None)
    if state is None:
        return
    if state.run_id:  # an xdist worker: every worker collected before any test ran
        from gradcli.pytest_state import run_files

        state.written += run_files(state.run_id)[:3]  # the blocks only after the others read them
    state.remove_written()  # the controller, after its workers: all of them (pytest_configure_node)


def pytest_report_header(config):
    state = config.stash.get(_STATE, None)
    if state is not None:
        from gradcli import __version__

        n = len(state.files)
        return (f"gradcli {__version__}: {n} file{'s' if n != 1 else ''} under "
                f"{', '.join(config.option.gradcli_paths)} (seed {state.seed})")
    return None


@pytest.hookimpl(tryfirst=True)  # before xdist's worker reports its collection to the controller
def pytest_collection_finish(session):
    """An xdist worker lists its gradcli items for the controller's scheduler (pytest_scheduler.py)."""
    state = session.config.stash.get(_STATE, None)
    if state is not None and state.run_id:
        from gradcli.pytest_batch import shared_file, write_shared

        write_shared(shared_file(state.run_id, "items"),
                     [item.nodeid for item in session.items if isinstance(item, GradcliItem)])


@pytest.hookimpl(optionalhook=True)  # hooks of pytest-xdist: unknown, and never called, without it
def pytest_configure_node(node):
    """Tell each worker the controller's ``--dist`` (xdist sets its workers' own to "no"): pytest_batch.py.
    The controller removes the run's shared files at its end, after its workers (which may be stopped
    before their own pytest_unconfigure)."""
    state = node.config.stash.get(_STATE, None)
    if state is not None:
        node.workerinput["gradcli_dist"] = node.config.getvalue("dist")
        from gradcli.pytest_state import run_files

        state.written += [path for path in run_files(node.workerinput["testrunuid"]) if path not in state.written]


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """Under ``--dist load`` (xdist's default), deal the gradcli items in one block per worker."""
    state = config.stash.get(_STATE, None)
    if state is None or config.getvalue("dist") != "load":
        return None  # xdist's own scheduler
    from gradcli.pytest_scheduler import GradcliScheduling

    return GradcliScheduling(config, log, state)


# ----- the --gradcli run --------------------------------------------------------------------------

def _is_test_module(path, config) -> bool:
    """Whether pytest's python plugin collects this file by name (``python_files``)."""
    for pattern in config.getini("python_files"):
        if fnmatch(path.name, pattern) or ("/" in pattern and fnmatch(str(path), "*/" + pattern)):
            return True
    return False


def _gradcli_file(path, config) -> bool:
    state = config.stash.get(_STATE, None)
    return state is not None and path.suffix == ".py" and os.path.realpath(path) in state.files


@pytest.hookimpl(tryfirst=True)
def pytest_pycollect_makemodule(module_path, parent):
    # A file named on the command line is collected by the python plugin whatever its name, i.e.
    # imported as a test module in this process. For a Function file that is not a test module,
    # gradcli's collector takes that place (its import belongs in a forked worker).
    if _gradcli_file(module_path, parent.config) and not _is_test_module(module_path, parent.config):
        return GradcliFile.from_parent(parent, path=module_path)
    return None


def pytest_collect_file(file_path, parent):
    if not _gradcli_file(file_path, parent.config):
        return None
    if parent.session.isinitpath(file_path) and not _is_test_module(file_path, parent.config):
        return None  # pytest_pycollect_makemodule gave the GradcliFile already
    return GradcliFile.from_parent(parent, path=file_path)  # next to a test module's own collector


class GradcliFile(pytest.File):
    """The Functions of one file, as ``gradcli check --collect-only`` lists them (in source order)."""

    def collect(self):
        state = self.config.stash[_STATE]
        infos, load_error = state.collection(os.path.realpath(self.path))
        if load_error is not None:
            yield GradcliItem.from_parent(self, name=IMPORT_ITEM, line=load_error.line, result=load_error)
        for info in infos:
            yield GradcliItem.from_parent(self, name=info.name, line=info.line)


class GradcliItem(pytest.Item):
    """One Function: checked in setup (an error there is pytest's "error", as it is gradcli's),
    judged in the call phase (a failed check is pytest's "failure")."""

    def __init__(self, *, line=None, result=None, **kwargs):
        super().__init__(**kwargs)
        self.line = line
        self.result = result  # FunctionResult; preset for a file that failed to import

    def setup(self):
        state = self.config.stash[_STATE]
        if self.result is None:
            from gradcli.pytest_batch import check_ahead

            check_ahead(self, state)  # this item and the others this process runs, in one run (at the first)
            self.result = state.check(os.path.realpath(self.path), self.name)
        status = self.result.status
        if status == "error":
            pytest.fail(self.result.message, pytrace=False)  # the report shows the panel instead
        if status == "skip" and not state.strict:
            pytest.skip(self.skip_reason())

    def runtest(self):
        if self.result.status == "fail":
            pytest.fail(self.result.message, pytrace=False)
        if self.result.status == "skip":  # only with --gradcli-strict: as `gradcli check --strict`
            pytest.fail(self.panel(), pytrace=False)
        if self.result.partial and self.config.stash[_STATE].strict:
            pytest.fail(self.panel(), pytrace=False)

    def panel(self) -> str:
        """gradcli check's plain failure panel (-v adds tracebacks, as ``gradcli check -v``)."""
        from gradcli.report.panel_text import panel_text

        if self.result.status == "skip":
            return f"SKIP {self.name} (--gradcli-strict): {self.skip_reason()}"
        if self.result.partial:
            return f"{self.coverage_text()} (--gradcli-strict: not everything was checked)"
        verbose = self.config.get_verbosity() > 0
        text = panel_text(self.result, self.config.stash[_STATE].seed, verbose=verbose)
        return text.replace("(--timeout)", "(--gradcli-timeout)")  # the runner names the CLI's option

    def coverage_text(self) -> str:
        """``PASS (partial: bias not checked)`` and one ``not checked:`` line per input."""
        from gradcli.report import check_view as view

        lines = [view.verdict_word(self.result)] if self.result.partial else []
        lines += [f"not checked: {view.not_checked_line(e)}" for e in view.not_checked_entries(self.result, False)]
        return "\n".join(lines).replace("--input ", "--gradcli-input ")

    def skip_reason(self) -> str:
        # the runner words its advice for the command line; here the option is --gradcli-input
        return self.result.message.replace("--input ", "--gradcli-input ")

    def reportinfo(self):
        return self.path, (self.line - 1 if self.line else None), self.name


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """A GradcliItem's report carries the plain panel as its longrepr -- no traceback of this plugin,
    the same text with and without xdist -- and a skip points at the Function, not at this file."""
    outcome = yield
    if not isinstance(item, GradcliItem) or item.result is None:
        return
    report = outcome.get_result()
    verdict = item.result.verdict()
    if call.when == "call" and verdict in ("partial", "surrogate"):
        report.user_properties.append(("gradcli", verdict))  # pytest_report_teststatus words it
        text = item.coverage_text() if verdict == "partial" else f"SURROGATE: {item.result.message}"
        report.sections.append(("gradcli", text))
    if report.failed:
        report.longrepr = item.panel()
    elif report.skipped and isinstance(report.longrepr, tuple):
        path, line, _ = item.reportinfo()
        report.longrepr = (str(path), (line or 0) + 1, f"Skipped: {item.skip_reason()}")


def pytest_report_teststatus(report, config):
    """A partial pass and a declared surrogate are passes with a word of their own, counted apart in
    the summary line (``3 passed, 1 partial, 1 surrogate``), as ``gradcli check`` counts them."""
    if report.when == "call" and report.passed:
        verdict = dict(getattr(report, "user_properties", ()) or ()).get("gradcli")
        if verdict == "partial":
            return "partial", "p", "PASSED (partial)"
        if verdict == "surrogate":
            return "surrogate", "S", "SURROGATE"
    return None


def pytest_terminal_summary(terminalreporter):
    """What partial passes left out, without -v (pytest shows no sections of passing tests)."""
    reports = terminalreporter.stats.get("partial", [])
    if not reports:
        return
    terminalreporter.section("gradcli: not fully checked", yellow=True)
    for report in reports:
        text = next((content for name, content in report.sections if name == "gradcli"), "")
        first, *rest = text.splitlines() or [""]
        terminalreporter.line(f"{report.nodeid}: {first}")
        for line in rest:
            terminalreporter.line(f"  {line}")


# ----- inside ordinary tests: the fixture and the marker -------------------------------------------

BUILD_OPTIONS = ("dtype", "shape", "exact")  # options of a Function class alone (gradcli builds the inputs)


def _marker_options(item) -> dict:
    options: dict = {}
    for marker in reversed(list(item.iter_markers("gradcheck"))):  # the closest marker wins
        if marker.args:
            raise TypeError("@pytest.mark.gradcheck takes options only (mode=..., atol=..., seed=...); "
                            "check a Function with the gradcheck fixture: gradcheck(MyFn) or gradcheck(MyFn, x)")
        options.update(marker.kwargs)
    return options


@pytest.fixture
def gradcheck(request):
    """``gradcheck(fn, *inputs, **options)``: ``gradcli.testing.assert_gradcheck`` with defaults
    from the command line's --gradcli-* options and the test's ``@pytest.mark.gradcheck(...)``.
    Raises AssertionError with gradcli's failure panel; returns the report(s)."""
    opt = request.config.option
    defaults = {k: v for k, v in (("dtype", opt.gradcli_dtype), ("shape", opt.gradcli_shape)) if v is not None}
    from gradcli.pytest_state import command_line_gradcheck_options

    defaults.update(command_line_gradcheck_options(request.config))
    defaults.update(_marker_options(request.node))

    def check(fn, *inputs, **options):
        __tracebackhide__ = True
        from gradcli.testing import assert_gradcheck

        merged = {k: v for k, v in defaults.items() if not (inputs and k in BUILD_OPTIONS)}
        merged.update(options)
        return assert_gradcheck(fn, *inputs, **merged)

    return check
