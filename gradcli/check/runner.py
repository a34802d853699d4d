"""Running ``gradcli check``: one isolated process per file and per Function, and the run's results.

Process layout (POSIX): the parent never imports user code. A forked *worker*, in its own process
group, imports a file, collects and selects its Functions, then forks one *checker* per Function
and kills it after ``timeout`` seconds; each file has its own worker, except that files importing
torch share one (torch's import costs seconds). Results travel back as pickled frames over pipes.
An exception, ``sys.exit``, ``os._exit``, a crash or a hang in user code becomes an error result
for that Function (or file) and the run goes on (a worker that dies hands its remaining files to
a new one); Ctrl-C in the parent kills the workers' process groups and returns what finished.
Without ``os.fork`` everything runs in-process, without timeouts.

The module holds the run-level dataclasses, the per-Function check, and the process machinery:
one place for everything a run is, at the cost of being longer than most modules.

Data flows one way: inputs -> gradcheck -> these dataclasses (``to_dict()``) -> renderers.
"""
from __future__ import annotations

import gc
import os
import pickle
import select
import signal
import struct
import sys
import tempfile
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

from gradcli.check.discovery import (LoadError, collect, describe_exception, imports_torch, load_module,
                                     select as select_targets, user_traceback)

BAD = ("fail", "error")
KILL_GRACE = 10.0  # the parent's backstop beyond the worker's own per-Function timeout
MAX_OUTPUT = 4000  # characters of captured user output kept with a result


@dataclass
class RunOptions:
    gradcheck: dict = field(default_factory=dict)  # passed through to gradcli.gradcheck
    seed: int = 0
    dtype: str = "float64"
    shape: tuple = (3, 4)
    specs: dict = field(default_factory=dict)  # forward parameter name -> inputs.Spec
    timeout: float = 60.0
    exitfirst: bool = False
    keyword: Optional[Callable] = None  # compiled -k expression
    collect_only: bool = False
    jobs: int = 1  # files checked at the same time
    isolate: bool = True  # fork per file and per Function (needs os.fork)
    debug: bool = False  # tracebacks keep gradcli's own frames


@dataclass
class CaseResult:
    """One set of forward arguments and gradcheck's report for it."""

    inputs: list  # JSON records, one per argument (see inputs._record)
    status: str = "pass"
    message: str = ""
    report: Any = None  # CheckReport, None when gradcheck did not run
    traceback: str = field(default="", repr=False)  # of an exception (not in JSON)


@dataclass
class FunctionResult:
    file: str
    function: Optional[str]  # None for a file that failed to import
    backend: str
    status: str  # pass | fail | error | skip
    message: str = ""
    cases: list = field(default_factory=list)
    line: Optional[int] = None  # the class (or, for errors, the failing line) in ``file``
    backward_line: Optional[int] = None
    style: str = ""
    hint: str = ""  # e.g. the migration hint for the legacy style (not in JSON)
    traceback: str = field(default="", repr=False)
    output: str = field(default="", repr=False)  # captured stdout/stderr of user code
    duration: float = 0.0

    def to_dict(self) -> dict:
        from gradcli.check.report import json_safe

        return {
            "file": self.file,
            "function": self.function,
            "backend": self.backend,
            "status": self.status,
            "message": self.message,
            "inputs": json_safe([c.inputs for c in self.cases]),
            "checks": [c.report.to_dict() if c.report is not None else None for c in self.cases],
        }


