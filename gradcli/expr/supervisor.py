"""Run one ``gradcli diff`` in a forked worker and never wait for it past the budget.

The CLI process stays light (click only): the worker imports SymPy, computes, renders the output to text
and sends it back through a pipe, reporting each phase as it starts. The worker leads its own process
group, and it and every process it forks are bound to their parents (``lifeline.py``), so killing the
group - or gradcli itself, even with SIGKILL - leaves nothing running. The worker enforces the budget
itself (``deadline.py``, with a reserve for printing) and prints what it finished; if it is stuck in a C
call when the budget is over, the supervisor kills it and prints a one-line refusal naming the phase (exit 2),
so the whole command never runs past its budget.
"""
import os
import pickle
import select
import signal
import sys
import time
from dataclasses import dataclass

from gradcli.expr import lifeline

_HEADER = 8
KILL_MARGIN = 0.3   # the worker is killed this long before the budget, so that reaping it ends within it


@dataclass
class Outcome:
    stdout: str
    stderr: str
    code: int


def _send(fd, payload):
    data = pickle.dumps(payload)
    view = memoryview(len(data).to_bytes(_HEADER, "little") + data)
    while view:
        view = view[os.write(fd, view):]


def _worker(work, write_end, parent_pid, deadline_end):
    try:
        try:
            os.setpgid(0, 0)
        except OSError:
            pass
        lifeline.bind_to_parent(parent_pid)
        signal.signal(signal.SIGINT, signal.SIG_IGN)    # Ctrl-C is the supervisor's to handle
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        outcome = work(lambda phase: _send(write_end, ("phase", phase)), deadline_end)
        _send(write_end, ("done", outcome))
    except BaseException as error:  # noqa: BLE001 - reported as data; the supervisor prints it
        try:
            _send(write_end, ("done", Outcome("", f"internal error: {type(error).__name__}: {error} "
                                                  "(run with --debug)\n", 3)))
        except BaseException:  # noqa: BLE001
            pass
    finally:
        os._exit(0)


def _kill(pid):
    for kill in (lambda: os.killpg(pid, signal.SIGKILL), lambda: os.kill(pid, signal.SIGKILL)):
        try:
            kill()
        except (ProcessLookupError, PermissionError, OSError):
            pass
    try:
        os.waitpid(pid, 0)
    except ChildProcessError:
        pass


def supervise(work, budget, started=None):
    """``work(progress, deadline_end) -> Outcome``, run in a worker and bounded by ``budget`` seconds
    from ``started`` (monotonic; default now). Returns the worker's Outcome or a refusal."""
    started = time.monotonic() if started is None else started
    deadline_end = started + budget
    if not hasattr(os, "fork"):  # pragma: no cover - no fork: in this process, bounded by the alarm alone
        return work(lambda phase: None, deadline_end)
    sys.stdout.flush()
    sys.stderr.flush()
    read_end, write_end = os.pipe()
    parent_pid = os.getpid()
    pid = os.fork()
    if pid == 0:
        os.close(read_end)
        _worker(work, write_end, parent_pid, deadline_end)
    os.close(write_end)
    try:
        os.setpgid(pid, pid)   # also from this side: no window where the worker is in our group
    except OSError:
        pass
    previous = _on_sigterm(pid)
    phase, outcome, buffer = "starting", None, b""
    try:
        while outcome is None:
            left = deadline_end - KILL_MARGIN - time.monotonic()
            if left <= 0:
                break
            ready, _, _ = select.select([read_end], [], [], left)
            if not ready:
                break
            chunk = os.read(read_end, 1 << 16)
            if not chunk:
                break
            buffer += chunk
            while len(buffer) >= _HEADER:
                size = int.from_bytes(buffer[:_HEADER], "little")
                if len(buffer) < _HEADER + size:
                    break
                kind, payload = pickle.loads(buffer[_HEADER:_HEADER + size])
                buffer = buffer[_HEADER + size:]
                if kind == "phase":
                    phase = payload
                else:
                    outcome = payload
    finally:
        os.close(read_end)
        _kill(pid)
        _restore_sigterm(previous)
    if outcome is not None:
        return outcome
    if time.monotonic() >= deadline_end - KILL_MARGIN:
        return Outcome("", f"error: gave up after {budget:g} s (the --budget) while {phase}: the expression "
                           "is too expensive; try a larger --budget or a smaller expression\n", 2)
    return Outcome("", f"internal error: the worker ended without a result while {phase} "
                       "(out of memory?)\n", 3)


def _on_sigterm(pid):
    """SIGTERM to gradcli takes the worker group with it (PR_SET_PDEATHSIG covers SIGKILL)."""
    def handler(signum, frame):
        _kill(pid)
        os._exit(128 + signum)
    try:
        return signal.signal(signal.SIGTERM, handler)
    except (ValueError, OSError):   # not the main thread
        return None


def _restore_sigterm(previous):
    if previous is not None:
        try:
            signal.signal(signal.SIGTERM, previous)
        except (ValueError, OSError):
            pass
