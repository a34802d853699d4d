"""Objects of a package's own classes built from one tensor, for the package code gradcli calls to reach a Function
(captured_calls.py): a method's ``self``, a parameter annotated with a class of the package (``A: LinearOperator``).

Its concrete subclasses in the same top-level package (else the class itself), whose constructor takes exactly one
required parameter that is not annotated as a Python number/string (the tensor) and at most two annotated ``bool``
(``MatrixLinearOperator(mat, is_hermitian)``: tried all False, then all True). The object is kept only when it has
the tensor's shape (or no shape): a wrapper of that matrix, not a batch built from it. By class name, so the same
class is chosen every run. After those, classes whose constructor has a default for everything (and takes no
``*operands``) built with none (a torch module then made float64, ``.double()``, as the inputs are).
"""
from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Optional

MAX_RECIPES = 8
MAX_FLAGS = 2


@dataclass(frozen=True)
class Recipe:
    cls: type
    flags: tuple = ()  # the constructor's required bool arguments, after the tensor
    from_tensor: bool = True  # False: a class whose constructor has defaults for everything, built with none

    @property
    def path(self) -> str:
        return f"{self.cls.__module__}.{self.cls.__qualname__}"

    def describe(self, spec: str) -> str:
        if not self.from_tensor:
            return f"{self.cls.__name__}(){'.double()' if _is_module(self.cls) else ''}"
        return f"{self.cls.__name__}({', '.join([spec, *map(repr, self.flags)])})"

    def build(self, tensor):
        if not self.from_tensor:  # a torch module's float32 buffers and weights: float64, as the inputs are
            made = self.cls()
            return made.double() if _is_module(self.cls) else made
        made = self.cls(tensor, *self.flags)
        shape = getattr(made, "shape", None)
        if shape is not None and tuple(shape) != tuple(tensor.shape):
            raise ValueError(f"{self.cls.__name__} of a {tuple(tensor.shape)} tensor has shape {tuple(shape)}")
        return made


def _is_module(cls) -> bool:
    import sys

    nn = getattr(sys.modules.get("torch"), "nn", None)
    return nn is not None and issubclass(cls, nn.Module)


def _text(annotation) -> str:
    if annotation is inspect.Parameter.empty:
        return ""
    return annotation if isinstance(annotation, str) else getattr(annotation, "__name__", str(annotation))


def _constructor_flags(cls) -> Optional[int]:
    """How many required bool parameters follow the one tensor parameter; -1 for a constructor with defaults for
    everything (and no ``*args``); None if it is not built either way."""
    try:
        params = list(inspect.signature(cls.__init__).parameters.values())[1:]
    except (TypeError, ValueError):
        return None
    required = [p for p in params if p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if not required:  # everything has a default (a module with its settings): built with none, unless it takes *operands
        operands = any(p.kind is p.VAR_POSITIONAL or p.kind is p.KEYWORD_ONLY and p.default is p.empty
                       for p in params)
        return None if operands else -1
    if _text(required[0].annotation) in ("bool", "int", "float", "str"):
        return None
    rest = required[1:]
    if len(rest) > MAX_FLAGS or any(_text(p.annotation) != "bool" for p in rest):
        return None
    return len(rest)


def recipes(base) -> list:
    """How to build an instance of ``base`` (or a concrete subclass of it in its package) from one tensor."""
    top = base.__module__.split(".")[0]
    seen, todo, found = set(), [base], []
    while todo:
        cls = todo.pop()
        if cls in seen:
            continue
        seen.add(cls)
        todo.extend(cls.__subclasses__())
        if inspect.isabstract(cls) or cls.__module__.split(".")[0] != top:
            continue
        flags = _constructor_flags(cls)
        if flags is not None:
            found.append((cls, flags))
    # the base only when no subclass is built this way: a base's constructor may set state its subclasses
    # inherit (xitorch's LinearOperator.__new__ marks the class tree checked), so it is not tried first
    subclasses = sorted((item for item in found if item[0] is not base), key=lambda item: item[0].__name__)
    found = subclasses or [item for item in found if item[0] is base]
    out = []
    for cls, flags in found:
        if flags >= 0:
            out += [Recipe(cls, (False,) * flags), Recipe(cls, (True,) * flags)] if flags else [Recipe(cls)]
    out += [Recipe(cls, from_tensor=False) for cls, flags in found if flags < 0]  # after those built from the tensor
    return out[:MAX_RECIPES]


def annotated_class(function, annotation) -> Optional[type]:
    """The class of the function's own package an annotation names (``LinearOperator``, ``'LinearOperator'``,
    ``Optional[LinearOperator]`` is not read), or None."""
    if isinstance(annotation, type):
        found = annotation
    elif isinstance(annotation, str) and annotation.replace(".", "").replace("_", "").isalnum():
        found = getattr(function, "__globals__", {}).get(annotation.split(".")[0])
        for part in annotation.split(".")[1:]:
            found = getattr(found, part, None)
    else:
        return None
    top = getattr(function, "__module__", "").split(".")[0]
    if not inspect.isclass(found) or found.__module__.split(".")[0] != top:
        return None
    return found