@dataclass
class RunResult:
    results: list = field(default_factory=list)
    seed: int = 0
    duration: float = 0.0
    collected: list = field(default_factory=list)  # TargetInfo of every selected Function, in file order
    deselected: int = 0  # by -k
    not_found: list = field(default_factory=list)  # ``file::Name`` selectors that matched nothing
    interrupted: bool = False

    def count(self, status: str) -> int:
        return sum(r.status == status for r in self.results)

    @property
    def summary(self) -> dict:
        return {"passed": self.count("pass"), "failed": self.count("fail"),
                "errors": self.count("error"), "skipped": self.count("skip")}

    def closing_line(self) -> str:
        """pytest's form: ``3 passed, 1 failed, 1 error in 0.84s``."""
        s = self.summary
        parts = [f"{s['passed']} passed"] if s["passed"] else []
        parts += [f"{s['failed']} failed"] if s["failed"] else []
        parts += [f"{s['errors']} error{'s' if s['errors'] != 1 else ''}"] if s["errors"] else []
        parts += [f"{s['skipped']} skipped"] if s["skipped"] else []
        parts += [f"{self.deselected} deselected"] if self.deselected else []
        text = ", ".join(parts) if parts else "no Functions checked"
        return f"{text} in {self.duration:.2f}s" + (" (interrupted)" if self.interrupted else "")

    def exit_code(self, strict: bool = False, collect_only: bool = False) -> int:
        """pytest's codes: 0 passed, 1 failures (or skips with ``strict``), 2 interrupted or a
        selector that matched nothing, 3 errors in user code only, 5 nothing collected."""
        s = self.summary
        if self.interrupted or self.not_found:
            return 2
        if collect_only:
            return 3 if s["errors"] else 0 if self.collected else 5
        if not self.results:
            return 5
        if s["failed"] or (strict and s["skipped"]):
            return 1
        if s["errors"]:
            return 3
        return 0

    def unused_inputs(self, names) -> list:
        """``--input`` names that are no parameter of any selected Function's forward."""
        known = {p for info in self.collected for p in info.params}
        return sorted(set(names) - known) if self.collected else []

    def to_dict(self) -> dict:
        from gradcli import __version__

        return {"gradcli_version": __version__, "seed": self.seed, "summary": self.summary,
                "results": [r.to_dict() for r in self.results]}


class RunEvents:
    """Hooks for progress and streaming output; every method is optional."""

    def collected(self, count: int):
        pass

    def started(self, file: str, name: str):
        pass

    def result(self, result: FunctionResult):
        pass

    def file_done(self, file: str, results: list):
        pass


GRADCHECK_OPTIONS = ("mode", "method", "atol", "rtol", "seed", "second_order")  # known to be taken


def unsupported_options(gradcheck_options: dict) -> list:
    """Option names that this ``gradcli.gradcheck`` does not take (a usage error for the CLI).
    Imports gradcheck only for an option outside GRADCHECK_OPTIONS (start-up stays light)."""
    unknown = [name for name in gradcheck_options if name not in GRADCHECK_OPTIONS]
    if not unknown:
        return []
    import inspect

    import gradcli

    accepted = inspect.signature(gradcli.gradcheck).parameters
    return [name for name in unknown if name not in accepted]


# ----- checking one Function (in the checker process) ---------------------------------------------

def check_target(target, options: RunOptions, announce: Callable = lambda records: None) -> FunctionResult:
    """Build the inputs, run gradcheck for each input set, and turn everything into a result."""
    import warnings

    import numpy as np

    from gradcli.check.inputs import ForwardBroken, NoInputs, backend_for, build_cases

    start = time.perf_counter()
    res = FunctionResult(target.file, target.name, target.backend, "pass", line=target.line,
                         backward_line=target.backward_line, style=target.style)
    if target.style == "legacy":
        from gradcli.autograd.function import _legacy_hint

        res.hint = _legacy_hint(target.cls)
    abspath = os.path.realpath(sys.modules[target.cls.__module__].__file__)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            cases = build_cases(target, options.specs, seed=options.seed, dtype=options.dtype, shape=options.shape)
            announce([c.records for c in cases])
            be = backend_for(target.backend)
            for case in cases:
                res.cases.append(_check_case(target, case, be, options, abspath))
        except NoInputs as e:
            res.status, res.message = "skip", str(e)
        except ForwardBroken as e:
            res.status, res.message = "error", str(e)
        except (Exception, SystemExit) as e:
            res.status = "error"
            res.message, line = describe_exception(e, abspath)
            res.line = line or res.line
            res.traceback = _traceback(e, options.debug)
    if res.cases and res.status == "pass":
        statuses = [c.status for c in res.cases]
        res.status = next((s for s in ("error", "fail") if s in statuses),
                          "skip" if all(s == "skip" for s in statuses) else "pass")
        bad = [(i, c) for i, c in enumerate(res.cases) if c.status == res.status and c.message]
        if bad:
            i, case = bad[0]
            res.message = (f"input set {i + 1} of {len(res.cases)}: " if len(res.cases) > 1 else "") + case.message
    if res.status == "error" and any(c.report is not None for c in res.cases if c.status == "error"):
        res.line = res.backward_line or res.line  # gradcheck ran: the exception came from backward
    if res.status == "pass" and res.hint:
        res.message = "legacy instance-style Function: migrate to @staticmethod forward(ctx, ...)/backward(ctx, ...)"
    res.duration = time.perf_counter() - start
    return res


