"""A closed-vocabulary evaluator of backward's statements, on numpy arrays.

The diagnosis reads what a gradient statement computes without running user code a second way:
the expression is walked over numbers, the backward's grad_output arguments, the tensors forward
saved, ``ctx`` attributes, names assigned earlier in backward, + − × ÷ ** @, a fixed list of
elementwise functions (exp, log, sqrt, sigmoid, ...), reductions with a literal dim, ``.T``/``.t()``,
basic indexing and shapes (``x.shape[-1]``, ``numel()``, ``size(k)``, ``len``). Anything else raises
``Unsupported``; nothing is ever ``eval``ed. ``overrides`` (node id → function of the node's value)
and ``dim_overrides`` (call node id → dim) let a caller evaluate the statement with one edit
(``mutations.py``).
"""
from __future__ import annotations

import ast

import numpy as np

from gradcli.check.diagnosis import calls
from gradcli.check.diagnosis.calls import MORE, Parts, Unsupported, assigns_or_changes, special
from gradcli.check.diagnosis.source import grad_output_names, statements

UNARY = {
    "exp": np.exp, "log": np.log, "sin": np.sin, "cos": np.cos, "tan": np.tan, "tanh": np.tanh,
    "sqrt": np.sqrt, "rsqrt": lambda z: 1 / np.sqrt(z), "abs": np.abs, "neg": np.negative,
    "reciprocal": lambda z: 1 / z, "square": np.square, "log1p": np.log1p, "expm1": np.expm1,
    "sigmoid": lambda z: 1 / (1 + np.exp(-z)), "sign": np.sign, "relu": lambda z: np.maximum(z, 0),
    "float": lambda z: z, "double": lambda z: z, "clone": lambda z: z, "detach": lambda z: z,
    "contiguous": lambda z: z,
    "lgamma": lambda z: special("loggamma", z), "digamma": lambda z: special("digamma", z),
}

BINARY = {"pow": np.power, "mul": np.multiply, "add": np.add, "sub": np.subtract, "div": np.divide,
          "matmul": np.matmul, "mm": np.matmul, "bmm": np.matmul}


