import gradcli as torch

"""Ray marching by Python loops over the samples of each ray, on gradcli's numpy engine: densities
to alpha = 1 - exp(-sigma * delta), front-to-back compositing of colour and opacity (two outputs),
and the expected depth along the ray."""

DELTA = 0.5   # step between samples


def _march_inputs(seed):
    gen = torch.Generator().manual_seed(seed)
    sigma = 0.2 + 1.8 * torch.rand(3, 5, dtype=torch.float64, generator=gen)
    rgb = torch.rand(3, 5, 3, dtype=torch.float64, generator=gen)
    return sigma, rgb


def _march_forward(ctx, sigma, rgb):
    R, S = sigma.shape
    trans = torch.ones(R, dtype=sigma.dtype)
    color = torch.zeros(R, 3, dtype=sigma.dtype)
    opacity = torch.zeros(R, dtype=sigma.dtype)
    weights, before, after = [], [], []
    for t in range(S):
        alpha = 1 - torch.exp(-sigma[:, t] * DELTA)
        w = trans * alpha
        color = color + w[:, None] * rgb[:, t]
        opacity = opacity + w
        before.append(trans)
        trans = trans * (1 - alpha)
        after.append(trans)
        weights.append(w)
    ctx.save_for_backward(sigma, rgb, torch.stack(weights, dim=1), torch.stack(before, dim=1),
                          torch.stack(after, dim=1))
    return color, opacity


class OverseasMarchComposite(torch.autograd.Function):
    """(colour, opacity) = (sum_t w_t rgb_t, sum_t w_t), w_t = T_t alpha_t."""

    bug = None

    @staticmethod
    def forward(ctx, sigma, rgb):
        return _march_forward(ctx, sigma, rgb)

    @staticmethod
    def backward(ctx, grad_color, grad_opacity):
        sigma, rgb, weights, t_before, t_after = ctx.saved_tensors
        R, S = sigma.shape
        grad_sigma = torch.zeros_like(sigma)
        grad_rgb = torch.zeros_like(rgb)
        later = torch.zeros(R, dtype=sigma.dtype)
        for t in reversed(range(S)):
            q = (grad_color * rgb[:, t]).sum(-1) + grad_opacity
            grad_sigma[:, t] = DELTA * (t_after[:, t] * q - later)
            grad_rgb[:, t] = weights[:, t].unsqueeze(-1) * grad_color
            later = later + weights[:, t] * q
        return grad_sigma, grad_rgb

    @staticmethod
    def example_inputs():
        return _march_inputs(401)


class OverseasMarchCompositeNoOpacity(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "sigma",
           "note": "the opacity output's gradient is left out of the per-sample cotangent q"}

    @staticmethod
    def forward(ctx, sigma, rgb):
        return _march_forward(ctx, sigma, rgb)

    @staticmethod
    def backward(ctx, grad_color, grad_opacity):
        sigma, rgb, weights, t_before, t_after = ctx.saved_tensors
        R, S = sigma.shape
        grad_sigma = torch.zeros_like(sigma)
        grad_rgb = torch.zeros_like(rgb)
        later = torch.zeros(R, dtype=sigma.dtype)
        for t in reversed(range(S)):
            q = (grad_color * rgb[:, t]).sum(-1)  # BUG
            grad_sigma[:, t] = DELTA * (t_after[:, t] * q - later)
            grad_rgb[:, t] = weights[:, t].unsqueeze(-1) * grad_color
            later = later + weights[:, t] * q
        return grad_sigma, grad_rgb

    @staticmethod
    def example_inputs():
        return _march_inputs(402)


