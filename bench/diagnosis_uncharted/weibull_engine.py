import gradcli as torch

"""Parametric survival on gradcli's engine: Weibull, exponential and piecewise-exponential NLLs.

Per-subject negative log-likelihoods with a bool censoring mask ``event`` (True: failure observed).
Weibull with log-scale (N,) and a scalar log-shape: with k = exp(log_shape), u = log t - log_scale
and z = exp(k u), NLL = z - event (log_shape - log_scale + (k - 1) u). Exponential with a log rate.
Piecewise-exponential with a log rate per interval (cuts at 0, 1, 2, 4) and the int64 interval in
which each subject's follow-up ends.
"""

STARTS = [0.0, 1.0, 2.0, 4.0]
WIDTHS = [1.0, 1.0, 2.0, 100.0]


def _weibull_inputs():
    log_scale = torch.tensor([0.3, -0.2, 0.5, 0.1, 0.8, -0.4, 0.0, 0.6], dtype=torch.float64,
                             requires_grad=True)
    log_shape = torch.tensor(0.4, dtype=torch.float64, requires_grad=True)
    times = torch.tensor([0.7, 1.3, 2.1, 0.4, 3.0, 0.9, 1.6, 2.4], dtype=torch.float64)
    event = torch.tensor([True, False, True, True, False, True, False, True])
    return log_scale, log_shape, times, event


def _weibull_nll(log_scale, log_shape, times, event):
    shape = torch.exp(log_shape)
    u = torch.log(times) - log_scale
    failed = event.to(log_scale.dtype)
    return torch.exp(shape * u) - failed * (log_shape - log_scale + (shape - 1) * u)


class UnchartedWeibullNLL(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, log_scale, log_shape, times, event):
        ctx.save_for_backward(log_scale, log_shape, times, event)
        return _weibull_nll(log_scale, log_shape, times, event)

    @staticmethod
    def backward(ctx, grad):
        log_scale, log_shape, times, event = ctx.saved_tensors
        shape = torch.exp(log_shape)
        u = torch.log(times) - log_scale
        cum = torch.exp(shape * u)
        failed = event.to(log_scale.dtype)
        grad_scale = grad * shape * (failed - cum)
        grad_shape = (grad * (cum * shape * u - failed * (1 + shape * u))).sum()
        return grad_scale, grad_shape, None, None

    @staticmethod
    def example_inputs():
        return _weibull_inputs()


class UnchartedWeibullCensoredAsFailures(torch.autograd.Function):
    bug = {"kind": "region", "input": "log_scale",
           "note": "the censoring mask is dropped in the log-scale gradient: censored subjects get "
                   "the failure term k too (only observed failures have it)"}

    @staticmethod
    def forward(ctx, log_scale, log_shape, times, event):
        ctx.save_for_backward(log_scale, log_shape, times, event)
        return _weibull_nll(log_scale, log_shape, times, event)

    @staticmethod
    def backward(ctx, grad):
        log_scale, log_shape, times, event = ctx.saved_tensors
        shape = torch.exp(log_shape)
        u = torch.log(times) - log_scale
        cum = torch.exp(shape * u)
        failed = event.to(log_scale.dtype)
        grad_scale = grad * shape * (1.0 - cum)  # BUG
        grad_shape = (grad * (cum * shape * u - failed * (1 + shape * u))).sum()
        return grad_scale, grad_shape, None, None

    @staticmethod
    def example_inputs():
        return _weibull_inputs()


class UnchartedWeibullShapeNotLogChained(torch.autograd.Function):
    bug = {"kind": "scale", "input": "log_shape",
           "note": "the derivative with respect to the shape k is returned for log k (the factor "
                   "dk/dlog k = k is missing), so the gradient is off by the constant 1/k"}

    @staticmethod
    def forward(ctx, log_scale, log_shape, times, event):
        ctx.save_for_backward(log_scale, log_shape, times, event)
        return _weibull_nll(log_scale, log_shape, times, event)

    @staticmethod
    def backward(ctx, grad):
        log_scale, log_shape, times, event = ctx.saved_tensors
        shape = torch.exp(log_shape)
        u = torch.log(times) - log_scale
        cum = torch.exp(shape * u)
        failed = event.to(log_scale.dtype)
        grad_scale = grad * shape * (failed - cum)
        grad_shape = (grad * (cum * u - failed * (1 / shape + u))).sum()  # BUG
        return grad_scale, grad_shape, None, None

    @staticmethod
    def example_inputs():
        return _weibull_inputs()


class UnchartedWeibullScaleSign(torch.autograd.Function):
    bug = {"kind": "sign", "input": "log_scale",
           "note": "the log-scale gradient written k (z - event): the derivative of the likelihood, "
                   "not of the negative log-likelihood"}

    @staticmethod
    def forward(ctx, log_scale, log_shape, times, event):
        ctx.save_for_backward(log_scale, log_shape, times, event)
        return _weibull_nll(log_scale, log_shape, times, event)

    @staticmethod
    def backward(ctx, grad):
        log_scale, log_shape, times, event = ctx.saved_tensors
        shape = torch.exp(log_shape)
        u = torch.log(times) - log_scale
        cum = torch.exp(shape * u)
        failed = event.to(log_scale.dtype)
        grad_scale = grad * shape * (cum - failed)  # BUG
        grad_shape = (grad * (cum * shape * u - failed * (1 + shape * u))).sum()
        return grad_scale, grad_shape, None, None

    @staticmethod
    def example_inputs():
        return _weibull_inputs()


