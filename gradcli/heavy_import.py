"""Importing large libraries (SymPy, torch) with the cyclic garbage collector paused.

A fresh import allocates on the order of 10^6 objects, and the collector, triggered by allocation
counts, scans the growing heap again and again: 5-10% of SymPy's import and of torch's. Nothing an
import builds is garbage worth finding, so the objects are frozen (moved out of the collector's
generations) once the import is done.
"""
import gc
import importlib


def import_paused(module: str):
    """``importlib.import_module(module)`` without garbage collection during the import."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        return importlib.import_module(module)
    finally:
        gc.freeze()
        if enabled:
            gc.enable()
