"""The derivative calculator behind ``gradcli diff``: safe expression parsing and exact calculus.

Start here: ``api.run(DiffRequest)``. Pipeline: lexer (calculator conveniences, syntax errors with
columns) -> parser (AST whitelist, SymPy built node by node) -> calculus (sympy.diff, or reverse mode over
the shared-subexpression graph for large expressions) -> budget (a forked child for simplification,
exact values and proofs) and evaluate (engine autograd and finite differences at points) -> model (plain
data for gradcli.report.diff_render). ``supervisor`` forks the whole command into one bounded worker
(``gradcli/diff_worker.py``, which also renders through ``gradcli.report``). opmap holds the op <-> SymPy mapping. Importing this package does not import SymPy.
"""
