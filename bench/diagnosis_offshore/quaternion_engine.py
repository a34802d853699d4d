import gradcli as torch

"""Quaternions (w, x, y, z) on gradcli's engine: the Hamilton product q * p written as a 4x4 left
(or right) multiplication matrix, and the normalisation q / |q| of an attitude estimate."""


def _left(q):
    """L(q) with q * p = L(q) p, one 4x4 matrix per row of q (N, 4) -> (N, 4, 4)."""
    w, x, y, z = q[:, 0], q[:, 1], q[:, 2], q[:, 3]
    return torch.stack([torch.stack([w, -x, -y, -z], dim=1),
                        torch.stack([x, w, -z, y], dim=1),
                        torch.stack([y, z, w, -x], dim=1),
                        torch.stack([z, -y, x, w], dim=1)], dim=1)


def _right(p):
    """R(p) with q * p = R(p) q."""
    w, x, y, z = p[:, 0], p[:, 1], p[:, 2], p[:, 3]
    return torch.stack([torch.stack([w, -x, -y, -z], dim=1),
                        torch.stack([x, w, z, -y], dim=1),
                        torch.stack([y, -z, w, x], dim=1),
                        torch.stack([z, y, -x, w], dim=1)], dim=1)


def _pair():
    gen = torch.Generator().manual_seed(4)
    return (torch.randn(4, 4, generator=gen, dtype=torch.float64),
            torch.randn(4, 4, generator=gen, dtype=torch.float64))


def _one():
    gen = torch.Generator().manual_seed(5)
    return (torch.randn(4, 4, generator=gen, dtype=torch.float64) + 0.5,)


class OffshoreQuatProduct(torch.autograd.Function):
    """Hamilton product r = q * p of N pairs of quaternions."""

    bug = None

    @staticmethod
    def forward(ctx, q, p):
        ctx.save_for_backward(q, p)
        return torch.einsum("nij,nj->ni", _left(q), p)

    @staticmethod
    def backward(ctx, grad_out):
        q, p = ctx.saved_tensors
        grad_q = grad_p = None
        if ctx.needs_input_grad[0]:
            grad_q = torch.einsum("nji,nj->ni", _right(p), grad_out)
        if ctx.needs_input_grad[1]:
            grad_p = torch.einsum("nji,nj->ni", _left(q), grad_out)
        return grad_q, grad_p

    @staticmethod
    def example_inputs():
        return _pair()


class OffshoreQuatProductComponents(torch.autograd.Function):
    """The same product written component by component, its backward too."""

    bug = None

    @staticmethod
    def forward(ctx, q, p):
        ctx.save_for_backward(q, p)
        w1, x1, y1, z1 = q.unbind(1)
        w2, x2, y2, z2 = p.unbind(1)
        return torch.stack([w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2,
                            w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2,
                            w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2,
                            w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2], dim=1)

    @staticmethod
    def backward(ctx, grad_out):
        q, p = ctx.saved_tensors
        w1, x1, y1, z1 = q.unbind(1)
        w2, x2, y2, z2 = p.unbind(1)
        gw, gx, gy, gz = grad_out.unbind(1)
        grad_q = torch.stack([gw * w2 + gx * x2 + gy * y2 + gz * z2,
                              -gw * x2 + gx * w2 - gy * z2 + gz * y2,
                              -gw * y2 + gx * z2 + gy * w2 - gz * x2,
                              -gw * z2 - gx * y2 + gy * x2 + gz * w2], dim=1)
        grad_p = torch.stack([gw * w1 + gx * x1 + gy * y1 + gz * z1,
                              -gw * x1 + gx * w1 + gy * z1 - gz * y1,
                              -gw * y1 - gx * z1 + gy * w1 + gz * x1,
                              -gw * z1 + gx * y1 - gy * x1 + gz * w1], dim=1)
        return grad_q, grad_p

    @staticmethod
    def example_inputs():
        return _pair()


class OffshoreQuatProductNoTranspose(torch.autograd.Function):
    bug = {"kind": "transposed", "input": "p",
           "note": "p's gradient applies L(q) itself instead of its transpose L(q)^T"}

    @staticmethod
    def forward(ctx, q, p):
        ctx.save_for_backward(q, p)
        return torch.einsum("nij,nj->ni", _left(q), p)

    @staticmethod
    def backward(ctx, grad_out):
        q, p = ctx.saved_tensors
        grad_q = torch.einsum("nji,nj->ni", _right(p), grad_out)
        grad_p = torch.einsum("nij,nj->ni", _left(q), grad_out)  # BUG
        return grad_q, grad_p

    @staticmethod
    def example_inputs():
        return _pair()


