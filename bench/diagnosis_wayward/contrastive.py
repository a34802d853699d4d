"""Contrastive objectives: InfoNCE with a learned temperature (in-batch negatives, the diagonal is
the positive), temperature-scaled cosine logits (normalise, then matmul), and a soft-margin
triplet loss on squared distances."""
import torch
import torch.nn.functional as F


def _nce_inputs():
    gen = torch.Generator().manual_seed(41)
    return (torch.randn(4, 4, dtype=torch.float64, generator=gen),
            torch.randn(4, 4, dtype=torch.float64, generator=gen),
            torch.tensor(0.6, dtype=torch.float64))


class WaywardInfoNCE(torch.autograd.Function):
    """mean_i [logsumexp_j (q_i . k_j / tau) - q_i . k_i / tau] for query, key (N, D), temperature ()."""
    bug = None

    @staticmethod
    def forward(ctx, query, key, temperature):
        logits = query @ key.T / temperature
        loss = (torch.logsumexp(logits, dim=1) - logits.diagonal()).mean()
        ctx.save_for_backward(query, key, temperature, logits)
        return loss

    @staticmethod
    def backward(ctx, grad_loss):
        query, key, temperature, logits = ctx.saved_tensors
        n = logits.shape[0]
        G = grad_loss * (torch.softmax(logits, dim=1) - torch.eye(n, dtype=logits.dtype)) / n
        grad_query = G @ key / temperature if ctx.needs_input_grad[0] else None
        grad_key = G.T @ query / temperature if ctx.needs_input_grad[1] else None
        grad_temperature = -(G * logits).sum() / temperature if ctx.needs_input_grad[2] else None
        return grad_query, grad_key, grad_temperature

    example_inputs = staticmethod(_nce_inputs)


class WaywardInfoNCEKeyNoTranspose(torch.autograd.Function):
    """InfoNCE; the key gradient multiplies the logit gradient as it stands."""
    bug = {"kind": "transposed", "input": "key",
           "note": "grad_key = G @ query / tau; logits = q k^T, so key's gradient needs G.T @ query (N = D: it runs)"}

    @staticmethod
    def forward(ctx, query, key, temperature):
        logits = query @ key.T / temperature
        loss = (torch.logsumexp(logits, dim=1) - logits.diagonal()).mean()
        ctx.save_for_backward(query, key, temperature, logits)
        return loss

    @staticmethod
    def backward(ctx, grad_loss):
        query, key, temperature, logits = ctx.saved_tensors
        n = logits.shape[0]
        G = grad_loss * (torch.softmax(logits, dim=1) - torch.eye(n, dtype=logits.dtype)) / n
        grad_query = G @ key / temperature
        grad_key = G @ query / temperature  # BUG
        grad_temperature = -(G * logits).sum() / temperature
        return grad_query, grad_key, grad_temperature

    example_inputs = staticmethod(_nce_inputs)


class WaywardInfoNCEColumnSoftmax(torch.autograd.Function):
    """InfoNCE; the softmax is recomputed in backward."""
    bug = {"kind": "wrong_axis", "input": "query",
           "note": "softmax over dim=0 (over queries) where the forward's logsumexp runs over keys (dim=1); all three gradients are wrong"}

    @staticmethod
    def forward(ctx, query, key, temperature):
        logits = query @ key.T / temperature
        loss = (torch.logsumexp(logits, dim=1) - logits.diagonal()).mean()
        ctx.save_for_backward(query, key, temperature, logits)
        return loss

    @staticmethod
    def backward(ctx, grad_loss):
        query, key, temperature, logits = ctx.saved_tensors
        n = logits.shape[0]
        G = grad_loss * (torch.softmax(logits, dim=0) - torch.eye(n, dtype=logits.dtype)) / n  # BUG
        grad_query = G @ key / temperature
        grad_key = G.T @ query / temperature
        grad_temperature = -(G * logits).sum() / temperature
        return grad_query, grad_key, grad_temperature

    example_inputs = staticmethod(_nce_inputs)


