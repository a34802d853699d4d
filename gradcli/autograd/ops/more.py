"""Further ops (prod, amax/amin, max/min, logsumexp, softmax, log_softmax, norm, var/std, cat,
stack, split, gather, ...). Each registers itself with ``register(name, fn)``."""
