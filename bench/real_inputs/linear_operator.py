"""Inputs for linear_operator's autograd Functions, called as LinearOperator's own methods call them
(`Matmul.apply(op.representation_tree(), rhs, *op.representation())`, ...), with a DenseLinearOperator of a
symmetric positive definite matrix. Used by bench/real_packages.py as `--inputs-from` (one help)."""
import torch
from linear_operator.operators import DenseLinearOperator, IdentityLinearOperator

D = torch.float64


def _op(n=4):
    a = torch.randn(n, n, dtype=D)
    return DenseLinearOperator((a @ a.T / n + 0.5 * torch.eye(n, dtype=D)).requires_grad_())


def Matmul():
    op = _op()
    return (op.representation_tree(), torch.randn(4, 2, dtype=D, requires_grad=True), *op.representation())


def InvQuad():
    op = _op()
    return (op.representation_tree(), torch.randn(4, 2, dtype=D, requires_grad=True), *op.representation())


def InvQuadLogdet():
    op = _op()
    precond = IdentityLinearOperator(diag_shape=4, dtype=D)
    probes = torch.randn(4, 3, dtype=D)
    norms = probes.norm(dim=-2, keepdim=True)
    args = [torch.randn(4, 2, dtype=D, requires_grad=True), *op.representation(), *precond.representation()]
    return (op.representation_tree(), precond.representation_tree(), None, len(precond.representation()), True,
            probes / norms, norms, *args)


def Diagonalization():
    op = _op()
    return (op.representation_tree(), op.device, op.dtype, op.matrix_shape, 4, op.batch_shape,
            *op.representation())


def PivotedCholesky():
    op = _op()
    return (op.representation_tree(), 3, 1e-12, *op.representation())


def DSMM():
    sparse = torch.sparse_coo_tensor(torch.tensor([[0, 1, 2, 2], [1, 0, 2, 0]]),
                                     torch.tensor([1.5, -0.5, 2.0, 0.3], dtype=D), (3, 3))
    return sparse, torch.randn(3, 2, dtype=D, requires_grad=True)
