"""Tensor printing, ported from torch's ``_tensor_str`` so that values print as torch prints
them: 4 decimals, ``8.`` for whole numbers, scientific notation when magnitudes span widely
(``[1.0000e-08, 1.0000e+05]``), columns aligned, long tensors summarized with ``...``.

``format_data(arr)`` is the bracketed body; ``tensor_repr(t)`` the whole ``tensor(...)`` with
torch's suffixes (``dtype=`` when not a default dtype, ``grad_fn=<...>``, ``requires_grad=True``).
"""
import contextlib
import dataclasses
import math

import numpy as np


@dataclasses.dataclass
class _PrintOptions:
    precision: int = 4
    threshold: float = 1000
    edgeitems: int = 3
    linewidth: int = 80
    sci_mode: object = None  # None: chosen from the values, as torch does


PRINT_OPTS = _PrintOptions()


def set_printoptions(precision=None, threshold=None, edgeitems=None, linewidth=None, profile=None, sci_mode=None):
    """torch.set_printoptions."""
    if profile is not None:
        presets = {"default": (4, 1000, 3, 80), "short": (2, 1000, 2, 80), "full": (4, math.inf, 3, 80)}
        (PRINT_OPTS.precision, PRINT_OPTS.threshold, PRINT_OPTS.edgeitems, PRINT_OPTS.linewidth) = presets[profile]
    if precision is not None:
        PRINT_OPTS.precision = precision
    if threshold is not None:
        PRINT_OPTS.threshold = threshold
    if edgeitems is not None:
        PRINT_OPTS.edgeitems = edgeitems
    if linewidth is not None:
        PRINT_OPTS.linewidth = linewidth
    PRINT_OPTS.sci_mode = sci_mode


def get_printoptions():
    return dataclasses.asdict(PRINT_OPTS)


@contextlib.contextmanager
def printoptions(**kwargs):
    old = get_printoptions()
    set_printoptions(**kwargs)
    try:
        yield
    finally:
        set_printoptions(**old)


class _Formatter:
    """Chooses one format for every element (torch's rules) and the common width."""

    def __init__(self, arr):
        self.floating = arr.dtype.kind == "f"
        self.int_mode = True
        self.sci_mode = False
        self.max_width = 1
        flat = arr.reshape(-1)
        if not self.floating:
            for value in flat.tolist():
                self.max_width = max(self.max_width, len(f"{value}"))
            return
        values = flat[np.isfinite(flat) & (flat != 0)].astype(np.float64)
        if values.size == 0:
            return
        magnitudes = np.abs(values)
        lo, hi = magnitudes.min(), magnitudes.max()
        self.int_mode = bool(np.all(values == np.ceil(values)))
        self.sci_mode = (hi / lo > 1000.0 or hi > 1.0e8 or lo < 1.0e-4) if PRINT_OPTS.sci_mode is None \
            else PRINT_OPTS.sci_mode
        p = PRINT_OPTS.precision
        for value in values.tolist():
            if self.sci_mode:
                width = len(f"{value:.{p}e}")
            elif self.int_mode:
                width = len(f"{value:.0f}") + 1  # the "." that marks a float
            else:
                width = len(f"{value:.{p}f}")
            self.max_width = max(self.max_width, width)

    def format(self, value):
        if self.floating:
            p = PRINT_OPTS.precision
            if self.sci_mode:
                text = f"{value:{self.max_width}.{p}e}"
            elif self.int_mode:
                text = f"{value:.0f}"
                if not (math.isinf(value) or math.isnan(value)):
                    text += "."
            else:
                text = f"{value:.{p}f}"
        else:
            text = f"{value}"
        return (self.max_width - len(text)) * " " + text


def _summarized(arr):
    """The elements that will be shown (the edges of every long dim): the formatter's sample."""
    edge = PRINT_OPTS.edgeitems
    if arr.ndim == 0:
        return arr
    if arr.shape[0] > 2 * edge:
        parts = [arr[:edge], arr[-edge:]] if edge else [arr[:0]]
    else:
        parts = [arr]
    if arr.ndim == 1:
        return np.concatenate(parts)
    return np.concatenate([np.stack([_summarized(row) for row in part]) if len(part) else part[:, :0]
                           for part in parts])


