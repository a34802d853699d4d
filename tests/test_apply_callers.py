"""Issue 13 (reach): reading where a package calls a Function (gradcli/check/apply_callers.py) and which of its
classes gradcli can build from one tensor (gradcli/check/package_objects.py). Pure Python: no torch needed."""
import abc
import textwrap
import types

import pytest

from gradcli.check.apply_callers import dispatch_names, find_callers, package_root
from gradcli.check.package_objects import Recipe, annotated_class, recipes

CALLS = """
    class Fn:
        pass


    def direct(x, method=None):
        if method == "fast":
            return x
        if method in ("slow", "exact"):
            pass
        return Fn.apply(x)


    class Owner:
        def through_alias(self, fcn, y):
            func = Fn.apply
            fcn(y)
            return func(self, y)

        def unrelated(self):
            return Other.apply(1)


    def never():
        return Fn
"""


class FakeTarget:
    def __init__(self, module, file, cls_name):
        self.module, self.file = module, file
        self.cls = type(cls_name, (), {})


@pytest.fixture
def pkg(tmp_path, monkeypatch):
    root = tmp_path / "callerpkg"
    (root / "sub").mkdir(parents=True)
    (root / "tests").mkdir()
    (root / "__init__.py").write_text("")
    (root / "sub" / "__init__.py").write_text("")
    (root / "sub" / "calls.py").write_text(textwrap.dedent(CALLS))
    (root / "tests" / "test_use.py").write_text("from callerpkg.sub.calls import Fn\nFn.apply(0)\n")
    (root / "tests" / "helpers.py").write_text("def helper():\n    return Fn.apply(0)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    return root


def test_call_sites_in_the_package_are_found_directly_and_through_an_alias(pkg):
    target = FakeTarget("callerpkg.sub.calls", str(pkg / "sub" / "calls.py"), "Fn")
    found = find_callers(target)
    assert [(c.module, c.qualname, c.line) for c in found] == [
        ("callerpkg.sub.calls", "direct", 11), ("callerpkg.sub.calls", "Owner.through_alias", 18)]
    assert dict(found[0].strings) == {"method": ("fast", "slow", "exact")}
    assert found[1].called == ("fcn",) and found[0].called == ()


def test_test_folders_and_other_functions_are_not_read(pkg):
    target = FakeTarget("callerpkg.sub.calls", str(pkg / "sub" / "calls.py"), "Other")
    assert [c.qualname for c in find_callers(target)] == ["Owner.unrelated"]
    assert find_callers(FakeTarget("callerpkg.sub.calls", None, "Missing")) == []


def test_a_script_outside_a_package_has_no_callers(tmp_path):
    assert package_root("loose") is None
    assert find_callers(FakeTarget("loose", str(tmp_path / "loose.py"), "Fn")) == []


def test_the_names_forward_dispatches_on_are_the_string_keys_of_its_dict_literals():
    class Solver:
        @staticmethod
        def forward(ctx, A, method, options):
            methods = {"cg": 1, "gmres": 2, 3: 4}
            config = dict({"tol": 1e-6}, **options)
            return methods[method], config

    assert dispatch_names(types.SimpleNamespace(forward=Solver.forward)) == ("cg", "gmres", "tol")


class Matrixish:
    def __init__(self, shape):
        self.shape = shape


class Dense(Matrixish):
    def __init__(self, tensor):
        super().__init__(tensor.shape)
        self.tensor = tensor


class Flagged(Matrixish):
    def __init__(self, mat, is_symmetric: bool):
        super().__init__(mat.shape)
        self.flag = is_symmetric


class Pair(Matrixish):               # two operands: not built from one tensor
    def __init__(self, a, b):
        super().__init__(a.shape)


class Batched(Matrixish):            # built from one, but shaped otherwise: rejected when built
    def __init__(self, tensor):
        super().__init__((2, *tensor.shape))


class Abstract(Matrixish, abc.ABC):
    def __init__(self, tensor):
        super().__init__(tensor.shape)

    @abc.abstractmethod
    def mv(self):
        ...


class Settings(Matrixish):           # defaults for everything: built with none, after those built from a tensor
    def __init__(self, size=(4, 4), mode="full"):
        super().__init__(size)


class Operands(Matrixish):           # takes *operands: not built with none
    def __init__(self, *parts):
        super().__init__((4, 4))


class Square:
    shape = (4, 4)


def test_recipes_are_the_subclasses_built_from_one_tensor_by_name_with_flags_both_ways():
    module = Matrixish.__module__
    found = recipes(Matrixish)
    assert [(r.cls.__name__, r.flags, r.from_tensor) for r in found] == [
        ("Batched", (), True), ("Dense", (), True), ("Flagged", (False,), True), ("Flagged", (True,), True),
        ("Settings", (), False)]
    assert found[4].build(None).shape == (4, 4) and found[4].describe("float64[4,4]@spd") == "Settings()"
    assert found[3].describe("float64[4,4]@spd") == "Flagged(float64[4,4]@spd, True)"
    assert found[1].path == f"{module}.Dense"
    assert found[1].build(Square()).tensor.shape == (4, 4)
    with pytest.raises(ValueError, match=r"Batched of a \(4, 4\) tensor has shape \(2, 4, 4\)"):
        found[0].build(Square())
    # the base itself only when no subclass is built that way
    assert recipes(Dense) == [Recipe(Dense)]


def test_an_annotation_names_a_class_of_the_functions_own_package_only():
    def uses(A: "Dense", B: "Optional[Dense]", C: int, D: "abc.ABC"):
        pass

    assert annotated_class(uses, uses.__annotations__["A"]) is Dense
    assert annotated_class(uses, Dense) is Dense
    assert annotated_class(uses, uses.__annotations__["B"]) is None
    assert annotated_class(uses, int) is None       # a builtin: not the package's
    assert annotated_class(uses, uses.__annotations__["D"]) is None   # a class, but not of this package


class RealApply:
    @classmethod
    def apply(cls, *args):
        return ("real", args)


class Caught(RealApply):
    pass


def test_capture_stops_the_caller_at_apply_and_puts_apply_back():
    from gradcli.check.captured_calls import capture

    def caller(x, scale=1):
        return Caught.apply(x, scale * 2) + ("never reached",)

    assert capture(Caught, caller, [1], {"scale": 3}) == ((1, 6), {})
    assert "apply" not in vars(Caught) and Caught.apply(0) == ("real", (0,))
    assert capture(Caught, lambda x: 1 / x, [0]) is None          # the caller refuses the plan
    assert capture(Caught, lambda x: x, [0]) is None               # it never reaches apply
    assert Caught.apply(5) == ("real", (5,))
