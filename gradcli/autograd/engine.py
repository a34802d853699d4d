"""The backward engine: a topological walk over the graph of nodes.

Kahn's algorithm: a node runs once every node that feeds it a gradient has run, so a tensor used
twice has received both contributions before its own backward is called. ``backward()`` runs every
node reachable from the roots and accumulates into leaves' ``.grad``; ``grad()`` and
``backward(inputs=...)`` *capture* the gradient arriving at chosen tensors and run only the nodes
that lie above one of them.
"""
import numpy as np

from gradcli.autograd.function import _RELEASED, NON_TENSOR, AccumulateGrad, _edge
from gradcli.autograd.grad_mode import _state
from gradcli.autograd.tensor import Tensor


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, inputs=None):
    """Accumulate d(tensors)/d(leaf) · grad_tensors into every leaf's ``.grad`` (or only into
    ``inputs``, leaves or not, when given)."""
    tensors = _as_tuple(tensors)
    roots = _roots(tensors)
    grads = _make_grads(tensors, grad_tensors)
    if retain_graph is None:
        retain_graph = create_graph
    if inputs is None:
        _execute(roots, grads, retain_graph, create_graph, None)
        return
    inputs = _as_tuple(inputs)
    if not inputs:
        raise RuntimeError("'inputs' argument to backward() cannot be empty.")
    edges = [_edge(t) for t in inputs]
    captured = _execute(roots, grads, retain_graph, create_graph, _capture_set(edges))
    for t, edge in zip(inputs, edges):
        g = captured.get(edge)
        if g is not None:
            _accumulate(t, g, create_graph)


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False, only_inputs=True,
         allow_unused=None, is_grads_batched=False, materialize_grads=False):
    """Return d(outputs)/d(inputs) · grad_outputs, one entry per input, without touching ``.grad``
    of the inputs."""
    if is_grads_batched:
        raise NotImplementedError("is_grads_batched=True (vmap over grad_outputs) is not supported")
    if allow_unused is None:
        allow_unused = materialize_grads
    if materialize_grads and not allow_unused:
        raise ValueError("Expected allow_unused to be True or not passed when materialize_grads=True, "
                         "but got: allow_unused=False.")
    outputs = _as_tuple(outputs)
    inputs = _as_tuple(inputs)
    roots = _roots(outputs)
    grads = _make_grads(outputs, grad_outputs)
    if retain_graph is None:
        retain_graph = create_graph
    for t in inputs:
        if not isinstance(t, Tensor) or not t.requires_grad:
            raise RuntimeError("One of the differentiated Tensors does not require grad")
    edges = [_edge(t) for t in inputs]
    captured = _execute(roots, grads, retain_graph, create_graph, _capture_set(edges))
    result = []
    for t, edge in zip(inputs, edges):
        g = captured.get(edge)
        if g is None:
            if not allow_unused:
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


def _capture_set(edges):
    captures = {}
    for node, nr in edges:
        captures.setdefault(node, set()).add(nr)
    return captures


def _roots(tensors):
    roots = []
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise TypeError(f"backward expects tensors, but element {i} is a {type(t).__name__}")
        if not t.requires_grad:
            raise RuntimeError(f"element {i} of tensors does not require grad and does not have a grad_fn")
        roots.append(_edge(t))
    return roots


def _make_grads(outputs, grad_tensors):
    """The gradient each output starts with: ones for a one-element output, else the caller's."""
    if grad_tensors is None:
        grads = (None,) * len(outputs)
    else:
        grads = _as_tuple(grad_tensors)
        if len(grads) != len(outputs):
            raise RuntimeError(f"got {len(grads)} gradients for {len(outputs)} outputs: backward needs exactly "
                               "one gradient (a Tensor, or None for a one-element output) per output")
    made = []
    for i, (out, g) in enumerate(zip(outputs, grads)):
        if g is None:
            if out.data.size != 1:
                raise RuntimeError("grad can be implicitly created only for scalar outputs")
            g = Tensor(np.ones_like(out.data))
        elif not isinstance(g, Tensor):
            raise TypeError(f"gradients can be either Tensors or None, but got {type(g).__name__}")
        else:
            if g.data.shape != out.data.shape:
                raise RuntimeError(f"Mismatch in shape: grad_output[{i}] has a shape of {list(g.data.shape)} and "
                                   f"output[{i}] has a shape of {list(out.data.shape)}.")
            if g.data.dtype != out.data.dtype:
                g = g.to(out.data.dtype)
        made.append(g)
    return made


