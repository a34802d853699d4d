import gradcli as torch

# An envelope follower with learned attack and release coefficients:
# e[t] = e[t-1] + c[t] (|x[t]| - e[t-1]), c[t] = attack while rising, release while falling.
# Forward and backward are Python loops over time (numpy engine).


def _env_inputs():
    gen = torch.Generator().manual_seed(91)
    x = torch.randn(2, 6, dtype=torch.float64, generator=gen)
    return x, torch.tensor([0.6], dtype=torch.float64), torch.tensor([0.2], dtype=torch.float64)


def _env_forward(ctx, x, attack, release):
    steps = x.shape[1]
    env = x.new_zeros(x.shape[0])
    outs = []
    for t in range(steps):
        rect = x[:, t].abs()
        coef = torch.where(rect > env, attack, release)
        env = env + coef * (rect - env)
        outs.append(env)
    e = torch.stack(outs, dim=1)
    ctx.save_for_backward(x, attack, release, e)
    return e


class FurtherEnvelopeFollower(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, attack, release):
        return _env_forward(ctx, x, attack, release)

    @staticmethod
    def backward(ctx, grad):
        x, attack, release, e = ctx.saved_tensors
        steps = x.shape[1]
        carry = x.new_zeros(x.shape[0])
        g_att = x.new_zeros(1)
        g_rel = x.new_zeros(1)
        g_cols = [None] * steps
        for t in reversed(range(steps)):
            e_prev = e[:, t - 1] if t > 0 else x.new_zeros(x.shape[0])
            rect = x[:, t].abs()
            rising = rect > e_prev
            coef = torch.where(rising, attack, release)
            g_e = grad[:, t] + carry
            g_cols[t] = g_e * coef * torch.sign(x[:, t])
            g_att = g_att + torch.where(rising, g_e * (rect - e_prev), 0.0 * rect).sum()
            g_rel = g_rel + torch.where(rising, 0.0 * rect, g_e * (rect - e_prev)).sum()
            carry = g_e * (1 - coef)
        return torch.stack(g_cols, dim=1), g_att, g_rel

    @staticmethod
    def example_inputs():
        return _env_inputs()


class FurtherEnvelopeFollowerSignedBranch(torch.autograd.Function):
    bug = {"kind": "region", "input": "x",
           "note": "backward recomputes the rising branch from x > e_prev, forgetting the rectifier, so negative samples take the wrong coefficient"}

    @staticmethod
    def forward(ctx, x, attack, release):
        return _env_forward(ctx, x, attack, release)

    @staticmethod
    def backward(ctx, grad):
        x, attack, release, e = ctx.saved_tensors
        steps = x.shape[1]
        carry = x.new_zeros(x.shape[0])
        g_att = x.new_zeros(1)
        g_rel = x.new_zeros(1)
        g_cols = [None] * steps
        for t in reversed(range(steps)):
            e_prev = e[:, t - 1] if t > 0 else x.new_zeros(x.shape[0])
            rect = x[:, t].abs()
            rising = x[:, t] > e_prev  # BUG
            coef = torch.where(rising, attack, release)
            g_e = grad[:, t] + carry
            g_cols[t] = g_e * coef * torch.sign(x[:, t])
            g_att = g_att + torch.where(rising, g_e * (rect - e_prev), 0.0 * rect).sum()
            g_rel = g_rel + torch.where(rising, 0.0 * rect, g_e * (rect - e_prev)).sum()
            carry = g_e * (1 - coef)
        return torch.stack(g_cols, dim=1), g_att, g_rel

    @staticmethod
    def example_inputs():
        return _env_inputs()


class FurtherEnvelopeFollowerTimesSwapped(torch.autograd.Function):
    bug = {"kind": "swapped", "input": "attack",
           "note": "the attack and release gradients are returned in each other's positions"}

    @staticmethod
    def forward(ctx, x, attack, release):
        return _env_forward(ctx, x, attack, release)

    @staticmethod
    def backward(ctx, grad):
        x, attack, release, e = ctx.saved_tensors
        steps = x.shape[1]
        carry = x.new_zeros(x.shape[0])
        g_att = x.new_zeros(1)
        g_rel = x.new_zeros(1)
        g_cols = [None] * steps
        for t in reversed(range(steps)):
            e_prev = e[:, t - 1] if t > 0 else x.new_zeros(x.shape[0])
            rect = x[:, t].abs()
            rising = rect > e_prev
            coef = torch.where(rising, attack, release)
            g_e = grad[:, t] + carry
            g_cols[t] = g_e * coef * torch.sign(x[:, t])
            g_att = g_att + torch.where(rising, g_e * (rect - e_prev), 0.0 * rect).sum()
            g_rel = g_rel + torch.where(rising, 0.0 * rect, g_e * (rect - e_prev)).sum()
            carry = g_e * (1 - coef)
        return torch.stack(g_cols, dim=1), g_rel, g_att  # BUG

    @staticmethod
    def example_inputs():
        return _env_inputs()


