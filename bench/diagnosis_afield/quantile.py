"""Quantile forecasting losses (pinball and a Huber-smoothed pinball at several quantiles) and three
deliberate estimators of trading rules: rounding orders to lots (straight-through), a gradient
reversal for a regime-adversarial head, and a sigmoid surrogate for a stop-loss trigger."""
import torch

TAUS = (0.1, 0.5, 0.9)
KAPPA = 0.5


def _quantile_inputs(seed):
    gen = torch.Generator().manual_seed(seed)
    pred = torch.randn(4, 3, dtype=torch.float64, generator=gen)
    target = torch.randn(4, dtype=torch.float64, generator=gen)
    return pred, target


# ------------------------------------------------------------------------------- pinball loss
class AfieldPinballLoss(torch.autograd.Function):
    """mean over (b, q) of max(tau_q u, (tau_q - 1) u), u = target_b - pred_bq."""

    bug = None

    @staticmethod
    def forward(ctx, pred, target):
        tau = torch.tensor(TAUS, dtype=pred.dtype)
        u = target[:, None] - pred
        ctx.save_for_backward(u, tau)
        return torch.maximum(tau * u, (tau - 1) * u).mean()

    @staticmethod
    def backward(ctx, grad_out):
        u, tau = ctx.saved_tensors
        slope = grad_out * (tau - (u < 0).to(u.dtype)) / u.numel()
        return -slope, slope.sum(dim=1)

    @staticmethod
    def example_inputs():
        return _quantile_inputs(41)


class AfieldPinballLossBatchMean(torch.autograd.Function):
    bug = {"kind": "scale", "input": "pred",
           "note": "the predictions' gradient divides by the batch size only, not by batch x quantiles as the mean does"}

    @staticmethod
    def forward(ctx, pred, target):
        tau = torch.tensor(TAUS, dtype=pred.dtype)
        u = target[:, None] - pred
        ctx.save_for_backward(u, tau)
        return torch.maximum(tau * u, (tau - 1) * u).mean()

    @staticmethod
    def backward(ctx, grad_out):
        u, tau = ctx.saved_tensors
        n = u.numel()
        grad_pred = -grad_out * (tau - (u < 0).to(u.dtype)) / u.shape[0]  # BUG
        grad_target = (grad_out * (tau - (u < 0).to(u.dtype)) / n).sum(dim=1)
        return grad_pred, grad_target

    @staticmethod
    def example_inputs():
        return _quantile_inputs(41)


class AfieldPinballLossResidualSign(torch.autograd.Function):
    bug = {"kind": "sign", "input": "pred",
           "note": "the predictions' gradient is the residual's, forgetting that u = target - pred"}

    @staticmethod
    def forward(ctx, pred, target):
        tau = torch.tensor(TAUS, dtype=pred.dtype)
        u = target[:, None] - pred
        ctx.save_for_backward(u, tau)
        return torch.maximum(tau * u, (tau - 1) * u).mean()

    @staticmethod
    def backward(ctx, grad_out):
        u, tau = ctx.saved_tensors
        slope = grad_out * (tau - (u < 0).to(u.dtype)) / u.numel()
        grad_pred = slope  # BUG
        return grad_pred, slope.sum(dim=1)

    @staticmethod
    def example_inputs():
        return _quantile_inputs(41)


# ------------------------------------------------------------------------ Huber quantile loss
class AfieldHuberQuantileLoss(torch.autograd.Function):
    """|tau - 1(u < 0)| * huber_kappa(u), averaged; quadratic within |u| <= kappa."""

    bug = None

    @staticmethod
    def forward(ctx, pred, target):
        tau = torch.tensor(TAUS, dtype=pred.dtype)
        u = target[:, None] - pred
        weight = (tau - (u < 0).to(u.dtype)).abs()
        huber = torch.where(u.abs() <= KAPPA, 0.5 * u * u / KAPPA, u.abs() - 0.5 * KAPPA)
        ctx.save_for_backward(u, weight)
        return (weight * huber).mean()

    @staticmethod
    def backward(ctx, grad_out):
        u, weight = ctx.saved_tensors
        dhuber = torch.where(u.abs() <= KAPPA, u / KAPPA, u.sign())
        grad_u = grad_out * weight * dhuber / u.numel()
        return -grad_u, grad_u.sum(dim=1)

    @staticmethod
    def example_inputs():
        return _quantile_inputs(42)