def _dependencies(roots):
    """``deps[node]``: how many edges lead into ``node`` from the graph reachable from the roots."""
    deps = {}
    stack = list(dict.fromkeys(node for node, _ in roots))  # two outputs of one node: visit it once
    root_nodes = set(stack)
    while stack:
        for edge in stack.pop()._next:
            child = edge[0]
            if child is None:
                continue
            if child in deps:
                deps[child] += 1
            else:
                deps[child] = 1
                if child not in root_nodes:  # first visit (a root is on the stack already)
                    stack.append(child)
    return deps


def _postorder(roots):
    """Every node reachable from the roots, each after all the nodes below it."""
    order = []
    seen = set()
    for root, _ in roots:
        if root in seen:
            continue
        seen.add(root)
        stack = [(root, iter(root._next))]
        while stack:
            node, edges = stack[-1]
            for edge in edges:
                if edge[0] is not None and edge[0] not in seen:
                    seen.add(edge[0])
                    stack.append((edge[0], iter(edge[0]._next)))
                    break
            else:
                stack.pop()
                order.append(node)
    return order


def _nodes_to_run(postorder, captures):
    """The nodes some captured tensor lies below: the only ones whose backward must run."""
    reaches = set()  # nodes from which a capture is reachable (a capture itself included)
    run = set()
    for node in postorder:
        for edge in node._next:
            if edge[0] in reaches:
                run.add(node)
                reaches.add(node)
                break
        else:
            if node in captures:
                reaches.add(node)
    return run


def _execute(roots, root_grads, retain_graph, create_graph, captures):
    """Run the graph; returns ``{(node, output_nr): gradient}`` for the captured edges."""
    deps = _dependencies(roots)
    run = _nodes_to_run(_postorder(roots), captures) if captures is not None else None
    buffers = {}
    for (node, nr), g in zip(roots, root_grads):
        _add_to_buffer(buffers, node, nr, g, create_graph)
    ready = []
    for node, _ in roots:
        if node not in deps and node not in ready:
            ready.append(node)
    captured = {}

    prev = _state.enabled
    _state.enabled = create_graph  # a backward that records is what makes higher derivatives possible
    pop_ready, pop_buffer = ready.pop, buffers.pop
    try:
        while ready:
            node = pop_ready()
            grads = pop_buffer(node, None)
            if run is not None:
                wanted = captures.get(node)
                if wanted is None and node not in run:
                    _skip(node, deps, ready)
                    continue
                if grads is not None and node._retained is not None:
                    _run_tensor_hooks(node, grads, create_graph)
                if wanted is not None and grads is not None:
                    _capture(node, grads, wanted, captured)
                if node not in run:
                    _skip(node, deps, ready)
                    continue
            elif type(node) is AccumulateGrad:
                if grads is not None and grads[0] is not None:
                    leaf = node.variable
                    g = grads[0] if leaf._hooks is None else _run_leaf_hooks(leaf, grads[0])
                    _accumulate(leaf, g, create_graph)
                continue
            elif grads is not None and node._retained is not None:
                _run_tensor_hooks(node, grads, create_graph)

            if grads is None:
                _skip(node, deps, ready)  # nothing flowed into this node: nothing flows out
                continue
            input_grads = _call_backward(node, grads)
            if not retain_graph and node._to_save:
                node._to_save = _RELEASED  # free the saved tensors, as torch does
            for edge, g in zip(node._next, input_grads):
                child = edge[0]
                if child is None:
                    continue
                if g is not None:
                    if child not in buffers and child._n_outputs == 1:
                        buffers[child] = [g]  # the common case of _add_to_buffer, inlined
                    else:
                        _add_to_buffer(buffers, child, edge[1], g, create_graph)
                left = deps[child] - 1
                deps[child] = left
                if left == 0:
                    ready.append(child)
    finally:
        _state.enabled = prev
    return captured


def _skip(node, deps, ready):
    for edge in node._next:
        child = edge[0]
        if child is None:
            continue
        left = deps[child] - 1
        deps[child] = left
        if left == 0:
            ready.append(child)


def _capture(node, grads, wanted, captured):
    for nr in wanted:
        g = grads[nr]
        if g is None:
            continue
        if type(node) is AccumulateGrad and node.variable._hooks is not None:
            g = _run_leaf_hooks(node.variable, g)
        captured[(node, nr)] = g


def _add_to_buffer(buffers, node, nr, g, create_graph):
    buf = buffers.get(node)
    if buf is None:
        if node._n_outputs == 1:
            buffers[node] = [g]
            return
        buf = buffers[node] = [None] * node._n_outputs
    old = buf[nr]
    if old is None:
        buf[nr] = g
    elif create_graph:
        buf[nr] = old + g
    else:
        buf[nr] = Tensor(old.data + g.data)  # a fresh array: ``old`` may be another node's tensor


