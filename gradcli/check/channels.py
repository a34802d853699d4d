"""The channels of ``gradcli check``'s processes: pickled frames on pipes, forks, captured output.

Results travel from a forked worker or checker to its parent as length-prefixed pickled frames, on
a pipe moved to a high, close-on-exec descriptor user code does not know; a child's fds 1 and 2
point to a temporary file that the parent (or the child itself) reads back, whatever user code did
to ``sys.stdout``. processes.py builds workers and checkers from these; scheduler.py runs them.
"""
from __future__ import annotations

import fcntl
import gc
import os
import pickle
import signal
import struct
import sys
import tempfile
from typing import Callable

from gradcli.check.reaper import die_with_parent

MAX_OUTPUT = 4000  # characters of captured user output kept with a result
CHANNEL_FD = 512  # result pipes are moved to the first free descriptor from here (out of user code's way)

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


def _channel(w: int) -> int:
    """The write end of a result pipe moved to a high, close-on-exec descriptor: user code that
    closes or reuses low descriptors (``os.closerange(3, 256)``, ``dup2`` onto 3) misses it, and a
    program it ``exec``s does not inherit it."""
    try:
        high = fcntl.fcntl(w, fcntl.F_DUPFD_CLOEXEC, CHANNEL_FD)
    except OSError:  # a low descriptor limit: keep the pipe where it is
        return w
    os.close(w)
    return high


def _fork(body: Callable[[int], None], new_group: bool = False) -> tuple:
    """Fork a child running ``body(write_fd)`` (in its own process group if ``new_group``);
    returns (pid, read_fd)."""
    _flush()
    gc.freeze()  # the child's garbage collector leaves inherited objects alone: no copy-on-write storm
    r, w = os.pipe()
    parent = os.getpid()
    pid = os.fork()
    if pid == 0:  # child: never returns
        code = 0
        try:
            die_with_parent(parent)
            os.close(r)
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            if hasattr(signal, "pthread_sigmask"):  # the scheduler forks workers with SIGINT held back
                signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
            if new_group:
                os.setpgid(0, 0)  # Ctrl-C at the terminal reaches the parent only; it kills the group
            devnull = os.open(os.devnull, os.O_RDONLY)
            os.dup2(devnull, 0)
            body(_channel(w))
        except BaseException:  # noqa: BLE001 -- a child must never fall back into the parent's code
            import traceback

            traceback.print_exc(file=_STREAMS[1] if _STREAMS else None)  # into the captured output
            code = 70
        finally:
            os._exit(code)
    gc.unfreeze()  # this process goes on as before (frozen objects would never be collected)
    os.close(w)
    return pid, r


_CAPTURE: list = []  # the temporary file a worker's (and its checkers') fds 1 and 2 point to
_STREAMS: list = []  # gradcli's own text streams on fds 1 and 2 (user code may close or replace sys.stdout)


def _flush():
    """Flush buffered output before a fork or a read: gradcli's own streams when capturing (what
    user code did to ``sys.stdout``/``sys.stderr`` must not break the result channel), else the
    process's."""
    for stream in _STREAMS or (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # noqa: BLE001 -- closed, replaced by None, a stream that raises
            pass


def _capture(capture=None) -> int:
    """Send this process's fds 1 and 2 to a temporary file (once; ``capture`` if given); returns its
    fd, to read back."""
    if not _CAPTURE:
        _CAPTURE.append(capture if capture is not None else tempfile.TemporaryFile())
        os.dup2(_CAPTURE[0].fileno(), 1)
        os.dup2(_CAPTURE[0].fileno(), 2)
        # the parent's sys.stdout may not be fd 1 (a test runner's buffer): write to the fds themselves
        _STREAMS[:] = [open(1, "w", closefd=False, errors="replace"), open(2, "w", closefd=False, errors="replace")]
        sys.stdout, sys.stderr = _STREAMS
    return _CAPTURE[0].fileno()


def _read_output(fd: int) -> str:
    _flush()
    try:
        text = os.pread(fd, MAX_OUTPUT + 1, 0).decode("utf-8", "replace")  # the file, not fd 1 (user code's)
    except OSError:
        return ""
    return text if len(text) <= MAX_OUTPUT else text[:MAX_OUTPUT] + "\n[... output truncated]"


def _died(status: int) -> str:
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        return f"killed by signal {signal.Signals(sig).name}" if sig in signal.Signals._value2member_map_ else \
            f"killed by signal {sig}"
    return f"exited with code {os.waitstatus_to_exitcode(status)}"
