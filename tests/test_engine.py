"""The backward engine: accumulation, retain_graph, create_graph, grad(), backward(inputs=),
retain_grad, hooks and grad mode. Expected numbers are worked out by hand in the comments; the
tests marked "torch" also check them against torch when it is installed."""
import threading

import numpy as np
import pytest

import gradcli
from gradcli.autograd import Function, enable_grad, grad, is_grad_enabled, no_grad, set_grad_enabled


def t(values, requires_grad=False):
    return gradcli.tensor(values, requires_grad=requires_grad)


def values(tensor):
    return tensor.detach().numpy().tolist()


# ----- accumulation --------------------------------------------------------------------------
def test_a_tensor_used_twice_gets_both_contributions():
    x = t([1.0, 2.0, 3.0], requires_grad=True)
    (x * x + x).sum().backward()  # d/dx (x² + x) = 2x + 1
    assert values(x.grad) == [3.0, 5.0, 7.0]


def test_a_shared_intermediate_node_runs_once_after_both_consumers():
    calls = []

    class Double(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            calls.append(values(g))
            return g * 2

    x = t([1.0, -1.0], requires_grad=True)
    y = Double.apply(x)
    (y * y + y * 3).sum().backward()  # dz/dy = 2y + 3 = [7, -1], arriving in one call
    assert calls == [[7.0, -1.0]]
    assert values(x.grad) == [14.0, -2.0]


def test_leaf_grad_accumulates_across_backward_calls():
    x = t([1.0, 2.0], requires_grad=True)
    (x * 3).sum().backward()
    (x * x).sum().backward()
    assert values(x.grad) == [3.0 + 2.0, 3.0 + 4.0]


def test_backward_with_several_roots_sums_their_gradients():
    x = t([1.0, 2.0], requires_grad=True)
    y = x * 2
    gradcli.autograd.backward([y.sum(), (y * x).sum()])  # 2 + d(2x²)/dx = 2 + 4x
    assert values(x.grad) == [6.0, 10.0]


def test_root_gradient_scales_the_result_and_is_cast_to_the_output_dtype():
    x = t([1.0, 2.0, 3.0], requires_grad=True)
    y = x * x
    y.backward(gradcli.tensor([1.0, 0.5, 2.0], dtype=gradcli.float32))
    assert values(x.grad) == [2.0, 2.0, 12.0]
    assert x.grad.dtype == np.float64


def test_float32_graph_gives_float32_gradients():
    x = gradcli.tensor([1.5, 2.5], dtype=gradcli.float32, requires_grad=True)
    (x * x).sum().backward()
    assert x.grad.dtype == np.float32
    assert values(x.grad) == [3.0, 5.0]


# ----- retain_graph and freeing ----------------------------------------------------------------
SECOND_BACKWARD = "Trying to backward through the graph a second time"


def test_second_backward_fails_once_saved_tensors_are_freed():
    x = t([2.0], requires_grad=True)
    z = (x * x).sum()
    z.backward()
    with pytest.raises(RuntimeError, match=SECOND_BACKWARD):
        z.backward()


def test_retain_graph_allows_a_second_backward_that_accumulates():
    x = t([2.0], requires_grad=True)
    z = (x * x).sum()
    z.backward(retain_graph=True)
    z.backward()
    assert values(x.grad) == [8.0]
    with pytest.raises(RuntimeError, match=SECOND_BACKWARD):
        z.backward()


def test_a_graph_without_saved_tensors_can_be_run_twice_as_in_torch():
    x = t([2.0], requires_grad=True)
    z = (x + 1).sum()
    z.backward()
    z.backward()
    assert values(x.grad) == [2.0]


# ----- root errors ---------------------------------------------------------------------------
def test_non_scalar_backward_needs_a_gradient():
    x = t([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="^grad can be implicitly created only for scalar outputs$"):
        (x * 2).backward()


def test_gradient_of_the_wrong_shape_is_refused():
    x = t([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match=r"Mismatch in shape: grad_output\[0\] has a shape of \[3\] and "
                                           r"output\[0\] has a shape of \[2\]"):
        (x * 2).backward(gradcli.ones(3))


def test_gradient_must_be_a_tensor_as_the_seed_warns():
    x = t(3.0, requires_grad=True)
    with pytest.raises(TypeError, match="gradients can be either Tensors or None, but got float"):
        (x * 2).backward(2.5)


def test_backward_of_a_tensor_outside_any_graph_is_refused():
    with pytest.raises(RuntimeError, match="element 0 of tensors does not require grad and does not have a grad_fn"):
        t([1.0]).sum().backward()


def test_one_gradient_per_output():
    x = t(1.0, requires_grad=True)
    with pytest.raises(RuntimeError, match="got 2 gradients for 1 outputs"):
        gradcli.autograd.backward([x * 2], [t(1.0), t(1.0)])


# ----- create_graph: higher derivatives --------------------------------------------------------
def test_create_graph_gives_second_and_third_derivatives():
    x = t([1.0, 2.0, 3.0], requires_grad=True)
    (g1,) = grad((x ** 3).sum(), x, create_graph=True)  # 3x²
    assert values(g1) == [3.0, 12.0, 27.0]
    (g2,) = grad(g1.sum(), x, create_graph=True)  # 6x
    assert values(g2) == [6.0, 12.0, 18.0]
    g2.sum().backward()  # 6
    assert values(x.grad) == [6.0, 6.0, 6.0]


def test_backward_with_create_graph_makes_grad_differentiable():
    x = t([0.5, -1.0], requires_grad=True)
    x.sin().sum().backward(create_graph=True)
    g = x.grad  # cos x, still attached to the graph
    assert g.requires_grad and g.grad_fn is not None
    np.testing.assert_allclose(values(g), np.cos([0.5, -1.0]), rtol=1e-15)
    (second,) = grad(g.sum(), x)
    np.testing.assert_allclose(values(second), -np.sin([0.5, -1.0]), rtol=1e-15)


def test_create_graph_does_not_alias_the_grads_of_two_leaves():
    a, b = t([1.0, 2.0], requires_grad=True), t([3.0, 4.0], requires_grad=True)
    s = a + b
    s.backward(gradcli.ones(2), create_graph=True)
    assert a.grad is not b.grad
    s.backward(gradcli.ones(2))  # in-place accumulation into a.grad must leave b.grad alone
    assert values(a.grad) == [2.0, 2.0] and values(b.grad) == [2.0, 2.0]


def test_double_backward_matches_torch():
    torch = pytest.importorskip("torch")
    data = [0.3, -1.2, 2.0]

    def second_derivative(lib, x):
        y = (x.tanh() * x.exp() + x.sigmoid() * x ** 2).sum()
        (g,) = lib.autograd.grad(y, x, create_graph=True)
        (g2,) = lib.autograd.grad((g * g).sum(), x)
        return g, g2

    xg = gradcli.tensor(data, requires_grad=True)
    xt = torch.tensor(data, dtype=torch.float64, requires_grad=True)
    for ours, theirs in zip(second_derivative(gradcli, xg), second_derivative(torch, xt)):
        np.testing.assert_allclose(values(ours), theirs.detach().numpy(), rtol=1e-13)


# ----- autograd.grad ---------------------------------------------------------------------------
def test_grad_returns_gradients_without_touching_dot_grad():
    x = t([1.0, 2.0], requires_grad=True)
    w = t([3.0, 4.0], requires_grad=True)
    gx, gw = grad((x * w).sum(), [x, w])
    assert values(gx) == [3.0, 4.0] and values(gw) == [1.0, 2.0]
    assert x.grad is None and w.grad is None
    assert not gx.requires_grad


def test_grad_with_respect_to_an_intermediate_tensor():
    x = t([1.0, 2.0], requires_grad=True)
    y = x * 3
    z = (y * y).sum()
    (gy,) = grad(z, y)  # 2y
    assert values(gy) == [6.0, 12.0]


def test_grad_with_grad_outputs_and_two_outputs():
    x = t([1.0, 2.0], requires_grad=True)
    (g,) = grad([x * 2, x * x], x, grad_outputs=[t([1.0, 1.0]), t([10.0, 100.0])])
    assert values(g) == [2.0 + 20.0, 2.0 + 400.0]


def test_grad_of_an_unused_input_needs_allow_unused():
    x = t([1.0], requires_grad=True)
    unused = t([5.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="One of the differentiated Tensors appears to not have been used in the "
                                           "graph. Set allow_unused=True if this is the desired behavior."):
        grad((x * 2).sum(), [x, unused], retain_graph=True)
    gx, gu = grad((x * 2).sum(), [x, unused], allow_unused=True)
    assert values(gx) == [2.0] and gu is None
    gx, gu = grad((x * 2).sum(), [x, unused], materialize_grads=True)
    assert values(gu) == [0.0]


def test_grad_of_an_input_that_does_not_require_grad_is_refused():
    x = t([1.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="One of the differentiated Tensors does not require grad"):
        grad((x * 2).sum(), t([1.0]))


def test_grad_runs_only_the_nodes_above_its_inputs():
    ran = []

    class Spy(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, g):
            ran.append(True)
            return g

    x = t([1.0], requires_grad=True)
    y = Spy.apply(x) * 2
    grad(y.sum(), y)
    assert ran == []  # Spy lies below y: nothing needed it


def test_backward_inputs_accumulates_only_into_those_tensors():
    a, b = t([1.0], requires_grad=True), t([2.0], requires_grad=True)
    y = a * b
    z = (y * 3).sum()
    z.backward(inputs=[a, y])
    assert values(a.grad) == [6.0] and values(y.grad) == [3.0]
    assert b.grad is None


# ----- retain_grad and hooks -------------------------------------------------------------------
def test_retain_grad_keeps_a_non_leaf_gradient_and_accumulates_it():
    x = t([1.0, 2.0], requires_grad=True)
    y = x * 2
    assert not y.retains_grad
    y.retain_grad()
    y.retain_grad()  # a second call changes nothing
    assert y.retains_grad
    z = (y * y).sum()
    z.backward(retain_graph=True)
    assert values(y.grad) == [4.0, 8.0]
    z.backward()
    assert values(y.grad) == [8.0, 16.0]


def test_a_non_leaf_without_retain_grad_keeps_no_gradient():
    x = t([1.0], requires_grad=True)
    y = x * 2
    (y * y).sum().backward()
    assert y.grad is None


def test_retain_grad_follows_the_tensor_through_an_in_place_op():
    x = t([1.0, 2.0], requires_grad=True)
    y = x * 2
    y.retain_grad()
    y.mul_(3)  # y is now 6x; d(y²)/dy = 2y = 12x
    (y * y).sum().backward()
    assert values(y.grad) == [12.0, 24.0]
    assert values(x.grad) == [72.0, 144.0]


def test_leaf_hook_replaces_the_gradient_and_can_be_removed():
    x = t([1.0, 2.0], requires_grad=True)
    seen = []
    handle = x.register_hook(lambda g: seen.append(values(g)) or g * 10)
    (x * 3).sum().backward()
    assert seen == [[3.0, 3.0]] and values(x.grad) == [30.0, 30.0]
    handle.remove()
    (x * 3).sum().backward()
    assert values(x.grad) == [33.0, 33.0]


def test_non_leaf_hooks_run_once_each_before_retain_grad_sees_the_gradient():
    x = t([1.0, 2.0], requires_grad=True)
    y = x * 1
    calls = []
    y.register_hook(lambda g: calls.append("first") or g * 3)
    y.register_hook(lambda g: calls.append("second"))
    y.retain_grad()
    (y * 1).sum().backward()
    assert calls == ["first", "second"]
    assert values(y.grad) == [3.0, 3.0] and values(x.grad) == [3.0, 3.0]


def test_hooks_run_in_grad_too():
    x = t([1.0, 2.0], requires_grad=True)
    x.register_hook(lambda g: g * 10)
    (gx,) = grad((x * x).sum(), x)
    assert values(gx) == [20.0, 40.0]


def test_hook_on_a_tensor_without_grad_is_refused():
    with pytest.raises(RuntimeError, match="cannot register a hook on a tensor that doesn't require gradient"):
        t([1.0]).register_hook(lambda g: g)


# ----- grad mode -------------------------------------------------------------------------------
def test_no_grad_records_nothing_and_restores_the_mode():
    x = t([1.0], requires_grad=True)
    with no_grad():
        assert not is_grad_enabled()
        y = x * 2
        with enable_grad():
            z = x * 2
    assert is_grad_enabled()
    assert y.grad_fn is None and not y.requires_grad
    assert z.grad_fn is not None


def test_grad_mode_decorators_with_and_without_parentheses():
    @no_grad
    def bare():
        return is_grad_enabled()

    @no_grad()
    def called():
        return is_grad_enabled()

    @set_grad_enabled(False)
    def switched_off():
        return is_grad_enabled()

    assert (bare(), called(), switched_off(), is_grad_enabled()) == (False, False, False, True)


def test_set_grad_enabled_as_function_and_context_manager():
    with set_grad_enabled(False):
        assert not is_grad_enabled()
    assert is_grad_enabled()
    set_grad_enabled(False)
    try:
        assert not is_grad_enabled()
    finally:
        set_grad_enabled(True)
    assert is_grad_enabled()


def test_grad_mode_is_per_thread():
    seen = []
    with no_grad():
        worker = threading.Thread(target=lambda: seen.append(is_grad_enabled()))
        worker.start()
        worker.join()
    assert seen == [True]


def test_two_outputs_of_one_node_as_roots():
    class SinCos(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x.sin(), x.cos()

        @staticmethod
        def backward(ctx, g_sin, g_cos):
            (x,) = ctx.saved_tensors
            return g_sin * x.cos() - g_cos * x.sin()

    x = t([0.0], requires_grad=True)
    s, c = SinCos.apply(x)
    gradcli.autograd.backward([s, c], [t([2.0]), t([3.0])])  # 2 cos 0 − 3 sin 0
    assert values(x.grad) == [2.0]


def test_torch_autograd_gradcheck_is_gradclis_checker():
    class Square(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * 3 * x  # wrong: 2x

    x = t([0.5, -1.5], requires_grad=True)
    assert not gradcli.autograd.gradcheck(Square.apply, (x,))
