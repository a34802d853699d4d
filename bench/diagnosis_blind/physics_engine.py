"""Physics-style energies on gradcli's engine: a spring network (Hooke, rest length), Coulomb
energy of point charges (positions and charges), Lennard-Jones and Morse pair potentials on
distances, and kinetic energy with per-particle masses.

BLIND corpus: see README.md. Never tune gradcli's diagnosis on these Functions.
"""
import gradcli as torch

EDGES = ([0, 1, 2, 3, 0, 1], [1, 2, 3, 4, 2, 4])  # node 1 and 2 sit on three springs each
STIFFNESS = 2.0
REST_LENGTH = 1.0
LJ_EPSILON = 1.0
MORSE_DEPTH, MORSE_WIDTH, MORSE_R0 = 1.5, 1.2, 1.1


def _nodes():
    torch.manual_seed(121)
    return (1.5 * torch.randn(5, 3, dtype=torch.float64),)


def _springs(ctx, x):
    i, j = torch.tensor(EDGES[0]), torch.tensor(EDGES[1])
    diff = x.index_select(0, i) - x.index_select(0, j)
    d = torch.sqrt((diff * diff).sum(1))
    ctx.save_for_backward(diff, d, i, j)
    ctx.shape = x.shape
    return 0.5 * STIFFNESS * ((d - REST_LENGTH) ** 2).sum()


class SpringNetworkEnergy(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x):
        return _springs(ctx, x)

    @staticmethod
    def backward(ctx, grad_out):
        diff, d, i, j = ctx.saved_tensors
        force = (STIFFNESS * (d - REST_LENGTH) / d)[:, None] * diff * grad_out
        grad = torch.zeros(ctx.shape, dtype=diff.dtype)
        return grad.index_add(0, i, force).index_add(0, j, -force)

    @staticmethod
    def example_inputs():
        return _nodes()


class SpringNetworkEnergyNoRestLength(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "x",
           "note": "Hooke's force written for springs of zero rest length: k * diff, missing "
                   "- k * rest * diff / d"}

    @staticmethod
    def forward(ctx, x):
        return _springs(ctx, x)

    @staticmethod
    def backward(ctx, grad_out):
        diff, d, i, j = ctx.saved_tensors
        force = STIFFNESS * diff * grad_out  # BUG -- (STIFFNESS * (d - REST_LENGTH) / d) * diff
        grad = torch.zeros(ctx.shape, dtype=diff.dtype)
        return grad.index_add(0, i, force).index_add(0, j, -force)

    @staticmethod
    def example_inputs():
        return _nodes()


def _charges():
    torch.manual_seed(122)
    x = torch.tensor([[0.0, 0.0, 0.0], [1.2, 0.1, -0.3], [-0.4, 1.5, 0.2], [0.6, -0.9, 1.3]],
                     dtype=torch.float64) + 0.1 * torch.randn(4, 3, dtype=torch.float64)
    q = torch.tensor([1.0, -0.8, 0.5, -1.3], dtype=torch.float64)
    return x, q


def _coulomb(ctx, x, q):
    n = x.shape[0]
    eye = torch.eye(n, dtype=x.dtype)
    diff = x[:, None, :] - x[None, :, :]
    r = torch.sqrt((diff * diff).sum(-1) + eye)  # + eye: no 0 on the diagonal
    inv = (1 - eye) / r
    qq = q[:, None] * q[None, :]
    ctx.save_for_backward(diff, inv, q, qq)
    return 0.5 * (qq * inv).sum()


class CoulombEnergy(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, q):
        return _coulomb(ctx, x, q)

    @staticmethod
    def backward(ctx, grad_out):
        diff, inv, q, qq = ctx.saved_tensors
        grad_x = -((qq * inv ** 3)[:, :, None] * diff).sum(1)
        grad_q = inv @ q
        return grad_x * grad_out, grad_q * grad_out

    @staticmethod
    def example_inputs():
        return _charges()


class CoulombEnergyReturnsForce(torch.autograd.Function):
    bug = {"kind": "sign", "input": "x",
           "note": "the positions get the Coulomb force, which is minus the energy's gradient"}

    @staticmethod
    def forward(ctx, x, q):
        return _coulomb(ctx, x, q)

    @staticmethod
    def backward(ctx, grad_out):
        diff, inv, q, qq = ctx.saved_tensors
        grad_x = ((qq * inv ** 3)[:, :, None] * diff).sum(1)  # BUG -- the force, -gradient
        grad_q = inv @ q
        return grad_x * grad_out, grad_q * grad_out

    @staticmethod
    def example_inputs():
        return _charges()


