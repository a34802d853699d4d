"""forward's own assert refusing the inputs gradcli built is a skip that quotes it, never an error of gradcli's
making (issue 13; found by the real-package corpus: revtorch's `assert isinstance(reversible_blocks,
nn.ModuleList)`, a held-out row). gradcli/check/refusing_assert.py; the Functions here are this file's own."""
from check_run import by_name, check_json, need, write
from gradcli.check import refusing_assert
from gradcli.check.broken_forward import always_raises

BLOCKS = """
    import torch


    class RunsBlocks(torch.autograd.Function):      # forward takes a ModuleList the package builds
        @staticmethod
        def forward(ctx, x, blocks):
            assert isinstance(blocks, torch.nn.ModuleList)
            for block in blocks:
                x = block(x)
            return x.detach() * 1.0

        @staticmethod
        def backward(ctx, g):
            return g, None
"""

BLOCKS_INPUTS = """
    import torch


    def RunsBlocks():
        return torch.randn(3, 4, dtype=torch.float64, requires_grad=True), torch.nn.ModuleList()
"""


def _raised(directory, source):
    """The AssertionError f(3.0, [1]) raises, f defined in a file of its own (its lines are read back)."""
    import importlib.util
    path = directory / f"ops{len(list(directory.iterdir()))}.py"  # a new file each time: no stale linecache
    path.write_text("import types\nnn = torch = types.SimpleNamespace(ModuleList=tuple, Tensor=tuple)\n" + source)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    try:
        module.f(3.0, [1])
    except AssertionError as exc:
        return exc
    raise AssertionError("f did not raise")


def test_an_isinstance_assert_names_the_parameter_and_its_class(tmp_path):
    exc = _raised(tmp_path, "def f(x, blocks):\n    assert isinstance(blocks, nn.ModuleList)\n")
    assert refusing_assert.failing_assert(exc) == ("ops0.py:4", "assert isinstance(blocks, nn.ModuleList)")
    assert refusing_assert.isinstance_requirements("assert isinstance(blocks, nn.ModuleList)", ["x", "blocks"]) \
        == [("blocks", "nn.ModuleList")]
    assert refusing_assert.requires_object(exc, ["x", "blocks"]) is True
    assert refusing_assert.requires_object(exc, ["x"]) is False  # not a parameter gradcli built


def test_other_asserts_require_no_object(tmp_path):
    value = _raised(tmp_path, "def f(x, blocks):\n    assert x > 5\n")
    assert refusing_assert.requires_object(value, ["x", "blocks"]) is False
    tensor = _raised(tmp_path, "def f(x, blocks):\n    assert isinstance(x, torch.Tensor)\n")
    assert refusing_assert.requires_object(tensor, ["x", "blocks"]) is False  # a Tensor gradcli can build
    assert refusing_assert.isinstance_requirements("assert (isinstance(a, (list, tuple))", ["a"]) == []  # cut line


def test_a_forward_asserting_an_object_is_not_broken_whatever_the_inputs(tmp_path):
    need("torch")
    path = write(tmp_path, "blocks_ops.py", BLOCKS)
    import importlib.util
    spec = importlib.util.spec_from_file_location("blocks_ops", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    from gradcli.check.discovery import Target
    target = Target(module.RunsBlocks, "RunsBlocks", str(path), 8, 13, "static", "torch")
    assert always_raises(target, (3, 4)) is None


def test_cli_skips_a_forward_whose_assert_refuses_what_gradcli_built(tmp_path):
    need("torch")
    path = write(tmp_path, "blocks_ops.py", BLOCKS)
    result, doc = check_json(tmp_path, path)
    r = by_name(doc)["RunsBlocks"]
    assert r["status"] == "skip"
    assert r["message"] == (
        "cannot build inputs automatically: forward's `assert isinstance(blocks, torch.nn.ModuleList)` "
        "(blocks_ops.py:8) fails at the inputs gradcli built: blocks must be an instance of torch.nn.ModuleList, an "
        "object the package builds, not a Tensor. Give it with an inputs file (--inputs-from FILE.py, def "
        "RunsBlocks(): return the arguments; specs/check.md §2a) or example_inputs()")
    assert result.exit_code == 0  # a skip: nothing of gradcli's making is an error


def test_cli_checks_it_with_the_object_from_an_inputs_file(tmp_path):
    need("torch")
    path = write(tmp_path, "blocks_ops.py", BLOCKS)
    inputs = write(tmp_path, "blocks_inputs.py", BLOCKS_INPUTS)
    result, doc = check_json(tmp_path, path, "--inputs-from", inputs)
    assert by_name(doc)["RunsBlocks"]["status"] == "pass", result.output
    assert result.exit_code == 0
