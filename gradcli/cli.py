"""gradcli's command line: click commands only. Heavy imports happen inside each command."""
import click

from gradcli import __version__

# Set by a command once everything it writes is written and no user code ran in this process:
# ``run`` then leaves with os._exit instead of tearing down SymPy/numpy/mpmath module by module
# (0.1-0.2 s of a 0.7 s `gradcli diff`; the process has nothing left to do).
_quick_exit = False
_as_process = False  # set by run(): gradcli is a process of its own


def run():
    """The ``gradcli`` console script (and ``python -m gradcli``): ``main`` as a whole process."""
    global _as_process
    _as_process = True
    try:
        main()  # standalone mode: always ends with SystemExit
    except SystemExit as stop:
        if not _quick_exit or not isinstance(stop.code, int):
            raise
        import os
        import sys

        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):  # a closed pipe: the reader left, nothing to deliver
                pass
        os._exit(stop.code)


def _leave_quickly():
    global _quick_exit
    _quick_exit = True


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="gradcli")
def main():
    """Check hand-written autograd backward passes and compute derivatives.

    \b
      gradcli check myop.py          check every autograd Function in a file
      gradcli diff "sqrt(x)+1/x" --at x=3   symbolic derivative, cross-checked
    """


# ----- gradcli check (specs/check.md) ---------------------------------------------------------------
from gradcli.check.budget import MemoryParam  # noqa: E402  (pure Python: no numpy)
from gradcli.check.inputs import AtParam, InputParam, ShapeParam  # noqa: E402  (pure Python: no numpy)

# `gradcli check --help` sections, by concern (click has no option groups: GroupedCommand prints them)
CHECK_SECTIONS = (
    ("Selection", ("keyword", "collect_only", "exitfirst")),
    ("Inputs", ("inputs", "at", "inputs_from", "shape", "dtype", "seed")),
    ("Checking", ("mode", "method", "atol", "rtol", "eps", "second_order", "repeat", "layouts", "timeout",
                  "max_memory", "strict", "jobs")),
    ("Reference mode", ("reference", "device", "error_ratio")),
    ("Exact reference and proofs", ("exact", "exprs", "prove", "prove_shape", "prove_timeout")),
    ("Output", ("fmt", "json_path", "junit_path", "no_timing", "verbose", "debug", "show_config")),
)

class DtypeGridParam(click.ParamType):
    """``--dtype float32,bfloat16,float16`` (reference mode's grid; numpy-free parsing)."""

    name = "DTYPE[,DTYPE...]"

    def convert(self, value, param, ctx):
        if isinstance(value, tuple):
            return value
        from gradcli.check.dtype_grid import parse_grid

        try:
            return parse_grid(value)
        except ValueError as e:
            self.fail(str(e), param, ctx)



class GroupedCommand(click.Command):
    """A command whose --help lists its options in CHECK_SECTIONS' sections (any other under "Other options")."""

    sections = CHECK_SECTIONS

    def format_options(self, ctx, formatter):
        records = {p.name: p.get_help_record(ctx) for p in self.get_params(ctx) if isinstance(p, click.Option)}
        placed = set()
        for title, names in self.sections:
            rows = [records[n] for n in names if records.get(n)]
            placed.update(names)
            if rows:
                with formatter.section(title):
                    formatter.write_dl(rows)
        rest = [record for name, record in records.items() if record and name not in placed]
        if rest:
            with formatter.section("Other options"):
                formatter.write_dl(rest)


@main.command("check", cls=GroupedCommand)
@click.argument("paths", nargs=-1)
@click.option("-k", "keyword", metavar="EXPR", help="Only Functions whose name/file matches EXPR (and/or/not).")
@click.option("--collect-only", is_flag=True, help="List the Functions that would be checked.")
@click.option("--input", "inputs", type=InputParam(), multiple=True,
              help="Input for forward's parameter NAME. SPEC: 3, [1,2], 3x4, float32[3,4], 3x4@(1,5), "
                   "3x4@positive, none (specs/check.md).")
@click.option("--at", "at", type=AtParam(), multiple=True, help="Scalar inputs, e.g. --at x=3,y=2.")
@click.option("--inputs-from", "inputs_from", type=click.Path(exists=True, dir_okay=False), metavar="FILE.py",
              help="Inputs for Functions you cannot edit: a Python file defining INPUTS = {'module.Class': ...} "
                   "or functions named after the classes (specs/check.md).")