class WaywardInfoNCENoPositive(torch.autograd.Function):
    """InfoNCE; the logit gradient is the softmax."""
    bug = {"kind": "missing_term", "input": "query",
           "note": "G = softmax / N: the -1 on the diagonal (the positive logit's term) is left out; key and temperature are wrong too"}

    @staticmethod
    def forward(ctx, query, key, temperature):
        logits = query @ key.T / temperature
        loss = (torch.logsumexp(logits, dim=1) - logits.diagonal()).mean()
        ctx.save_for_backward(query, key, temperature, logits)
        return loss

    @staticmethod
    def backward(ctx, grad_loss):
        query, key, temperature, logits = ctx.saved_tensors
        n = logits.shape[0]
        G = grad_loss * torch.softmax(logits, dim=1) / n  # BUG
        grad_query = G @ key / temperature
        grad_key = G.T @ query / temperature
        grad_temperature = -(G * logits).sum() / temperature
        return grad_query, grad_key, grad_temperature

    example_inputs = staticmethod(_nce_inputs)


class WaywardInfoNCETemperatureSign(torch.autograd.Function):
    """InfoNCE; d(S / tau)/d tau taken as +S / tau^2."""
    bug = {"kind": "sign", "input": "temperature",
           "note": "grad_temperature = +(G * logits).sum() / tau; d(s / tau)/d tau = -s / tau^2"}

    @staticmethod
    def forward(ctx, query, key, temperature):
        logits = query @ key.T / temperature
        loss = (torch.logsumexp(logits, dim=1) - logits.diagonal()).mean()
        ctx.save_for_backward(query, key, temperature, logits)
        return loss

    @staticmethod
    def backward(ctx, grad_loss):
        query, key, temperature, logits = ctx.saved_tensors
        n = logits.shape[0]
        G = grad_loss * (torch.softmax(logits, dim=1) - torch.eye(n, dtype=logits.dtype)) / n
        grad_query = G @ key / temperature
        grad_key = G.T @ query / temperature
        grad_temperature = (G * logits).sum() / temperature  # BUG
        return grad_query, grad_key, grad_temperature

    example_inputs = staticmethod(_nce_inputs)


class WaywardInfoNCETemperatureGuess(torch.autograd.Function):
    """InfoNCE; the temperature gradient by a homogeneity argument."""
    bug = {"kind": "none", "input": "temperature",
           "note": "grad_temperature = -grad * loss / tau, as if the loss were proportional to 1 / tau (logsumexp is not)"}

    @staticmethod
    def forward(ctx, query, key, temperature):
        logits = query @ key.T / temperature
        loss = (torch.logsumexp(logits, dim=1) - logits.diagonal()).mean()
        ctx.save_for_backward(query, key, temperature, logits, loss)
        return loss

    @staticmethod
    def backward(ctx, grad_loss):
        query, key, temperature, logits, loss = ctx.saved_tensors
        n = logits.shape[0]
        G = grad_loss * (torch.softmax(logits, dim=1) - torch.eye(n, dtype=logits.dtype)) / n
        grad_query = G @ key / temperature
        grad_key = G.T @ query / temperature
        grad_temperature = -grad_loss * loss / temperature  # BUG
        return grad_query, grad_key, grad_temperature

    example_inputs = staticmethod(_nce_inputs)


def _cosine_inputs():
    gen = torch.Generator().manual_seed(42)
    return (torch.randn(3, 4, dtype=torch.float64, generator=gen),
            torch.randn(5, 4, dtype=torch.float64, generator=gen), 0.5)


class WaywardCosineLogits(torch.autograd.Function):
    """logits[n, m] = cos(query_n, key_m) / temperature (temperature a float)."""
    bug = None

    @staticmethod
    def forward(ctx, query, key, temperature):
        qn = query.norm(dim=1, keepdim=True)
        kn = key.norm(dim=1, keepdim=True)
        ctx.save_for_backward(query / qn, key / kn, qn, kn)
        ctx.temperature = temperature
        return (query / qn) @ (key / kn).T / temperature

    @staticmethod
    def backward(ctx, grad_logits):
        q_hat, k_hat, qn, kn = ctx.saved_tensors
        G = grad_logits / ctx.temperature
        gq = G @ k_hat
        gk = G.T @ q_hat
        grad_query = (gq - q_hat * (gq * q_hat).sum(1, keepdim=True)) / qn
        grad_key = (gk - k_hat * (gk * k_hat).sum(1, keepdim=True)) / kn
        return grad_query, grad_key, None

    example_inputs = staticmethod(_cosine_inputs)


