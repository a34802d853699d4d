"""The backward engine: a topological walk over the graph of nodes, accumulating with ``+``.

Kahn's algorithm: a node runs once every node that feeds it a gradient has run, so a tensor
used twice receives both contributions before its own backward is called.
"""
import numbers

import numpy as np

from gradcli.autograd import grad_mode
from gradcli.autograd.function import AccumulateGrad, _edge
from gradcli.autograd.tensor import Tensor


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, inputs=None):
    """Accumulate d(tensors)/d(leaf) · grad_tensors into every leaf's ``.grad``."""
    tensors = _as_tuple(tensors)
    grads = _make_grads(tensors, _as_tuple(grad_tensors) if grad_tensors is not None else None)
    if retain_graph is None:
        retain_graph = create_graph
    roots = _roots(tensors)
    targets = None
    if inputs is not None:
        targets = {_edge(t)[0]: None for t in _as_tuple(inputs)}
    _run(roots, grads, retain_graph, create_graph, targets, accumulate=True)


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False, allow_unused=False,
         materialize_grads=False):
    """Return d(outputs)/d(inputs) · grad_outputs without touching any ``.grad``."""
    outputs = _as_tuple(outputs)
    inputs_t = _as_tuple(inputs)
    grads = _make_grads(outputs, _as_tuple(grad_outputs) if grad_outputs is not None else None)
    if retain_graph is None:
        retain_graph = create_graph
    for i, t in enumerate(inputs_t):
        if not isinstance(t, Tensor) or not t.requires_grad:
            raise RuntimeError(f"One of the differentiated Tensors (input {i}) does not require grad")
    edges = [_edge(t) for t in inputs_t]
    targets = {node: {} for node, _ in edges}
    _run(_roots(outputs), grads, retain_graph, create_graph, targets, accumulate=False)
    result = []
    for t, (node, nr) in zip(inputs_t, edges):
        g = targets[node].get(nr)
        if g is None:
            if not allow_unused and not materialize_grads:
                raise RuntimeError("One of the differentiated Tensors appears to not have been used in the graph. "
                                   "Set allow_unused=True if this is the desired behavior.")
            if materialize_grads:
                g = Tensor(np.zeros_like(t.data))
        elif not create_graph:
            g = g.detach()
        result.append(g)
    return tuple(result)


def _as_tuple(x):
    if isinstance(x, (tuple, list)):
        return tuple(x)
    return (x,)


def _roots(tensors):
    roots = []
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor) or not t.requires_grad:
            raise RuntimeError(f"element {i} of tensors does not require grad and does not have a grad_fn")
        roots.append(_edge(t))
    return roots


def _make_grads(outputs, grads):
    if grads is not None and len(grads) != len(outputs):
        raise RuntimeError(f"grad can be implicitly created only for scalar outputs; got {len(grads)} gradients "
                           f"for {len(outputs)} outputs")
    made = []
    for i, out in enumerate(outputs):
        g = None if grads is None else grads[i]
        if g is None:
            if out.data.size != 1:
                raise RuntimeError("grad can be implicitly created only for scalar outputs")
            g = Tensor(np.ones_like(out.data))
        else:
            if isinstance(g, numbers.Number) or isinstance(g, np.ndarray):
                g = Tensor(np.asarray(g, dtype=out.data.dtype))
            if not isinstance(g, Tensor):
                raise TypeError(f"gradients can be either Tensors or None, but got {type(g).__name__}")
            if g.shape != out.shape:
                if g.data.size == out.data.size == 1:
                    g = Tensor(g.data.reshape(out.shape))
                else:
                    raise RuntimeError(f"Mismatch in shape: grad_output[{i}] has a shape of {list(g.shape)} and "
                                       f"output[{i}] has a shape of {list(out.shape)}.")
        made.append(g)
    return made


def _dependencies(roots):
    deps = {}
    seen = set()
    stack = []
    for node, _ in roots:
        if node not in seen:
            seen.add(node)
            stack.append(node)
    while stack:
        node = stack.pop()
        for e in node._next:
            if e is None:
                continue
            nxt = e[0]
            deps[nxt] = deps.get(nxt, 0) + 1
            if nxt not in seen:
                seen.add(nxt)
                stack.append(nxt)
    return deps


def _needed(roots, targets):
    """Nodes from which some target is reachable (the only ones grad() must run)."""
    needed = {}

    def visit(start):
        stack = [(start, iter(start._next))]
        while stack:
            node, it = stack[-1]
            advanced = False
            for e in it:
                if e is None:
                    continue
                nxt = e[0]
                if nxt not in needed:
                    needed[nxt] = nxt in targets
                    stack.append((nxt, iter(nxt._next)))
                    advanced = True
                    break
            if not advanced:
                stack.pop()
                if needed.get(node) and stack:
                    needed[stack[-1][0]] = True

    for node, _ in roots:
        if node not in needed:
            needed[node] = node in targets
            visit(node)
    # propagate once more: a node visited earlier through another path may have learned late
    changed = True
    while changed:
        changed = False
        for node in list(needed):
            if not needed[node] and any(e is not None and needed.get(e[0]) for e in node._next):
                needed[node] = changed = True
    return needed


