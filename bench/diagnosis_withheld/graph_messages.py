"""Graph message passing: weighted scatter-add aggregation over a directed edge list with repeated
endpoints, segment means, symmetric degree normalisation (GCN) and a two-head split of node features."""
import torch

# 7 directed edges on 5 nodes; node 1 sends three times, node 3 receives three times
SRC = torch.tensor([0, 1, 1, 2, 1, 4, 3])
DST = torch.tensor([1, 3, 0, 3, 2, 3, 4])
SEGMENTS = torch.tensor([0, 0, 1, 1, 1, 2])


def _edge_inputs():
    gen = torch.Generator().manual_seed(3)
    x = torch.randn(5, 3, dtype=torch.float64, generator=gen)
    w = torch.rand(7, dtype=torch.float64, generator=gen) + 0.5
    return x.requires_grad_(), w.requires_grad_()


class WithheldWeightedScatterAdd(torch.autograd.Function):
    """out[d] = sum over edges (s -> d) of w_e * x[s]."""
    bug = None

    @staticmethod
    def forward(ctx, x, edge_weight):
        ctx.save_for_backward(x, edge_weight)
        messages = x[SRC] * edge_weight[:, None]
        return torch.zeros_like(x).index_add_(0, DST, messages)

    @staticmethod
    def backward(ctx, grad_out):
        x, edge_weight = ctx.saved_tensors
        g_edge = grad_out[DST]
        grad_x = torch.zeros_like(x).index_add_(0, SRC, g_edge * edge_weight[:, None])
        grad_w = (g_edge * x[SRC]).sum(dim=1)
        return grad_x, grad_w

    @staticmethod
    def example_inputs():
        return _edge_inputs()


class WithheldWeightedScatterAddOverwrite(torch.autograd.Function):
    bug = {"kind": "not_accumulated", "input": "x",
           "note": "grad_x[SRC] = ... assigns per edge, so a node sending several messages keeps one"}

    @staticmethod
    def forward(ctx, x, edge_weight):
        ctx.save_for_backward(x, edge_weight)
        messages = x[SRC] * edge_weight[:, None]
        return torch.zeros_like(x).index_add_(0, DST, messages)

    @staticmethod
    def backward(ctx, grad_out):
        x, edge_weight = ctx.saved_tensors
        g_edge = grad_out[DST]
        grad_x = torch.zeros_like(x)
        grad_x[SRC] = g_edge * edge_weight[:, None]  # BUG
        grad_w = (g_edge * x[SRC]).sum(dim=1)
        return grad_x, grad_w

    @staticmethod
    def example_inputs():
        return _edge_inputs()


class WithheldWeightedScatterAddReversedEdges(torch.autograd.Function):
    bug = {"kind": "transposed", "input": "x",
           "note": "the backward gathers at the sources and scatters to the targets: the adjacency transposed"}

    @staticmethod
    def forward(ctx, x, edge_weight):
        ctx.save_for_backward(x, edge_weight)
        messages = x[SRC] * edge_weight[:, None]
        return torch.zeros_like(x).index_add_(0, DST, messages)

    @staticmethod
    def backward(ctx, grad_out):
        x, edge_weight = ctx.saved_tensors
        grad_x = torch.zeros_like(x).index_add_(0, DST, grad_out[SRC] * edge_weight[:, None])  # BUG
        grad_w = (grad_out[DST] * x[SRC]).sum(dim=1)
        return grad_x, grad_w

    @staticmethod
    def example_inputs():
        return _edge_inputs()


def _segment_inputs():
    gen = torch.Generator().manual_seed(4)
    return (torch.randn(6, 4, dtype=torch.float64, generator=gen).requires_grad_(),)


class WithheldSegmentMean(torch.autograd.Function):
    """Mean of the rows of each segment (sizes 2, 3, 1) -> [3, 4]."""
    bug = None

    @staticmethod
    def forward(ctx, x):
        counts = torch.bincount(SEGMENTS).to(x.dtype)
        ctx.counts = counts
        sums = x.new_zeros(3, x.shape[1]).index_add_(0, SEGMENTS, x)
        return sums / counts.unsqueeze(1)

    @staticmethod
    def backward(ctx, grad_out):
        return (grad_out / ctx.counts.unsqueeze(1))[SEGMENTS]

    @staticmethod
    def example_inputs():
        return _segment_inputs()


class WithheldSegmentMeanNoCount(torch.autograd.Function):
    bug = {"kind": "scale", "input": "x",
           "note": "the backward of a segment mean forgets to divide by the segment's size"}

    @staticmethod
    def forward(ctx, x):
        counts = torch.bincount(SEGMENTS).to(x.dtype)
        ctx.counts = counts
        sums = x.new_zeros(3, x.shape[1]).index_add_(0, SEGMENTS, x)
        return sums / counts.unsqueeze(1)

    @staticmethod
    def backward(ctx, grad_out):
        return grad_out[SEGMENTS]  # BUG

    @staticmethod
    def example_inputs():
        return _segment_inputs()


def _normalised_adjacency(dtype):
    adj = torch.zeros(5, 5, dtype=dtype)
    adj[DST, SRC] = 1.0
    adj = adj + torch.eye(5, dtype=dtype)  # self loops
    deg = adj.sum(1)
    d = deg.rsqrt()
    return d[:, None] * adj * d[None, :]


def _gcn_inputs():
    gen = torch.Generator().manual_seed(8)
    x = torch.randn(5, 3, dtype=torch.float64, generator=gen)
    w = torch.randn(3, 4, dtype=torch.float64, generator=gen)
    return x.requires_grad_(), w.requires_grad_()


