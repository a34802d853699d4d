"""What a Function's backward may return, the errors that name the Function and the position
(with torch's meaning), the broadcast-gradient fix-up the checker reports, and the legacy style."""
import re

import numpy as np
import pytest

import gradcli
from gradcli.autograd import Function


def t(values, requires_grad=False):
    return gradcli.tensor(values, requires_grad=requires_grad)


def values(tensor):
    return tensor.detach().numpy().tolist()


def function_returning(grads, n_inputs=2):
    """A Function of (x, y) or (x, k) whose backward returns ``grads(g)``."""

    class Returning(Function):
        @staticmethod
        def forward(ctx, *args):
            return args[0] * 2

        @staticmethod
        def backward(ctx, g):
            return grads(g)

    return Returning


def test_too_few_gradients():
    fn = function_returning(lambda g: g)
    with pytest.raises(RuntimeError, match=r"^function ReturningBackward returned an incorrect number of gradients "
                                           r"\(expected 2, got 1\)$"):
        fn.apply(t([1.0], True), t([2.0], True)).sum().backward()


def test_too_many_gradients():
    fn = function_returning(lambda g: (g, g, g))
    with pytest.raises(RuntimeError, match=r"incorrect number of gradients \(expected 2, got 3\)"):
        fn.apply(t([1.0], True), t([2.0], True)).sum().backward()


def test_surplus_trailing_nones_are_ignored_as_in_torch():
    fn = function_returning(lambda g: (g * 2, None, None, None))
    x = t([1.0], True)
    fn.apply(x, 3.0).sum().backward()
    assert values(x.grad) == [2.0]


def test_gradient_for_a_non_tensor_input_must_be_none():
    fn = function_returning(lambda g: (g, g))
    with pytest.raises(RuntimeError, match=r"^function ReturningBackward returned a gradient different than None at "
                                           r"position 2, but the corresponding forward input was not a Variable$"):
        fn.apply(t([1.0], True), 3.0).sum().backward()


@pytest.mark.parametrize("bad, name", [(2.5, "float"), ("grad", "str"), (np.ones(1), "ndarray")])
def test_gradient_that_is_not_a_tensor(bad, name):
    fn = function_returning(lambda g: (g, bad))
    with pytest.raises(RuntimeError, match=rf"^function ReturningBackward returned an invalid gradient at index 1 - "
                                           rf"expected a Tensor or None \(got {name}\)$"):
        fn.apply(t([1.0], True), t([2.0], True)).sum().backward()


def test_gradient_of_the_wrong_shape():
    fn = function_returning(lambda g: (gradcli.ones(4), None))
    with pytest.raises(RuntimeError, match=r"^Function ReturningBackward returned an invalid gradient at index 0 - "
                                           r"got \[4\] but expected shape compatible with \[3\]$"):
        fn.apply(t([1.0, 2.0, 3.0], True), 1.0).sum().backward()


def test_gradient_for_an_input_without_requires_grad_is_dropped():
    fn = function_returning(lambda g: (g, gradcli.ones(7)))  # the 2nd would be the wrong shape, too
    x, constant = t([1.0], True), t([2.0])
    fn.apply(x, constant).sum().backward()
    assert values(x.grad) == [1.0] and constant.grad is None


def test_gradient_is_cast_to_the_input_dtype():
    fn = function_returning(lambda g: (g.to(gradcli.float32), None))
    x = t([1.0], True)
    fn.apply(x, 1.0).sum().backward()
    assert x.grad.dtype == np.float64


def test_a_gradient_that_merely_broadcasts_is_summed_and_recorded_for_the_checker():
    # torch sums a (2, 3) gradient down to a (3,) input silently; gradcli does too, and notes it
    fn = function_returning(lambda g: (gradcli.ones(2, 3), None))
    x = t([1.0, 2.0, 3.0], True)
    y = fn.apply(x, 1.0)
    y.sum().backward()
    assert values(x.grad) == [2.0, 2.0, 2.0]
    assert y.grad_fn._grad_fixups == [(0, (2, 3), (3,))]


def test_save_for_backward_accepts_only_tensors():
    class SavesNumber(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x, 3.0)
            return x * 1

    with pytest.raises(TypeError, match="save_for_backward can only save variables, but argument 1 is of type float"):
        SavesNumber.apply(t([1.0], True))


def test_a_function_without_backward():
    class NoBackward(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

    with pytest.raises(NotImplementedError, match="You must implement either the backward or vjp method"):
        NoBackward.apply(t([1.0], True)).sum().backward()


# ----- legacy style (seed 002) -----------------------------------------------------------------
class LegacySquare(Function):
    def __init__(self, scale=1.0):
        self.scale = scale

    def forward(self, x):
        self.save_for_backward(x)
        return x * x * self.scale

    def backward(self, grad_output):
        (x,) = self.saved_variables
        return grad_output * 2 * x * self.scale


MODERN_FORM = re.compile(r"LegacySquare uses the legacy autograd\.Function style .*which current PyTorch refuses\. "
                         r"Use:\n    class LegacySquare\(Function\):\n        @staticmethod\n"
                         r"        def forward\(ctx, \.\.\.\).*y = LegacySquare\.apply\(\.\.\.\)", re.S)


def test_legacy_instance_call_works_with_a_warning_showing_the_modern_form():
    x = t([3.0], True)
    with pytest.warns(DeprecationWarning, match=MODERN_FORM):
        y = LegacySquare(scale=2.0)(x)
    assert repr(y) == "tensor([18.], grad_fn=<LegacySquare>)"
    y.sum().backward()
    assert values(x.grad) == [12.0]


def test_legacy_class_apply_and_subclass_are_legacy_too():
    class LegacySquareTwice(LegacySquare):
        pass

    x = t([3.0], True)
    with pytest.warns(DeprecationWarning):
        LegacySquare.apply(x).sum().backward()
    with pytest.warns(DeprecationWarning):
        LegacySquareTwice()(x).sum().backward()
    assert values(x.grad) == [12.0]


def test_calling_an_instance_of_a_modern_function_is_refused_with_the_fix():
    class Modern(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, g):
            return g

    with pytest.warns(DeprecationWarning, match=r"Modern should not be instantiated"):
        instance = Modern()
    with pytest.raises(RuntimeError, match=r"Legacy autograd function with non-static forward method is deprecated\. "
                                           r".*\(Call Modern\.apply\(\.\.\.\) instead of Modern\(\)\(\.\.\.\)\)"):
        instance(t([1.0], True))
