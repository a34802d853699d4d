"""Where the single statement edits of ``mutations.py`` are read from backward's source: the
saved tensors as backward unpacks them, the dim a reduction is written with, and the names one
statement reads more than once (each replaced together, one edit).
"""
from __future__ import annotations

import ast

import numpy as np

from gradcli.check.infer_shapes import int_literal as written_dim_of  # one reader of ``-1``, ``3``


def every_occurrence(value, masked, cotangents, edits, occurrences, stmt):
    """A name read more than once in one statement, every read replaced by the same tensor: the
    wrong variable used consistently (tanh′ written ``1 - z * z`` on the pre-activation z where
    the output is needed), which no single replacement fixes."""
    reads = {}
    for node in ast.walk(value):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and id(node) not in masked \
                and node.id not in cotangents and node.id not in ("ctx", "self", "torch", "np", "math", "F"):
            reads.setdefault(node.id, []).append(node)
    for nodes in reads.values():
        if len(nodes) > 1:
            occurrences[id(nodes[0])] = nodes
            edits.append(("every", nodes[0], stmt, None))


def saved_variables(src, saved):
    """(name, value) of the saved tensors as backward unpacks them (``x, y = ctx.saved_tensors``)."""
    found = []
    for stmt in ast.walk(src.tree):
        if isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Attribute) \
                and stmt.value.attr in ("saved_tensors", "saved_variables"):
            for target in stmt.targets:
                names = target.elts if isinstance(target, (ast.Tuple, ast.List)) else []
                for k, element in enumerate(names):
                    if isinstance(element, ast.Name) and k < len(saved) and saved[k] is not None:
                        label = element.id if element.id.strip("_") else f"ctx.saved_tensors[{k}]"
                        value = np.asarray(saved[k], dtype=float)
                        found.append((label, value))
                        if element.id.lower().startswith("log"):  # log-probabilities saved, probabilities needed
                            with np.errstate(all="ignore"):
                                found.append((f"exp({label})", np.exp(value)))
    return found


def written_dim(node):
    args = list(node.args)
    if isinstance(node.func.value, ast.Name) and node.func.value.id in ("torch", "F", "np"):
        args = args[1:]
    found = [k.value for k in node.keywords if k.arg in ("dim", "axis")] or args[:1]
    if found and isinstance(found[0], ast.Constant):
        return found[0].value
    if found and isinstance(found[0], (ast.Tuple, ast.List)):  # dim=(2, 3)
        dims = [written_dim_of(e) for e in found[0].elts]
        return tuple(dims) if None not in dims else None
    if found and isinstance(found[0], ast.UnaryOp) and isinstance(found[0].operand, ast.Constant):
        return -found[0].operand.value
    return None
