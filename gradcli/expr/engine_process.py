"""A process forked before SymPy is imported, to import numpy and the engine meanwhile and run the numbers.

``gradcli diff ... --at`` needs both SymPy (~0.4 s to import) and numpy + the engine (~0.2 s); in one
process those add up, in two they overlap. The child receives one ``NumericJob`` (pure data) and sends
back its ``PointNumbers``; it never prints and always leaves through ``os._exit``. Without fork, or if
the child dies, the caller runs the same job in-process.
"""
import os
import pickle
import select
import signal
import sys

from gradcli.expr import lifeline

_HEADER = 8


def _send(fd, payload):
    data = pickle.dumps(payload)
    view = memoryview(len(data).to_bytes(_HEADER, "little") + data)
    while view:
        view = view[os.write(fd, view):]


class _Timeout(Exception):
    pass


def _receive(fd, timeout):
    import time
    end = None if timeout is None else time.monotonic() + timeout
    buffer, size = b"", None
    while size is None or len(buffer) < _HEADER + size:
        ready, _, _ = select.select([fd], [], [], None if end is None else max(0.0, end - time.monotonic()))
        if not ready:
            raise _Timeout()
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            return None
        buffer += chunk
        if size is None and len(buffer) >= _HEADER:
            size = int.from_bytes(buffer[:_HEADER], "little")
    return pickle.loads(buffer[_HEADER:_HEADER + size])


class EngineProcess:
    """One job's worth of engine work in a pre-forked child."""

    def __init__(self):
        self.pid = None
        self._job = None
        if not hasattr(os, "fork"):  # pragma: no cover - the caller then runs the job in-process
            return
        sys.stdout.flush()
        sys.stderr.flush()
        to_child, from_parent = os.pipe()
        to_parent, from_child = os.pipe()
        parent = os.getpid()
        pid = os.fork()
        if pid == 0:
            os.close(from_parent)
            os.close(to_parent)
            _serve(to_child, from_child, parent)
        os.close(to_child)
        os.close(from_child)
        self.pid, self._write, self._read = pid, from_parent, to_parent

    def submit(self, job):
        """Hand the job to the child (it has been importing numpy and the engine meanwhile)."""
        self._job = job
        if self.pid is None:
            return
        try:
            _send(self._write, job)
        except OSError:
            self.close()

    def results(self, timeout=300.0):
        """The job's PointNumbers list; computed in this process if the child died without delivering;
        None if it was still computing after ``timeout`` seconds (it is killed then)."""
        delivered = None
        if self.pid is not None:
            try:
                delivered = _receive(self._read, timeout)
            except (OSError, pickle.PickleError, EOFError):
                delivered = None
            except _Timeout:
                self.close()
                return None
            finally:
                self.close()
        if delivered is None:
            from gradcli.expr.numeric_side import run_numeric
            delivered = run_numeric(self._job)
        return delivered

    def close(self):
        if self.pid is None:
            return
        for fd in (self._write, self._read):
            try:
                os.close(fd)
            except OSError:
                pass
        pid, self.pid = self.pid, None   # first: an alarm striking below must not make a second close wait again
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        try:
            os.waitpid(pid, 0)
        except ChildProcessError:
            pass


def _serve(read_end, write_end, parent):
    try:
        lifeline.bind_to_parent(parent)
        signal.signal(signal.SIGINT, signal.SIG_IGN)   # Ctrl-C is the parent's to handle
        import numpy  # noqa: F401  (the point of this process: import while the parent imports SymPy)

        import gradcli.autograd  # noqa: F401
        import gradcli.autograd.namespace  # noqa: F401
        import gradcli.numeric.estimators  # noqa: F401
        from gradcli.expr.numeric_side import run_numeric
        job = _receive(read_end, None)
        if job is not None:
            _send(write_end, run_numeric(job))
    except BaseException:  # noqa: BLE001 - the parent notices the silence and runs the job itself
        pass
    finally:
        os._exit(0)