def _check_case(target, case, be, options: RunOptions, abspath: str) -> CaseResult:
    from gradcli import gradcheck
    from gradcli.check.inputs import forward_problem

    out = CaseResult(case.records)
    try:
        why, _ = forward_problem(be, target.fn, case.args)
        if why is not None:
            out.status = "error"
            out.message = f"{why} at the given inputs: not checked; choose inputs inside forward's domain"
            return out
        report = gradcheck(target.fn, case.args, **options.gradcheck)
    except (Exception, SystemExit) as e:
        out.status = "error"
        out.message = describe_exception(e, abspath)[0]
        out.traceback = _traceback(e, options.debug)
        return out
    out.report, out.status = report, report.status
    raised = report.check("backward")
    if raised is not None and raised.status == "fail":  # an exception in user code: error, not a verdict
        out.status, out.message = "error", raised.message
        return out
    if not report.ok and not report.diagnosis:
        report.diagnosis = _diagnose(report, target.fn, case.args)
    failed = report.failures
    if failed:
        out.message = f"{failed[0].name}: {failed[0].message}"
    return out


def _diagnose(report, fn, args) -> list:
    """The diagnosis layer's findings for a failed report; none when it is absent or breaks."""
    try:
        from gradcli.check.diagnosis import diagnose

        return list(diagnose(report, fn, tuple(args)))
    except Exception:  # noqa: BLE001 -- a diagnosis is a bonus: never turn a verdict into an error
        return []


def _traceback(e: BaseException, debug: bool) -> str:
    if debug:
        import traceback

        return "".join(traceback.format_exception(e))
    return user_traceback(e)


# ----- one file: the messages a worker sends --------------------------------------------------------

def file_messages(item, options: RunOptions, check: Callable):
    """Import, collect, select and check one file, yielding ("kind", ...) messages in order."""
    module = load_module(item)
    if isinstance(module, LoadError):
        yield ("load_error", module)
        return
    targets = collect(module, item)
    chosen, deselected, missing = select_targets(targets, item, options.keyword)
    yield ("collected", [t.info() for t in chosen], deselected, missing, [t.name for t in targets])
    if options.collect_only:
        return
    for target in chosen:
        yield ("start", target.name)
        result = check(target, options)
        yield ("result", result)
        if options.exitfirst and result.status in BAD:
            return


