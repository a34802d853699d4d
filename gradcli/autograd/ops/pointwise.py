"""torch's elementwise ops beyond the UNARY table and arithmetic: atan2, hypot, logaddexp, lerp, addcmul, addcdiv, remainder, fmod, log2, log10, sgn, signbit, nan_to_num, cumprod, and the new_* / type_as constructors.

Every differentiable op is a Function written with the public API (forward on numpy arrays,
backward in Tensor ops, so double backward and symbolic tracing come with it) and is registered as
``gradcli.<name>`` and, where torch has one, as a Tensor method (``register`` in ops/__init__.py).
"""
