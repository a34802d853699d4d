"""Discovery for ``gradcli check``: -k, loading a file, collecting its Functions.

Which files (paths, module names, walking folders): ``paths.py``; which of them define a Function
(read, not run): ``scan.py``; how a file is imported (by its package's dotted name, or as a
script): ``imports.py``; which classes cannot run on their own: ``abstract.py``.

Collected: every class *defined in* the file (``cls.__module__`` is the file's module) that
subclasses gradcli's ``Function`` or ``torch.autograd.Function`` -- the latter only if the file
imported torch itself (``sys.modules``), so discovery never imports torch. No expression string
is ever evaluated.
"""
from __future__ import annotations

import inspect
import os
import re
import sys
import traceback
from dataclasses import dataclass, field
from typing import Callable, Optional

from gradcli.check.abstract import abstract_reason
from gradcli.check.paths import FileItem, UsageError, display as _display, expand_paths  # noqa: F401 (API)
from gradcli.check import source_code

_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # .../gradcli
# where the framework's own Function classes live: a class defined there is no user's (gradcli's own
# ops, under gradcli.autograd.ops, are: they are checked like any user's, `gradcli check gradcli/autograd`)
FRAMEWORK_MODULES = ("gradcli.autograd.function", "torch")


def imports_torch(abspath: str) -> bool:
    """Whether the file's text has an ``import torch``/``from torch`` line, or its syntax defines a
    Function on a torch base imported from elsewhere in its package (read, never run)."""
    try:
        with open(abspath, encoding="utf-8", errors="replace") as f:
            text = f.read()
    except OSError:
        return False
    if re.search(r"^\s*(import torch\b|from torch[ .])", text, re.M) is not None:
        return True
    from gradcli.check.scan import scan_file

    scan = scan_file(abspath)
    return "torch" in scan.functions.values() or bool(scan.custom_ops)


# ----- -k expressions ----------------------------------------------------------------------------

_TOKEN_RE = re.compile(r"\s*(\(|\)|[^\s()]+)")


def compile_keyword(expr: str):
    """pytest's ``-k``: ``and``/``or``/``not``/parentheses over case-insensitive substrings.
    Returns ``match(names) -> bool``; raises UsageError on a malformed expression."""
    tokens = _TOKEN_RE.findall(expr)
    pos = 0

    def peek():
        return tokens[pos] if pos < len(tokens) else None

    def take():
        nonlocal pos
        pos += 1
        return tokens[pos - 1]

    def parse_or():
        left = parse_and()
        while peek() == "or":
            take()
            left = (lambda a, b: lambda n: a(n) or b(n))(left, parse_and())
        return left

    def parse_and():
        left = parse_not()
        while peek() == "and":
            take()
            left = (lambda a, b: lambda n: a(n) and b(n))(left, parse_not())
        return left

    def parse_not():
        tok = peek()
        if tok == "not":
            take()
            inner = parse_not()
            return lambda n: not inner(n)
        if tok == "(":
            take()
            inner = parse_or()
            if peek() != ")":
                raise UsageError(f"bad -k expression {expr!r}: missing ')'")
            take()
            return inner
        if tok is None or tok in (")", "and", "or"):
            where = "at the end" if tok is None else f"before {tok!r}"
            raise UsageError(f"bad -k expression {expr!r}: expected a name {where}")
        word = take().lower()
        return lambda n: any(word in s.lower() for s in n)

    if not tokens:
        raise UsageError("empty -k expression")
    match = parse_or()
    if pos != len(tokens):
        raise UsageError(f"bad -k expression {expr!r}: unexpected {tokens[pos]!r}")
    return match


# ----- loading a file and collecting its Functions ------------------------------------------------