class FurtherEnvelopeFollowerFixedRelease(torch.autograd.Function):
    bug = {"kind": "zero", "input": "release",
           "note": "the release coefficient is treated as a fixed hyper-parameter and gets None although it is learned"}

    @staticmethod
    def forward(ctx, x, attack, release):
        return _env_forward(ctx, x, attack, release)

    @staticmethod
    def backward(ctx, grad):
        x, attack, release, e = ctx.saved_tensors
        steps = x.shape[1]
        carry = x.new_zeros(x.shape[0])
        g_att = x.new_zeros(1)
        g_cols = [None] * steps
        for t in reversed(range(steps)):
            e_prev = e[:, t - 1] if t > 0 else x.new_zeros(x.shape[0])
            rect = x[:, t].abs()
            rising = rect > e_prev
            coef = torch.where(rising, attack, release)
            g_e = grad[:, t] + carry
            g_cols[t] = g_e * coef * torch.sign(x[:, t])
            g_att = g_att + torch.where(rising, g_e * (rect - e_prev), 0.0 * rect).sum()
            carry = g_e * (1 - coef)
        g_rel = None  # BUG
        return torch.stack(g_cols, dim=1), g_att, g_rel

    @staticmethod
    def example_inputs():
        return _env_inputs()


class FurtherEnvelopeFollowerCarrySign(torch.autograd.Function):
    bug = {"kind": "term_sign", "input": "x",
           "note": "d e[t] / d e[t-1] = 1 - c is written c - 1, so the carried term enters with the wrong sign"}

    @staticmethod
    def forward(ctx, x, attack, release):
        return _env_forward(ctx, x, attack, release)

    @staticmethod
    def backward(ctx, grad):
        x, attack, release, e = ctx.saved_tensors
        steps = x.shape[1]
        carry = x.new_zeros(x.shape[0])
        g_att = x.new_zeros(1)
        g_rel = x.new_zeros(1)
        g_cols = [None] * steps
        for t in reversed(range(steps)):
            e_prev = e[:, t - 1] if t > 0 else x.new_zeros(x.shape[0])
            rect = x[:, t].abs()
            rising = rect > e_prev
            coef = torch.where(rising, attack, release)
            g_e = grad[:, t] + carry
            g_cols[t] = g_e * coef * torch.sign(x[:, t])
            g_att = g_att + torch.where(rising, g_e * (rect - e_prev), 0.0 * rect).sum()
            g_rel = g_rel + torch.where(rising, 0.0 * rect, g_e * (rect - e_prev)).sum()
            carry = g_e * (coef - 1)  # BUG
        return torch.stack(g_cols, dim=1), g_att, g_rel

    @staticmethod
    def example_inputs():
        return _env_inputs()


class FurtherEnvelopeFollowerAttackGuess(torch.autograd.Function):
    bug = {"kind": "none", "input": "attack",
           "note": "the attack gradient is taken as sum(grad * e / attack) after the loop, a made-up formula with no recurrence"}

    @staticmethod
    def forward(ctx, x, attack, release):
        return _env_forward(ctx, x, attack, release)

    @staticmethod
    def backward(ctx, grad):
        x, attack, release, e = ctx.saved_tensors
        steps = x.shape[1]
        carry = x.new_zeros(x.shape[0])
        g_rel = x.new_zeros(1)
        g_cols = [None] * steps
        for t in reversed(range(steps)):
            e_prev = e[:, t - 1] if t > 0 else x.new_zeros(x.shape[0])
            rect = x[:, t].abs()
            rising = rect > e_prev
            coef = torch.where(rising, attack, release)
            g_e = grad[:, t] + carry
            g_cols[t] = g_e * coef * torch.sign(x[:, t])
            g_rel = g_rel + torch.where(rising, 0.0 * rect, g_e * (rect - e_prev)).sum()
            carry = g_e * (1 - coef)
        g_att = (grad * e / attack).sum().reshape(1)  # BUG
        return torch.stack(g_cols, dim=1), g_att, g_rel

    @staticmethod
    def example_inputs():
        return _env_inputs()
