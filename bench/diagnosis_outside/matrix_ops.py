"""Matrix ops with hand-written backwards: inverse, solve, log-determinant, trace of a product,
Gram matrix, bilinear form, batched matmul, batched outer products, a quadratic form.

BLIND corpus bench/diagnosis_outside (see README.md): used only to score gradcli's diagnosis.
"""
import torch


def _well_conditioned(n, seed, batch=None):
    """3 I + small noise: invertible, positive determinant, far from singular."""
    gen = torch.Generator().manual_seed(seed)
    shape = (n, n) if batch is None else (batch, n, n)
    noise = torch.randn(*shape, generator=gen, dtype=torch.float64)
    return 3.0 * torch.eye(n, dtype=torch.float64) + 0.4 * noise


def _randn(*shape, seed):
    gen = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=gen, dtype=torch.float64)


# ------------------------------------------------------------------------------- inverse
class OutsideMatrixInverse(torch.autograd.Function):
    """Y = A^{-1}; dA = -Y^T dY Y^T."""

    bug = None

    @staticmethod
    def forward(ctx, a):
        inv = torch.linalg.inv(a)
        ctx.save_for_backward(inv)
        return inv

    @staticmethod
    def backward(ctx, grad_out):
        (inv,) = ctx.saved_tensors
        inv_t = inv.mT
        return -inv_t @ grad_out @ inv_t

    @staticmethod
    def example_inputs():
        return (_well_conditioned(4, seed=11),)


class OutsideMatrixInverseNoTranspose(torch.autograd.Function):
    """Y = A^{-1}, backward written from the scalar rule d(1/a) = -da / a^2."""

    bug = {"kind": "transposed", "input": "a",
           "note": "dA = -Y dY Y: the inverse is used where its transpose is needed on both sides"}

    @staticmethod
    def forward(ctx, a):
        inv = torch.linalg.inv(a)
        ctx.save_for_backward(inv)
        return inv

    @staticmethod
    def backward(ctx, grad_out):
        (inv,) = ctx.saved_tensors
        left = torch.matmul(inv, grad_out)
        grad_a = -torch.matmul(left, inv)  # BUG
        return grad_a

    @staticmethod
    def example_inputs():
        return (_well_conditioned(4, seed=11),)


# --------------------------------------------------------------------------------- solve
class OutsideLinearSolve(torch.autograd.Function):
    """X = solve(A, B); dB = solve(A^T, dX), dA = -dB X^T."""

    bug = None

    @staticmethod
    def forward(ctx, a, b):
        x = torch.linalg.solve(a, b)
        ctx.save_for_backward(a, x)
        return x

    @staticmethod
    def backward(ctx, grad_out):
        a, x = ctx.saved_tensors
        grad_a = grad_b = None
        grad_rhs = torch.linalg.solve(a.mT, grad_out)
        if ctx.needs_input_grad[1]:
            grad_b = grad_rhs
        if ctx.needs_input_grad[0]:
            grad_a = -grad_rhs @ x.mT
        return grad_a, grad_b

    @staticmethod
    def example_inputs():
        return _well_conditioned(4, seed=12), _randn(4, 2, seed=13)


class OutsideLinearSolveSignA(torch.autograd.Function):
    """X = solve(A, B), with the matrix gradient written as an outer product."""

    bug = {"kind": "sign", "input": "a",
           "note": "the minus of d(A^{-1}) = -A^{-1} dA A^{-1} is dropped: dA = +dB X^T"}

    @staticmethod
    def forward(ctx, a, b):
        x = torch.linalg.solve(a, b)
        ctx.save_for_backward(a, x)
        return x

    @staticmethod
    def backward(ctx, grad_out):
        a, x = ctx.saved_tensors
        grad_b = torch.linalg.solve(a.transpose(-1, -2), grad_out)
        grad_a = torch.einsum("ik,jk->ij", grad_b, x)  # BUG
        return grad_a, grad_b

    @staticmethod
    def example_inputs():
        return _well_conditioned(4, seed=12), _randn(4, 2, seed=13)


class OutsideLinearSolveUsesRhs(torch.autograd.Function):
    """X = solve(A, B); keeps A, B and X for backward."""

    bug = {"kind": "wrong_variable", "input": "a",
           "note": "dA = -dB B^T: the right-hand side B is used where the solution X belongs"}

    @staticmethod
    def forward(ctx, a, b):
        x = torch.linalg.solve(a, b)
        ctx.save_for_backward(a, b, x)
        return x

    @staticmethod
    def backward(ctx, grad_out):
        a, b, x = ctx.saved_tensors
        grad_b = torch.linalg.solve(a.mT, grad_out)
        grad_a = -grad_b @ b.mT  # BUG
        return grad_a, grad_b

    @staticmethod
    def example_inputs():
        return _well_conditioned(4, seed=12), _randn(4, 2, seed=13)


