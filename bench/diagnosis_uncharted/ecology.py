"""Population ecology: closed-form logistic growth of several populations, and one Ricker step.

Logistic growth N(t) = K / (1 + ((K - N0) / N0) e^{-r t}) for P populations (rate, capacity, n0 are
(P,)) at T times: the output is (P, T) and P = T, so a wrong axis still runs. The Ricker map
N' = N exp(r (1 - N / K)) is written with its exponent kept on ``ctx``.
"""
import torch


def _logistic_inputs():
    rate = torch.tensor([0.5, 0.9, 1.3, 0.7], dtype=torch.float64, requires_grad=True)
    capacity = torch.tensor([10.0, 8.0, 12.0, 6.0], dtype=torch.float64, requires_grad=True)
    n0 = torch.tensor([1.0, 2.0, 0.5, 1.5], dtype=torch.float64, requires_grad=True)
    times = torch.tensor([0.5, 1.0, 2.0, 3.0], dtype=torch.float64)
    return rate, capacity, n0, times


def _logistic(rate, capacity, n0, times):
    odds = (capacity - n0) / n0
    decay = torch.exp(-rate[:, None] * times[None, :])
    return capacity[:, None] / (1 + odds[:, None] * decay)


class UnchartedLogisticGrowth(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, rate, capacity, n0, times):
        ctx.save_for_backward(rate, capacity, n0, times)
        return _logistic(rate, capacity, n0, times)

    @staticmethod
    def backward(ctx, grad):
        rate, capacity, n0, times = ctx.saved_tensors
        k, start = capacity[:, None], n0[:, None]
        odds = (k - start) / start
        decay = torch.exp(-rate[:, None] * times[None, :])
        denom = 1 + odds * decay
        grad_rate = (grad * k * odds * times[None, :] * decay / denom ** 2).sum(dim=1)
        grad_capacity = (grad * (1 / denom - k * decay / (start * denom ** 2))).sum(dim=1)
        grad_n0 = (grad * k ** 2 * decay / (start ** 2 * denom ** 2)).sum(dim=1)
        return grad_rate, grad_capacity, grad_n0, None

    @staticmethod
    def example_inputs():
        return _logistic_inputs()


class UnchartedLogisticGrowthKeepdim(torch.autograd.Function):
    """The same curves with the parameters viewed as columns and keepdim reductions."""

    bug = None

    @staticmethod
    def forward(ctx, rate, capacity, n0, times):
        r, k, start = rate.view(-1, 1), capacity.view(-1, 1), n0.view(-1, 1)
        decay = torch.exp(-r * times.view(1, -1))
        curve = k / (1 + (k / start - 1) * decay)
        ctx.save_for_backward(k, start, times, decay, curve)
        return curve

    @staticmethod
    def backward(ctx, grad):
        k, start, times, decay, curve = ctx.saved_tensors
        share = curve / k                       # 1 / (1 + odds * decay)
        odds = k / start - 1
        grad_rate = (grad * curve * share * odds * decay * times.view(1, -1)).sum(dim=1, keepdim=True)
        grad_capacity = (grad * (share - share ** 2 * decay * k / start)).sum(dim=1, keepdim=True)
        grad_n0 = (grad * curve ** 2 * decay / start ** 2).sum(dim=1, keepdim=True)
        return grad_rate.view(-1), grad_capacity.view(-1), grad_n0.view(-1), None

    @staticmethod
    def example_inputs():
        return _logistic_inputs()


class UnchartedLogisticRateOverPopulations(torch.autograd.Function):
    bug = {"kind": "wrong_axis", "input": "rate",
           "note": "the growth rates' gradient sums the (P, T) table over populations (dim 0) "
                   "instead of over times (dim 1)"}

    @staticmethod
    def forward(ctx, rate, capacity, n0, times):
        ctx.save_for_backward(rate, capacity, n0, times)
        return _logistic(rate, capacity, n0, times)

    @staticmethod
    def backward(ctx, grad):
        rate, capacity, n0, times = ctx.saved_tensors
        k, start = capacity[:, None], n0[:, None]
        odds = (k - start) / start
        decay = torch.exp(-rate[:, None] * times[None, :])
        denom = 1 + odds * decay
        grad_rate = (grad * k * odds * times[None, :] * decay / denom ** 2).sum(dim=0)  # BUG
        grad_capacity = (grad * (1 / denom - k * decay / (start * denom ** 2))).sum(dim=1)
        grad_n0 = (grad * k ** 2 * decay / (start ** 2 * denom ** 2)).sum(dim=1)
        return grad_rate, grad_capacity, grad_n0, None

    @staticmethod
    def example_inputs():
        return _logistic_inputs()