@click.option("--shape", type=ShapeParam(), default="3x4", show_default=True, help="Shape of automatic inputs.")
@click.option("--dtype", "dtype", type=DtypeGridParam(), default="float64", show_default=True,
              help="dtype of automatic inputs (float64|float32), or a grid such as float32,bfloat16,float16: "
                   "Functions with a reference are also compared with it at each low-precision dtype.")
@click.option("--mode", type=click.Choice(["auto", "full", "fast"]), help="gradcheck mode.")
@click.option("--method", type=click.Choice(["auto", "complex_step", "richardson", "central"]),
              help="Numerical reference.")
@click.option("--atol", type=float, help="Absolute tolerance override.")
@click.option("--rtol", type=float, help="Relative tolerance override.")
@click.option("--eps", type=click.FloatRange(0, 1, min_open=True, max_open=True),
              help="Central-difference step, tried besides the default one (gradcheck's eps).")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed for inputs and cotangents.")
@click.option("--second-order", is_flag=True, help="Also check double backward.")
@click.option("--repeat", type=click.IntRange(min=2), metavar="N",
              help="Run backward N times per input set: the spread per input and a suggested nondet_tol.")
@click.option("--layouts/--no-layouts", "layouts", default=True, show_default=True,
              help="Also try each input non-contiguous and expanded (stride 0).")
@click.option("--timeout", type=click.FloatRange(min=0, min_open=True), default=60.0, show_default=True,
              help="CPU seconds per Function (gradcheck and the exact check; --prove has its own); a check "
                   "that waits instead is stopped at 4x this in wall time.")
@click.option("--max-memory", "max_memory", type=MemoryParam(), metavar="SIZE",
              help="Refuse a check estimated to need more memory than SIZE (e.g. 2G, 512M), saying what it needs "
                   "and what fast mode needs [default: half the memory available].")
@click.option("--exact/--no-exact", "exact", default=None,
              help="Exact reference (the 'exact err' column) for every traceable engine Function up to 1024 input "
                   "elements, and torch Functions whose file runs with gradcli as torch / never [default: engine "
                   "Functions up to 64 elements, and every Function with a formula].")
@click.option("--expr", "exprs", metavar="FORMULA", multiple=True,
              help="The forward as a formula, e.g. 'x*sigmoid(x)' (repeat: one per output): the exact reference "
                   "for the one selected Function (file.py::Name), torch ones too.")
@click.option("--prove", is_flag=True, help="Prove each backward right for every input, or find a counterexample.")
@click.option("--prove-shape", type=ShapeParam(), default="2x2", show_default=True,
              help="Symbolic shape of automatic inputs for --prove (raise it for shape-specific code).")
@click.option("--prove-timeout", type=click.FloatRange(min=0, min_open=True), default=10.0, show_default=True,
              help="Seconds per Function for --prove.")
@click.option("-x", "--exitfirst", is_flag=True, help="Stop at the first failure or error.")
@click.option("--strict", is_flag=True, help="Partial passes (something not checked) and skips make the run fail.")
@click.option("--format", "fmt", type=click.Choice(["auto", "rich", "plain", "github"]), default="auto",
              show_default=True, help="Terminal output.")
@click.option("--json", "json_path", type=click.Path(dir_okay=False), help="Write the JSON report to FILE.")
@click.option("--junit", "junit_path", type=click.Path(dir_okay=False), help="Write JUnit XML to FILE.")
@click.option("--no-timing", is_flag=True, help="Leave timing fields out of --json (byte-identical reruns).")
@click.option("-j", "--jobs", type=click.IntRange(min=1), help="Files checked in parallel [default: CPUs, max 4].")
@click.option("-v", "--verbose", is_flag=True, help="Show the inputs of every Function, and tracebacks.")
@click.option("--debug", is_flag=True, help="Show gradcli's own tracebacks.")
@click.option("--reference", "reference", metavar="FILE.py::NAME|module.name",
              help="The reference implementation of the one selected Function (file.py::Name), compared with it at "
                   "each low-precision --dtype [default: the class's `reference` attribute].")
@click.option("--device", type=click.Choice(["cpu", "cuda"]), default="cpu", show_default=True,
              help="Device for reference mode (torch Functions); the float64 golden always runs on the CPU.")
@click.option("--error-ratio", "error_ratio", type=click.FloatRange(min=1.0), default=2.0, show_default=True,
              help="Reference mode passes when the Function's error is at most this times the reference's own "
                   "error at the dtype, plus a dtype floor.")
