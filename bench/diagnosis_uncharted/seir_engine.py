import gradcli as torch

"""An SEIR epidemic on gradcli's engine, unrolled in a Python loop with time step dt.

S' = S - dt beta S I, E' = E + dt beta S I - dt sigma E, I' = I + dt sigma E - dt gamma I, from the
initial compartments ``state0`` = (S0, E0, I0). The output is I_1..I_T; backward runs the adjoint
recursion from the last step back to the first. ``steps`` and ``dt`` are plain numbers.
"""


def _seir_inputs():
    beta = torch.tensor(1.2, dtype=torch.float64, requires_grad=True)
    sigma = torch.tensor(0.5, dtype=torch.float64, requires_grad=True)
    gamma = torch.tensor(0.3, dtype=torch.float64, requires_grad=True)
    state0 = torch.tensor([0.9, 0.06, 0.04], dtype=torch.float64, requires_grad=True)
    return beta, sigma, gamma, state0, 6, 0.5


def _seir_forward(ctx, beta, sigma, gamma, state0, steps, dt):
    s, e, i = state0[0], state0[1], state0[2]
    path_s, path_e, path_i = [s], [e], [i]
    for _ in range(steps):
        infection = dt * beta * s * i
        onset = dt * sigma * e
        recovery = dt * gamma * i
        s, e, i = s - infection, e + infection - onset, i + onset - recovery
        path_s.append(s)
        path_e.append(e)
        path_i.append(i)
    ctx.steps, ctx.dt = steps, dt
    ctx.save_for_backward(beta, sigma, gamma, torch.stack(path_s), torch.stack(path_e),
                          torch.stack(path_i))
    return torch.stack(path_i[1:])


class UnchartedSEIRTrajectory(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, beta, sigma, gamma, state0, steps, dt):
        return _seir_forward(ctx, beta, sigma, gamma, state0, steps, dt)

    @staticmethod
    def backward(ctx, grad):
        beta, sigma, gamma, path_s, path_e, path_i = ctx.saved_tensors
        dt = ctx.dt
        adj_s = torch.zeros_like(beta)
        adj_e = torch.zeros_like(beta)
        adj_i = torch.zeros_like(beta)
        grad_beta = torch.zeros_like(beta)
        grad_sigma = torch.zeros_like(sigma)
        grad_gamma = torch.zeros_like(gamma)
        for t in reversed(range(ctx.steps)):
            adj_i = adj_i + grad[t]
            s, e, i = path_s[t], path_e[t], path_i[t]
            grad_beta = grad_beta + dt * (adj_e - adj_s) * s * i
            grad_sigma = grad_sigma + dt * (adj_i - adj_e) * e
            grad_gamma = grad_gamma - dt * adj_i * i
            adj_s, adj_e, adj_i = (adj_s * (1 - dt * beta * i) + adj_e * dt * beta * i,
                                   adj_e * (1 - dt * sigma) + adj_i * dt * sigma,
                                   (adj_e - adj_s) * dt * beta * s + adj_i * (1 - dt * gamma))
        return grad_beta, grad_sigma, grad_gamma, torch.stack([adj_s, adj_e, adj_i]), None, None

    @staticmethod
    def example_inputs():
        return _seir_inputs()


