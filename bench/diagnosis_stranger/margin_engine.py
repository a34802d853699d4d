import gradcli as torch

# Elementwise losses with a margin on gradcli's engine: a margin ranking loss, a contrastive loss
# with an integer same / different label, and an epsilon-insensitive (SVR) loss.

MARGIN = 0.5


def _ranking_inputs():
    gen = torch.Generator().manual_seed(1001)
    return (torch.randn(3, 4, generator=gen, dtype=torch.float64),
            torch.randn(3, 4, generator=gen, dtype=torch.float64))


class StrangerMarginRanking(torch.autograd.Function):
    """max(0, margin - (a - b)) elementwise: a should beat b by the margin."""

    bug = None

    @staticmethod
    def forward(ctx, a, b):
        slack = MARGIN - (a - b)
        ctx.save_for_backward(slack)
        return torch.clamp(slack, min=0)

    @staticmethod
    def backward(ctx, grad_out):
        (slack,) = ctx.saved_tensors
        active = (slack > 0).to(grad_out.dtype)
        return -grad_out * active, grad_out * active

    @staticmethod
    def example_inputs():
        return _ranking_inputs()


class StrangerMarginRankingSatisfiedPairs(torch.autograd.Function):
    """Margin ranking loss whose active set is written from the difference a - b."""

    bug = {"kind": "region", "input": "a",
           "note": "the hinge is active where a - b < margin; a's gradient flows where "
                   "a - b > margin (the satisfied pairs)"}

    @staticmethod
    def forward(ctx, a, b):
        diff = a - b
        ctx.save_for_backward(diff)
        return torch.relu(MARGIN - diff)

    @staticmethod
    def backward(ctx, grad_out):
        (diff,) = ctx.saved_tensors
        grad_a = torch.where(diff > MARGIN, -grad_out, torch.zeros_like(grad_out))  # BUG
        grad_b = torch.where(diff < MARGIN, grad_out, torch.zeros_like(grad_out))
        return grad_a, grad_b

    @staticmethod
    def example_inputs():
        return _ranking_inputs()


class StrangerMarginRankingPushesBothDown(torch.autograd.Function):
    """Margin ranking loss, the active mask kept on ctx."""

    bug = {"kind": "sign", "input": "b",
           "note": "b enters as +b, so its gradient is +grad_out on the active set; the code "
                   "negates it like a's"}

    @staticmethod
    def forward(ctx, a, b):
        hinge = MARGIN - a + b
        ctx.mask = hinge > 0
        return hinge * ctx.mask

    @staticmethod
    def backward(ctx, grad_out):
        g = grad_out * ctx.mask
        grad_a = -g
        grad_b = -g  # BUG
        return grad_a, grad_b

    @staticmethod
    def example_inputs():
        return _ranking_inputs()


def _contrastive_inputs():
    gen = torch.Generator().manual_seed(1002)
    dist = torch.rand(3, 4, generator=gen, dtype=torch.float64) * 1.8 + 0.2
    same = torch.tensor([[1, 0, 0, 1], [0, 1, 0, 0], [1, 0, 1, 0]])
    return dist, same


class StrangerContrastiveMargin(torch.autograd.Function):
    """Contrastive loss: same * d^2 + (1 - same) * max(0, m - d)^2, m = 1."""

    bug = None

    @staticmethod
    def forward(ctx, dist, same):
        pos = same.to(dist.dtype)
        hinge = torch.clamp(1.0 - dist, min=0)
        ctx.save_for_backward(dist, pos, hinge)
        return pos * dist ** 2 + (1 - pos) * hinge ** 2

    @staticmethod
    def backward(ctx, grad_out):
        dist, pos, hinge = ctx.saved_tensors
        return grad_out * (2 * pos * dist - 2 * (1 - pos) * hinge), None

    @staticmethod
    def example_inputs():
        return _contrastive_inputs()


class StrangerContrastiveMarginHalfSquares(torch.autograd.Function):
    """Contrastive loss whose author differentiated as if the loss had a 1/2 in front."""

    bug = {"kind": "scale", "input": "dist",
           "note": "both squares lose their factor 2 in the derivative: the gradient is half"}

    @staticmethod
    def forward(ctx, dist, same):
        positive = same == 1
        pull = dist * dist
        push = torch.relu(1.0 - dist) ** 2
        ctx.save_for_backward(dist, positive)
        return torch.where(positive, pull, push)

    @staticmethod
    def backward(ctx, grad_out):
        dist, positive = ctx.saved_tensors
        d_loss = torch.where(positive, dist, -torch.relu(1.0 - dist))  # BUG
        return grad_out * d_loss, None

    @staticmethod
    def example_inputs():
        return _contrastive_inputs()


class StrangerContrastiveMarginPushSign(torch.autograd.Function):
    """Contrastive loss, the two branches' derivatives added up."""

    bug = {"kind": "term_sign", "input": "dist",
           "note": "d/dd max(0, m - d)^2 = -2 max(0, m - d); the push term is added with a plus"}

    @staticmethod
    def forward(ctx, dist, same):
        w = same.to(dist.dtype)
        gap = (1.0 - dist).clamp(min=0)
        ctx.w, ctx.gap, ctx.dist = w, gap, dist
        return w * dist.square() + (1 - w) * gap.square()

    @staticmethod
    def backward(ctx, grad_out):
        pull_term = 2 * ctx.w * ctx.dist
        push_term = 2 * (1 - ctx.w) * ctx.gap
        return grad_out * (pull_term + push_term), None  # BUG

    @staticmethod
    def example_inputs():
        return _contrastive_inputs()


EPSILON = 0.3


def _svr_inputs():
    gen = torch.Generator().manual_seed(1003)
    return (torch.randn(3, 4, generator=gen, dtype=torch.float64),
            torch.randn(3, 4, generator=gen, dtype=torch.float64))


class StrangerEpsilonInsensitive(torch.autograd.Function):
    """SVR loss max(0, |pred - target| - eps) elementwise."""

    bug = None

    @staticmethod
    def forward(ctx, pred, target):
        residual = pred - target
        ctx.save_for_backward(residual)
        return torch.clamp(residual.abs() - EPSILON, min=0)

    @staticmethod
    def backward(ctx, grad_out):
        (residual,) = ctx.saved_tensors
        outside = (residual.abs() > EPSILON).to(grad_out.dtype)
        grad_pred = grad_out * torch.sign(residual) * outside
        return grad_pred, -grad_pred

    @staticmethod
    def example_inputs():
        return _svr_inputs()


class StrangerEpsilonInsensitiveSignOfPrediction(torch.autograd.Function):
    """SVR loss with the residual's direction read off a saved tensor."""

    bug = {"kind": "wrong_variable", "input": "pred",
           "note": "d|r|/dr = sign(r) with r = pred - target; the code takes sign(pred)"}

    @staticmethod
    def forward(ctx, pred, target):
        ctx.save_for_backward(pred, target)
        return torch.relu((pred - target).abs() - EPSILON)

    @staticmethod
    def backward(ctx, grad_out):
        pred, target = ctx.saved_tensors
        outside = (pred - target).abs() > EPSILON
        direction = torch.sign(pred)  # BUG
        grad_pred = torch.where(outside, grad_out * direction, torch.zeros_like(grad_out))
        grad_target = torch.where(outside, -grad_out * torch.sign(pred - target), torch.zeros_like(grad_out))
        return grad_pred, grad_target

    @staticmethod
    def example_inputs():
        return _svr_inputs()