def _vector_str(arr, indent, summarize, formatter):
    element_length = formatter.max_width + 2
    per_line = max(1, math.floor((PRINT_OPTS.linewidth - indent) / element_length))
    edge = PRINT_OPTS.edgeitems
    if summarize and not edge:
        data = ["..."]
    elif summarize and arr.shape[0] > 2 * edge:
        data = ([formatter.format(v) for v in arr[:edge].tolist()] + [" ..."]
                + [formatter.format(v) for v in arr[-edge:].tolist()])
    else:
        data = [formatter.format(v) for v in arr.tolist()]
    lines = [", ".join(data[i:i + per_line]) for i in range(0, len(data), per_line)]
    return "[" + ("," + "\n" + " " * (indent + 1)).join(lines) + "]"


def _nested_str(arr, indent, summarize, formatter):
    if arr.ndim == 0:
        return formatter.format(arr.item())
    if arr.ndim == 1:
        return _vector_str(arr, indent, summarize, formatter)
    edge = PRINT_OPTS.edgeitems
    if summarize and arr.shape[0] > 2 * edge:
        rows = ([_nested_str(arr[i], indent + 1, summarize, formatter) for i in range(edge)] + ["..."]
                + [_nested_str(arr[i], indent + 1, summarize, formatter)
                   for i in range(arr.shape[0] - edge, arr.shape[0])])
    else:
        rows = [_nested_str(arr[i], indent + 1, summarize, formatter) for i in range(arr.shape[0])]
    return "[" + ("," + "\n" * (arr.ndim - 1) + " " * (indent + 1)).join(rows) + "]"


def format_data(arr, indent=len("tensor(")):
    """The values of ``arr`` as torch prints them inside ``tensor(...)`` (``indent`` is the
    column the opening bracket sits at, for the continuation lines)."""
    arr = np.asarray(arr)
    if arr.dtype.kind == "O":  # SymPy expressions during symbolic tracing
        return repr(arr.tolist())
    if arr.dtype.kind == "c":  # no complex autograd: numpy's own layout is enough
        return np.array2string(arr, separator=", ", precision=PRINT_OPTS.precision)
    if arr.size == 0:
        return "[]"
    summarize = arr.size > PRINT_OPTS.threshold
    formatter = _Formatter(_summarized(arr) if summarize else arr)
    return _nested_str(arr, indent, summarize, formatter)


def _add_suffixes(text, suffixes, indent):
    parts = [text]
    last_line_len = len(text) - text.rfind("\n") + 1
    for suffix in suffixes:
        if last_line_len + len(suffix) + 2 > PRINT_OPTS.linewidth:
            parts.append(",\n" + " " * indent + suffix)
            last_line_len = indent + len(suffix)
        else:
            parts.append(", " + suffix)
            last_line_len += len(suffix) + 2
    parts.append(")")
    return "".join(parts)


def tensor_repr(t, prefix="tensor("):
    """``repr`` of a gradcli Tensor, laid out as torch lays it out."""
    from gradcli.autograd import tensor as tensor_module

    arr = t.data
    default = tensor_module.DEFAULT_DTYPE
    indent = len(prefix)
    suffixes = []
    if arr.size == 0:
        if arr.ndim != 1:
            suffixes.append("size=" + str(tuple(arr.shape)))
        if arr.dtype != default:
            suffixes.append(f"dtype={arr.dtype}")
        body = "[]"
    else:
        if not PRINT_OPTS.edgeitems:
            suffixes.append("size=" + str(tuple(arr.shape)))
        default_complex = np.dtype(np.complex128 if default == np.float64 else np.complex64)
        if arr.dtype not in (default, default_complex, np.dtype(np.int64), np.dtype(np.bool_), np.dtype(object)):
            suffixes.append(f"dtype={arr.dtype}")
        body = format_data(arr, indent)
    if t.grad_fn is not None:
        suffixes.append(f"grad_fn=<{t.grad_fn.name()}>")
    elif t.requires_grad:
        suffixes.append("requires_grad=True")
    return _add_suffixes(prefix + body, suffixes, indent)
