"""Children of ``gradcli diff`` die with their parent, however the parent ends (even SIGKILL).

Every forked child (the supervised worker, the engine process, the budgeted SymPy children) calls
``bind_to_parent`` first thing. On Linux that is ``prctl(PR_SET_PDEATHSIG, SIGKILL)``: the kernel kills
the child the moment its parent dies; a parent that died before the call is caught by comparing
``getppid()``. Elsewhere (no prctl) a daemon thread polls ``getppid()`` every 0.2 s and leaves with
``os._exit`` once the parent is gone: it needs the GIL, so a child stuck in one long C call (a huge
integer power) outlives its parent until that call returns - specs/diff.md says so.
"""
import os
import signal
import sys
import threading
import time

PR_SET_PDEATHSIG = 1
POLL_SECONDS = 0.2
MEMORY_HEADROOM = 4 << 30   # bytes of address space a worker may add to what it inherited


def _prctl_pdeathsig():
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _watch(parent_pid):
    while True:
        time.sleep(POLL_SECONDS)
        if os.getppid() != parent_pid:
            os._exit(0)


def bind_to_parent(parent_pid):
    """Make this (just forked) process die when ``parent_pid`` does. Returns how: "pdeathsig" or "poll"."""
    how = "pdeathsig" if _prctl_pdeathsig() else "poll"
    if how == "poll":
        threading.Thread(target=_watch, args=(parent_pid,), daemon=True, name="gradcli-lifeline").start()
    if os.getppid() != parent_pid:   # the parent died before the binding took effect
        os._exit(0)
    return how


def _address_space():
    try:
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None


def limit_memory(headroom=MEMORY_HEADROOM):
    """Cap this process's address space at what it uses now plus ``headroom``, so that runaway exact
    arithmetic ends in a MemoryError (a one-line refusal) instead of swapping the machine. Linux only."""
    try:
        import resource
    except ImportError:   # pragma: no cover - not POSIX
        return None
    used = _address_space()
    if used is None:
        return None
    limit = used + headroom
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    if soft != resource.RLIM_INFINITY and soft < limit:
        return soft
    try:
        resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    except (ValueError, OSError):
        return None
    return limit
