"""Enzyme kinetics with learned parameters.

Michaelis-Menten rates v = Vmax_e S / (Km_e + S) for observations of several enzymes (an int64
enzyme id per observation, with repeats, so per-enzyme gradients must be accumulated), and a Hill
dose-response y = Vmax c^n / (K^n + c^n) with a learned Hill coefficient n.
"""
import torch


def _mm_inputs():
    vmax = torch.tensor([2.0, 1.5, 3.0], dtype=torch.float64, requires_grad=True)
    km = torch.tensor([0.5, 1.2, 0.8], dtype=torch.float64, requires_grad=True)
    substrate = torch.tensor([0.2, 1.0, 0.6, 2.5, 0.4, 1.6, 3.0, 0.9], dtype=torch.float64,
                             requires_grad=True)
    enzyme = torch.tensor([0, 2, 1, 0, 2, 2, 1, 0], dtype=torch.int64)
    return vmax, km, substrate, enzyme


class UnchartedMichaelisMenten(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, vmax, km, substrate, enzyme):
        ctx.save_for_backward(vmax, km, substrate, enzyme)
        return vmax[enzyme] * substrate / (km[enzyme] + substrate)

    @staticmethod
    def backward(ctx, grad):
        vmax, km, substrate, enzyme = ctx.saved_tensors
        v, k = vmax[enzyme], km[enzyme]
        denom = k + substrate
        grad_vmax = grad_km = grad_substrate = None
        if ctx.needs_input_grad[0]:
            grad_vmax = torch.zeros_like(vmax).index_add_(0, enzyme, grad * substrate / denom)
        if ctx.needs_input_grad[1]:
            grad_km = torch.zeros_like(km).index_add_(0, enzyme, -grad * v * substrate / denom ** 2)
        if ctx.needs_input_grad[2]:
            grad_substrate = grad * v * k / denom ** 2
        return grad_vmax, grad_km, grad_substrate, None

    @staticmethod
    def example_inputs():
        return _mm_inputs()


class UnchartedMichaelisMentenScatter(torch.autograd.Function):
    """The same rates, the enzyme parameters gathered and their gradients scattered back."""

    bug = None

    @staticmethod
    def forward(ctx, vmax, km, substrate, enzyme):
        v, k = vmax.gather(0, enzyme), km.gather(0, enzyme)
        ctx.save_for_backward(v, k, substrate, enzyme)
        ctx.n_enzymes = vmax.shape[0]
        return v * substrate / (k + substrate)

    @staticmethod
    def backward(ctx, grad):
        v, k, substrate, enzyme = ctx.saved_tensors
        saturation = substrate / (k + substrate)
        grad_vmax = torch.zeros(ctx.n_enzymes, dtype=v.dtype).scatter_add_(0, enzyme, grad * saturation)
        grad_km = torch.zeros(ctx.n_enzymes, dtype=v.dtype).scatter_add_(
            0, enzyme, -grad * v * saturation / (k + substrate))
        grad_substrate = grad * v * (1 - saturation) / (k + substrate)
        return grad_vmax, grad_km, grad_substrate, None

    @staticmethod
    def example_inputs():
        return _mm_inputs()


class UnchartedMichaelisMentenVmaxAssigned(torch.autograd.Function):
    bug = {"kind": "not_accumulated", "input": "vmax",
           "note": "the per-observation gradients are written into vmax's gradient by index "
                   "assignment, so repeated enzyme ids overwrite each other instead of summing"}

    @staticmethod
    def forward(ctx, vmax, km, substrate, enzyme):
        ctx.save_for_backward(vmax, km, substrate, enzyme)
        return vmax[enzyme] * substrate / (km[enzyme] + substrate)

    @staticmethod
    def backward(ctx, grad):
        vmax, km, substrate, enzyme = ctx.saved_tensors
        v, k = vmax[enzyme], km[enzyme]
        denom = k + substrate
        grad_vmax = torch.zeros_like(vmax)
        grad_vmax[enzyme] = grad * substrate / denom  # BUG
        grad_km = torch.zeros_like(km).index_add_(0, enzyme, -grad * v * substrate / denom ** 2)
        grad_substrate = grad * v * k / denom ** 2
        return grad_vmax, grad_km, grad_substrate, None

    @staticmethod
    def example_inputs():
        return _mm_inputs()