# ------------------------------------------------------------------------- log-determinant
class OutsideBatchedLogDet(torch.autograd.Function):
    """logdet of each matrix of a batch; d logdet A = A^{-T}."""

    bug = None

    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        return torch.logdet(a)

    @staticmethod
    def backward(ctx, grad_out):
        (a,) = ctx.saved_tensors
        inv_t = torch.linalg.inv(a).mT
        return grad_out[:, None, None] * inv_t

    @staticmethod
    def example_inputs():
        return (_well_conditioned(3, seed=14, batch=3),)


class OutsideBatchedLogDetNoGrad(torch.autograd.Function):
    """logdet of each matrix of a batch, backward from the textbook identity."""

    bug = {"kind": "ignores_grad_output", "input": "a",
           "note": "returns A^{-T} as if the loss were logdet itself; the per-matrix grad_out is never applied"}

    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        return torch.logdet(a)

    @staticmethod
    def backward(ctx, grad_out):
        (a,) = ctx.saved_tensors
        grad_a = torch.linalg.inv(a).transpose(1, 2)  # BUG
        return grad_a

    @staticmethod
    def example_inputs():
        return (_well_conditioned(3, seed=14, batch=3),)


# --------------------------------------------------------------------- trace of a product
class OutsideTraceOfProduct(torch.autograd.Function):
    """tr(A B) by einsum; dA = g B^T, dB = g A^T."""

    bug = None

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return torch.einsum("ij,ji->", a, b)

    @staticmethod
    def backward(ctx, grad_out):
        a, b = ctx.saved_tensors
        grad_a = grad_out * b.transpose(0, 1)
        grad_b = grad_out * a.transpose(0, 1)
        return grad_a, grad_b

    @staticmethod
    def example_inputs():
        return _randn(4, 4, seed=15), _randn(4, 4, seed=16)


class OutsideTraceOfProductSwapped(torch.autograd.Function):
    """tr(A B), the two gradients built in a small loop over the operands."""

    bug = {"kind": "swapped", "input": "a",
           "note": "the gradients come out in the wrong order: A gets g A^T and B gets g B^T"}

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return (a @ b).diagonal().sum()

    @staticmethod
    def backward(ctx, grad_out):
        a, b = ctx.saved_tensors
        grads = [grad_out * other.t() for other in (b, a)]
        grad_a, grad_b = grads
        return grad_b, grad_a  # BUG

    @staticmethod
    def example_inputs():
        return _randn(4, 4, seed=15), _randn(4, 4, seed=16)


# ------------------------------------------------------------------------------ Gram matrix
class OutsideScaledGram(torch.autograd.Function):
    """G = X X^T / d for rows of X; dX = (dG + dG^T) X / d."""

    bug = None

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        ctx.width = x.shape[1]
        return x @ x.T / ctx.width

    @staticmethod
    def backward(ctx, grad_out):
        (x,) = ctx.saved_tensors
        sym = grad_out + grad_out.T
        return sym @ x / ctx.width


class OutsideScaledGramHalf(torch.autograd.Function):
    """G = X X^T / d, backward treating X X^T like a product of two independent factors."""

    bug = {"kind": "missing_term", "input": "x",
           "note": "only the left factor's term dG X is kept; the right factor's dG^T X is lost"}

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        ctx.width = x.shape[1]
        return x @ x.T / ctx.width

    @staticmethod
    def backward(ctx, grad_out):
        (x,) = ctx.saved_tensors
        grad_x = torch.mm(grad_out, x) / ctx.width  # BUG
        return grad_x


# ----------------------------------------------------------------------------- bilinear form
class OutsideBatchedBilinearForm(torch.autograd.Function):
    """s_b = x_b^T A y_b for rows x_b, y_b."""

    bug = None

    @staticmethod
    def forward(ctx, x, A, y):
        ctx.save_for_backward(x, A, y)
        return torch.einsum("bi,ij,bj->b", x, A, y)

    @staticmethod
    def backward(ctx, grad_out):
        x, A, y = ctx.saved_tensors
        g = grad_out.unsqueeze(1)
        grad_x = g * (y @ A.T)
        grad_A = torch.einsum("b,bi,bj->ij", grad_out, x, y)
        grad_y = g * (x @ A)
        return grad_x, grad_A, grad_y

    @staticmethod
    def example_inputs():
        return _randn(3, 4, seed=17), _randn(4, 5, seed=18), _randn(3, 5, seed=19)


class OutsideBatchedBilinearFormLoop(torch.autograd.Function):
    """s_b = x_b^T A y_b, the matrix gradient gathered row by row."""

    bug = {"kind": "not_accumulated", "input": "A",
           "note": "the per-row outer products overwrite grad_A instead of adding up: only the last row counts"}

    @staticmethod
    def forward(ctx, x, A, y):
        ctx.save_for_backward(x, A, y)
        return ((x @ A) * y).sum(dim=1)

    @staticmethod
    def backward(ctx, grad_out):
        x, A, y = ctx.saved_tensors
        grad_x = grad_out[:, None] * torch.matmul(y, A.t())
        grad_y = grad_out[:, None] * torch.matmul(x, A)
        grad_A = torch.zeros_like(A)
        for row in range(x.shape[0]):
            grad_A = grad_out[row] * torch.outer(x[row], y[row])  # BUG
        return grad_x, grad_A, grad_y

    @staticmethod
    def example_inputs():
        return _randn(3, 4, seed=17), _randn(4, 5, seed=18), _randn(3, 5, seed=19)


