"""Ranking losses: ListNet's top-one cross entropy, pairwise BPR on embedding tables with index
tensors (repeated users and items), a pairwise hinge with a margin."""
import torch


def _gen(seed):
    return torch.Generator().manual_seed(seed)


def _listnet_inputs():
    g = _gen(31)
    return (torch.randn(3, 5, dtype=torch.float64, generator=g),
            torch.randn(3, 5, dtype=torch.float64, generator=g))


def _listnet_forward(ctx, scores, target_scores):
    log_q = torch.log_softmax(scores, dim=-1)
    p = torch.softmax(target_scores, dim=-1)
    ctx.save_for_backward(log_q, p)
    return -(p * log_q).sum(-1)


class FarawayListNetTopOne(torch.autograd.Function):
    """ListNet: cross entropy between the top-one distributions of target and predicted scores."""
    bug = None

    @staticmethod
    def forward(ctx, scores, target_scores):
        return _listnet_forward(ctx, scores, target_scores)

    @staticmethod
    def backward(ctx, grad_loss):
        log_q, p = ctx.saved_tensors
        g = grad_loss[:, None]
        grad_scores = g * (log_q.exp() - p)
        inner = (p * log_q).sum(-1, keepdim=True)
        grad_target = -g * p * (log_q - inner)
        return grad_scores, grad_target

    @staticmethod
    def example_inputs():
        return _listnet_inputs()


class FarawayListNetTopOneLogProbs(torch.autograd.Function):
    bug = {"kind": "wrong_variable", "input": "scores",
           "note": "the predicted distribution q = softmax(scores) is taken as the saved log_q without exp"}

    @staticmethod
    def forward(ctx, scores, target_scores):
        return _listnet_forward(ctx, scores, target_scores)

    @staticmethod
    def backward(ctx, grad_loss):
        log_q, p = ctx.saved_tensors
        g = grad_loss[:, None]
        grad_scores = g * (log_q - p)  # BUG
        inner = (p * log_q).sum(-1, keepdim=True)
        grad_target = -g * p * (log_q - inner)
        return grad_scores, grad_target

    @staticmethod
    def example_inputs():
        return _listnet_inputs()


def _bpr_inputs():
    g = _gen(32)
    users = torch.randn(3, 4, dtype=torch.float64, generator=g)
    items = torch.randn(5, 4, dtype=torch.float64, generator=g)
    u = torch.tensor([0, 1, 0, 2, 0, 1])
    i = torch.tensor([1, 3, 2, 1, 4, 0])
    j = torch.tensor([0, 2, 4, 3, 1, 4])
    return users, items, u, i, j


def _bpr_forward(ctx, users, items, u, i, j):
    eu, diff = users[u], items[i] - items[j]
    x = (eu * diff).sum(-1)
    ctx.save_for_backward(users, items, u, i, j, x)
    return -torch.nn.functional.logsigmoid(x)


class FarawayBPR(torch.autograd.Function):
    """Bayesian personalised ranking: -log sigmoid(<U_u, V_i - V_j>) per (user, pos, neg) triple."""
    bug = None

    @staticmethod
    def forward(ctx, users, items, u, i, j):
        return _bpr_forward(ctx, users, items, u, i, j)

    @staticmethod
    def backward(ctx, grad_loss):
        users, items, u, i, j, x = ctx.saved_tensors
        c = (-grad_loss * torch.sigmoid(-x))[:, None]
        grad_users = torch.zeros_like(users).index_add_(0, u, c * (items[i] - items[j]))
        grad_items = torch.zeros_like(items)
        grad_items.index_add_(0, i, c * users[u])
        grad_items.index_add_(0, j, -c * users[u])
        return grad_users, grad_items, None, None, None

    @staticmethod
    def example_inputs():
        return _bpr_inputs()


class FarawayBPRUserAssign(torch.autograd.Function):
    bug = {"kind": "not_accumulated", "input": "users",
           "note": "user rows are written by index assignment, so a user in several triples keeps only one"}

    @staticmethod
    def forward(ctx, users, items, u, i, j):
        return _bpr_forward(ctx, users, items, u, i, j)

    @staticmethod
    def backward(ctx, grad_loss):
        users, items, u, i, j, x = ctx.saved_tensors
        c = (-grad_loss * torch.sigmoid(-x))[:, None]
        grad_users = torch.zeros_like(users)
        grad_users[u] = c * (items[i] - items[j])  # BUG
        grad_items = torch.zeros_like(items)
        grad_items.index_add_(0, i, c * users[u])
        grad_items.index_add_(0, j, -c * users[u])
        return grad_users, grad_items, None, None, None

    @staticmethod
    def example_inputs():
        return _bpr_inputs()


