"""What the ops table (op_rows_pointwise.py) cannot express for the pointwise ops of
gradcli/autograd/ops/pointwise.py: bool results, result dtypes, the new_* constructors, scalar
arguments, edge values (nan/inf, signed zeros, zeros in cumprod) and argument errors (double
backward against torch: every row, in test_ops.py). Every expectation is torch's own result on the same inputs."""
import numpy as np
import pytest

import gradcli

torch = pytest.importorskip("torch")
# the edge values (nan, inf, division by 0) make numpy warn where torch is silent; the values are checked
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

NAN, INF = float("nan"), float("inf")
TORCH_DTYPE = {np.dtype(np.float64): torch.float64, np.dtype(np.float32): torch.float32,
               np.dtype(np.float16): torch.float16, np.dtype(np.int64): torch.int64,
               np.dtype(np.int32): torch.int32, np.dtype(np.bool_): torch.bool}


def _same(ours, theirs, exact=True):
    """Same dtype (torch's spelling), shape, values (bit for bit, signed zeros and nan included;
    with ``exact=False``, within 2e-15: torch's CPU kernels of lerp and addcmul fuse a multiply-add,
    which numpy cannot, and its vectorised atan2 differs from libm's in the last bit on some CPUs)."""
    assert TORCH_DTYPE[np.dtype(ours.dtype)] == theirs.dtype
    assert tuple(ours.shape) == tuple(theirs.shape)
    a, b = ours.detach().numpy(), theirs.detach().numpy()
    if exact:
        np.testing.assert_array_equal(a, b)
        if a.dtype.kind == "f":
            np.testing.assert_array_equal(np.signbit(a), np.signbit(b))
    else:
        np.testing.assert_allclose(a, b, rtol=2e-15, atol=2e-15)


def _pair(values, dtype=np.float64, requires_grad=False):
    arr = np.asarray(values, dtype=dtype)
    return gradcli.tensor(arr, requires_grad=requires_grad), torch.tensor(arr, requires_grad=requires_grad)


# ---- signbit, sgn: bool/int results, no gradient ----------------------------------------------
@pytest.mark.parametrize("values, dtype", [([1.5, -2.0, 0.0, -0.0, INF, -INF], np.float64),
                                           ([0.25, -0.0, -3.0], np.float32), ([3, -1, 0], np.int64)])
def test_signbit_is_a_bool_tensor_without_gradient_like_torch(values, dtype):
    (x, t) = _pair(values, dtype, requires_grad=np.dtype(dtype).kind == "f")
    ours, theirs = gradcli.signbit(x), torch.signbit(t)
    _same(ours, theirs)
    _same(x.signbit(), t.signbit())
    assert not ours.requires_grad and ours.grad_fn is None and not theirs.requires_grad


def test_sgn_of_an_integer_tensor_keeps_its_dtype_and_of_a_real_one_is_sign():
    x, t = _pair([4, -2, 0], np.int64)
    _same(gradcli.sgn(x), torch.sgn(t))
    x, t = _pair([0.5, -0.0, -3.0, 0.0], np.float32)
    _same(x.sgn(), t.sgn())


# ---- result dtypes ----------------------------------------------------------------------------
def test_integer_inputs_of_the_float_ops_give_the_default_float_dtype():
    # torch's default float is float32, gradcli's float64: the same rule, compared under float32
    previous = gradcli.get_default_dtype()
    gradcli.set_default_dtype(gradcli.float32)
    try:
        a, ta = _pair([1, -2, 3], np.int64)
        b, tb = _pair([3, 4, -5], np.int64)
        for ours, theirs in [(gradcli.atan2(a, b), torch.atan2(ta, tb)), (gradcli.log2(b.abs()), torch.log2(tb.abs())),
                             (a.abs().log10(), ta.abs().log10())]:
            assert ours.dtype == gradcli.float32 and theirs.dtype == torch.float32
            np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6)
    finally:
        gradcli.set_default_dtype(previous)
    assert gradcli.atan2(a, b).dtype == gradcli.float64


def test_remainder_fmod_and_cumprod_keep_integer_dtypes():
    a, ta = _pair([5, -5, 5, -5, 7], np.int64)
    b, tb = _pair([3, 3, -3, -3, 7], np.int64)
    _same(gradcli.remainder(a, b), torch.remainder(ta, tb))
    _same(a.fmod(b), ta.fmod(tb))
    _same(a % 3, ta % 3)
    _same(gradcli.fmod(a, -3), torch.fmod(ta, -3))
    _same(gradcli.cumprod(a, 0), torch.cumprod(ta, 0))
    _same(gradcli.cumprod(a, 0, dtype=gradcli.float64), torch.cumprod(ta, 0, dtype=torch.float64))


