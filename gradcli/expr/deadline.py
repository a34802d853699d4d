"""The total budget of one ``gradcli diff`` run, enforced inside the process doing the work.

SymPy cannot be interrupted from a thread, but a signal handler runs between bytecodes: SIGALRM at the
deadline raises ``BudgetExceeded`` wherever the work is. It derives from BaseException so that SymPy's
many ``except Exception`` blocks cannot swallow it. Each phase of ``api.run`` runs through ``attempt``:
a phase that is cut (or not started because the budget is gone) is recorded by name, and the result says
what is missing. Work stuck in one long C call (huge integer arithmetic) ignores the signal until it
returns; the supervisor (``supervisor.py``) kills the process a little after the deadline in that case.
"""
import signal
import sys
import time

CUT = object()   # what ``attempt`` returns for a phase that did not finish


class BudgetExceeded(BaseException):
    """The deadline passed (raised by the SIGALRM handler)."""


def _raise(signum, frame):
    raise BudgetExceeded()


def _redeliver_unraisable(unraisable, previous=None):
    """The alarm struck where Python cannot raise (a finalizer, an import lock's callback): Python
    would print it as "Exception ignored ... Traceback" on stderr and go on past the deadline. Say
    nothing and strike again a millisecond later, in code that can raise."""
    if isinstance(unraisable.exc_value, BudgetExceeded) or unraisable.exc_type is BudgetExceeded:
        try:
            signal.setitimer(signal.ITIMER_REAL, 0.001)
        except (ValueError, AttributeError, OSError):
            pass
        return
    (previous or sys.__unraisablehook__)(unraisable)


def _install_unraisable_hook():
    current = sys.unraisablehook
    if getattr(current, "_gradcli_budget", False):
        return

    def hook(unraisable, previous=current):
        _redeliver_unraisable(unraisable, previous)
    hook._gradcli_budget = True
    sys.unraisablehook = hook


class Deadline:
    """``end`` on the ``time.monotonic`` clock; ``budget`` is the total in seconds (for messages)."""

    def __init__(self, end, budget):
        self.end = end
        self.budget = budget
        self.expired = False
        self.cut = []          # what did not finish, in order
        self._armed = False
        self._alarm_at = end
        self._previous_handler = None

    def remaining(self):
        """Seconds until the alarm (the end minus the reserve given to ``arm``)."""
        return max(0.0, self._alarm_at - time.monotonic())

    def arm(self, reserve=0.0):
        """Deliver BudgetExceeded at ``end - reserve`` (main thread only; a no-op elsewhere)."""
        self._alarm_at = self.end - reserve
        _install_unraisable_hook()
        left = self._alarm_at - time.monotonic()
        try:
            previous = signal.signal(signal.SIGALRM, _raise)
            if not self._armed:
                self._previous_handler = previous
            signal.setitimer(signal.ITIMER_REAL, max(left, 0.001))
            self._armed = True
        except (ValueError, AttributeError, OSError):   # not the main thread, or no SIGALRM (Windows)
            self._armed = False

    def disarm(self):
        """Stop the alarm and give SIGALRM back to whoever had it (an in-process caller's own timer)."""
        if self._armed:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, self._previous_handler or signal.SIG_DFL)
            self._armed = False

    def attempt(self, what, function, *args):
        """``function(*args)``, or CUT if the budget ran out before or during it (``what`` is recorded)."""
        if self.expired or (self._armed and time.monotonic() >= self._alarm_at):
            self.expired = True
            self.cut.append(what)
            return CUT
        try:
            return function(*args)
        except BudgetExceeded:
            self.expired = True
            self.cut.append(what)
            return CUT


class NoDeadline(Deadline):
    """Unbounded (library callers of ``api.run`` that pass no deadline)."""

    def __init__(self):
        super().__init__(float("inf"), None)

    def remaining(self):
        return float("inf")

    def arm(self, reserve=0.0):
        pass
