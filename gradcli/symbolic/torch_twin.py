"""The engine twin of a torch Function: the same class, defined by running its file with ``torch``
standing for gradcli.

A torch Function cannot run on symbols: torch tensors hold numbers. But a Function written against
the torch API usually uses only ops gradcli's engine has too (that is the point of ``import gradcli
as torch``), so its file, run again with ``torch`` (and ``torch.autograd``, ``torch.nn``,
``torch.nn.functional``) bound to gradcli's modules, defines a twin class whose forward traces.
The exact reference of the twin's forward is then the exact reference of the torch forward, as far
as gradcli's ops compute what torch's compute (the ops table checks each against torch).

This runs the user's file a second time (top-level code included), so it is only done where that
is harmless: in the forked checker of ``gradcli check`` or on an explicit API call. Whatever goes
wrong (another torch submodule, an op gradcli does not have, a class defined inside a function)
raises ``NoTwin`` with the reason.
"""
import functools
import importlib
import importlib.util
import os
import sys

# torch module -> the gradcli module that stands for it in the twin's file
STAND_INS = {
    "torch": "gradcli",
    "torch.autograd": "gradcli.autograd",
    "torch.autograd.function": "gradcli.autograd.function",
    "torch.nn": "gradcli.nn",
    "torch.nn.functional": "gradcli.nn.functional",
}


class NoTwin(Exception):
    """The torch Function has no engine twin (the message says why)."""


def _class_file(cls):
    module = sys.modules.get(cls.__module__)
    path = getattr(module, "__file__", None)
    if not path or not os.path.isfile(path) or not path.endswith(".py"):
        raise NoTwin(f"{cls.__name__} is not defined in a Python file")
    if "<locals>" in cls.__qualname__:
        raise NoTwin(f"{cls.__name__} is defined inside a function")
    return path


@functools.lru_cache(maxsize=None)  # one run of the file per class and process (input sets, then --prove)
def engine_twin(cls):
    """The engine twin of the torch Function class ``cls`` (see the module docstring)."""
    path = _class_file(cls)
    saved = {name: sys.modules.get(name) for name in list(sys.modules) if name == "torch" or name.startswith("torch.")}
    try:
        for name in saved:  # other torch submodules: an import of one fails instead of mixing two engines
            sys.modules[name] = None
        for name, stand_in in STAND_INS.items():
            sys.modules[name] = importlib.import_module(stand_in)
        spec = importlib.util.spec_from_file_location(f"_gradcli_twin_{cls.__module__.replace('.', '_')}", path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module  # as an import would (dataclasses, pickling look it up)
        try:
            spec.loader.exec_module(module)
        except ImportError as error:
            del sys.modules[spec.name]
            if (error.name or "").split(".")[0] != "torch":
                raise NoTwin(f"its file does not run with gradcli as torch ({type(error).__name__}: {error})") from None
            raise NoTwin(f"its file imports {error.name}, which gradcli does not stand in for (only "
                         f"{', '.join(STAND_INS)})") from None
        except Exception as error:  # noqa: BLE001 -- the user's file, run against gradcli
            del sys.modules[spec.name]
            raise NoTwin(f"its file does not run with gradcli as torch ({type(error).__name__}: {error})") from None
    finally:
        for name in list(sys.modules):
            if name == "torch" or name.startswith("torch."):
                del sys.modules[name]
        sys.modules.update({name: real for name, real in saved.items() if real is not None})
    twin = module
    for part in cls.__qualname__.split("."):
        twin = getattr(twin, part, None)
        if twin is None:
            raise NoTwin(f"{cls.__qualname__} is not defined at the top level of its file")
    from gradcli.autograd.function import Function
    if not (isinstance(twin, type) and issubclass(twin, Function)):
        raise NoTwin(f"{cls.__qualname__} is not an autograd Function when torch is gradcli")
    return twin


def to_engine(value):
    """A torch tensor as a gradcli tensor (same values, dtype and requires_grad); anything else as is."""
    if type(value).__module__.split(".")[0] != "torch" or not hasattr(value, "detach"):
        return value
    from gradcli.autograd.tensor import Tensor
    return Tensor(value.detach().cpu().numpy().copy(), requires_grad=bool(value.requires_grad))
