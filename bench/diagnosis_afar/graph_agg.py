"""Graph aggregation by hand: GCN message passing over an integer edge list, degree-normalised mean
aggregation, a GAT-style edge softmax per destination node, segment-max readout, a weighted
segment-sum readout and a domain-adversarial gradient reversal layer."""
import torch


def _edges():
    # repeated sources and destinations, so that accumulation matters
    src = torch.tensor([0, 1, 1, 2, 3, 3, 4, 1, 0], dtype=torch.int64)
    dst = torch.tensor([1, 0, 2, 2, 2, 4, 3, 4, 2], dtype=torch.int64)
    return src, dst


# ----------------------------------------------------------------------------- GCN aggregation
class AfarGCNAggregate(torch.autograd.Function):
    """out[i] = sum over edges (s -> i) of (x @ weight)[s]."""

    bug = None

    @staticmethod
    def forward(ctx, x, weight, src, dst):
        h = x @ weight
        out = torch.zeros(x.shape[0], weight.shape[1], dtype=x.dtype).index_add_(0, dst, h[src])
        ctx.save_for_backward(x, weight, src, dst)
        return out

    @staticmethod
    def backward(ctx, grad_out):
        x, weight, src, dst = ctx.saved_tensors
        msg = grad_out[dst]
        grad_h = torch.zeros_like(grad_out).index_add_(0, src, msg)
        grad_x = grad_h @ weight.T
        grad_w = x[src].T @ msg
        return grad_x, grad_w, None, None

    @staticmethod
    def example_inputs():
        g = torch.Generator().manual_seed(101)
        src, dst = _edges()
        return (torch.randn(5, 3, dtype=torch.float64, generator=g, requires_grad=True),
                torch.randn(3, 3, dtype=torch.float64, generator=g, requires_grad=True), src, dst)


class AfarGCNAggregateOverwrite(torch.autograd.Function):
    bug = {"kind": "not_accumulated", "input": "x",
           "note": "the messages are written back to their source nodes with index_put_ (no accumulate), so a node with several outgoing edges keeps only one"}

    @staticmethod
    def forward(ctx, x, weight, src, dst):
        h = x @ weight
        out = torch.zeros(x.shape[0], weight.shape[1], dtype=x.dtype).index_add_(0, dst, h[src])
        ctx.save_for_backward(x, weight, src, dst)
        return out

    @staticmethod
    def backward(ctx, grad_out):
        x, weight, src, dst = ctx.saved_tensors
        msg = grad_out[dst]
        grad_h = torch.zeros_like(grad_out).index_put_((src,), msg)  # BUG
        grad_x = grad_h @ weight.T
        grad_w = x[src].T @ msg
        return grad_x, grad_w, None, None

    @staticmethod
    def example_inputs():
        return AfarGCNAggregate.example_inputs()


class AfarGCNAggregateNoTranspose(torch.autograd.Function):
    bug = {"kind": "transposed", "input": "x",
           "note": "the node-feature gradient multiplies by weight instead of weight.T"}

    @staticmethod
    def forward(ctx, x, weight, src, dst):
        h = x @ weight
        out = torch.zeros(x.shape[0], weight.shape[1], dtype=x.dtype).index_add_(0, dst, h[src])
        ctx.save_for_backward(x, weight, src, dst)
        return out

    @staticmethod
    def backward(ctx, grad_out):
        x, weight, src, dst = ctx.saved_tensors
        msg = grad_out[dst]
        grad_h = torch.zeros_like(grad_out).index_add_(0, src, msg)
        grad_x = grad_h @ weight  # BUG
        grad_w = x[src].T @ msg
        return grad_x, grad_w, None, None

    @staticmethod
    def example_inputs():
        return AfarGCNAggregate.example_inputs()


# ----------------------------------------------------------------------- mean aggregation
class AfarMeanAggregate(torch.autograd.Function):
    """out[i] = mean of x[s] over the edges (s -> i); isolated nodes get 0."""

    bug = None

    @staticmethod
    def forward(ctx, x, src, dst):
        n = x.shape[0]
        deg = torch.zeros(n, dtype=x.dtype).index_add_(0, dst, torch.ones(dst.shape[0], dtype=x.dtype))
        deg = deg.clamp(min=1.0)
        out = torch.zeros_like(x).index_add_(0, dst, x[src]) / deg[:, None]
        ctx.save_for_backward(deg, src, dst)
        return out

    @staticmethod
    def backward(ctx, grad_out):
        deg, src, dst = ctx.saved_tensors
        scaled = grad_out / deg[:, None]
        return torch.zeros_like(grad_out).index_add_(0, src, scaled[dst]), None, None

    @staticmethod
    def example_inputs():
        g = torch.Generator().manual_seed(102)
        src, dst = _edges()
        return torch.randn(5, 3, dtype=torch.float64, generator=g, requires_grad=True), src, dst


