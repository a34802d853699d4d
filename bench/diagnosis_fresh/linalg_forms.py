"""Linear algebra by hand: log-det via Cholesky of B B^T + I, a Rayleigh quotient, a batched
bilinear form by einsum."""
import torch


def _spd(b):
    return b @ b.T + torch.eye(b.shape[0], dtype=b.dtype)


def _square():
    gen = torch.Generator().manual_seed(21)
    return (torch.randn(4, 4, dtype=torch.float64, generator=gen).requires_grad_(),)


class LogDetCholesky(torch.autograd.Function):
    """logdet(B B^T + I) = 2 * sum log diag(L)."""
    bug = None

    @staticmethod
    def forward(ctx, b):
        L = torch.linalg.cholesky(_spd(b))
        ctx.save_for_backward(b, L)
        return 2 * L.diagonal().log().sum()

    @staticmethod
    def backward(ctx, grad):
        b, L = ctx.saved_tensors
        a_inv = torch.cholesky_inverse(L)
        return grad * 2 * a_inv @ b

    @staticmethod
    def example_inputs():
        return _square()


class LogDetCholeskyHalf(torch.autograd.Function):
    bug = {"kind": "scale", "input": "b", "note": "d(B B^T) gives two B terms; only one is counted"}

    @staticmethod
    def forward(ctx, b):
        L = torch.linalg.cholesky(_spd(b))
        ctx.save_for_backward(b, L)
        return 2 * L.diagonal().log().sum()

    @staticmethod
    def backward(ctx, grad):
        b, L = ctx.saved_tensors
        a_inv = torch.cholesky_inverse(L)
        return grad * a_inv @ b  # BUG

    @staticmethod
    def example_inputs():
        return _square()


class LogDetCholeskyTransposedB(torch.autograd.Function):
    bug = {"kind": "transposed", "input": "b", "note": "B^T used where B is needed in A^-1 B"}

    @staticmethod
    def forward(ctx, b):
        L = torch.linalg.cholesky(_spd(b))
        ctx.save_for_backward(b, L)
        return 2 * L.diagonal().log().sum()

    @staticmethod
    def backward(ctx, grad):
        b, L = ctx.saved_tensors
        a_inv = torch.cholesky_inverse(L)
        return grad * 2 * a_inv @ b.T  # BUG

    @staticmethod
    def example_inputs():
        return _square()


class LogDetCholeskyMatrixNotInverse(torch.autograd.Function):
    bug = {"kind": "none", "input": "b", "note": "the gradient of trace(B B^T) written for logdet"}

    @staticmethod
    def forward(ctx, b):
        L = torch.linalg.cholesky(_spd(b))
        ctx.save_for_backward(b, L)
        return 2 * L.diagonal().log().sum()

    @staticmethod
    def backward(ctx, grad):
        b, L = ctx.saved_tensors
        return grad * 2 * b  # BUG

    @staticmethod
    def example_inputs():
        return _square()


def _rayleigh_inputs():
    gen = torch.Generator().manual_seed(22)
    x = torch.randn(4, dtype=torch.float64, generator=gen)
    m = torch.randn(4, 4, dtype=torch.float64, generator=gen)
    return x.requires_grad_(), m.requires_grad_()


class RayleighQuotient(torch.autograd.Function):
    """r = x^T M x / x^T x, M not symmetric."""
    bug = None

    @staticmethod
    def forward(ctx, x, m):
        xx = x.dot(x)
        r = x.dot(m @ x) / xx
        ctx.save_for_backward(x, m, xx, r)
        return r

    @staticmethod
    def backward(ctx, grad):
        x, m, xx, r = ctx.saved_tensors
        g_x = grad * ((m + m.T) @ x - 2 * r * x) / xx
        g_m = grad * torch.outer(x, x) / xx
        return g_x, g_m

    @staticmethod
    def example_inputs():
        return _rayleigh_inputs()


