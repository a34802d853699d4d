"""A soft rasteriser: soft edge coverage (sigmoid of signed distances to a triangle's edges) and a
soft z-buffer (softmax over the depths of the faces covering a pixel, with a bool validity mask)."""
import torch

TAU = 0.5     # edge sharpness
GAMMA = 0.3   # z-buffer temperature


def _edge_inputs(seed):
    gen = torch.Generator().manual_seed(seed)
    points = torch.randn(6, 2, dtype=torch.float64, generator=gen) * 0.6
    edges = torch.tensor([[1.0, 0.0, 0.8], [-0.5, 0.87, 0.8], [-0.5, -0.87, 0.8]],
                         dtype=torch.float64)                               # a triangle around 0
    edges = edges + 0.15 * torch.randn(3, 3, dtype=torch.float64, generator=gen)
    return points, edges


def _edge_forward(ctx, points, edges):
    homog = torch.cat([points, torch.ones_like(points[:, :1])], dim=1)   # (P, 3): x, y, 1
    dist = homog @ edges.mT                                             # signed distance to each edge
    s = torch.sigmoid(dist / TAU)
    cov = s.prod(dim=1)
    ctx.save_for_backward(homog, edges, s, cov)
    return cov


class OverseasSoftEdgeCoverage(torch.autograd.Function):
    """coverage[p] = prod_e sigmoid((a_e x + b_e y + c_e) / tau)."""

    bug = None

    @staticmethod
    def forward(ctx, points, edges):
        return _edge_forward(ctx, points, edges)

    @staticmethod
    def backward(ctx, grad_cov):
        homog, edges, s, cov = ctx.saved_tensors
        grad_dist = (grad_cov * cov)[:, None] * (1 - s) / TAU
        grad_points = grad_dist @ edges[:, :2]
        grad_edges = grad_dist.mT @ homog
        return grad_points, grad_edges

    @staticmethod
    def example_inputs():
        return _edge_inputs(21)


class OverseasSoftEdgeCoverageNoTau(torch.autograd.Function):
    bug = {"kind": "scale", "input": "edges",
           "note": "the 1/tau of the sigmoid's argument is dropped from the chain rule"}

    @staticmethod
    def forward(ctx, points, edges):
        return _edge_forward(ctx, points, edges)

    @staticmethod
    def backward(ctx, grad_cov):
        homog, edges, s, cov = ctx.saved_tensors
        grad_dist = (grad_cov * cov)[:, None] * (1 - s)  # BUG
        grad_points = grad_dist @ edges[:, :2]
        grad_edges = grad_dist.mT @ homog
        return grad_points, grad_edges

    @staticmethod
    def example_inputs():
        return _edge_inputs(22)


class OverseasSoftEdgeCoverageEdgesT(torch.autograd.Function):
    bug = {"kind": "transposed", "input": "edges",
           "note": "the edge-matrix gradient is formed as homog^T @ grad_dist, the transpose of grad_dist^T @ homog"}

    @staticmethod
    def forward(ctx, points, edges):
        return _edge_forward(ctx, points, edges)

    @staticmethod
    def backward(ctx, grad_cov):
        homog, edges, s, cov = ctx.saved_tensors
        grad_dist = (grad_cov * cov)[:, None] * (1 - s) / TAU
        grad_points = grad_dist @ edges[:, :2]
        grad_edges = homog.mT @ grad_dist  # BUG
        return grad_points, grad_edges

    @staticmethod
    def example_inputs():
        return _edge_inputs(23)


def _zbuf_inputs(seed):
    gen = torch.Generator().manual_seed(seed)
    depth = torch.rand(4, 3, dtype=torch.float64, generator=gen) * 0.6
    color = torch.rand(4, 3, 3, dtype=torch.float64, generator=gen)
    valid = torch.tensor([[True, True, False], [True, True, True],
                          [False, True, True], [True, False, True]])
    return depth, color, valid


def _zbuf_weights(depth, valid):
    return torch.softmax((-depth / GAMMA).masked_fill(~valid, float("-inf")), dim=-1)


def _zbuf_forward(ctx, depth, color, valid):
    w = _zbuf_weights(depth, valid)
    ctx.save_for_backward(depth, color, valid, w)
    return torch.einsum("pk,pkc->pc", w, color)


class OverseasSoftZBuffer(torch.autograd.Function):
    """pixel = sum_k softmax_k(-z_k / gamma) colour_k over the valid faces of the pixel."""

    bug = None

    @staticmethod
    def forward(ctx, depth, color, valid):
        return _zbuf_forward(ctx, depth, color, valid)

    @staticmethod
    def backward(ctx, grad_out):
        depth, color, valid, w = ctx.saved_tensors
        shade = torch.einsum("pc,pkc->pk", grad_out, color)
        mean = (w * shade).sum(dim=-1, keepdim=True)
        grad_depth = -w * (shade - mean) / GAMMA
        grad_color = w[..., None] * grad_out[:, None, :]
        return grad_depth, grad_color, None

    @staticmethod
    def example_inputs():
        return _zbuf_inputs(31)


