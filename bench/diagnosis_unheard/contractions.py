"""Tensor contractions by einsum: bilinear attention scores q W k^T, a three-mode Tucker product,
a rank-2 CP (PARAFAC) product and a batched trace tr(A_b M)."""
import torch


def _bilinear_inputs():
    g = torch.Generator().manual_seed(51)
    q = torch.randn(3, 4, dtype=torch.float64, generator=g)
    w = torch.randn(4, 4, dtype=torch.float64, generator=g)
    k = torch.randn(3, 4, dtype=torch.float64, generator=g)
    return q, w, k


# ----------------------------------------------------------------------- bilinear scores
class UnheardBilinearScores(torch.autograd.Function):
    """Scores S_ij = q_i^T W k_j for 3 queries and 3 keys."""

    bug = None

    @staticmethod
    def forward(ctx, q, w, k):
        ctx.save_for_backward(q, w, k)
        return torch.einsum("id,de,je->ij", q, w, k)

    @staticmethod
    def backward(ctx, grad_s):
        q, w, k = ctx.saved_tensors
        grad_q = grad_k = grad_w = None
        if ctx.needs_input_grad[0]:
            grad_q = torch.einsum("ij,je,de->id", grad_s, k, w)
        if ctx.needs_input_grad[1]:
            grad_w = torch.einsum("id,ij,je->de", q, grad_s, k)
        if ctx.needs_input_grad[2]:
            grad_k = torch.einsum("ij,id,de->je", grad_s, q, w)
        return grad_q, grad_w, grad_k

    example_inputs = staticmethod(_bilinear_inputs)


class UnheardBilinearScoresMatmul(torch.autograd.Function):
    """Same scores by matmuls, q @ W @ k.T, with the projected keys kept."""

    bug = {"kind": "transposed", "input": "w",
           "note": "dS/dW is q^T G k; the code forms k^T G^T q, the transpose of it"}

    @staticmethod
    def forward(ctx, q, w, k):
        kw = k @ w.T                      # (3, 4): W k_j for each key
        ctx.save_for_backward(q, w, k)
        return q @ kw.T

    @staticmethod
    def backward(ctx, grad_s):
        q, w, k = ctx.saved_tensors
        grad_q = grad_s @ (k @ w.T)
        grad_w = k.T @ grad_s.T @ q  # BUG
        grad_k = grad_s.T @ (q @ w)
        return grad_q, grad_w, grad_k

    example_inputs = staticmethod(_bilinear_inputs)


class UnheardBilinearScoresQueryKey(torch.autograd.Function):
    """Same scores; the query and key gradients share one helper."""

    bug = {"kind": "swapped", "input": "q",
           "note": "the query and key gradients are returned in each other's slots (both are "
                   "(3, 4))"}

    @staticmethod
    def forward(ctx, q, w, k):
        ctx.save_for_backward(q, w, k)
        return torch.einsum("id,de,je->ij", q, w, k)

    @staticmethod
    def backward(ctx, grad_s):
        q, w, k = ctx.saved_tensors

        def side(g, other, mat):
            return g @ other @ mat

        from_queries = side(grad_s, k, w.T)     # dL/dq
        from_keys = side(grad_s.T, q, w)        # dL/dk
        grad_w = torch.einsum("id,ij,je->de", q, grad_s, k)
        return from_keys, grad_w, from_queries  # BUG

    example_inputs = staticmethod(_bilinear_inputs)


# ---------------------------------------------------------------------------------- Tucker
def _tucker_inputs():
    g = torch.Generator().manual_seed(52)
    core = torch.randn(2, 2, 2, dtype=torch.float64, generator=g)
    a, b, c = (torch.randn(3, 2, dtype=torch.float64, generator=g) for _ in range(3))
    return core, a, b, c


class UnheardTuckerProduct(torch.autograd.Function):
    """X_ijk = sum_pqr G_pqr A_ip B_jq C_kr."""

    bug = None

    @staticmethod
    def forward(ctx, core, a, b, c):
        ctx.save_for_backward(core, a, b, c)
        return torch.einsum("pqr,ip,jq,kr->ijk", core, a, b, c)

    @staticmethod
    def backward(ctx, grad_x):
        core, a, b, c = ctx.saved_tensors
        return (torch.einsum("ijk,ip,jq,kr->pqr", grad_x, a, b, c),
                torch.einsum("ijk,pqr,jq,kr->ip", grad_x, core, b, c),
                torch.einsum("ijk,pqr,ip,kr->jq", grad_x, core, a, c),
                torch.einsum("ijk,pqr,ip,jq->kr", grad_x, core, a, b))

    example_inputs = staticmethod(_tucker_inputs)


