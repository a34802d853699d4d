"""Symbolic tracing of Functions: exact references and proofs for ``gradcli check``.

``trace`` runs a Function's forward and backward on tensors of SymPy symbols (``ops`` registers what the
engine's ops compute on symbols; ``reasons`` says why a Function cannot be traced); ``exact`` and
``jacobian_values`` give the exact Jacobian at a point (``evaluation``: fast high-precision evaluation of
the traced formulas); ``prove`` decides backward == d(forward) symbolically (``points``: exact screening
points, ``proof``: rewriting). ``torch_twin`` runs a torch Function's file with gradcli standing for torch.
Judging (pass/fail) belongs to ``gradcli.check``; this package computes references. It may use the
calculator's parser and budget (``gradcli.expr``). Importing this package does not import SymPy.
"""