def test_integer_remainder_by_zero_raises_like_torch():
    a, ta = _pair([5, 2], np.int64)
    b, tb = _pair([1, 0], np.int64)
    for ours, theirs in [(lambda: gradcli.remainder(a, b), lambda: torch.remainder(ta, tb)),
                         (lambda: gradcli.fmod(a, b), lambda: torch.fmod(ta, tb))]:
        with pytest.raises(RuntimeError, match="ZeroDivisionError"):
            theirs()
        with pytest.raises(RuntimeError, match="ZeroDivisionError"):
            ours()


@pytest.mark.parametrize("op", [lambda T, x: T.remainder(x, 0.7), lambda T, x: 2.5 % x, lambda T, x: x % 2,
                                lambda T, x: T.fmod(x, -1.5), lambda T, x: T.lerp(x, x * 2, 0.75),
                                lambda T, x: T.addcmul(x, x, x, value=3),
                                lambda T, x: T.addcdiv(x, x, x + 3, value=0.5),
                                lambda T, x: T.cumprod(x, 0), lambda T, x: T.log2(x.abs()),
                                lambda T, x: T.nan_to_num(x.log())])
def test_float32_with_python_scalars_stays_float32_like_torch(op):
    x, t = _pair([0.3, -1.7, 2.2], np.float32)
    ours, theirs = op(gradcli, x), op(torch, t)
    assert ours.dtype == gradcli.float32 and theirs.dtype == torch.float32
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6)


def test_an_integer_tensor_modulo_a_float_scalar_is_a_float_tensor():
    a, ta = _pair([5, -5, 4], np.int64)
    ours = a % 2.5
    assert ours.dtype == gradcli.get_default_dtype() and torch.is_floating_point(ta % 2.5)
    np.testing.assert_array_equal(ours.numpy(), (ta % 2.5).numpy())


# ---- scalar arguments and edge values -----------------------------------------------------------
def test_remainder_and_fmod_give_torchs_signed_zeros_and_infinities():
    a, ta = _pair([5.0, -5.0, 5.0, -5.0, -2.0, 2.0, -0.0, 0.0, 6.5, -6.5])
    b, tb = _pair([INF, INF, -INF, -INF, 2.0, -2.0, 2.0, -2.0, 0.0, 2.0])
    _same(gradcli.remainder(a, b), torch.remainder(ta, tb))
    _same(gradcli.fmod(a, b), torch.fmod(ta, tb))
    _same(a % b, ta % tb)


def test_scalar_dividend_of_remainder_has_the_floor_gradient_where_torch_has_none():
    b, tb = _pair([1.1, -1.3, 0.7], requires_grad=True)
    ours = gradcli.remainder(2.0, b)
    _same(ours, torch.remainder(2.0, tb))
    _same(2.0 % b, 2.0 % tb)
    with pytest.raises(RuntimeError, match="derivative for aten::remainder is not implemented"):
        torch.remainder(2.0, tb).sum().backward()
    ours.sum().backward()  # d/db (2 - b·floor(2/b)) = -floor(2/b), which torch would give for a tensor 2
    t2 = torch.full((3,), 2.0, dtype=torch.float64)
    torch.remainder(t2, tb).sum().backward()
    np.testing.assert_array_equal(b.grad.numpy(), tb.grad.numpy())
    np.testing.assert_array_equal(b.grad.numpy(), [-1.0, 2.0, -2.0])


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("kwargs", [{}, {"nan": 0.5}, {"nan": -1.0, "posinf": 7.0, "neginf": -8.0},
                                    {"posinf": 1e300}])
def test_nan_to_num_replaces_like_torch_and_its_gradient_is_zero_where_it_replaced(dtype, kwargs):
    x, t = _pair([NAN, INF, -INF, 1.5, -0.0, -2.25], dtype, requires_grad=True)
    ours, theirs = gradcli.nan_to_num(x, **kwargs), torch.nan_to_num(t, **kwargs)
    _same(ours, theirs)
    _same(x.nan_to_num(**kwargs), t.nan_to_num(**kwargs))
    w = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], dtype=dtype)
    (ours * gradcli.tensor(w)).sum().backward()
    (theirs * torch.tensor(w)).sum().backward()
    _same(x.grad, t.grad)
    assert x.grad.numpy().tolist() == [0.0, 0.0, 0.0, 4.0, 5.0, 6.0]


