"""Refraction and reflection at an interface: Snell's law for the sine of the refracted angle,
sin t = n1 sin(theta_i) / n2, saturated at 1 past the critical angle (total internal reflection),
and Schlick's approximation of the Fresnel reflectance R = R0 + (1 - R0)(1 - cos i)^5,
R0 = ((n1 - n2) / (n1 + n2))^2."""
import torch


def _snell_inputs():
    theta = torch.tensor([[0.2, 0.9, 0.4, 1.2],
                          [0.6, 0.1, 1.0, 0.3],
                          [1.1, 0.5, 0.25, 0.8]], dtype=torch.float64)
    gen = torch.Generator().manual_seed(61)
    n1 = torch.rand(3, 4, generator=gen, dtype=torch.float64) * 0.2 + 1.4   # glass ...
    n2 = torch.rand(3, 4, generator=gen, dtype=torch.float64) * 0.2 + 1.0   # ... into air
    return theta, n1, n2


class OffshoreSnellRefraction(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, theta_i, n1, n2):
        s = n1 * torch.sin(theta_i) / n2
        ctx.save_for_backward(theta_i, n1, n2, s)
        return s.clamp(max=1.0)

    @staticmethod
    def backward(ctx, grad_out):
        theta_i, n1, n2, s = ctx.saved_tensors
        g = grad_out * (s < 1.0)
        return g * n1 * torch.cos(theta_i) / n2, g * torch.sin(theta_i) / n2, -g * s / n2

    @staticmethod
    def example_inputs():
        return _snell_inputs()


class OffshoreSnellRefractionWhere(torch.autograd.Function):
    """The same refraction, the total-internal-reflection mask applied by torch.where."""

    bug = None

    @staticmethod
    def forward(ctx, theta_i, n1, n2):
        s = n1 * torch.sin(theta_i) / n2
        tir = s >= 1.0
        ctx.save_for_backward(theta_i, n1, n2, tir)
        return torch.where(tir, torch.ones_like(s), s)

    @staticmethod
    def backward(ctx, grad_out):
        theta_i, n1, n2, tir = ctx.saved_tensors
        g = torch.where(tir, torch.zeros_like(grad_out), grad_out)
        sin_i = torch.sin(theta_i)
        return g * n1 * torch.cos(theta_i) / n2, g * sin_i / n2, -g * n1 * sin_i / n2 ** 2

    @staticmethod
    def example_inputs():
        return _snell_inputs()


class OffshoreSnellNoTIRMask(torch.autograd.Function):
    bug = {"kind": "region", "input": "theta_i",
           "note": "past the critical angle the output is the constant 1, but the gradient is not masked there "
                   "(n1's and n2's gradients are wrong too)"}

    @staticmethod
    def forward(ctx, theta_i, n1, n2):
        s = n1 * torch.sin(theta_i) / n2
        ctx.save_for_backward(theta_i, n1, n2, s)
        return s.clamp(max=1.0)

    @staticmethod
    def backward(ctx, grad_out):
        theta_i, n1, n2, s = ctx.saved_tensors
        g = grad_out  # BUG
        return g * n1 * torch.cos(theta_i) / n2, g * torch.sin(theta_i) / n2, -g * s / n2

    @staticmethod
    def example_inputs():
        return _snell_inputs()


class OffshoreSnellOuterIndexSign(torch.autograd.Function):
    bug = {"kind": "sign", "input": "n2",
           "note": "d(n1 sin / n2)/dn2 written +s / n2: the minus of 1/n2's derivative is lost"}

    @staticmethod
    def forward(ctx, theta_i, n1, n2):
        s = n1 * torch.sin(theta_i) / n2
        ctx.save_for_backward(theta_i, n1, n2, s)
        return s.clamp(max=1.0)

    @staticmethod
    def backward(ctx, grad_out):
        theta_i, n1, n2, s = ctx.saved_tensors
        g = grad_out * (s < 1.0)
        grad_n2 = g * s / n2  # BUG
        return g * n1 * torch.cos(theta_i) / n2, g * torch.sin(theta_i) / n2, grad_n2

    @staticmethod
    def example_inputs():
        return _snell_inputs()


class OffshoreSnellIndicesSwapped(torch.autograd.Function):
    bug = {"kind": "swapped", "input": "n1",
           "note": "the two refractive indices' gradients are returned in each other's place (n2's is wrong too)"}

    @staticmethod
    def forward(ctx, theta_i, n1, n2):
        s = n1 * torch.sin(theta_i) / n2
        ctx.save_for_backward(theta_i, n1, n2, s)
        return s.clamp(max=1.0)

    @staticmethod
    def backward(ctx, grad_out):
        theta_i, n1, n2, s = ctx.saved_tensors
        g = grad_out * (s < 1.0)
        grad_theta = g * n1 * torch.cos(theta_i) / n2
        grad_n1 = g * torch.sin(theta_i) / n2
        grad_n2 = -g * s / n2
        return grad_theta, grad_n2, grad_n1  # BUG

    @staticmethod
    def example_inputs():
        return _snell_inputs()


