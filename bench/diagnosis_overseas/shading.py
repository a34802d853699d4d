"""Lambert, wrapped Lambert and Blinn-Phong shading; the normal is normalised in forward."""
import torch

WRAP = 0.5


def _lambert_inputs(seed):
    gen = torch.Generator().manual_seed(seed)
    normal = torch.randn(6, 3, dtype=torch.float64, generator=gen)
    light = torch.randn(6, 3, dtype=torch.float64, generator=gen)
    light = light / light.norm(dim=-1, keepdim=True)
    return normal, light


def _lambert_forward(ctx, normal, light):
    norm = normal.norm(dim=-1, keepdim=True)
    nhat = normal / norm
    dot = (nhat * light).sum(-1)
    ctx.save_for_backward(normal, light, nhat, norm, dot)
    return dot.clamp(min=0)


class OverseasLambert(torch.autograd.Function):
    """max(0, n/|n| . l)."""

    bug = None

    @staticmethod
    def forward(ctx, normal, light):
        return _lambert_forward(ctx, normal, light)

    @staticmethod
    def backward(ctx, grad_out):
        normal, light, nhat, norm, dot = ctx.saved_tensors
        gd = grad_out * (dot > 0)
        grad_nhat = gd[:, None] * light
        grad_normal = (grad_nhat - nhat * (nhat * grad_nhat).sum(-1, keepdim=True)) / norm
        grad_light = gd[:, None] * nhat
        return grad_normal, grad_light

    @staticmethod
    def example_inputs():
        return _lambert_inputs(61)


class OverseasLambertNoProjection(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "normal",
           "note": "the normalisation's Jacobian keeps g/|n| and drops the -n_hat (n_hat . g)/|n| term"}

    @staticmethod
    def forward(ctx, normal, light):
        return _lambert_forward(ctx, normal, light)

    @staticmethod
    def backward(ctx, grad_out):
        normal, light, nhat, norm, dot = ctx.saved_tensors
        gd = grad_out * (dot > 0)
        grad_nhat = gd[:, None] * light
        grad_normal = grad_nhat / norm  # BUG
        grad_light = gd[:, None] * nhat
        return grad_normal, grad_light

    @staticmethod
    def example_inputs():
        return _lambert_inputs(62)


class OverseasLambertRawNormal(torch.autograd.Function):
    bug = {"kind": "wrong_variable", "input": "light",
           "note": "the light gradient uses the un-normalised normal instead of n_hat"}

    @staticmethod
    def forward(ctx, normal, light):
        return _lambert_forward(ctx, normal, light)

    @staticmethod
    def backward(ctx, grad_out):
        normal, light, nhat, norm, dot = ctx.saved_tensors
        gd = grad_out * (dot > 0)
        grad_nhat = gd[:, None] * light
        grad_normal = (grad_nhat - nhat * (nhat * grad_nhat).sum(-1, keepdim=True)) / norm
        grad_light = gd[:, None] * normal  # BUG
        return grad_normal, grad_light

    @staticmethod
    def example_inputs():
        return _lambert_inputs(63)


class OverseasLambertLightConstant(torch.autograd.Function):
    bug = {"kind": "zero", "input": "light",
           "note": "the light direction is treated as a constant and gets None, though it is a learned input"}

    @staticmethod
    def forward(ctx, normal, light):
        return _lambert_forward(ctx, normal, light)

    @staticmethod
    def backward(ctx, grad_out):
        normal, light, nhat, norm, dot = ctx.saved_tensors
        gd = grad_out * (dot > 0)
        grad_nhat = gd[:, None] * light
        grad_normal = (grad_nhat - nhat * (nhat * grad_nhat).sum(-1, keepdim=True)) / norm
        return grad_normal, None  # BUG

    @staticmethod
    def example_inputs():
        return _lambert_inputs(64)


def _wrap_forward(ctx, normal, light):
    norm = normal.norm(dim=-1, keepdim=True)
    nhat = normal / norm
    dot = (nhat * light).sum(-1)
    ctx.save_for_backward(light, nhat, norm, dot)
    return ((dot + WRAP) / (1 + WRAP)).clamp(min=0)


class OverseasWrapLambert(torch.autograd.Function):
    """Wrapped (half-Lambert style) diffuse: max(0, (n_hat . l + w) / (1 + w))."""

    bug = None

    @staticmethod
    def forward(ctx, normal, light):
        return _wrap_forward(ctx, normal, light)

    @staticmethod
    def backward(ctx, grad_out):
        light, nhat, norm, dot = ctx.saved_tensors
        gd = grad_out * (dot > -WRAP) / (1 + WRAP)
        grad_nhat = gd[:, None] * light
        grad_normal = (grad_nhat - nhat * (nhat * grad_nhat).sum(-1, keepdim=True)) / norm
        return grad_normal, gd[:, None] * nhat

    @staticmethod
    def example_inputs():
        return _lambert_inputs(65)


