"""Gradient checking: ``gradcheck`` and its report dataclasses.

Kept light: importing ``gradcli.check`` loads only the report dataclasses; numpy and the
checker load on first use of ``gradcheck``/``gradgradcheck``.
"""
import importlib
import sys
import types

from gradcli.check.report import Check, CheckReport, Finding, GradcheckError, InputResult, WorstElement

__all__ = [
    "gradcheck",
    "gradgradcheck",
    "CheckReport",
    "InputResult",
    "Check",
    "Finding",
    "WorstElement",
    "GradcheckError",
]

_LAZY = ("gradcheck", "gradgradcheck")


def __getattr__(name):
    if name in _LAZY:
        return getattr(importlib.import_module("gradcli.check.gradcheck"), name)
    raise AttributeError(f"module 'gradcli.check' has no attribute {name!r}")


class _Package(types.ModuleType):
    # Importing the submodule gradcli/check/gradcheck.py makes Python bind the *module* to the
    # package attribute ``gradcheck``, shadowing the function of the same name (torch avoids it by
    # importing eagerly). Refusing that binding keeps ``gradcli.check.gradcheck`` the function while
    # the package stays lazy; the module remains in sys.modules["gradcli.check.gradcheck"].
    def __setattr__(self, name, value):
        if name in _LAZY and isinstance(value, types.ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package
