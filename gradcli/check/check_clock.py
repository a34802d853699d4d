"""How long a check has run: the CPU seconds of the process checking it, with a wall-time cap.

``--timeout`` bounds a check. Counted in wall time, the same check times out or not with the
machine's load (at a load of 8 on 2 cores a check gets a quarter of a core: a 20 s check takes
80 s), while the bounds that decide what is checked (trials.too_slow) count CPU time. So a check's
time is the CPU time of the process running it (user + system, its finished children included,
read from ``/proc/PID/stat``), and a wall-time cap of WALL_FACTOR x the limit stops a check that
waits instead of computing (a ``sleep``, a lock, a blocking read), which uses no CPU. Where
``/proc`` cannot be read (not Linux) the limit is wall time, as it was.

Seen from inside the check (``Stopwatch``: the exact check's share of --timeout, full mode's time
budget, a forward's measured cost in numeric/function.py), the same rule reads: a check's time is
its CPU time, but at least 1/WALL_FACTOR of its wall time.
"""
from __future__ import annotations

import os
import time
from typing import Callable, Optional

WALL_FACTOR = 4.0  # the wall-time cap, in --timeout: what a check that waits may take
MIN_WAIT = 0.01  # seconds: the shortest wait between two looks at a check's CPU time

try:
    _TICKS = os.sysconf("SC_CLK_TCK")
except (AttributeError, ValueError, OSError):
    _TICKS = 100


def process_cpu_seconds(pid: int) -> Optional[float]:
    """User + system CPU seconds of ``pid`` and of its children it has waited for; None if unreadable."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
    except (OSError, IndexError):
        return None
    try:  # after the name: state ppid ... utime(14) stime(15) cutime(16) cstime(17), counted from 1
        return sum(int(fields[k]) for k in (11, 12, 13, 14)) / _TICKS
    except (IndexError, ValueError):
        return None


class CheckClock:
    """The time limit of one check running in process ``pid`` (``pid=None``: wall time only, a
    backstop). ``cpu`` and ``wall`` are the clocks (tests give fake ones)."""

    def __init__(self, pid: Optional[int], limit: float, cpu: Optional[Callable] = None,
                 wall: Callable = time.monotonic):
        self.pid, self.limit, self._wall = pid, limit, wall
        self._cpu = cpu or (lambda pid: process_cpu_seconds(pid))  # looked up when read: a test may scale it
        self.cpu_start = None if pid is None else self._cpu(pid)
        self.wall_start = wall()

    def extend(self, seconds: float):
        self.limit += seconds

    def used(self) -> tuple:
        """(CPU seconds, or None where they cannot be read; wall seconds) since the check began."""
        now = None if self.cpu_start is None else self._cpu(self.pid)
        return (None if now is None else now - self.cpu_start), self._wall() - self.wall_start

    def expired(self) -> Optional[str]:
        """None while the check may go on, else how it ran out: "cpu" (``limit`` CPU seconds), "wall"
        (WALL_FACTOR x ``limit`` of wall time), or "time" (wall time where CPU time is unknown)."""
        cpu, wall = self.used()
        if cpu is None:
            return "time" if wall >= self.limit else None
        if cpu >= self.limit:
            return "cpu"
        return "wall" if wall >= WALL_FACTOR * self.limit else None

    def wait(self) -> float:
        """Seconds to wait before looking again: a single-threaded check cannot use its CPU limit
        faster than wall time passes."""
        cpu, wall = self.used()
        if cpu is None:
            return max(0.0, self.limit - wall)
        return max(MIN_WAIT, min(self.limit - cpu, WALL_FACTOR * self.limit - wall))

    def why(self, how: str, what: str = "--timeout") -> str:
        """The message of a check stopped by ``how`` (from ``expired``), ``what`` naming the limit."""
        if how == "wall":
            return (f"timed out after {WALL_FACTOR * self.limit:g} s of wall time, {WALL_FACTOR:g}x the CPU-time limit "
                    f"of {self.limit:g} s ({what}): it waits (a sleep, a lock, a blocking read) or got almost no CPU")
        if how == "cpu":
            return f"timed out after {self.limit:g} s of CPU time ({what})"
        return f"timed out after {self.limit:g} s ({what})"


class Stopwatch:
    """A check's time since this was made, as CheckClock counts it, in the checking process itself:
    this process's CPU seconds, but at least 1/WALL_FACTOR of the wall seconds (a forward that waits)."""

    def __init__(self):
        self.cpu, self.wall = time.process_time(), time.monotonic()

    def elapsed(self) -> float:
        return max(time.process_time() - self.cpu, (time.monotonic() - self.wall) / WALL_FACTOR)
