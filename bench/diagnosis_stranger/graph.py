"""Graph ops on an edge list with repeated nodes: weighted message passing by index_add, GCN degree
normalisation with self loops, a weighted-mean aggregation and a softmax over each node's incoming
edges."""
import torch

# 5 nodes, 8 directed edges src -> dst; node 2 sends three messages, node 1 receives three
SRC = [0, 1, 2, 3, 4, 0, 2, 2]
DST = [1, 1, 0, 2, 2, 3, 4, 1]


def _edges():
    return torch.tensor(SRC), torch.tensor(DST)


def _graph_inputs(seed, features=3):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(5, features, dtype=torch.float64, generator=gen)
    weight = torch.rand(8, dtype=torch.float64, generator=gen) + 0.5
    src, dst = _edges()
    return x, weight, src, dst


class StrangerEdgeMessagePassing(torch.autograd.Function):
    """out[v] = sum over edges u -> v of w_e * x[u]."""

    bug = None

    @staticmethod
    def forward(ctx, x, weight, src, dst):
        ctx.save_for_backward(x, weight, src, dst)
        messages = weight.unsqueeze(1) * x[src]
        return torch.zeros_like(x).index_add_(0, dst, messages)

    @staticmethod
    def backward(ctx, grad_out):
        x, weight, src, dst = ctx.saved_tensors
        at_dst = grad_out[dst]
        grad_x = torch.zeros_like(x).index_add_(0, src, weight.unsqueeze(1) * at_dst)
        grad_w = (at_dst * x[src]).sum(dim=1)
        return grad_x, grad_w, None, None

    @staticmethod
    def example_inputs():
        return _graph_inputs(201)


class StrangerEdgeMessagePassingScatterBack(torch.autograd.Function):
    """Message passing whose backward sends each edge's gradient back to its source."""

    bug = {"kind": "not_accumulated", "input": "x",
           "note": "grad_x[src] = ... keeps one edge per source node; node 2 sends three messages"}

    @staticmethod
    def forward(ctx, x, weight, src, dst):
        ctx.save_for_backward(x, weight, src, dst)
        out = x.new_zeros(x.shape)
        out.index_add_(0, dst, x.index_select(0, src) * weight[:, None])
        return out

    @staticmethod
    def backward(ctx, grad_out):
        x, weight, src, dst = ctx.saved_tensors
        per_edge = grad_out.index_select(0, dst)
        grad_x = torch.zeros_like(x)
        grad_x[src] = per_edge * weight[:, None]  # BUG
        grad_w = torch.einsum("ef,ef->e", per_edge, x.index_select(0, src))
        return grad_x, grad_w, None, None

    @staticmethod
    def example_inputs():
        return _graph_inputs(201)


class StrangerEdgeMessagePassingDense(torch.autograd.Function):
    """Message passing by a dense weighted adjacency built from the edge list."""

    bug = {"kind": "transposed", "input": "x",
           "note": "out = A @ x, so grad_x = A^T @ grad_out; backward applies A again"}

    @staticmethod
    def forward(ctx, x, weight, src, dst):
        n = x.shape[0]
        adjacency = torch.zeros(n, n, dtype=x.dtype)
        adjacency.index_put_((dst, src), weight, accumulate=True)
        ctx.save_for_backward(x, adjacency, src, dst)
        return adjacency @ x

    @staticmethod
    def backward(ctx, grad_out):
        x, adjacency, src, dst = ctx.saved_tensors
        grad_x = adjacency @ grad_out  # BUG
        grad_w = (grad_out[dst] * x[src]).sum(-1)
        return grad_x, grad_w, None, None

    @staticmethod
    def example_inputs():
        return _graph_inputs(201)


def _gcn_norm(src, dst, n, dtype):
    """1 / sqrt(deg_u deg_v) per edge, deg counting in-edges plus the self loop; and 1 / deg."""
    deg = torch.ones(n, dtype=dtype).index_add_(0, dst, torch.ones(len(dst), dtype=dtype))
    inv_sqrt = deg.rsqrt()
    return inv_sqrt[src] * inv_sqrt[dst], 1.0 / deg