@click.option("--show-config", is_flag=True,
              help="Print the settings in force ([tool.gradcli] in pyproject.toml, the command line, defaults) "
                   "and where each comes from; check nothing.")
def check(paths, keyword, collect_only, inputs, at, inputs_from, shape, dtype, mode, method, atol, rtol, eps, seed,
          second_order, repeat, layouts, timeout, max_memory, exact, exprs, prove, prove_shape, prove_timeout, exitfirst,
          strict, fmt,
          json_path, junit_path, no_timing, jobs, verbose, debug, reference, device, error_ratio, show_config):
    """Check every autograd Function in files, directories or installed modules (default: the current
    directory).

    \b
      gradcli check examples/                 every Function, every file
      gradcli check torchdiffeq --inputs-from my_inputs.py   an installed package, your inputs
      gradcli check ops.py::MySqrt --at x=3   one Function at a given point
      gradcli check ops/ -k "not slow" --json report.json --junit junit.xml
      gradcli check ops.py --prove            prove each backward, or find a counterexample
      gradcli check ops.py::Swish --expr "x*sigmoid(x)"   exact reference from a formula

    Settings may also come from [tool.gradcli] in pyproject.toml (the command line wins; see
    --show-config).

    Exit codes: 0 passed, 1 failures, 2 usage error or interrupted, 3 errors in user code only,
    5 nothing collected.
    """
    import os

    from gradcli.check.threads import single_threaded_by_default

    single_threaded_by_default()  # before numpy's BLAS or torch start their thread pools
    if _as_process:  # a whole process of its own (not CliRunner in a test): orphans of user code come back to it
        from gradcli.check.reaper import become_subreaper

        become_subreaper()
    from gradcli.check.config import find_config, find_config_from
    from gradcli.check.discovery import UsageError, compile_keyword, expand_paths
    from gradcli.check.inputs_from import GivenInputs
    from gradcli.check.paths import locate
    from gradcli.check.runner import RunOptions, unsupported_options
    from gradcli.check.session import run
    from gradcli.report.check_output import Output, choose_format, write_files

    notes: list = []
    try:
        config = find_config([locate(p)[0] for p in paths]) if paths else find_config_from(os.getcwd())
        given_here = dict(paths=paths or None, shape=shape, dtype=dtype, timeout=timeout, seed=seed, exact=exact,
                          strict=strict, fmt=fmt)
        settings = _settings_in_force(click.get_current_context(), given_here, config)
        if show_config:
            _show_config(config, settings)
            return
        paths, shape, dtype, timeout, seed, exact, strict, fmt = (settings[k][0] for k in given_here)
        paths = paths or (".",)
        items = expand_paths(paths, notes, config.norecursedirs)
        match = compile_keyword(keyword) if keyword is not None else None
        if inputs_from is not None and not inputs_from.endswith(".py"):
            raise UsageError(f"--inputs-from takes a Python file: {inputs_from}")
    except UsageError as e:
        raise click.UsageError(str(e)) from None
    for line in config.warnings:
        click.echo(f"warning: {line}", err=True)
    for line in notes:
        click.echo(f"note: {line}", err=True)
    files = [os.path.realpath(f) for f in (inputs_from, config.inputs_from) if f]
    given = GivenInputs(tuple(dict.fromkeys(files)), config.inputs)
    specs = dict(pair for group in at for pair in group)
    specs.update(dict(inputs))
    passthrough = {"mode": mode, "method": method, "atol": atol, "rtol": rtol, "eps": eps}
    gradcheck_options = {k: v for k, v in passthrough.items() if v is not None}
    gradcheck_options.update(seed=seed, second_order=second_order)
    if repeat is not None:
        gradcheck_options["repeat"] = repeat
    if not layouts:
        gradcheck_options["layouts"] = False
    if config.nondet_tol is not None:
        gradcheck_options["nondet_tol"] = config.nondet_tol
    for name in unsupported_options(gradcheck_options):
        raise click.UsageError(f"--{name} is not supported by this version of gradcli.gradcheck")
    if exprs:
        _check_exprs(exprs, items, exact)
    if reference is not None and (len(items) != 1 or not items[0].names or len(items[0].names) != 1):
        raise click.UsageError("--reference gives the reference of one Function: select it as PATH/file.py::Name "
                               "(for several Functions, give each class a `reference` attribute)")
    grid = dtype if isinstance(dtype, tuple) else (dtype,)
    if reference is not None and all(d == "float64" for d in grid):
        raise click.UsageError("--reference compares at low-precision dtypes: give them with --dtype, e.g. "
                               "--dtype float32,bfloat16,float16")
    if reference is not None and "::" in reference:  # the checkers resolve it: make the file's path absolute
        reference = os.path.abspath(reference.rsplit("::", 1)[0]) + "::" + reference.rsplit("::", 1)[1]
    input_dtype = grid[0] if len(grid) == 1 and grid[0] in ("float64", "float32") else "float64"
    options = RunOptions(gradcheck=gradcheck_options, seed=seed, dtype=input_dtype, shape=shape, specs=specs,
                         timeout=timeout, exitfirst=exitfirst, keyword=match, collect_only=collect_only,
                         jobs=jobs or min(4, os.cpu_count() or 1), debug=debug, given_inputs=given or None,
                         exact={None: "auto", True: "on", False: "off"}[exact], expr=tuple(exprs) or None,
                         prove=prove, prove_shape=prove_shape, prove_timeout=prove_timeout, strict=strict,
                         reference_dtypes=tuple(d for d in grid if d != "float64"), reference=reference,
                         device=device, error_ratio=error_ratio,
                         max_memory=max_memory)
    fmt = choose_format(fmt)
    out = Output(fmt, seed, verbose or debug, collect_only)
    out.plan(items, match)  # the progress bar's total, before the first Function runs
    try:
        result = run(items, options, out)
        out.finish(result, collect_only=collect_only)
        write_files(result, json_path, junit_path, timing=not no_timing)
    except OSError as e:
        raise click.ClickException(f"cannot write report: {e}") from None
    except Exception as e:  # noqa: BLE001 -- gradcli's own bug: one line unless --debug
        if debug:
            raise
        raise click.ClickException(f"internal error: {type(e).__name__}: {e} (run with --debug)") from None
    for name in [] if collect_only else result.unused_inputs(specs):
        click.echo(f"warning: --input/--at {name}: no checked forward has a parameter named {name!r}", err=True)
    if options.isolate and hasattr(os, "fork"):  # user code ran in forked workers only
        _leave_quickly()
    raise SystemExit(result.exit_code(strict, collect_only))