# ---------------------------------------------------------------------------- batched matmul
class OutsideBatchedMatmul(torch.autograd.Function):
    """C = A B per batch (bmm)."""

    bug = None

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return torch.bmm(a, b)

    @staticmethod
    def backward(ctx, grad_out):
        a, b = ctx.saved_tensors
        grad_a = grad_b = None
        if ctx.needs_input_grad[0]:
            grad_a = torch.bmm(grad_out, b.transpose(1, 2))
        if ctx.needs_input_grad[1]:
            grad_b = torch.bmm(a.transpose(1, 2), grad_out)
        return grad_a, grad_b

    @staticmethod
    def example_inputs():
        return _randn(2, 3, 3, seed=20), _randn(2, 3, 3, seed=21)


class OutsideBatchedMatmulRightOperand(torch.autograd.Function):
    """C = A B per batch, written with the @ operator."""

    bug = {"kind": "transposed", "input": "b",
           "note": "dB = A dC: A is not transposed (dB must be A^T dC)"}

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return a @ b

    @staticmethod
    def backward(ctx, grad_out):
        a, b = ctx.saved_tensors
        grad_a = grad_out @ b.mT
        grad_b = a @ grad_out  # BUG
        return grad_a, grad_b

    @staticmethod
    def example_inputs():
        return _randn(2, 3, 3, seed=20), _randn(2, 3, 3, seed=21)


# ------------------------------------------------------------------------ batched outer products
class OutsideBatchedOuter(torch.autograd.Function):
    """M_b = u_b v_b^T for each row pair."""

    bug = None

    @staticmethod
    def forward(ctx, u, v):
        ctx.save_for_backward(u, v)
        return torch.einsum("bi,bj->bij", u, v)

    @staticmethod
    def backward(ctx, grad_out):
        u, v = ctx.saved_tensors
        grad_u = (grad_out * v[:, None, :]).sum(dim=-1)
        grad_v = (grad_out * u[:, :, None]).sum(dim=1)
        return grad_u, grad_v


class OutsideBatchedOuterColumnSum(torch.autograd.Function):
    """M_b = u_b v_b^T by broadcasting."""

    bug = {"kind": "wrong_axis", "input": "v",
           "note": "dv sums dM * u over the column axis j instead of the row axis i"}

    @staticmethod
    def forward(ctx, u, v):
        ctx.save_for_backward(u, v)
        return u.unsqueeze(2) * v.unsqueeze(1)

    @staticmethod
    def backward(ctx, grad_out):
        u, v = ctx.saved_tensors
        weighted_u = grad_out * u.unsqueeze(2)
        grad_u = (grad_out * v.unsqueeze(1)).sum(2)
        grad_v = weighted_u.sum(2)  # BUG
        return grad_u, grad_v


# --------------------------------------------------------------------------- quadratic form
class OutsideQuadraticForm(torch.autograd.Function):
    """q_b = x_b^T A x_b for a general (not symmetric) A."""

    bug = None

    @staticmethod
    def forward(ctx, x, a):
        ctx.save_for_backward(x, a)
        return torch.einsum("bi,ij,bj->b", x, a, x)

    @staticmethod
    def backward(ctx, grad_out):
        x, a = ctx.saved_tensors
        grad_x = grad_out[:, None] * (x @ (a + a.T))
        grad_a = torch.einsum("b,bi,bj->ij", grad_out, x, x)
        return grad_x, grad_a

    @staticmethod
    def example_inputs():
        return _randn(3, 4, seed=22), _randn(4, 4, seed=23)


class OutsideQuadraticFormSymmetricShortcut(torch.autograd.Function):
    """q_b = x_b^T A x_b, backward using d(x^T A x) = 2 A x."""

    bug = {"kind": "transposed", "input": "x",
           "note": "2 A x holds only for symmetric A: one of the two terms needs A^T, not A"}

    @staticmethod
    def forward(ctx, x, a):
        ctx.save_for_backward(x, a)
        return ((x @ a) * x).sum(-1)

    @staticmethod
    def backward(ctx, grad_out):
        x, a = ctx.saved_tensors
        ax = x @ a.T
        grad_x = 2.0 * grad_out.unsqueeze(-1) * ax  # BUG
        grad_a = x.T @ (grad_out.unsqueeze(-1) * x)
        return grad_x, grad_a

    @staticmethod
    def example_inputs():
        return _randn(3, 4, seed=22), _randn(4, 4, seed=23)
