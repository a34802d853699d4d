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
from dataclasses import dataclass, field
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
        config.stash[_STATE] = _State.from_config(config)


def pytest_unconfigure(config):
    state = config.stash.get(_STATE, None)
    if state is not None and state.run_id:  # every xdist worker collected before any test ran
        from gradcli.pytest_collection import shared_path

        for path in (shared_path(state.run_id), shared_path(state.run_id) + ".lock"):
            try:
                os.remove(path)
            except OSError:
                pass


def pytest_report_header(config):
    state = config.stash.get(_STATE, None)
    if state is not None:
        from gradcli import __version__

        n = len(state.files)
        return (f"gradcli {__version__}: {n} file{'s' if n != 1 else ''} under "
                f"{', '.join(config.option.gradcli_paths)} (seed {state.seed})")
    return None


# ----- the --gradcli run --------------------------------------------------------------------------

@dataclass
class _State:
    files: dict  # realpath -> discovery.FileItem: exactly the files `gradcli check PATHS` reads
    options: object  # runner.RunOptions for checking one Function
    seed: int
    strict: bool
    collect_timeout: float
    torch_loaded: bool = False
    done: dict = field(default_factory=dict)  # (realpath, name) -> FunctionResult checked ahead in a batch
    run_id: object = None  # pytest-xdist's testrunuid on its workers (they share one collection), else None
    collected: dict = field(default_factory=dict)  # realpath -> (TargetInfos, load error): every file at once

    @classmethod
    def from_config(cls, config) -> "_State":
        from gradcli.check.discovery import UsageError, expand_paths
        from gradcli.check.inputs import SpecError, parse_assignment, parse_at, parse_shape
        from gradcli.check.runner import RunOptions, unsupported_options

        opt = config.option
        try:
            specs = dict(pair for text in opt.gradcli_at for pair in parse_at(text))
            specs.update(dict(parse_assignment(text) for text in opt.gradcli_input))
            shape = parse_shape(opt.gradcli_shape) if opt.gradcli_shape else (3, 4)
            items = expand_paths([p.partition("::")[0] for p in opt.gradcli_paths])
        except (SpecError, UsageError) as e:
            raise pytest.UsageError(f"--gradcli: {e}") from None
        if opt.gradcli_timeout <= 0:
            raise pytest.UsageError("--gradcli-timeout must be positive")
        seed = opt.gradcli_seed if opt.gradcli_seed is not None else 0
        gradcheck = dict(_command_line_gradcheck_options(config), seed=seed)
        gradcheck.setdefault("second_order", False)
        for name in unsupported_options(gradcheck):
            raise pytest.UsageError(f"--gradcli-{name.replace('_', '-')} is not supported by this gradcli.gradcheck")
        options = RunOptions(gradcheck=gradcheck, seed=seed, dtype=opt.gradcli_dtype or "float64", shape=shape,
                             specs=specs, timeout=opt.gradcli_timeout, jobs=1, exact=opt.gradcli_exact,
                             prove=opt.gradcli_prove, given_inputs=_given_inputs(opt))
        _add_collection_args(config)
        run_id = getattr(config, "workerinput", {}).get("testrunuid")
        return cls({it.abspath: it for it in items}, options, seed, opt.gradcli_strict, opt.gradcli_timeout,
                   run_id=run_id)

    def collection(self, abspath: str) -> tuple:
        """(TargetInfos, load-error FunctionResult or None) of one file, from the runner's
        --collect-only, each file in a forked worker: user code never runs in the pytest process,
        so a file that hangs or exits on import cannot take pytest down. All files are collected
        at the first call, several at a time (as `gradcli check -j`); pytest-xdist's workers share
        that collection (``_shared_collection``) instead of each collecting every file."""
        from gradcli.pytest_collection import collect_all, shared_collection

        if not self.collected:
            self.collected = shared_collection(self) if self.run_id else collect_all(self)
        return self.collected.get(abspath) or collect_all(self, [abspath])[abspath]

    def check(self, abspath: str, name: str, batch=()):
        """The FunctionResult of ``gradcli check file.py::name``: the runner's isolation (a forked
        worker imports the file, a forked checker runs the check under --gradcli-timeout).

        ``batch``: other Functions of the same file this process will run; they are checked by the
        same worker (one fork and one import of the file instead of one per Function) and their
        results kept for their items. Each Function is still checked alone, so batching changes
        no verdict."""
        import dataclasses

        from gradcli.check.runner import FunctionResult
        from gradcli.check.session import run

        if (abspath, name) in self.done:
            return self.done.pop((abspath, name))
        names = [name] + [n for n in batch if n != name and (abspath, n) not in self.done]
        item = dataclasses.replace(self.files[abspath], names=names)
        run_result = run([item], self.options, warm_symbolic=True)  # file after file: warm SymPy here once
        if run_result.interrupted:
            raise KeyboardInterrupt
        for result in run_result.results:
            if result.function in names[1:]:
                self.done[(abspath, result.function)] = result
        found = [r for r in run_result.results if r.function == name] or \
            [r for r in run_result.results if r.function is None]  # the file stopped importing
        if found:
            return found[0]
        return FunctionResult(item.path, name, "gradcli", "error",
                              f"{name} was collected but is no longer defined in {item.path}")

    def _load_torch(self):
        """Import torch (and its lazily loaded autograd machinery) once in this process, so that the
        forked workers and checkers inherit it instead of each paying seconds to import it (the
        runner does the same for `gradcli check`: one worker for the files that import torch)."""
        if not self.torch_loaded:
            self.torch_loaded = True
            from gradcli.heavy_import import import_paused
            try:
                torch = import_paused("torch")  # without garbage collection during the import
            except ImportError:
                return  # the check itself reports "needs PyTorch" as a skip
            x = torch.zeros(1, dtype=torch.float64, requires_grad=True)
            torch.autograd.grad(x * 2, x, torch.ones(1, dtype=torch.float64))


