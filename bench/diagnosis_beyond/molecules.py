"""Pair potentials and bonded terms over integer index lists with repeats: Lennard-Jones with a
cutoff, softened Coulomb with learned charges, harmonic bonds with learned constants and rest
lengths, and a normal-mode (Hessian) energy of the flattened coordinates."""
import torch

RC = 1.5  # Lennard-Jones cutoff
SOFT = 0.5  # Coulomb softening length


def _positions():
    base = torch.tensor([[0.0, 0.0, 0.0], [1.15, 0.0, 0.0], [0.0, 1.3, 0.0],
                         [1.1, 1.2, 0.1], [0.6, 0.5, 1.05]], dtype=torch.float64)
    gen = torch.Generator().manual_seed(71)
    return base + 0.03 * torch.randn(5, 3, dtype=torch.float64, generator=gen)


PAIRS = torch.tensor([[0, 1], [0, 2], [1, 3], [2, 3], [0, 4], [1, 4], [3, 4], [0, 3], [0, 1], [2, 4]],
                     dtype=torch.int64)  # (0, 1) twice: a repeated pair


def _lj_inputs():
    return _positions().requires_grad_(), PAIRS.clone()


def _lj_energy(pos, pairs):
    i, j = pairs[:, 0], pairs[:, 1]
    d = pos[i] - pos[j]
    r2 = (d * d).sum(dim=1)
    inside = r2 < RC * RC
    inv6 = r2 ** -3
    return d, r2, inside, torch.where(inside, 4 * (inv6 * inv6 - inv6), torch.zeros_like(r2))


# ------------------------------------------------------------------------------ Lennard-Jones
class BeyondLennardJones(torch.autograd.Function):
    """Per-pair 4 (r^-12 - r^-6) inside the cutoff, zero outside; pairs (P, 2) of atom ids."""
    bug = None

    @staticmethod
    def forward(ctx, pos, pairs):
        d, r2, inside, energy = _lj_energy(pos, pairs)
        ctx.save_for_backward(pos, pairs, d, r2)
        return energy

    @staticmethod
    def backward(ctx, grad_out):
        pos, pairs, d, r2 = ctx.saved_tensors
        inv_r = r2.rsqrt()
        dE_dr = 4 * (-12 * inv_r ** 13 + 6 * inv_r ** 7)
        dE_dr = dE_dr.masked_fill(r2 >= RC * RC, 0.0)
        f = (grad_out * dE_dr * inv_r)[:, None] * d
        grad_pos = torch.zeros_like(pos)
        grad_pos.index_add_(0, pairs[:, 0], f)
        grad_pos.index_add_(0, pairs[:, 1], -f)
        return grad_pos, None

    @staticmethod
    def example_inputs():
        return _lj_inputs()


class BeyondLennardJonesInplacePow(torch.autograd.Function):
    bug = {"kind": "inplace", "input": "pos",
           "note": "1/r is kept on ctx and then raised to the sixth power in place (pow_), so backward reads r^-6 as 1/r"}

    @staticmethod
    def forward(ctx, pos, pairs):
        i, j = pairs[:, 0], pairs[:, 1]
        d = pos[i] - pos[j]
        r2 = (d * d).sum(dim=1)
        inv_r = r2.rsqrt()
        ctx.inv_r, ctx.d, ctx.pairs, ctx.shape = inv_r, d, pairs, pos.shape
        ctx.inside = r2 < RC * RC
        inv6 = inv_r.pow_(6)  # BUG
        return torch.where(ctx.inside, 4 * (inv6 * inv6 - inv6), torch.zeros_like(r2))

    @staticmethod
    def backward(ctx, grad_out):
        inv_r, d, pairs = ctx.inv_r, ctx.d, ctx.pairs
        dE_dr = 4 * (-12 * inv_r ** 13 + 6 * inv_r ** 7)
        dE_dr = dE_dr.masked_fill(~ctx.inside, 0.0)
        f = (grad_out * dE_dr * inv_r)[:, None] * d
        grad_pos = grad_out.new_zeros(ctx.shape)
        grad_pos.index_add_(0, pairs[:, 0], f)
        grad_pos.index_add_(0, pairs[:, 1], -f)
        return grad_pos, None

    @staticmethod
    def example_inputs():
        return _lj_inputs()


