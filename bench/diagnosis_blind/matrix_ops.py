"""Matrix ops with hand-written backwards: a linear solve, a bilinear layer (einsum), an outer
product, a Gram matrix, the inverse, L L^T from a lower-triangular factor, and log|det|.

BLIND corpus: see README.md. Never tune gradcli's diagnosis on these Functions.
"""
import torch


def _square(seed, n=4):
    torch.manual_seed(seed)
    return torch.randn(n, n, dtype=torch.float64) + 3 * torch.eye(n, dtype=torch.float64)


def _solve_inputs():
    a = _square(81)
    return a, torch.randn(4, 2, dtype=torch.float64)


class LinearSolve(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, a, b):
        x = torch.linalg.solve(a, b)
        ctx.save_for_backward(a, x)
        return x

    @staticmethod
    def backward(ctx, grad_out):
        a, x = ctx.saved_tensors
        grad_b = torch.linalg.solve(a.t(), grad_out)
        return -grad_b @ x.t(), grad_b

    @staticmethod
    def example_inputs():
        return _solve_inputs()


class LinearSolveMatrixGradTransposed(torch.autograd.Function):
    bug = {"kind": "transposed", "input": "a",
           "note": "a's gradient is written x @ grad_b^T, the transpose of grad_b @ x^T"}

    @staticmethod
    def forward(ctx, a, b):
        x = torch.linalg.solve(a, b)
        ctx.save_for_backward(a, x)
        return x

    @staticmethod
    def backward(ctx, grad_out):
        a, x = ctx.saved_tensors
        grad_b = torch.linalg.solve(a.t(), grad_out)
        grad_a = -x @ grad_b.t()  # BUG -- -grad_b @ x.t()
        return grad_a, grad_b

    @staticmethod
    def example_inputs():
        return _solve_inputs()


def _bilinear_inputs():
    torch.manual_seed(82)
    return (torch.randn(5, 3, dtype=torch.float64), torch.randn(5, 3, dtype=torch.float64),
            torch.randn(2, 3, 3, dtype=torch.float64), torch.randn(2, dtype=torch.float64))


def _bilinear(ctx, x1, x2, weight, bias):
    ctx.save_for_backward(x1, x2, weight)
    return torch.einsum("ni,kij,nj->nk", x1, weight, x2) + bias


class Bilinear(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x1, x2, weight, bias):
        return _bilinear(ctx, x1, x2, weight, bias)

    @staticmethod
    def backward(ctx, grad_out):
        x1, x2, weight = ctx.saved_tensors
        grad_x1 = torch.einsum("nk,kij,nj->ni", grad_out, weight, x2)
        grad_x2 = torch.einsum("nk,kij,ni->nj", grad_out, weight, x1)
        grad_w = torch.einsum("nk,ni,nj->kij", grad_out, x1, x2)
        return grad_x1, grad_x2, grad_w, grad_out.sum(0)

    @staticmethod
    def example_inputs():
        return _bilinear_inputs()


class BilinearSecondInputCopyPaste(torch.autograd.Function):
    bug = {"kind": "wrong_variable", "input": "x2",
           "note": "x2's gradient contracts W with x2 itself instead of x1"}

    @staticmethod
    def forward(ctx, x1, x2, weight, bias):
        return _bilinear(ctx, x1, x2, weight, bias)

    @staticmethod
    def backward(ctx, grad_out):
        x1, x2, weight = ctx.saved_tensors
        grad_x1 = torch.einsum("nk,kij,nj->ni", grad_out, weight, x2)
        grad_x2 = torch.einsum("nk,kij,ni->nj", grad_out, weight, x2)  # BUG -- x1
        grad_w = torch.einsum("nk,ni,nj->kij", grad_out, x1, x2)
        return grad_x1, grad_x2, grad_w, grad_out.sum(0)

    @staticmethod
    def example_inputs():
        return _bilinear_inputs()


def _vectors():
    torch.manual_seed(83)
    return torch.randn(4, dtype=torch.float64), torch.randn(4, dtype=torch.float64)


