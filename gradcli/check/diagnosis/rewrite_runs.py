"""Running an edited copy of backward (or of a helper, or of forward): compiling one edited
function in its own module's namespace, installing it where the code looks it up (on the class,
in the module) and putting the original back, bounding its CPU time, and recording the value one
node of the written code takes in a re-run (the shape of a product, the index an index write
uses). What ``rewrites.py``'s search runs; nothing here decides a finding."""
from __future__ import annotations

import ast
import copy
import inspect
import sys
import time

import numpy as np

from gradcli.check.diagnosis.probe import _to_numpy
from gradcli.check.diagnosis.rewrite_syntax import _int

# one edited re-run may take this many times the written one's (and 0.05 s more): an edit can turn a
# loop's step around or make a tensor grow, and must not turn a diagnosis into a timeout
SLOWER = 10.0


def _plain_function(func):
    func = inspect.unwrap(getattr(func, "__func__", func)) if func is not None else None
    if func is None or not inspect.isfunction(func) or func.__code__.co_freevars:
        return None  # a closure (or super()) cannot be recompiled on its own
    return func


def _method(cls, name):
    return _plain_function(cls.__dict__.get(name) or getattr(cls, name, None))


def _compiled(src, func, edit):
    return _compile_tree(src, _edited_copy(src, edit.node, edit.make), func.__globals__)


def _edited_copy(src, node, make):
    """A copy of ``src``'s tree with ``node`` (found there by its place in ``ast.walk``) replaced
    by ``make(its copy)``."""
    tree = copy.deepcopy(src.tree)
    index = next(k for k, n in enumerate(ast.walk(src.tree)) if n is node)
    target = next(n for k, n in enumerate(ast.walk(tree)) if k == index)
    _replace(tree, target, make(target))
    return tree


def _compile_tree(src, tree, namespace_globals):
    tree.decorator_list = []
    module = ast.Module(body=[tree], type_ignores=[])
    ast.fix_missing_locations(module)
    ast.increment_lineno(module, src.first_line - 1)
    namespace = {}
    exec(compile(module, src.file, "exec"), namespace_globals, namespace)  # noqa: S102 -- backward's own code, edited
    return namespace[tree.name]


def _replace(tree, old, new):
    for parent in ast.walk(tree):
        for field, value in ast.iter_fields(parent):
            if value is old:
                setattr(parent, field, ast.copy_location(new, old))
                return
            if isinstance(value, list) and any(v is old for v in value):
                setattr(parent, field, [ast.copy_location(new, old) if v is old else v for v in value])
                return
    raise ValueError("edit site not found")


class _OnClass:
    """``cls.<name>`` replaced by ``func`` (a staticmethod) while the block runs."""

    def __init__(self, cls, name, func):
        self.cls, self.name, self.func = cls, name, func

    def __enter__(self):
        self.previous = self.cls.__dict__.get(self.name)
        setattr(self.cls, self.name, staticmethod(self.func))

    def __exit__(self, *exc):
        if self.previous is None:
            delattr(self.cls, self.name)
        else:
            setattr(self.cls, self.name, self.previous)
        return False


class _InGlobals:
    """A helper of backward's module replaced by ``func`` while the block runs."""

    def __init__(self, namespace, name, func):
        self.namespace, self.name, self.func = namespace, name, func

    def __enter__(self):
        self.previous = self.namespace[self.name]
        self.namespace[self.name] = self.func

    def __exit__(self, *exc):
        self.namespace[self.name] = self.previous
        return False


class _Values:
    """Names bound in a module's namespace while the block runs (forward's locals an edit reads),
    removed afterwards."""

    def __init__(self, namespace, values):
        self.namespace, self.values = namespace, values

    def __enter__(self):
        for name, value in self.values.items():
            self.namespace[name] = value

    def __exit__(self, *exc):
        for name in self.values:
            self.namespace.pop(name, None)
        return False


FORWARD_PREFIX = "_gradcli_forward_"  # the global an edit reads a forward local under


def forward_locals(probe, cls, limit=8):
    """({name: tensor} of forward's tensor locals at the probe's inputs (not its arguments, not
    ctx), {name: [(code, tensor)]} of forward's masked reads of a name, ``masked``)."""
    from gradcli.check.diagnosis.probe import _LineTrace

    forward = _method(cls, "forward")
    if forward is None:
        return {}, {}
    names = {}
    with _LineTrace(forward.__code__, set(), names):
        probe.forward()
    arguments = set(forward.__code__.co_varnames[:forward.__code__.co_argcount])
    found = {k: v for k, v in names.items() if k not in arguments and hasattr(v, "shape") and hasattr(v, "dtype")
             and not isinstance(v, type) and "float" in str(v.dtype)}
    return dict(list(found.items())[:limit]), masked(forward, names)


def _masked_name(node):
    """The name ``node`` masks: ``x.masked_fill(m, v)``, ``torch.where(m, x, fill)`` (fill no name)."""
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
        return None
    if node.func.attr == "masked_fill" and isinstance(node.func.value, ast.Name) and len(node.args) == 2:
        return node.func.value.id
    if node.func.attr == "where" and len(node.args) == 3:
        kept = [a for a in node.args[1:] if isinstance(a, ast.Name)]
        return kept[0].id if len(kept) == 1 else None
    return None


