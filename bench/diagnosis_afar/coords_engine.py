import gradcli as torch
import math

# Coordinate transforms by hand on gradcli's engine: polar to Cartesian, Cartesian to polar
# (hypot + atan2) and spherical to Cartesian; the outputs stack the coordinates on the last dim.


def _polar_inputs():
    g = torch.Generator().manual_seed(601)
    r = torch.rand(3, 4, dtype=torch.float64, generator=g) + 0.5
    theta = (torch.rand(3, 4, dtype=torch.float64, generator=g) * 2 - 1) * math.pi
    return r.requires_grad_(), theta.requires_grad_()


class AfarPolarToCartesian(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, r, theta):
        c, s = torch.cos(theta), torch.sin(theta)
        ctx.save_for_backward(r, c, s)
        return torch.stack([r * c, r * s], dim=-1)

    @staticmethod
    def backward(ctx, grad_out):
        r, c, s = ctx.saved_tensors
        gx, gy = grad_out[..., 0], grad_out[..., 1]
        return gx * c + gy * s, r * (gy * c - gx * s)

    @staticmethod
    def example_inputs():
        return _polar_inputs()


class AfarPolarToCartesianSinSign(torch.autograd.Function):
    bug = {"kind": "term_sign", "input": "theta",
           "note": "d(r cos theta)/d theta is taken as +r sin theta, so the x term of the angle gradient has the wrong sign"}

    @staticmethod
    def forward(ctx, r, theta):
        c, s = torch.cos(theta), torch.sin(theta)
        ctx.save_for_backward(r, c, s)
        return torch.stack([r * c, r * s], dim=-1)

    @staticmethod
    def backward(ctx, grad_out):
        r, c, s = ctx.saved_tensors
        gx, gy = grad_out[..., 0], grad_out[..., 1]
        grad_theta = r * (gy * c + gx * s)  # BUG
        return gx * c + gy * s, grad_theta

    @staticmethod
    def example_inputs():
        return _polar_inputs()


class AfarPolarToCartesianReturnOrder(torch.autograd.Function):
    bug = {"kind": "swapped", "input": "r",
           "note": "the angle's gradient is returned first and the radius's second"}

    @staticmethod
    def forward(ctx, r, theta):
        c, s = torch.cos(theta), torch.sin(theta)
        ctx.save_for_backward(r, c, s)
        return torch.stack([r * c, r * s], dim=-1)

    @staticmethod
    def backward(ctx, grad_out):
        r, c, s = ctx.saved_tensors
        gx, gy = grad_out[..., 0], grad_out[..., 1]
        grad_r = gx * c + gy * s
        grad_theta = r * (gy * c - gx * s)
        return grad_theta, grad_r  # BUG

    @staticmethod
    def example_inputs():
        return _polar_inputs()


# ------------------------------------------------------------------- Cartesian to polar
def _cartesian_inputs():
    g = torch.Generator().manual_seed(602)
    mag = torch.rand(3, 4, dtype=torch.float64, generator=g) + 0.6
    ang = (torch.rand(3, 4, dtype=torch.float64, generator=g) * 2 - 1) * 2.8
    return (mag * torch.cos(ang)).requires_grad_(), (mag * torch.sin(ang)).requires_grad_()


class AfarCartesianToPolar(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, y):
        r = torch.hypot(x, y)
        theta = torch.atan2(y, x)
        ctx.save_for_backward(x, y, r)
        return torch.stack([r, theta], dim=-1)

    @staticmethod
    def backward(ctx, grad_out):
        x, y, r = ctx.saved_tensors
        gr, gt = grad_out[..., 0], grad_out[..., 1]
        r2 = r * r
        return gr * x / r - gt * y / r2, gr * y / r + gt * x / r2

    @staticmethod
    def example_inputs():
        return _cartesian_inputs()


