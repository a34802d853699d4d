"""gradcli: a gradient checker and derivative calculator for hand-written autograd Functions.

``import gradcli as torch`` gives a torch-like namespace backed by gradcli's own numpy
autograd engine. Attributes are loaded lazily so that the CLI starts without numpy.
"""
__version__ = "0.1.0"

# Submodules whose names are reachable as attributes without importing the engine.
_SUBMODULES = {"autograd", "numeric", "symbolic", "check", "report", "testing", "cli", "nn", "linalg"}


def __getattr__(name):
    import importlib

    if name in _SUBMODULES:
        return importlib.import_module(f"gradcli.{name}")
    if name in ("gradcheck", "gradgradcheck", "CheckReport"):
        mod = importlib.import_module("gradcli.check")
        return getattr(mod, name)
    namespace = importlib.import_module("gradcli.autograd.namespace")
    try:
        value = getattr(namespace, name)
    except AttributeError:
        raise AttributeError(f"module 'gradcli' has no attribute {name!r}") from None
    globals()[name] = value  # cache: later lookups skip __getattr__
    return value


def __dir__():
    import importlib

    namespace = importlib.import_module("gradcli.autograd.namespace")
    return sorted(set(globals()) | set(namespace.__all__) | _SUBMODULES)
