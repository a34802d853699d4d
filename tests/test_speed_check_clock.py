"""A check's time is its process's CPU time, with a wall cap of 4x for a check that waits
(specs/check.md §3, "--timeout"): fake clocks for the rule, real processes for which clock stops what.
No duration is asserted: only which limit stopped a check and how it says so."""
import json
import os
import textwrap

import pytest
from click.testing import CliRunner

from gradcli.check.check_clock import WALL_FACTOR, CheckClock, process_cpu_seconds
from gradcli.cli import main


class FakeClocks:
    def __init__(self, cpu=0.0, wall=100.0):
        self.now_cpu, self.now_wall = cpu, wall

    def cpu(self, pid):
        return self.now_cpu

    def wall(self):
        return self.now_wall


def test_cpu_time_runs_out_first_for_a_check_that_computes():
    clocks = FakeClocks(cpu=5.0)
    clock = CheckClock(123, 2.0, cpu=clocks.cpu, wall=clocks.wall)
    clocks.now_cpu, clocks.now_wall = 5.5, 101.0
    assert clock.expired() is None
    assert clock.wait() == 1.5  # 2 - 0.5 s of CPU left; the wall cap (8 s) is further off
    clocks.now_cpu, clocks.now_wall = 7.0, 105.0  # 2 s of CPU in 5 s of wall: a loaded machine
    assert clock.expired() == "cpu"
    assert clock.why("cpu") == "timed out after 2 s of CPU time (--timeout)"


def test_a_loaded_machine_does_not_time_out_a_check_inside_its_cpu_limit():
    clocks = FakeClocks()
    clock = CheckClock(1, 10.0, cpu=clocks.cpu, wall=clocks.wall)
    clocks.now_cpu, clocks.now_wall = 9.0, 100.0 + 35.0  # a quarter of a core for 35 s: wall 3.5x the limit
    assert clock.expired() is None


def test_the_wall_cap_stops_a_check_that_waits():
    clocks = FakeClocks()
    clock = CheckClock(1, 2.0, cpu=clocks.cpu, wall=clocks.wall)
    clocks.now_cpu, clocks.now_wall = 0.01, 100.0 + 7.9
    assert clock.expired() is None and clock.wait() == pytest.approx(0.1)
    clocks.now_wall = 100.0 + WALL_FACTOR * 2.0
    assert clock.expired() == "wall"
    assert clock.why("wall", "--gradcli-timeout") == (
        "timed out after 8 s of wall time, 4x the CPU-time limit of 2 s (--gradcli-timeout): it waits (a sleep, "
        "a lock, a blocking read) or got almost no CPU")


def test_extend_raises_both_limits_and_unknown_cpu_time_falls_back_to_wall_time():
    clocks = FakeClocks()
    clock = CheckClock(1, 2.0, cpu=clocks.cpu, wall=clocks.wall)
    clock.extend(12.0)
    clocks.now_cpu, clocks.now_wall = 13.0, 100.0 + 50.0
    assert clock.expired() is None
    clocks.now_cpu = 14.0
    assert clock.expired() == "cpu" and clock.why("cpu", "--timeout + --prove-timeout") == \
        "timed out after 14 s of CPU time (--timeout + --prove-timeout)"
    blind = CheckClock(1, 2.0, cpu=lambda pid: None, wall=clocks.wall)  # no /proc: wall time, as before
    clocks.now_wall += 1.5
    assert blind.expired() is None and blind.wait() == pytest.approx(0.5)
    clocks.now_wall += 0.5
    assert blind.expired() == "time" and blind.why("time") == "timed out after 2 s (--timeout)"
    wall_only = CheckClock(None, 3.0, cpu=clocks.cpu, wall=clocks.wall)  # a backstop: no process to read
    assert wall_only.cpu_start is None and wall_only.expired() is None


@pytest.mark.skipif(not os.path.exists("/proc/self/stat"), reason="reads /proc")
def test_process_cpu_seconds_reads_what_the_kernel_counts():
    for _ in range(200_000):  # some CPU time to read
        pass
    times = os.times()
    mine = process_cpu_seconds(os.getpid())
    assert abs(mine - (times.user + times.system + times.children_user + times.children_system)) <= 0.05
    assert process_cpu_seconds(2 ** 22 + 12345) is None  # no such process


SPINS_AND_SLEEPS = """
    import time
    from gradcli.autograd import Function


    class Spins(Function):
        @staticmethod
        def forward(ctx, x):
            for _ in range(10 ** 12):
                pass
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2


    class Sleeps(Function):
        @staticmethod
        def forward(ctx, x):
            time.sleep(600)
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2
"""


@pytest.mark.skipif(not (hasattr(os, "fork") and os.path.exists("/proc/self/stat")), reason="forked checkers, /proc")
def test_a_spinning_check_runs_out_of_cpu_time_and_a_sleeping_one_into_the_wall_cap(tmp_path, monkeypatch):
    # the checkers' CPU seconds read 10x: the spinning one reaches its 2 s (0.2 s real) long before the 8 s wall
    # cap even when the machine lends it 3 % of a core; the sleeping one uses ~20 ms before it sleeps (0.2 s read)
    # and meets the wall cap
    from gradcli.check import check_clock

    real = check_clock.process_cpu_seconds
    monkeypatch.setattr(check_clock, "process_cpu_seconds", lambda pid: None if real(pid) is None else 10 * real(pid))
    path = tmp_path / "slow.py"
    path.write_text(textwrap.dedent(SPINS_AND_SLEEPS))
    out = tmp_path / "report.json"
    result = CliRunner().invoke(main, ["check", str(path), "--timeout", "2", "--no-exact", "--json", str(out)])
    assert result.exit_code == 3, result.output
    messages = {r["function"]: (r["status"], r["message"]) for r in json.loads(out.read_text())["results"]}
    assert messages == {
        "Spins": ("error", "timed out after 2 s of CPU time (--timeout)"),  # (10x its real CPU time)
        "Sleeps": ("error", "timed out after 8 s of wall time, 4x the CPU-time limit of 2 s (--timeout): it waits "
                            "(a sleep, a lock, a blocking read) or got almost no CPU"),
    }


def test_inside_the_check_its_time_is_cpu_time_but_at_least_a_quarter_of_wall_time(monkeypatch):
    from types import SimpleNamespace

    from gradcli.check import check_clock

    now = {"cpu": 10.0, "wall": 50.0}
    monkeypatch.setattr(check_clock, "time", SimpleNamespace(process_time=lambda: now["cpu"],
                                                             monotonic=lambda: now["wall"]))
    watch = check_clock.Stopwatch()
    now.update(cpu=13.0, wall=58.0)  # computing on a loaded machine: CPU time counts
    assert watch.elapsed() == 3.0
    now.update(cpu=13.5, wall=70.0)  # then waiting: a quarter of the wall time counts
    assert watch.elapsed() == 5.0


def test_a_forwards_measured_cost_follows_the_same_rule():
    from gradcli.numeric import function

    assert function.WALL_SHARE == 1 / WALL_FACTOR
