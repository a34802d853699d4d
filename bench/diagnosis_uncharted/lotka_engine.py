import gradcli as torch

"""Predator-prey dynamics on gradcli's engine.

One step of the generalized Lotka-Volterra model for n species, x' = x + dt x (r + A x) with an
interaction matrix A (n, n) (dt a plain float), and the classic two-species model unrolled for
``steps`` Euler steps, x' = x + dt (a x - b x y), y' = y + dt (c x y - d y), whose two outputs are
the time-averaged prey and predator densities.
"""


def _glv_inputs():
    x = torch.tensor([0.8, 1.2, 0.5, 1.0], dtype=torch.float64, requires_grad=True)
    r = torch.tensor([0.6, -0.2, 0.9, 0.3], dtype=torch.float64, requires_grad=True)
    interaction = torch.tensor([[-0.5, 0.2, -0.1, 0.3],
                                [0.4, -0.6, 0.1, -0.2],
                                [-0.3, 0.5, -0.4, 0.1],
                                [0.2, -0.1, 0.6, -0.5]], dtype=torch.float64, requires_grad=True)
    return x, r, interaction, 0.1


class UnchartedGeneralizedLotkaVolterraStep(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, r, interaction, dt):
        rate = r + interaction @ x
        ctx.rate = rate
        ctx.dt = dt
        ctx.save_for_backward(x, interaction)
        return x + dt * (x * rate)

    @staticmethod
    def backward(ctx, grad):
        x, interaction = ctx.saved_tensors
        dt, rate = ctx.dt, ctx.rate
        weighted = grad * x
        grad_x = grad * (1 + dt * rate) + dt * (interaction.mT @ weighted)
        grad_r = dt * weighted
        grad_interaction = dt * torch.outer(weighted, x)
        return grad_x, grad_r, grad_interaction, None

    @staticmethod
    def example_inputs():
        return _glv_inputs()


class UnchartedGLVInteractionTransposed(torch.autograd.Function):
    bug = {"kind": "transposed", "input": "interaction",
           "note": "dx'_i / dA_ij = dt x_i x_j, i.e. outer(grad * x, x); the outer product is "
                   "taken the other way round"}

    @staticmethod
    def forward(ctx, x, r, interaction, dt):
        rate = r + interaction @ x
        ctx.rate = rate
        ctx.dt = dt
        ctx.save_for_backward(x, interaction)
        return x + dt * (x * rate)

    @staticmethod
    def backward(ctx, grad):
        x, interaction = ctx.saved_tensors
        dt, rate = ctx.dt, ctx.rate
        weighted = grad * x
        grad_x = grad * (1 + dt * rate) + dt * (interaction.mT @ weighted)
        grad_r = dt * weighted
        grad_interaction = dt * torch.outer(x, weighted)  # BUG
        return grad_x, grad_r, grad_interaction, None

    @staticmethod
    def example_inputs():
        return _glv_inputs()


class UnchartedGLVRateInplace(torch.autograd.Function):
    bug = {"kind": "inplace", "input": "x",
           "note": "forward multiplies the per-capita rate kept on ctx by x in place (mul_) to "
                   "form x (r + A x), so backward reads x (r + A x) where it expects r + A x"}

    @staticmethod
    def forward(ctx, x, r, interaction, dt):
        rate = r + interaction @ x
        ctx.rate = rate
        ctx.dt = dt
        ctx.save_for_backward(x, interaction)
        return x + dt * rate.mul_(x)  # BUG

    @staticmethod
    def backward(ctx, grad):
        x, interaction = ctx.saved_tensors
        dt, rate = ctx.dt, ctx.rate
        weighted = grad * x
        grad_x = grad * (1 + dt * rate) + dt * (interaction.mT @ weighted)
        grad_r = dt * weighted
        grad_interaction = dt * torch.outer(weighted, x)
        return grad_x, grad_r, grad_interaction, None

    @staticmethod
    def example_inputs():
        return _glv_inputs()


class UnchartedGLVSingleSpeciesRule(torch.autograd.Function):
    bug = {"kind": "none", "input": "x",
           "note": "the state's gradient written by the one-species rule d/dx x (r + a x) = "
                   "r + 2 a x, applied elementwise with A x in place of a x: no A.T coupling"}

    @staticmethod
    def forward(ctx, x, r, interaction, dt):
        rate = r + interaction @ x
        ctx.rate = rate
        ctx.dt = dt
        ctx.save_for_backward(x, interaction)
        return x + dt * (x * rate)

    @staticmethod
    def backward(ctx, grad):
        x, interaction = ctx.saved_tensors
        dt, rate = ctx.dt, ctx.rate
        weighted = grad * x
        grad_x = grad * (1 + dt * (rate + interaction @ x))  # BUG
        grad_r = dt * weighted
        grad_interaction = dt * torch.outer(weighted, x)
        return grad_x, grad_r, grad_interaction, None

    @staticmethod
    def example_inputs():
        return _glv_inputs()