class WaywardCosineLogitsRawProjection(torch.autograd.Function):
    """Cosine logits; the normalisation's Jacobian projects out the query direction."""
    bug = {"kind": "wrong_variable", "input": "query",
           "note": "the projection uses the raw query where the unit vector q_hat belongs: (gq - query * (gq . q_hat)) / |q|"}

    @staticmethod
    def forward(ctx, query, key, temperature):
        qn = query.norm(dim=1, keepdim=True)
        kn = key.norm(dim=1, keepdim=True)
        ctx.save_for_backward(query, query / qn, key / kn, qn, kn)
        ctx.temperature = temperature
        return (query / qn) @ (key / kn).T / temperature

    @staticmethod
    def backward(ctx, grad_logits):
        query, q_hat, k_hat, qn, kn = ctx.saved_tensors
        G = grad_logits / ctx.temperature
        gq = G @ k_hat
        gk = G.T @ q_hat
        grad_query = (gq - query * (gq * q_hat).sum(1, keepdim=True)) / qn  # BUG
        grad_key = (gk - k_hat * (gk * k_hat).sum(1, keepdim=True)) / kn
        return grad_query, grad_key, None

    example_inputs = staticmethod(_cosine_inputs)


def _triplet_inputs():
    gen = torch.Generator().manual_seed(43)
    a, p, n = (torch.randn(3, 4, dtype=torch.float64, generator=gen) for _ in range(3))
    return a, p, n, 0.5


class WaywardSoftMarginTriplet(torch.autograd.Function):
    """loss[b] = softplus(|a - p|^2 - |a - n|^2 + margin) for anchor, positive, negative (B, D)."""
    bug = None

    @staticmethod
    def forward(ctx, anchor, positive, negative, margin):
        z = ((anchor - positive) ** 2).sum(1) - ((anchor - negative) ** 2).sum(1) + margin
        ctx.save_for_backward(anchor, positive, negative, z)
        return F.softplus(z)

    @staticmethod
    def backward(ctx, grad_loss):
        anchor, positive, negative, z = ctx.saved_tensors
        s = (grad_loss * torch.sigmoid(z)).unsqueeze(1)
        grad_anchor = 2 * s * (anchor - positive) - 2 * s * (anchor - negative)
        grad_positive = -2 * s * (anchor - positive)
        grad_negative = 2 * s * (anchor - negative)
        return grad_anchor, grad_positive, grad_negative, None

    example_inputs = staticmethod(_triplet_inputs)


class WaywardSoftMarginTripletAnchorPlus(torch.autograd.Function):
    """The soft-margin triplet; the anchor collects both distances' terms."""
    bug = {"kind": "term_sign", "input": "anchor",
           "note": "the negative-distance term is added to the anchor's gradient; -|a - n|^2 contributes -2 s (a - n)"}

    @staticmethod
    def forward(ctx, anchor, positive, negative, margin):
        z = ((anchor - positive) ** 2).sum(1) - ((anchor - negative) ** 2).sum(1) + margin
        ctx.save_for_backward(anchor, positive, negative, z)
        return F.softplus(z)

    @staticmethod
    def backward(ctx, grad_loss):
        anchor, positive, negative, z = ctx.saved_tensors
        s = (grad_loss * torch.sigmoid(z)).unsqueeze(1)
        grad_anchor = 2 * s * (anchor - positive) + 2 * s * (anchor - negative)  # BUG
        grad_positive = -2 * s * (anchor - positive)
        grad_negative = 2 * s * (anchor - negative)
        return grad_anchor, grad_positive, grad_negative, None

    example_inputs = staticmethod(_triplet_inputs)


class WaywardSoftMarginTripletNegativeFromPositive(torch.autograd.Function):
    """The soft-margin triplet; the negative's gradient is copied from the positive's line."""
    bug = {"kind": "wrong_variable", "input": "negative",
           "note": "grad_negative = 2 s (anchor - positive): the positive is used where the negative belongs"}

    @staticmethod
    def forward(ctx, anchor, positive, negative, margin):
        z = ((anchor - positive) ** 2).sum(1) - ((anchor - negative) ** 2).sum(1) + margin
        ctx.save_for_backward(anchor, positive, negative, z)
        return F.softplus(z)

    @staticmethod
    def backward(ctx, grad_loss):
        anchor, positive, negative, z = ctx.saved_tensors
        s = (grad_loss * torch.sigmoid(z)).unsqueeze(1)
        grad_anchor = 2 * s * (anchor - positive) - 2 * s * (anchor - negative)
        grad_positive = -2 * s * (anchor - positive)
        grad_negative = 2 * s * (anchor - positive)  # BUG
        return grad_anchor, grad_positive, grad_negative, None

    example_inputs = staticmethod(_triplet_inputs)