class OverseasMarchCompositeTransBefore(torch.autograd.Function):
    bug = {"kind": "wrong_variable", "input": "sigma",
           "note": "d w_t / d sigma_t = delta T_{t+1}, but the transmittance before the sample, T_t, is used"}

    @staticmethod
    def forward(ctx, sigma, rgb):
        return _march_forward(ctx, sigma, rgb)

    @staticmethod
    def backward(ctx, grad_color, grad_opacity):
        sigma, rgb, weights, t_before, t_after = ctx.saved_tensors
        R, S = sigma.shape
        grad_sigma = torch.zeros_like(sigma)
        grad_rgb = torch.zeros_like(rgb)
        later = torch.zeros(R, dtype=sigma.dtype)
        for t in reversed(range(S)):
            q = (grad_color * rgb[:, t]).sum(-1) + grad_opacity
            grad_sigma[:, t] = DELTA * (t_before[:, t] * q - later)  # BUG
            grad_rgb[:, t] = weights[:, t].unsqueeze(-1) * grad_color
            later = later + weights[:, t] * q
        return grad_sigma, grad_rgb

    @staticmethod
    def example_inputs():
        return _march_inputs(403)


class OverseasMarchCompositeFrontToBack(torch.autograd.Function):
    bug = {"kind": "missing_flip", "input": "sigma",
           "note": "the backward loop runs front to back, so the carried sum holds the samples in front instead of behind"}

    @staticmethod
    def forward(ctx, sigma, rgb):
        return _march_forward(ctx, sigma, rgb)

    @staticmethod
    def backward(ctx, grad_color, grad_opacity):
        sigma, rgb, weights, t_before, t_after = ctx.saved_tensors
        R, S = sigma.shape
        grad_sigma = torch.zeros_like(sigma)
        grad_rgb = torch.zeros_like(rgb)
        later = torch.zeros(R, dtype=sigma.dtype)
        for t in range(S):  # BUG
            q = (grad_color * rgb[:, t]).sum(-1) + grad_opacity
            grad_sigma[:, t] = DELTA * (t_after[:, t] * q - later)
            grad_rgb[:, t] = weights[:, t].unsqueeze(-1) * grad_color
            later = later + weights[:, t] * q
        return grad_sigma, grad_rgb

    @staticmethod
    def example_inputs():
        return _march_inputs(404)


class OverseasMarchCompositeNoDelta(torch.autograd.Function):
    bug = {"kind": "scale", "input": "sigma",
           "note": "alpha = 1 - exp(-sigma delta): the step delta = 0.5 of the chain rule is forgotten"}

    @staticmethod
    def forward(ctx, sigma, rgb):
        return _march_forward(ctx, sigma, rgb)

    @staticmethod
    def backward(ctx, grad_color, grad_opacity):
        sigma, rgb, weights, t_before, t_after = ctx.saved_tensors
        R, S = sigma.shape
        grad_sigma = torch.zeros_like(sigma)
        grad_rgb = torch.zeros_like(rgb)
        later = torch.zeros(R, dtype=sigma.dtype)
        for t in reversed(range(S)):
            q = (grad_color * rgb[:, t]).sum(-1) + grad_opacity
            grad_sigma[:, t] = t_after[:, t] * q - later  # BUG
            grad_rgb[:, t] = weights[:, t].unsqueeze(-1) * grad_color
            later = later + weights[:, t] * q
        return grad_sigma, grad_rgb

    @staticmethod
    def example_inputs():
        return _march_inputs(405)


def _depth_inputs(seed):
    gen = torch.Generator().manual_seed(seed)
    alpha = 0.1 + 0.6 * torch.rand(3, 4, dtype=torch.float64, generator=gen)
    z = torch.linspace(1.0, 4.0, 4, dtype=torch.float64) + 0.2 * torch.rand(3, 4, dtype=torch.float64,
                                                                            generator=gen)
    return alpha, z




