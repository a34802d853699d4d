"""Paraxial lens optics: the thin-lens equation 1/f = 1/d_o + 1/d_i for K lenses (f of shape (K,))
each imaging N object distances (d_o of shape (K, N)), with image distance and magnification as
two outputs; and an ABCD ray-transfer system, K (propagate d_k, then thin lens f_k) elements
applied to N rays (height, angle)."""
import torch


def _lens_inputs():
    gen = torch.Generator().manual_seed(71)
    f = torch.rand(4, generator=gen, dtype=torch.float64) + 0.5
    d_o = f[:, None] + torch.rand(4, 4, generator=gen, dtype=torch.float64) * 2 + 0.5   # K = N = 4
    return d_o, f


def _lens_forward(ctx, d_o, f):
    fk = f[:, None]
    gap = d_o - fk
    ctx.save_for_backward(d_o, fk, gap)
    return fk * d_o / gap, -fk / gap


class OffshoreThinLens(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, d_o, f):
        return _lens_forward(ctx, d_o, f)

    @staticmethod
    def backward(ctx, grad_image, grad_mag):
        d_o, fk, gap = ctx.saved_tensors
        grad_do = (-grad_image * fk ** 2 + grad_mag * fk) / gap ** 2
        grad_f = ((grad_image * d_o ** 2 - grad_mag * d_o) / gap ** 2).sum(dim=1)
        return grad_do, grad_f

    @staticmethod
    def example_inputs():
        return _lens_inputs()


class OffshoreThinLensFocalZero(torch.autograd.Function):
    bug = {"kind": "zero", "input": "f",
           "note": "the focal lengths are treated as fixed optics: their gradient is returned as zeros"}

    @staticmethod
    def forward(ctx, d_o, f):
        return _lens_forward(ctx, d_o, f)

    @staticmethod
    def backward(ctx, grad_image, grad_mag):
        d_o, fk, gap = ctx.saved_tensors
        grad_do = (-grad_image * fk ** 2 + grad_mag * fk) / gap ** 2
        grad_f = torch.zeros(fk.shape[0], dtype=d_o.dtype)  # BUG
        return grad_do, grad_f

    @staticmethod
    def example_inputs():
        return _lens_inputs()


class OffshoreThinLensFocalNotReduced(torch.autograd.Function):
    bug = {"kind": "not_reduced", "input": "f",
           "note": "f's gradient is left (K, N), not summed over each lens's objects; torch reduces the (K,) "
                   "broadcast over the leading axis instead (K = N), so the values are wrong"}

    @staticmethod
    def forward(ctx, d_o, f):
        return _lens_forward(ctx, d_o, f)

    @staticmethod
    def backward(ctx, grad_image, grad_mag):
        d_o, fk, gap = ctx.saved_tensors
        grad_do = (-grad_image * fk ** 2 + grad_mag * fk) / gap ** 2
        grad_f = (grad_image * d_o ** 2 - grad_mag * d_o) / gap ** 2  # BUG
        return grad_do, grad_f

    @staticmethod
    def example_inputs():
        return _lens_inputs()


def _abcd_inputs():
    gen = torch.Generator().manual_seed(73)
    rays = torch.randn(5, 2, generator=gen, dtype=torch.float64)
    d = torch.rand(3, generator=gen, dtype=torch.float64) * 1.5 + 0.5
    f = torch.tensor([1.5, -2.0, 2.5], dtype=torch.float64)
    return rays, d, f


def _element(d, f):
    """Propagate by d, then a thin lens of focal length f: [[1, d], [-1/f, 1 - d/f]]."""
    return torch.stack([torch.stack([torch.ones_like(d), d]),
                        torch.stack([-1 / f, 1 - d / f])])


def _element_grads(G, d, f):
    """d and f gradients of one element from the gradient G (2x2) of its matrix."""
    return G[0, 1] - G[1, 1] / f, (G[1, 0] + G[1, 1] * d) / f ** 2


class OffshoreABCDSystem(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, rays, d, f):
        M = torch.eye(2, dtype=rays.dtype)
        prefix = []
        for k in range(d.shape[0]):
            prefix.append(M)
            M = _element(d[k], f[k]) @ M
        ctx.prefix = prefix
        ctx.save_for_backward(rays, d, f, M)
        return rays @ M.T

    @staticmethod
    def backward(ctx, grad_out):
        rays, d, f, M = ctx.saved_tensors
        GM = grad_out.T @ rays
        K = d.shape[0]
        gd, gf = [None] * K, [None] * K
        suffix = torch.eye(2, dtype=rays.dtype)
        for k in reversed(range(K)):
            G = suffix.T @ GM @ ctx.prefix[k].T
            gd[k], gf[k] = _element_grads(G, d[k], f[k])
            suffix = suffix @ _element(d[k], f[k])
        return grad_out @ M, torch.stack(gd), torch.stack(gf)

    @staticmethod
    def example_inputs():
        return _abcd_inputs()