class _Collector:
    """Turns messages into a RunResult, in file order, and tells the events."""

    def __init__(self, items, options: RunOptions, events: RunEvents):
        self.run = RunResult(seed=options.seed)
        self.items = items
        self.events = events
        self.per_file = {item.path: [] for item in items}
        self.collected = {}  # file -> TargetInfo of its selected Functions
        self.finished = set()
        self.emitted = 0
        self.stop = False
        self.exitfirst = options.exitfirst

    def handle(self, item, message):
        kind = message[0]
        if kind == "load_error":
            err = message[1]
            self._add(item, FunctionResult(item.path, None, "torch" if imports_torch(item.abspath) else "gradcli",
                                           "skip" if err.skip else "error", err.message, line=err.line,
                                           traceback=err.traceback))
        elif kind == "collected":
            chosen, deselected, missing, known = message[1:]
            self.run.deselected += deselected
            defines = f"{item.path} defines: {', '.join(known)}" if known else f"no Functions in {item.path}"
            self.run.not_found += [f"{item.path}::{n} ({defines})" for n in missing]
            self.collected[item.path] = chosen
            self.events.collected(len(chosen))
        elif kind == "start":
            self.events.started(item.path, message[1])
        elif kind == "result":
            self._add(item, message[1])

    def _add(self, item, result: FunctionResult):
        self.per_file[item.path].append(result)
        self.events.result(result)
        if self.exitfirst and result.status in BAD:
            self.stop = True

    def file_finished(self, item):
        self.finished.add(item.path)
        while self.emitted < len(self.items) and self.items[self.emitted].path in self.finished:
            path = self.items[self.emitted].path
            self.run.results += self.per_file[path]
            self.events.file_done(path, self.per_file[path])
            self.emitted += 1

    def result(self, start: float) -> RunResult:
        for item in self.items[self.emitted:]:  # interrupted: keep what finished
            self.run.results += self.per_file[item.path]
        self.run.collected = [info for item in self.items for info in self.collected.get(item.path, ())]
        self.run.duration = time.perf_counter() - start
        return self.run


# ----- the run ---------------------------------------------------------------------------------------

def run(items, options: RunOptions, events: Optional[RunEvents] = None) -> RunResult:
    """Check every file in ``items`` (from discovery.expand_paths)."""
    events = events or RunEvents()
    start = time.perf_counter()
    collector = _Collector(items, options, events)
    if not (options.isolate and hasattr(os, "fork")):
        for item in items:
            if collector.stop:
                break
            for message in file_messages(item, options, check_target):
                collector.handle(item, message)
            collector.file_finished(item)
        return collector.result(start)
    try:
        _run_workers(items, options, collector)
    except KeyboardInterrupt:
        collector.run.interrupted = True
    return collector.result(start)


# ----- isolation: worker per file, checker per Function --------------------------------------------

_HEADER = struct.Struct("!Q")


def _send(fd: int, obj):
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    view = memoryview(_HEADER.pack(len(data)) + data)
    while view:
        view = view[os.write(fd, view):]


class _Frames:
    """Reassembles pickled frames from a pipe read in arbitrary chunks."""

    def __init__(self):
        self.buffer = bytearray()

    def feed(self, chunk: bytes) -> list:
        self.buffer += chunk
        out = []
        while len(self.buffer) >= _HEADER.size:
            (size,) = _HEADER.unpack_from(self.buffer)
            if len(self.buffer) < _HEADER.size + size:
                break
            out.append(pickle.loads(bytes(self.buffer[_HEADER.size:_HEADER.size + size])))
            del self.buffer[:_HEADER.size + size]
        return out


def _fork(body: Callable[[int], None], new_group: bool = False) -> tuple:
    """Fork a child running ``body(write_fd)`` (in its own process group if ``new_group``);
    returns (pid, read_fd)."""
    sys.stdout.flush()
    sys.stderr.flush()
    gc.freeze()  # the child's garbage collector leaves inherited objects alone: no copy-on-write storm
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: never returns
        code = 0
        try:
            os.close(r)
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            if new_group:
                os.setpgid(0, 0)  # Ctrl-C at the terminal reaches the parent only; it kills the group
            devnull = os.open(os.devnull, os.O_RDONLY)
            os.dup2(devnull, 0)
            body(w)
        except BaseException:  # noqa: BLE001 -- a child must never fall back into the parent's code
            import traceback

            traceback.print_exc()  # into the captured output, shown with the error result
            code = 70
        finally:
            os._exit(code)
    gc.unfreeze()  # this process goes on as before (frozen objects would never be collected)
    os.close(w)
    return pid, r


_CAPTURE: list = []  # the temporary file a worker's (and its checkers') fds 1 and 2 point to


