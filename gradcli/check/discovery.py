"""Discovery for ``gradcli check``: paths and selectors, loading a file, collecting its Functions.

Collected: every class *defined in* the file (``cls.__module__`` is the file's module) that
subclasses gradcli's ``Function`` or ``torch.autograd.Function`` -- the latter only if the file
imported torch itself (``sys.modules``), so discovery never imports torch. Files are loaded with
importlib under a unique module name; no expression string is ever evaluated.
"""
from __future__ import annotations

import importlib.util
import inspect
import os
import re
import sys
import traceback
import zlib
from dataclasses import dataclass, field
from typing import Optional

SKIP_DIRS = {"__pycache__", "venv", "env", "site-packages", "node_modules"}
_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # .../gradcli
FRAMEWORK_MODULES = ("gradcli.autograd", "torch")


class UsageError(Exception):
    """A bad path, selector or -k expression: one line for the user, exit code 2."""


# ----- paths and selectors -----------------------------------------------------------------------

@dataclass
class FileItem:
    path: str  # as displayed and reported (relative to the working directory when inside it)
    abspath: str
    names: Optional[list] = None  # ``file.py::Name`` selectors; None: every Function


def expand_paths(args) -> list:
    """Files to check, in order: each argument is a file, ``file.py::Name`` or a directory."""
    items: dict = {}
    for arg in args:
        path, sep, name = arg.partition("::")
        if not os.path.exists(path):
            raise UsageError(f"file or directory not found: {path}")
        if os.path.isdir(path):
            if sep:
                raise UsageError(f"a ::Name selector needs a file, not a directory: {arg}")
            files = _walk(path)
        elif path.endswith(".py"):
            files = [path]
        else:
            raise UsageError(f"not a Python file: {path}")
        for f in files:
            key = os.path.realpath(f)
            item = items.setdefault(key, FileItem(_display(f), key, [] if sep else None))
            if sep and item.names is not None:
                if not name or "::" in name:
                    raise UsageError(f"bad selector {arg!r}: use path/to/file.py::ClassName")
                item.names.append(name)
            elif not sep:
                item.names = None
    return list(items.values())


def _walk(top: str) -> list:
    found = []
    for root, dirs, files in os.walk(top):
        dirs[:] = sorted(d for d in dirs if not _skipped_dir(os.path.join(root, d)))
        found.extend(os.path.join(root, f) for f in sorted(files) if f.endswith(".py") and not f.startswith("."))
    return found


def _skipped_dir(path: str) -> bool:
    name = os.path.basename(path)
    return (name.startswith(".") or name in SKIP_DIRS or name.endswith(".egg-info")
            or os.path.exists(os.path.join(path, "pyvenv.cfg")))


def _display(path: str) -> str:
    rel = os.path.relpath(os.path.abspath(path))
    return path if rel.startswith("..") else rel


def imports_torch(abspath: str) -> bool:
    """Whether the file's text has an ``import torch``/``from torch`` line (read, never run)."""
    try:
        with open(abspath, encoding="utf-8", errors="replace") as f:
            text = f.read()
    except OSError:
        return False
    return re.search(r"^\s*(import torch\b|from torch[ .])", text, re.M) is not None


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
        return TargetInfo(self.file, self.name, self.line, self.backward_line, self.style, self.backend, params)


@dataclass
class TargetInfo:
    file: str
    name: str
    line: Optional[int]
    backward_line: Optional[int]
    style: str
    backend: str
    params: list = field(default_factory=list)  # forward's positional parameters (after ctx)


@dataclass
class LoadError:
    """A file that could not be imported: message is the exception's last line."""

    message: str
    line: Optional[int]
    skip: bool = False  # True when the file needs PyTorch and it is not installed
    traceback: str = field(default="", repr=False)


def load_module(item: FileItem):
    """Import the file under a unique module name. Returns the module or a LoadError."""
    stem = re.sub(r"\W", "_", os.path.splitext(os.path.basename(item.abspath))[0])
    name = f"gradcli_check_{zlib.crc32(item.abspath.encode()):08x}_{stem}"
    directory = os.path.dirname(item.abspath)
    if directory not in sys.path:
        sys.path.insert(0, directory)  # sibling imports work as with ``python file.py``
    spec = importlib.util.spec_from_file_location(name, item.abspath)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException as e:  # noqa: BLE001 -- user code: SyntaxError, SystemExit, anything
        sys.modules.pop(name, None)
        if isinstance(e, KeyboardInterrupt):
            raise
        if isinstance(e, ModuleNotFoundError) and (e.name or "").split(".")[0] == "torch":
            return LoadError("needs PyTorch, which is not installed (pip install torch): not checked",
                             describe_exception(e, item.abspath)[1], skip=True)
        message, line = describe_exception(e, item.abspath)
        return LoadError(message, line, traceback=user_traceback(e))
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
        targets.append(Target(cls, cls.__name__, item.path, _line(cls), _line(_own(cls, "backward")),
                              _style(cls), backend))
    targets.sort(key=lambda t: t.line or 0)
    return targets


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
        lines, start = inspect.getsourcelines(obj)
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