class UnchartedMichaelisMentenKmSign(torch.autograd.Function):
    bug = {"kind": "sign", "input": "km",
           "note": "d/dKm of S / (Km + S) is -S / (Km + S)^2; the minus sign is dropped"}

    @staticmethod
    def forward(ctx, vmax, km, substrate, enzyme):
        ctx.save_for_backward(vmax, km, substrate, enzyme)
        return vmax[enzyme] * substrate / (km[enzyme] + substrate)

    @staticmethod
    def backward(ctx, grad):
        vmax, km, substrate, enzyme = ctx.saved_tensors
        v, k = vmax[enzyme], km[enzyme]
        denom = k + substrate
        grad_vmax = torch.zeros_like(vmax).index_add_(0, enzyme, grad * substrate / denom)
        grad_km = torch.zeros_like(km).index_add_(0, enzyme, grad * v * substrate / denom ** 2)  # BUG
        grad_substrate = grad * v * k / denom ** 2
        return grad_vmax, grad_km, grad_substrate, None

    @staticmethod
    def example_inputs():
        return _mm_inputs()


class UnchartedMichaelisMentenSubstrateNumerator(torch.autograd.Function):
    bug = {"kind": "wrong_variable", "input": "substrate",
           "note": "d/dS of S / (Km + S) is Km / (Km + S)^2; the numerator is written with S "
                   "instead of Km"}

    @staticmethod
    def forward(ctx, vmax, km, substrate, enzyme):
        ctx.save_for_backward(vmax, km, substrate, enzyme)
        return vmax[enzyme] * substrate / (km[enzyme] + substrate)

    @staticmethod
    def backward(ctx, grad):
        vmax, km, substrate, enzyme = ctx.saved_tensors
        v, k = vmax[enzyme], km[enzyme]
        denom = k + substrate
        grad_vmax = torch.zeros_like(vmax).index_add_(0, enzyme, grad * substrate / denom)
        grad_km = torch.zeros_like(km).index_add_(0, enzyme, -grad * v * substrate / denom ** 2)
        grad_substrate = grad * v * substrate / denom ** 2  # BUG
        return grad_vmax, grad_km, grad_substrate, None

    @staticmethod
    def example_inputs():
        return _mm_inputs()


class UnchartedMichaelisMentenParamsSwapped(torch.autograd.Function):
    bug = {"kind": "swapped", "input": "vmax",
           "note": "the Vmax and Km gradients are returned in each other's place (both are (E,))"}

    @staticmethod
    def forward(ctx, vmax, km, substrate, enzyme):
        ctx.save_for_backward(vmax, km, substrate, enzyme)
        return vmax[enzyme] * substrate / (km[enzyme] + substrate)

    @staticmethod
    def backward(ctx, grad):
        vmax, km, substrate, enzyme = ctx.saved_tensors
        v, k = vmax[enzyme], km[enzyme]
        denom = k + substrate
        grad_vmax = torch.zeros_like(vmax).index_add_(0, enzyme, grad * substrate / denom)
        grad_km = torch.zeros_like(km).index_add_(0, enzyme, -grad * v * substrate / denom ** 2)
        grad_substrate = grad * v * k / denom ** 2
        return grad_km, grad_vmax, grad_substrate, None  # BUG

    @staticmethod
    def example_inputs():
        return _mm_inputs()


# --------------------------------------------------------------------------- Hill response
def _hill_inputs():
    vmax = torch.tensor(1.8, dtype=torch.float64, requires_grad=True)
    half = torch.tensor(1.1, dtype=torch.float64, requires_grad=True)
    hill = torch.tensor(2.5, dtype=torch.float64, requires_grad=True)
    conc = torch.tensor([0.3, 0.7, 1.0, 1.4, 2.2, 3.5], dtype=torch.float64, requires_grad=True)
    return vmax, half, hill, conc


class UnchartedHillResponse(torch.autograd.Function):
    """y = vmax * c^n / (K^n + c^n) with scalars vmax, K (``half``), n (``hill``)."""

    bug = None

    @staticmethod
    def forward(ctx, vmax, half, hill, conc):
        occupancy = conc ** hill / (half ** hill + conc ** hill)
        ctx.save_for_backward(vmax, half, hill, conc, occupancy)
        return vmax * occupancy

    @staticmethod
    def backward(ctx, grad):
        vmax, half, hill, conc, occupancy = ctx.saved_tensors
        slope = grad * vmax * occupancy * (1 - occupancy)
        grad_vmax = (grad * occupancy).sum()
        grad_half = -(slope * hill / half).sum()
        grad_hill = (slope * (torch.log(conc) - torch.log(half))).sum()
        grad_conc = slope * hill / conc
        return grad_vmax, grad_half, grad_hill, grad_conc

    @staticmethod
    def example_inputs():
        return _hill_inputs()


