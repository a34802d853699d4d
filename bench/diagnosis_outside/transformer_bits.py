"""Transformer pieces with hand-written backwards: ALiBi bias with learned slopes, a relative
position bias looked up by bucket index, GeGLU, ReGLU, a gated (highway) residual, QK-norm scores.

BLIND corpus bench/diagnosis_outside (see README.md): used only to score gradcli's diagnosis.
"""
import math

import torch
import torch.nn.functional as F


def _seeded(*shape, seed, scale=1.0, shift=0.0, uniform=False):
    gen = torch.Generator().manual_seed(seed)
    make = torch.rand if uniform else torch.randn
    return make(*shape, generator=gen, dtype=torch.float64) * scale + shift


def _alibi_inputs():
    return _seeded(2, 4, 4, seed=51), _seeded(2, seed=52, scale=0.5, shift=0.25, uniform=True)


# ----------------------------------------------------------------------------------- ALiBi
class OutsideAlibiBias(torch.autograd.Function):
    """scores + m_h * (-|i - j|) with a learned slope m_h per head; scores (H, T, T)."""

    bug = None

    @staticmethod
    def forward(ctx, scores, slopes):
        pos = torch.arange(scores.shape[-1], dtype=scores.dtype)
        distance = -(pos[None, :] - pos[:, None]).abs()
        ctx.save_for_backward(distance)
        return scores + slopes[:, None, None] * distance

    @staticmethod
    def backward(ctx, grad_out):
        (distance,) = ctx.saved_tensors
        grad_slopes = (grad_out * distance).sum(dim=(1, 2))
        return grad_out, grad_slopes

    @staticmethod
    def example_inputs():
        return _alibi_inputs()


class OutsideAlibiBiasKeyReduce(torch.autograd.Function):
    """ALiBi with learned slopes; the slope gradient reduced over the keys."""

    bug = {"kind": "not_reduced", "input": "slopes",
           "note": "sums over the key axis only: an (H, T) gradient for the (H,) slopes, the query axis is "
                   "never reduced (torch refuses the shape: this one fails by raising)"}

    @staticmethod
    def forward(ctx, scores, slopes):
        n = scores.shape[-1]
        pos = torch.arange(n, dtype=scores.dtype)
        ctx.distance = -(pos.view(1, n) - pos.view(n, 1)).abs()
        return scores + slopes.view(-1, 1, 1) * ctx.distance

    @staticmethod
    def backward(ctx, grad_out):
        grad_slopes = (grad_out * ctx.distance).sum(dim=-1)  # BUG
        return grad_out, grad_slopes

    @staticmethod
    def example_inputs():
        return _alibi_inputs()


class OutsideAlibiBiasRecomputedDistance(torch.autograd.Function):
    """ALiBi with learned slopes; backward rebuilds the distance matrix instead of saving it."""

    bug = {"kind": "sign", "input": "slopes",
           "note": "the rebuilt distance is |i - j| without the minus the forward bias has"}

    @staticmethod
    def forward(ctx, scores, slopes):
        pos = torch.arange(scores.shape[-1], dtype=scores.dtype)
        bias = -(pos.unsqueeze(0) - pos.unsqueeze(1)).abs()
        ctx.length = scores.shape[-1]
        return scores + slopes[:, None, None] * bias

    @staticmethod
    def backward(ctx, grad_out):
        pos = torch.arange(ctx.length, dtype=grad_out.dtype)
        distance = (pos.unsqueeze(0) - pos.unsqueeze(1)).abs()  # BUG
        grad_slopes = torch.einsum("hij,ij->h", grad_out, distance)
        return grad_out, grad_slopes

    @staticmethod
    def example_inputs():
        return _alibi_inputs()


# ------------------------------------------------------------ relative position bias by index
def _relpos_inputs():
    t = torch.arange(4)
    buckets = (t[None, :] - t[:, None]).clamp(-2, 2) + 2  # (T, T) ids 0..4, repeated along diagonals
    return _seeded(2, 4, 4, seed=53), _seeded(2, 5, seed=54), buckets


class OutsideRelativePositionBias(torch.autograd.Function):
    """scores + table[h, bucket(i, j)], the bucket ids an integer (T, T) tensor."""

    bug = None

    @staticmethod
    def forward(ctx, scores, table, rel_idx):
        ctx.save_for_backward(rel_idx)
        ctx.buckets = table.shape[1]
        return scores + table[:, rel_idx]

    @staticmethod
    def backward(ctx, grad_out):
        (rel_idx,) = ctx.saved_tensors
        heads = grad_out.shape[0]
        grad_table = grad_out.new_zeros(heads, ctx.buckets)
        grad_table.index_add_(1, rel_idx.reshape(-1), grad_out.reshape(heads, -1))
        return grad_out, grad_table, None

    @staticmethod
    def example_inputs():
        return _relpos_inputs()