class BeyondLennardJonesDirection(torch.autograd.Function):
    bug = {"kind": "sign", "input": "pos",
           "note": "the pair direction is taken as r_j - r_i while d = r_i - r_j, so every force on every atom flips"}

    @staticmethod
    def forward(ctx, pos, pairs):
        d, r2, inside, energy = _lj_energy(pos, pairs)
        ctx.save_for_backward(pos, pairs, d, r2)
        return energy

    @staticmethod
    def backward(ctx, grad_out):
        pos, pairs, d, r2 = ctx.saved_tensors
        inv_r = r2.rsqrt()
        dE_dr = 4 * (-12 * inv_r ** 13 + 6 * inv_r ** 7)
        dE_dr = dE_dr.masked_fill(r2 >= RC * RC, 0.0)
        f = (grad_out * dE_dr * inv_r)[:, None] * (pos[pairs[:, 1]] - pos[pairs[:, 0]])  # BUG
        grad_pos = torch.zeros_like(pos)
        grad_pos.index_add_(0, pairs[:, 0], f)
        grad_pos.index_add_(0, pairs[:, 1], -f)
        return grad_pos, None

    @staticmethod
    def example_inputs():
        return _lj_inputs()


class BeyondLennardJonesNoReaction(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "pos",
           "note": "only the first atom of each pair receives its force; the equal and opposite term on the second atom is left out"}

    @staticmethod
    def forward(ctx, pos, pairs):
        d, r2, inside, energy = _lj_energy(pos, pairs)
        ctx.save_for_backward(pos, pairs, d, r2)
        return energy

    @staticmethod
    def backward(ctx, grad_out):
        pos, pairs, d, r2 = ctx.saved_tensors
        inv_r = r2.rsqrt()
        dE_dr = 4 * (-12 * inv_r ** 13 + 6 * inv_r ** 7)
        dE_dr = dE_dr.masked_fill(r2 >= RC * RC, 0.0)
        f = (grad_out * dE_dr * inv_r)[:, None] * d
        grad_pos = torch.zeros_like(pos).index_add_(0, pairs[:, 0], f)  # BUG
        return grad_pos, None

    @staticmethod
    def example_inputs():
        return _lj_inputs()


class BeyondLennardJonesCutoffSquared(torch.autograd.Function):
    bug = {"kind": "region", "input": "pos",
           "note": "backward compares the squared distance with the cutoff RC instead of RC^2, zeroing the force for pairs with RC < r^2 < RC^2"}

    @staticmethod
    def forward(ctx, pos, pairs):
        d, r2, inside, energy = _lj_energy(pos, pairs)
        ctx.save_for_backward(pos, pairs, d, r2)
        return energy

    @staticmethod
    def backward(ctx, grad_out):
        pos, pairs, d, r2 = ctx.saved_tensors
        inv_r = r2.rsqrt()
        dE_dr = 4 * (-12 * inv_r ** 13 + 6 * inv_r ** 7)
        dE_dr = dE_dr.masked_fill(r2 >= RC, 0.0)  # BUG
        f = (grad_out * dE_dr * inv_r)[:, None] * d
        grad_pos = torch.zeros_like(pos)
        grad_pos.index_add_(0, pairs[:, 0], f)
        grad_pos.index_add_(0, pairs[:, 1], -f)
        return grad_pos, None

    @staticmethod
    def example_inputs():
        return _lj_inputs()


