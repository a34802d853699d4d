"""torch's shape and linear-algebra ops beyond shape.py/linalg.py: broadcast_to, roll, tile, repeat_interleave, diagonal, diag_embed, unflatten, meshgrid, mv, addmm, baddbmm, einsum, tensordot, kron, cross, cdist, argsort, median, unique, searchsorted, bucketize.

Every differentiable op is a Function written with the public API (forward on numpy arrays,
backward in Tensor ops, so double backward and symbolic tracing come with it) and is registered as
``gradcli.<name>`` and, where torch has one, as a Tensor method (``register`` in ops/__init__.py).
"""