class CoulombEnergyChargeHalved(torch.autograd.Function):
    bug = {"kind": "scale", "input": "q",
           "note": "the 1/2 of the double sum is kept in q's gradient, though q_i appears in "
                   "both (i, j) and (j, i): a factor 1/2"}

    @staticmethod
    def forward(ctx, x, q):
        return _coulomb(ctx, x, q)

    @staticmethod
    def backward(ctx, grad_out):
        diff, inv, q, qq = ctx.saved_tensors
        grad_x = -((qq * inv ** 3)[:, :, None] * diff).sum(1)
        grad_q = 0.5 * (inv @ q)  # BUG -- inv @ q
        return grad_x * grad_out, grad_q * grad_out

    @staticmethod
    def example_inputs():
        return _charges()


def _distances(seed, low, high):
    torch.manual_seed(seed)
    return (low + (high - low) * torch.rand(3, 4, dtype=torch.float64),)


class LennardJones(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, r):
        ctx.save_for_backward(r)
        return 4 * LJ_EPSILON * (r ** -12 - r ** -6)

    @staticmethod
    def backward(ctx, grad_out):
        (r,) = ctx.saved_tensors
        return grad_out * 4 * LJ_EPSILON * (-12 * r ** -13 + 6 * r ** -7)

    @staticmethod
    def example_inputs():
        return _distances(123, 0.95, 2.0)


class LennardJonesRepulsionSign(torch.autograd.Function):
    bug = {"kind": "term_sign", "input": "r",
           "note": "the repulsive term's derivative -12 r^-13 is written with a + sign"}

    @staticmethod
    def forward(ctx, r):
        ctx.save_for_backward(r)
        return 4 * LJ_EPSILON * (r ** -12 - r ** -6)

    @staticmethod
    def backward(ctx, grad_out):
        (r,) = ctx.saved_tensors
        return grad_out * 4 * LJ_EPSILON * (12 * r ** -13 + 6 * r ** -7)  # BUG -- -12 * r ** -13

    @staticmethod
    def example_inputs():
        return _distances(123, 0.95, 2.0)


def _morse(ctx, r):
    e = torch.exp(-MORSE_WIDTH * (r - MORSE_R0))
    ctx.save_for_backward(e)
    return MORSE_DEPTH * (1 - e) ** 2


class MorsePotential(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, r):
        return _morse(ctx, r)

    @staticmethod
    def backward(ctx, grad_out):
        (e,) = ctx.saved_tensors
        return grad_out * 2 * MORSE_DEPTH * MORSE_WIDTH * e * (1 - e)

    @staticmethod
    def example_inputs():
        return _distances(124, 0.8, 2.5)


class MorsePotentialOuterDerivativeOnly(torch.autograd.Function):
    bug = {"kind": "none", "input": "r",
           "note": "only the derivative of D u^2 with respect to u = 1 - e; the chain rule "
                   "through u(r) is forgotten: a wrong formula"}

    @staticmethod
    def forward(ctx, r):
        return _morse(ctx, r)

    @staticmethod
    def backward(ctx, grad_out):
        (e,) = ctx.saved_tensors
        return grad_out * 2 * MORSE_DEPTH * (1 - e)  # BUG -- * MORSE_WIDTH * e

    @staticmethod
    def example_inputs():
        return _distances(124, 0.8, 2.5)


def _particles():
    torch.manual_seed(125)
    mass = 0.5 + torch.rand(4, dtype=torch.float64)
    return mass, torch.randn(4, 3, dtype=torch.float64)


class KineticEnergy(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, mass, velocity):
        ctx.save_for_backward(mass, velocity)
        return 0.5 * (mass[:, None] * velocity * velocity).sum()

    @staticmethod
    def backward(ctx, grad_out):
        mass, velocity = ctx.saved_tensors
        grad_mass = 0.5 * (velocity * velocity).sum(1) * grad_out
        return grad_mass, mass[:, None] * velocity * grad_out

    @staticmethod
    def example_inputs():
        return _particles()


class KineticEnergyMassNotReduced(torch.autograd.Function):
    bug = {"kind": "not_reduced", "input": "mass",
           "note": "the mass gradient 0.5 v^2 is not summed over the three components"}

    @staticmethod
    def forward(ctx, mass, velocity):
        ctx.save_for_backward(mass, velocity)
        return 0.5 * (mass[:, None] * velocity * velocity).sum()

    @staticmethod
    def backward(ctx, grad_out):
        mass, velocity = ctx.saved_tensors
        grad_mass = 0.5 * velocity * velocity * grad_out  # BUG -- .sum(1)
        return grad_mass, mass[:, None] * velocity * grad_out

    @staticmethod
    def example_inputs():
        return _particles()
