"""Checkers run numpy's BLAS and torch single-threaded unless the user chose a thread count.

Checks run in forked processes, one per core; a BLAS or OpenMP pool per process fights the other
checkers for the same cores (on 2 cores, torch's default pool made one Function 3-6x slower).
The variables are read when numpy's BLAS or torch start their pools, so this runs before either
is imported (the workers inherit the environment)."""
import os

THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def single_threaded_by_default() -> bool:
    """Set the thread variables to 1 unless the user set any of them; True if they were set here."""
    if any(name in os.environ for name in THREAD_VARIABLES):
        return False
    for name in THREAD_VARIABLES:
        os.environ[name] = "1"
    return True