class OffshoreABCDSystemEinsum(torch.autograd.Function):
    """The same system; matrix gradients by einsum, prefix products saved as one stacked tensor."""

    bug = None

    @staticmethod
    def forward(ctx, rays, d, f):
        M = torch.eye(2, dtype=rays.dtype)
        prefix = []
        for k in range(d.shape[0]):
            prefix.append(M)
            M = _element(d[k], f[k]) @ M
        ctx.save_for_backward(rays, d, f, M, torch.stack(prefix))
        return torch.einsum("ij,nj->ni", M, rays)

    @staticmethod
    def backward(ctx, grad_out):
        rays, d, f, M, prefix = ctx.saved_tensors
        GM = torch.einsum("ni,nj->ij", grad_out, rays)
        K = d.shape[0]
        gd = torch.zeros_like(d)
        gf = torch.zeros_like(f)
        suffix = torch.eye(2, dtype=rays.dtype)
        for k in reversed(range(K)):
            G = torch.einsum("ai,ab,jb->ij", suffix, GM, prefix[k])
            gd[k], gf[k] = _element_grads(G, d[k], f[k])
            suffix = suffix @ _element(d[k], f[k])
        return torch.einsum("ni,ij->nj", grad_out, M), gd, gf

    @staticmethod
    def example_inputs():
        return _abcd_inputs()


class OffshoreABCDRunningProduct(torch.autograd.Function):
    bug = {"kind": "inplace", "input": "d",
           "note": "the running product is updated in place (copy_), so every prefix kept on ctx is the same "
                   "tensor, the full system; d's and f's gradients are wrong"}

    @staticmethod
    def forward(ctx, rays, d, f):
        M = torch.eye(2, dtype=rays.dtype)
        prefix = []
        for k in range(d.shape[0]):
            prefix.append(M)
            M.copy_(_element(d[k], f[k]) @ M)  # BUG
        ctx.prefix = prefix
        ctx.save_for_backward(rays, d, f)
        ctx.system = M
        return rays @ M.T

    @staticmethod
    def backward(ctx, grad_out):
        rays, d, f = ctx.saved_tensors
        M = ctx.system
        GM = grad_out.T @ rays
        K = d.shape[0]
        gd, gf = [None] * K, [None] * K
        suffix = torch.eye(2, dtype=rays.dtype)
        for k in reversed(range(K)):
            G = suffix.T @ GM @ ctx.prefix[k].T
            gd[k], gf[k] = _element_grads(G, d[k], f[k])
            suffix = suffix @ _element(d[k], f[k])
        return grad_out @ M, torch.stack(gd), torch.stack(gf)

    @staticmethod
    def example_inputs():
        return _abcd_inputs()


class OffshoreABCDLensGuess(torch.autograd.Function):
    bug = {"kind": "none", "input": "f",
           "note": "each focal length's gradient guessed as if its lens were alone on the ray: "
                   "-sum(g_angle * height) / f^2, no propagation or other elements"}

    @staticmethod
    def forward(ctx, rays, d, f):
        M = torch.eye(2, dtype=rays.dtype)
        prefix = []
        for k in range(d.shape[0]):
            prefix.append(M)
            M = _element(d[k], f[k]) @ M
        ctx.prefix = prefix
        ctx.save_for_backward(rays, d, f, M)
        return rays @ M.T

    @staticmethod
    def backward(ctx, grad_out):
        rays, d, f, M = ctx.saved_tensors
        GM = grad_out.T @ rays
        K = d.shape[0]
        gd = [None] * K
        suffix = torch.eye(2, dtype=rays.dtype)
        for k in reversed(range(K)):
            G = suffix.T @ GM @ ctx.prefix[k].T
            gd[k] = G[0, 1] - G[1, 1] / f[k]
            suffix = suffix @ _element(d[k], f[k])
        grad_f = -(grad_out[:, 1] * rays[:, 0]).sum() / f ** 2  # BUG
        return grad_out @ M, torch.stack(gd), grad_f

    @staticmethod
    def example_inputs():
        return _abcd_inputs()