def test_nan_to_num_defaults_are_the_dtypes_largest_finite_values():
    for dtype in (np.float64, np.float32):
        out = gradcli.nan_to_num(gradcli.tensor(np.array([INF, -INF, NAN], dtype=dtype)))
        info = np.finfo(dtype)
        assert out.numpy().tolist() == [float(info.max), float(info.min), 0.0]
    x, t = _pair([3, -4], np.int64)
    _same(gradcli.nan_to_num(x), torch.nan_to_num(t))


def test_nan_to_num_of_a_log_outside_its_domain_differentiates_like_torch():
    x, t = _pair([-0.5, 0.0, 2.0, 1.0], requires_grad=True)
    with np.errstate(all="ignore"):
        ours = gradcli.nan_to_num(x.log())
        ours.sum().backward()
    theirs = torch.nan_to_num(t.log())
    theirs.sum().backward()
    _same(ours, theirs)
    _same(x.grad, t.grad)


def test_lerp_addcmul_addcdiv_atan2_hypot_logaddexp_give_torchs_values_to_the_last_bits():
    rng = np.random.default_rng(3)
    a, b, c, w = (rng.uniform(-3, 3, (4, 5)) for _ in range(4))
    (ga, ta), (gb, tb), (gc, tc), (gw, tw) = (_pair(v) for v in (a, b, c, w))
    for weight in (0.3, 0.5, 0.8, -0.6, 1.7):
        _same(gradcli.lerp(ga, gb, weight), torch.lerp(ta, tb, weight), exact=False)
    _same(gradcli.lerp(ga, gb, gw), torch.lerp(ta, tb, tw), exact=False)
    _same(gradcli.addcmul(ga, gb, gc, value=0.37), torch.addcmul(ta, tb, tc, value=0.37), exact=False)
    _same(gradcli.addcdiv(ga, gb, gc, value=-1.9), torch.addcdiv(ta, tb, tc, value=-1.9))
    _same(gradcli.atan2(ga, gb), torch.atan2(ta, tb), exact=False)  # torch's vectorised atan2 (per CPU) vs libm
    _same(gradcli.hypot(ga, gb), torch.hypot(ta, tb), exact=False)
    _same(gradcli.logaddexp(ga, gb * 100), torch.logaddexp(ta, tb * 100), exact=False)


def test_logaddexp_of_far_apart_values_has_finite_values_and_gradients():
    a, ta = _pair([800.0, -800.0, 0.0], requires_grad=True)
    b, tb = _pair([-800.0, 800.0, 0.0], requires_grad=True)
    gradcli.logaddexp(a, b).sum().backward()
    torch.logaddexp(ta, tb).sum().backward()
    _same(gradcli.logaddexp(a, b), torch.logaddexp(ta, tb))
    _same(a.grad, ta.grad)
    _same(b.grad, tb.grad)


@pytest.mark.parametrize("shape, dim, zeros", [
    ((5,), 0, [(1,)]), ((4,), 0, [(1,), (2,)]), ((3, 4), 1, [(0, 1), (2, 3)]),
    ((3, 4), 0, [(1, 1), (0, 2), (2, 2)]), ((2, 3, 4), -2, [(0, 1, 2), (1, 2, 0)])])
def test_cumprod_with_zeros_has_torchs_gradient_and_second_derivative(shape, dim, zeros):
    rng = np.random.default_rng(len(shape) * 10 + len(zeros))
    a = rng.uniform(0.5, 1.5, shape)
    for z in zeros:
        a[z] = 0.0
    w, v = rng.uniform(-1, 1, shape), rng.uniform(-1, 1, shape)
    x, t = _pair(a, requires_grad=True)
    (gx,) = gradcli.autograd.grad((gradcli.cumprod(x, dim) * gradcli.tensor(w)).sum(), [x], create_graph=True)
    (tx,) = torch.autograd.grad((torch.cumprod(t, dim) * torch.tensor(w)).sum(), [t], create_graph=True)
    assert np.isfinite(gx.detach().numpy()).all()
    np.testing.assert_allclose(gx.detach().numpy(), tx.detach().numpy(), rtol=1e-12, atol=1e-15)
    (hx,) = gradcli.autograd.grad((gx * gradcli.tensor(v)).sum(), [x])
    (th,) = torch.autograd.grad((tx * torch.tensor(v)).sum(), [t])
    np.testing.assert_allclose(hx.numpy(), th.numpy(), rtol=1e-12, atol=1e-15)