class RayleighQuotientNoNormTerm(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "x", "note": "the denominator's derivative (-2 r x) is forgotten"}

    @staticmethod
    def forward(ctx, x, m):
        xx = x.dot(x)
        r = x.dot(m @ x) / xx
        ctx.save_for_backward(x, m, xx, r)
        return r

    @staticmethod
    def backward(ctx, grad):
        x, m, xx, r = ctx.saved_tensors
        g_x = grad * ((m + m.T) @ x) / xx  # BUG
        g_m = grad * torch.outer(x, x) / xx
        return g_x, g_m

    @staticmethod
    def example_inputs():
        return _rayleigh_inputs()


class RayleighQuotientMatrixSign(torch.autograd.Function):
    bug = {"kind": "sign", "input": "m", "note": "M's gradient negated, copied from the denominator's term"}

    @staticmethod
    def forward(ctx, x, m):
        xx = x.dot(x)
        r = x.dot(m @ x) / xx
        ctx.save_for_backward(x, m, xx, r)
        return r

    @staticmethod
    def backward(ctx, grad):
        x, m, xx, r = ctx.saved_tensors
        g_x = grad * ((m + m.T) @ x - 2 * r * x) / xx
        g_m = -grad * torch.outer(x, x) / xx  # BUG
        return g_x, g_m

    @staticmethod
    def example_inputs():
        return _rayleigh_inputs()


def _bilinear_inputs():
    gen = torch.Generator().manual_seed(23)
    return tuple(torch.randn(*s, dtype=torch.float64, generator=gen).requires_grad_()
                 for s in ((3, 4), (4, 4), (3, 4)))


class BatchedBilinearForm(torch.autograd.Function):
    """out[b] = x[b]^T W y[b]."""
    bug = None

    @staticmethod
    def forward(ctx, x, w, y):
        ctx.save_for_backward(x, w, y)
        return torch.einsum("bi,ij,bj->b", x, w, y)

    @staticmethod
    def backward(ctx, grad):
        x, w, y = ctx.saved_tensors
        g_x = torch.einsum("b,ij,bj->bi", grad, w, y)
        g_w = torch.einsum("b,bi,bj->ij", grad, x, y)
        g_y = torch.einsum("b,bi,ij->bj", grad, x, w)
        return g_x, g_w, g_y

    @staticmethod
    def example_inputs():
        return _bilinear_inputs()


class BatchedBilinearFormWTransposed(torch.autograd.Function):
    bug = {"kind": "transposed", "input": "x", "note": "x's gradient contracts W's first index with y (W^T y instead of W y)"}

    @staticmethod
    def forward(ctx, x, w, y):
        ctx.save_for_backward(x, w, y)
        return torch.einsum("bi,ij,bj->b", x, w, y)

    @staticmethod
    def backward(ctx, grad):
        x, w, y = ctx.saved_tensors
        g_x = torch.einsum("b,ji,bj->bi", grad, w, y)  # BUG
        g_w = torch.einsum("b,bi,bj->ij", grad, x, y)
        g_y = torch.einsum("b,bi,ij->bj", grad, x, w)
        return g_x, g_w, g_y

    @staticmethod
    def example_inputs():
        return _bilinear_inputs()


class BatchedBilinearFormWeightNoGrad(torch.autograd.Function):
    bug = {"kind": "ignores_grad_output", "input": "w", "note": "W's gradient is the outer-product sum without grad_output"}

    @staticmethod
    def forward(ctx, x, w, y):
        ctx.save_for_backward(x, w, y)
        return torch.einsum("bi,ij,bj->b", x, w, y)

    @staticmethod
    def backward(ctx, grad):
        x, w, y = ctx.saved_tensors
        g_x = torch.einsum("b,ij,bj->bi", grad, w, y)
        g_w = torch.einsum("bi,bj->ij", x, y)  # BUG
        g_y = torch.einsum("b,bi,ij->bj", grad, x, w)
        return g_x, g_w, g_y

    @staticmethod
    def example_inputs():
        return _bilinear_inputs()