class OutsideRelativePositionBiasAssign(torch.autograd.Function):
    """Relative position bias by bucket index, the table gradient written by indexing."""

    bug = {"kind": "not_accumulated", "input": "table",
           "note": "indexed assignment keeps one (i, j) per bucket; buckets shared along a diagonal must sum"}

    @staticmethod
    def forward(ctx, scores, table, rel_idx):
        ctx.save_for_backward(rel_idx)
        ctx.table_shape = table.shape
        return scores + table[:, rel_idx]

    @staticmethod
    def backward(ctx, grad_out):
        (rel_idx,) = ctx.saved_tensors
        heads = grad_out.shape[0]
        grad_table = torch.zeros(ctx.table_shape, dtype=grad_out.dtype)
        grad_table[:, rel_idx.flatten()] = grad_out.reshape(heads, -1)  # BUG
        return grad_out.clone(), grad_table, None

    @staticmethod
    def example_inputs():
        return _relpos_inputs()


# ------------------------------------------------------------------------------------ GeGLU
def _gelu_parts(z):
    cdf = 0.5 * (1.0 + torch.erf(z / math.sqrt(2.0)))
    pdf = torch.exp(-0.5 * z * z) / math.sqrt(2.0 * math.pi)
    return cdf, pdf


class OutsideGeGLU(torch.autograd.Function):
    """a * gelu(gate) with (a, gate) the two halves of the last axis (erf GELU)."""

    bug = None

    @staticmethod
    def forward(ctx, x):
        a, gate = x.chunk(2, dim=-1)
        ctx.save_for_backward(a, gate)
        return a * F.gelu(gate)

    @staticmethod
    def backward(ctx, grad_out):
        a, gate = ctx.saved_tensors
        cdf, pdf = _gelu_parts(gate)
        grad_a = grad_out * gate * cdf
        grad_gate = grad_out * a * (cdf + gate * pdf)
        return torch.cat([grad_a, grad_gate], dim=-1)


class OutsideGeGLUCdfOnly(torch.autograd.Function):
    """GeGLU, gelu'(z) taken as the normal CDF."""

    bug = {"kind": "missing_term", "input": "x",
           "note": "gelu'(z) = Phi(z) + z phi(z); the z phi(z) term is dropped for the gate half"}

    @staticmethod
    def forward(ctx, x):
        half = x.shape[-1] // 2
        a, gate = x[..., :half], x[..., half:]
        gelu = F.gelu(gate)
        ctx.save_for_backward(a, gate, gelu)
        return a * gelu

    @staticmethod
    def backward(ctx, grad_out):
        a, gate, gelu = ctx.saved_tensors
        cdf, _ = _gelu_parts(gate)
        d_gelu = cdf  # BUG
        grad_x = torch.empty(a.shape[0], 2 * a.shape[1], dtype=grad_out.dtype)
        half = a.shape[1]
        grad_x[:, :half] = grad_out * gelu
        grad_x[:, half:] = grad_out * a * d_gelu
        return grad_x


# ------------------------------------------------------------------------------------ ReGLU
class OutsideReGLU(torch.autograd.Function):
    """value * relu(gate)."""

    bug = None

    @staticmethod
    def forward(ctx, value, gate):
        ctx.save_for_backward(value, gate)
        return value * gate.clamp(min=0)

    @staticmethod
    def backward(ctx, grad_out):
        value, gate = ctx.saved_tensors
        open_ = (gate > 0).to(grad_out.dtype)
        grad_value = grad_out * gate.clamp(min=0)
        grad_gate = grad_out * value * open_
        return grad_value, grad_gate


class OutsideReGLUSwapped(torch.autograd.Function):
    """value * relu(gate), backward through a shared activation."""

    bug = {"kind": "swapped", "input": "value",
           "note": "returns (grad_gate, grad_value): the two inputs' gradients change places"}

    @staticmethod
    def forward(ctx, value, gate):
        activated = torch.relu(gate)
        ctx.save_for_backward(value, gate, activated)
        return value * activated

    @staticmethod
    def backward(ctx, grad_out):
        value, gate, activated = ctx.saved_tensors
        grad_value = grad_out * activated
        grad_gate = torch.where(gate > 0, grad_out * value, torch.zeros_like(value))
        return grad_gate, grad_value  # BUG


# -------------------------------------------------------------------- gated (highway) residual
class OutsideGatedResidual(torch.autograd.Function):
    """x + sigmoid(z) * (h - x): a highway mix of the skip x and the branch h."""

    bug = None

    @staticmethod
    def forward(ctx, x, h, z):
        gate = torch.sigmoid(z)
        diff = h - x
        ctx.save_for_backward(gate, diff)
        return x + gate * diff

    @staticmethod
    def backward(ctx, grad_out):
        gate, diff = ctx.saved_tensors
        grad_x = grad_out * (1.0 - gate)
        grad_h = grad_out * gate
        grad_z = grad_out * diff * gate * (1.0 - gate)
        return grad_x, grad_h, grad_z