def _settings_in_force(ctx, values: dict, config) -> dict:
    """name -> (value, where from): the command line wins over [tool.gradcli], which wins over defaults."""
    from click.core import ParameterSource

    out = {}
    for name, value in values.items():
        source = ctx.get_parameter_source(name)
        if source in (ParameterSource.COMMANDLINE, ParameterSource.ENVIRONMENT) and (name != "paths" or value):
            out[name] = (value, "command line")
        elif name in config.settings:
            out[name] = (config.settings[name], config.path)
        else:
            out[name] = (value, "default")
    return out


def _show_config(config, settings: dict):
    """--show-config: one line per setting, ``name = value  (where from)``."""
    shown = {"paths": lambda v: " ".join(v) if v else ". (the current directory)",
             "shape": lambda v: "x".join(map(str, v)), "exact": lambda v: "auto" if v is None else str(v).lower(),
             "strict": lambda v: str(v).lower(),
             "dtype": lambda v: ",".join(v) if isinstance(v, tuple) else str(v)}  # --dtype takes a grid
    keys = {"fmt": "format"}
    click.echo(f"config file: {config.path or 'none (no pyproject.toml with [tool.gradcli] found)'}")
    for name, (value, where) in settings.items():
        text = shown.get(name, str)(value)
        click.echo(f"{keys.get(name, name):<14} = {text:<24} ({where})")
    if config.inputs_from:
        click.echo(f"{'inputs-from':<14} = {config.inputs_from:<24} ({config.path})")
    for key, specs in config.inputs.items():
        text = ", ".join(f"{n}={spec.text if hasattr(spec, 'text') else spec}" for n, spec in specs.items())
        click.echo(f"{'inputs':<14} {key} = {text} ({config.path})")
    if config.norecursedirs is not None:
        click.echo(f"{'norecursedirs':<14} = {' '.join(config.norecursedirs):<24} ({config.path})")


