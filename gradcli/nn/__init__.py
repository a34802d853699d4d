"""``gradcli.nn.functional``: the torch.nn.functional helpers tutorials use, built from
gradcli's ops (no modules or parameters)."""
from gradcli.nn import functional  # noqa: F401
