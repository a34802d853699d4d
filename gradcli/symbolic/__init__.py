"""Safe expression parsing and exact calculus for ``gradcli diff``.

Start here: ``api.run(DiffRequest)``. Pipeline: lexer (calculator conveniences, syntax errors with
columns) -> parser (AST whitelist, SymPy built node by node) -> calculus (sympy.diff, or reverse mode over
the shared-subexpression graph for large expressions) -> budget (a forked child for simplification,
exact values and proofs) and evaluate (engine autograd and finite differences at points) -> model (plain
data for gradcli.report.diff_render). opmap holds the op <-> SymPy mapping shared with symbolic tracing.
Importing this package does not import SymPy.
"""