class AfarMeanAggregateSourceDegree(torch.autograd.Function):
    bug = {"kind": "wrong_variable", "input": "x",
           "note": "each edge's message is divided by the degree of its source node instead of its destination node"}

    @staticmethod
    def forward(ctx, x, src, dst):
        n = x.shape[0]
        deg = torch.zeros(n, dtype=x.dtype).index_add_(0, dst, torch.ones(dst.shape[0], dtype=x.dtype))
        deg = deg.clamp(min=1.0)
        out = torch.zeros_like(x).index_add_(0, dst, x[src]) / deg[:, None]
        ctx.save_for_backward(deg, src, dst)
        return out

    @staticmethod
    def backward(ctx, grad_out):
        deg, src, dst = ctx.saved_tensors
        per_edge = grad_out[dst] / deg[src, None]  # BUG
        return torch.zeros_like(grad_out).index_add_(0, src, per_edge), None, None

    @staticmethod
    def example_inputs():
        return AfarMeanAggregate.example_inputs()


# -------------------------------------------------------------------------- edge softmax
def _edge_softmax(scores, dst, n):
    idx = dst.view(-1, 1).expand_as(scores)
    top = torch.full((n, scores.shape[1]), float("-inf"), dtype=scores.dtype)
    top = top.scatter_reduce(0, idx, scores, reduce="amax", include_self=False)
    e = (scores - top.gather(0, idx)).exp()
    denom = torch.zeros(n, scores.shape[1], dtype=scores.dtype).scatter_add_(0, idx, e)
    return e / denom.gather(0, idx)


def _edge_inputs():
    g = torch.Generator().manual_seed(103)
    dst = torch.tensor([0, 2, 2, 1, 2, 0, 3, 3, 1, 2], dtype=torch.int64)
    return torch.randn(10, 2, dtype=torch.float64, generator=g, requires_grad=True), dst


class AfarEdgeSoftmax(torch.autograd.Function):
    """GAT attention: softmax of the edge scores (E, heads) over the edges entering each node."""

    bug = None

    @staticmethod
    def forward(ctx, scores, dst):
        n = int(dst.max()) + 1
        alpha = _edge_softmax(scores, dst, n)
        ctx.save_for_backward(alpha, dst)
        ctx.num_nodes = n
        return alpha

    @staticmethod
    def backward(ctx, grad_out):
        alpha, dst = ctx.saved_tensors
        idx = dst.view(-1, 1).expand_as(alpha)
        weighted = grad_out * alpha
        per_node = torch.zeros(ctx.num_nodes, alpha.shape[1], dtype=alpha.dtype).scatter_add_(0, idx, weighted)
        return weighted - alpha * per_node.gather(0, idx), None

    @staticmethod
    def example_inputs():
        return _edge_inputs()


class AfarEdgeSoftmaxNoNodeSum(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "scores",
           "note": "the softmax backward keeps only alpha * g and drops the - alpha * sum(g * alpha) term of the destination node"}

    @staticmethod
    def forward(ctx, scores, dst):
        n = int(dst.max()) + 1
        alpha = _edge_softmax(scores, dst, n)
        ctx.save_for_backward(alpha, dst)
        ctx.num_nodes = n
        return alpha

    @staticmethod
    def backward(ctx, grad_out):
        alpha, dst = ctx.saved_tensors
        grad_scores = grad_out * alpha  # BUG
        return grad_scores, None

    @staticmethod
    def example_inputs():
        return _edge_inputs()


class AfarEdgeSoftmaxHeadSum(torch.autograd.Function):
    bug = {"kind": "wrong_axis", "input": "scores",
           "note": "the dense softmax formula is used: sum(g * alpha) is taken over the heads dim=1 instead of over the edges of each destination node"}

    @staticmethod
    def forward(ctx, scores, dst):
        n = int(dst.max()) + 1
        alpha = _edge_softmax(scores, dst, n)
        ctx.save_for_backward(alpha, dst)
        ctx.num_nodes = n
        return alpha

    @staticmethod
    def backward(ctx, grad_out):
        alpha, dst = ctx.saved_tensors
        weighted = grad_out * alpha
        grad_scores = weighted - alpha * weighted.sum(dim=1, keepdim=True)  # BUG
        return grad_scores, None

    @staticmethod
    def example_inputs():
        return _edge_inputs()


class AfarEdgeSoftmaxPlusNodeSum(torch.autograd.Function):
    bug = {"kind": "term_sign", "input": "scores",
           "note": "the per-node term alpha * sum(g * alpha) is added instead of subtracted"}

    @staticmethod
    def forward(ctx, scores, dst):
        n = int(dst.max()) + 1
        alpha = _edge_softmax(scores, dst, n)
        ctx.save_for_backward(alpha, dst)
        ctx.num_nodes = n
        return alpha

    @staticmethod
    def backward(ctx, grad_out):
        alpha, dst = ctx.saved_tensors
        idx = dst.view(-1, 1).expand_as(alpha)
        weighted = grad_out * alpha
        per_node = torch.zeros(ctx.num_nodes, alpha.shape[1], dtype=alpha.dtype).scatter_add_(0, idx, weighted)
        return weighted + alpha * per_node.gather(0, idx), None  # BUG

    @staticmethod
    def example_inputs():
        return _edge_inputs()


