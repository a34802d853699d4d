"""Physics energies: a chain of springs, pairwise Coulomb with a hard cutoff, Lennard-Jones."""
import torch

CUTOFF = 2.5


def _pair_geometry(pos):
    diff = pos[:, None, :] - pos[None, :, :]
    n = pos.shape[0]
    off = ~torch.eye(n, dtype=torch.bool)
    r = torch.where(off, diff.norm(dim=-1), torch.ones(n, n, dtype=pos.dtype))
    return diff, r, off


def _chain_inputs():
    pos = torch.tensor([[0.0, 0.0], [1.3, 0.2], [2.1, 1.1], [2.4, 2.5]], dtype=torch.float64)
    return (pos.requires_grad_(),)


class WithheldSpringChainEnergy(torch.autograd.Function):
    """E = k/2 * sum_i (|x_{i+1} - x_i| - L)^2, k = 2, L = 1."""
    bug = None

    @staticmethod
    def forward(ctx, pos):
        bond = pos[1:] - pos[:-1]
        length = bond.norm(dim=1, keepdim=True)
        ctx.save_for_backward(bond, length)
        return (length - 1.0).pow(2).sum()

    @staticmethod
    def backward(ctx, grad_out):
        bond, length = ctx.saved_tensors
        force = 2.0 * (length - 1.0) * bond / length
        grad = torch.zeros(bond.shape[0] + 1, bond.shape[1], dtype=bond.dtype)
        grad[1:] += force
        grad[:-1] -= force
        return grad_out * grad


class WithheldSpringChainForceSign(torch.autograd.Function):
    bug = {"kind": "sign", "input": "pos",
           "note": "returns the force (minus the energy gradient) as the gradient"}

    @staticmethod
    def forward(ctx, pos):
        bond = pos[1:] - pos[:-1]
        length = bond.norm(dim=1, keepdim=True)
        ctx.save_for_backward(bond, length)
        return (length - 1.0).pow(2).sum()

    @staticmethod
    def backward(ctx, grad_out):
        bond, length = ctx.saved_tensors
        force = -2.0 * (length - 1.0) * bond / length  # BUG
        grad = torch.zeros(bond.shape[0] + 1, bond.shape[1], dtype=bond.dtype)
        grad[1:] += force
        grad[:-1] -= force
        return grad_out * grad


def _coulomb_inputs():
    pos = torch.tensor([[0.0, 0.0, 0.0], [1.1, 0.3, -0.2], [0.4, 1.6, 0.5],
                        [2.9, 1.2, 0.8], [-0.9, -1.3, 1.0]], dtype=torch.float64)
    charge = torch.tensor([1.0, -0.8, 0.6, -1.2, 0.9], dtype=torch.float64)
    return pos.requires_grad_(), charge.requires_grad_()


class WithheldCoulombCutoff(torch.autograd.Function):
    """E = sum over pairs with r < 2.5 of q_i q_j / r_ij."""
    bug = None

    @staticmethod
    def forward(ctx, pos, charge):
        diff, r, off = _pair_geometry(pos)
        inside = off & (r < CUTOFF)
        qq = charge[:, None] * charge[None, :]
        ctx.save_for_backward(diff, r, inside, qq, charge)
        return 0.5 * (qq / r * inside).sum()

    @staticmethod
    def backward(ctx, grad_out):
        diff, r, inside, qq, charge = ctx.saved_tensors
        du_dr = -qq / r.pow(2) * inside
        grad_pos = (du_dr / r)[..., None].mul(diff).sum(1)
        grad_q = (charge[None, :] / r * inside).sum(1)
        return grad_out * grad_pos, grad_out * grad_q

    @staticmethod
    def example_inputs():
        return _coulomb_inputs()


class WithheldCoulombCutoffForcesUncut(torch.autograd.Function):
    bug = {"kind": "region", "input": "pos",
           "note": "the energy is cut at r = 2.5 but the position gradient sums over every pair"}

    @staticmethod
    def forward(ctx, pos, charge):
        diff, r, off = _pair_geometry(pos)
        inside = off & (r < CUTOFF)
        qq = charge[:, None] * charge[None, :]
        ctx.save_for_backward(diff, r, inside, qq, charge, off)
        return 0.5 * (qq / r * inside).sum()

    @staticmethod
    def backward(ctx, grad_out):
        diff, r, inside, qq, charge, off = ctx.saved_tensors
        du_dr = -qq / r.pow(2) * off  # BUG
        grad_pos = (du_dr / r)[..., None].mul(diff).sum(1)
        grad_q = (charge[None, :] / r * inside).sum(1)
        return grad_out * grad_pos, grad_out * grad_q

    @staticmethod
    def example_inputs():
        return _coulomb_inputs()


def _lj_inputs():
    pos = torch.tensor([[0.0, 0.0, 0.0], [1.15, 0.1, 0.0], [0.2, 1.25, -0.1],
                        [1.0, 1.1, 1.05]], dtype=torch.float64)
    return (pos.requires_grad_(),)


def _lj_parts(pos):
    diff, r, off = _pair_geometry(pos)
    inv6 = r.pow(-6) * off
    return diff, r, inv6


class WithheldLennardJones(torch.autograd.Function):
    """E = sum over pairs of 4 ((1/r)^12 - (1/r)^6), sigma = epsilon = 1."""
    bug = None

    @staticmethod
    def forward(ctx, pos):
        diff, r, inv6 = _lj_parts(pos)
        ctx.save_for_backward(diff, r, inv6)
        return 2.0 * (inv6 * inv6 - inv6).sum()

    @staticmethod
    def backward(ctx, grad_out):
        diff, r, inv6 = ctx.saved_tensors
        du_dr = 4.0 * (-12.0 * inv6 * inv6 + 6.0 * inv6) / r
        return grad_out * ((du_dr / r)[..., None] * diff).sum(1)

    @staticmethod
    def example_inputs():
        return _lj_inputs()


class WithheldLennardJonesRepulsionSign(torch.autograd.Function):
    bug = {"kind": "term_sign", "input": "pos",
           "note": "the r^-12 repulsion's derivative is written +12 r^-13 instead of -12 r^-13"}

    @staticmethod
    def forward(ctx, pos):
        diff, r, inv6 = _lj_parts(pos)
        ctx.save_for_backward(diff, r, inv6)
        return 2.0 * (inv6 * inv6 - inv6).sum()

    @staticmethod
    def backward(ctx, grad_out):
        diff, r, inv6 = ctx.saved_tensors
        du_dr = 4.0 * (12.0 * inv6 * inv6 + 6.0 * inv6) / r  # BUG
        return grad_out * ((du_dr / r)[..., None] * diff).sum(1)

    @staticmethod
    def example_inputs():
        return _lj_inputs()


class WithheldLennardJonesHarmonicForce(torch.autograd.Function):
    bug = {"kind": "none", "input": "pos",
           "note": "the backward is a harmonic bond's, 2 (r - 2^(1/6)), not the Lennard-Jones derivative"}

    @staticmethod
    def forward(ctx, pos):
        diff, r, inv6 = _lj_parts(pos)
        ctx.save_for_backward(diff, r, inv6)
        return 2.0 * (inv6 * inv6 - inv6).sum()

    @staticmethod
    def backward(ctx, grad_out):
        diff, r, inv6 = ctx.saved_tensors
        du_dr = 2.0 * (r - 2.0 ** (1 / 6)) * (inv6 != 0)  # BUG
        return grad_out * ((du_dr / r)[..., None] * diff).sum(1)

    @staticmethod
    def example_inputs():
        return _lj_inputs()