class BeyondLennardJonesPowerSlip(torch.autograd.Function):
    bug = {"kind": "none", "input": "pos",
           "note": "dE/dr is written as 4 (-12 r^-11 + 6 r^-5), the power rule applied with the exponents lowered the wrong way"}

    @staticmethod
    def forward(ctx, pos, pairs):
        d, r2, inside, energy = _lj_energy(pos, pairs)
        ctx.save_for_backward(pos, pairs, d, r2)
        return energy

    @staticmethod
    def backward(ctx, grad_out):
        pos, pairs, d, r2 = ctx.saved_tensors
        inv_r = r2.rsqrt()
        dE_dr = 4 * (-12 * inv_r ** 11 + 6 * inv_r ** 5)  # BUG
        dE_dr = dE_dr.masked_fill(r2 >= RC * RC, 0.0)
        f = (grad_out * dE_dr * inv_r)[:, None] * d
        grad_pos = torch.zeros_like(pos)
        grad_pos.index_add_(0, pairs[:, 0], f)
        grad_pos.index_add_(0, pairs[:, 1], -f)
        return grad_pos, None

    @staticmethod
    def example_inputs():
        return _lj_inputs()


# ------------------------------------------------------------------------------ softened Coulomb
def _coulomb_inputs():
    gen = torch.Generator().manual_seed(72)
    q = torch.randn(5, dtype=torch.float64, generator=gen)
    return _positions().requires_grad_(), q.requires_grad_(), PAIRS.clone()


def _coulomb(ctx, pos, charges, pairs):
    i, j = pairs[:, 0], pairs[:, 1]
    d = pos[i] - pos[j]
    s = ((d * d).sum(dim=1) + SOFT ** 2).sqrt()
    ctx.save_for_backward(pos, charges, pairs, d, s)
    return charges[i] * charges[j] / s


class BeyondSoftCoulomb(torch.autograd.Function):
    """Per-pair q_i q_j / sqrt(r^2 + a^2) with learned charges."""
    bug = None

    @staticmethod
    def forward(ctx, pos, charges, pairs):
        return _coulomb(ctx, pos, charges, pairs)

    @staticmethod
    def backward(ctx, grad_out):
        pos, charges, pairs, d, s = ctx.saved_tensors
        i, j = pairs[:, 0], pairs[:, 1]
        qq = charges[i] * charges[j]
        f = (-grad_out * qq / s ** 3)[:, None] * d
        grad_pos = torch.zeros_like(pos).index_add_(0, i, f).index_add_(0, j, -f)
        grad_q = torch.zeros_like(charges)
        grad_q.scatter_add_(0, i, grad_out * charges[j] / s)
        grad_q.scatter_add_(0, j, grad_out * charges[i] / s)
        return grad_pos, grad_q, None

    @staticmethod
    def example_inputs():
        return _coulomb_inputs()


class BeyondSoftCoulombOwnCharge(torch.autograd.Function):
    bug = {"kind": "wrong_variable", "input": "charges",
           "note": "the charge gradient of atom i is weighted by its own charge q_i instead of its partner's q_j"}

    @staticmethod
    def forward(ctx, pos, charges, pairs):
        return _coulomb(ctx, pos, charges, pairs)

    @staticmethod
    def backward(ctx, grad_out):
        pos, charges, pairs, d, s = ctx.saved_tensors
        i, j = pairs[:, 0], pairs[:, 1]
        qq = charges[i] * charges[j]
        f = (-grad_out * qq / s ** 3)[:, None] * d
        grad_pos = torch.zeros_like(pos).index_add_(0, i, f).index_add_(0, j, -f)
        grad_q = torch.zeros_like(charges)
        grad_q.scatter_add_(0, i, grad_out * charges[i] / s)  # BUG
        grad_q.scatter_add_(0, j, grad_out * charges[i] / s)
        return grad_pos, grad_q, None

    @staticmethod
    def example_inputs():
        return _coulomb_inputs()


