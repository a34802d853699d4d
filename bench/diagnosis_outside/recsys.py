"""Tabular / recommender ops with hand-written backwards: factorisation-machine pairwise interaction
(on field embeddings and on features with a factor matrix), a DCN cross layer, field-aware dot
products looked up by integer feature ids (repeated across the batch).

BLIND corpus bench/diagnosis_outside (see README.md): used only to score gradcli's diagnosis.
"""
import torch


def _seeded(*shape, seed, scale=1.0):
    gen = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=gen, dtype=torch.float64) * scale


# -------------------------------------------------------------- FM interaction on embeddings
class OutsideFMInteraction(torch.autograd.Function):
    """0.5 * sum_f [(sum_i v_bif)^2 - sum_i v_bif^2]: all pairwise dot products of a sample's fields."""

    bug = None

    @staticmethod
    def forward(ctx, v):
        total = v.sum(dim=1)
        ctx.save_for_backward(v, total)
        return 0.5 * (total.pow(2) - v.pow(2).sum(dim=1)).sum(dim=1)

    @staticmethod
    def backward(ctx, grad_out):
        v, total = ctx.saved_tensors
        return grad_out.view(-1, 1, 1) * (total.unsqueeze(1) - v)

    @staticmethod
    def example_inputs():
        return (_seeded(2, 4, 3, seed=81),)


class OutsideFMInteractionNoSelfTerm(torch.autograd.Function):
    """FM pairwise interaction, backward from the square-of-sum half."""

    bug = {"kind": "missing_term", "input": "v",
           "note": "the -sum_i v^2 half of the trick is not differentiated: dv = s instead of s - v"}

    @staticmethod
    def forward(ctx, v):
        square_of_sum = v.sum(1).square()
        sum_of_square = (v * v).sum(1)
        ctx.save_for_backward(v)
        return 0.5 * (square_of_sum - sum_of_square).sum(-1)

    @staticmethod
    def backward(ctx, grad_out):
        (v,) = ctx.saved_tensors
        field_sum = v.sum(dim=1, keepdim=True)
        grad_v = grad_out[:, None, None] * field_sum.expand_as(v)  # BUG
        return grad_v

    @staticmethod
    def example_inputs():
        return (_seeded(2, 4, 3, seed=81),)


# -------------------------------------------------------------- FM on features with factors
def _fm_inputs():
    return _seeded(4, 4, seed=82), _seeded(4, 3, seed=83, scale=0.7)


class OutsideFMFeatures(torch.autograd.Function):
    """0.5 * sum_f [(x V)_bf^2 - (x^2 V^2)_bf] for feature values x (B, n) and factors V (n, k)."""

    bug = None

    @staticmethod
    def forward(ctx, x, V):
        s = x @ V
        ctx.save_for_backward(x, V, s)
        return 0.5 * (s.pow(2) - x.pow(2) @ V.pow(2)).sum(dim=1)

    @staticmethod
    def backward(ctx, grad_out):
        x, V, s = ctx.saved_tensors
        g = grad_out[:, None]
        grad_x = g * (s @ V.T - x * V.pow(2).sum(dim=1))
        grad_V = x.T @ (g * s) - V * (g * x.pow(2)).sum(dim=0)[:, None]
        return grad_x, grad_V

    @staticmethod
    def example_inputs():
        return _fm_inputs()


class OutsideFMFeaturesFactorAxis(torch.autograd.Function):
    """FM on features; the factor gradient's diagonal correction reduced separately."""

    bug = {"kind": "wrong_axis", "input": "V",
           "note": "sum_b g_b x_bi^2 is taken over the feature axis (dim 1) instead of the batch (dim 0); "
                   "B = n, so it runs"}

    @staticmethod
    def forward(ctx, x, V):
        s = torch.mm(x, V)
        ctx.save_for_backward(x, V, s)
        return 0.5 * (s * s - torch.mm(x * x, V * V)).sum(1)

    @staticmethod
    def backward(ctx, grad_out):
        x, V, s = ctx.saved_tensors
        g = grad_out.unsqueeze(1)
        grad_x = g * (torch.mm(s, V.t()) - x * (V * V).sum(1))
        weight = (g * x * x).sum(dim=1)  # BUG
        grad_V = torch.mm(x.t(), g * s) - V * weight.unsqueeze(1)
        return grad_x, grad_V

    @staticmethod
    def example_inputs():
        return _fm_inputs()


# --------------------------------------------------------------------------- DCN cross layer
def _cross_inputs():
    return (_seeded(3, 4, seed=84), _seeded(3, 4, seed=85), _seeded(4, seed=86, scale=0.5),
            _seeded(4, seed=87, scale=0.1))


class OutsideDCNCross(torch.autograd.Function):
    """x_{l+1} = x0 * (x . w) + b + x (deep & cross network)."""

    bug = None

    @staticmethod
    def forward(ctx, x0, x, w, b):
        s = x @ w
        ctx.save_for_backward(x0, x, w, s)
        return x0 * s[:, None] + b + x

    @staticmethod
    def backward(ctx, grad_out):
        x0, x, w, s = ctx.saved_tensors
        coupling = (grad_out * x0).sum(dim=1)  # d out / d s, per sample
        grads = [None] * 4
        if ctx.needs_input_grad[0]:
            grads[0] = grad_out * s[:, None]
        if ctx.needs_input_grad[1]:
            grads[1] = coupling[:, None] * w + grad_out
        if ctx.needs_input_grad[2]:
            grads[2] = x.T @ coupling
        if ctx.needs_input_grad[3]:
            grads[3] = grad_out.sum(dim=0)
        return tuple(grads)

    @staticmethod
    def example_inputs():
        return _cross_inputs()


