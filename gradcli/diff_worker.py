"""The body of ``gradcli diff`` as the supervised worker runs it: options -> DiffResult -> rendered text.

CLI glue (it joins symbolic/ and report/, like cli.py does) kept out of cli.py because it runs in the
forked worker (``expr/supervisor.py``), never in the CLI process: SymPy, rich and the engine are
imported here only. Every outcome is text plus an exit code; nothing here raises to the supervisor.
"""
import io
import re

from gradcli.expr.supervisor import Outcome

RENDER_RESERVE = 1.0   # seconds kept back from the computation for assembling and printing the output
PRINT_MARGIN = 0.5     # printing must end this long before the budget: the supervisor kills just before it


def _render(result, fmt):
    from gradcli.report.diff_render import render
    if fmt != "table":
        return render(result, fmt)
    from rich.console import Console
    terminal = Console()
    buffer = io.StringIO()
    render(result, "table", Console(file=buffer, width=terminal.width, color_system=terminal.color_system,
                                    force_terminal=terminal.is_terminal, no_color=terminal.no_color,
                                    legacy_windows=False))
    return buffer.getvalue()


_NOT_REAL = re.compile(r"is not comparable|defined only for real|Invalid comparison of non-real", re.IGNORECASE)


def _internal(error, debug):
    if debug:
        import traceback
        return Outcome("", "".join(traceback.format_exception(error)), 3)
    return Outcome("", f"internal error: {type(error).__name__}: {error} (run with --debug)\n", 3)


def diff_outcome(expressions, options, progress, deadline_end, budget, debug=False):
    from gradcli.heavy_import import import_paused
    from gradcli.expr import lifeline
    from gradcli.expr.deadline import BudgetExceeded, Deadline
    from gradcli.expr.engine_process import EngineProcess
    from gradcli.expr.options import DiffOptionError, build_request

    deadline = Deadline(deadline_end, budget)
    phase = ["starting"]

    def report(name):
        phase[0] = name
        progress(name)

    limit = lifeline.limit_memory()
    # numpy + the engine import in a child while this process imports SymPy (only needed for --at)
    engine = EngineProcess() if options["at"] and expressions else None
    try:
        deadline.arm(min(RENDER_RESERVE, 0.2 * budget))
        report("importing SymPy")
        import_paused("sympy")
        request, fmt = build_request(expressions, **options)
        from gradcli.expr.api import run
        from gradcli.expr.errors import ExpressionError
        try:
            result = run(request, engine, deadline, report)
        except ExpressionError as error:
            raise DiffOptionError(str(error)) from None
        deadline.arm(PRINT_MARGIN)   # first: the computing alarm must not strike between run and printing
        report("printing")
        text = _render(result, fmt)
        deadline.disarm()
        return Outcome(text, "", result.exit_code)
    except DiffOptionError as error:
        return Outcome("", f"error: {error}\n", 2)
    except BudgetExceeded:
        return Outcome("", f"error: gave up after {budget:g} s (the --budget) while {phase[0]}: the expression is "
                           "too expensive; try a larger --budget or a smaller expression\n", 2)
    except MemoryError:
        size = f" ({limit / 2 ** 30:.0f} GiB)" if limit else ""
        return Outcome("", f"error: refused: {phase[0]} needed more memory than gradcli allows itself{size}; "
                           "the expression (or its values) is too large\n", 2)
    except RecursionError:
        return Outcome("", f"error: refused: the expression is too deeply nested (while {phase[0]})\n", 2)
    except ValueError as error:
        if not _NOT_REAL.search(str(error)):
            return _internal(error, debug)
        # SymPy comparing a value that is not real deep inside a phase (Max of a complex constant that no
        # assumption could tell from the expression): the user's expression, not gradcli's bug
        return Outcome("", f"error: refused: while {phase[0]}, a comparison (max/min/relu-like) met a value that "
                           "is not real; only real arguments can be compared\n", 2)
    except OverflowError as error:  # mpmath's exact arithmetic past what an int holds (exp of 10^100-sized powers)
        return Outcome("", f"error: refused: {phase[0]} met a number too large for exact arithmetic ({error}); "
                           "the expression's constants are too large\n", 2)
    except Exception as error:  # noqa: BLE001 -- gradcli's own bug: one line unless --debug
        return _internal(error, debug)
    finally:
        deadline.disarm()
        if engine is not None:
            engine.close()