def test_cumprod_of_a_0d_tensor_and_float32_gradient():
    x, t = _pair(3.0, requires_grad=True)
    _same(gradcli.cumprod(x, 0), torch.cumprod(t, 0))
    gradcli.cumprod(x, -1).backward()
    torch.cumprod(t, -1).backward()
    _same(x.grad, t.grad)
    x32 = gradcli.tensor(np.array([0.5, 2.0, 0.0], dtype=np.float32), requires_grad=True)
    gradcli.cumprod(x32, 0).sum().backward()
    assert x32.grad.dtype == gradcli.float32 and x32.grad.numpy().tolist() == [3.0, 0.5, 1.0]


# ---- argument errors ------------------------------------------------------------------------------
ERRORS = [
    ("atan2_scalar_other", lambda T, x: T.atan2(x, 2.0), TypeError),
    ("atan2_method_scalar", lambda T, x: x.atan2(2.0), TypeError),
    ("hypot_scalar_other", lambda T, x: T.hypot(x, 2.0), TypeError),
    ("logaddexp_scalar_other", lambda T, x: T.logaddexp(x, 2.0), TypeError),
    ("fmod_scalar_dividend", lambda T, x: T.fmod(2.0, x), TypeError),
    ("lerp_scalar_end", lambda T, x: T.lerp(x, 2.0, 0.5), TypeError),
    ("addcmul_scalar_tensor2", lambda T, x: T.addcmul(x, x, 2.0), TypeError),
    ("addcdiv_integer_division", lambda T, x: T.addcdiv(x, x.to(T.int64), x.to(T.int64)), RuntimeError),
    ("cumprod_dim_out_of_range", lambda T, x: T.cumprod(x, 1), IndexError),
    ("lerp_end_of_another_dtype", lambda T, x: T.lerp(x, x.to(T.float32), 0.5), RuntimeError),
    ("lerp_weight_of_another_dtype", lambda T, x: T.lerp(x.to(T.float32), x.to(T.float32), x), RuntimeError),
    ("hypot_integers", lambda T, x: T.hypot(x.to(T.int64), x.to(T.int64)), NotImplementedError),
    ("logaddexp_integers", lambda T, x: T.logaddexp(x.to(T.int32), x.to(T.int32)), NotImplementedError),
]
SAME_MESSAGE = {"lerp_end_of_another_dtype", "lerp_weight_of_another_dtype", "hypot_integers", "logaddexp_integers"}


@pytest.mark.parametrize("name, op, error", ERRORS, ids=[e[0] for e in ERRORS])
def test_bad_arguments_raise_the_error_torch_raises(name, op, error):
    x, t = _pair([1.0, 2.0])
    with pytest.raises(error) as theirs:
        op(torch, t)
    with pytest.raises(error) as ours:
        op(gradcli, x)
    if name in SAME_MESSAGE:
        assert str(ours.value) == str(theirs.value)
    first_words = str(theirs.value).split(",")[0][:40]
    assert str(ours.value).startswith(first_words) or error in (TypeError, IndexError)


# ---- new_* constructors, type_as, half -------------------------------------------------------------
NEW = [
    ("new_zeros_varargs", lambda T, x: x.new_zeros(2, 3)),
    ("new_zeros_tuple_dtype", lambda T, x: x.new_zeros((2, 3), dtype=T.int64)),
    ("new_zeros_bool_dtype", lambda T, x: x.new_zeros((2, 3), dtype=T.bool)),
    ("new_zeros_empty_size", lambda T, x: x.new_zeros(())),
    ("new_ones_list", lambda T, x: x.new_ones([4])),
    ("new_ones_requires_grad", lambda T, x: x.new_ones(2, requires_grad=True)),
    ("new_full_int_fill", lambda T, x: x.new_full((2, 2), 3)),
    ("new_full_float_fill", lambda T, x: x.new_full([3], -1.25)),
    ("new_full_bool_fill", lambda T, x: x.new_full((2,), True)),
    ("new_full_dtype", lambda T, x: x.new_full((2,), 7, dtype=T.float32)),
    ("new_ones_dtype", lambda T, x: x.new_ones(3, dtype=T.float64)),
    ("new_tensor_ints", lambda T, x: x.new_tensor([1, 2, 3])),
    ("new_tensor_nested", lambda T, x: x.new_tensor([[0.5, 1.5], [2.5, 3.5]])),
    ("new_tensor_scalar", lambda T, x: x.new_tensor(2.5)),
    ("new_tensor_dtype", lambda T, x: x.new_tensor([1.5, 2.5], dtype=T.int32)),
    ("new_tensor_requires_grad", lambda T, x: x.new_tensor([1.0, 2.0], requires_grad=True)),
]