class UnheardTuckerProductStaged(torch.autograd.Function):
    """Same product; backward contracts grad_X one mode at a time and reuses the partials."""

    bug = {"kind": "wrong_variable", "input": "b",
           "note": "the mode-2 factor gradient contracts mode k with A instead of C (both are "
                   "(3, 2))"}

    @staticmethod
    def forward(ctx, core, a, b, c):
        ctx.save_for_backward(core, a, b, c)
        return torch.einsum("pqr,ip,jq,kr->ijk", core, a, b, c)

    @staticmethod
    def backward(ctx, grad_x):
        core, a, b, c = ctx.saved_tensors
        g_pjk = torch.einsum("ijk,ip->pjk", grad_x, a)
        g_pqk = torch.einsum("pjk,jq->pqk", g_pjk, b)
        grad_core = torch.einsum("pqk,kr->pqr", g_pqk, c)
        grad_c = torch.einsum("pqk,pqr->kr", g_pqk, core)
        g_pjr = torch.einsum("pjk,kr->pjr", g_pjk, a)  # BUG
        grad_b = torch.einsum("pjr,pqr->jq", g_pjr, core)
        grad_a = torch.einsum("ijk,pqr,jq,kr->ip", grad_x, core, b, c)
        return grad_core, grad_a, grad_b, grad_c

    example_inputs = staticmethod(_tucker_inputs)


class UnheardTuckerProductUnfolded(torch.autograd.Function):
    """Same product; the core gradient through the mode-3 unfolding of grad_X."""

    bug = {"kind": "missing_reshape", "input": "core",
           "note": "the core gradient is computed in (r, p, q) order and reshaped to (p, q, r) "
                   "without permuting the axes back"}

    @staticmethod
    def forward(ctx, core, a, b, c):
        ctx.save_for_backward(core, a, b, c)
        return torch.einsum("pqr,ip,jq,kr->ijk", core, a, b, c)

    @staticmethod
    def backward(ctx, grad_x):
        core, a, b, c = ctx.saved_tensors
        n1, n2, n3 = grad_x.shape
        unfold3 = grad_x.permute(2, 0, 1).reshape(n3, n1 * n2)        # (k, ij)
        rij = (c.T @ unfold3).reshape(c.shape[1], n1, n2)              # (r, i, j)
        rpq = torch.einsum("rij,ip,jq->rpq", rij, a, b)
        grad_core = rpq.reshape(core.shape)  # BUG
        grad_a = torch.einsum("ijk,pqr,jq,kr->ip", grad_x, core, b, c)
        grad_b = torch.einsum("ijk,pqr,ip,kr->jq", grad_x, core, a, c)
        grad_c = torch.einsum("ijk,pqr,ip,jq->kr", grad_x, core, a, b)
        return grad_core, grad_a, grad_b, grad_c

    example_inputs = staticmethod(_tucker_inputs)


# -------------------------------------------------------------------------------------- CP
def _cp_inputs():
    g = torch.Generator().manual_seed(53)
    return (torch.randn(3, 2, dtype=torch.float64, generator=g),
            torch.randn(3, 2, dtype=torch.float64, generator=g),
            torch.randn(4, 2, dtype=torch.float64, generator=g))


class UnheardCPProduct(torch.autograd.Function):
    """X_ijk = sum_r A_ir B_jr C_kr, backward column by column of the rank."""

    bug = None

    @staticmethod
    def forward(ctx, a, b, c):
        ctx.save_for_backward(a, b, c)
        return torch.einsum("ir,jr,kr->ijk", a, b, c)

    @staticmethod
    def backward(ctx, grad_x):
        a, b, c = ctx.saved_tensors
        grad_a, grad_b, grad_c = torch.zeros_like(a), torch.zeros_like(b), torch.zeros_like(c)
        for r in range(a.shape[1]):
            grad_a[:, r] = torch.einsum("ijk,j,k->i", grad_x, b[:, r], c[:, r])
            grad_b[:, r] = torch.einsum("ijk,i,k->j", grad_x, a[:, r], c[:, r])
            grad_c[:, r] = torch.einsum("ijk,i,j->k", grad_x, a[:, r], b[:, r])
        return grad_a, grad_b, grad_c

    example_inputs = staticmethod(_cp_inputs)