def _capture() -> int:
    """Send this process's fds 1 and 2 to a temporary file (once); returns its fd, to read back."""
    if not _CAPTURE:
        _CAPTURE.append(tempfile.TemporaryFile())
        os.dup2(_CAPTURE[0].fileno(), 1)
        os.dup2(_CAPTURE[0].fileno(), 2)
        # the parent's sys.stdout may not be fd 1 (a test runner's buffer): write to the fds themselves
        sys.stdout = open(1, "w", closefd=False, errors="replace")
        sys.stderr = open(2, "w", closefd=False, errors="replace")
    return _CAPTURE[0].fileno()


def _read_output(fd: int) -> str:
    try:
        sys.stdout.flush()
        sys.stderr.flush()
        os.lseek(fd, 0, os.SEEK_SET)
        text = os.read(fd, MAX_OUTPUT + 1).decode("utf-8", "replace")
    except OSError:
        return ""
    return text if len(text) <= MAX_OUTPUT else text[:MAX_OUTPUT] + "\n[... output truncated]"


def _died(status: int) -> str:
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        return f"killed by signal {signal.Signals(sig).name}" if sig in signal.Signals._value2member_map_ else \
            f"killed by signal {sig}"
    return f"exited with code {os.waitstatus_to_exitcode(status)}"


def _check_in_child(target, options: RunOptions) -> FunctionResult:
    """Run check_target in a forked checker; time it out; turn a dead child into an error result."""
    out_fd = _capture()

    def body(w):
        result = check_target(target, options, announce=lambda records: _send(w, ("cases", records)))
        result.output = _read_output(out_fd)
        try:
            _send(w, ("result", result))
        except Exception as e:  # noqa: BLE001 -- e.g. an unpicklable object in a report
            _send(w, ("result", FunctionResult(result.file, result.function, result.backend, "error",
                                               f"could not transfer the result: {type(e).__name__}: {e}")))

    os.lseek(out_fd, 0, os.SEEK_SET)
    os.ftruncate(out_fd, 0)
    start = time.perf_counter()
    pid, fd = _fork(body)
    frames, cases, result, timed_out = _Frames(), [], None, False
    deadline = time.monotonic() + options.timeout
    with os.fdopen(fd, "rb", buffering=0) as pipe:
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not select.select([pipe], [], [], remaining)[0]:
                timed_out = True
                os.kill(pid, signal.SIGKILL)
                break
            chunk = pipe.read(1 << 20)
            if not chunk:
                break
            for kind, payload in frames.feed(chunk):
                if kind == "cases":
                    cases = payload
                else:
                    result = payload
    _, status = os.waitpid(pid, 0)
    if result is not None:
        return result
    why = f"timed out after {options.timeout:g} s (--timeout)" if timed_out else \
        f"the checking process {_died(status)} without a result (os._exit or a crash in user code?)"
    return FunctionResult(target.file, target.name, target.backend, "error", why, line=target.line,
                          backward_line=target.backward_line, style=target.style,
                          cases=[CaseResult(records, "error", why) for records in cases],
                          output=_read_output(out_fd), duration=time.perf_counter() - start)


def _worker_body(batch: list, options: RunOptions, w: int):
    _capture()  # user code's prints never reach the terminal
    for position, item in enumerate(batch):
        _send(w, ("file", position))
        for message in file_messages(item, options, _check_in_child):
            _send(w, message)
            if message[0] == "collected" and not options.collect_only:
                _warm_up({info.backend for info in message[1]})
        _send(w, ("file_done", position))


def _warm_up(backends: set):
    """Load, once per worker, what every checker would otherwise load again after its fork: the
    checker (when the parent had not yet), and torch's lazily imported autograd machinery."""
    _preload(RunOptions())
    if "torch" in backends:
        torch = sys.modules["torch"]
        x = torch.zeros(1, dtype=torch.float64, requires_grad=True)
        torch.autograd.grad(x * 2, x, torch.ones(1, dtype=torch.float64))


