"""The exact check's share of --timeout counts CPU time, with check_clock's wall cap (issue 16):
a machine's load does not cut the exact check short, and a wait cannot outlast the cap."""
import signal
import time

import pytest

from gradcli.check import symbolic_checks
from gradcli.check.check_clock import WALL_FACTOR

pytestmark = pytest.mark.skipif(not hasattr(signal, "setitimer"), reason="needs interval timers")


def test_computing_past_the_cpu_seconds_is_stopped():
    def spin():
        while True:
            sum(range(1000))

    with pytest.raises(symbolic_checks._OutOfTime):
        symbolic_checks._within(0.05, spin)


def test_waiting_uses_no_cpu_so_it_runs_on_until_the_wall_cap():
    # 0.5 s of CPU allowed: a 1 s sleep uses almost none, and stays under the 4x wall cap (2 s)
    assert WALL_FACTOR * 0.5 > 1.0
    assert symbolic_checks._within(0.5, lambda: (time.sleep(1.0), "done")[1]) == "done"


def test_a_wait_longer_than_the_wall_cap_is_stopped():
    with pytest.raises(symbolic_checks._OutOfTime):
        symbolic_checks._within(0.02, lambda: time.sleep(30))


def test_the_timers_and_handlers_are_restored():
    before = {sig: signal.getsignal(sig) for sig in (signal.SIGPROF, signal.SIGALRM)}
    assert symbolic_checks._within(5.0, lambda: 7) == 7
    assert signal.getitimer(signal.ITIMER_PROF) == (0.0, 0.0)
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
    assert {sig: signal.getsignal(sig) for sig in before} == before