# ------------------------------------------------------------------------------ exponential
def _exponential_inputs():
    log_rate = torch.tensor([-0.5, 0.2, -1.0, 0.4, 0.0, -0.3], dtype=torch.float64, requires_grad=True)
    exposure = torch.tensor([1.5, 0.8, 3.2, 0.6, 2.0, 1.1], dtype=torch.float64)
    event = torch.tensor([True, False, False, True, True, False])
    return log_rate, exposure, event


class UnchartedExponentialNLL(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, log_rate, exposure, event):
        ctx.save_for_backward(log_rate, exposure, event)
        return torch.exp(log_rate) * exposure - torch.where(event, log_rate, torch.zeros_like(log_rate))

    @staticmethod
    def backward(ctx, grad):
        log_rate, exposure, event = ctx.saved_tensors
        return grad * (torch.exp(log_rate) * exposure - event.to(log_rate.dtype)), None, None

    @staticmethod
    def example_inputs():
        return _exponential_inputs()


class UnchartedExponentialCensoredDropped(torch.autograd.Function):
    bug = {"kind": "region", "input": "log_rate",
           "note": "the gradient is masked to the observed failures, but censored subjects "
                   "contribute their exposure rate * t too"}

    @staticmethod
    def forward(ctx, log_rate, exposure, event):
        ctx.save_for_backward(log_rate, exposure, event)
        return torch.exp(log_rate) * exposure - torch.where(event, log_rate, torch.zeros_like(log_rate))

    @staticmethod
    def backward(ctx, grad):
        log_rate, exposure, event = ctx.saved_tensors
        local = torch.where(event, torch.exp(log_rate) * exposure - 1.0, torch.zeros_like(log_rate))  # BUG
        return grad * local, None, None

    @staticmethod
    def example_inputs():
        return _exponential_inputs()


# ------------------------------------------------------------------- piecewise exponential
def _piecewise_inputs():
    log_rates = torch.tensor([-0.2, 0.3, -0.6, 0.1], dtype=torch.float64, requires_grad=True)
    times = torch.tensor([0.5, 1.5, 2.5, 4.8, 0.9, 3.6, 1.2, 6.0], dtype=torch.float64)
    event = torch.tensor([True, False, True, True, False, True, True, False])
    interval = torch.tensor([0, 1, 2, 3, 0, 2, 1, 3], dtype=torch.int64)
    return log_rates, times, event, interval


def _exposure(times):
    starts = torch.tensor(STARTS, dtype=times.dtype)
    widths = torch.tensor(WIDTHS, dtype=times.dtype)
    spent = torch.clamp(times[:, None] - starts[None, :], min=0.0)
    return torch.minimum(spent, widths[None, :])


class UnchartedPiecewiseHazardNLL(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, log_rates, times, event, interval):
        exposure = _exposure(times)
        ctx.save_for_backward(log_rates, exposure, event, interval)
        cumulative = (exposure * torch.exp(log_rates)[None, :]).sum(dim=1)
        return cumulative - torch.where(event, log_rates[interval], torch.zeros_like(times))

    @staticmethod
    def backward(ctx, grad):
        log_rates, exposure, event, interval = ctx.saved_tensors
        rates = torch.exp(log_rates)
        grad_rates = (grad[:, None] * exposure).sum(dim=0) * rates
        failures = grad * event.to(grad.dtype)
        grad_rates = grad_rates - torch.zeros_like(log_rates).index_add_(0, interval, failures)
        return grad_rates, None, None, None

    @staticmethod
    def example_inputs():
        return _piecewise_inputs()


class UnchartedPiecewiseFullIntervals(torch.autograd.Function):
    bug = {"kind": "region", "input": "log_rates",
           "note": "backward recounts the exposure as the full width of every interval the "
                   "subject entered, also the one in which follow-up ended part-way"}

    @staticmethod
    def forward(ctx, log_rates, times, event, interval):
        exposure = _exposure(times)
        ctx.save_for_backward(log_rates, times, event, interval)
        cumulative = (exposure * torch.exp(log_rates)[None, :]).sum(dim=1)
        return cumulative - torch.where(event, log_rates[interval], torch.zeros_like(times))

    @staticmethod
    def backward(ctx, grad):
        log_rates, times, event, interval = ctx.saved_tensors
        starts = torch.tensor(STARTS, dtype=times.dtype)
        widths = torch.tensor(WIDTHS, dtype=times.dtype)
        entered = times[:, None] > starts[None, :]
        exposure = torch.where(entered, widths[None, :], 0.0)  # BUG
        rates = torch.exp(log_rates)
        grad_rates = (grad[:, None] * exposure).sum(dim=0) * rates
        failures = grad * event.to(grad.dtype)
        grad_rates = grad_rates - torch.zeros_like(log_rates).index_add_(0, interval, failures)
        return grad_rates, None, None, None

    @staticmethod
    def example_inputs():
        return _piecewise_inputs()
