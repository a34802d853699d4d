"""Re-running a checked function for the diagnosis.

The diagnosis only runs on failures, so it may afford a few more forward and backward calls than
gradcheck made. A ``Probe`` wraps ``fn`` and its inputs on either backend (gradcli's engine or
torch, told apart by the inputs' types) and offers, all as float64 numpy arrays:

- ``vjp``: vᵀJ from the function's backward, per differentiable input;
- ``raw``: what the custom Function's ``backward`` returned *before* the engine validated it
  (a gradient of the wrong shape, which the engine refuses or silently sums down, is the
  evidence for ``transposed``, ``swapped`` and ``not_reduced``);
- ``numeric``: vᵀJ per element by central differences (4 forward calls per element) together
  with an error estimate and the one-sided derivatives that reveal kinks.

This module keeps its own small central difference instead of reusing ``gradcli.numeric``: the
patterns only need ~1e-10 relative accuracy plus one-sided slopes, and the diagnosis must not
break when the checker's estimators change.
"""
from __future__ import annotations

import inspect

import numpy as np

EPS64 = float(np.finfo(np.float64).eps)
STEP = EPS64 ** (1.0 / 3.0)
# Above this many elements in one input, the per-element numeric gradient is not recomputed
# (4 forward calls per element); patterns then use the report's arrays only.
MAX_NUMERIC_ELEMENTS = 2048


class ProbeError(Exception):
    """The function or its backward raised while probing; ``inplace`` tells the in-place error apart."""

    def __init__(self, exc: BaseException):
        self.exc = exc
        self.inplace = "modified by an inplace operation" in str(exc)
        super().__init__(f"{type(exc).__name__}: {exc}")


def is_torch_object(x) -> bool:
    return type(x).__module__.split(".")[0] == "torch"


def _is_float_tensor(x) -> bool:
    if is_torch_object(x):
        return bool(getattr(x, "is_floating_point", lambda: False)())
    from gradcli.autograd.tensor import Tensor

    return isinstance(x, Tensor) and x.data.dtype.kind == "f"


def _to_numpy(x) -> np.ndarray:
    if is_torch_object(x):
        return x.detach().cpu().numpy()
    return np.asarray(x.data)


def _copied(x):
    """A copy of a non-float tensor (its values only), anything else as it is."""
    if is_torch_object(x) and hasattr(x, "is_floating_point") and hasattr(x, "clone") \
            and not x.is_floating_point() and not x.is_complex():
        return x.clone()
    from gradcli.autograd.tensor import Tensor

    if isinstance(x, Tensor) and x.data.dtype.kind in "biu":
        return Tensor(np.array(x.data, copy=True))
    return x


def _flatten_outputs(out) -> list:
    """Outputs in gradcheck's order: nested tuples and lists flattened."""
    if isinstance(out, (tuple, list)):
        return [item for part in out for item in _flatten_outputs(part)]
    return [out]


