"""``missing_term``: a factor of a product held constant — the product rule's other half dropped.

For an elementwise y = x·h(x) (Swish x·σ(βx), GELU x·Φ(x), Mish), a backward that returns
grad_output·h(x) — the gate as if it did not depend on x — is exactly grad_output·y/x. That
signature is specific: y/x must vary (else y is linear and the gradient would be right), x must
be non-zero, and the backward must equal it at every element and cotangent while the numerical
gradient does not — and forward must write the product (``x * …``): any f is x·(f/x), so softsign's
1/(1 + |x|) for 1/(1 + |x|)² would fit too. The missing term is x·h′(x)."""
from __future__ import annotations

import numpy as np

from gradcli.check.diagnosis.evidence import Evidence
from gradcli.check.report import Finding


def held_constant_factor(ev: Evidence):
    if ev.analytic is None or ev.values is None or len(ev.outputs) != 1 or ev.support() < 3:
        return None
    if ev.forward_multiplies is None or not ev.forward_multiplies():
        return None  # any f has f = x·(f/x): only a product forward writes is evidence of one
    x, y = ev.values, np.asarray(ev.outputs[0], dtype=float)
    if y.shape != x.shape or np.any(x == 0):
        return None
    gate = y / x
    if np.ptp(gate) <= 1e-6 * max(1.0, float(np.max(np.abs(gate)))):
        return None  # y is x times a constant: its gradient is that constant
    V = np.stack([np.reshape(row[0], x.shape) for row in ev.cotangents])
    if not ev.fits(ev.analytic, V * gate) or ev.fits(ev.numeric, V * gate, ev.numeric_error):
        return None
    return Finding("missing_term",
                   f"backward for input {ev.name} gives grad_output·h with h = output/{ev.name}: the derivative of "
                   f"{ev.name}·h({ev.name}) with h held constant — the term {ev.name}·h′({ev.name}) is missing "
                   "(the product rule's other half)",
                   input=ev.index, params={"variant": "held_constant", "term": f"{ev.name}·h′({ev.name})",
                                           "factor": f"output/{ev.name}"}, confidence=0.8)