class BeyondSoftCoulombScatterOverwrite(torch.autograd.Function):
    bug = {"kind": "not_accumulated", "input": "charges",
           "note": "the charge gradient is written with scatter_ instead of scatter_add_, so an atom in several pairs keeps only one contribution"}

    @staticmethod
    def forward(ctx, pos, charges, pairs):
        return _coulomb(ctx, pos, charges, pairs)

    @staticmethod
    def backward(ctx, grad_out):
        pos, charges, pairs, d, s = ctx.saved_tensors
        i, j = pairs[:, 0], pairs[:, 1]
        qq = charges[i] * charges[j]
        f = (-grad_out * qq / s ** 3)[:, None] * d
        grad_pos = torch.zeros_like(pos).index_add_(0, i, f).index_add_(0, j, -f)
        both = torch.cat([i, j])
        grad_q = torch.zeros_like(charges).scatter_(0, both, torch.cat([grad_out * charges[j] / s, grad_out * charges[i] / s]))  # BUG
        return grad_pos, grad_q, None

    @staticmethod
    def example_inputs():
        return _coulomb_inputs()


# ------------------------------------------------------------------------------ harmonic bonds
BONDS = torch.tensor([[0, 1], [1, 3], [3, 2], [2, 0], [4, 0], [4, 3]], dtype=torch.int64)


def _bond_inputs():
    gen = torch.Generator().manual_seed(73)
    kb = torch.rand(6, dtype=torch.float64, generator=gen) + 0.5
    r0 = torch.rand(6, dtype=torch.float64, generator=gen) * 0.4 + 0.9
    return _positions().requires_grad_(), BONDS.clone(), kb.requires_grad_(), r0.requires_grad_()


def _bonds(ctx, pos, bonds, kb, r0):
    d = pos[bonds[:, 0]] - pos[bonds[:, 1]]
    r = d.norm(dim=1)
    ctx.save_for_backward(pos, bonds, kb, r0, d, r)
    return 0.5 * kb * (r - r0) ** 2


class BeyondHarmonicBonds(torch.autograd.Function):
    """Per-bond 0.5 k_b (r - r0_b)^2, learned force constants and rest lengths."""
    bug = None

    @staticmethod
    def forward(ctx, pos, bonds, kb, r0):
        return _bonds(ctx, pos, bonds, kb, r0)

    @staticmethod
    def backward(ctx, grad_out):
        pos, bonds, kb, r0, d, r = ctx.saved_tensors
        stretch = r - r0
        f = (grad_out * kb * stretch / r)[:, None] * d
        grad_pos = torch.zeros_like(pos).index_add_(0, bonds[:, 0], f).index_add_(0, bonds[:, 1], -f)
        grad_kb = 0.5 * grad_out * stretch ** 2
        grad_r0 = -grad_out * kb * stretch
        return grad_pos, None, grad_kb, grad_r0

    @staticmethod
    def example_inputs():
        return _bond_inputs()


class BeyondHarmonicBondsSwapped(torch.autograd.Function):
    bug = {"kind": "swapped", "input": "kb",
           "note": "the force-constant and rest-length gradients are returned in each other's slots"}

    @staticmethod
    def forward(ctx, pos, bonds, kb, r0):
        return _bonds(ctx, pos, bonds, kb, r0)

    @staticmethod
    def backward(ctx, grad_out):
        pos, bonds, kb, r0, d, r = ctx.saved_tensors
        stretch = r - r0
        f = (grad_out * kb * stretch / r)[:, None] * d
        grad_pos = torch.zeros_like(pos).index_add_(0, bonds[:, 0], f).index_add_(0, bonds[:, 1], -f)
        grad_kb = 0.5 * grad_out * stretch ** 2
        grad_r0 = -grad_out * kb * stretch
        return grad_pos, None, grad_r0, grad_kb  # BUG

    @staticmethod
    def example_inputs():
        return _bond_inputs()