class UnheardCPProductColumnViews(torch.autograd.Function):
    """Same product; each rank column of the gradients updated through a named view."""

    bug = {"kind": "zero", "input": "c",
           "note": "col = col + ... rebinds the name instead of writing into grad_c, which "
                   "stays all zeros"}

    @staticmethod
    def forward(ctx, a, b, c):
        ctx.save_for_backward(a, b, c)
        return torch.einsum("ir,jr,kr->ijk", a, b, c)

    @staticmethod
    def backward(ctx, grad_x):
        a, b, c = ctx.saved_tensors
        grad_a = a.new_zeros(a.shape)
        grad_b = b.new_zeros(b.shape)
        grad_c = c.new_zeros(c.shape)
        for r in range(a.shape[1]):
            outer_bc = torch.outer(b[:, r], c[:, r])
            grad_a[:, r] += (grad_x * outer_bc).sum((1, 2))
            grad_b[:, r] += torch.einsum("ijk,i,k->j", grad_x, a[:, r], c[:, r])
            col = grad_c[:, r]
            col = col + torch.einsum("ijk,i,j->k", grad_x, a[:, r], b[:, r])  # BUG
        return grad_a, grad_b, grad_c

    example_inputs = staticmethod(_cp_inputs)


# ---------------------------------------------------------------------------- batched trace
def _trace_inputs():
    g = torch.Generator().manual_seed(54)
    return (torch.randn(4, 4, 4, dtype=torch.float64, generator=g),
            torch.randn(4, 4, dtype=torch.float64, generator=g))


class UnheardBatchedTrace(torch.autograd.Function):
    """t_b = tr(A_b M) for a batch of 4 square matrices."""

    bug = None

    @staticmethod
    def forward(ctx, a, m):
        ctx.save_for_backward(a, m)
        return torch.einsum("bij,ji->b", a, m)

    @staticmethod
    def backward(ctx, grad_t):
        a, m = ctx.saved_tensors
        grad_a = grad_t[:, None, None] * m.T.unsqueeze(0)
        grad_m = torch.einsum("b,bij->ji", grad_t, a)
        return grad_a, grad_m

    example_inputs = staticmethod(_trace_inputs)


class UnheardBatchedTraceDiagonal(torch.autograd.Function):
    """Same traces, forward through diagonal(); backward by expand."""

    bug = {"kind": "transposed", "input": "a",
           "note": "d tr(A M) / dA = M^T; the code broadcasts M itself"}

    @staticmethod
    def forward(ctx, a, m):
        ctx.save_for_backward(a, m)
        return torch.matmul(a, m).diagonal(dim1=-2, dim2=-1).sum(-1)

    @staticmethod
    def backward(ctx, grad_t):
        a, m = ctx.saved_tensors
        grad_a = grad_t.view(-1, 1, 1) * m.expand_as(a)  # BUG
        grad_m = (grad_t.view(-1, 1, 1) * a).sum(0).T
        return grad_a, grad_m

    example_inputs = staticmethod(_trace_inputs)


class UnheardBatchedTraceWeightedSum(torch.autograd.Function):
    """Same traces; the M gradient as a weighted sum of the transposed batch."""

    bug = {"kind": "missing_reshape", "input": "m",
           "note": "grad_t of shape (B,) multiplies the (B, n, n) batch without being reshaped "
                   "to (B, 1, 1), so it broadcasts over the last axis (B == n hides the error)"}

    @staticmethod
    def forward(ctx, a, m):
        ctx.save_for_backward(a, m)
        return torch.einsum("bij,ji->b", a, m)

    @staticmethod
    def backward(ctx, grad_t):
        a, m = ctx.saved_tensors
        grad_a = grad_t[:, None, None] * m.transpose(0, 1)
        grad_m = (grad_t * a.transpose(1, 2)).sum(0)  # BUG
        return grad_a, grad_m

    example_inputs = staticmethod(_trace_inputs)