# ------------------------------------------------------------------ two species, unrolled
def _lv_inputs():
    prey0 = torch.tensor(1.0, dtype=torch.float64, requires_grad=True)
    pred0 = torch.tensor(0.5, dtype=torch.float64, requires_grad=True)
    rates = torch.tensor([1.1, 0.6, 0.4, 0.8], dtype=torch.float64, requires_grad=True)
    return prey0, pred0, rates, 5, 0.2


def _lv_forward(ctx, prey0, pred0, rates, steps, dt):
    a, b, c, d = rates[0], rates[1], rates[2], rates[3]
    x, y = prey0, pred0
    path_x, path_y = [x], [y]
    for _ in range(steps):
        x, y = x + dt * (a * x - b * x * y), y + dt * (c * x * y - d * y)
        path_x.append(x)
        path_y.append(y)
    ctx.steps, ctx.dt = steps, dt
    ctx.save_for_backward(rates, torch.stack(path_x), torch.stack(path_y))
    return torch.stack(path_x[1:]).mean(), torch.stack(path_y[1:]).mean()


class UnchartedLotkaVolterraMeans(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, prey0, pred0, rates, steps, dt):
        return _lv_forward(ctx, prey0, pred0, rates, steps, dt)

    @staticmethod
    def backward(ctx, grad_prey, grad_pred):
        rates, path_x, path_y = ctx.saved_tensors
        a, b, c, d = rates[0], rates[1], rates[2], rates[3]
        steps, dt = ctx.steps, ctx.dt
        adj_x = torch.zeros_like(a)
        adj_y = torch.zeros_like(a)
        grads = [torch.zeros_like(a) for _ in range(4)]
        for t in reversed(range(steps)):
            adj_x, adj_y = adj_x + grad_prey / steps, adj_y + grad_pred / steps
            x, y = path_x[t], path_y[t]
            grads[0] = grads[0] + dt * adj_x * x
            grads[1] = grads[1] - dt * adj_x * x * y
            grads[2] = grads[2] + dt * adj_y * x * y
            grads[3] = grads[3] - dt * adj_y * y
            adj_x, adj_y = (adj_x * (1 + dt * (a - b * y)) + adj_y * dt * c * y,
                            -adj_x * dt * b * x + adj_y * (1 + dt * (c * x - d)))
        return adj_x, adj_y, torch.stack(grads), None, None

    @staticmethod
    def example_inputs():
        return _lv_inputs()


class UnchartedLotkaVolterraMeansNotAveraged(torch.autograd.Function):
    bug = {"kind": "scale", "input": "prey0",
           "note": "forward averages the trajectories over the steps, backward feeds each step the "
                   "full output gradient instead of gradient / steps: every gradient is steps "
                   "(5) times too large"}

    @staticmethod
    def forward(ctx, prey0, pred0, rates, steps, dt):
        return _lv_forward(ctx, prey0, pred0, rates, steps, dt)

    @staticmethod
    def backward(ctx, grad_prey, grad_pred):
        rates, path_x, path_y = ctx.saved_tensors
        a, b, c, d = rates[0], rates[1], rates[2], rates[3]
        steps, dt = ctx.steps, ctx.dt
        adj_x = torch.zeros_like(a)
        adj_y = torch.zeros_like(a)
        grads = [torch.zeros_like(a) for _ in range(4)]
        for t in reversed(range(steps)):
            adj_x, adj_y = adj_x + grad_prey, adj_y + grad_pred  # BUG
            x, y = path_x[t], path_y[t]
            grads[0] = grads[0] + dt * adj_x * x
            grads[1] = grads[1] - dt * adj_x * x * y
            grads[2] = grads[2] + dt * adj_y * x * y
            grads[3] = grads[3] - dt * adj_y * y
            adj_x, adj_y = (adj_x * (1 + dt * (a - b * y)) + adj_y * dt * c * y,
                            -adj_x * dt * b * x + adj_y * (1 + dt * (c * x - d)))
        return adj_x, adj_y, torch.stack(grads), None, None

    @staticmethod
    def example_inputs():
        return _lv_inputs()
