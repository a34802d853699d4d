"""Router auxiliary losses of mixtures of experts: the Switch load-balancing loss
E * sum_e f_e * mean_n softmax(logits)_ne (f_e: the fraction of tokens routed to e, from integer
expert ids), the router z-loss mean_n logsumexp(logits_n)**2, and its per-token form.
"""
import torch


def _balance_inputs():
    gen = torch.Generator().manual_seed(41)
    logits = torch.randn(6, 3, generator=gen, dtype=torch.float64)
    expert_id = torch.tensor([0, 2, 2, 1, 2, 0], dtype=torch.int64)
    return logits, expert_id


def _balance_forward(ctx, logits, expert_id):
    n, e = logits.shape
    probs = torch.softmax(logits, dim=1)
    fraction = torch.bincount(expert_id, minlength=e).to(logits.dtype) / n
    ctx.save_for_backward(probs, fraction)
    ctx.num_experts = e
    return e * (fraction * probs.mean(0)).sum()


class ElsewhereLoadBalance(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, logits, expert_id):
        return _balance_forward(ctx, logits, expert_id)

    @staticmethod
    def backward(ctx, grad_loss):
        probs, fraction = ctx.saved_tensors
        n = probs.shape[0]
        grad_probs = grad_loss * ctx.num_experts * fraction / n
        grad_logits = probs * (grad_probs - (probs * grad_probs).sum(1, keepdim=True))
        return grad_logits, None

    @staticmethod
    def example_inputs():
        return _balance_inputs()


class ElsewhereLoadBalanceNoTokenMean(torch.autograd.Function):
    bug = {"kind": "scale", "input": "logits",
           "note": "the 1/N of the mean over tokens is left out of dL/dprobs"}

    @staticmethod
    def forward(ctx, logits, expert_id):
        return _balance_forward(ctx, logits, expert_id)

    @staticmethod
    def backward(ctx, grad_loss):
        probs, fraction = ctx.saved_tensors
        grad_probs = grad_loss * ctx.num_experts * fraction  # BUG
        grad_logits = probs * (grad_probs - (probs * grad_probs).sum(1, keepdim=True))
        return grad_logits, None

    @staticmethod
    def example_inputs():
        return _balance_inputs()


class ElsewhereLoadBalanceTokenAxis(torch.autograd.Function):
    bug = {"kind": "wrong_axis", "input": "logits",
           "note": "the softmax backward's inner sum runs over tokens (dim 0) instead of experts"}

    @staticmethod
    def forward(ctx, logits, expert_id):
        return _balance_forward(ctx, logits, expert_id)

    @staticmethod
    def backward(ctx, grad_loss):
        probs, fraction = ctx.saved_tensors
        n = probs.shape[0]
        grad_probs = grad_loss * ctx.num_experts * fraction / n
        grad_logits = probs * (grad_probs - (probs * grad_probs).sum(0, keepdim=True))  # BUG
        return grad_logits, None

    @staticmethod
    def example_inputs():
        return _balance_inputs()


class ElsewhereLoadBalanceCentreSign(torch.autograd.Function):
    bug = {"kind": "term_sign", "input": "logits",
           "note": "the softmax backward adds p * sum(p * dL/dp) instead of subtracting it"}

    @staticmethod
    def forward(ctx, logits, expert_id):
        return _balance_forward(ctx, logits, expert_id)

    @staticmethod
    def backward(ctx, grad_loss):
        probs, fraction = ctx.saved_tensors
        n = probs.shape[0]
        grad_probs = grad_loss * ctx.num_experts * fraction / n
        grad_logits = probs * (grad_probs + (probs * grad_probs).sum(1, keepdim=True))  # BUG
        return grad_logits, None

    @staticmethod
    def example_inputs():
        return _balance_inputs()