class UnchartedSEIRTrajectoryJacobian(torch.autograd.Function):
    """The same adjoint with each step's 3 x 3 Jacobian built explicitly and applied as J.T @ a."""

    bug = None

    @staticmethod
    def forward(ctx, beta, sigma, gamma, state0, steps, dt):
        return _seir_forward(ctx, beta, sigma, gamma, state0, steps, dt)

    @staticmethod
    def backward(ctx, grad):
        beta, sigma, gamma, path_s, path_e, path_i = ctx.saved_tensors
        dt = ctx.dt
        adj = torch.zeros(3, dtype=grad.dtype)
        rates = torch.zeros(3, dtype=grad.dtype)
        last = torch.tensor([0.0, 0.0, 1.0], dtype=grad.dtype)
        for t in reversed(range(ctx.steps)):
            adj = adj + grad[t] * last
            s, e, i = path_s[t], path_e[t], path_i[t]
            zero = torch.zeros_like(s)
            jac = torch.stack([
                torch.stack([1 - dt * beta * i, zero, -dt * beta * s]),
                torch.stack([dt * beta * i, 1 - dt * sigma, dt * beta * s]),
                torch.stack([zero, dt * sigma, 1 - dt * gamma]),
            ])
            by_rate = torch.stack([
                torch.stack([-dt * s * i, zero, zero]),
                torch.stack([dt * s * i, -dt * e, zero]),
                torch.stack([zero, dt * e, -dt * i]),
            ])
            rates = rates + by_rate.mT @ adj
            adj = jac.mT @ adj
        return rates[0], rates[1], rates[2], adj, None, None

    @staticmethod
    def example_inputs():
        return _seir_inputs()


class UnchartedSEIRRatesSwapped(torch.autograd.Function):
    bug = {"kind": "swapped", "input": "beta",
           "note": "the transmission and incubation rate gradients are returned in each other's "
                   "place (both scalars)"}

    @staticmethod
    def forward(ctx, beta, sigma, gamma, state0, steps, dt):
        return _seir_forward(ctx, beta, sigma, gamma, state0, steps, dt)

    @staticmethod
    def backward(ctx, grad):
        beta, sigma, gamma, path_s, path_e, path_i = ctx.saved_tensors
        dt = ctx.dt
        adj_s = torch.zeros_like(beta)
        adj_e = torch.zeros_like(beta)
        adj_i = torch.zeros_like(beta)
        grad_beta = torch.zeros_like(beta)
        grad_sigma = torch.zeros_like(sigma)
        grad_gamma = torch.zeros_like(gamma)
        for t in reversed(range(ctx.steps)):
            adj_i = adj_i + grad[t]
            s, e, i = path_s[t], path_e[t], path_i[t]
            grad_beta = grad_beta + dt * (adj_e - adj_s) * s * i
            grad_sigma = grad_sigma + dt * (adj_i - adj_e) * e
            grad_gamma = grad_gamma - dt * adj_i * i
            adj_s, adj_e, adj_i = (adj_s * (1 - dt * beta * i) + adj_e * dt * beta * i,
                                   adj_e * (1 - dt * sigma) + adj_i * dt * sigma,
                                   (adj_e - adj_s) * dt * beta * s + adj_i * (1 - dt * gamma))
        return grad_sigma, grad_beta, grad_gamma, torch.stack([adj_s, adj_e, adj_i]), None, None  # BUG

    @staticmethod
    def example_inputs():
        return _seir_inputs()


class UnchartedSEIRIncubationFrozen(torch.autograd.Function):
    bug = {"kind": "zero", "input": "sigma",
           "note": "the incubation rate is treated as fixed (as in the paper being reproduced) and "
                   "its gradient returned as zero, though it is a learned input here"}

    @staticmethod
    def forward(ctx, beta, sigma, gamma, state0, steps, dt):
        return _seir_forward(ctx, beta, sigma, gamma, state0, steps, dt)

    @staticmethod
    def backward(ctx, grad):
        beta, sigma, gamma, path_s, path_e, path_i = ctx.saved_tensors
        dt = ctx.dt
        adj_s = torch.zeros_like(beta)
        adj_e = torch.zeros_like(beta)
        adj_i = torch.zeros_like(beta)
        grad_beta = torch.zeros_like(beta)
        grad_gamma = torch.zeros_like(gamma)
        for t in reversed(range(ctx.steps)):
            adj_i = adj_i + grad[t]
            s, e, i = path_s[t], path_e[t], path_i[t]
            grad_beta = grad_beta + dt * (adj_e - adj_s) * s * i
            grad_gamma = grad_gamma - dt * adj_i * i
            adj_s, adj_e, adj_i = (adj_s * (1 - dt * beta * i) + adj_e * dt * beta * i,
                                   adj_e * (1 - dt * sigma) + adj_i * dt * sigma,
                                   (adj_e - adj_s) * dt * beta * s + adj_i * (1 - dt * gamma))
        grad_sigma = torch.zeros_like(sigma)  # BUG
        return grad_beta, grad_sigma, grad_gamma, torch.stack([adj_s, adj_e, adj_i]), None, None

    @staticmethod
    def example_inputs():
        return _seir_inputs()


