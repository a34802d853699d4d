"""Epidemic models: a discrete SIR model unrolled in a Python loop, and an age-structured force of
infection through a contact matrix.

SIR (fractions, unit time step): S' = S - beta S I, I' = I + beta S I - gamma I. The output is the
infected trajectory I_1..I_T; the backward runs the adjoint recursion from the last step to the first.
"""
import torch


def _sir_inputs():
    beta = torch.tensor(0.8, dtype=torch.float64, requires_grad=True)
    gamma = torch.tensor(0.25, dtype=torch.float64, requires_grad=True)
    s0 = torch.tensor(0.9, dtype=torch.float64, requires_grad=True)
    i0 = torch.tensor(0.1, dtype=torch.float64, requires_grad=True)
    return beta, gamma, s0, i0, 6


def _sir_forward(ctx, beta, gamma, s0, i0, steps):
    s, i = s0, i0
    path_s, path_i = [s0], [i0]
    for _ in range(steps):
        new = beta * s * i
        s, i = s - new, i + new - gamma * i
        path_s.append(s)
        path_i.append(i)
    ctx.steps = steps
    ctx.save_for_backward(beta, gamma, torch.stack(path_s), torch.stack(path_i))
    return torch.stack(path_i[1:])


class UnchartedSIRTrajectory(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, beta, gamma, s0, i0, steps):
        return _sir_forward(ctx, beta, gamma, s0, i0, steps)

    @staticmethod
    def backward(ctx, grad):
        beta, gamma, path_s, path_i = ctx.saved_tensors
        adj_s = torch.zeros_like(beta)
        adj_i = torch.zeros_like(beta)
        grad_beta = torch.zeros_like(beta)
        grad_gamma = torch.zeros_like(gamma)
        for t in reversed(range(ctx.steps)):
            adj_i = adj_i + grad[t]
            s, i = path_s[t], path_i[t]
            grad_beta = grad_beta + (adj_i - adj_s) * s * i
            grad_gamma = grad_gamma - adj_i * i
            adj_s, adj_i = (adj_s * (1 - beta * i) + adj_i * beta * i,
                            -adj_s * beta * s + adj_i * (1 + beta * s - gamma))
        return grad_beta, grad_gamma, adj_s, adj_i, None

    @staticmethod
    def example_inputs():
        return _sir_inputs()


class UnchartedSIRTrajectoryNeedsGrad(torch.autograd.Function):
    """The same adjoint, written with explicit partial derivatives and needs_input_grad."""

    bug = None

    @staticmethod
    def forward(ctx, beta, gamma, s0, i0, steps):
        return _sir_forward(ctx, beta, gamma, s0, i0, steps)

    @staticmethod
    def backward(ctx, grad):
        beta, gamma, path_s, path_i = ctx.saved_tensors
        adj_s = torch.zeros_like(beta)
        adj_i = torch.zeros_like(beta)
        grad_beta = torch.zeros_like(beta)
        grad_gamma = torch.zeros_like(gamma)
        for t in reversed(range(ctx.steps)):
            adj_i = adj_i + grad[t]
            s, i = path_s[t], path_i[t]
            ds_ds, ds_di = 1 - beta * i, -beta * s
            di_ds, di_di = beta * i, 1 + beta * s - gamma
            if ctx.needs_input_grad[0]:
                grad_beta = grad_beta - adj_s * s * i + adj_i * s * i
            if ctx.needs_input_grad[1]:
                grad_gamma = grad_gamma - adj_i * i
            adj_s, adj_i = adj_s * ds_ds + adj_i * di_ds, adj_s * ds_di + adj_i * di_di
        return grad_beta, grad_gamma, adj_s, adj_i, None

    @staticmethod
    def example_inputs():
        return _sir_inputs()


class UnchartedSIRAdjointForwardLoop(torch.autograd.Function):
    bug = {"kind": "missing_flip", "input": "beta",
           "note": "the adjoint recursion is run from the first step to the last (range instead "
                   "of reversed(range)), so time is not flipped"}

    @staticmethod
    def forward(ctx, beta, gamma, s0, i0, steps):
        return _sir_forward(ctx, beta, gamma, s0, i0, steps)

    @staticmethod
    def backward(ctx, grad):
        beta, gamma, path_s, path_i = ctx.saved_tensors
        adj_s = torch.zeros_like(beta)
        adj_i = torch.zeros_like(beta)
        grad_beta = torch.zeros_like(beta)
        grad_gamma = torch.zeros_like(gamma)
        for t in range(ctx.steps):  # BUG
            adj_i = adj_i + grad[t]
            s, i = path_s[t], path_i[t]
            grad_beta = grad_beta + (adj_i - adj_s) * s * i
            grad_gamma = grad_gamma - adj_i * i
            adj_s, adj_i = (adj_s * (1 - beta * i) + adj_i * beta * i,
                            -adj_s * beta * s + adj_i * (1 + beta * s - gamma))
        return grad_beta, grad_gamma, adj_s, adj_i, None

    @staticmethod
    def example_inputs():
        return _sir_inputs()