class AfieldHuberQuantileLossOneSided(torch.autograd.Function):
    bug = {"kind": "region", "input": "pred",
           "note": "the quadratic zone is tested with u <= kappa instead of |u| <= kappa, so large negative residuals use u/kappa"}

    @staticmethod
    def forward(ctx, pred, target):
        tau = torch.tensor(TAUS, dtype=pred.dtype)
        u = target[:, None] - pred
        weight = (tau - (u < 0).to(u.dtype)).abs()
        huber = torch.where(u.abs() <= KAPPA, 0.5 * u * u / KAPPA, u.abs() - 0.5 * KAPPA)
        ctx.save_for_backward(u, weight)
        return (weight * huber).mean()

    @staticmethod
    def backward(ctx, grad_out):
        u, weight = ctx.saved_tensors
        dhuber = torch.where(u <= KAPPA, u / KAPPA, u.sign())  # BUG
        grad_u = grad_out * weight * dhuber / u.numel()
        return -grad_u, grad_u.sum(dim=1)

    @staticmethod
    def example_inputs():
        return _quantile_inputs(42)


class AfieldHuberQuantileLossTargetPerQuantile(torch.autograd.Function):
    bug = {"kind": "not_reduced", "input": "target",
           "note": "the target, broadcast over the quantiles, gets the (B, Q) gradient without the sum over Q"}

    @staticmethod
    def forward(ctx, pred, target):
        tau = torch.tensor(TAUS, dtype=pred.dtype)
        u = target[:, None] - pred
        weight = (tau - (u < 0).to(u.dtype)).abs()
        huber = torch.where(u.abs() <= KAPPA, 0.5 * u * u / KAPPA, u.abs() - 0.5 * KAPPA)
        ctx.save_for_backward(u, weight)
        return (weight * huber).mean()

    @staticmethod
    def backward(ctx, grad_out):
        u, weight = ctx.saved_tensors
        dhuber = torch.where(u.abs() <= KAPPA, u / KAPPA, u.sign())
        grad_u = grad_out * weight * dhuber / u.numel()
        grad_target = grad_u  # BUG
        return -grad_u, grad_target

    @staticmethod
    def example_inputs():
        return _quantile_inputs(42)


# -------------------------------------------------------------------------------- estimators
LOT = 0.5


class AfieldLotRounding(torch.autograd.Function):
    bug = {"kind": "straight_through", "input": "orders",
           "note": "orders are rounded to whole lots; the backward passes the gradient straight through the rounding"}

    @staticmethod
    def forward(ctx, orders):
        return torch.round(orders / LOT) * LOT

    @staticmethod
    def backward(ctx, grad_out):
        return grad_out.clone()  # BUG

    @staticmethod
    def example_inputs():
        gen = torch.Generator().manual_seed(43)
        return (0.8 + 3.0 * torch.rand(3, 4, dtype=torch.float64, generator=gen),)


class AfieldRegimeGradientReversal(torch.autograd.Function):
    bug = {"kind": "gradient_reversal", "input": "features", "also": ["sign"],
           "note": "identity forward, negated gradient backward, so the encoder learns to hide the regime from its classifier"}

    @staticmethod
    def forward(ctx, features):
        return features.view_as(features)

    @staticmethod
    def backward(ctx, grad_out):
        return -grad_out  # BUG


STOP = 0.02
TEMPERATURE = 0.01


class AfieldStopLossSurrogate(torch.autograd.Function):
    bug = {"kind": "smooth_surrogate", "input": "pnl",
           "note": "the stop-loss trigger 1(pnl < -stop) is a step; the backward uses the derivative of a sigmoid at temperature 0.01"}

    @staticmethod
    def forward(ctx, pnl):
        ctx.save_for_backward(pnl)
        return (pnl < -STOP).to(pnl.dtype)

    @staticmethod
    def backward(ctx, grad_out):
        (pnl,) = ctx.saved_tensors
        s = torch.sigmoid((-pnl - STOP) / TEMPERATURE)
        return -grad_out * s * (1 - s) / TEMPERATURE  # BUG

    @staticmethod
    def example_inputs():
        gen = torch.Generator().manual_seed(44)
        return (0.03 * torch.randn(3, 4, dtype=torch.float64, generator=gen),)
