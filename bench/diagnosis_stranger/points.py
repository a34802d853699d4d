"""Point clouds: a Chamfer distance by argmin + gather (both directions) and a nearest-anchor pull."""
import torch


def _clouds():
    gen = torch.Generator().manual_seed(301)
    p = torch.randn(5, 3, dtype=torch.float64, generator=gen)
    # two points of q near p[0] (repeated nearest neighbours both ways)
    q = p[[0, 0, 2, 3]] + 0.3 * torch.randn(4, 3, dtype=torch.float64, generator=gen)
    return p, q


def _pairwise_sq(p, q):
    return ((p[:, None, :] - q[None, :, :]) ** 2).sum(-1)


class StrangerChamferDistance(torch.autograd.Function):
    """sum_i min_j |p_i - q_j|^2 + sum_j min_i |p_i - q_j|^2."""

    bug = None

    @staticmethod
    def forward(ctx, p, q):
        d = _pairwise_sq(p, q)
        nn_q = d.argmin(dim=1)  # for each p, its nearest q
        nn_p = d.argmin(dim=0)  # for each q, its nearest p
        ctx.save_for_backward(p, q, nn_q, nn_p)
        return d.gather(1, nn_q[:, None]).sum() + d.gather(0, nn_p[None, :]).sum()

    @staticmethod
    def backward(ctx, grad_out):
        p, q, nn_q, nn_p = ctx.saved_tensors
        diff_pq = p - q[nn_q]  # (P, 3)
        diff_qp = q - p[nn_p]  # (Q, 3)
        grad_p = 2 * grad_out * diff_pq
        grad_p = grad_p.index_add(0, nn_p, -2 * grad_out * diff_qp)
        grad_q = 2 * grad_out * diff_qp
        grad_q = grad_q.index_add(0, nn_q, -2 * grad_out * diff_pq)
        return grad_p, grad_q

    @staticmethod
    def example_inputs():
        return _clouds()


class StrangerChamferDistanceIndexedUpdate(torch.autograd.Function):
    """Chamfer distance with the reverse direction written back by an indexed in-place update."""

    bug = {"kind": "not_accumulated", "input": "p",
           "note": "grad_p[nn_p] -= ... drops repeats: two q points share the nearest p[0]"}

    @staticmethod
    def forward(ctx, p, q):
        d = torch.cdist(p, q) ** 2
        j = d.argmin(1)
        i = d.argmin(0)
        ctx.j, ctx.i = j, i
        ctx.save_for_backward(p, q)
        forward_term = d[torch.arange(p.shape[0]), j].sum()
        backward_term = d[i, torch.arange(q.shape[0])].sum()
        return forward_term + backward_term

    @staticmethod
    def backward(ctx, grad_out):
        p, q = ctx.saved_tensors
        j, i = ctx.j, ctx.i
        two_g = 2.0 * grad_out
        grad_p = two_g * (p - q[j])
        grad_p[i] -= two_g * (q - p[i])  # BUG
        grad_q = two_g * (q - p[i])
        grad_q.index_add_(0, j, -two_g * (p - q[j]))
        return grad_p, grad_q

    @staticmethod
    def example_inputs():
        return _clouds()


class StrangerChamferDistanceOneSidedTarget(torch.autograd.Function):
    """Chamfer distance, per-direction helper terms summed in backward."""

    bug = {"kind": "missing_term", "input": "q",
           "note": "q's gradient keeps only the q -> p direction; the pull from the p -> q term "
                   "(index_add over nn_q) is left out"}

    @staticmethod
    def forward(ctx, p, q):
        d = _pairwise_sq(p, q)
        nn_q = torch.argmin(d, dim=1)
        nn_p = torch.argmin(d, dim=0)
        ctx.save_for_backward(p, q, nn_q, nn_p)
        to_q = torch.gather(d, 1, nn_q.unsqueeze(1)).sum()
        to_p = torch.gather(d, 0, nn_p.unsqueeze(0)).sum()
        return to_q + to_p

    @staticmethod
    def backward(ctx, grad_out):
        p, q, nn_q, nn_p = ctx.saved_tensors
        matched_q = q.index_select(0, nn_q)
        matched_p = p.index_select(0, nn_p)
        grad_p = 2 * (p - matched_q)
        grad_p = grad_p.index_add(0, nn_p, 2 * (matched_p - q))
        grad_q = 2 * (q - matched_p)  # BUG
        return grad_out * grad_p, grad_out * grad_q

    @staticmethod
    def example_inputs():
        return _clouds()