class OverseasExpectedDepth(torch.autograd.Function):
    """D = sum_t T_t alpha_t z_t, the transmittances kept in a list on ctx as the loop goes."""

    bug = None

    @staticmethod
    def forward(ctx, alpha, z):
        R, S = alpha.shape
        ctx.save_for_backward(alpha, z)
        ctx.trans = []
        trans = torch.ones(R, dtype=alpha.dtype)
        depth = torch.zeros(R, dtype=alpha.dtype)
        for t in range(S):
            ctx.trans.append(trans)
            depth = depth + trans * alpha[:, t] * z[:, t]
            trans = trans * (1 - alpha[:, t])
        return depth

    @staticmethod
    def backward(ctx, grad_depth):
        alpha, z = ctx.saved_tensors
        R, S = alpha.shape
        trans = torch.stack(ctx.trans, dim=1)
        wz = trans * alpha * z
        grad_alpha = torch.zeros_like(alpha)
        later = torch.zeros(R, dtype=alpha.dtype)
        for t in reversed(range(S)):
            grad_alpha[:, t] = grad_depth * (trans[:, t] * z[:, t] - later / (1 - alpha[:, t]))
            later = later + wz[:, t]
        return grad_alpha, grad_depth[:, None] * trans * alpha

    @staticmethod
    def example_inputs():
        return _depth_inputs(406)


class OverseasExpectedDepthInPlaceTrans(torch.autograd.Function):
    bug = {"kind": "inplace", "input": "alpha",
           "note": "the running transmittance is appended to the list on ctx and then updated with mul_, so every entry aliases the last value"}

    @staticmethod
    def forward(ctx, alpha, z):
        R, S = alpha.shape
        ctx.save_for_backward(alpha, z)
        ctx.trans = []
        trans = torch.ones(R, dtype=alpha.dtype)
        depth = torch.zeros(R, dtype=alpha.dtype)
        for t in range(S):
            ctx.trans.append(trans)
            depth = depth + trans * alpha[:, t] * z[:, t]
            trans.mul_(1 - alpha[:, t])  # BUG
        return depth

    @staticmethod
    def backward(ctx, grad_depth):
        alpha, z = ctx.saved_tensors
        R, S = alpha.shape
        trans = torch.stack(ctx.trans, dim=1)
        wz = trans * alpha * z
        grad_alpha = torch.zeros_like(alpha)
        later = torch.zeros(R, dtype=alpha.dtype)
        for t in reversed(range(S)):
            grad_alpha[:, t] = grad_depth * (trans[:, t] * z[:, t] - later / (1 - alpha[:, t]))
            later = later + wz[:, t]
        return grad_alpha, grad_depth[:, None] * trans * alpha

    @staticmethod
    def example_inputs():
        return _depth_inputs(407)


class OverseasExpectedDepthFixedSamples(torch.autograd.Function):
    bug = {"kind": "zero", "input": "z",
           "note": "the sample depths are assumed fixed (as in NeRF) and get None, though here they are learned"}

    @staticmethod
    def forward(ctx, alpha, z):
        R, S = alpha.shape
        ctx.save_for_backward(alpha, z)
        ctx.trans = []
        trans = torch.ones(R, dtype=alpha.dtype)
        depth = torch.zeros(R, dtype=alpha.dtype)
        for t in range(S):
            ctx.trans.append(trans)
            depth = depth + trans * alpha[:, t] * z[:, t]
            trans = trans * (1 - alpha[:, t])
        return depth

    @staticmethod
    def backward(ctx, grad_depth):
        alpha, z = ctx.saved_tensors
        R, S = alpha.shape
        trans = torch.stack(ctx.trans, dim=1)
        wz = trans * alpha * z
        grad_alpha = torch.zeros_like(alpha)
        later = torch.zeros(R, dtype=alpha.dtype)
        for t in reversed(range(S)):
            grad_alpha[:, t] = grad_depth * (trans[:, t] * z[:, t] - later / (1 - alpha[:, t]))
            later = later + wz[:, t]
        return grad_alpha, None  # BUG

    @staticmethod
    def example_inputs():
        return _depth_inputs(408)