@dataclass
class Target:
    """A collected Function. ``cls`` stays in the checking process; ``info()`` crosses processes."""

    cls: type
    name: str
    file: str
    line: Optional[int]
    backward_line: Optional[int]
    style: str  # static | classmethod | setup_context | legacy
    backend: str  # gradcli | torch
    backward_file: Optional[str] = None  # where an inherited backward is, when not in ``file``
    module: str = ""  # the dotted module name (a script's stem): inputs files key by ``module.Class``
    abstract: Optional[str] = None  # why forward/backward cannot run on their own (a skip), or None
    # inputs for code the user cannot edit (inputs_from.py): used when the class has no example_inputs
    given_examples: Optional[Callable] = field(default=None, repr=False)
    given_specs: dict = field(default_factory=dict, repr=False)
    given_from: str = ""  # the inputs file whose entry gives the examples (the reproduce line names it)

    @property
    def forward(self):
        if self.style == "legacy":
            return _own(self.cls, "forward")  # the plain function: (self, ...)
        return self.cls.forward

    @property
    def fn(self):
        return self.cls.apply

    def ids(self) -> list:
        return [self.name, os.path.basename(self.file), f"{self.file}::{self.name}"]

    def info(self) -> "TargetInfo":
        from gradcli.check.inputs import forward_params

        try:
            params = [p.name for p in forward_params(self)[0]]
        except (TypeError, ValueError):  # no signature (a C function, ...)
            params = []
        return TargetInfo(self.file, self.name, self.line, self.backward_line, self.style, self.backend, params,
                          self.backward_file)


@dataclass
class TargetInfo:
    file: str
    name: str
    line: Optional[int]
    backward_line: Optional[int]
    style: str
    backend: str
    params: list = field(default_factory=list)  # forward's positional parameters (after ctx)
    backward_file: Optional[str] = None


@dataclass
class LoadError:
    """A file that could not be imported: message is the exception's last line."""

    message: str
    line: Optional[int]
    skip: bool = False  # True when the file needs PyTorch and it is not installed
    traceback: str = field(default="", repr=False)


def load_module(item: FileItem):
    """Import the file the way its package does (imports.py). Returns the module or a LoadError."""
    from gradcli.check.imports import import_file, plan_import
    from gradcli.check.scan import scan_file

    scan = scan_file(item.abspath)
    plan = plan_import(item.abspath, scan.relative_level, scan.absolute_tops)
    try:
        module = import_file(item.abspath, plan, scan.relative_level)
    except BaseException as e:  # noqa: BLE001 -- user code: SyntaxError, SystemExit, anything
        if isinstance(e, KeyboardInterrupt):
            raise
        if isinstance(e, ModuleNotFoundError) and (e.name or "").split(".")[0] == "torch":
            return LoadError("needs PyTorch, which is not installed (pip install torch): not checked",
                             describe_exception(e, item.abspath)[1], skip=True)
        message, line = describe_exception(e, item.abspath)
        return LoadError(message, line, traceback=user_traceback(e))
    item.module = module.__name__ if not module.__name__.startswith("gradcli_check_") else \
        os.path.splitext(os.path.basename(item.abspath))[0]
    return module


def describe_exception(e: BaseException, abspath: Optional[str] = None) -> tuple:
    """(``"ZeroDivisionError: division by zero (file.py:12)"``, line in ``abspath`` or None)."""
    if isinstance(e, SystemExit):
        last = f"SystemExit: sys.exit({e.code!r}) called"
    else:
        last = traceback.format_exception_only(type(e), e)[-1].strip()
    if isinstance(e, SyntaxError) and e.lineno:
        return f"SyntaxError: {e.msg} ({_display(e.filename or abspath or '?')}:{e.lineno})", e.lineno
    frames = traceback.extract_tb(e.__traceback__)
    user = [f for f in frames if abspath and os.path.realpath(f.filename) == abspath]
    frame = user[-1] if user else (frames[-1] if frames else None)
    if frame is None:
        return last, None
    if not user and frame.filename.startswith(_PACKAGE + os.sep):
        last = f"internal error in gradcli (please report it): {last}"
    return f"{last} ({_display(frame.filename)}:{frame.lineno})", frame.lineno if user else None


def user_traceback(e: BaseException) -> str:
    """The traceback without gradcli's and importlib's own frames (they are noise to the user)."""
    frames = [f for f in traceback.extract_tb(e.__traceback__)
              if not f.filename.startswith((_PACKAGE + os.sep, "<frozen"))]
    if not frames:  # nothing of the user's: the message says it all (--debug shows gradcli's frames)
        return "".join(traceback.format_exception_only(type(e), e)) if isinstance(e, SyntaxError) else ""
    return ("Traceback (most recent call last):\n" + "".join(traceback.format_list(frames))
            + "".join(traceback.format_exception_only(type(e), e)))