class Probe:
    """``fn(*inputs)`` made re-runnable with new values for its differentiable inputs."""

    def __init__(self, fn, inputs, indices=None):
        # gradcheck also accepts the Function class itself
        self.fn = fn.apply if isinstance(fn, type) and hasattr(fn, "apply") else fn
        self.args = tuple(inputs) if isinstance(inputs, (tuple, list)) else (inputs,)
        self.backend = "torch" if any(is_torch_object(a) for a in self.args) else "gradcli"
        if indices is None:
            indices = [i for i, a in enumerate(self.args) if _is_float_tensor(a)]
        self.indices = [i for i in indices if i < len(self.args) and _is_float_tensor(self.args[i])]
        # Copies taken now: a forward that modifies its inputs in place must not shift later probes.
        self.values = {i: np.array(_to_numpy(self.args[i]), copy=True) for i in self.indices}
        self.dtypes = {i: self.values[i].dtype for i in self.indices}
        self._output_mask = None

    # ----- building and running -----------------------------------------------------------
    def _tensor(self, array, dtype, requires_grad):
        if self.backend == "torch":
            import torch

            t = torch.from_numpy(np.array(array, dtype=dtype, copy=True))
            return t.requires_grad_(requires_grad)
        from gradcli.autograd.tensor import Tensor

        return Tensor(np.array(array, dtype=dtype, copy=True), requires_grad=requires_grad)

    def _build(self, values=None, requires_grad=True, upcast=False):
        values = {**self.values, **(values or {})}
        # integer and bool tensors copied too: an edited backward may write into one it saved (edges
        # read as `edges[a] += …`), which must not corrupt the next run nor the caller's input
        args = [_copied(a) for a in self.args]
        for i in self.indices:
            dtype = np.float64 if upcast else self.dtypes[i]
            args[i] = self._tensor(values[i], dtype, requires_grad)
        return args

    def _grad_enabled(self, enabled):
        if self.backend == "torch":
            import torch

            return torch.set_grad_enabled(enabled)
        from gradcli.autograd import grad_mode

        return grad_mode.set_grad_enabled(enabled)

    def _differentiable_outputs(self, outs):
        if self._output_mask is None:
            return [o for o in outs if _is_float_tensor(o) and o.requires_grad]
        return [o for o, keep in zip(outs, self._output_mask) if keep]

    def output_mask(self):
        """Which of fn's outputs are differentiable (float tensors that require grad)."""
        if self._output_mask is None:
            with self._grad_enabled(True):
                outs = _flatten_outputs(self.fn(*self._build()))
            self._output_mask = [_is_float_tensor(o) and bool(o.requires_grad) for o in outs]
        return self._output_mask

    def forward(self, values=None, upcast=True) -> list:
        """The differentiable outputs as float64 arrays (inputs cast up to float64 when ``upcast``)."""
        mask = self.output_mask()
        with self._grad_enabled(False):
            outs = _flatten_outputs(self.fn(*self._build(values, requires_grad=False, upcast=upcast)))
        return [np.asarray(_to_numpy(o), dtype=np.float64) for o, keep in zip(outs, mask) if keep]

    def output_shapes(self) -> list:
        return [o.shape for o in self.forward(upcast=False)]

    def mutated_inputs(self) -> list:
        """Indices of inputs whose values a forward call changes (an in-place op on an input)."""
        args = self._build(requires_grad=False)
        with self._grad_enabled(False):
            self.fn(*args)
        return [i for i in self.indices if not np.array_equal(_to_numpy(args[i]), self.values[i], equal_nan=True)]

    def _cotangent_tensors(self, outs, cotangent):
        return [self._tensor(np.asarray(c).reshape(_to_numpy(o).shape), _to_numpy(o).dtype, False)
                for o, c in zip(outs, cotangent)]

    def vjp(self, cotangent, values=None) -> dict:
        """{input index: vᵀJ as float64 array, or None where backward gave no gradient}."""
        self.output_mask()
        args = self._build(values)
        try:
            with self._grad_enabled(True):
                outs = self._differentiable_outputs(_flatten_outputs(self.fn(*args)))
            leaves = [args[i] for i in self.indices]
            grads_out = self._cotangent_tensors(outs, cotangent)
            if self.backend == "torch":
                import torch

                grads = torch.autograd.grad(outs, leaves, grads_out, allow_unused=True)
            else:
                from gradcli.autograd import engine

                grads = engine.grad(outs, leaves, grads_out, allow_unused=True)
        except Exception as exc:  # the user's backward may raise anything; it is evidence, not a crash
            raise ProbeError(exc) from exc
        return {i: None if g is None else np.asarray(_to_numpy(g), dtype=np.float64)
                for i, g in zip(self.indices, grads)}

    # ----- the custom backward, unvalidated -----------------------------------------------
    def _root(self, outs):
        """The one graph node all outputs come from, and the leaf each of its input edges reaches."""
        nodes = {id(o.grad_fn): o.grad_fn for o in outs if o.grad_fn is not None}
        if len(nodes) != 1:
            return None
        node = next(iter(nodes.values()))
        if self.backend == "torch":
            edges = [e[0] for e in node.next_functions]
        else:
            edges = [None if e is None else e[0] for e in node._next]
        # an edge into an input is that leaf's AccumulateGrad node, whose .variable is the leaf
        return node, [getattr(e, "variable", None) for e in edges]

    def raw(self, cotangent, values=None, trace_code=None):
        """What the root Function's backward returns for ``cotangent``: ``{index: array | None}``
        keyed by input, plus ``positions`` {index: position in backward's return}; None when fn's
        outputs do not come straight from one Function applied to the inputs. With
        ``trace_code`` (backward's code object) also ``executed``: the file lines of that code
        that ran during the call (line events of ``sys.settrace``)."""
        self.output_mask()
        args = self._build(values)
        with self._grad_enabled(True):
            outs = self._differentiable_outputs(_flatten_outputs(self.fn(*args)))
        root = self._root(outs)
        if root is None:
            return None
        node, leaves = root
        positions = {}
        for p, leaf in enumerate(leaves):
            for i in self.indices:
                if leaf is args[i]:
                    positions[i] = p
        if not positions:
            return None
        grads_out = self._cotangent_tensors(outs, cotangent)
        executed, local_names = set(), ({} if trace_code is not None else None)
        try:
            with self._grad_enabled(False), _LineTrace(trace_code, executed, local_names):
                if self.backend == "torch":
                    import torch

                    ordered = [torch.zeros_like(o) for o in outs]
                    for o, g in zip(outs, grads_out):
                        ordered[o.output_nr] = g
                    raw = node.apply(*ordered)
                else:
                    from gradcli.autograd.tensor import Tensor

                    ordered = [None] * node._n_outputs
                    for o, g in zip(outs, grads_out):
                        ordered[o._output_nr] = g
                    ordered = [Tensor(np.zeros(m[0], dtype=m[1])) if g is None and m is not None else g
                               for g, m in zip(ordered, node._output_meta)]
                    raw = node._backward(ordered)
        except Exception as exc:
            raise ProbeError(exc) from exc
        raw = raw if isinstance(raw, tuple) else (raw,)
        grads = {}
        for i, p in positions.items():
            g = raw[p] if p < len(raw) else None
            grads[i] = None if g is None or not hasattr(g, "shape") else np.asarray(_to_numpy(g), dtype=np.float64)
        missing = [i for i, p in positions.items() if p >= len(raw)]  # too few gradients returned
        return {"grads": grads, "positions": positions, "returned": len(raw), "missing": missing,
                "expected": len(leaves), "executed": frozenset(executed) if trace_code is not None else None,
                "locals": {k: np.array(_to_numpy(v), copy=True) for k, v in (local_names or {}).items() if _is_tensor(v)}}

    # ----- numerical reference ------------------------------------------------------------
    def numeric(self, index, cotangents, values=None, upcast=True, positions=None):
        """Per-element vᵀJ for every cotangent by central differences.

        Returns ``(value, error, left, right)``, each shaped ``(len(cotangents), *x.shape)``, or
        None when there are too many elements. ``values`` may replace inputs (e.g. a
        broadcast-expanded copy of one input, to get the gradient *before* reduction over broadcast
        dims); ``positions`` (flat indices) limits the work to those elements, the others are NaN.
        """
        values = {**self.values, **(values or {})}
        x = np.asarray(values[index], dtype=np.float64)
        positions = range(x.size) if positions is None else [int(j) for j in positions]
        if len(positions) > MAX_NUMERIC_ELEMENTS:
            return None
        cot = [np.concatenate([np.ravel(np.asarray(c, dtype=np.float64)) for c in row]) for row in cotangents]
        C = np.stack(cot)  # (K, total output size)

        def projected(xv):
            outs = self.forward({**values, index: xv}, upcast=upcast)
            flat = np.concatenate([o.ravel() for o in outs]) if outs else np.zeros(0)
            return flat

        f0 = projected(x)
        if f0.shape[0] != C.shape[1]:
            raise ValueError("cotangent sizes do not match the function's outputs")
        s0, mag = C @ f0, np.abs(C) @ np.abs(f0)
        K = C.shape[0]
        value, error, left, right = (np.full((K, x.size), np.nan) for _ in range(4))
        flat_x = x.ravel()
        with np.errstate(all="ignore"):
            for j in positions:
                h = STEP * max(1.0, abs(flat_x[j]))
                s = {}
                for t in (h, -h, 2 * h, -2 * h):
                    xv = flat_x.copy()
                    xv[j] += t
                    s[t] = C @ projected(xv.reshape(x.shape))
                d1 = (s[h] - s[-h]) / (2 * h)
                d2 = (s[2 * h] - s[-2 * h]) / (4 * h)
                rounding = EPS64 * mag / h
                value[:, j] = d1
                error[:, j] = np.abs(d2 - d1) / 3.0 + rounding
                right[:, j] = 2 * (s[h] - s0) / h - (s[2 * h] - s0) / (2 * h)
                left[:, j] = 2 * (s0 - s[-h]) / h - (s0 - s[-2 * h]) / (2 * h)
        shape = (K,) + x.shape
        return value.reshape(shape), error.reshape(shape), left.reshape(shape), right.reshape(shape)