def _gcn_inputs():
    gen = torch.Generator().manual_seed(202)
    src, dst = _edges()
    return (torch.randn(5, 3, dtype=torch.float64, generator=gen),
            torch.randn(3, 3, dtype=torch.float64, generator=gen), src, dst)


class StrangerGCNLayer(torch.autograd.Function):
    """GCN: out = (D^-1/2 (A + I) D^-1/2 x) @ theta over a directed edge list."""

    bug = None

    @staticmethod
    def forward(ctx, x, theta, src, dst):
        norm, self_norm = _gcn_norm(src, dst, x.shape[0], x.dtype)
        agg = x * self_norm[:, None]
        agg = agg.index_add(0, dst, norm[:, None] * x[src])
        ctx.save_for_backward(agg, theta, norm, self_norm, src, dst)
        return agg @ theta

    @staticmethod
    def backward(ctx, grad_out):
        agg, theta, norm, self_norm, src, dst = ctx.saved_tensors
        grad_agg = grad_out @ theta.T
        grad_x = grad_agg * self_norm[:, None]
        grad_x = grad_x.index_add(0, src, norm[:, None] * grad_agg[dst])
        return grad_x, agg.T @ grad_out, None, None

    @staticmethod
    def example_inputs():
        return _gcn_inputs()


class StrangerGCNLayerWeightFromFeatures(torch.autograd.Function):
    """GCN layer that keeps the raw features for the weight gradient."""

    bug = {"kind": "wrong_variable", "input": "theta",
           "note": "theta multiplies the normalised aggregate, but its gradient uses raw x"}

    @staticmethod
    def forward(ctx, x, theta, src, dst):
        norm, self_norm = _gcn_norm(src, dst, x.shape[0], x.dtype)
        ctx.norm, ctx.self_norm = norm, self_norm
        ctx.save_for_backward(x, theta, src, dst)
        agg = (x * self_norm.unsqueeze(-1)).index_add(0, dst, x[src] * norm.unsqueeze(-1))
        return agg @ theta

    @staticmethod
    def backward(ctx, grad_out):
        x, theta, src, dst = ctx.saved_tensors
        grad_theta = x.transpose(0, 1) @ grad_out  # BUG
        grad_agg = grad_out @ theta.transpose(0, 1)
        grad_x = grad_agg * ctx.self_norm.unsqueeze(-1)
        grad_x = grad_x.index_add(0, src, grad_agg[dst] * ctx.norm.unsqueeze(-1))
        return grad_x, grad_theta, None, None

    @staticmethod
    def example_inputs():
        return _gcn_inputs()


class StrangerWeightedMeanAggregation(torch.autograd.Function):
    """out[v] = sum_e w_e x[u] / sum_e w_e over the edges u -> v (every node has one)."""

    bug = None

    @staticmethod
    def forward(ctx, x, weight, src, dst):
        num = torch.zeros_like(x).index_add_(0, dst, weight[:, None] * x[src])
        den = torch.zeros(x.shape[0], dtype=x.dtype).index_add_(0, dst, weight)
        out = num / den[:, None]
        ctx.save_for_backward(x, weight, src, dst, den, out)
        return out

    @staticmethod
    def backward(ctx, grad_out):
        x, weight, src, dst, den, out = ctx.saved_tensors
        grad_num = grad_out / den[:, None]
        grad_x = torch.zeros_like(x).index_add_(0, src, weight[:, None] * grad_num[dst])
        # d out_v / d w_e = (x_u - out_v) / den_v
        grad_w = (grad_num[dst] * (x[src] - out[dst])).sum(1)
        return grad_x, grad_w, None, None

    @staticmethod
    def example_inputs():
        return _graph_inputs(203)