class OverseasSoftZBufferDepthSign(torch.autograd.Function):
    bug = {"kind": "sign", "input": "depth",
           "note": "the minus of the softmax's argument -z/gamma is lost, so the depth gradient is negated"}

    @staticmethod
    def forward(ctx, depth, color, valid):
        return _zbuf_forward(ctx, depth, color, valid)

    @staticmethod
    def backward(ctx, grad_out):
        depth, color, valid, w = ctx.saved_tensors
        shade = torch.einsum("pc,pkc->pk", grad_out, color)
        mean = (w * shade).sum(dim=-1, keepdim=True)
        grad_depth = w * (shade - mean) / GAMMA  # BUG
        grad_color = w[..., None] * grad_out[:, None, :]
        return grad_depth, grad_color, None

    @staticmethod
    def example_inputs():
        return _zbuf_inputs(32)


class OverseasSoftZBufferPixelMean(torch.autograd.Function):
    bug = {"kind": "wrong_axis", "input": "depth",
           "note": "the softmax's weighted mean is taken over pixels (dim 0) instead of over the faces of a pixel"}

    @staticmethod
    def forward(ctx, depth, color, valid):
        return _zbuf_forward(ctx, depth, color, valid)

    @staticmethod
    def backward(ctx, grad_out):
        depth, color, valid, w = ctx.saved_tensors
        shade = torch.einsum("pc,pkc->pk", grad_out, color)
        mean = (w * shade).sum(dim=0, keepdim=True)  # BUG
        grad_depth = -w * (shade - mean) / GAMMA
        grad_color = w[..., None] * grad_out[:, None, :]
        return grad_depth, grad_color, None

    @staticmethod
    def example_inputs():
        return _zbuf_inputs(33)


class OverseasSoftZBufferColorNoGrad(torch.autograd.Function):
    bug = {"kind": "ignores_grad_output", "input": "color",
           "note": "the colour gradient is the bare softmax weight, never multiplied by grad_output"}

    @staticmethod
    def forward(ctx, depth, color, valid):
        return _zbuf_forward(ctx, depth, color, valid)

    @staticmethod
    def backward(ctx, grad_out):
        depth, color, valid, w = ctx.saved_tensors
        shade = torch.einsum("pc,pkc->pk", grad_out, color)
        mean = (w * shade).sum(dim=-1, keepdim=True)
        grad_depth = -w * (shade - mean) / GAMMA
        grad_color = w.unsqueeze(-1).expand_as(color).clone()  # BUG
        return grad_depth, grad_color, None

    @staticmethod
    def example_inputs():
        return _zbuf_inputs(34)


class OverseasSoftZBufferUnmasked(torch.autograd.Function):
    """Saves only the depths and recomputes the weights in backward."""

    bug = {"kind": "region", "input": "depth",
           "note": "backward recomputes the softmax without the validity mask, so pixels with an invalid face get wrong weights"}

    @staticmethod
    def forward(ctx, depth, color, valid):
        ctx.save_for_backward(depth, color, valid)
        return torch.einsum("pk,pkc->pc", _zbuf_weights(depth, valid), color)

    @staticmethod
    def backward(ctx, grad_out):
        depth, color, valid = ctx.saved_tensors
        w = torch.softmax(-depth / GAMMA, dim=-1)  # BUG
        shade = torch.einsum("pc,pkc->pk", grad_out, color)
        mean = (w * shade).sum(dim=-1, keepdim=True)
        grad_depth = -w * (shade - mean) / GAMMA
        grad_color = w[..., None] * grad_out[:, None, :]
        return grad_depth, grad_color, None

    @staticmethod
    def example_inputs():
        return _zbuf_inputs(35)


class OverseasSoftZBufferDiagonal(torch.autograd.Function):
    bug = {"kind": "none", "input": "depth",
           "note": "the softmax Jacobian is taken as its diagonal w(1-w), as for a sigmoid, applied to g . c_k"}

    @staticmethod
    def forward(ctx, depth, color, valid):
        return _zbuf_forward(ctx, depth, color, valid)

    @staticmethod
    def backward(ctx, grad_out):
        depth, color, valid, w = ctx.saved_tensors
        shade = torch.einsum("pc,pkc->pk", grad_out, color)
        grad_depth = -w * (1 - w) * shade / GAMMA  # BUG
        grad_color = w[..., None] * grad_out[:, None, :]
        return grad_depth, grad_color, None

    @staticmethod
    def example_inputs():
        return _zbuf_inputs(36)