def collect(module, item: FileItem) -> list:
    """The Function subclasses defined in ``module``, in definition order, abstract helpers left out."""
    bases = _framework_bases()
    classes = [obj for obj in vars(module).values()
               if isinstance(obj, type) and obj.__module__ == module.__name__
               and any(issubclass(obj, b) for b in bases.values()) and obj not in bases.values()]
    subclassed = {b for c in classes for b in c.__mro__[1:]}
    targets = []
    for cls in classes:
        backend = next(name for name, b in bases.items() if issubclass(cls, b))
        has_fwd = _own(cls, "forward") is not None
        has_bwd = _own(cls, "backward") is not None or _own(cls, "vjp") is not None
        if not has_fwd or (not has_bwd and cls in subclassed) or inspect.isabstract(cls):
            continue  # an abstract helper: a base class without its own forward/backward
        if cls.__dict__.get("gradcli_collect", True) is False:
            continue  # declared not a Function to check on its own (a graph node, a base); not inherited
        backward = _own(cls, "backward")
        targets.append(Target(cls, cls.__name__, item.path, _line(cls), _line(backward), _style(cls), backend,
                              backward_file=_elsewhere(backward, item.abspath),
                              module=getattr(item, "module", "") or module.__name__,
                              abstract=abstract_reason(cls, [c for c in classes if c is not cls and issubclass(c, cls)],
                                                       _own)))
    from gradcli.check.custom_ops import collect_custom_ops  # torch.library.custom_op ops, like Functions

    targets += collect_custom_ops(module, item)
    targets.sort(key=lambda t: t.line or 0)
    return targets


def _elsewhere(func, abspath: str) -> Optional[str]:
    """The file defining ``func`` (displayed) when it is not ``abspath`` (an inherited backward)."""
    if isinstance(func, (staticmethod, classmethod)):
        func = func.__func__
    try:
        path = inspect.getsourcefile(func) if func is not None else None
    except TypeError:
        return None
    return _display(path) if path and os.path.realpath(path) != abspath else None


def _framework_bases() -> dict:
    from gradcli.autograd.function import Function

    bases = {"gradcli": Function}
    torch = sys.modules.get("torch")
    if torch is not None and hasattr(torch, "autograd"):
        bases["torch"] = torch.autograd.Function
    return bases


def _own(cls, attr):
    """``attr`` as defined by the user's classes in the MRO (not by gradcli/torch), or None."""
    for klass in cls.__mro__:
        if any(klass.__module__ == m or klass.__module__.startswith(m + ".") for m in FRAMEWORK_MODULES):
            return None
        if attr in klass.__dict__:
            return klass.__dict__[attr]
    return None


def _style(cls) -> str:
    raw = _own(cls, "forward")
    if isinstance(raw, classmethod):
        return "classmethod"
    if isinstance(raw, staticmethod):
        return "setup_context" if _own(cls, "setup_context") is not None else "static"
    return "legacy"


def _line(obj) -> Optional[int]:
    """The line of a class's ``class`` or a function's ``def`` (not of its decorators)."""
    if isinstance(obj, (staticmethod, classmethod)):
        obj = obj.__func__
    if obj is None:
        return None
    try:
        lines, start = source_code.source_lines(obj)
    except (OSError, TypeError):
        return None
    keywords = ("class ",) if isinstance(obj, type) else ("def ", "async def ")
    return start + next((i for i, text in enumerate(lines) if text.lstrip().startswith(keywords)), 0)


def select(targets: list, item: FileItem, keyword=None) -> tuple:
    """(selected targets, how many ``-k`` deselected, ``::Name`` selectors that matched nothing)."""
    chosen, missing = targets, []
    if item.names is not None:
        known = {t.name for t in targets}
        missing = [n for n in item.names if n not in known]
        chosen = [t for t in targets if t.name in item.names]
    selected = [t for t in chosen if keyword(t.ids())] if keyword is not None else chosen
    return selected, len(chosen) - len(selected), missing