class OutsideGatedResidualInPlace(torch.autograd.Function):
    """Highway residual, the output built in place in the difference buffer to save memory."""

    bug = {"kind": "inplace", "input": "z",
           "note": "h - x is kept on ctx and then turned in place into the output: the gate gradient "
                   "reads the output where it needs h - x"}

    @staticmethod
    def forward(ctx, x, h, z):
        gate = torch.sigmoid(z)
        diff = h - x
        ctx.gate = gate
        ctx.diff = diff
        out = diff.mul_(gate).add_(x)  # BUG
        return out

    @staticmethod
    def backward(ctx, grad_out):
        gate, diff = ctx.gate, ctx.diff
        grad_x = grad_out * (1.0 - gate)
        grad_h = grad_out * gate
        grad_z = grad_out * diff * gate * (1.0 - gate)
        return grad_x, grad_h, grad_z


# ---------------------------------------------------------------------------------- QK-norm
HEADS, HEAD_DIM, TAU = 2, 3, 2.0


def _split_heads(v):
    t = v.shape[0]
    return v.view(t, HEADS, HEAD_DIM).transpose(0, 1)  # (H, T, D)


def _through_unit_norm(v, unit, grad_unit):
    """Backward of v / |v| along the last axis."""
    radius = v.norm(dim=-1, keepdim=True)
    return (grad_unit - unit * (unit * grad_unit).sum(dim=-1, keepdim=True)) / radius


def _qk_inputs():
    return _seeded(4, 6, seed=55), _seeded(4, 6, seed=56)


class OutsideQKNormScores(torch.autograd.Function):
    """tau * q_hat k_hat^T per head, q and k (T, H*D) split into heads and unit-normalised per head."""

    bug = None

    @staticmethod
    def forward(ctx, q, k):
        qh, kh = _split_heads(q), _split_heads(k)
        qn = qh / qh.norm(dim=-1, keepdim=True)
        kn = kh / kh.norm(dim=-1, keepdim=True)
        ctx.save_for_backward(qh, kh, qn, kn)
        return TAU * qn @ kn.transpose(-1, -2)

    @staticmethod
    def backward(ctx, grad_out):
        qh, kh, qn, kn = ctx.saved_tensors
        t = qh.shape[1]
        grad_qh = _through_unit_norm(qh, qn, TAU * grad_out @ kn)
        grad_kh = _through_unit_norm(kh, kn, TAU * grad_out.transpose(-1, -2) @ qn)
        grad_q = grad_qh.transpose(0, 1).reshape(t, HEADS * HEAD_DIM)
        grad_k = grad_kh.transpose(0, 1).reshape(t, HEADS * HEAD_DIM)
        return grad_q, grad_k

    @staticmethod
    def example_inputs():
        return _qk_inputs()


class OutsideQKNormScoresFlatQuery(torch.autograd.Function):
    """QK-norm scores; the per-head query gradient flattened back to (T, H*D)."""

    bug = {"kind": "missing_reshape", "input": "q",
           "note": "the (H, T, D) query gradient is reshaped to (T, H*D) without moving heads back "
                   "behind time",
           "also": ["transposed"]}

    @staticmethod
    def forward(ctx, q, k):
        qh, kh = _split_heads(q), _split_heads(k)
        qn = F.normalize(qh, dim=-1)
        kn = F.normalize(kh, dim=-1)
        ctx.save_for_backward(qh, kh, qn, kn)
        return TAU * torch.einsum("htd,hsd->hts", qn, kn)

    @staticmethod
    def backward(ctx, grad_out):
        qh, kh, qn, kn = ctx.saved_tensors
        t = qh.shape[1]
        grad_qn = TAU * torch.einsum("hts,hsd->htd", grad_out, kn)
        grad_kn = TAU * torch.einsum("hts,htd->hsd", grad_out, qn)
        grad_q = _through_unit_norm(qh, qn, grad_qn).reshape(t, -1)  # BUG
        grad_k = _through_unit_norm(kh, kn, grad_kn).permute(1, 0, 2).reshape(t, -1)
        return grad_q, grad_k

    @staticmethod
    def example_inputs():
        return _qk_inputs()


class OutsideQKNormScoresKeyProjection(torch.autograd.Function):
    """QK-norm scores, the key normalisation's backward written inline."""

    bug = {"kind": "wrong_axis", "input": "k",
           "note": "the radial component k_hat . dk_hat is summed over time (dim 1) instead of the head dim"}

    @staticmethod
    def forward(ctx, q, k):
        qh, kh = _split_heads(q), _split_heads(k)
        q_len = qh.norm(dim=-1, keepdim=True)
        k_len = kh.norm(dim=-1, keepdim=True)
        ctx.save_for_backward(qh, kh, q_len, k_len)
        return TAU * (qh / q_len) @ (kh / k_len).transpose(1, 2)

    @staticmethod
    def backward(ctx, grad_out):
        qh, kh, q_len, k_len = ctx.saved_tensors
        qn, kn = qh / q_len, kh / k_len
        t = qh.shape[1]
        grad_qh = _through_unit_norm(qh, qn, TAU * grad_out @ kn)
        grad_kn = TAU * grad_out.transpose(1, 2) @ qn
        radial = (kn * grad_kn).sum(dim=1, keepdim=True)  # BUG
        grad_kh = (grad_kn - kn * radial) / k_len
        return (grad_qh.transpose(0, 1).reshape(t, -1),
                grad_kh.transpose(0, 1).reshape(t, -1))

    @staticmethod
    def example_inputs():
        return _qk_inputs()
