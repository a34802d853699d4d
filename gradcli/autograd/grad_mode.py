"""Grad mode: whether operations record a graph. Thread-local, like torch."""
import functools
import threading

_state = threading.local()


def is_grad_enabled():
    return getattr(_state, "enabled", True)


def _set(enabled):
    _state.enabled = enabled


class set_grad_enabled:
    """Context manager and function: ``set_grad_enabled(False)`` switches at once, ``with`` restores."""

    def __init__(self, mode):
        self.prev = is_grad_enabled()
        self.mode = bool(mode)
        _set(self.mode)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        _set(self.prev)
        return False


class _GradModeContext:
    mode = True

    def __enter__(self):
        self.prev = is_grad_enabled()
        _set(self.mode)
        return self

    def __exit__(self, *exc):
        _set(self.prev)
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self.__class__():
                return fn(*args, **kwargs)

        return wrapper


class no_grad(_GradModeContext):
    """Disable graph recording inside a ``with`` block or a decorated function."""

    mode = False


class enable_grad(_GradModeContext):
    """Enable graph recording inside a ``with`` block or a decorated function."""

    mode = True
