"""The failure panel of ``gradcli check`` as one plain-text string.

Used where the panel is not printed line by line but carried: the message of
``gradcli.testing.assert_gradcheck``'s AssertionError and the longrepr of the pytest plugin's
items. It is the ``--format plain`` panel itself (``PlainRenderer.panel`` writing into a list),
so a failure reads the same in a terminal, in a CI log and in a pytest report.
"""
from __future__ import annotations

from typing import Optional

from gradcli.report import check_view as view


def panel_text(result, seed: int, *, verbose: bool = False, repro: Optional[list] = None) -> str:
    """The plain panel of a failed or errored FunctionResult, without a leading blank line.

    ``repro``: lines that replace the ``reproduce: gradcli check ...`` line -- for checks that the
    command line cannot repeat (inputs given by a test), where it would point at other inputs.
    """
    from gradcli.report.terminal import PlainRenderer

    detail = view.detail(result, seed, verbose=verbose, ascii_only=True)
    if repro is not None:
        lines = []
        for kind, text in detail.lines:
            if kind == "repro":
                lines += [("repro", line) for line in repro]
            else:
                lines.append((kind, text))
        detail.lines = lines
    out: list = []
    PlainRenderer(out.append, seed, verbose).panel(detail)
    while out and not out[0].strip():
        out.pop(0)
    return "\n".join(out)
