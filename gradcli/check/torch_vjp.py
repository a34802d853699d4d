"""Vector-Jacobian products on the torch backend, taken the way torch's own training step would reach them.

``torch.autograd.grad`` on the check's leaves, with two repairs for Functions that manage their inputs'
memory themselves (reversible and checkpointing layers: memcnn, torch_geometric's rev_gnn, fairscale,
``torch.utils.checkpoint``):

* a leaf whose storage backward swapped back in with ``leaf.set_(...)`` gets a new AccumulateGrad node
  from torch, which is not the node in the graph forward built: ``autograd.grad(inputs=[leaf])`` then
  finds no path ("None", or torch's "not used in the graph"), though ``loss.backward()`` would still
  accumulate into it. The leaf is then named by the graph's own node (a ``GradientEdge``).
* a Function that refuses ``autograd.grad`` ("not compatible with .grad(), please use .backward()") gets
  the same product through ``torch.autograd.backward``, read where each leaf's node in the graph receives it.
"""
from __future__ import annotations


def vjp(torch, outputs: list, inputs: list, grad_outputs: list, retain_graph=True, create_graph=False) -> list:
    """The gradients of ``outputs`` (cotangents ``grad_outputs``) for ``inputs``; None where none reaches one."""
    try:
        grads = list(torch.autograd.grad(outputs, inputs, grad_outputs, retain_graph=retain_graph,
                                         create_graph=create_graph, allow_unused=True))
    except RuntimeError as error:
        if "not compatible with .grad()" not in str(error) or create_graph:
            raise
        return backward_vjp(torch, outputs, inputs, grad_outputs, retain_graph)
    missing = [k for k, g in enumerate(grads) if g is None]
    if not missing:
        return grads
    nodes = graph_accumulators(torch, outputs, inputs)
    edge_type = getattr(torch.autograd.graph, "GradientEdge", None)
    moved = [k for k in missing if nodes[k] is not None and nodes[k] is not _current_accumulator(torch, inputs[k])]
    if not moved or edge_type is None:
        return grads
    named = [edge_type(nodes[k], 0) if k in moved else t for k, t in enumerate(inputs)]
    try:
        return list(torch.autograd.grad(outputs, named, grad_outputs, retain_graph=retain_graph,
                                        create_graph=create_graph, allow_unused=True))
    except RuntimeError as error:  # the second product refuses autograd.grad where the first did not
        if "not compatible with .grad()" not in str(error) or create_graph:
            raise
        return backward_vjp(torch, outputs, inputs, grad_outputs, retain_graph)


def backward_vjp(torch, outputs: list, inputs: list, grad_outputs: list, retain_graph=True) -> list:
    """The gradients reaching ``inputs`` (leaves) through ``torch.autograd.backward``, None where none does.

    Read where each leaf's AccumulateGrad node in the graph receives them (a pre-hook on that node), not from
    ``.grad`` nor by a tensor hook: a backward that writes the input's ``.grad`` itself (memcnn's "mimic
    backwards") would count twice in ``.grad``, and a tensor hook also fires inside a backward's own
    ``autograd.grad`` over the same Parameters (reversible layers recompute through them). The leaves'
    ``.grad`` is restored afterwards."""
    saved = [leaf.grad for leaf in inputs]
    received: list = [None] * len(inputs)

    def catcher(position):
        def catch(grads):
            if grads[0] is not None:  # copied now: AccumulateGrad may add into this very tensor in place
                grad = grads[0].detach().clone()
                received[position] = grad if received[position] is None else received[position] + grad
        return catch

    nodes = graph_accumulators(torch, outputs, inputs)
    handles = [node.register_prehook(catcher(p)) for p, node in enumerate(nodes) if node is not None]
    try:
        # no ``inputs=``: with it torch marks checkpointing invalid again (_is_checkpoint_valid is False)
        torch.autograd.backward(outputs, grad_outputs, retain_graph=retain_graph)
        return received
    finally:
        for handle in handles:
            handle.remove()
        for leaf, grad in zip(inputs, saved):
            leaf.grad = grad


def graph_accumulators(torch, outputs: list, inputs: list) -> list:
    """Per input, the AccumulateGrad node of the graph of ``outputs`` that accumulates into it (None for a
    non-leaf or a leaf the graph does not reach)."""
    wanted = {id(t): k for k, t in enumerate(inputs) if t.is_leaf}
    found: list = [None] * len(inputs)
    seen, stack = set(), [o.grad_fn for o in outputs if getattr(o, "grad_fn", None) is not None]
    while stack and wanted:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        variable = getattr(node, "variable", None) if type(node).__name__ == "AccumulateGrad" else None
        if variable is not None and id(variable) in wanted:
            found[wanted.pop(id(variable))] = node
        stack.extend(edge[0] for edge in node.next_functions if edge[0] is not None)
    return found


def _current_accumulator(torch, leaf):
    with torch.enable_grad():
        return torch.autograd.graph.get_gradient_edge(leaf).node