def _run_tensor_hooks(node, grads, create_graph):
    """Hooks registered on a non-leaf output, then retain_grad(), which sees the hooked gradient."""
    for nr, (hooks, keeper) in node._retained.items():
        g = grads[nr]
        if g is None:
            continue
        for hook in hooks:
            new = hook(g)
            if new is not None:
                g = new
        grads[nr] = g
        if keeper is not None:
            _accumulate(keeper, g, create_graph)


def _run_leaf_hooks(leaf, g):
    for hook in leaf._hooks:
        new = hook(g)
        if new is not None:
            g = new
    return g


def _accumulate(t, g, create_graph):
    """Add ``g`` into ``t.grad`` (torch: a copy the first time, then in place unless recording)."""
    if t.grad is None:
        if create_graph:
            t.grad = g.clone()  # recorded, so the gradient itself can be differentiated
        else:
            t.grad = Tensor(np.array(g.data, dtype=t.data.dtype, copy=True))
    elif create_graph:
        t.grad = t.grad + g
    else:
        np.add(t.grad.data, g.data, out=t.grad.data, casting="unsafe")
        t.grad._vc[0] += 1


def _call_backward(node, grads):
    """Run a node's backward and check what it returns the way torch does: one gradient (or None)
    per forward argument, a tensor of the argument's shape (a shape that merely broadcasts to it
    is summed down, as torch does, and recorded in ``node._grad_fixups``), cast to its dtype."""
    if node._n_outputs != 1 and node._materialize_grads:
        for i, g in enumerate(grads):
            if g is None and node._output_meta[i] is not None:
                shape, dtype = node._output_meta[i]
                grads[i] = Tensor(np.zeros(shape, dtype=dtype))
    forward_cls = node._forward_cls
    raw = forward_cls.backward(node, *grads) if forward_cls is not None else node._backward(grads)
    if type(raw) is not tuple:
        raw = (raw,)
    edges = node._next
    if len(raw) != len(edges):
        raw = _drop_surplus_nones(node, raw, len(edges))
    out = list(raw)
    for i, g in enumerate(raw):
        if g is None:
            continue
        child, nr = edges[i]
        if child is None or type(g) is not Tensor:
            out[i] = _unusual_gradient(node, i, g, edges[i])
            continue
        shape, dtype = child._output_meta[nr]  # the tensor this gradient is for
        data = g.data
        if data.shape != shape or data.dtype is not dtype:
            out[i] = _conform(node, i, g, shape, dtype)
    return out


def _drop_surplus_nones(node, raw, expected):
    if len(raw) > expected and all(r is None for r in raw[expected:]):
        return raw[:expected]  # torch ignores surplus trailing Nones
    raise RuntimeError(f"function {node.name()} returned an incorrect number of gradients "
                       f"(expected {expected}, got {len(raw)})")


def _unusual_gradient(node, i, g, edge):
    """A gradient for a non-tensor argument (an error), one that is no tensor (an error), one for
    a tensor that needs no gradient (dropped, as in torch), or a Tensor subclass (checked)."""
    if edge is NON_TENSOR:
        raise RuntimeError(f"function {node.name()} returned a gradient different than None at position "
                           f"{i + 1}, but the corresponding forward input was not a Variable")
    if not isinstance(g, Tensor):
        raise RuntimeError(f"function {node.name()} returned an invalid gradient at index {i} - expected a "
                           f"Tensor or None (got {type(g).__name__})")
    child, nr = edge
    if child is None:
        return None
    shape, dtype = child._output_meta[nr]
    return _conform(node, i, g, shape, dtype)


def _conform(node, i, g, shape, dtype):
    """Give gradient ``i`` its input's shape (summing a broadcast shape down) and dtype."""
    grad_shape = g.data.shape
    if grad_shape != shape:
        if not _broadcasts_to(shape, grad_shape):
            raise RuntimeError(f"Function {node.name()} returned an invalid gradient at index {i} - got "
                               f"{list(grad_shape)} but expected shape compatible with {list(shape)}")
        from gradcli.autograd.ops import unbroadcast
        if node._grad_fixups is None:
            node._grad_fixups = []
        node._grad_fixups.append((i, grad_shape, shape))
        g = unbroadcast(g, shape)
    have = g.data.dtype
    if have != dtype and dtype.kind != "O" and have.kind != "O":
        g = g.to(dtype)
    return g


def _broadcasts_to(shape, grad_shape):
    """Whether ``shape`` broadcasts to ``grad_shape``."""
    if len(shape) > len(grad_shape):
        return False
    for s, gs in zip(reversed(shape), reversed(grad_shape)):
        if s != gs and s != 1:
            return False
    return True