class WithheldGCNLayer(torch.autograd.Function):
    """out = D^-1/2 (A + I) D^-1/2 X W on the directed graph above (A is not symmetric)."""
    bug = None

    @staticmethod
    def forward(ctx, x, weight):
        a_hat = _normalised_adjacency(x.dtype)
        ax = a_hat @ x
        ctx.save_for_backward(a_hat, ax, weight)
        return ax @ weight

    @staticmethod
    def backward(ctx, grad_out):
        a_hat, ax, weight = ctx.saved_tensors
        grad_x = a_hat.t() @ (grad_out @ weight.t())
        grad_w = ax.t() @ grad_out
        return grad_x, grad_w

    @staticmethod
    def example_inputs():
        return _gcn_inputs()


class WithheldGCNLayerAdjacencyNotTransposed(torch.autograd.Function):
    bug = {"kind": "transposed", "input": "x",
           "note": "propagates the gradient with A_hat instead of A_hat^T (A_hat is not symmetric)"}

    @staticmethod
    def forward(ctx, x, weight):
        a_hat = _normalised_adjacency(x.dtype)
        ax = a_hat @ x
        ctx.save_for_backward(a_hat, ax, weight)
        return ax @ weight

    @staticmethod
    def backward(ctx, grad_out):
        a_hat, ax, weight = ctx.saved_tensors
        grad_x = a_hat @ (grad_out @ weight.t())  # BUG
        grad_w = ax.t() @ grad_out
        return grad_x, grad_w

    @staticmethod
    def example_inputs():
        return _gcn_inputs()


class WithheldGCNLayerWeightFromRawFeatures(torch.autograd.Function):
    bug = {"kind": "wrong_variable", "input": "weight",
           "note": "the weight gradient uses the raw features X instead of the aggregated A_hat X"}

    @staticmethod
    def forward(ctx, x, weight):
        a_hat = _normalised_adjacency(x.dtype)
        ax = a_hat @ x
        ctx.save_for_backward(a_hat, x, weight)
        return ax @ weight

    @staticmethod
    def backward(ctx, grad_out):
        a_hat, x, weight = ctx.saved_tensors
        grad_x = a_hat.t() @ (grad_out @ weight.t())
        grad_w = x.t() @ grad_out  # BUG
        return grad_x, grad_w

    @staticmethod
    def example_inputs():
        return _gcn_inputs()


def _heads_inputs():
    gen = torch.Generator().manual_seed(9)
    return (torch.randn(4, 6, dtype=torch.float64, generator=gen).requires_grad_(),)


HEAD_GAIN = torch.tensor([1.5, -0.5], dtype=torch.float64).view(2, 1, 1)


class WithheldTwoHeadSplit(torch.autograd.Function):
    """Node features [4, 6] split into 2 heads of 3, head-major [2, 4, 3], each head scaled."""
    bug = None

    @staticmethod
    def forward(ctx, x):
        heads = x.view(4, 2, 3).permute(1, 0, 2)
        return heads * HEAD_GAIN

    @staticmethod
    def backward(ctx, grad_out):
        return (grad_out * HEAD_GAIN).permute(1, 0, 2).reshape(4, 6)

    @staticmethod
    def example_inputs():
        return _heads_inputs()


class WithheldTwoHeadSplitFlatBack(torch.autograd.Function):
    bug = {"kind": "missing_reshape", "input": "x", "also": ["transposed"],
           "note": "the head-major gradient [2, 4, 3] is flattened to [4, 6] without permuting nodes back first"}

    @staticmethod
    def forward(ctx, x):
        heads = x.view(4, 2, 3).permute(1, 0, 2)
        return heads * HEAD_GAIN

    @staticmethod
    def backward(ctx, grad_out):
        return (grad_out * HEAD_GAIN).reshape(4, 6)  # BUG

    @staticmethod
    def example_inputs():
        return _heads_inputs()


def _square_inputs():
    gen = torch.Generator().manual_seed(14)
    return (torch.randn(4, 4, dtype=torch.float64, generator=gen).requires_grad_(),)


class WithheldNeighbourMax(torch.autograd.Function):
    """Max over each node's 4 neighbour slots (dim 1): (values, argmax), the argmax non-differentiable."""
    bug = None

    @staticmethod
    def forward(ctx, x):
        values, index = x.max(dim=1)
        ctx.mark_non_differentiable(index)
        ctx.save_for_backward(index)
        ctx.shape = x.shape
        return values, index

    @staticmethod
    def backward(ctx, grad_values, grad_index):
        (index,) = ctx.saved_tensors
        grad = grad_values.new_zeros(ctx.shape)
        return grad.scatter_(1, index.unsqueeze(1), grad_values.unsqueeze(1))

    @staticmethod
    def example_inputs():
        return _square_inputs()


class WithheldNeighbourMaxScatterRows(torch.autograd.Function):
    bug = {"kind": "wrong_axis", "input": "x",
           "note": "routes each max's gradient with scatter_ along dim 0 instead of the reduced dim 1"}

    @staticmethod
    def forward(ctx, x):
        values, index = x.max(dim=1)
        ctx.mark_non_differentiable(index)
        ctx.save_for_backward(index)
        ctx.shape = x.shape
        return values, index

    @staticmethod
    def backward(ctx, grad_values, grad_index):
        (index,) = ctx.saved_tensors
        grad = grad_values.new_zeros(ctx.shape)
        return grad.scatter_(0, index.unsqueeze(0), grad_values.unsqueeze(0))  # BUG

    @staticmethod
    def example_inputs():
        return _square_inputs()