class UnchartedLogisticCapacityNumeratorOnly(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "capacity",
           "note": "K is in the numerator and in the odds (K - N0) / N0 of the denominator; only "
                   "the numerator's 1 / denom is kept"}

    @staticmethod
    def forward(ctx, rate, capacity, n0, times):
        ctx.save_for_backward(rate, capacity, n0, times)
        return _logistic(rate, capacity, n0, times)

    @staticmethod
    def backward(ctx, grad):
        rate, capacity, n0, times = ctx.saved_tensors
        k, start = capacity[:, None], n0[:, None]
        odds = (k - start) / start
        decay = torch.exp(-rate[:, None] * times[None, :])
        denom = 1 + odds * decay
        grad_rate = (grad * k * odds * times[None, :] * decay / denom ** 2).sum(dim=1)
        grad_capacity = (grad / denom).sum(dim=1)  # BUG
        grad_n0 = (grad * k ** 2 * decay / (start ** 2 * denom ** 2)).sum(dim=1)
        return grad_rate, grad_capacity, grad_n0, None

    @staticmethod
    def example_inputs():
        return _logistic_inputs()


class UnchartedLogisticCapacityTermSign(torch.autograd.Function):
    bug = {"kind": "term_sign", "input": "capacity",
           "note": "the denominator's contribution -K e^{-rt} / (N0 denom^2) is added with +"}

    @staticmethod
    def forward(ctx, rate, capacity, n0, times):
        ctx.save_for_backward(rate, capacity, n0, times)
        return _logistic(rate, capacity, n0, times)

    @staticmethod
    def backward(ctx, grad):
        rate, capacity, n0, times = ctx.saved_tensors
        k, start = capacity[:, None], n0[:, None]
        odds = (k - start) / start
        decay = torch.exp(-rate[:, None] * times[None, :])
        denom = 1 + odds * decay
        grad_rate = (grad * k * odds * times[None, :] * decay / denom ** 2).sum(dim=1)
        grad_capacity = (grad * (1 / denom + k * decay / (start * denom ** 2))).sum(dim=1)  # BUG
        grad_n0 = (grad * k ** 2 * decay / (start ** 2 * denom ** 2)).sum(dim=1)
        return grad_rate, grad_capacity, grad_n0, None

    @staticmethod
    def example_inputs():
        return _logistic_inputs()


class UnchartedLogisticRateNotReduced(torch.autograd.Function):
    bug = {"kind": "not_reduced", "input": "rate", "also": ["wrong_axis"],
           "note": "the rates' (P, T) table is returned without the sum over times; since P = T "
                   "torch accepts it and sums it to (P,) over dim 0, i.e. over populations"}

    @staticmethod
    def forward(ctx, rate, capacity, n0, times):
        ctx.save_for_backward(rate, capacity, n0, times)
        return _logistic(rate, capacity, n0, times)

    @staticmethod
    def backward(ctx, grad):
        rate, capacity, n0, times = ctx.saved_tensors
        k, start = capacity[:, None], n0[:, None]
        odds = (k - start) / start
        decay = torch.exp(-rate[:, None] * times[None, :])
        denom = 1 + odds * decay
        grad_rate = grad * k * odds * times[None, :] * decay / denom ** 2  # BUG
        grad_capacity = (grad * (1 / denom - k * decay / (start * denom ** 2))).sum(dim=1)
        grad_n0 = (grad * k ** 2 * decay / (start ** 2 * denom ** 2)).sum(dim=1)
        return grad_rate, grad_capacity, grad_n0, None

    @staticmethod
    def example_inputs():
        return _logistic_inputs()


