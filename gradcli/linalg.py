"""``torch.linalg`` as far as gradcli's engine goes: the vector norms and ``cross``.

Matrix factorisations (det, inv, solve, eigh, svd, ...) are not provided: their backward passes are
rarely hand-written, and an op gradcli does not have fails with AttributeError naming it.
"""
from gradcli.autograd.ops.linalg_more import linalg_cross as cross  # noqa: F401

__all__ = ["cross", "vector_norm", "norm", "matrix_norm"]


def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None):
    """torch.linalg.vector_norm: the ``ord``-norm of the entries over ``dim`` (all of them by default)."""
    from gradcli.autograd.ops.more import norm as _norm

    return _norm(x, p=float(ord), dim=dim, keepdim=keepdim, dtype=dtype)


def matrix_norm(x, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None):
    """torch.linalg.matrix_norm for ord='fro' (the 2-norm of the entries of each matrix)."""
    if ord != "fro":
        raise NotImplementedError(f"linalg.matrix_norm(ord={ord!r}) is not provided by gradcli (only 'fro')")
    return vector_norm(x, 2, dim=tuple(dim), keepdim=keepdim, dtype=dtype)


def norm(x, ord=None, dim=None, keepdim=False, *, dtype=None):
    """torch.linalg.norm: without ``ord``, the 2-norm of the flattened input (or over ``dim``);
    a number ``ord`` is a vector norm (1-D ``dim``); 'fro' over two dims is the Frobenius norm."""
    if ord is None or ord == "fro":
        return vector_norm(x, 2, dim=dim, keepdim=keepdim, dtype=dtype)
    if isinstance(ord, str):
        raise NotImplementedError(f"linalg.norm(ord={ord!r}) is not provided by gradcli")
    if dim is not None and not isinstance(dim, int) and len(tuple(dim)) == 2:
        raise NotImplementedError(f"linalg.norm(ord={ord!r}) over two dims (a matrix norm) is not provided by "
                                  "gradcli; only 'fro'")
    return vector_norm(x, ord, dim=dim, keepdim=keepdim, dtype=dtype)