def masked(forward, names, limit=4):
    """{name: [(code, value)]}: forward's masked reads of a name (``scores.masked_fill(future,
    -inf)``, ``torch.where(valid, x, -inf)``) evaluated in forward's final locals — what backward
    needs where it reads the name unmasked (a causal mask left out of a recomputed softmax)."""
    try:
        tree = ast.parse(_dedented(forward))
    except Exception:  # noqa: BLE001 -- no source: no masked reads
        return {}
    found = {}
    for node in ast.walk(tree):
        name = _masked_name(node)
        if name is None or name not in names or len(found.setdefault(name, [])) >= limit:
            continue
        code = ast.unparse(node)
        try:
            value = eval(compile(ast.Expression(node), "<forward>", "eval"), forward.__globals__, dict(names))  # noqa: S307 -- forward's own code, at its own locals
        except Exception:  # noqa: BLE001 -- reads something not bound at the end
            continue
        if hasattr(value, "shape") and all(code != c for c, _ in found[name]):
            found[name].append((code, value))
    return {k: v for k, v in found.items() if v}


def _dedented(func):
    import textwrap

    return textwrap.dedent(inspect.getsource(func))


class _TooSlow(Exception):
    pass


class _Deadline:
    """Raises ``_TooSlow`` in the edited code once the block has run ``seconds`` of CPU time (at the
    next line of its file: comprehensions and helpers there too): a line tracer on that file's
    code only, chained to a tracer already installed."""

    def __init__(self, code, seconds):
        self.code, self.seconds = code, seconds

    def __enter__(self):
        self.previous = sys.gettrace()
        previous, code, deadline = self.previous, self.code, time.process_time() + self.seconds

        def tracer(frame, event, arg):
            chained = previous(frame, event, arg) if previous is not None else None
            if frame.f_code.co_filename != code.co_filename:
                return chained

            def local(frame, event, arg):
                nonlocal chained
                if event == "line" and time.process_time() > deadline:
                    raise _TooSlow()
                if chained is not None:
                    chained = chained(frame, event, arg)
                return local

            return local

        sys.settrace(tracer)
        return self

    def __exit__(self, *exc):
        sys.settrace(self.previous)
        return False


def _recorded(src, func, installer, node, probe, ev):
    """The value ``node`` (a node of ``src``'s tree) takes in one re-run of the written code,
    recorded by a call wrapped around it in a copy of the module's namespace; None if unknown."""
    values = []

    def record(value):
        values.append(value)
        return value

    tree = _edited_copy(src, node, lambda n: ast.Call(ast.Name("__gradcli_record__", ast.Load()), [n], []))
    try:
        recorder = _compile_tree(src, tree, dict(func.__globals__, __gradcli_record__=record))
        with installer(recorder):
            probe.vjp(ev.cotangents[0])
    except Exception:  # noqa: BLE001 -- no value: say nothing about it
        return None
    return values[0] if values else None


def _square(src, func, installer, edit, probe, ev):
    """Whether the product ``edit`` transposes has equal last two dims."""
    shape = tuple(getattr(_recorded(src, func, installer, edit.node, probe, ev), "shape", ()))
    return len(shape) >= 2 and shape[-1] == shape[-2]


def _repeats(src, func, installer, edit, probe, ev):
    """Whether the index an accumulating edit makes add has a repeated entry (an overwrite loses
    a contribution only then: a `scatter_` of one value per row that also replaces what the row
    held is another mistake, which `scatter_add_` may cancel by chance)."""
    node = edit.node
    if isinstance(node, ast.Assign):  # g[idx] = v
        where, dim = node.targets[0].slice, None
    elif isinstance(node, ast.AugAssign):  # g[idx] -= v
        where, dim = node.target.slice, None
    elif isinstance(node, ast.Call) and node.args:
        method = isinstance(node.func, ast.Attribute)
        name = node.func.attr if method else getattr(node.func, "id", "")
        if name.startswith(("scatter", "index_copy", "index_add")):
            if len(node.args) < 2 or _int(node.args[0]) is None:
                return True  # a dim we cannot read: no evidence against the edit
            where, dim = node.args[1], _int(node.args[0])
        else:  # index_put_ / put_
            where, dim = node.args[0], None
    else:
        return True
    value = _recorded(src, func, installer, where, probe, ev)
    parts = value if isinstance(value, tuple) else (value,)
    if any(isinstance(p, slice) or p is Ellipsis or p is None for p in parts):
        return False  # a slice writes each position once
    try:
        arrays = [np.asarray(_to_numpy(p) if hasattr(p, "shape") else p) for p in parts]
    except Exception:  # noqa: BLE001 -- not an index we can read: no evidence of repeats
        return False
    if any(a.dtype == bool or a.dtype == object for a in arrays):
        return False
    if dim is not None and len(arrays) == 1 and arrays[0].ndim >= 1:
        if name.startswith("index_"):
            flat = arrays[0].reshape(-1)
            return len(np.unique(flat)) < flat.size
        moved = np.moveaxis(arrays[0], dim, -1)
        ordered = np.sort(moved, axis=-1)
        return bool(np.any(ordered[..., 1:] == ordered[..., :-1]))
    try:
        stacked = np.stack([a.reshape(-1) for a in np.broadcast_arrays(*arrays)], axis=1)
    except ValueError:
        return True
    return len(np.unique(stacked, axis=0)) < len(stacked)