class UnchartedLogisticDecayNotUnsqueezed(torch.autograd.Function):
    bug = {"kind": "missing_reshape", "input": "rate",
           "note": "backward recomputes e^{-r t} as exp(-rate * times) without [:, None] / "
                   "[None, :], an elementwise (P,) product that broadcasts as a row (P = T, so it "
                   "runs); every gradient built on it is wrong"}

    @staticmethod
    def forward(ctx, rate, capacity, n0, times):
        ctx.save_for_backward(rate, capacity, n0, times)
        return _logistic(rate, capacity, n0, times)

    @staticmethod
    def backward(ctx, grad):
        rate, capacity, n0, times = ctx.saved_tensors
        k, start = capacity[:, None], n0[:, None]
        odds = (k - start) / start
        decay = torch.exp(-rate * times)  # BUG
        denom = 1 + odds * decay
        grad_rate = (grad * k * odds * times[None, :] * decay / denom ** 2).sum(dim=1)
        grad_capacity = (grad * (1 / denom - k * decay / (start * denom ** 2))).sum(dim=1)
        grad_n0 = (grad * k ** 2 * decay / (start ** 2 * denom ** 2)).sum(dim=1)
        return grad_rate, grad_capacity, grad_n0, None

    @staticmethod
    def example_inputs():
        return _logistic_inputs()


# ----------------------------------------------------------------------------- Ricker step
def _ricker_inputs():
    n = torch.tensor([2.0, 5.0, 8.0, 1.0, 4.0], dtype=torch.float64, requires_grad=True)
    rate = torch.tensor([0.8, 1.2, 0.5, 1.5, 0.9], dtype=torch.float64, requires_grad=True)
    capacity = torch.tensor([6.0, 7.0, 9.0, 4.0, 5.0], dtype=torch.float64, requires_grad=True)
    return n, rate, capacity


class UnchartedRickerStep(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, n, rate, capacity):
        exponent = rate * (1 - n / capacity)
        ctx.exponent = exponent
        ctx.save_for_backward(n, rate, capacity)
        return n * torch.exp(exponent)

    @staticmethod
    def backward(ctx, grad):
        n, rate, capacity = ctx.saved_tensors
        factor = torch.exp(ctx.exponent)
        nxt = n * factor
        grad_n = grad * factor * (1 - rate * n / capacity)
        grad_rate = grad * nxt * (1 - n / capacity)
        grad_capacity = grad * nxt * rate * n / capacity ** 2
        return grad_n, grad_rate, grad_capacity

    @staticmethod
    def example_inputs():
        return _ricker_inputs()


class UnchartedRickerExponentInplace(torch.autograd.Function):
    bug = {"kind": "inplace", "input": "n",
           "note": "forward exponentiates the exponent kept on ctx in place (exp_) to save a "
                   "tensor, so backward reads exp(r (1 - N/K)) where it expects r (1 - N/K); every "
                   "gradient is wrong"}

    @staticmethod
    def forward(ctx, n, rate, capacity):
        exponent = rate * (1 - n / capacity)
        ctx.exponent = exponent
        ctx.save_for_backward(n, rate, capacity)
        return n * exponent.exp_()  # BUG

    @staticmethod
    def backward(ctx, grad):
        n, rate, capacity = ctx.saved_tensors
        factor = torch.exp(ctx.exponent)
        nxt = n * factor
        grad_n = grad * factor * (1 - rate * n / capacity)
        grad_rate = grad * nxt * (1 - n / capacity)
        grad_capacity = grad * nxt * rate * n / capacity ** 2
        return grad_n, grad_rate, grad_capacity

    @staticmethod
    def example_inputs():
        return _ricker_inputs()


class UnchartedRickerCapacityFrozen(torch.autograd.Function):
    bug = {"kind": "zero", "input": "capacity",
           "note": "the carrying capacity is treated as a constant: its gradient is returned as "
                   "zeros though it is a learned input"}

    @staticmethod
    def forward(ctx, n, rate, capacity):
        exponent = rate * (1 - n / capacity)
        ctx.exponent = exponent
        ctx.save_for_backward(n, rate, capacity)
        return n * torch.exp(exponent)

    @staticmethod
    def backward(ctx, grad):
        n, rate, capacity = ctx.saved_tensors
        factor = torch.exp(ctx.exponent)
        nxt = n * factor
        grad_n = grad * factor * (1 - rate * n / capacity)
        grad_rate = grad * nxt * (1 - n / capacity)
        grad_capacity = torch.zeros_like(capacity)  # BUG
        return grad_n, grad_rate, grad_capacity

    @staticmethod
    def example_inputs():
        return _ricker_inputs()
