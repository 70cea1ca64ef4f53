"""What a confirmed verdict's `confirmed` list holds on this machine: the
oracle, numpy, and cupy where cupy and a CUDA GPU are present (a check
replays its counterexample on every available array back end)."""

from tfsem.backends import arraymodule as am

CONFIRMED_ORACLE_ARRAYS = ["oracle", "numpy"] + (["cupy"] if am.cuda_available() else [])
