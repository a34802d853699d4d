"""How a tensor's values print: torch's rules, so that programs print what the tutorials show
(``tensor(0.1776)``, ``tensor(8.)``, ``tensor([1.1547, 1.0607, 1.0328])``).

torch (``torch/_tensor_str.py``) picks one format for all elements: whole numbers print as
``8.``; otherwise 4 decimals (``2.5000``); scientific notation (``1.0000e-05``) when the nonzero
magnitudes span more than a factor 1000, exceed 1e8, or (for non-whole numbers) go below 1e-4.
Every element is right-aligned to the widest.
"""
import numpy as np

PRECISION = 4


def format_data(arr):
    kind = arr.dtype.kind
    if kind == "O":
        return repr(arr.tolist())
    if kind == "b":
        width = 5 if (~arr).any() else 4  # " True" is padded only next to a "False"
        return np.array2string(arr, separator=", ", prefix="tensor(", formatter={"bool": lambda v: str(bool(v)).rjust(width)})
    if kind != "f":
        return np.array2string(arr, separator=", ", prefix="tensor(")
    fmt = _float_format(arr)
    width = max((len(fmt(v)) for v in arr.ravel()), default=0)
    return np.array2string(arr, separator=", ", prefix="tensor(",
                           formatter={"float_kind": lambda v: fmt(v).rjust(width)})


def _float_format(arr):
    finite = arr[np.isfinite(arr)]
    magnitudes = np.abs(finite[finite != 0]).astype(np.float64)
    whole = bool(np.all(np.ceil(finite) == finite))
    if magnitudes.size == 0:
        return _whole if whole else _fixed
    largest, smallest = magnitudes.max(), magnitudes.min()
    if largest / smallest > 1000 or largest > 1e8 or (not whole and smallest < 1e-4):
        return _scientific
    return _whole if whole else _fixed


def _whole(v):
    return f"{v:.0f}." if np.isfinite(v) else _special(v)


def _fixed(v):
    return f"{v:.{PRECISION}f}" if np.isfinite(v) else _special(v)


def _scientific(v):
    return f"{v:.{PRECISION}e}" if np.isfinite(v) else _special(v)


def _special(v):
    return "nan" if np.isnan(v) else ("inf" if v > 0 else "-inf")
