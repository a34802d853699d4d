"""Gradient checking: ``gradcheck`` and its report dataclasses.

Kept light: importing ``gradcli.check`` loads only the report dataclasses; numpy and the
checker load on first use of ``gradcheck``/``gradgradcheck``.
"""
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


def __getattr__(name):
    if name in ("gradcheck", "gradgradcheck"):
        from gradcli.check import gradcheck as _module

        return getattr(_module, name)
    raise AttributeError(f"module 'gradcli.check' has no attribute {name!r}")
