"""Grad mode: whether operations record a graph. Thread-local, like torch."""
import functools
import threading


class _GradState(threading.local):
    enabled = True  # class attribute: every new thread starts with grad mode on, as in torch


_state = _GradState()  # the engine reads ``_state.enabled`` directly on its hot path


def is_grad_enabled():
    return _state.enabled


def _set(enabled):
    _state.enabled = enabled


class _DecoratorContext:
    """Base of the grad-mode context managers; each works as ``with``, as ``@mode()`` and, like
    torch >= 2.0, as a bare ``@mode`` decorator."""

    mode = True

    def __new__(cls, orig_func=None):
        if orig_func is None:
            return super().__new__(cls)
        if not callable(orig_func):
            raise TypeError(f"{cls.__name__}() takes no arguments (got {type(orig_func).__name__})")
        return cls()(orig_func)

    def __enter__(self):
        self.prev = _state.enabled
        _state.enabled = self.mode
        return self

    def __exit__(self, *exc):
        _state.enabled = self.prev
        return False

    def clone(self):
        return self.__class__()

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self.clone():
                return fn(*args, **kwargs)

        return wrapper


class no_grad(_DecoratorContext):
    """Disable graph recording inside a ``with`` block or a decorated function."""

    mode = False


class enable_grad(_DecoratorContext):
    """Enable graph recording inside a ``with`` block or a decorated function."""

    mode = True


class set_grad_enabled(_DecoratorContext):
    """``set_grad_enabled(False)`` switches at once (torch's function form); used with ``with`` it
    restores the previous mode on exit; used as ``@set_grad_enabled(False)`` it applies per call."""

    def __new__(cls, mode):
        return object.__new__(cls)

    def __init__(self, mode):
        self.prev = _state.enabled
        self.mode = bool(mode)
        _state.enabled = self.mode

    def __enter__(self):
        return self  # the mode was already switched by __init__; __exit__ restores ``prev``

    def clone(self):
        return _ModeOnEnter(self.mode)

    def __call__(self, fn):
        _state.enabled = self.prev  # decorating must not leave the mode switched
        return super().__call__(fn)


class _ModeOnEnter(_DecoratorContext):
    def __init__(self, mode):
        self.mode = mode

    def __new__(cls, mode):
        return object.__new__(cls)
