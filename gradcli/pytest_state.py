"""The ``--gradcli`` run of the pytest plugin (pytest_plugin.py): its settings (``RunOptions`` from the
``--gradcli-*`` options, as `gradcli check` reads its own), its files and their collection, and the
results checked so far. Imported only when ``--gradcli`` is given or the fixture is used."""
from __future__ import annotations

import os
from dataclasses import dataclass, field

import pytest


@dataclass
class RunState:
    files: dict  # realpath -> discovery.FileItem: exactly the files `gradcli check PATHS` reads
    options: object  # runner.RunOptions for checking one Function
    seed: int
    strict: bool
    collect_timeout: float
    torch_loaded: bool = False
    done: dict = field(default_factory=dict)  # (realpath, name) -> FunctionResult checked ahead in a batch
    run_id: object = None  # pytest-xdist's testrunuid on its workers (they share one collection), else None
    collected: dict = field(default_factory=dict)  # realpath -> (TargetInfos, load error): every file at once
    blocks: object = None  # xdist worker: {workerid: [nodeid]} dealt by pytest_scheduler (read once), or {}
    written: list = field(default_factory=list)  # files of this run in the temporary directory to remove (run_files)

    @classmethod
    def from_config(cls, config) -> "RunState":
        from gradcli.check.discovery import UsageError, expand_paths
        from gradcli.check.inputs import SpecError, parse_assignment, parse_at, parse_shape
        from gradcli.check.runner import RunOptions, unsupported_options

        opt = config.option
        try:
            specs = dict(pair for text in opt.gradcli_at for pair in parse_at(text))
            specs.update(dict(parse_assignment(text) for text in opt.gradcli_input))
            shape = parse_shape(opt.gradcli_shape) if opt.gradcli_shape else (3, 4)
            items = expand_paths([p.partition("::")[0] for p in opt.gradcli_paths])
        except (SpecError, UsageError) as e:
            raise pytest.UsageError(f"--gradcli: {e}") from None
        if opt.gradcli_timeout <= 0:
            raise pytest.UsageError("--gradcli-timeout must be positive")
        seed = opt.gradcli_seed if opt.gradcli_seed is not None else 0
        gradcheck = dict(command_line_gradcheck_options(config), seed=seed)
        gradcheck.setdefault("second_order", False)
        for name in unsupported_options(gradcheck):
            raise pytest.UsageError(f"--gradcli-{name.replace('_', '-')} is not supported by this gradcli.gradcheck")
        options = RunOptions(gradcheck=gradcheck, seed=seed, dtype=opt.gradcli_dtype or "float64", shape=shape,
                             specs=specs, timeout=opt.gradcli_timeout, jobs=1, exact=opt.gradcli_exact,
                             prove=opt.gradcli_prove, given_inputs=_given_inputs(opt))
        _add_collection_args(config)
        run_id = getattr(config, "workerinput", {}).get("testrunuid")
        return cls({it.abspath: it for it in items}, options, seed, opt.gradcli_strict, opt.gradcli_timeout,
                   run_id=run_id)

    def collection(self, abspath: str) -> tuple:
        """(TargetInfos, load-error FunctionResult or None) of one file, from the runner's
        --collect-only, each file in a forked worker: user code never runs in the pytest process,
        so a file that hangs or exits on import cannot take pytest down. All files are collected
        at the first call, several at a time (as `gradcli check -j`); pytest-xdist's workers share
        that collection (``pytest_collection.shared_collection``) instead of each collecting every file."""
        from gradcli.pytest_collection import collect_all, shared_collection

        if not self.collected:
            self.collected = shared_collection(self) if self.run_id else collect_all(self)
        return self.collected.get(abspath) or collect_all(self, [abspath])[abspath]

    def check(self, abspath: str, name: str):
        """The FunctionResult of ``gradcli check file.py::name``: checked ahead in a batch
        (pytest_batch.py), else now, alone, with the runner's isolation (a forked worker imports the
        file, the check runs under --gradcli-timeout)."""
        from gradcli.pytest_batch import check_together

        if (abspath, name) not in self.done:
            check_together(self, [(abspath, name)])
        return self.done.pop((abspath, name))

    def _load_torch(self):
        """Import torch (and its lazily loaded autograd machinery) once in this process, so that the
        forked workers and checkers inherit it instead of each paying seconds to import it (the
        runner does the same for `gradcli check`: one worker for the files that import torch)."""
        if not self.torch_loaded:
            self.torch_loaded = True
            from gradcli.heavy_import import import_paused
            try:
                torch = import_paused("torch")  # without garbage collection during the import
            except ImportError:
                return  # the check itself reports "needs PyTorch" as a skip
            x = torch.zeros(1, dtype=torch.float64, requires_grad=True)
            torch.autograd.grad(x * 2, x, torch.ones(1, dtype=torch.float64))

    def remove_written(self):
        for path in self.written:
            try:
                os.remove(path)
            except OSError:
                pass
        self.written.clear()


def run_files(run_id) -> list:
    """The files one xdist run leaves in the temporary directory (its testrunuid in their names): the
    shared collection and its lock, the gradcli items the workers list, the controller's blocks."""
    from gradcli.pytest_batch import shared_file
    from gradcli.pytest_collection import shared_path

    return [shared_path(run_id), shared_path(run_id) + ".lock", shared_file(run_id, "items"),
            shared_file(run_id, "blocks")]


def _given_inputs(opt):
    """Inputs for Functions without example_inputs(), as `gradcli check` reads them: --gradcli-inputs-from,
    then the nearest pyproject.toml's [tool.gradcli] inputs-from and [tool.gradcli.inputs] (specs/check.md 2a)."""
    from gradcli.check.config import find_config
    from gradcli.check.discovery import UsageError
    from gradcli.check.inputs_from import GivenInputs
    from gradcli.check.paths import locate

    path = opt.gradcli_inputs_from
    if path is not None and not (path.endswith(".py") and os.path.isfile(path)):
        raise pytest.UsageError(f"--gradcli-inputs-from takes an existing Python file: {path}")
    try:
        config = find_config([locate(p)[0] for p in opt.gradcli_paths])
    except UsageError as e:
        raise pytest.UsageError(f"--gradcli: {e}") from None
    files = [os.path.realpath(f) for f in (path, config.inputs_from) if f]
    given = GivenInputs(tuple(dict.fromkeys(files)), config.inputs)
    return given or None


def command_line_gradcheck_options(config) -> dict:
    """gradcheck options given as --gradcli-* (only those given: gradcheck's defaults stay defaults)."""
    opt = config.option
    given = {"mode": opt.gradcli_mode, "method": opt.gradcli_method, "atol": opt.gradcli_atol,
             "rtol": opt.gradcli_rtol, "eps": opt.gradcli_eps, "seed": opt.gradcli_seed,
             "second_order": opt.gradcli_second_order}
    return {k: v for k, v in given.items() if v is not None}


def _add_collection_args(config):
    """--gradcli paths are collection arguments like pytest's own: given alone, they replace
    testpaths (``pytest --gradcli ops/`` checks ops/ only); with explicit paths, they add to them.
    xdist workers parse the same command line, so they arrive at the same arguments."""
    explicit = bool(config.getoption("file_or_dir"))  # positional paths (command line or addopts)
    args = list(config.args) if explicit else []
    config.args = args + [p for p in config.option.gradcli_paths if p not in args]