def _softmax(z, axis):
    e = np.exp(z - np.max(z, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


# reductions and shape helpers taking a dim (positional or ``dim=``) and ``keepdim=``
DIM_OPS = {
    "sum": lambda z, d, k: np.sum(z, axis=d, keepdims=k), "mean": lambda z, d, k: np.mean(z, axis=d, keepdims=k),
    "softmax": lambda z, d, k: _softmax(z, d), "log_softmax": lambda z, d, k: np.log(_softmax(z, d)),
    "unsqueeze": lambda z, d, k: np.expand_dims(z, d), "cumsum": lambda z, d, k: np.cumsum(z, axis=d),
    "amax": lambda z, d, k: np.max(z, axis=d, keepdims=k), "amin": lambda z, d, k: np.min(z, axis=d, keepdims=k),
    # max/min only as a whole-tensor reduction (with a dim torch returns values and indices); an
    # edit giving one a dim makes it the per-axis amax/amin
    "max": lambda z, d, k: np.max(z, axis=d, keepdims=k), "min": lambda z, d, k: np.min(z, axis=d, keepdims=k),
    "norm": lambda z, d, k: np.sqrt(np.sum(z * z, axis=d, keepdims=k)),  # the 2-norm: dim given by keyword only
}
WHOLE_ONLY = ("max", "min")
CONSTANTS = {"pi": np.pi, "e": np.e}
COMPARE = {ast.Lt: np.less, ast.LtE: np.less_equal, ast.Gt: np.greater, ast.GtE: np.greater_equal,
           ast.Eq: np.equal, ast.NotEq: np.not_equal}
SAVED = ("saved_tensors", "saved_variables")


class _Evaluator:
    def __init__(self, src, before_line, env, saved, ctx_attrs):
        self.src, self.before_line, self.env = src, before_line, dict(env)
        self.saved, self.ctx_attrs = saved, ctx_attrs
        self.assignments = [n for n in statements(src.tree) if isinstance(n, ast.Assign) and n.lineno < before_line
                            and src.ran(n)]
        self.depth = 0
        self.overrides, self.dim_overrides = {}, {}  # id(node) -> value -> value; id(call) -> dim
        self.compare_overrides = {}  # id(compare) -> another comparison operator (ast class)
        self.assigned = {n.id for stmt in self.assignments for t in stmt.targets for n in ast.walk(t)
                         if isinstance(n, ast.Name)}
        first = next(iter(self.env.values()), None)  # this cotangent row's first grad_output
        self.recorded = getattr(src, "recorded", {}).get(id(first), {})
        self._reassign_arguments()

    def _reassign_arguments(self):
        """A grad_output argument backward reassigns (``g = g[:, None]``, ``grad = grad.unsqueeze(1)``)
        has that value after the assignment, in source order; unreadable, it keeps the argument's."""
        arguments = grad_output_names(self.src) & set(self.env)  # not a name an edit binds
        for stmt in self.assignments:
            if len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name) and stmt.targets[0].id in arguments:
                try:
                    self.env[stmt.targets[0].id] = self.value(stmt.value)
                except (Unsupported, ValueError, TypeError, IndexError, ArithmeticError):
                    return

    def name(self, name):
        if name in self.env:
            return self.env[name]
        for stmt in reversed(self.assignments):
            for target in stmt.targets:
                if isinstance(target, ast.Name) and target.id == name:
                    value = self._saved_item(stmt.value, None)
                    self.env[name] = value if value is not None else self._assigned(name, stmt)
                    return self.env[name]
                if isinstance(target, (ast.Tuple, ast.List)):
                    names = [e.id if isinstance(e, ast.Name) else None for e in target.elts]
                    if name not in names and any(isinstance(e, ast.Name) and e.id == name for e in ast.walk(target)):
                        self.env[name] = self._recorded_once(name)  # nested: `a, (b, c) = helper(x)`
                        return self.env[name]
                    if name in names and self._is_saved(stmt.value):
                        k = names.index(name)
                        if k >= len(self.saved):
                            raise Unsupported(name)
                        self.env[name] = self.saved[k]
                        return self.env[name]
                    if name in names and isinstance(stmt.value, (ast.Tuple, ast.List)) \
                            and len(stmt.value.elts) == len(names):  # `num, den = ctx.num, ctx.den`
                        self.env[name] = self.value(stmt.value.elts[names.index(name)])
                        return self.env[name]
                    if name in names:  # `n, c = x.shape`, `gx, gy = grad.unbind(1)`, a helper's tuple
                        try:
                            shape = self.value(stmt.value)
                        except Unsupported:
                            self.env[name] = self._recorded_once(name)
                            return self.env[name]
                        if not isinstance(shape, tuple) or len(shape) != len(names):
                            raise Unsupported(name)
                        part = shape[names.index(name)]
                        self.env[name] = part if isinstance(shape, Parts) else float(part)
                        return self.env[name]
        if name in self.src.constants:  # a module-level number (`GAMMA = 2.0`)
            return self.src.constants[name]
        raise Unsupported(name)

    def _assigned(self, name, stmt):
        """The value ``stmt`` assigns to ``name``; outside the vocabulary (a helper of the user's,
        ``onehot = _one_hot(target, c)``), the value backward itself held for it when it
        returned — only for a name assigned once and never changed in place, so that value is
        the one this statement computed (an edit inside it then changes nothing)."""
        try:
            return self.value(stmt.value)
        except Unsupported:
            return self._recorded_once(name)

    def _recorded_once(self, name):
        once = sum(1 for s in statements(self.src.tree) if assigns_or_changes(s, name)) == 1
        if not once or name not in self.recorded:
            raise Unsupported(name)
        return np.asarray(self.recorded[name], dtype=float)

    @staticmethod
    def _is_saved(node):
        return isinstance(node, ast.Attribute) and node.attr in SAVED

    def _saved_item(self, node, _):
        if isinstance(node, ast.Subscript) and self._is_saved(node.value) and isinstance(node.slice, ast.Constant):
            k = node.slice.value
            if isinstance(k, int) and k < len(self.saved):
                return self.saved[k]
            raise Unsupported("saved index")
        return None

    def value(self, node):
        self.depth += 1
        if self.depth > 200:
            raise Unsupported("too deep")
        try:
            value = self._value(node)
            edit = self.overrides.get(id(node))
            return value if edit is None else edit(value)
        finally:
            self.depth -= 1

    def _value(self, node):
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
            return float(node.value)
        if isinstance(node, ast.Name):
            return self.name(node.id)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            operand = self.value(node.operand)
            return -operand if isinstance(node.op, ast.USub) else operand
        if isinstance(node, ast.BinOp):
            ops = {ast.Add: np.add, ast.Sub: np.subtract, ast.Mult: np.multiply, ast.Div: np.divide,
                   ast.Pow: np.power, ast.MatMult: np.matmul}
            op = ops.get(type(node.op))
            if op is None:
                raise Unsupported(type(node.op).__name__)
            left, right = self.value(node.left), self.value(node.right)
            if isinstance(left, tuple) or isinstance(right, tuple):
                raise Unsupported("shape arithmetic")
            return op(left, right)
        if isinstance(node, ast.Subscript):
            base = self.value(node.value)
            if isinstance(base, tuple):  # x.shape[-1], grad.unbind(1)[0]
                k = self._int(node.slice)
                if not isinstance(k, int) or not -len(base) <= k < len(base):
                    raise Unsupported("shape index")
                return base[k] if isinstance(base, Parts) else float(base[k])
            return np.asarray(base)[self._basic_index(node.slice)]
        if isinstance(node, ast.Attribute):
            if isinstance(node.value, ast.Name) and node.value.id == "ctx" and node.attr in self.ctx_attrs:
                return self.ctx_attrs[node.attr]
            if node.attr in ("T", "mT") and not (isinstance(node.value, ast.Name) and node.value.id == "ctx"):
                base = np.asarray(self.value(node.value))
                return base.T if node.attr == "T" else np.swapaxes(base, -1, -2)
            if node.attr in CONSTANTS and isinstance(node.value, ast.Name):
                return CONSTANTS[node.attr]
            if node.attr in ("shape", "ndim"):
                base = self.value(node.value)
                if isinstance(base, tuple):
                    raise Unsupported(node.attr)
                shape = tuple(int(d) for d in np.shape(base))
                return shape if node.attr == "shape" else float(len(shape))
            raise Unsupported(node.attr)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("len", "float", "int") \
                and len(node.args) == 1 and not node.keywords and node.func.id not in self.env:
            value = self.value(node.args[0])
            if node.func.id == "len":
                if isinstance(value, tuple):
                    return float(len(value))
                if not np.ndim(value):
                    raise Unsupported("len")
                return float(np.shape(value)[0])
            if isinstance(value, tuple) or np.ndim(value):
                raise Unsupported(node.func.id)
            return float(value)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in (
                "numel", "size", "dim") and not node.keywords and not self._is_module(node.func.value):
            shape = tuple(int(d) for d in np.shape(self.value(node.func.value)))
            if node.func.attr == "numel" and not node.args:
                return float(int(np.prod(shape, dtype=int)))
            if node.func.attr == "dim" and not node.args:
                return float(len(shape))
            if node.func.attr == "size" and not node.args:
                return shape
            if node.func.attr == "size" and len(node.args) == 1:
                k = self._int(node.args[0])
                if isinstance(k, int) and -len(shape) <= k < len(shape):
                    return float(shape[k])
            raise Unsupported(node.func.attr)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in DIM_OPS:
            return self._dim_op(node)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "t" \
                and not node.args and not node.keywords:
            return np.asarray(self.value(node.func.value)).T
        if isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in COMPARE:
            left, right = self.value(node.left), self.value(node.comparators[0])
            op = self.compare_overrides.get(id(node), type(node.ops[0]))
            return COMPARE[op](np.asarray(left), np.asarray(right)).astype(float)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in MORE:
            return calls.more(self, node)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and not node.keywords:
            attr, owner = node.func.attr, node.func.value
            module = self._is_module(owner)
            args = [self.value(a) for a in node.args]
            if module:  # torch.exp(x), math.sqrt(2), np.tanh(z)
                if attr in UNARY and len(args) == 1:
                    return UNARY[attr](args[0])
                if attr in BINARY and len(args) == 2:
                    return BINARY[attr](*args)
                raise Unsupported(attr)
            base = self.value(owner)
            if attr in UNARY and not args:
                return UNARY[attr](base)
            if attr in BINARY and len(args) == 1:
                return BINARY[attr](base, args[0])
            raise Unsupported(attr)
        raise Unsupported(type(node).__name__)

    def _is_module(self, owner):
        return isinstance(owner, ast.Name) and owner.id not in self.env and owner.id not in self.assigned \
            and owner.id not in ("ctx", "self")

    @staticmethod
    def _int(node):
        if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
            return node.value
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return -_Evaluator._int(node.operand)
        if isinstance(node, (ast.Tuple, ast.List)):
            return tuple(_Evaluator._int(e) for e in node.elts)
        raise Unsupported("dim")

    @staticmethod
    def _is_literal_int(node) -> bool:
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            node = node.operand
        return isinstance(node, ast.Constant) and type(node.value) is int

    @staticmethod
    def _literal_int(node) -> int:
        if not _Evaluator._is_literal_int(node):
            raise Unsupported("index")
        if isinstance(node, ast.UnaryOp):
            return -node.operand.value
        return node.value

    def _basic_index(self, node):
        """Slices (literal bounds), literal integers, None, Ellipsis (``g[:, None]``) and 1-D integer
        index tensors (``yp[i + 1]``)."""
        parts = node.elts if isinstance(node, ast.Tuple) else [node]
        index = []
        for part in parts:
            if isinstance(part, ast.Constant) and part.value is None:
                index.append(None)
            elif isinstance(part, ast.Constant) and part.value is Ellipsis:
                index.append(Ellipsis)
            elif isinstance(part, ast.Slice):  # `:`, or literal bounds and step (`g[:, 1::2]`, `x[:-1]`)
                bounds = [None if b is None else self._literal_int(b) for b in (part.lower, part.upper, part.step)]
                index.append(slice(*bounds))
            elif self._is_literal_int(part):  # one position (`points[:, 0]`)
                index.append(self._literal_int(part))
            elif isinstance(part, (ast.Name, ast.BinOp)):  # an integer index tensor (`yp[i + 1]`)
                value = self.value(part)
                if isinstance(value, tuple) or np.ndim(value) != 1 or np.any(value != np.round(value)):
                    raise Unsupported("index")
                index.append(np.asarray(value).astype(np.int64))
            else:
                raise Unsupported("index")
        return tuple(index)

    def _dim_op(self, node):
        """``z.sum(dim, keepdim=True)``, ``torch.softmax(z, dim=-1)``, ``z.unsqueeze(1)``, ..."""
        attr, owner = node.func.attr, node.func.value
        args = list(node.args)
        base = self.value(args.pop(0)) if self._is_module(owner) else self.value(owner)
        dim, keepdim = None, False
        if args and attr == "norm":
            raise Unsupported("norm's p")  # norm's first positional argument is p, not a dim
        if args:
            dim = self._int(args.pop(0))
        if args:
            raise Unsupported(attr)
        for keyword in node.keywords:
            if keyword.arg in ("dim", "axis"):
                dim = self._int(keyword.value)
            elif keyword.arg == "keepdim" and isinstance(keyword.value, ast.Constant):
                keepdim = bool(keyword.value.value)
            else:
                raise Unsupported(keyword.arg)
        if attr in WHOLE_ONLY and (dim is not None or node.keywords):
            raise Unsupported(attr)
        if id(node) in self.dim_overrides and dim is None:
            keepdim = True  # a whole-tensor reduction made per-axis keeps its dims, to broadcast back
        dim = self.dim_overrides.get(id(node), dim)
        if dim is None and attr not in ("sum", "mean", "amax", "amin") + WHOLE_ONLY:
            raise Unsupported(attr)
        return DIM_OPS[attr](np.asarray(base, dtype=float), dim, keepdim)


def _as_array(value):
    from gradcli.check.diagnosis.probe import _to_numpy

    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if hasattr(value, "shape") and hasattr(value, "dtype"):
        return np.asarray(_to_numpy(value), dtype=float)
    return None


def _context(probe, cls, position, rows, executed):
    """(src, shaped rows, grad_output names, saved tensors, ctx attributes) for one more forward
    call of the Function re-run by ``probe``; None when unavailable."""
    from gradcli.check.diagnosis.source import backward_source
    from gradcli.check.diagnosis.probe import _flatten_outputs, _to_numpy, row_key

    src = backward_source(cls, executed)
    if src is None or position is None or not rows:
        return None
    args = [a.arg for a in src.tree.args.args]
    while args and args[0] in ("ctx", "self", "cls"):
        args = args[1:]
    with probe._grad_enabled(True):
        outs = _flatten_outputs(probe.fn(*probe._build()))
    differentiable = probe._differentiable_outputs(outs)
    root = probe._root(differentiable)
    if root is None or len(outs) != len(differentiable) or len(args) != len(differentiable):
        return None
    node = root[0]
    saved = getattr(node, "_to_save", None) if probe.backend != "torch" else node.saved_tensors
    saved = [None if t is None else _as_array(t) for t in (saved or ())]
    ctx_attrs = {}
    for key, value in vars(node).items() if hasattr(node, "__dict__") else ():
        if not key.startswith("_"):
            converted = _as_array(value)
            if converted is not None:
                ctx_attrs[key] = converted
    shapes = [_to_numpy(o).shape for o in differentiable]
    shaped = [tuple(np.reshape(c, s) for c, s in zip(row, shapes)) for row in rows]
    recorded = getattr(probe, "recorded", None) or {}
    src.recorded = {id(r[0]): recorded.get(row_key(row), {})
                    for r, row in zip(shaped, rows) if r}
    return src, shaped, args, saved, ctx_attrs


def statement_context(probe, cls, position, rows, executed):
    """``_context`` plus the statement computing input ``position``'s gradient: ``(src, shaped, args,
    saved, ctx_attrs, statement, expr, before)`` (``before``: the line up to which backward runs
    first), or None when that statement cannot be evaluated as written."""
    from gradcli.check.diagnosis.source import gradient_statement
    context = _context(probe, cls, position, rows, executed)
    if context is None:
        return None
    src, shaped, args, saved, ctx_attrs = context
    statement, expr = gradient_statement(src, position)
    if statement is None or expr is None or len(args) != len(shaped[0]):
        return None
    before = statement.lineno + 1 if isinstance(statement, ast.Assign) else statement.lineno
    return src, shaped, args, saved, ctx_attrs, statement, expr, before