class UnchartedSEIROnsetFromInfected(torch.autograd.Function):
    bug = {"kind": "wrong_variable", "input": "sigma",
           "note": "onset is dt sigma E, so its sigma derivative needs the exposed compartment; the "
                   "infected compartment I is used instead"}

    @staticmethod
    def forward(ctx, beta, sigma, gamma, state0, steps, dt):
        return _seir_forward(ctx, beta, sigma, gamma, state0, steps, dt)

    @staticmethod
    def backward(ctx, grad):
        beta, sigma, gamma, path_s, path_e, path_i = ctx.saved_tensors
        dt = ctx.dt
        adj_s = torch.zeros_like(beta)
        adj_e = torch.zeros_like(beta)
        adj_i = torch.zeros_like(beta)
        grad_beta = torch.zeros_like(beta)
        grad_sigma = torch.zeros_like(sigma)
        grad_gamma = torch.zeros_like(gamma)
        for t in reversed(range(ctx.steps)):
            adj_i = adj_i + grad[t]
            s, e, i = path_s[t], path_e[t], path_i[t]
            grad_beta = grad_beta + dt * (adj_e - adj_s) * s * i
            grad_sigma = grad_sigma + dt * (adj_i - adj_e) * i  # BUG
            grad_gamma = grad_gamma - dt * adj_i * i
            adj_s, adj_e, adj_i = (adj_s * (1 - dt * beta * i) + adj_e * dt * beta * i,
                                   adj_e * (1 - dt * sigma) + adj_i * dt * sigma,
                                   (adj_e - adj_s) * dt * beta * s + adj_i * (1 - dt * gamma))
        return grad_beta, grad_sigma, grad_gamma, torch.stack([adj_s, adj_e, adj_i]), None, None

    @staticmethod
    def example_inputs():
        return _seir_inputs()


class UnchartedSEIRTransmissionNoStep(torch.autograd.Function):
    bug = {"kind": "scale", "input": "beta",
           "note": "the time step dt is left out of the transmission rate's gradient (it is kept "
                   "everywhere else), so beta's gradient is 1/dt = 2 times too large"}

    @staticmethod
    def forward(ctx, beta, sigma, gamma, state0, steps, dt):
        return _seir_forward(ctx, beta, sigma, gamma, state0, steps, dt)

    @staticmethod
    def backward(ctx, grad):
        beta, sigma, gamma, path_s, path_e, path_i = ctx.saved_tensors
        dt = ctx.dt
        adj_s = torch.zeros_like(beta)
        adj_e = torch.zeros_like(beta)
        adj_i = torch.zeros_like(beta)
        grad_beta = torch.zeros_like(beta)
        grad_sigma = torch.zeros_like(sigma)
        grad_gamma = torch.zeros_like(gamma)
        for t in reversed(range(ctx.steps)):
            adj_i = adj_i + grad[t]
            s, e, i = path_s[t], path_e[t], path_i[t]
            grad_beta = grad_beta + (adj_e - adj_s) * s * i  # BUG
            grad_sigma = grad_sigma + dt * (adj_i - adj_e) * e
            grad_gamma = grad_gamma - dt * adj_i * i
            adj_s, adj_e, adj_i = (adj_s * (1 - dt * beta * i) + adj_e * dt * beta * i,
                                   adj_e * (1 - dt * sigma) + adj_i * dt * sigma,
                                   (adj_e - adj_s) * dt * beta * s + adj_i * (1 - dt * gamma))
        return grad_beta, grad_sigma, grad_gamma, torch.stack([adj_s, adj_e, adj_i]), None, None

    @staticmethod
    def example_inputs():
        return _seir_inputs()