class Outer(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, u, v):
        ctx.save_for_backward(u, v)
        return torch.outer(u, v)

    @staticmethod
    def backward(ctx, grad_out):
        u, v = ctx.saved_tensors
        return grad_out @ v, grad_out.t() @ u

    @staticmethod
    def example_inputs():
        return _vectors()


class OuterReturnOrder(torch.autograd.Function):
    bug = {"kind": "swapped", "input": "u",
           "note": "v's gradient is returned first and u's second"}

    @staticmethod
    def forward(ctx, u, v):
        ctx.save_for_backward(u, v)
        return torch.outer(u, v)

    @staticmethod
    def backward(ctx, grad_out):
        u, v = ctx.saved_tensors
        return grad_out.t() @ u, grad_out @ v  # BUG -- (grad_out @ v, grad_out.t() @ u)

    @staticmethod
    def example_inputs():
        return _vectors()


def _tall():
    torch.manual_seed(84)
    return (torch.randn(5, 3, dtype=torch.float64),)


class GramMatrix(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.t() @ x / x.shape[0]

    @staticmethod
    def backward(ctx, grad_out):
        (x,) = ctx.saved_tensors
        return x @ (grad_out + grad_out.t()) / x.shape[0]

    @staticmethod
    def example_inputs():
        return _tall()


class GramMatrixOneSided(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "x",
           "note": "only the x @ grad_out term; the x @ grad_out^T term (x appears twice) is "
                   "missing"}

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.t() @ x / x.shape[0]

    @staticmethod
    def backward(ctx, grad_out):
        (x,) = ctx.saved_tensors
        return x @ grad_out / x.shape[0]  # BUG -- x @ (grad_out + grad_out.t())

    @staticmethod
    def example_inputs():
        return _tall()


class Inverse(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, a):
        y = torch.linalg.inv(a)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad_out):
        (y,) = ctx.saved_tensors
        return -y.t() @ grad_out @ y.t()

    @staticmethod
    def example_inputs():
        return (_square(85),)


class InverseForwardMap(torch.autograd.Function):
    bug = {"kind": "transposed", "input": "a",
           "note": "backward applies the differential dA -> -Y dA Y itself, not its adjoint "
                   "-Y^T g Y^T"}

    @staticmethod
    def forward(ctx, a):
        y = torch.linalg.inv(a)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad_out):
        (y,) = ctx.saved_tensors
        return -y @ grad_out @ y  # BUG -- -y.t() @ grad_out @ y.t()

    @staticmethod
    def example_inputs():
        return (_square(85),)


class LowerFactorProduct(torch.autograd.Function):
    """A = L L^T from the lower triangle of the input (a Cholesky-style parametrisation)."""
    bug = None

    @staticmethod
    def forward(ctx, factor):
        lower = torch.tril(factor)
        ctx.save_for_backward(lower)
        return lower @ lower.t()

    @staticmethod
    def backward(ctx, grad_out):
        (lower,) = ctx.saved_tensors
        return torch.tril((grad_out + grad_out.t()) @ lower)

    @staticmethod
    def example_inputs():
        return (_square(86),)


class LogAbsDet(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        return torch.linalg.slogdet(a)[1]

    @staticmethod
    def backward(ctx, grad_out):
        (a,) = ctx.saved_tensors
        return grad_out * torch.linalg.inv(a).t()

    @staticmethod
    def example_inputs():
        return (_square(87),)


class LogAbsDetElementwise(torch.autograd.Function):
    bug = {"kind": "none", "input": "a",
           "note": "d log|det A| / dA taken as 1/A element by element: a wrong formula"}

    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        return torch.linalg.slogdet(a)[1]

    @staticmethod
    def backward(ctx, grad_out):
        (a,) = ctx.saved_tensors
        return grad_out / a  # BUG -- grad_out * inv(a)^T

    @staticmethod
    def example_inputs():
        return (_square(87),)