class _LineTrace:
    """Records the lines of one code object that run inside the block (``sys.settrace``),
    chaining to a tracer already installed (a coverage tool keeps working)."""

    def __init__(self, code, lines: set, local_names=None):
        self.code, self.lines, self.previous = code, lines, None
        self.local_names = local_names  # a dict: filled with the frame's locals when it returns

    def __enter__(self):
        import sys

        if self.code is None:
            return self
        self.previous = sys.gettrace()
        previous, code, lines, local_names = self.previous, self.code, self.lines, self.local_names

        def tracer(frame, event, arg):
            chained = previous(frame, event, arg) if previous is not None else None
            if frame.f_code is not code:
                return chained

            def local(frame, event, arg):
                nonlocal chained
                if event == "line":
                    lines.add(frame.f_lineno)
                elif event == "return" and local_names is not None:
                    local_names.update(frame.f_locals)
                if chained is not None:
                    chained = chained(frame, event, arg)
                return local

            return local

        sys.settrace(tracer)
        return self

    def __exit__(self, *exc):
        import sys

        if self.code is not None:
            sys.settrace(self.previous)
        return False


def row_key(row) -> bytes:
    """A cotangent row (one array per output) as a dict key: the backward locals recorded for it."""
    return b"".join(np.asarray(part, dtype=float).tobytes() for part in row)