# --------------------------------------------------------------------------- readouts
def _graph_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(7, 3, dtype=torch.float64, generator=g, requires_grad=True)
    batch = torch.tensor([0, 0, 0, 1, 1, 2, 2], dtype=torch.int64)
    return x, batch


class AfarSegmentMaxReadout(torch.autograd.Function):
    """Graph readout: per graph and feature, the max over the graph's nodes (batch ids)."""

    bug = None

    @staticmethod
    def forward(ctx, x, batch):
        b = int(batch.max()) + 1
        idx = batch[:, None].expand_as(x)
        out = torch.full((b, x.shape[1]), float("-inf"), dtype=x.dtype)
        out = out.scatter_reduce(0, idx, x, reduce="amax", include_self=False)
        ctx.save_for_backward(x, batch, out)
        return out

    @staticmethod
    def backward(ctx, grad_out):
        x, batch, out = ctx.saved_tensors
        is_max = x == out[batch]
        grad_x = grad_out[batch].masked_fill(~is_max, 0.0)
        return grad_x, None

    @staticmethod
    def example_inputs():
        return _graph_inputs(104)


class AfarSegmentMaxReadoutMaskOnly(torch.autograd.Function):
    bug = {"kind": "ignores_grad_output", "input": "x",
           "note": "the backward returns the argmax mask itself and never multiplies by the graph's grad_output"}

    @staticmethod
    def forward(ctx, x, batch):
        b = int(batch.max()) + 1
        idx = batch[:, None].expand_as(x)
        out = torch.full((b, x.shape[1]), float("-inf"), dtype=x.dtype)
        out = out.scatter_reduce(0, idx, x, reduce="amax", include_self=False)
        ctx.save_for_backward(x, batch, out)
        return out

    @staticmethod
    def backward(ctx, grad_out):
        x, batch, out = ctx.saved_tensors
        is_max = x == out[batch]
        grad_x = torch.ones_like(x).masked_fill(~is_max, 0.0)  # BUG
        return grad_x, None

    @staticmethod
    def example_inputs():
        return _graph_inputs(104)


class AfarWeightedSumReadout(torch.autograd.Function):
    """out[b] = sum over the nodes of graph b of node_weight[n] * x[n]."""

    bug = None

    @staticmethod
    def forward(ctx, x, node_weight, batch):
        b = int(batch.max()) + 1
        out = torch.zeros(b, x.shape[1], dtype=x.dtype).index_add_(0, batch, x * node_weight[:, None])
        ctx.save_for_backward(x, node_weight, batch)
        return out

    @staticmethod
    def backward(ctx, grad_out):
        x, node_weight, batch = ctx.saved_tensors
        per_node = grad_out[batch]
        return per_node * node_weight[:, None], (per_node * x).sum(dim=1), None

    @staticmethod
    def example_inputs():
        x, batch = _graph_inputs(105)
        g = torch.Generator().manual_seed(106)
        return x, torch.rand(7, dtype=torch.float64, generator=g).requires_grad_(), batch


class AfarWeightedSumReadoutUnsummed(torch.autograd.Function):
    bug = {"kind": "not_reduced", "input": "node_weight",
           "note": "the per-node weight's gradient is left as (nodes, features) instead of being summed over the features it scaled"}

    @staticmethod
    def forward(ctx, x, node_weight, batch):
        b = int(batch.max()) + 1
        out = torch.zeros(b, x.shape[1], dtype=x.dtype).index_add_(0, batch, x * node_weight[:, None])
        ctx.save_for_backward(x, node_weight, batch)
        return out

    @staticmethod
    def backward(ctx, grad_out):
        x, node_weight, batch = ctx.saved_tensors
        per_node = grad_out[batch]
        grad_weight = per_node * x  # BUG
        return per_node * node_weight[:, None], grad_weight, None

    @staticmethod
    def example_inputs():
        return AfarWeightedSumReadout.example_inputs()


# ---------------------------------------------------------------- domain-adversarial layer
class AfarDomainGradientReversal(torch.autograd.Function):
    """Identity on node embeddings; the domain classifier's gradient comes back reversed and scaled."""

    bug = {"kind": "gradient_reversal", "input": "x",
           "note": "deliberate gradient reversal layer (DANN): backward returns -lambda * grad_output for an identity forward"}

    @staticmethod
    def forward(ctx, x):
        ctx.lambd = 0.3
        return x.clone()

    @staticmethod
    def backward(ctx, grad_out):
        return -ctx.lambd * grad_out  # BUG
