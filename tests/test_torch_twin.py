"""engine_twin: a torch Function's file run again with gradcli standing for torch; the real torch
modules are back in place afterwards, and whatever does not work that way is NoTwin with the reason."""
import sys
import textwrap

import numpy as np
import pytest

import gradcli
from gradcli.autograd.function import Function as EngineFunction
from gradcli.check.exact import exact_check
from gradcli.symbolic.torch_twin import NoTwin, engine_twin, to_engine

torch = pytest.importorskip("torch")

SOURCE = """
    import torch
    import torch.nn.functional as F
    from torch.autograd import Function

    LOADS = []
    LOADS.append(torch.__name__)        # which torch this run of the file saw


    class Gelu(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return F.gelu(x)

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            cdf = 0.5 * (1 + torch.erf(x / 2 ** 0.5))
            pdf = torch.exp(-0.5 * x * x) / (2 * torch.pi) ** 0.5
            return g * (cdf + x * pdf)


    class Outer:
        class Inner(Function):
            @staticmethod
            def forward(ctx, x):
                return x * 3

            @staticmethod
            def backward(ctx, g):
                return 3 * g


    def make():
        class Local(Function):
            @staticmethod
            def forward(ctx, x):
                return x

            @staticmethod
            def backward(ctx, g):
                return g
        return Local
"""


@pytest.fixture
def module(tmp_path, monkeypatch):
    path = tmp_path / "twin_ops.py"
    path.write_text(textwrap.dedent(SOURCE))
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("twin_ops", None)
    import twin_ops
    yield twin_ops
    sys.modules.pop("twin_ops", None)


def test_the_twin_is_an_engine_function_from_the_same_file_and_torch_is_back(module):
    torch_modules = {name: mod for name, mod in sys.modules.items() if name == "torch" or name.startswith("torch.")}
    twin = engine_twin(module.Gelu)
    assert issubclass(twin, EngineFunction) and not issubclass(twin, torch.autograd.Function)
    assert twin.__name__ == "Gelu" and sys.modules[twin.__module__] is not module
    assert module.LOADS == ["torch"] and sys.modules[twin.__module__].LOADS == ["gradcli"]
    after = {name: mod for name, mod in sys.modules.items() if name == "torch" or name.startswith("torch.")}
    assert after == torch_modules  # every torch module restored, nothing left standing in
    assert engine_twin(module.Outer.Inner).__qualname__ == "Outer.Inner"
    assert engine_twin(module.Gelu) is twin  # the file ran once for this class: input sets and --prove share it
    assert sys.modules[twin.__module__].LOADS == ["gradcli"]


def test_the_twin_computes_what_the_torch_function_computes(module):
    twin = engine_twin(module.Gelu)
    x = np.linspace(-2, 2, 7)
    ours = twin.apply(gradcli.tensor(x)).numpy()
    theirs = module.Gelu.apply(torch.tensor(x)).numpy()
    np.testing.assert_allclose(ours, theirs, rtol=1e-15, atol=1e-16)


def test_exact_check_of_a_torch_function_uses_its_twin(module):
    x = torch.tensor(np.linspace(-2, 2, 6), requires_grad=True)
    check = exact_check(module.Gelu, [x])
    assert check.status == "pass", check.message
    assert check.details["reference"] == "forward traced on gradcli's engine"
    assert check.details["inputs"][0]["exact_error"] < 1e-15


def test_a_class_defined_inside_a_function_has_no_twin(module):
    with pytest.raises(NoTwin, match="Local is defined inside a function"):
        engine_twin(module.make())


def test_a_file_that_fails_with_gradcli_as_torch_has_no_twin(tmp_path, monkeypatch):
    path = tmp_path / "cuda_op.py"
    path.write_text(textwrap.dedent("""
        import torch
        DEVICE = torch.device("cuda") if torch.cuda.is_available() else torch.device("cpu")
        SIZE = torch.Size([2]).numel()   # gradcli's Size is a tuple: no numel

        class Twice(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return 2 * x

            @staticmethod
            def backward(ctx, g):
                return 2 * g
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    import cuda_op
    with pytest.raises(NoTwin, match=r"its file does not run with gradcli as torch \(AttributeError: .*numel"):
        engine_twin(cuda_op.Twice)
    assert sys.modules["torch"] is torch


def test_to_engine_converts_torch_tensors_only():
    t = torch.tensor([1.5, 2.5], dtype=torch.float32, requires_grad=True)
    e = to_engine(t)
    assert type(e) is gradcli.Tensor and e.dtype == gradcli.float32 and e.requires_grad and e.tolist() == [1.5, 2.5]
    assert to_engine(3) == 3 and to_engine("mean") == "mean"