class BeyondHarmonicBondsRestSign(torch.autograd.Function):
    bug = {"kind": "sign", "input": "r0",
           "note": "the rest-length gradient is k (r - r0) g, forgetting that r0 enters the stretch with a minus sign"}

    @staticmethod
    def forward(ctx, pos, bonds, kb, r0):
        return _bonds(ctx, pos, bonds, kb, r0)

    @staticmethod
    def backward(ctx, grad_out):
        pos, bonds, kb, r0, d, r = ctx.saved_tensors
        stretch = r - r0
        f = (grad_out * kb * stretch / r)[:, None] * d
        grad_pos = torch.zeros_like(pos).index_add_(0, bonds[:, 0], f).index_add_(0, bonds[:, 1], -f)
        grad_kb = 0.5 * grad_out * stretch ** 2
        grad_r0 = grad_out * kb * stretch  # BUG
        return grad_pos, None, grad_kb, grad_r0

    @staticmethod
    def example_inputs():
        return _bond_inputs()


class BeyondHarmonicBondsKeptHalf(torch.autograd.Function):
    bug = {"kind": "scale", "input": "pos",
           "note": "the force keeps the energy's 1/2 although the square's 2 cancels it: 0.5 k (r - r0) instead of k (r - r0)"}

    @staticmethod
    def forward(ctx, pos, bonds, kb, r0):
        return _bonds(ctx, pos, bonds, kb, r0)

    @staticmethod
    def backward(ctx, grad_out):
        pos, bonds, kb, r0, d, r = ctx.saved_tensors
        stretch = r - r0
        f = (0.5 * grad_out * kb * stretch / r)[:, None] * d  # BUG
        grad_pos = torch.zeros_like(pos).index_add_(0, bonds[:, 0], f).index_add_(0, bonds[:, 1], -f)
        grad_kb = 0.5 * grad_out * stretch ** 2
        grad_r0 = -grad_out * kb * stretch
        return grad_pos, None, grad_kb, grad_r0

    @staticmethod
    def example_inputs():
        return _bond_inputs()


# ------------------------------------------------------------------------------ normal-mode energy
def _mode_inputs():
    gen = torch.Generator().manual_seed(74)
    pos = 0.3 * torch.randn(4, 3, dtype=torch.float64, generator=gen)
    K = torch.randn(12, 12, dtype=torch.float64, generator=gen) * 0.3 + torch.eye(12, dtype=torch.float64)
    return pos.requires_grad_(), K.requires_grad_()


class BeyondNormalModeEnergy(torch.autograd.Function):
    """0.5 q^T K q of the displacements flattened coordinate-major: q = (x_1..x_A, y_1..y_A, z_1..z_A)."""
    bug = None

    @staticmethod
    def forward(ctx, pos, K):
        q = pos.mT.reshape(-1)
        ctx.save_for_backward(q, K)
        ctx.atoms = pos.shape[0]
        return 0.5 * q @ K @ q

    @staticmethod
    def backward(ctx, grad_out):
        q, K = ctx.saved_tensors
        grad_q = 0.5 * grad_out * ((K + K.mT) @ q)
        grad_pos = grad_q.reshape(3, ctx.atoms).mT
        grad_K = 0.5 * grad_out * torch.outer(q, q)
        return grad_pos, grad_K

    @staticmethod
    def example_inputs():
        return _mode_inputs()


class BeyondNormalModeEnergyAtomMajor(torch.autograd.Function):
    bug = {"kind": "missing_reshape", "input": "pos",
           "note": "the coordinate-major gradient is reshaped straight to (A, 3), as if q were atom-major, instead of (3, A) then transposed back"}

    @staticmethod
    def forward(ctx, pos, K):
        q = pos.mT.reshape(-1)
        ctx.save_for_backward(q, K)
        ctx.atoms = pos.shape[0]
        return 0.5 * q @ K @ q

    @staticmethod
    def backward(ctx, grad_out):
        q, K = ctx.saved_tensors
        grad_q = 0.5 * grad_out * ((K + K.mT) @ q)
        grad_pos = grad_q.reshape(ctx.atoms, 3)  # BUG
        grad_K = 0.5 * grad_out * torch.outer(q, q)
        return grad_pos, grad_K

    @staticmethod
    def example_inputs():
        return _mode_inputs()