@pytest.mark.parametrize("make", [m for _, m in NEW], ids=[n for n, _ in NEW])
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64])
def test_new_constructors_take_dtype_and_never_the_graph_from_self_like_torch(make, dtype):
    grad = np.dtype(dtype).kind == "f"
    x, t = _pair([1.0, 2.0, 3.0], dtype, requires_grad=grad)
    x, t = x * 1, t * 1  # a non-leaf with a grad_fn: its graph must not reach the new tensor
    try:
        theirs = make(torch, t)
    except RuntimeError as error:  # requires_grad=True on an integer tensor
        with pytest.raises(RuntimeError, match="(?i)only tensors of floating point"):
            make(gradcli, x)
        assert "Only Tensors of floating point" in str(error)
        return
    ours = make(gradcli, x)
    _same(ours, theirs)
    assert ours.requires_grad == theirs.requires_grad and ours.grad_fn is None and ours.is_leaf


def test_new_empty_has_the_shape_and_dtype_asked_for():
    x, t = _pair([1.0], np.float32)
    for args, kwargs in [((2, 3), {}), (((4,),), {}), (((2, 2),), {"dtype": gradcli.float64})]:
        tkwargs = {"dtype": torch.float64} if kwargs else {}
        ours, theirs = x.new_empty(*args, **kwargs), t.new_empty(*args, **tkwargs)
        assert tuple(ours.shape) == tuple(theirs.shape) and TORCH_DTYPE[ours.dtype] == theirs.dtype
        assert not ours.requires_grad


def test_new_tensor_copies_its_data():
    x = gradcli.tensor([1.0, 2.0])
    data = np.array([5.0, 6.0])
    y = x.new_tensor(data)
    data[0] = -1.0
    assert y.tolist() == [5.0, 6.0]


@pytest.mark.parametrize("other_dtype", [np.float32, np.float64, np.int64, np.float16])
def test_type_as_casts_to_the_others_dtype_and_keeps_the_gradient_path(other_dtype):
    x, t = _pair([1.5, -2.5], np.float64, requires_grad=True)
    o, to = _pair([0, 1], other_dtype)
    ours, theirs = x.type_as(o), t.type_as(to)
    _same(ours, theirs)
    if np.dtype(other_dtype).kind == "f":
        (ours * 3).sum().backward()
        (theirs * 3).sum().backward()
        _same(x.grad, t.grad)
    assert x.type_as(x) is x and t.type_as(t) is t


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_half_casts_to_float16_with_a_gradient_back_to_the_source_dtype(dtype):
    x, t = _pair([1.5, -2.25, 1e-3], dtype, requires_grad=True)
    ours, theirs = x.half(), t.half()
    _same(ours, theirs)
    assert ours.requires_grad and theirs.requires_grad
    (ours * 2).sum().backward()
    (theirs * 2).sum().backward()
    _same(x.grad, t.grad)


def test_methods_only_ops_are_not_in_the_namespace():
    assert gradcli.half == gradcli.float16 and torch.half == torch.float16  # the names are dtypes there
    for name in ("new_zeros", "new_ones", "new_full", "new_empty", "new_tensor", "type_as"):
        assert hasattr(gradcli.Tensor, name) and not hasattr(torch, name)
        assert not hasattr(gradcli, name)
    for name in ("atan2", "arctan2", "hypot", "logaddexp", "lerp", "addcmul", "addcdiv", "log2", "log10",
                 "remainder", "fmod", "cumprod", "sgn", "signbit", "nan_to_num"):
        assert hasattr(torch, name) and hasattr(torch.Tensor, name)
        assert hasattr(gradcli, name) and hasattr(gradcli.Tensor, name)
