"""Spherical-harmonics irradiance from learned RGB coefficients, degree 1 (4 terms) and degree 2
(9 terms), in the usual real-SH order (1, y, z, x, xy, yz, 3z^2 - 1, xz, x^2 - y^2)."""
import torch

C0, C1, C2, C3, C4 = 0.282095, 0.488603, 1.092548, 0.315392, 0.546274


def _sh_inputs(seed, terms):
    gen = torch.Generator().manual_seed(seed)
    coeffs = torch.randn(terms, 3, dtype=torch.float64, generator=gen)
    normal = torch.randn(5, 3, dtype=torch.float64, generator=gen)
    return coeffs, normal / normal.norm(dim=-1, keepdim=True)


def _basis1(normal):
    x, y, z = normal.unbind(-1)
    return torch.stack([torch.full_like(x, C0), C1 * y, C1 * z, C1 * x], dim=-1)


def _deg1_forward(ctx, coeffs, normal):
    basis = _basis1(normal)
    ctx.save_for_backward(coeffs, basis)
    return basis @ coeffs


class OverseasSHDegree1(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, coeffs, normal):
        return _deg1_forward(ctx, coeffs, normal)

    @staticmethod
    def backward(ctx, grad_out):
        coeffs, basis = ctx.saved_tensors
        grad_coeffs = basis.mT @ grad_out
        g_basis = grad_out @ coeffs.mT                      # (P, 4) in (1, y, z, x) order
        grad_normal = C1 * torch.stack([g_basis[:, 3], g_basis[:, 1], g_basis[:, 2]], dim=-1)
        return grad_coeffs, grad_normal

    @staticmethod
    def example_inputs():
        return _sh_inputs(71, 4)


class OverseasSHDegree1XYZOrder(torch.autograd.Function):
    bug = {"kind": "missing_reshape", "input": "normal",
           "note": "the basis is stored (y, z, x) but its gradient is read back as (x, y, z): the permutation is not undone"}

    @staticmethod
    def forward(ctx, coeffs, normal):
        return _deg1_forward(ctx, coeffs, normal)

    @staticmethod
    def backward(ctx, grad_out):
        coeffs, basis = ctx.saved_tensors
        grad_coeffs = basis.mT @ grad_out
        g_basis = grad_out @ coeffs.mT
        grad_normal = C1 * g_basis[:, 1:]  # BUG
        return grad_coeffs, grad_normal

    @staticmethod
    def example_inputs():
        return _sh_inputs(72, 4)


class OverseasSHDegree1NoBandConstant(torch.autograd.Function):
    bug = {"kind": "scale", "input": "normal",
           "note": "the band-1 constant C1 = 0.4886 of the basis is forgotten in the normal's gradient"}

    @staticmethod
    def forward(ctx, coeffs, normal):
        return _deg1_forward(ctx, coeffs, normal)

    @staticmethod
    def backward(ctx, grad_out):
        coeffs, basis = ctx.saved_tensors
        grad_coeffs = basis.mT @ grad_out
        g_basis = grad_out @ coeffs.mT
        grad_normal = torch.stack([g_basis[:, 3], g_basis[:, 1], g_basis[:, 2]], dim=-1)  # BUG
        return grad_coeffs, grad_normal

    @staticmethod
    def example_inputs():
        return _sh_inputs(73, 4)


def _basis2(normal):
    x, y, z = normal.unbind(-1)
    return torch.stack([torch.full_like(x, C0), C1 * y, C1 * z, C1 * x, C2 * x * y, C2 * y * z,
                        C3 * (3 * z * z - 1), C2 * x * z, C4 * (x * x - y * y)], dim=-1)


def _deg2_forward(ctx, coeffs, normal):
    basis = _basis2(normal)
    ctx.save_for_backward(coeffs, normal, basis)
    return torch.einsum("pk,kc->pc", basis, coeffs)


class OverseasSHDegree2(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, coeffs, normal):
        return _deg2_forward(ctx, coeffs, normal)

    @staticmethod
    def backward(ctx, grad_out):
        coeffs, normal, basis = ctx.saved_tensors
        x, y, z = normal.unbind(-1)
        gb = torch.einsum("pc,kc->pk", grad_out, coeffs)
        grad_coeffs = torch.einsum("pk,pc->kc", basis, grad_out)
        gx = C1 * gb[:, 3] + C2 * y * gb[:, 4] + C2 * z * gb[:, 7] + 2 * C4 * x * gb[:, 8]
        gy = C1 * gb[:, 1] + C2 * x * gb[:, 4] + C2 * z * gb[:, 5] - 2 * C4 * y * gb[:, 8]
        gz = C1 * gb[:, 2] + C2 * y * gb[:, 5] + 6 * C3 * z * gb[:, 6] + C2 * x * gb[:, 7]
        return grad_coeffs, torch.stack([gx, gy, gz], dim=-1)

    @staticmethod
    def example_inputs():
        return _sh_inputs(74, 9)


class OverseasSHDegree2HalfProduct(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "normal",
           "note": "the xy basis term is differentiated only for x: its x * g contribution to dy is left out"}

    @staticmethod
    def forward(ctx, coeffs, normal):
        return _deg2_forward(ctx, coeffs, normal)

    @staticmethod
    def backward(ctx, grad_out):
        coeffs, normal, basis = ctx.saved_tensors
        x, y, z = normal.unbind(-1)
        gb = torch.einsum("pc,kc->pk", grad_out, coeffs)
        grad_coeffs = torch.einsum("pk,pc->kc", basis, grad_out)
        gx = C1 * gb[:, 3] + C2 * y * gb[:, 4] + C2 * z * gb[:, 7] + 2 * C4 * x * gb[:, 8]
        gy = C1 * gb[:, 1] + C2 * z * gb[:, 5] - 2 * C4 * y * gb[:, 8]  # BUG
        gz = C1 * gb[:, 2] + C2 * y * gb[:, 5] + 6 * C3 * z * gb[:, 6] + C2 * x * gb[:, 7]
        return grad_coeffs, torch.stack([gx, gy, gz], dim=-1)

    @staticmethod
    def example_inputs():
        return _sh_inputs(75, 9)


class OverseasSHDegree2MinusYSquared(torch.autograd.Function):
    bug = {"kind": "term_sign", "input": "normal",
           "note": "d(x^2 - y^2)/dy = -2y, but the term is added with a plus in dy"}

    @staticmethod
    def forward(ctx, coeffs, normal):
        return _deg2_forward(ctx, coeffs, normal)

    @staticmethod
    def backward(ctx, grad_out):
        coeffs, normal, basis = ctx.saved_tensors
        x, y, z = normal.unbind(-1)
        gb = torch.einsum("pc,kc->pk", grad_out, coeffs)
        grad_coeffs = torch.einsum("pk,pc->kc", basis, grad_out)
        gx = C1 * gb[:, 3] + C2 * y * gb[:, 4] + C2 * z * gb[:, 7] + 2 * C4 * x * gb[:, 8]
        gy = C1 * gb[:, 1] + C2 * x * gb[:, 4] + C2 * z * gb[:, 5] + 2 * C4 * y * gb[:, 8]  # BUG
        gz = C1 * gb[:, 2] + C2 * y * gb[:, 5] + 6 * C3 * z * gb[:, 6] + C2 * x * gb[:, 7]
        return grad_coeffs, torch.stack([gx, gy, gz], dim=-1)

    @staticmethod
    def example_inputs():
        return _sh_inputs(76, 9)
