"""No process outlives the Function that started it: reaping what user code forks.

User code may fork (plainly, or into a new session with ``setsid`` so that killing its process
group misses it). A process that is a *child subreaper* (Linux ``PR_SET_CHILD_SUBREAPER``)
becomes the parent of every orphaned descendant, however it detached itself; the worker is one, so
after each checker it finds its own children that are not checkers (``/proc``) and kills
them. Elsewhere (no ``prctl`` or no ``/proc``): only the checker's process group is killed, and a
descendant that left the group (``setsid``) can survive -- said in specs/check.md.
"""
from __future__ import annotations

import contextlib
import os
import signal

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36


_LIBC: list = []  # the C library, loaded once and inherited by every fork


def _prctl(option: int, value: int) -> bool:
    try:
        if not _LIBC:
            import ctypes

            _LIBC.append(ctypes.CDLL(None, use_errno=True))
        return _LIBC[0].prctl(option, value, 0, 0, 0) == 0
    except (OSError, AttributeError):  # no prctl: not Linux
        return False


def become_subreaper() -> bool:
    """Make this process the parent of its orphaned descendants; False where the OS cannot."""
    return _prctl(PR_SET_CHILD_SUBREAPER, 1)


def die_with_parent(parent: int) -> None:
    """SIGKILL this process when its parent dies (a worker or gradcli killed with SIGKILL), and
    leave at once if the parent is already gone (it died before the request took effect)."""
    if _prctl(PR_SET_PDEATHSIG, signal.SIGKILL) and os.getppid() != parent:
        os._exit(70)


def children(pid: int) -> set:
    """The live child processes of ``pid`` (an empty set without /proc): from the kernel's list
    of each thread's children where it has one, else by reading every process's parent."""
    listed = _listed_children(pid)
    return listed if listed is not None else _scanned_children(pid)


def _listed_children(pid: int):
    """``/proc/PID/task/TID/children`` (Linux >= 3.5 with CONFIG_PROC_CHILDREN): one small read per
    thread instead of one per process on the machine; None where it is missing."""
    found = set()
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{tid}/children", "rb") as f:
                found.update(int(p) for p in f.read().split())
    except OSError:  # no such file (an old kernel), or a thread that ended meanwhile: read them all instead
        return None
    return found


def _scanned_children(pid: int) -> set:
    found = set()
    try:
        entries = os.listdir("/proc")
    except OSError:
        return found
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        # pid (comm) state ppid ...: comm may hold spaces and parentheses, so split after the last ')'
        fields = stat[stat.rfind(b")") + 2:].split()
        if len(fields) > 1 and int(fields[1]) == pid:
            found.add(int(entry))
    return found


def kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def reap_orphans(keep=()) -> int:
    """Kill and reap this process's children other than ``keep`` (orphans handed to a subreaper,
    and what they forked meanwhile: repeated until none is left). Returns how many were killed."""
    killed = 0
    for _ in range(20):  # a forking orphan may add children while we kill; bounded
        found = children(os.getpid()) - set(keep)
        if not found:
            break
        for pid in found:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
                killed += 1
        for pid in found:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, 0)
    return killed
