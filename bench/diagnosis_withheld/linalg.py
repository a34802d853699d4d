"""Matrix calculus with known traps: the inverse, log|det|, a linear solve with respect to both
operands and a batch of quadratic forms x_i^T M x_i with a non-symmetric M."""
import torch


def _square(seed, n=3):
    gen = torch.Generator().manual_seed(seed)
    return 3.0 * torch.eye(n, dtype=torch.float64) + 0.6 * torch.randn(n, n, dtype=torch.float64,
                                                                        generator=gen)


class WithheldInverse(torch.autograd.Function):
    """A^-1; its vector-Jacobian product is -A^-T G A^-T."""
    bug = None

    @staticmethod
    def forward(ctx, a):
        a_inv = torch.linalg.inv(a)
        ctx.save_for_backward(a_inv)
        return a_inv

    @staticmethod
    def backward(ctx, grad_out):
        (a_inv,) = ctx.saved_tensors
        a_inv_t = a_inv.mT
        return -a_inv_t @ grad_out @ a_inv_t

    @staticmethod
    def example_inputs():
        return (_square(1).requires_grad_(),)


class WithheldInverseNoTranspose(torch.autograd.Function):
    bug = {"kind": "transposed", "input": "a",
           "note": "-A^-1 G A^-1: both inverses should be transposed"}

    @staticmethod
    def forward(ctx, a):
        a_inv = torch.linalg.inv(a)
        ctx.save_for_backward(a_inv)
        return a_inv

    @staticmethod
    def backward(ctx, grad_out):
        (a_inv,) = ctx.saved_tensors
        return -a_inv @ grad_out @ a_inv  # BUG

    @staticmethod
    def example_inputs():
        return (_square(1).requires_grad_(),)


class WithheldLogAbsDet(torch.autograd.Function):
    """log |det A|; gradient A^-T."""
    bug = None

    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        return torch.linalg.slogdet(a).logabsdet

    @staticmethod
    def backward(ctx, grad_out):
        (a,) = ctx.saved_tensors
        return grad_out * torch.linalg.inv(a).transpose(-2, -1)

    @staticmethod
    def example_inputs():
        return (_square(2).requires_grad_(),)


class WithheldLogAbsDetTraceGrad(torch.autograd.Function):
    bug = {"kind": "none", "input": "a",
           "note": "the backward is trace(A)'s gradient, the identity, as if log det were linear"}

    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        return torch.linalg.slogdet(a).logabsdet

    @staticmethod
    def backward(ctx, grad_out):
        (a,) = ctx.saved_tensors
        return grad_out * torch.eye(a.shape[-1], dtype=a.dtype)  # BUG

    @staticmethod
    def example_inputs():
        return (_square(2).requires_grad_(),)


def _solve_inputs():
    gen = torch.Generator().manual_seed(6)
    b = torch.randn(3, 4, dtype=torch.float64, generator=gen)
    return _square(3).requires_grad_(), b.requires_grad_()


class WithheldSolve(torch.autograd.Function):
    """X = A^-1 B: grad_B = A^-T G, grad_A = -grad_B X^T."""
    bug = None

    @staticmethod
    def forward(ctx, a, b):
        x = torch.linalg.solve(a, b)
        ctx.save_for_backward(a, x)
        return x

    @staticmethod
    def backward(ctx, grad_out):
        a, x = ctx.saved_tensors
        grad_b = torch.linalg.solve(a.mT, grad_out)
        grad_a = -grad_b @ x.mT if ctx.needs_input_grad[0] else None
        return grad_a, (grad_b if ctx.needs_input_grad[1] else None)

    @staticmethod
    def example_inputs():
        return _solve_inputs()


class WithheldSolveMatrixGradFromB(torch.autograd.Function):
    bug = {"kind": "wrong_variable", "input": "a",
           "note": "grad_A = -grad_B B^T uses the right-hand side B instead of the solution X"}

    @staticmethod
    def forward(ctx, a, b):
        x = torch.linalg.solve(a, b)
        ctx.save_for_backward(a, b)
        return x

    @staticmethod
    def backward(ctx, grad_out):
        a, b = ctx.saved_tensors
        grad_b = torch.linalg.solve(a.mT, grad_out)
        grad_a = -grad_b @ b.mT if ctx.needs_input_grad[0] else None  # BUG
        return grad_a, (grad_b if ctx.needs_input_grad[1] else None)

    @staticmethod
    def example_inputs():
        return _solve_inputs()


class WithheldSolveRhsWithA(torch.autograd.Function):
    bug = {"kind": "transposed", "input": "b",
           "note": "grad_B solves with A instead of A^T (and grad_A inherits it)"}

    @staticmethod
    def forward(ctx, a, b):
        x = torch.linalg.solve(a, b)
        ctx.save_for_backward(a, x)
        return x

    @staticmethod
    def backward(ctx, grad_out):
        a, x = ctx.saved_tensors
        grad_b = torch.linalg.solve(a, grad_out)  # BUG
        grad_a = -grad_b @ x.mT
        return grad_a, grad_b

    @staticmethod
    def example_inputs():
        return _solve_inputs()


def _quad_inputs():
    gen = torch.Generator().manual_seed(10)
    x = torch.randn(4, 4, dtype=torch.float64, generator=gen)
    m = torch.randn(4, 4, dtype=torch.float64, generator=gen)
    return x.requires_grad_(), m.requires_grad_()


class WithheldQuadraticForms(torch.autograd.Function):
    """q_i = x_i^T M x_i for the rows x_i of X [4, 4]; M is not symmetric."""
    bug = None

    @staticmethod
    def forward(ctx, x, m):
        ctx.save_for_backward(x, m)
        return torch.einsum("ij,jk,ik->i", x, m, x)

    @staticmethod
    def backward(ctx, grad_out):
        x, m = ctx.saved_tensors
        grad_x = grad_out.unsqueeze(1) * (x @ (m + m.mT))
        grad_m = torch.einsum("i,ij,ik->jk", grad_out, x, x)
        return grad_x, grad_m

    @staticmethod
    def example_inputs():
        return _quad_inputs()


class WithheldQuadraticFormsUpstreamOnColumns(torch.autograd.Function):
    bug = {"kind": "wrong_axis", "input": "x",
           "note": "grad_out [4] is broadcast along dim 0 (unsqueeze(0)) instead of one value per row"}

    @staticmethod
    def forward(ctx, x, m):
        ctx.save_for_backward(x, m)
        return torch.einsum("ij,jk,ik->i", x, m, x)

    @staticmethod
    def backward(ctx, grad_out):
        x, m = ctx.saved_tensors
        grad_x = grad_out.unsqueeze(0) * (x @ (m + m.mT))  # BUG
        grad_m = torch.einsum("i,ij,ik->jk", grad_out, x, x)
        return grad_x, grad_m

    @staticmethod
    def example_inputs():
        return _quad_inputs()