def _fresnel_inputs():
    gen = torch.Generator().manual_seed(67)
    cos_i = torch.rand(3, 4, generator=gen, dtype=torch.float64) * 0.8 + 0.1
    n1 = torch.rand(3, 4, generator=gen, dtype=torch.float64) * 0.3 + 1.0
    n2 = torch.rand(3, 4, generator=gen, dtype=torch.float64) * 0.5 + 1.5
    return cos_i, n1, n2


def _schlick_forward(ctx, cos_i, n1, n2):
    r = (n1 - n2) / (n1 + n2)
    r0 = r * r
    m = 1 - cos_i
    ctx.save_for_backward(n1, n2, r, r0, m)
    return r0 + (1 - r0) * m ** 5


class OffshoreFresnelSchlick(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, cos_i, n1, n2):
        return _schlick_forward(ctx, cos_i, n1, n2)

    @staticmethod
    def backward(ctx, grad_out):
        n1, n2, r, r0, m = ctx.saved_tensors
        grad_cos = -5 * grad_out * (1 - r0) * m ** 4
        grad_r0 = grad_out * (1 - m ** 5)
        s2 = (n1 + n2) ** 2
        grad_n1 = grad_r0 * 2 * r * (2 * n2 / s2)
        grad_n2 = grad_r0 * 2 * r * (-2 * n1 / s2)
        return grad_cos, grad_n1, grad_n2

    @staticmethod
    def example_inputs():
        return _fresnel_inputs()


class OffshoreFresnelSchlickCosSign(torch.autograd.Function):
    bug = {"kind": "sign", "input": "cos_i",
           "note": "d(1 - cos)^5 / dcos written +5 (1 - cos)^4: the inner derivative -1 is forgotten"}

    @staticmethod
    def forward(ctx, cos_i, n1, n2):
        return _schlick_forward(ctx, cos_i, n1, n2)

    @staticmethod
    def backward(ctx, grad_out):
        n1, n2, r, r0, m = ctx.saved_tensors
        grad_cos = 5 * grad_out * (1 - r0) * m ** 4  # BUG
        grad_r0 = grad_out * (1 - m ** 5)
        s2 = (n1 + n2) ** 2
        grad_n1 = grad_r0 * 2 * r * (2 * n2 / s2)
        grad_n2 = grad_r0 * 2 * r * (-2 * n1 / s2)
        return grad_cos, grad_n1, grad_n2

    @staticmethod
    def example_inputs():
        return _fresnel_inputs()


class OffshoreFresnelSchlickR0Direct(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "n1",
           "note": "dR/dR0 taken as 1: the -(1 - cos)^5 from the (1 - R0) factor is dropped (n2's gradient is wrong too)"}

    @staticmethod
    def forward(ctx, cos_i, n1, n2):
        return _schlick_forward(ctx, cos_i, n1, n2)

    @staticmethod
    def backward(ctx, grad_out):
        n1, n2, r, r0, m = ctx.saved_tensors
        grad_cos = -5 * grad_out * (1 - r0) * m ** 4
        grad_r0 = grad_out  # BUG
        s2 = (n1 + n2) ** 2
        grad_n1 = grad_r0 * 2 * r * (2 * n2 / s2)
        grad_n2 = grad_r0 * 2 * r * (-2 * n1 / s2)
        return grad_cos, grad_n1, grad_n2

    @staticmethod
    def example_inputs():
        return _fresnel_inputs()


class OffshoreFresnelSchlickIndexGuess(torch.autograd.Function):
    bug = {"kind": "none", "input": "n1",
           "note": "n1's gradient guessed as 2 (n1 - n2) / (n1 + n2)^2 * (1 - cos)^5, no chain through R0"}

    @staticmethod
    def forward(ctx, cos_i, n1, n2):
        return _schlick_forward(ctx, cos_i, n1, n2)

    @staticmethod
    def backward(ctx, grad_out):
        n1, n2, r, r0, m = ctx.saved_tensors
        grad_cos = -5 * grad_out * (1 - r0) * m ** 4
        grad_r0 = grad_out * (1 - m ** 5)
        s2 = (n1 + n2) ** 2
        grad_n1 = grad_out * 2 * (n1 - n2) / s2 * m ** 5  # BUG
        grad_n2 = grad_r0 * 2 * r * (-2 * n1 / s2)
        return grad_cos, grad_n1, grad_n2

    @staticmethod
    def example_inputs():
        return _fresnel_inputs()