class ElsewhereLoadBalanceDiagonalJacobian(torch.autograd.Function):
    bug = {"kind": "none", "input": "logits",
           "note": "the softmax Jacobian is replaced by its diagonal p * (1 - p), as if each probability were a sigmoid"}

    @staticmethod
    def forward(ctx, logits, expert_id):
        return _balance_forward(ctx, logits, expert_id)

    @staticmethod
    def backward(ctx, grad_loss):
        probs, fraction = ctx.saved_tensors
        n = probs.shape[0]
        grad_probs = grad_loss * ctx.num_experts * fraction / n
        grad_logits = probs * (1 - probs) * grad_probs  # BUG
        return grad_logits, None

    @staticmethod
    def example_inputs():
        return _balance_inputs()


# --------------------------------------------------------------------------- z-loss
def _zloss_forward(ctx, logits):
    row_max = logits.amax(1, keepdim=True)
    lse = row_max.squeeze(1) + torch.log(torch.exp(logits - row_max).sum(1))
    ctx.save_for_backward(logits, lse, row_max)
    return (lse ** 2).mean()


class ElsewhereZLoss(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, logits):
        return _zloss_forward(ctx, logits)

    @staticmethod
    def backward(ctx, grad_loss):
        logits, lse, row_max = ctx.saved_tensors
        probs = torch.softmax(logits, dim=1)
        return grad_loss * 2 * lse[:, None] * probs / logits.shape[0]


class ElsewhereZLossNoTwo(torch.autograd.Function):
    bug = {"kind": "scale", "input": "logits",
           "note": "d(lse**2) = 2 * lse * dlse, the factor 2 is forgotten"}

    @staticmethod
    def forward(ctx, logits):
        return _zloss_forward(ctx, logits)

    @staticmethod
    def backward(ctx, grad_loss):
        logits, lse, row_max = ctx.saved_tensors
        probs = torch.softmax(logits, dim=1)
        return grad_loss * lse[:, None] * probs / logits.shape[0]  # BUG


class ElsewhereZLossRowMax(torch.autograd.Function):
    bug = {"kind": "wrong_variable", "input": "logits",
           "note": "the saved stabilising row max is used where the logsumexp is needed"}

    @staticmethod
    def forward(ctx, logits):
        return _zloss_forward(ctx, logits)

    @staticmethod
    def backward(ctx, grad_loss):
        logits, lse, row_max = ctx.saved_tensors
        probs = torch.softmax(logits, dim=1)
        return grad_loss * 2 * row_max * probs / logits.shape[0]  # BUG


class ElsewhereZLossColumnSoftmax(torch.autograd.Function):
    bug = {"kind": "wrong_axis", "input": "logits",
           "note": "dlse/dlogits is the softmax over experts (dim 1), taken over tokens (dim 0)"}

    @staticmethod
    def forward(ctx, logits):
        return _zloss_forward(ctx, logits)

    @staticmethod
    def backward(ctx, grad_loss):
        logits, lse, row_max = ctx.saved_tensors
        probs = torch.softmax(logits, dim=0)  # BUG
        return grad_loss * 2 * lse[:, None] * probs / logits.shape[0]


# ------------------------------------------------------------------ per-token z-loss
class ElsewhereTokenZLoss(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, logits):
        lse = torch.logsumexp(logits, dim=1)
        ctx.save_for_backward(logits, lse)
        return lse ** 2

    @staticmethod
    def backward(ctx, grad_out):
        logits, lse = ctx.saved_tensors
        return (grad_out * 2 * lse)[:, None] * torch.softmax(logits, dim=1)


class ElsewhereTokenZLossSummedGrad(torch.autograd.Function):
    bug = {"kind": "ignores_grad_output", "input": "logits",
           "note": "the per-token upstream gradient is summed to one number, as if the loss were already reduced"}

    @staticmethod
    def forward(ctx, logits):
        lse = torch.logsumexp(logits, dim=1)
        ctx.save_for_backward(logits, lse)
        return lse ** 2

    @staticmethod
    def backward(ctx, grad_out):
        logits, lse = ctx.saved_tensors
        return (grad_out.sum() * 2 * lse)[:, None] * torch.softmax(logits, dim=1)  # BUG