class UnchartedSIRBetaOverwritten(torch.autograd.Function):
    bug = {"kind": "not_accumulated", "input": "beta",
           "note": "the transmission rate's gradient is assigned at every step instead of summed "
                   "over steps, so only the first step's contribution survives"}

    @staticmethod
    def forward(ctx, beta, gamma, s0, i0, steps):
        return _sir_forward(ctx, beta, gamma, s0, i0, steps)

    @staticmethod
    def backward(ctx, grad):
        beta, gamma, path_s, path_i = ctx.saved_tensors
        adj_s = torch.zeros_like(beta)
        adj_i = torch.zeros_like(beta)
        grad_beta = torch.zeros_like(beta)
        grad_gamma = torch.zeros_like(gamma)
        for t in reversed(range(ctx.steps)):
            adj_i = adj_i + grad[t]
            s, i = path_s[t], path_i[t]
            grad_beta = (adj_i - adj_s) * s * i  # BUG
            grad_gamma = grad_gamma - adj_i * i
            adj_s, adj_i = (adj_s * (1 - beta * i) + adj_i * beta * i,
                            -adj_s * beta * s + adj_i * (1 + beta * s - gamma))
        return grad_beta, grad_gamma, adj_s, adj_i, None

    @staticmethod
    def example_inputs():
        return _sir_inputs()


class UnchartedSIRNoInfectionFeedback(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "beta",
           "note": "the susceptible adjoint drops the term adj_i * beta * i (new infections raise "
                   "I' when S rises); every input's gradient is wrong through the recursion"}

    @staticmethod
    def forward(ctx, beta, gamma, s0, i0, steps):
        return _sir_forward(ctx, beta, gamma, s0, i0, steps)

    @staticmethod
    def backward(ctx, grad):
        beta, gamma, path_s, path_i = ctx.saved_tensors
        adj_s = torch.zeros_like(beta)
        adj_i = torch.zeros_like(beta)
        grad_beta = torch.zeros_like(beta)
        grad_gamma = torch.zeros_like(gamma)
        for t in reversed(range(ctx.steps)):
            adj_i = adj_i + grad[t]
            s, i = path_s[t], path_i[t]
            grad_beta = grad_beta + (adj_i - adj_s) * s * i
            grad_gamma = grad_gamma - adj_i * i
            adj_s, adj_i = (adj_s * (1 - beta * i),  # BUG
                            -adj_s * beta * s + adj_i * (1 + beta * s - gamma))
        return grad_beta, grad_gamma, adj_s, adj_i, None

    @staticmethod
    def example_inputs():
        return _sir_inputs()


class UnchartedSIRNextStateInBeta(torch.autograd.Function):
    bug = {"kind": "wrong_variable", "input": "beta",
           "note": "the step's local derivatives are taken at the state after the step "
                   "(path[t + 1]) instead of the state it started from (path[t])"}

    @staticmethod
    def forward(ctx, beta, gamma, s0, i0, steps):
        return _sir_forward(ctx, beta, gamma, s0, i0, steps)

    @staticmethod
    def backward(ctx, grad):
        beta, gamma, path_s, path_i = ctx.saved_tensors
        adj_s = torch.zeros_like(beta)
        adj_i = torch.zeros_like(beta)
        grad_beta = torch.zeros_like(beta)
        grad_gamma = torch.zeros_like(gamma)
        for t in reversed(range(ctx.steps)):
            adj_i = adj_i + grad[t]
            s, i = path_s[t + 1], path_i[t + 1]  # BUG
            grad_beta = grad_beta + (adj_i - adj_s) * s * i
            grad_gamma = grad_gamma - adj_i * i
            adj_s, adj_i = (adj_s * (1 - beta * i) + adj_i * beta * i,
                            -adj_s * beta * s + adj_i * (1 + beta * s - gamma))
        return grad_beta, grad_gamma, adj_s, adj_i, None

    @staticmethod
    def example_inputs():
        return _sir_inputs()


class UnchartedSIRRecoverySign(torch.autograd.Function):
    bug = {"kind": "sign", "input": "gamma",
           "note": "recovery removes infected, so d I'/d gamma = -I; the gamma gradient is "
                   "accumulated with + (the whole gradient negated)"}

    @staticmethod
    def forward(ctx, beta, gamma, s0, i0, steps):
        return _sir_forward(ctx, beta, gamma, s0, i0, steps)

    @staticmethod
    def backward(ctx, grad):
        beta, gamma, path_s, path_i = ctx.saved_tensors
        adj_s = torch.zeros_like(beta)
        adj_i = torch.zeros_like(beta)
        grad_beta = torch.zeros_like(beta)
        grad_gamma = torch.zeros_like(gamma)
        for t in reversed(range(ctx.steps)):
            adj_i = adj_i + grad[t]
            s, i = path_s[t], path_i[t]
            grad_beta = grad_beta + (adj_i - adj_s) * s * i
            grad_gamma = grad_gamma + adj_i * i  # BUG
            adj_s, adj_i = (adj_s * (1 - beta * i) + adj_i * beta * i,
                            -adj_s * beta * s + adj_i * (1 + beta * s - gamma))
        return grad_beta, grad_gamma, adj_s, adj_i, None

    @staticmethod
    def example_inputs():
        return _sir_inputs()


