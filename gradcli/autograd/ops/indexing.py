"""torch's indexing ops beyond getitem/gather: scatter, scatter_add, index_add, index_fill, index_put, masked_fill/masked_select/masked_scatter, take, and their in-place variants.

Every differentiable op is a Function written with the public API (forward on numpy arrays,
backward in Tensor ops, so double backward and symbolic tracing come with it) and is registered as
``gradcli.<name>`` and, where torch has one, as a Tensor method (``register`` in ops/__init__.py).
"""
