"""Index lookups and reorderings: embeddings with repeated indices, gather/scatter, sort, top-k,
torch-style on gradcli's engine. ``bug = None`` marks a correct twin.
"""
import gradcli as torch

TOKENS = [1, 3, 1, 0, 4, 1]  # index 1 occurs three times: the embedding backward must add them


def _embedding_inputs():
    return (torch.randn(5, 3, requires_grad=True), torch.tensor(TOKENS))


# -------------------------------------------------------------------------------- embedding
class Embedding(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, weight, indices):
        ctx.save_for_backward(indices)
        ctx.num_embeddings = weight.shape[0]
        return weight[indices]

    @staticmethod
    def backward(ctx, grad_output):
        (indices,) = ctx.saved_tensors
        grad_weight = torch.zeros(ctx.num_embeddings, grad_output.shape[1])
        grad_weight.index_add_(0, indices, grad_output)
        return grad_weight, None

    @staticmethod
    def example_inputs():
        return _embedding_inputs()


class EmbeddingOverwritesDuplicates(torch.autograd.Function):
    bug = {"kind": "not_accumulated", "input": "weight",
           "note": "grad_weight[indices] = grad_output keeps one row per repeated token "
                   "instead of summing them"}

    @staticmethod
    def forward(ctx, weight, indices):
        ctx.save_for_backward(indices)
        ctx.num_embeddings = weight.shape[0]
        return weight[indices]

    @staticmethod
    def backward(ctx, grad_output):
        (indices,) = ctx.saved_tensors
        grad_weight = torch.zeros(ctx.num_embeddings, grad_output.shape[1])
        grad_weight[indices] = grad_output  # BUG
        return grad_weight, None

    @staticmethod
    def example_inputs():
        return _embedding_inputs()


# ------------------------------------------------------------------------------------ gather
GATHER_INDEX = [[0, 2, 2, 3, 0], [1, 1, 3, 0, 1], [3, 2, 3, 3, 0]]  # repeats within each row


class Gather(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, index):
        ctx.save_for_backward(index)
        ctx.shape = x.shape
        return x.gather(1, index)

    @staticmethod
    def backward(ctx, grad_output):
        (index,) = ctx.saved_tensors
        return torch.zeros(*ctx.shape).scatter_add(1, index, grad_output), None

    @staticmethod
    def example_inputs():
        return (torch.randn(3, 4, requires_grad=True), torch.tensor(GATHER_INDEX))


class GatherScatterOverwrites(torch.autograd.Function):
    bug = {"kind": "not_accumulated", "input": "x",
           "note": "scatter (overwrite) where scatter_add is needed: repeated indices keep one value"}

    @staticmethod
    def forward(ctx, x, index):
        ctx.save_for_backward(index)
        ctx.shape = x.shape
        return x.gather(1, index)

    @staticmethod
    def backward(ctx, grad_output):
        (index,) = ctx.saved_tensors
        return torch.zeros(*ctx.shape).scatter(1, index, grad_output), None  # BUG

    @staticmethod
    def example_inputs():
        return (torch.randn(3, 4, requires_grad=True), torch.tensor(GATHER_INDEX))


class ScatterAddSourceSliced(torch.autograd.Function):
    bug = {"kind": "none", "input": "src",
           "note": "d src takes the first columns of grad_output instead of gathering at index"}

    @staticmethod
    def forward(ctx, base, src, index):
        ctx.save_for_backward(index)
        return base.scatter_add(1, index, src)

    @staticmethod
    def backward(ctx, grad_output):
        (index,) = ctx.saved_tensors
        grad_src = grad_output[:, :index.shape[1]]  # BUG
        return grad_output, grad_src, None

    @staticmethod
    def example_inputs():
        return (torch.randn(3, 4, requires_grad=True), torch.randn(3, 2, requires_grad=True),
                torch.tensor([[3, 1], [2, 2], [0, 3]]))


# ------------------------------------------------------------------------------ sort / top-k
class Sort(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x):
        values, order = torch.sort(x, dim=-1)
        ctx.save_for_backward(order)
        return values

    @staticmethod
    def backward(ctx, grad_output):
        (order,) = ctx.saved_tensors
        return torch.zeros_like(grad_output).scatter(-1, order, grad_output)


class SortGatherInsteadOfScatter(torch.autograd.Function):
    bug = {"kind": "transposed", "input": "x",
           "note": "gathers grad_output with the sort permutation, i.e. applies P where Pᵀ "
                   "(the inverse permutation, a scatter) is needed"}

    @staticmethod
    def forward(ctx, x):
        values, order = torch.sort(x, dim=-1)
        ctx.save_for_backward(order)
        return values

    @staticmethod
    def backward(ctx, grad_output):
        (order,) = ctx.saved_tensors
        return grad_output.gather(-1, order)  # BUG


class TopK(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, k=2):
        values, indices = torch.topk(x, k, dim=1)
        ctx.save_for_backward(indices)
        ctx.shape = x.shape
        return values

    @staticmethod
    def backward(ctx, grad_output):
        (indices,) = ctx.saved_tensors
        return torch.zeros(*ctx.shape).scatter(1, indices, grad_output), None

    @staticmethod
    def example_inputs():
        return (torch.randn(4, 4, requires_grad=True),)


class TopKScatterWrongDim(torch.autograd.Function):
    bug = {"kind": "wrong_axis", "input": "x",
           "note": "scatters the top-k gradient along dim 0; the indices are along dim 1"}

    @staticmethod
    def forward(ctx, x, k=2):
        values, indices = torch.topk(x, k, dim=1)
        ctx.save_for_backward(indices)
        ctx.shape = x.shape
        return values

    @staticmethod
    def backward(ctx, grad_output):
        (indices,) = ctx.saved_tensors
        return torch.zeros(*ctx.shape).scatter(0, indices, grad_output), None  # BUG

    @staticmethod
    def example_inputs():
        return (torch.randn(4, 4, requires_grad=True),)