class AfarCartesianToPolarRadiusOnly(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "x",
           "note": "x's gradient keeps the radius term and forgets the angle term -g_theta * y / r^2"}

    @staticmethod
    def forward(ctx, x, y):
        r = torch.hypot(x, y)
        theta = torch.atan2(y, x)
        ctx.save_for_backward(x, y, r)
        return torch.stack([r, theta], dim=-1)

    @staticmethod
    def backward(ctx, grad_out):
        x, y, r = ctx.saved_tensors
        gr, gt = grad_out[..., 0], grad_out[..., 1]
        r2 = r * r
        grad_x = gr * x / r  # BUG
        return grad_x, gr * y / r + gt * x / r2

    @staticmethod
    def example_inputs():
        return _cartesian_inputs()


class AfarCartesianToPolarAtanNoChain(torch.autograd.Function):
    bug = {"kind": "none", "input": "x",
           "note": "the angle term of x's gradient is written 1 / (1 + (y / x)^2), the derivative of atan at y / x without its inner derivative -y / x^2"}

    @staticmethod
    def forward(ctx, x, y):
        r = torch.hypot(x, y)
        theta = torch.atan2(y, x)
        ctx.save_for_backward(x, y, r)
        return torch.stack([r, theta], dim=-1)

    @staticmethod
    def backward(ctx, grad_out):
        x, y, r = ctx.saved_tensors
        gr, gt = grad_out[..., 0], grad_out[..., 1]
        r2 = r * r
        grad_x = gr * x / r + gt / (1 + (y / x) ** 2)  # BUG
        return grad_x, gr * y / r + gt * x / r2

    @staticmethod
    def example_inputs():
        return _cartesian_inputs()


# ---------------------------------------------------------------- spherical to Cartesian
def _spherical_inputs():
    g = torch.Generator().manual_seed(603)
    r = torch.rand(2, 3, dtype=torch.float64, generator=g) + 0.5
    theta = torch.rand(2, 3, dtype=torch.float64, generator=g) * 2.4 + 0.3
    phi = (torch.rand(2, 3, dtype=torch.float64, generator=g) * 2 - 1) * math.pi
    return r.requires_grad_(), theta.requires_grad_(), phi.requires_grad_()


class AfarSphericalToCartesian(torch.autograd.Function):
    """(r, polar angle theta, azimuth phi) -> (x, y, z)."""

    bug = None

    @staticmethod
    def forward(ctx, r, theta, phi):
        st, ct = torch.sin(theta), torch.cos(theta)
        sp, cp = torch.sin(phi), torch.cos(phi)
        ctx.save_for_backward(r, st, ct, sp, cp)
        y = r * st * sp
        z = r * ct
        x = r * st * cp
        return torch.stack([x, y, z], dim=-1)

    @staticmethod
    def backward(ctx, grad_out):
        r, st, ct, sp, cp = ctx.saved_tensors
        gx, gy, gz = grad_out[..., 0], grad_out[..., 1], grad_out[..., 2]
        grad_r = gx * st * cp + gy * st * sp + gz * ct
        grad_theta = r * (gx * ct * cp + gy * ct * sp - gz * st)
        grad_phi = r * st * (gy * cp - gx * sp)
        return grad_r, grad_theta, grad_phi

    @staticmethod
    def example_inputs():
        return _spherical_inputs()


class AfarSphericalToCartesianReusedSine(torch.autograd.Function):
    bug = {"kind": "inplace", "input": "theta",
           "note": "x is computed with st.mul_(cp) to save a buffer, which overwrites the saved sin(theta) with sin(theta) cos(phi)"}

    @staticmethod
    def forward(ctx, r, theta, phi):
        st, ct = torch.sin(theta), torch.cos(theta)
        sp, cp = torch.sin(phi), torch.cos(phi)
        ctx.save_for_backward(r, st, ct, sp, cp)
        y = r * st * sp
        z = r * ct
        x = r * st.mul_(cp)  # BUG
        return torch.stack([x, y, z], dim=-1)

    @staticmethod
    def backward(ctx, grad_out):
        r, st, ct, sp, cp = ctx.saved_tensors
        gx, gy, gz = grad_out[..., 0], grad_out[..., 1], grad_out[..., 2]
        grad_r = gx * st * cp + gy * st * sp + gz * ct
        grad_theta = r * (gx * ct * cp + gy * ct * sp - gz * st)
        grad_phi = r * st * (gy * cp - gx * sp)
        return grad_r, grad_theta, grad_phi

    @staticmethod
    def example_inputs():
        return _spherical_inputs()