class _Worker:
    """A forked process checking a batch of files one after the other."""

    def __init__(self, batch: list, options: RunOptions):
        self.batch = batch
        self.item = None  # file in progress
        self.finished = 0  # files of the batch completely handled
        self.current = None  # Function being checked
        self.pid, self.fd = _fork(lambda w: _worker_body(batch, options, w), new_group=True)
        try:
            os.setpgid(self.pid, self.pid)
        except OSError:
            pass
        self.frames = _Frames()
        self.deadline = time.monotonic() + options.timeout

    def kill(self):
        try:
            os.killpg(self.pid, signal.SIGKILL)
        except OSError:
            pass


def _batches(items, exitfirst: bool) -> list:
    """Files that import torch share one worker, so torch is imported once per run (it takes
    seconds); it starts first, except with -x, where checking order follows file order."""
    torch_files = [it for it in items if imports_torch(it.abspath)]
    batches = [[it] for it in items if it not in torch_files]
    if torch_files:
        at = next((i for i, b in enumerate(batches) if items.index(b[0]) > items.index(torch_files[0])),
                  len(batches)) if exitfirst else 0
        batches.insert(at, torch_files)
    return batches


def _preload(options: RunOptions):
    """What every checker needs, loaded once and inherited by each fork (idempotent)."""
    if not options.collect_only:
        import gradcli.autograd.namespace  # noqa: F401
        import gradcli.check.diagnosis  # noqa: F401
        import gradcli.check.gradcheck  # noqa: F401


def _run_workers(items, options: RunOptions, collector: _Collector):
    jobs = 1 if options.exitfirst else max(1, options.jobs)
    queue = _batches(items, options.exitfirst)
    active: dict = {}
    try:
        while queue or active:
            while queue and len(active) < jobs and not collector.stop:
                worker = _Worker(queue.pop(0), options)
                active[worker.fd] = worker
                _preload(options)  # after the first fork: the torch batch, the slowest, starts at once
            if not active:
                break
            timeout = max(0.0, min(w.deadline for w in active.values()) - time.monotonic())
            for fd in select.select(list(active), [], [], timeout)[0]:
                worker = active[fd]
                chunk = os.read(fd, 1 << 20)
                for message in worker.frames.feed(chunk):
                    _relay(worker, message, collector, options)
                if not chunk:
                    queue[:0] = _finish(active.pop(fd), collector)
            for fd, worker in list(active.items()):
                if time.monotonic() > worker.deadline:
                    worker.kill()
                    queue[:0] = _finish(active.pop(fd), collector, timeout=options.timeout)
    finally:
        for worker in active.values():  # interrupted: kill what still runs
            worker.kill()
            os.waitpid(worker.pid, 0)
            os.close(worker.fd)


def _relay(worker: _Worker, message, collector: _Collector, options: RunOptions):
    kind = message[0]
    worker.deadline = time.monotonic() + options.timeout + KILL_GRACE  # the worker times checks itself
    if kind == "file":
        worker.item = worker.batch[message[1]]
        worker.deadline = time.monotonic() + options.timeout  # importing it
    elif kind == "file_done":
        collector.file_finished(worker.item)
        worker.item, worker.finished = None, message[1] + 1
    else:
        worker.current = message[1] if kind == "start" else None
        collector.handle(worker.item, message)


def _finish(worker: _Worker, collector: _Collector, timeout: Optional[float] = None) -> list:
    """Reap a worker (killed after ``timeout`` if given); returns the batch's files left to check."""
    _, status = os.waitpid(worker.pid, 0)
    os.close(worker.fd)
    item = worker.item
    if item is not None:
        what = f"timed out after {timeout:g} s" if timeout is not None else _died(status)
        name = worker.current
        message = (f"checking stopped: the worker process {what}" if name else
                   f"importing the file {what}" if timeout is not None else
                   f"the worker process {what} while importing")
        backend = "torch" if imports_torch(item.abspath) else "gradcli"
        collector.handle(item, ("result", FunctionResult(item.path, name, backend, "error", message)))
        collector.file_finished(item)
    rest = worker.batch[worker.finished + (item is not None):]
    return [rest] if rest and not collector.stop else []