def _run(roots, root_grads, retain_graph, create_graph, targets, accumulate):
    deps = _dependencies(roots)
    needed = _needed(roots, targets) if targets is not None else None
    buffers = {}
    for (node, nr), g in zip(roots, root_grads):
        _add_to_buffer(buffers, node, nr, g, create_graph)
    ready = []
    for node, _ in roots:
        if deps.get(node, 0) == 0 and node not in ready:
            ready.append(node)

    prev = grad_mode.is_grad_enabled()
    grad_mode._set(create_graph)
    try:
        while ready:
            node = ready.pop()
            grads = buffers.pop(node, None)
            if needed is not None and not needed.get(node, False):
                _skip(node, deps, ready)
                continue
            if targets is not None and node in targets and targets[node] is not None:
                for nr, g in enumerate(grads or ()):
                    if g is not None:
                        targets[node][nr] = g
            if type(node) is AccumulateGrad:
                if accumulate and grads is not None and grads[0] is not None:
                    _accumulate_leaf(node.variable, grads[0], create_graph)
                continue
            if node._retained is not None and grads is not None:
                grads = _retained_and_hooks(node, grads, create_graph)
            if grads is None or all(g is None for g in grads):
                input_grads = (None,) * len(node._next)
            else:
                input_grads = _call_backward(node, grads)
            if not retain_graph:
                node._release()
            for e, g in zip(node._next, input_grads):
                if e is None:
                    continue
                nxt, nr = e
                if g is not None:
                    _add_to_buffer(buffers, nxt, nr, g, create_graph)
                left = deps[nxt] - 1
                deps[nxt] = left
                if left == 0:
                    ready.append(nxt)
    finally:
        grad_mode._set(prev)


def _skip(node, deps, ready):
    for e in node._next:
        if e is None:
            continue
        left = deps[e[0]] - 1
        deps[e[0]] = left
        if left == 0:
            ready.append(e[0])


def _add_to_buffer(buffers, node, nr, g, create_graph):
    buf = buffers.get(node)
    if buf is None:
        buf = buffers[node] = [None] * node._n_outputs
    old = buf[nr]
    if old is None:
        buf[nr] = g
    elif create_graph:
        buf[nr] = old + g
    else:
        buf[nr] = Tensor(old.data + g.data)


def _retained_and_hooks(node, grads, create_graph):
    grads = list(grads)
    for nr, tensors in node._retained.items():
        for t in tensors:
            g = grads[nr]
            if g is None:
                continue
            for hook in t._hooks or ():
                new = hook(g)
                if new is not None:
                    grads[nr] = g = new
            if t._retains_grad:
                _accumulate_leaf(t, g, create_graph)
    return grads


def _accumulate_leaf(leaf, g, create_graph):
    for hook in leaf._hooks or ():
        new = hook(g)
        if new is not None:
            g = new
    if leaf.grad is None:
        leaf.grad = g if create_graph else Tensor(np.array(g.data, dtype=leaf.data.dtype, copy=True))
    elif create_graph:
        leaf.grad = leaf.grad + g
    else:
        leaf.grad.data += g.data  # micrograd's +=: a leaf used in two backward calls sums both


def _call_backward(node, grads):
    name = node.name()
    if node._materialize_grads:
        grads = [Tensor(np.zeros(m[0], dtype=m[1])) if g is None and m is not None else g
                 for g, m in zip(grads, node._output_meta)]
    raw = node._backward(grads)
    if not isinstance(raw, tuple):
        raw = (raw,)
    expected = len(node._next)
    if len(raw) != expected:
        if len(raw) > expected and all(r is None for r in raw[expected:]):
            raw = raw[:expected]
        else:
            raise RuntimeError(f"function {name} returned an incorrect number of gradients "
                               f"(expected {expected}, got {len(raw)})")
    out = []
    for i, (g, e) in enumerate(zip(raw, node._next)):
        if g is None:
            out.append(None)
            continue
        meta = node._input_meta[i]
        if not isinstance(g, Tensor):
            raise TypeError(f"function {name} returned an invalid gradient at index {i} - expected a Tensor "
                            f"or None, got {type(g).__name__}")
        if meta is None:
            raise RuntimeError(f"function {name} returned a gradient different than None at position {i + 1}, "
                               f"but the corresponding forward input was not a Variable")
        if e is None:
            out.append(None)
            continue
        shape, dtype = meta
        if g.data.shape != shape:
            if _expandable(shape, g.data.shape):
                # torch sums a broadcast-shaped gradient down to the input's shape; do the same,
                # but remember it: the checker reports it as a warning
                from gradcli.autograd.ops import unbroadcast
                if node._grad_fixups is None:
                    node._grad_fixups = []
                node._grad_fixups.append((i, g.data.shape, shape))
                g = unbroadcast(g, shape)
            else:
                raise RuntimeError(f"Function {name} returned an invalid gradient at index {i} - got "
                                   f"{list(g.data.shape)} but expected shape compatible with {list(shape)}")
        if g.data.dtype != dtype and dtype.kind != "O" and g.data.dtype.kind != "O":
            g = g.to(dtype)
        out.append(g)
    return out


def _expandable(shape, grad_shape):
    """Whether ``shape`` broadcasts to ``grad_shape``."""
    if len(shape) > len(grad_shape):
        return False
    for s, gs in zip(reversed(shape), reversed(grad_shape)):
        if s != gs and s != 1:
            return False
    return True