class UnchartedHillCoefficientNoLogK(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "hill",
           "note": "d/dn of c^n / (K^n + c^n) is r (1 - r)(log c - log K); the -log K term (from "
                   "K^n in the denominator) is left out"}

    @staticmethod
    def forward(ctx, vmax, half, hill, conc):
        occupancy = conc ** hill / (half ** hill + conc ** hill)
        ctx.save_for_backward(vmax, half, hill, conc, occupancy)
        return vmax * occupancy

    @staticmethod
    def backward(ctx, grad):
        vmax, half, hill, conc, occupancy = ctx.saved_tensors
        slope = grad * vmax * occupancy * (1 - occupancy)
        grad_vmax = (grad * occupancy).sum()
        grad_half = -(slope * hill / half).sum()
        grad_hill = (slope * torch.log(conc)).sum()  # BUG
        grad_conc = slope * hill / conc
        return grad_vmax, grad_half, grad_hill, grad_conc

    @staticmethod
    def example_inputs():
        return _hill_inputs()


class UnchartedHillCoefficientPowerRule(torch.autograd.Function):
    bug = {"kind": "none", "input": "hill",
           "note": "the Hill coefficient differentiated by the power rule as if it were the base: "
                   "vmax n c^(n-1) / (K^n + c^n), no logarithms at all"}

    @staticmethod
    def forward(ctx, vmax, half, hill, conc):
        occupancy = conc ** hill / (half ** hill + conc ** hill)
        ctx.save_for_backward(vmax, half, hill, conc, occupancy)
        return vmax * occupancy

    @staticmethod
    def backward(ctx, grad):
        vmax, half, hill, conc, occupancy = ctx.saved_tensors
        slope = grad * vmax * occupancy * (1 - occupancy)
        grad_vmax = (grad * occupancy).sum()
        grad_half = -(slope * hill / half).sum()
        grad_hill = (grad * vmax * hill * conc ** (hill - 1) / (half ** hill + conc ** hill)).sum()  # BUG
        grad_conc = slope * hill / conc
        return grad_vmax, grad_half, grad_hill, grad_conc

    @staticmethod
    def example_inputs():
        return _hill_inputs()


class UnchartedHillHalfSaturationChain(torch.autograd.Function):
    bug = {"kind": "scale", "input": "half",
           "note": "d/dK of K^n is n K^(n-1); the factor n is forgotten, so K's gradient is off by "
                   "the constant 1/n"}

    @staticmethod
    def forward(ctx, vmax, half, hill, conc):
        occupancy = conc ** hill / (half ** hill + conc ** hill)
        ctx.save_for_backward(vmax, half, hill, conc, occupancy)
        return vmax * occupancy

    @staticmethod
    def backward(ctx, grad):
        vmax, half, hill, conc, occupancy = ctx.saved_tensors
        slope = grad * vmax * occupancy * (1 - occupancy)
        grad_vmax = (grad * occupancy).sum()
        grad_half = -(slope / half).sum()  # BUG
        grad_hill = (slope * (torch.log(conc) - torch.log(half))).sum()
        grad_conc = slope * hill / conc
        return grad_vmax, grad_half, grad_hill, grad_conc

    @staticmethod
    def example_inputs():
        return _hill_inputs()


class UnchartedHillVmaxIgnoresGrad(torch.autograd.Function):
    bug = {"kind": "ignores_grad_output", "input": "vmax",
           "note": "the scalar vmax's gradient sums the occupancies without weighting them by the "
                   "incoming gradient"}

    @staticmethod
    def forward(ctx, vmax, half, hill, conc):
        occupancy = conc ** hill / (half ** hill + conc ** hill)
        ctx.save_for_backward(vmax, half, hill, conc, occupancy)
        return vmax * occupancy

    @staticmethod
    def backward(ctx, grad):
        vmax, half, hill, conc, occupancy = ctx.saved_tensors
        slope = grad * vmax * occupancy * (1 - occupancy)
        grad_vmax = occupancy.sum()  # BUG
        grad_half = -(slope * hill / half).sum()
        grad_hill = (slope * (torch.log(conc) - torch.log(half))).sum()
        grad_conc = slope * hill / conc
        return grad_vmax, grad_half, grad_hill, grad_conc

    @staticmethod
    def example_inputs():
        return _hill_inputs()
