"""Pharmacokinetic dosing curves.

A one-compartment model with first-order oral absorption (Bateman function, learned ka, ke and
volume; the dose is a plain float), a two-compartment IV bolus C(t) = A e^{-alpha t} + B e^{-beta t}
(coefficients and rates as (2,) tensors), and repeated dosing as the causal convolution of a dose
schedule with a learned impulse response, by ``unfold``.
"""
import torch


def _oral_inputs():
    ka = torch.tensor(1.4, dtype=torch.float64, requires_grad=True)
    ke = torch.tensor(0.3, dtype=torch.float64, requires_grad=True)
    volume = torch.tensor(2.0, dtype=torch.float64, requires_grad=True)
    times = torch.tensor([0.25, 0.5, 1.0, 2.0, 3.0, 4.5, 6.0, 8.0], dtype=torch.float64)
    return ka, ke, volume, times, 10.0


def _bateman(ka, ke, volume, times, dose):
    amplitude = dose * ka / (volume * (ka - ke))
    return amplitude, torch.exp(-ke * times) - torch.exp(-ka * times)


class UnchartedOralOneCompartment(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, ka, ke, volume, times, dose):
        amplitude, shape = _bateman(ka, ke, volume, times, dose)
        ctx.save_for_backward(ka, ke, volume, times)
        ctx.dose = dose
        return amplitude * shape

    @staticmethod
    def backward(ctx, grad):
        ka, ke, volume, times = ctx.saved_tensors
        amplitude, shape = _bateman(ka, ke, volume, times, ctx.dose)
        d_amp_ka = -ctx.dose * ke / (volume * (ka - ke) ** 2)
        d_amp_ke = ctx.dose * ka / (volume * (ka - ke) ** 2)
        grad_ka = (grad * (d_amp_ka * shape + amplitude * times * torch.exp(-ka * times))).sum()
        grad_ke = (grad * (d_amp_ke * shape - amplitude * times * torch.exp(-ke * times))).sum()
        grad_volume = -(grad * amplitude * shape).sum() / volume
        return grad_ka, grad_ke, grad_volume, None, None

    @staticmethod
    def example_inputs():
        return _oral_inputs()


class UnchartedOralAbsorptionAmplitudeDropped(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "ka",
           "note": "ka appears in the amplitude dose ka / (V (ka - ke)) and in the absorption "
                   "exponential; only the exponential's term is kept"}

    @staticmethod
    def forward(ctx, ka, ke, volume, times, dose):
        amplitude, shape = _bateman(ka, ke, volume, times, dose)
        ctx.save_for_backward(ka, ke, volume, times)
        ctx.dose = dose
        return amplitude * shape

    @staticmethod
    def backward(ctx, grad):
        ka, ke, volume, times = ctx.saved_tensors
        amplitude, shape = _bateman(ka, ke, volume, times, ctx.dose)
        d_amp_ke = ctx.dose * ka / (volume * (ka - ke) ** 2)
        grad_ka = (grad * amplitude * times * torch.exp(-ka * times)).sum()  # BUG
        grad_ke = (grad * (d_amp_ke * shape - amplitude * times * torch.exp(-ke * times))).sum()
        grad_volume = -(grad * amplitude * shape).sum() / volume
        return grad_ka, grad_ke, grad_volume, None, None

    @staticmethod
    def example_inputs():
        return _oral_inputs()


class UnchartedOralEliminationTermSign(torch.autograd.Function):
    bug = {"kind": "term_sign", "input": "ke",
           "note": "d/dke of exp(-ke t) is -t exp(-ke t); that term is added instead of subtracted"}

    @staticmethod
    def forward(ctx, ka, ke, volume, times, dose):
        amplitude, shape = _bateman(ka, ke, volume, times, dose)
        ctx.save_for_backward(ka, ke, volume, times)
        ctx.dose = dose
        return amplitude * shape

    @staticmethod
    def backward(ctx, grad):
        ka, ke, volume, times = ctx.saved_tensors
        amplitude, shape = _bateman(ka, ke, volume, times, ctx.dose)
        d_amp_ka = -ctx.dose * ke / (volume * (ka - ke) ** 2)
        d_amp_ke = ctx.dose * ka / (volume * (ka - ke) ** 2)
        grad_ka = (grad * (d_amp_ka * shape + amplitude * times * torch.exp(-ka * times))).sum()
        grad_ke = (grad * (d_amp_ke * shape + amplitude * times * torch.exp(-ke * times))).sum()  # BUG
        grad_volume = -(grad * amplitude * shape).sum() / volume
        return grad_ka, grad_ke, grad_volume, None, None

    @staticmethod
    def example_inputs():
        return _oral_inputs()


