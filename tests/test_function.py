"""autograd.Function: the ways to write one, and what ``ctx`` offers."""
import math

import numpy as np
import pytest

import gradcli
from gradcli.autograd import Function, grad, no_grad, once_differentiable


def t(values, requires_grad=False):
    return gradcli.tensor(values, requires_grad=requires_grad)


def values(tensor):
    return tensor.detach().numpy().tolist()


# ----- styles ----------------------------------------------------------------------------------
class Cube(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 3

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * 3 * x * x  # tensor ops: differentiable again


def test_static_style_and_ctx_is_the_grad_fn():
    x = t([1.0, 2.0], requires_grad=True)
    y = Cube.apply(x)
    assert type(y.grad_fn).__name__ == "CubeBackward" and y.grad_fn.name() == "CubeBackward"
    assert repr(y) == "tensor([1., 8.], grad_fn=<CubeBackward>)"
    assert y.grad_fn.saved_tensors[0] is x
    y.sum().backward()
    assert values(x.grad) == [3.0, 12.0]


def test_classmethod_forward_and_backward_receive_the_class():
    seen = []

    class Scale(Function):
        factor = 5.0

        @classmethod
        def forward(cls, ctx, x):
            seen.append(cls.__name__)
            return x * cls.factor

        @classmethod
        def backward(cls, ctx, g):
            return g * cls.factor

    class ScaleMore(Scale):
        factor = 7.0

    x = t([1.0], requires_grad=True)
    ScaleMore.apply(x).sum().backward()
    assert seen == ["ScaleMore"] and values(x.grad) == [7.0]
    assert type(ScaleMore.apply(x).grad_fn).__name__ == "ScaleMoreBackward"


def test_setup_context_style_gets_the_inputs_with_defaults_and_the_output():
    got = {}

    class Power(Function):
        @staticmethod
        def forward(x, p=2.0):
            return x ** p

        @staticmethod
        def setup_context(ctx, inputs, output):
            got["inputs"], got["output"] = inputs, output
            x, p = inputs
            ctx.save_for_backward(x)
            ctx.p = p

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * ctx.p * x ** (ctx.p - 1), None

    x = t([3.0], requires_grad=True)
    y = Power.apply(x)
    assert got["inputs"][0] is x and got["inputs"][1] == 2.0 and values(got["output"]) == [9.0]
    y.sum().backward()
    assert values(x.grad) == [6.0]
    x.grad = None
    Power.apply(x, p=3.0).sum().backward()
    assert values(x.grad) == [27.0]


def test_vjp_alone_is_used_as_backward():
    class Twice(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def vjp(ctx, g):
            return g * 2

    x = t([1.0], requires_grad=True)
    Twice.apply(x).sum().backward()
    assert values(x.grad) == [2.0]


# ----- arguments ------------------------------------------------------------------------------
class ScaleShift(Function):
    """``x * scale + shift``: a tensor, then two non-tensor arguments (shift may be a keyword)."""

    @staticmethod
    def forward(ctx, x, scale, shift=0.0):
        ctx.scale = scale  # an arbitrary attribute on ctx
        ctx.needs_seen = ctx.needs_input_grad
        return x * scale + shift

    @staticmethod
    def backward(ctx, g):
        return g * ctx.scale, None, None


def test_non_tensor_and_keyword_arguments_pass_through_and_get_none():
    x = t([1.0, 2.0], requires_grad=True)
    y = ScaleShift.apply(x, 3.0, shift=10.0)
    assert values(y) == [13.0, 16.0]
    assert y.grad_fn.needs_seen == (True, False, False)  # the keyword is an input too, as in torch
    assert y.grad_fn.scale == 3.0
    y.sum().backward()
    assert values(x.grad) == [3.0, 3.0]


def test_needs_input_grad_tells_which_inputs_need_a_gradient():
    seen = []

    class Mul(Function):
        @staticmethod
        def forward(ctx, a, b):
            ctx.save_for_backward(a, b)
            return a * b

        @staticmethod
        def backward(ctx, g):
            seen.append(ctx.needs_input_grad)
            a, b = ctx.saved_tensors
            return (g * b if ctx.needs_input_grad[0] else None), (g * a if ctx.needs_input_grad[1] else None)

    a, b = t([2.0], requires_grad=True), t([5.0])
    Mul.apply(a, b).sum().backward()
    assert seen == [(True, False)] and values(a.grad) == [5.0] and b.grad is None


def test_under_no_grad_forward_runs_but_nothing_is_recorded():
    needs = []

    class Probe(Function):
        @staticmethod
        def forward(ctx, x):
            needs.append(ctx.needs_input_grad)
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g

    x = t([1.0], requires_grad=True)
    with no_grad():
        y = Probe.apply(x)
    assert needs == [(False,)] and y.grad_fn is None and not y.requires_grad


def test_an_input_returned_as_is_becomes_a_new_output_tensor():
    class Identity(Function):
        @staticmethod
        def forward(ctx, x, other):
            return other

        @staticmethod
        def backward(ctx, g):
            return None, g

    x = t([1.0], requires_grad=True)
    constant = t([4.0])
    y = Identity.apply(x, constant)
    assert y is not constant and constant.grad_fn is None and not constant.requires_grad
    assert type(y.grad_fn).__name__ == "IdentityBackward" and values(y) == [4.0]


# ----- outputs -------------------------------------------------------------------------------
class SinCos(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.sin(), x.cos()

    @staticmethod
    def backward(ctx, g_sin, g_cos):
        (x,) = ctx.saved_tensors
        ctx.received = (g_sin, g_cos)
        return g_sin * x.cos() - g_cos * x.sin()


def test_multiple_outputs_each_bring_their_gradient():
    x = t([0.5], requires_grad=True)
    s, c = SinCos.apply(x)
    assert (s._output_nr, c._output_nr) == (0, 1) and s.grad_fn is c.grad_fn
    (s * 2 + c * 3).sum().backward()
    assert x.grad.item() == pytest.approx(2 * math.cos(0.5) - 3 * math.sin(0.5), abs=1e-15)


def test_an_unused_output_gets_a_zero_gradient_by_default():
    x = t([0.5], requires_grad=True)
    s, c = SinCos.apply(x)
    s.sum().backward()
    assert values(s.grad_fn.received[1]) == [0.0]
    assert x.grad.item() == pytest.approx(math.cos(0.5), abs=1e-15)


def test_set_materialize_grads_false_passes_none_for_an_unused_output():
    class Pair(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.set_materialize_grads(False)
            return x * 2, x * 3

        @staticmethod
        def backward(ctx, g2, g3):
            ctx.received = (g2, g3)
            return g2 * 2 if g3 is None else g2 * 2 + g3 * 3

    x = t([1.0], requires_grad=True)
    doubled, _tripled = Pair.apply(x)
    doubled.sum().backward()
    assert doubled.grad_fn.received[1] is None and values(x.grad) == [2.0]


def test_mark_non_differentiable_outputs_do_not_require_grad():
    class MaxWithIndex(Function):
        @staticmethod
        def forward(ctx, x):
            index = int(np.argmax(x.data))
            ctx.index, ctx.shape = index, x.shape
            value, where = x[index], gradcli.tensor(float(index))
            ctx.mark_non_differentiable(where)
            return value, where

        @staticmethod
        def backward(ctx, g_value, g_where):
            ctx.g_where = g_where
            out = gradcli.zeros(ctx.shape)
            out[ctx.index] = g_value
            return out

    x = t([1.0, 5.0, 2.0], requires_grad=True)
    value, where = MaxWithIndex.apply(x)
    assert value.requires_grad and not where.requires_grad and where.grad_fn is None
    value.backward()
    assert values(x.grad) == [0.0, 1.0, 0.0] and values(value.grad_fn.g_where) == 0.0


def test_non_tensor_outputs_pass_through():
    class WithCount(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2, 3

        @staticmethod
        def backward(ctx, g, g_count):
            ctx.g_count = g_count
            return g * 2

    x = t([1.0], requires_grad=True)
    y, count = WithCount.apply(x)
    assert count == 3
    y.sum().backward()
    assert y.grad_fn.g_count is None and values(x.grad) == [2.0]


def test_mark_dirty_returns_the_modified_input_with_the_new_grad_fn():
    class AddOneInPlace(Function):
        @staticmethod
        def forward(ctx, x):
            x.add_(1)
            ctx.mark_dirty(x)
            ctx.save_for_backward(x)
            return x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors  # saved after the change: no version error
            return g * x

    leaf = t([1.0, 2.0], requires_grad=True)
    y = leaf * 1
    out = AddOneInPlace.apply(y)
    assert out is y and type(y.grad_fn).__name__ == "AddOneInPlaceBackward" and y._version == 2  # as torch
    out.sum().backward()
    assert values(leaf.grad) == [2.0, 3.0]
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad has been used in an in-place operation"):
        AddOneInPlace.apply(leaf)


# ----- saved tensors ---------------------------------------------------------------------------
def test_saved_tensor_modified_in_place_names_the_function_and_versions():
    x = t([1.0, 2.0], requires_grad=True)
    y = x * 1
    out = Cube.apply(y)
    y.mul_(2)
    y.add_(1)
    with pytest.raises(RuntimeError, match=r"modified by an inplace operation: \[float64 tensor of shape \[2\]\], "
                                           r"which is output 0 of AddBackward, is at version 2; expected version 0 "
                                           r"instead\. Hint: it is saved tensor 0 of CubeBackward"):
        out.sum().backward()


def test_saved_tensors_are_freed_after_backward():
    x = t([1.0], requires_grad=True)
    y = Cube.apply(x)
    y.sum().backward()
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        y.grad_fn.saved_tensors


# ----- double backward ------------------------------------------------------------------------
def test_double_backward_through_a_custom_backward_made_of_tensor_ops():
    x = t([1.0, 2.0], requires_grad=True)
    (g,) = grad(Cube.apply(x).sum(), x, create_graph=True)  # 3x²
    assert values(g) == [3.0, 12.0] and g.requires_grad
    g.sum().backward()  # 6x
    assert values(x.grad) == [6.0, 12.0]


def test_double_backward_through_a_custom_function_matches_torch():
    torch = pytest.importorskip("torch")

    def third(lib):
        class Tanh(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                y = x.tanh()
                ctx.save_for_backward(y)
                return y

            @staticmethod
            def backward(ctx, g):
                (y,) = ctx.saved_tensors
                return g * (1 - y * y)

        x = lib.tensor([0.3, -0.8], dtype=lib.float64, requires_grad=True)
        (g1,) = lib.autograd.grad(Tanh.apply(x).sum(), x, create_graph=True)
        (g2,) = lib.autograd.grad(g1.sum(), x, create_graph=True)
        (g3,) = lib.autograd.grad(g2.sum(), x)
        return [g.detach().numpy() for g in (g1, g2, g3)]

    for ours, theirs in zip(third(gradcli), third(torch)):
        np.testing.assert_allclose(ours, theirs, rtol=1e-14)


def test_once_differentiable_backward_works_once_and_refuses_twice():
    class Square(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        @once_differentiable
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * 2 * x

    x = t([3.0], requires_grad=True)
    Square.apply(x).sum().backward()
    assert values(x.grad) == [6.0]
    (g,) = grad(Square.apply(x).sum(), x, create_graph=True)
    assert values(g) == [6.0] and not g.requires_grad  # as in torch: nothing to differentiate it against
    v = t([1.0], requires_grad=True)
    (g,) = grad(Square.apply(x), x, grad_outputs=v, create_graph=True)
    assert values(g) == [6.0] and g.requires_grad
    with pytest.raises(RuntimeError, match="trying to differentiate twice a function that was marked with "
                                           "@once_differentiable"):
        g.sum().backward()
