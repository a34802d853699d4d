"""Suite-wide settings. gradcli diff's default total budget (5 s) is sized for a user's machine; the suite
runs on shared, loaded CPUs where SymPy's import alone can take 2 s, so tests that want complete results
get a larger default. Tests of the budget itself pass --budget (or a Deadline) explicitly."""
import os

os.environ.setdefault("GRADCLI_DIFF_BUDGET", "120")