class UnchartedOralRateConstantsSwapped(torch.autograd.Function):
    bug = {"kind": "swapped", "input": "ka",
           "note": "the absorption and elimination rate gradients are returned in each other's "
                   "place"}

    @staticmethod
    def forward(ctx, ka, ke, volume, times, dose):
        amplitude, shape = _bateman(ka, ke, volume, times, dose)
        ctx.save_for_backward(ka, ke, volume, times)
        ctx.dose = dose
        return amplitude * shape

    @staticmethod
    def backward(ctx, grad):
        ka, ke, volume, times = ctx.saved_tensors
        amplitude, shape = _bateman(ka, ke, volume, times, ctx.dose)
        d_amp_ka = -ctx.dose * ke / (volume * (ka - ke) ** 2)
        d_amp_ke = ctx.dose * ka / (volume * (ka - ke) ** 2)
        grad_ka = (grad * (d_amp_ka * shape + amplitude * times * torch.exp(-ka * times))).sum()
        grad_ke = (grad * (d_amp_ke * shape - amplitude * times * torch.exp(-ke * times))).sum()
        grad_volume = -(grad * amplitude * shape).sum() / volume
        return grad_ke, grad_ka, grad_volume, None, None  # BUG

    @staticmethod
    def example_inputs():
        return _oral_inputs()


class UnchartedOralVolumeAmplitudeOnly(torch.autograd.Function):
    bug = {"kind": "wrong_variable", "input": "volume",
           "note": "dC/dV = -C / V; the amplitude is used where the concentration amplitude * shape "
                   "is needed"}

    @staticmethod
    def forward(ctx, ka, ke, volume, times, dose):
        amplitude, shape = _bateman(ka, ke, volume, times, dose)
        ctx.save_for_backward(ka, ke, volume, times)
        ctx.dose = dose
        return amplitude * shape

    @staticmethod
    def backward(ctx, grad):
        ka, ke, volume, times = ctx.saved_tensors
        amplitude, shape = _bateman(ka, ke, volume, times, ctx.dose)
        d_amp_ka = -ctx.dose * ke / (volume * (ka - ke) ** 2)
        d_amp_ke = ctx.dose * ka / (volume * (ka - ke) ** 2)
        grad_ka = (grad * (d_amp_ka * shape + amplitude * times * torch.exp(-ka * times))).sum()
        grad_ke = (grad * (d_amp_ke * shape - amplitude * times * torch.exp(-ke * times))).sum()
        grad_volume = -(grad * amplitude).sum() / volume  # BUG
        return grad_ka, grad_ke, grad_volume, None, None

    @staticmethod
    def example_inputs():
        return _oral_inputs()


# ----------------------------------------------------------------- two-compartment IV bolus
def _bolus_inputs():
    coef = torch.tensor([3.0, 1.0], dtype=torch.float64, requires_grad=True)
    rates = torch.tensor([1.5, 0.2], dtype=torch.float64, requires_grad=True)
    times = torch.tensor([0.1, 0.5, 1.0, 2.0, 4.0, 8.0], dtype=torch.float64)
    return coef, rates, times


class UnchartedTwoCompartmentBolus(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, coef, rates, times):
        decay = torch.exp(-rates[None, :] * times[:, None])
        ctx.save_for_backward(coef, times, decay)
        return decay @ coef

    @staticmethod
    def backward(ctx, grad):
        coef, times, decay = ctx.saved_tensors
        return decay.mT @ grad, -coef * ((times * grad) @ decay), None

    @staticmethod
    def example_inputs():
        return _bolus_inputs()