class OutsideDCNCrossWeightFromX0(torch.autograd.Function):
    """DCN cross layer, each gradient on its own line."""

    bug = {"kind": "wrong_variable", "input": "w",
           "note": "dw = x0^T c: the layer input x0 is used where the current x (the one dotted with w) belongs"}

    @staticmethod
    def forward(ctx, x0, x, w, b):
        s = torch.mv(x, w)
        ctx.save_for_backward(x0, x, w, s)
        return x0 * s.unsqueeze(1) + x + b

    @staticmethod
    def backward(ctx, grad_out):
        x0, x, w, s = ctx.saved_tensors
        c = torch.einsum("bd,bd->b", grad_out, x0)
        grad_x0 = grad_out * s.unsqueeze(1)
        grad_x = grad_out + torch.outer(c, w)
        grad_w = torch.mv(x0.t(), c)  # BUG
        grad_b = grad_out.sum(0)
        return grad_x0, grad_x, grad_w, grad_b

    @staticmethod
    def example_inputs():
        return _cross_inputs()


class OutsideDCNCrossNoBias(torch.autograd.Function):
    """DCN cross layer with the bias gradient guarded by needs_input_grad."""

    bug = {"kind": "zero", "input": "b",
           "note": "the bias is given a zero gradient (mistaken for a buffer)"}

    @staticmethod
    def forward(ctx, x0, x, w, b):
        s = x @ w
        ctx.save_for_backward(x0, x, w, s)
        return x0 * s[:, None] + b + x

    @staticmethod
    def backward(ctx, grad_out):
        x0, x, w, s = ctx.saved_tensors
        coupling = (grad_out * x0).sum(dim=1, keepdim=True)
        grad_x0 = grad_out * s[:, None]
        grad_x = coupling * w + grad_out
        grad_w = (coupling * x).sum(dim=0)
        grad_b = None
        if ctx.needs_input_grad[3]:
            grad_b = torch.zeros_like(grad_out[0])  # BUG
        return grad_x0, grad_x, grad_w, grad_b

    @staticmethod
    def example_inputs():
        return _cross_inputs()


# -------------------------------------------------------- field-aware dot products by index
def _ffm_inputs():
    emb = _seeded(4, 3, 2, seed=88)  # (features, fields, k)
    feats = torch.tensor([[0, 1, 2], [0, 3, 2], [1, 1, 3]], dtype=torch.int64)  # (B, fields), repeats
    return emb, feats


class OutsideFieldAwareDot(torch.autograd.Function):
    """FFM: y_b = sum_{p<q} <E[f_bp, q], E[f_bq, p]>, slot p of a sample being field p."""

    bug = None

    @staticmethod
    def forward(ctx, emb, feats):
        fields = feats.shape[1]
        out = emb.new_zeros(feats.shape[0])
        for p in range(fields):
            for q in range(p + 1, fields):
                out = out + (emb[feats[:, p], q] * emb[feats[:, q], p]).sum(-1)
        ctx.save_for_backward(emb, feats)
        return out

    @staticmethod
    def backward(ctx, grad_out):
        emb, feats = ctx.saved_tensors
        fields = feats.shape[1]
        grad_emb = torch.zeros_like(emb)
        g = grad_out[:, None]
        for p in range(fields):
            for q in range(p + 1, fields):
                left, right = feats[:, p], feats[:, q]
                grad_emb.index_put_((left, torch.full_like(left, q)), g * emb[right, p], accumulate=True)
                grad_emb.index_put_((right, torch.full_like(right, p)), g * emb[left, q], accumulate=True)
        return grad_emb, None

    @staticmethod
    def example_inputs():
        return _ffm_inputs()


class OutsideFieldAwareDotIndexedAdd(torch.autograd.Function):
    """FFM by index; backward adds into the table with indexed read-modify-write."""

    bug = {"kind": "not_accumulated", "input": "emb",
           "note": "grad[idx, q] = grad[idx, q] + ... keeps one write per repeated feature id in the batch"}

    @staticmethod
    def forward(ctx, emb, feats):
        n_fields = feats.shape[1]
        pairs = [(p, q) for p in range(n_fields) for q in range(p + 1, n_fields)]
        ctx.pairs = pairs
        ctx.save_for_backward(emb, feats)
        terms = [torch.einsum("bk,bk->b", emb[feats[:, p], q], emb[feats[:, q], p]) for p, q in pairs]
        return torch.stack(terms).sum(0)

    @staticmethod
    def backward(ctx, grad_out):
        emb, feats = ctx.saved_tensors
        grad = emb.new_zeros(emb.shape)
        g = grad_out.unsqueeze(-1)
        for p, q in ctx.pairs:
            a_ids, b_ids = feats[:, p], feats[:, q]
            grad[a_ids, q] = grad[a_ids, q] + g * emb[b_ids, p]  # BUG
            grad.index_put_((b_ids, torch.full_like(b_ids, p)), g * emb[a_ids, q], accumulate=True)
        return grad, None

    @staticmethod
    def example_inputs():
        return _ffm_inputs()