class StrangerWeightedMeanAggregationConstantDenominator(torch.autograd.Function):
    """Weighted-mean aggregation, backward edge by edge in a loop."""

    bug = {"kind": "missing_term", "input": "weight",
           "note": "the edge weight also enters the denominator; its -out_v / den_v term is dropped"}

    @staticmethod
    def forward(ctx, x, weight, src, dst):
        den = torch.zeros(x.shape[0], dtype=x.dtype).index_add_(0, dst, weight)
        num = torch.zeros_like(x).index_add_(0, dst, weight[:, None] * x[src])
        ctx.save_for_backward(x, weight, src, dst, den)
        return num / den[:, None]

    @staticmethod
    def backward(ctx, grad_out):
        x, weight, src, dst, den = ctx.saved_tensors
        grad_x = torch.zeros_like(x)
        grad_w = torch.zeros_like(weight)
        for e in range(weight.shape[0]):
            u, v = int(src[e]), int(dst[e])
            g_v = grad_out[v] / den[v]
            grad_x[u] += weight[e] * g_v
            grad_w[e] = (g_v * x[u]).sum()  # BUG
        return grad_x, grad_w, None, None

    @staticmethod
    def example_inputs():
        return _graph_inputs(203)


def _segment_softmax(scores, dst, n, tau):
    z = scores / tau
    peak = torch.full((n,), float("-inf"), dtype=scores.dtype).scatter_reduce(
        0, dst, z, reduce="amax", include_self=True)
    e = torch.exp(z - peak[dst])
    total = torch.zeros(n, dtype=scores.dtype).index_add_(0, dst, e)
    return e / total[dst]


def _softmax_inputs():
    gen = torch.Generator().manual_seed(204)
    return torch.randn(8, dtype=torch.float64, generator=gen), torch.tensor(DST)


class StrangerNeighbourSoftmax(torch.autograd.Function):
    """Attention weights: a softmax of scores / tau over the incoming edges of each node."""

    bug = None
    TAU = 0.5

    @staticmethod
    def forward(ctx, scores, dst):
        alpha = _segment_softmax(scores, dst, int(dst.max()) + 1, StrangerNeighbourSoftmax.TAU)
        ctx.save_for_backward(alpha, dst)
        return alpha

    @staticmethod
    def backward(ctx, grad_out):
        alpha, dst = ctx.saved_tensors
        n = int(dst.max()) + 1
        dot = torch.zeros(n, dtype=alpha.dtype).index_add_(0, dst, grad_out * alpha)
        return alpha * (grad_out - dot[dst]) / StrangerNeighbourSoftmax.TAU, None

    @staticmethod
    def example_inputs():
        return _softmax_inputs()


class StrangerNeighbourSoftmaxPlusDot(torch.autograd.Function):
    """Neighbour softmax with scatter_add_ for the per-node dot product."""

    bug = {"kind": "term_sign", "input": "scores",
           "note": "the softmax Jacobian's -alpha * <g, alpha>_node term is added, not subtracted"}
    TAU = 0.5

    @staticmethod
    def forward(ctx, scores, dst):
        n = int(dst.max()) + 1
        alpha = _segment_softmax(scores, dst, n, 0.5)
        ctx.n = n
        ctx.save_for_backward(alpha, dst)
        return alpha

    @staticmethod
    def backward(ctx, grad_out):
        alpha, dst = ctx.saved_tensors
        weighted = grad_out * alpha
        per_node = torch.zeros(ctx.n, dtype=weighted.dtype).scatter_add_(0, dst, weighted)
        grad_z = weighted + alpha * per_node.gather(0, dst)  # BUG
        return grad_z / 0.5, None

    @staticmethod
    def example_inputs():
        return _softmax_inputs()


class StrangerNeighbourSoftmaxNoTemperature(torch.autograd.Function):
    """Neighbour softmax whose backward works on z = scores / tau."""

    bug = {"kind": "scale", "input": "scores",
           "note": "returns dL/dz and forgets the chain rule's 1 / tau back to the scores"}

    @staticmethod
    def forward(ctx, scores, dst):
        alpha = _segment_softmax(scores, dst, 5, 0.5)
        ctx.save_for_backward(alpha, dst)
        return alpha

    @staticmethod
    def backward(ctx, grad_out):
        alpha, dst = ctx.saved_tensors
        node_sum = torch.zeros(5, dtype=alpha.dtype)
        node_sum.index_add_(0, dst, alpha * grad_out)
        centred = grad_out - node_sum[dst]
        grad_scores = alpha * centred  # BUG
        return grad_scores, None

    @staticmethod
    def example_inputs():
        return _softmax_inputs()