def _pull_inputs():
    gen = torch.Generator().manual_seed(302)
    x = torch.randn(4, 2, dtype=torch.float64, generator=gen)
    anchors = torch.tensor([[0.9, 0.1], [-1.0, 0.4], [0.2, -1.3]], dtype=torch.float64)
    return x, anchors + 0.05 * torch.randn(3, 2, dtype=torch.float64, generator=gen)


class StrangerNearestAnchorPull(torch.autograd.Function):
    """Per point: 0.5 * |x_i - a_nn(i)|^2, nn(i) the nearest anchor."""

    bug = None

    @staticmethod
    def forward(ctx, x, anchors):
        nearest = torch.cdist(x, anchors).argmin(dim=1)
        diff = x - anchors[nearest]
        ctx.save_for_backward(diff, nearest)
        ctx.num_anchors = anchors.shape[0]
        return 0.5 * (diff * diff).sum(dim=1)

    @staticmethod
    def backward(ctx, grad_out):
        diff, nearest = ctx.saved_tensors
        weighted = grad_out[:, None] * diff
        grad_anchors = weighted.new_zeros(ctx.num_anchors, diff.shape[1])
        grad_anchors.index_add_(0, nearest, -weighted)
        return weighted, grad_anchors

    @staticmethod
    def example_inputs():
        return _pull_inputs()


class StrangerNearestAnchorPullLoopOverAnchors(torch.autograd.Function):
    """Nearest-anchor pull whose anchor gradient is a loop over anchors and their members."""

    bug = {"kind": "sign", "input": "anchors",
           "note": "the anchor is pulled towards its points: d/da of 0.5|x - a|^2 is -(x - a), "
                   "the loop adds +(x - a)"}

    @staticmethod
    def forward(ctx, x, anchors):
        d2 = ((x.unsqueeze(1) - anchors.unsqueeze(0)) ** 2).sum(-1)
        owner = d2.argmin(-1)
        ctx.save_for_backward(x, anchors, owner)
        return 0.5 * d2.gather(1, owner.unsqueeze(1)).squeeze(1)

    @staticmethod
    def backward(ctx, grad_out):
        x, anchors, owner = ctx.saved_tensors
        grad_x = grad_out.unsqueeze(1) * (x - anchors[owner])
        grad_anchors = torch.zeros_like(anchors)
        for k in range(anchors.shape[0]):
            members = owner == k
            if members.any():
                pulled = grad_out[members].unsqueeze(1) * (x[members] - anchors[k])
                grad_anchors[k] = pulled.sum(0)  # BUG
        return grad_x, grad_anchors

    @staticmethod
    def example_inputs():
        return _pull_inputs()


class StrangerNearestAnchorPullUnweighted(torch.autograd.Function):
    """Nearest-anchor pull, gradients taken straight from the saved residual."""

    bug = {"kind": "ignores_grad_output", "input": "x",
           "note": "grad_x is the residual x - a_nn itself, never multiplied by grad_out"}

    @staticmethod
    def forward(ctx, x, anchors):
        nearest = torch.cdist(x, anchors).argmin(dim=1)
        residual = x - anchors.index_select(0, nearest)
        ctx.save_for_backward(residual, nearest, anchors)
        return 0.5 * residual.pow(2).sum(-1)

    @staticmethod
    def backward(ctx, grad_out):
        residual, nearest, anchors = ctx.saved_tensors
        grad_x = residual.clone()  # BUG
        grad_anchors = torch.zeros_like(anchors).index_add_(
            0, nearest, -grad_out.unsqueeze(-1) * residual)
        return grad_x, grad_anchors

    @staticmethod
    def example_inputs():
        return _pull_inputs()