class OffshoreQuatProductSwapped(torch.autograd.Function):
    bug = {"kind": "swapped", "input": "q",
           "note": "the two gradients are returned in the wrong order (p's first); p's is wrong too"}

    @staticmethod
    def forward(ctx, q, p):
        ctx.save_for_backward(q, p)
        return torch.einsum("nij,nj->ni", _left(q), p)

    @staticmethod
    def backward(ctx, grad_out):
        q, p = ctx.saved_tensors
        grad_q = torch.einsum("nji,nj->ni", _right(p), grad_out)
        grad_p = torch.einsum("nji,nj->ni", _left(q), grad_out)
        return grad_p, grad_q  # BUG

    @staticmethod
    def example_inputs():
        return _pair()


class OffshoreQuatProductRightOfQ(torch.autograd.Function):
    bug = {"kind": "wrong_variable", "input": "q",
           "note": "q's gradient builds the right-multiplication matrix from q instead of from p"}

    @staticmethod
    def forward(ctx, q, p):
        ctx.save_for_backward(q, p)
        return torch.einsum("nij,nj->ni", _left(q), p)

    @staticmethod
    def backward(ctx, grad_out):
        q, p = ctx.saved_tensors
        grad_q = torch.einsum("nji,nj->ni", _right(q), grad_out)  # BUG
        grad_p = torch.einsum("nji,nj->ni", _left(q), grad_out)
        return grad_q, grad_p

    @staticmethod
    def example_inputs():
        return _pair()


class OffshoreQuatNormalize(torch.autograd.Function):
    """u = q / |q| per quaternion (row); backward (g - u (u . g)) / |q|."""

    bug = None

    @staticmethod
    def forward(ctx, q):
        norm = (q * q).sum(dim=1, keepdim=True).sqrt()
        u = q / norm
        ctx.save_for_backward(u, norm)
        return u

    @staticmethod
    def backward(ctx, grad_out):
        u, norm = ctx.saved_tensors
        dot = (u * grad_out).sum(dim=1, keepdim=True)
        return (grad_out - u * dot) / norm

    @staticmethod
    def example_inputs():
        return _one()


class OffshoreQuatNormalizeNoProjection(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "q",
           "note": "only g / |q|: the projection -u (u . g) / |q| (the norm's own dependence on q) is dropped"}

    @staticmethod
    def forward(ctx, q):
        norm = (q * q).sum(dim=1, keepdim=True).sqrt()
        u = q / norm
        ctx.save_for_backward(u, norm)
        return u

    @staticmethod
    def backward(ctx, grad_out):
        u, norm = ctx.saved_tensors
        return grad_out / norm  # BUG

    @staticmethod
    def example_inputs():
        return _one()


class OffshoreQuatNormalizeProjectionSign(torch.autograd.Function):
    bug = {"kind": "term_sign", "input": "q",
           "note": "the projection term is added, (g + u (u . g)) / |q|, instead of subtracted"}

    @staticmethod
    def forward(ctx, q):
        norm = (q * q).sum(dim=1, keepdim=True).sqrt()
        u = q / norm
        ctx.save_for_backward(u, norm)
        return u

    @staticmethod
    def backward(ctx, grad_out):
        u, norm = ctx.saved_tensors
        dot = (u * grad_out).sum(dim=1, keepdim=True)
        return (grad_out + u * dot) / norm  # BUG

    @staticmethod
    def example_inputs():
        return _one()


class OffshoreQuatNormalizeDotAxis(torch.autograd.Function):
    bug = {"kind": "wrong_axis", "input": "q",
           "note": "u . g is summed over the batch (dim 0) instead of the four components (dim 1)"}

    @staticmethod
    def forward(ctx, q):
        norm = (q * q).sum(dim=1, keepdim=True).sqrt()
        u = q / norm
        ctx.save_for_backward(u, norm)
        return u

    @staticmethod
    def backward(ctx, grad_out):
        u, norm = ctx.saved_tensors
        dot = (u * grad_out).sum(dim=0, keepdim=True)  # BUG
        return (grad_out - u * dot) / norm

    @staticmethod
    def example_inputs():
        return _one()
