"""gradcli diff is bounded: phases cut at the deadline are reported, a worker stuck past it is killed from
outside, and no process it forks outlives it (SIGTERM or SIGKILL). specs/diff.md "Budget and processes"."""
import os
import signal
import subprocess
import sys
import time

import pytest
import sympy
from click.testing import CliRunner

from gradcli.cli import main
from gradcli.expr import calculus, lifeline
from gradcli.expr.api import DiffRequest, run
from gradcli.expr.deadline import CUT, Deadline
from gradcli.expr.supervisor import Outcome, supervise

PYTHON = sys.executable
linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs /proc and prctl")


def _forever(*args):
    while True:
        time.sleep(0.01)


def test_attempt_cuts_a_phase_that_never_ends_and_skips_later_ones():
    deadline = Deadline(time.monotonic() + 0.3, 0.3)
    deadline.arm()
    try:
        assert deadline.attempt("looping", _forever) is CUT
        assert deadline.attempt("later work", lambda: 1) is CUT   # nothing starts once the budget is gone
    finally:
        deadline.disarm()
    assert deadline.cut == ["looping", "later work"]


def test_derivatives_past_the_deadline_are_listed_as_cut_with_exit_2(monkeypatch):
    real_diff = sympy.diff

    def slow_second_order(expr, symbol):   # first derivatives are instant, the second ones never end
        return _forever() if expr.has(sympy.cos) else real_diff(expr, symbol)
    monkeypatch.setattr(calculus.sympy, "diff", slow_second_order)
    deadline = Deadline(time.monotonic() + 1.0, 1.0)
    deadline.arm()
    try:
        result = run(DiffRequest(["sin(x)*y"], hessian=True, simplify=False), deadline=deadline)
    finally:
        deadline.disarm()
    assert [f.label["ascii"] for f in result.formulas] == ["df/dx", "df/dy"]   # once cut, later ones are not tried
    assert [f.text["ascii"] for f in result.formulas] == ["y*cos(x)", "sin(x)"]
    assert result.exit_code == 2
    budget = [w.text["ascii"] for w in result.warnings if w.kind == "budget"]
    assert budget == ["the 1 s budget (--budget) ran out; derivatives not computed: d2f/dx2, d2f/dxdy, d2f/dy2"]


def test_a_worker_stuck_past_the_budget_is_killed_and_the_phase_named():
    def stuck(progress, deadline_end):
        progress("differentiating")
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM, signal.SIGTERM})   # like a long C call
        _forever()
    outcome = supervise(stuck, 0.5)
    assert outcome == Outcome("", "error: gave up after 0.5 s (the --budget) while differentiating: the "
                                  "expression is too expensive; try a larger --budget or a smaller expression\n", 2)


def test_budget_option_is_validated():
    result = CliRunner().invoke(main, ["diff", "x", "--budget", "fast"])
    assert result.exit_code == 2
    assert result.output == "error: --budget: 'fast' is not a number\n"


def test_memory_error_is_a_one_line_refusal(monkeypatch):
    import gradcli.expr.api as api

    def hungry(request, engine=None, deadline=None, progress=None):
        progress("evaluating at the points")
        raise MemoryError()
    monkeypatch.setattr(api, "run", hungry)
    result = CliRunner().invoke(main, ["diff", "x"])
    assert result.exit_code == 2
    assert result.output.startswith("error: refused: evaluating at the points needed more memory than gradcli "
                                    "allows itself")
    assert result.output.count("\n") == 1


def test_a_number_past_exact_arithmetic_is_a_one_line_refusal():
    # found by bench/diff_fuzz.py (seed 20261201, case 3361): SymPy's assumptions evalf exp(silu(10^100)^...)
    # and mpmath raises OverflowError ("too many digits in integer"); it was "internal error", exit 3
    result = CliRunner().invoke(main, ["diff", "expm1((silu(10^100))^(gelu(1e300)))*z", "--at", "z=-1",
                                       "--budget", "60"])
    assert result.exit_code == 2, result.output
    assert result.output == ("error: refused: differentiating met a number too large for exact arithmetic "
                             "(too many digits in integer); the expression's constants are too large\n")


def _descendants(pid):
    """Every live descendant of ``pid`` (from /proc), not zombies."""
    children = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] != "Z":
            children.setdefault(int(fields[1]), []).append(int(entry))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def _alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@linux_only
@pytest.mark.parametrize("how", [signal.SIGKILL, signal.SIGTERM])
def test_killing_gradcli_diff_leaves_no_worker_alive(how):
    # A run that keeps its worker and the processes it forks (engine, budgeted SymPy children) busy for long.
    process = subprocess.Popen([PYTHON, "-m", "gradcli", "diff", "exp(x*y)*sin(x+y)", "--order", "8",
                                "--at", "x=1,y=1", "--budget", "600", "--simplify-timeout", "590"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        family = []
        for _ in range(1200):   # until the worker has forked the engine process and a SymPy child
            family = _descendants(process.pid)
            if len(family) >= 3:
                break
            time.sleep(0.05)
        assert len(family) >= 3, family
        assert process.poll() is None   # still computing when killed
        process.send_signal(how)
        process.wait(timeout=30)
        for _ in range(200):
            survivors = [pid for pid in family if _alive(pid)]
            if not survivors:
                break
            time.sleep(0.05)
        assert survivors == []
    finally:
        if process.poll() is None:
            process.kill()


@linux_only
def test_bind_to_parent_uses_pdeathsig_on_linux():
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_end)
        os.write(write_end, lifeline.bind_to_parent(os.getppid()).encode())
        os._exit(0)
    os.close(write_end)
    assert os.read(read_end, 100) == b"pdeathsig"
    os.close(read_end)
    os.waitpid(pid, 0)


def test_disarm_gives_sigalrm_back_to_its_previous_owner():
    # an in-process caller (a test harness, a bench bounding its runs with alarm) keeps its own handler
    import signal

    def mine(signum, frame):
        pass

    previous = signal.signal(signal.SIGALRM, mine)
    try:
        deadline = Deadline(time.monotonic() + 60, 60)
        deadline.arm()
        deadline.arm(1.0)  # re-arming keeps the first owner
        assert signal.getsignal(signal.SIGALRM) is not mine
        deadline.disarm()
        assert signal.getsignal(signal.SIGALRM) is mine
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def test_an_alarm_that_strikes_in_a_finalizer_is_silent_and_strikes_again(capfd):
    # found by bench/diff_fuzz.py: the alarm hit an import lock's callback and Python printed
    # "Exception ignored in ... Traceback ... BudgetExceeded" on the terminal, then ran on
    import time as _time

    from gradcli.expr.deadline import BudgetExceeded, Deadline

    class Finalized:
        def __del__(self):
            raise BudgetExceeded()

    deadline = Deadline(_time.monotonic() + 60, 60)
    deadline.arm()
    try:
        with pytest.raises(BudgetExceeded):
            Finalized()   # dropped at once: its __del__ raises where Python cannot
            _time.sleep(2)
    finally:
        deadline.disarm()
    err = capfd.readouterr().err
    assert "Exception ignored" not in err and "Traceback" not in err