class OverseasWrapLambertMask(torch.autograd.Function):
    bug = {"kind": "region", "input": "normal",
           "note": "the clamp mask is copied from plain Lambert (dot > 0), but the wrapped term is lit down to dot > -w"}

    @staticmethod
    def forward(ctx, normal, light):
        return _wrap_forward(ctx, normal, light)

    @staticmethod
    def backward(ctx, grad_out):
        light, nhat, norm, dot = ctx.saved_tensors
        gd = grad_out * (dot > 0) / (1 + WRAP)  # BUG
        grad_nhat = gd[:, None] * light
        grad_normal = (grad_nhat - nhat * (nhat * grad_nhat).sum(-1, keepdim=True)) / norm
        return grad_normal, gd[:, None] * nhat

    @staticmethod
    def example_inputs():
        return _lambert_inputs(65)


def _phong_inputs(seed):
    gen = torch.Generator().manual_seed(seed)
    normal = torch.randn(5, 3, dtype=torch.float64, generator=gen)
    half = normal / normal.norm(dim=-1, keepdim=True) + 0.4 * torch.randn(5, 3, dtype=torch.float64,
                                                                          generator=gen)
    half = half / half.norm(dim=-1, keepdim=True)
    shininess = 2.0 + 6.0 * torch.rand(5, dtype=torch.float64, generator=gen)
    return normal, half, shininess


class OverseasBlinnPhong(torch.autograd.Function):
    """Specular max(0, n_hat . h) ** p with a learned per-pixel exponent p."""

    bug = None

    @staticmethod
    def forward(ctx, normal, half, shininess):
        norm = normal.norm(dim=-1, keepdim=True)
        nhat = normal / norm
        cosine = (nhat * half).sum(-1).clamp_min(0)
        out = cosine.pow(shininess)
        ctx.nhat, ctx.norm, ctx.cosine = nhat, norm, cosine
        ctx.save_for_backward(half, shininess, out)
        return out

    @staticmethod
    def backward(ctx, grad_out):
        half, shininess, out = ctx.saved_tensors
        nhat, norm, cosine = ctx.nhat, ctx.norm, ctx.cosine
        dc = grad_out * shininess * cosine.pow(shininess - 1) * (cosine > 0)
        grad_nhat = dc[:, None] * half
        grad_normal = (grad_nhat - nhat * (nhat * grad_nhat).sum(-1, keepdim=True)) / norm
        grad_half = dc[:, None] * nhat
        grad_shininess = grad_out * out * torch.log(cosine)
        return grad_normal, grad_half, grad_shininess

    @staticmethod
    def example_inputs():
        return _phong_inputs(66)


class OverseasBlinnPhongLogOfOutput(torch.autograd.Function):
    bug = {"kind": "wrong_variable", "input": "shininess",
           "note": "d(c^p)/dp = c^p log c, but the log is taken of the output c^p instead of the cosine c"}

    @staticmethod
    def forward(ctx, normal, half, shininess):
        norm = normal.norm(dim=-1, keepdim=True)
        nhat = normal / norm
        cosine = (nhat * half).sum(-1).clamp_min(0)
        out = cosine.pow(shininess)
        ctx.nhat, ctx.norm, ctx.cosine = nhat, norm, cosine
        ctx.save_for_backward(half, shininess, out)
        return out

    @staticmethod
    def backward(ctx, grad_out):
        half, shininess, out = ctx.saved_tensors
        nhat, norm, cosine = ctx.nhat, ctx.norm, ctx.cosine
        dc = grad_out * shininess * cosine.pow(shininess - 1) * (cosine > 0)
        grad_nhat = dc[:, None] * half
        grad_normal = (grad_nhat - nhat * (nhat * grad_nhat).sum(-1, keepdim=True)) / norm
        grad_half = dc[:, None] * nhat
        grad_shininess = grad_out * out * torch.log(out)  # BUG
        return grad_normal, grad_half, grad_shininess

    @staticmethod
    def example_inputs():
        return _phong_inputs(67)


class OverseasBlinnPhongPowInPlace(torch.autograd.Function):
    """Raises the saved cosine to the power in place to save an allocation."""

    bug = {"kind": "inplace", "input": "shininess",
           "note": "cosine is kept on ctx and then pow_'d in place, so backward reads c^p where it needs c"}

    @staticmethod
    def forward(ctx, normal, half, shininess):
        norm = normal.norm(dim=-1, keepdim=True)
        nhat = normal / norm
        cosine = (nhat * half).sum(-1).clamp_min(0)
        ctx.nhat, ctx.norm, ctx.cosine = nhat, norm, cosine
        ctx.save_for_backward(half, shininess)
        out = cosine.pow_(shininess)  # BUG
        ctx.out = out
        return out

    @staticmethod
    def backward(ctx, grad_out):
        half, shininess = ctx.saved_tensors
        nhat, norm, cosine, out = ctx.nhat, ctx.norm, ctx.cosine, ctx.out
        dc = grad_out * shininess * cosine.pow(shininess - 1) * (cosine > 0)
        grad_nhat = dc[:, None] * half
        grad_normal = (grad_nhat - nhat * (nhat * grad_nhat).sum(-1, keepdim=True)) / norm
        grad_half = dc[:, None] * nhat
        grad_shininess = grad_out * out * torch.log(cosine)
        return grad_normal, grad_half, grad_shininess

    @staticmethod
    def example_inputs():
        return _phong_inputs(68)
