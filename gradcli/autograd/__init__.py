"""gradcli's autograd engine: torch.autograd's API on numpy (contract: specs/engine.md)."""
from gradcli.autograd.tensor import Tensor  # noqa: I001  (tensor first: it wires the ops in)
from gradcli.autograd.engine import backward, grad
from gradcli.autograd.function import Function, FunctionCtx, once_differentiable
from gradcli.autograd.grad_mode import enable_grad, is_grad_enabled, no_grad, set_grad_enabled
from gradcli.autograd.ops import examples as _examples  # noqa: F401  (the ops' example_inputs, for gradcli check)

Variable = Tensor  # old tutorials wrap inputs in Variable(...)

__all__ = ["Tensor", "Variable", "Function", "FunctionCtx", "once_differentiable", "backward", "grad",
           "no_grad", "enable_grad", "set_grad_enabled", "is_grad_enabled", "gradcheck", "gradgradcheck"]


def __getattr__(name):
    # torch.autograd.gradcheck(fn, inputs) in torch code: the checker is not part of the engine; the
    # package top (the torch-like facade, gradcli/__init__.py) resolves torch's name to it lazily
    if name in ("gradcheck", "gradgradcheck"):
        import gradcli
        return getattr(gradcli, name)
    raise AttributeError(f"module 'gradcli.autograd' has no attribute {name!r}")