class UnchartedTwoCompartmentBolusEinsum(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, coef, rates, times):
        decay = torch.exp(-torch.einsum("k,t->tk", rates, times))
        ctx.save_for_backward(coef, times, decay)
        return torch.einsum("tk,k->t", decay, coef)

    @staticmethod
    def backward(ctx, grad):
        coef, times, decay = ctx.saved_tensors
        grad_coef = torch.einsum("tk,t->k", decay, grad)
        grad_rates = -coef * torch.einsum("tk,t,t->k", decay, times, grad)
        return grad_coef, grad_rates, None

    @staticmethod
    def example_inputs():
        return _bolus_inputs()


class UnchartedTwoCompartmentRatesSign(torch.autograd.Function):
    bug = {"kind": "sign", "input": "rates",
           "note": "d/d rate of exp(-rate t) is -t exp(-rate t); the rates' gradient has no minus"}

    @staticmethod
    def forward(ctx, coef, rates, times):
        decay = torch.exp(-rates[None, :] * times[:, None])
        ctx.save_for_backward(coef, times, decay)
        return decay @ coef

    @staticmethod
    def backward(ctx, grad):
        coef, times, decay = ctx.saved_tensors
        grad_rates = coef * ((times * grad) @ decay)  # BUG
        return decay.mT @ grad, grad_rates, None

    @staticmethod
    def example_inputs():
        return _bolus_inputs()


# --------------------------------------------------------- repeated dosing by convolution
def _schedule_inputs(seed=41):
    gen = torch.Generator().manual_seed(seed)
    dose_rate = torch.rand(8, dtype=torch.float64, generator=gen).requires_grad_()
    kernel = torch.tensor([0.9, 0.5, 0.2], dtype=torch.float64, requires_grad=True)
    return dose_rate, kernel


class UnchartedDoseScheduleConvolution(torch.autograd.Function):
    """c[t] = sum_s kernel[s] dose_rate[t - s] (zero before the first dose)."""

    bug = None

    @staticmethod
    def forward(ctx, dose_rate, kernel):
        width = kernel.shape[0]
        padded = torch.cat([torch.zeros(width - 1, dtype=dose_rate.dtype), dose_rate])
        windows = padded.unfold(0, width, 1)
        ctx.save_for_backward(windows, kernel)
        return windows @ torch.flip(kernel, dims=(0,))

    @staticmethod
    def backward(ctx, grad):
        windows, kernel = ctx.saved_tensors
        steps, width = windows.shape
        grad_kernel = torch.flip(windows.mT @ grad, dims=(0,))
        where = (torch.arange(steps)[:, None] + torch.arange(width)[None, :]).reshape(-1)
        spread = (grad[:, None] * torch.flip(kernel, dims=(0,))[None, :]).reshape(-1)
        grad_padded = torch.zeros(steps + width - 1, dtype=grad.dtype).index_add_(0, where, spread)
        return grad_padded[width - 1:], grad_kernel

    @staticmethod
    def example_inputs():
        return _schedule_inputs()


class UnchartedDoseScheduleKernelNoFlip(torch.autograd.Function):
    bug = {"kind": "missing_flip", "input": "kernel",
           "note": "forward uses the kernel reversed; the kernel's gradient windows.T @ grad is "
                   "returned without flipping it back"}

    @staticmethod
    def forward(ctx, dose_rate, kernel):
        width = kernel.shape[0]
        padded = torch.cat([torch.zeros(width - 1, dtype=dose_rate.dtype), dose_rate])
        windows = padded.unfold(0, width, 1)
        ctx.save_for_backward(windows, kernel)
        return windows @ torch.flip(kernel, dims=(0,))

    @staticmethod
    def backward(ctx, grad):
        windows, kernel = ctx.saved_tensors
        steps, width = windows.shape
        grad_kernel = windows.mT @ grad  # BUG
        where = (torch.arange(steps)[:, None] + torch.arange(width)[None, :]).reshape(-1)
        spread = (grad[:, None] * torch.flip(kernel, dims=(0,))[None, :]).reshape(-1)
        grad_padded = torch.zeros(steps + width - 1, dtype=grad.dtype).index_add_(0, where, spread)
        return grad_padded[width - 1:], grad_kernel

    @staticmethod
    def example_inputs():
        return _schedule_inputs()