class UnchartedSIRStaleAdjoint(torch.autograd.Function):
    bug = {"kind": "wrong_variable", "input": "beta",
           "note": "the two adjoints are updated one after the other, so the infected adjoint's "
                   "update reads the already-updated susceptible adjoint instead of the old one"}

    @staticmethod
    def forward(ctx, beta, gamma, s0, i0, steps):
        return _sir_forward(ctx, beta, gamma, s0, i0, steps)

    @staticmethod
    def backward(ctx, grad):
        beta, gamma, path_s, path_i = ctx.saved_tensors
        adj_s = torch.zeros_like(beta)
        adj_i = torch.zeros_like(beta)
        grad_beta = torch.zeros_like(beta)
        grad_gamma = torch.zeros_like(gamma)
        for t in reversed(range(ctx.steps)):
            adj_i = adj_i + grad[t]
            s, i = path_s[t], path_i[t]
            grad_beta = grad_beta + (adj_i - adj_s) * s * i
            grad_gamma = grad_gamma - adj_i * i
            adj_s = adj_s * (1 - beta * i) + adj_i * beta * i
            adj_i = -adj_s * beta * s + adj_i * (1 + beta * s - gamma)  # BUG
        return grad_beta, grad_gamma, adj_s, adj_i, None

    @staticmethod
    def example_inputs():
        return _sir_inputs()


# ------------------------------------------------------------ age-structured force of infection
def _contact_inputs(seed=31):
    gen = torch.Generator().manual_seed(seed)
    contact = torch.rand(4, 4, dtype=torch.float64, generator=gen).requires_grad_()
    infected = (0.2 * torch.rand(4, dtype=torch.float64, generator=gen)).requires_grad_()
    susceptible = (0.5 + 0.5 * torch.rand(4, dtype=torch.float64, generator=gen)).requires_grad_()
    return contact, infected, susceptible


class UnchartedForceOfInfection(torch.autograd.Function):
    """New infections per age group: susceptible_a * sum_b contact_ab infected_b."""

    bug = None

    @staticmethod
    def forward(ctx, contact, infected, susceptible):
        pressure = contact @ infected
        ctx.save_for_backward(contact, infected, susceptible, pressure)
        return susceptible * pressure

    @staticmethod
    def backward(ctx, grad):
        contact, infected, susceptible, pressure = ctx.saved_tensors
        weighted = grad * susceptible
        return torch.outer(weighted, infected), contact.mT @ weighted, grad * pressure

    @staticmethod
    def example_inputs():
        return _contact_inputs()


class UnchartedForceOfInfectionEinsum(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, contact, infected, susceptible):
        ctx.save_for_backward(contact, infected, susceptible)
        return torch.einsum("a,ab,b->a", susceptible, contact, infected)

    @staticmethod
    def backward(ctx, grad):
        contact, infected, susceptible = ctx.saved_tensors
        grad_contact = torch.einsum("a,a,b->ab", grad, susceptible, infected)
        grad_infected = torch.einsum("a,a,ab->b", grad, susceptible, contact)
        grad_susceptible = grad * torch.einsum("ab,b->a", contact, infected)
        return grad_contact, grad_infected, grad_susceptible

    @staticmethod
    def example_inputs():
        return _contact_inputs(seed=32)


class UnchartedForceOfInfectionNoTranspose(torch.autograd.Function):
    bug = {"kind": "transposed", "input": "infected",
           "note": "the infected groups' gradient uses contact @ w instead of contact.T @ w "
                   "(who infects whom reversed; square so it runs)"}

    @staticmethod
    def forward(ctx, contact, infected, susceptible):
        pressure = contact @ infected
        ctx.save_for_backward(contact, infected, susceptible, pressure)
        return susceptible * pressure

    @staticmethod
    def backward(ctx, grad):
        contact, infected, susceptible, pressure = ctx.saved_tensors
        weighted = grad * susceptible
        grad_infected = contact @ weighted  # BUG
        return torch.outer(weighted, infected), grad_infected, grad * pressure

    @staticmethod
    def example_inputs():
        return _contact_inputs()


class UnchartedForceOfInfectionIgnoresGrad(torch.autograd.Function):
    bug = {"kind": "ignores_grad_output", "input": "susceptible",
           "note": "the susceptible fractions' gradient is the infection pressure alone, without "
                   "the incoming gradient"}

    @staticmethod
    def forward(ctx, contact, infected, susceptible):
        pressure = contact @ infected
        ctx.save_for_backward(contact, infected, susceptible, pressure)
        return susceptible * pressure

    @staticmethod
    def backward(ctx, grad):
        contact, infected, susceptible, pressure = ctx.saved_tensors
        weighted = grad * susceptible
        grad_susceptible = pressure.clone()  # BUG
        return torch.outer(weighted, infected), contact.mT @ weighted, grad_susceptible

    @staticmethod
    def example_inputs():
        return _contact_inputs()
