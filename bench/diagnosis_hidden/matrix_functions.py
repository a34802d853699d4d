"""Matrix functions with hand-written backwards: linear solve, inverse, log-determinant, the trace
of a product and the Gram matrix (bench/diagnosis_hidden)."""
import torch


def _gen(seed):
    return torch.Generator().manual_seed(seed)


def _randn(*shape, seed=0):
    return torch.randn(*shape, dtype=torch.float64, generator=_gen(seed))


def _well_conditioned(n, seed):
    return _randn(n, n, seed=seed) + 4.0 * torch.eye(n, dtype=torch.float64)


class HiddenSolve(torch.autograd.Function):
    """X = A^{-1} B by torch.linalg.solve."""

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
        return _well_conditioned(4, 11), _randn(4, 2, seed=12)


class HiddenSolveMatrixGrad(torch.autograd.Function):
    bug = {"kind": "sign", "input": "a",
           "note": "the matrix gradient is +grad_b x^T: the minus of d(A^-1) is lost"}

    @staticmethod
    def forward(ctx, a, b):
        x = torch.linalg.solve(a, b)
        ctx.save_for_backward(a, x)
        return x

    @staticmethod
    def backward(ctx, grad_out):
        a, x = ctx.saved_tensors
        grad_b = torch.linalg.solve(a.t(), grad_out)
        grad_a = grad_b @ x.t()  # BUG
        return grad_a, grad_b

    @staticmethod
    def example_inputs():
        return _well_conditioned(4, 11), _randn(4, 2, seed=12)


class HiddenInverse(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, a):
        inv = torch.linalg.inv(a)
        ctx.save_for_backward(inv)
        return inv

    @staticmethod
    def backward(ctx, grad_out):
        (inv,) = ctx.saved_tensors
        return -inv.t() @ grad_out @ inv.t()

    @staticmethod
    def example_inputs():
        return (_well_conditioned(4, 13),)


class HiddenInverseNoTranspose(torch.autograd.Function):
    bug = {"kind": "transposed", "input": "a",
           "note": "-Y g Y instead of -Y^T g Y^T"}

    @staticmethod
    def forward(ctx, a):
        inv = torch.linalg.inv(a)
        ctx.save_for_backward(inv)
        return inv

    @staticmethod
    def backward(ctx, grad_out):
        (inv,) = ctx.saved_tensors
        return -inv @ grad_out @ inv  # BUG

    @staticmethod
    def example_inputs():
        return (_well_conditioned(4, 13),)


class HiddenTraceProduct(torch.autograd.Function):
    """trace(A @ B), a scalar."""

    bug = None

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return torch.trace(a @ b)

    @staticmethod
    def backward(ctx, grad_out):
        a, b = ctx.saved_tensors
        return grad_out * b.t(), grad_out * a.t()

    @staticmethod
    def example_inputs():
        return _randn(4, 4, seed=14), _randn(4, 4, seed=15)


class HiddenTraceProductPartners(torch.autograd.Function):
    bug = {"kind": "swapped", "input": "a",
           "note": "each factor's gradient is built from itself instead of from its partner"}

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return torch.trace(a @ b)

    @staticmethod
    def backward(ctx, grad_out):
        a, b = ctx.saved_tensors
        return grad_out * a.t(), grad_out * b.t()  # BUG

    @staticmethod
    def example_inputs():
        return _randn(4, 4, seed=14), _randn(4, 4, seed=15)


class HiddenGram(torch.autograd.Function):
    """The Gram matrix X^T X of a [5, 3] design matrix."""

    bug = None

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.t() @ x

    @staticmethod
    def backward(ctx, grad_out):
        (x,) = ctx.saved_tensors
        return x @ (grad_out + grad_out.t())

    @staticmethod
    def example_inputs():
        return (_randn(5, 3, seed=16),)


class HiddenGramOneSide(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "x",
           "note": "only the X g term; the X g^T term from the other factor is dropped"}

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.t() @ x

    @staticmethod
    def backward(ctx, grad_out):
        (x,) = ctx.saved_tensors
        return x @ grad_out  # BUG

    @staticmethod
    def example_inputs():
        return (_randn(5, 3, seed=16),)


class HiddenLogDet(torch.autograd.Function):
    """log det of a matrix with positive determinant (A = M M^T + I)."""

    bug = None

    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        return torch.logdet(a)

    @staticmethod
    def backward(ctx, grad_out):
        (a,) = ctx.saved_tensors
        return grad_out * torch.linalg.inv(a).t()

    @staticmethod
    def example_inputs():
        m = _randn(4, 4, seed=17)
        return (m @ m.t() + torch.eye(4, dtype=torch.float64),)


class HiddenLogDetUnscaled(torch.autograd.Function):
    bug = {"kind": "ignores_grad_output", "input": "a",
           "note": "returns A^{-T} without multiplying by the incoming gradient"}

    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        return torch.logdet(a)

    @staticmethod
    def backward(ctx, grad_out):
        (a,) = ctx.saved_tensors
        return torch.linalg.inv(a).t()  # BUG

    @staticmethod
    def example_inputs():
        m = _randn(4, 4, seed=17)
        return (m @ m.t() + torch.eye(4, dtype=torch.float64),)