def _check_exprs(exprs, items, exact):
    """--expr gives one Function's forward: it needs exactly one ``file.py::Name`` and formulas that parse."""
    if exact is False:
        raise click.UsageError("--expr asks for the exact check, --no-exact turns it off: give one of them")
    if len(items) != 1 or not items[0].names or len(items[0].names) != 1:
        raise click.UsageError("--expr gives the forward of one Function: select it as PATH/file.py::Name "
                               "(for several Functions, give each class a `formula` string attribute)")
    from gradcli.expr.errors import ExpressionError
    from gradcli.expr.parser import parse

    for text in exprs:
        try:
            parse(text)
        except ExpressionError as e:
            raise click.UsageError(f"--expr {text!r}: {e}") from None


# ----- gradcli diff (specs/diff.md) ----------------------------------------------------------------
@main.command("diff", context_settings={"ignore_unknown_options": True})
@click.argument("expressions", nargs=-1, metavar="EXPR [EXPR ...]")
@click.option("--wrt", metavar="X,Y", help="Variables to differentiate by, in this order [default: all, sorted].")
@click.option("--order", metavar="N", default="1", show_default=True, help="Also all mixed partials of order N.")
@click.option("--hessian", is_flag=True, help="Also the Hessian.")
@click.option("--at", "at", metavar="X=V,...", multiple=True,
              help="Evaluate at a point (repeatable): exact, float, autograd, finite difference.")
@click.option("--check", "check_answer", metavar="ANSWER", help="Your derivative (or x=...,y=...): proved or refuted.")
@click.option("--positive", is_flag=True, help="Variables are positive (default: real).")
@click.option("--complex", "complex_", is_flag=True, help="Variables are complex (default: real).")
@click.option("--format", "fmt", metavar="FORMAT", help="table|plain|json|latex|python [default: table on a "
              "terminal, plain otherwise].")
@click.option("--simplify/--no-simplify", default=True, show_default=True, help="Simplify the derivatives.")
@click.option("--simplify-timeout", metavar="SECONDS", default="3", show_default=True,
              help="Budget for simplification, exact values and --check proofs.")
@click.option("--budget", metavar="SECONDS", default=None,
              help="Total time for the whole command [default: 5, or --simplify-timeout + 2 if larger].")
@click.option("--emit-function", metavar="NAME", help="Print a Python file with an autograd Function NAME.")
@click.option("--style", metavar="STYLE", default="gradcli", show_default=True,
              help="gradcli|torch for --emit-function.")
@click.option("--debug", is_flag=True, help="Show tracebacks of gradcli's own errors.")
def diff(expressions, wrt, order, hessian, at, check_answer, positive, complex_, fmt, simplify, simplify_timeout,
         budget, emit_function, style, debug):
    """Exact derivatives of EXPR, cross-checked against gradcli's autograd and finite differences.

    \b
      gradcli diff "sqrt(x)+1/x+2*y^2" --at x=3,y=2    gradient, checked at a point
      gradcli diff "x*y" "x+y" --wrt x,y               Jacobian of two expressions
      gradcli diff "sigmoid(x)" --check "sigmoid(x)*(1-sigmoid(x))"

    Exit codes: 0 agreed, 1 a disagreement or a refuted --check, 2 bad input, a refused expression or a
    result cut short by --budget, 3 internal error. Grammar, formats and JSON schema: specs/diff.md.
    """
    import sys
    import time

    from gradcli.expr.options import DiffOptionError, total_budget
    from gradcli.expr.supervisor import supervise

    started = time.monotonic()
    try:
        budget_seconds = total_budget(budget, simplify_timeout)
    except DiffOptionError as error:
        click.echo(f"error: {error}", err=True)
        raise SystemExit(2) from None
    options = dict(wrt=wrt, order=order, hessian=hessian, at=at, check=check_answer, positive=positive,
                   complex_=complex_, fmt=fmt, simplify=simplify, simplify_timeout=simplify_timeout,
                   emit_function=emit_function, style=style, tty=sys.stdout.isatty())

    def work(progress, deadline_end):   # runs in the supervised worker (expr/supervisor.py)
        from gradcli.diff_worker import diff_outcome
        return diff_outcome(expressions, options, progress, deadline_end, budget_seconds, debug)

    outcome = supervise(work, budget_seconds, started)
    try:
        if outcome.stdout:
            sys.stdout.write(outcome.stdout)
            sys.stdout.flush()
    except BrokenPipeError:  # `gradcli diff ... | head -1`: the reader left; no traceback
        import os
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    if outcome.stderr:
        click.echo(outcome.stderr, err=True, nl=False)
    _leave_quickly()
    raise SystemExit(outcome.code)


if __name__ == "__main__":
    main()