def _given_inputs(opt):
    """Inputs for Functions without example_inputs(), as `gradcli check` reads them: --gradcli-inputs-from,
    then the nearest pyproject.toml's [tool.gradcli] inputs-from and [tool.gradcli.inputs] (specs/check.md 2a)."""
    import os

    from gradcli.check.config import find_config
    from gradcli.check.discovery import UsageError
    from gradcli.check.inputs_from import GivenInputs
    from gradcli.check.paths import locate

    path = opt.gradcli_inputs_from
    if path is not None and not (path.endswith(".py") and os.path.isfile(path)):
        raise pytest.UsageError(f"--gradcli-inputs-from takes an existing Python file: {path}")
    try:
        config = find_config([locate(p)[0] for p in opt.gradcli_paths])
    except UsageError as e:
        raise pytest.UsageError(f"--gradcli: {e}") from None
    files = [os.path.realpath(f) for f in (path, config.inputs_from) if f]
    given = GivenInputs(tuple(dict.fromkeys(files)), config.inputs)
    return given or None


def _command_line_gradcheck_options(config) -> dict:
    """gradcheck options given as --gradcli-* (only those given: gradcheck's defaults stay defaults)."""
    opt = config.option
    given = {"mode": opt.gradcli_mode, "method": opt.gradcli_method, "atol": opt.gradcli_atol,
             "rtol": opt.gradcli_rtol, "eps": opt.gradcli_eps, "seed": opt.gradcli_seed,
             "second_order": opt.gradcli_second_order}
    return {k: v for k, v in given.items() if v is not None}


def _add_collection_args(config):
    """--gradcli paths are collection arguments like pytest's own: given alone, they replace
    testpaths (``pytest --gradcli ops/`` checks ops/ only); with explicit paths, they add to them.
    xdist workers parse the same command line, so they arrive at the same arguments."""
    explicit = bool(config.getoption("file_or_dir"))  # positional paths (command line or addopts)
    args = list(config.args) if explicit else []
    config.args = args + [p for p in config.option.gradcli_paths if p not in args]


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
            self.result = state.check(os.path.realpath(self.path), self.name, self._batch())
        status = self.result.status
        if status == "error":
            pytest.fail(self.result.message, pytrace=False)  # the report shows the panel instead
        if status == "skip" and not state.strict:
            pytest.skip(self.skip_reason())

    def _batch(self) -> list:
        """The Functions of this file that this run still has to check: all of its selected items in
        a serial run; none under xdist, where the controller deals items out one by one and a
        batch would check, on this worker, Functions that another worker is given."""
        if hasattr(self.config, "workerinput") or self.config.getoption("exitfirst", False):
            return []  # (with -x, Functions after the first failure must not be checked at all)
        return [item.name for item in self.session.items
                if isinstance(item, GradcliItem) and item.path == self.path and item.result is None]

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
    defaults.update(_command_line_gradcheck_options(request.config))
    defaults.update(_marker_options(request.node))

    def check(fn, *inputs, **options):
        __tracebackhide__ = True
        from gradcli.testing import assert_gradcheck

        merged = {k: v for k, v in defaults.items() if not (inputs and k in BUILD_OPTIONS)}
        merged.update(options)
        return assert_gradcheck(fn, *inputs, **merged)

    return check