def _is_tensor(value) -> bool:
    return hasattr(value, "shape") and hasattr(value, "dtype")


def _node_class(node):
    """The user's Function class behind a graph node, or None for built-in ops and leaves."""
    cls = getattr(node, "_forward_cls", None) or getattr(type(node), "_forward_cls", None)
    if cls is None and hasattr(type(node), "backward") and hasattr(type(node), "forward"):
        cls = type(node)  # a legacy gradcli Function instance is its own graph node
    if cls is None or cls.__module__.startswith(("gradcli.autograd", "torch")):
        return None  # a built-in op: its source is not the user's to fix
    return cls


def _next_nodes(node):
    edges = getattr(node, "next_functions", None)
    if edges is None:
        edges = getattr(node, "_next", ())
    return [e[0] for e in edges if e is not None and e[0] is not None]


def function_class(fn, probe: Probe | None = None):
    """The custom autograd Function class behind ``fn``: ``Cls``/``Cls.apply`` directly, or the
    only user Function in the graph of a wrapper (``lambda x: MyFn.apply(x) * 3``); else None."""
    owner = fn if isinstance(fn, type) else getattr(fn, "__self__", None)
    if isinstance(owner, type) and hasattr(owner, "backward"):
        return owner
    if probe is None:
        return None
    try:
        probe.output_mask()
        with probe._grad_enabled(True):
            outs = probe._differentiable_outputs(_flatten_outputs(probe.fn(*probe._build())))
    except Exception:
        return None
    found, seen = [], set()
    stack = [o.grad_fn for o in outs if o.grad_fn is not None]
    while stack and len(seen) < 10000:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        cls = _node_class(node)
        if cls is not None and cls not in found:
            found.append(cls)
        stack.extend(_next_nodes(node))
    return found[0] if len(found) == 1 else None


def parameter_name(fn, index) -> str:
    """forward's parameter name for positional input ``index`` (after ctx), else input<index>."""
    target = fn if isinstance(fn, type) else getattr(fn, "__self__", None)
    target = getattr(target, "forward", None) if isinstance(target, type) else fn
    try:
        params = [p.name for p in inspect.signature(target).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        return f"input{index}"
    if params and params[0] in ("ctx", "self"):
        params = params[1:]
    return params[index] if index < len(params) else f"input{index}"