class FarawayBPRNegativeItemSign(torch.autograd.Function):
    bug = {"kind": "term_sign", "input": "items",
           "note": "the negative item's contribution is added with + although V_j enters with a minus"}

    @staticmethod
    def forward(ctx, users, items, u, i, j):
        return _bpr_forward(ctx, users, items, u, i, j)

    @staticmethod
    def backward(ctx, grad_loss):
        users, items, u, i, j, x = ctx.saved_tensors
        c = (-grad_loss * torch.sigmoid(-x))[:, None]
        grad_users = torch.zeros_like(users).index_add_(0, u, c * (items[i] - items[j]))
        grad_items = torch.zeros_like(items)
        grad_items.index_add_(0, i, c * users[u])
        grad_items.index_add_(0, j, c * users[u])  # BUG
        return grad_users, grad_items, None, None, None

    @staticmethod
    def example_inputs():
        return _bpr_inputs()


class FarawayBPRSigmoidOfMargin(torch.autograd.Function):
    bug = {"kind": "none", "input": "users",
           "note": "the weight is computed as 1 - sigmoid(-x) * (1 + x) from a half-remembered formula, for every table"}

    @staticmethod
    def forward(ctx, users, items, u, i, j):
        return _bpr_forward(ctx, users, items, u, i, j)

    @staticmethod
    def backward(ctx, grad_loss):
        users, items, u, i, j, x = ctx.saved_tensors
        c = (-grad_loss * (1 - torch.sigmoid(-x) * (1 + x)))[:, None]  # BUG
        grad_users = torch.zeros_like(users).index_add_(0, u, c * (items[i] - items[j]))
        grad_items = torch.zeros_like(items)
        grad_items.index_add_(0, i, c * users[u])
        grad_items.index_add_(0, j, -c * users[u])
        return grad_users, grad_items, None, None, None

    @staticmethod
    def example_inputs():
        return _bpr_inputs()


def _hinge_inputs():
    s = torch.tensor([0.3, -0.8, 1.9, 0.1, -0.2], dtype=torch.float64)
    a = torch.tensor([0, 2, 3, 0, 2, 4])
    b = torch.tensor([1, 0, 1, 3, 4, 1])
    return s, a, b


def _hinge_forward(ctx, scores, a, b, margin):
    slack = margin - (scores[a] - scores[b])
    ctx.save_for_backward(slack, a, b)
    ctx.n = scores.shape[0]
    return torch.relu(slack)


class FarawayPairHinge(torch.autograd.Function):
    """max(0, margin - (s_a - s_b)) for each pair (a ranked above b)."""
    bug = None

    @staticmethod
    def forward(ctx, scores, a, b, margin=1.0):
        return _hinge_forward(ctx, scores, a, b, margin)

    @staticmethod
    def backward(ctx, grad_loss):
        slack, a, b = ctx.saved_tensors
        g = grad_loss * (slack > 0)
        grad = grad_loss.new_zeros(ctx.n)
        grad.index_add_(0, a, -g)
        grad.index_add_(0, b, g)
        return grad, None, None, None

    @staticmethod
    def example_inputs():
        return _hinge_inputs()


class FarawayPairHingeSatisfiedPairs(torch.autograd.Function):
    bug = {"kind": "region", "input": "scores",
           "note": "the mask keeps the pairs that already satisfy the margin (slack < 0) instead of the violating ones"}

    @staticmethod
    def forward(ctx, scores, a, b, margin=1.0):
        return _hinge_forward(ctx, scores, a, b, margin)

    @staticmethod
    def backward(ctx, grad_loss):
        slack, a, b = ctx.saved_tensors
        g = grad_loss * (slack < 0)  # BUG
        grad = grad_loss.new_zeros(ctx.n)
        grad.index_add_(0, a, -g)
        grad.index_add_(0, b, g)
        return grad, None, None, None

    @staticmethod
    def example_inputs():
        return _hinge_inputs()
