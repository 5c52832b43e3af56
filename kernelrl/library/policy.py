"""The dispatch policy: which kernel or fallback serves a GEMM, written once.

The tuner decides every tuned shape with `fallback` and `dispatches_kernel` and writes the answer into the manifest
(`dispatch`, `kernel`, `fallback`). The runtime (`Library.choose`, `Library.runs`) and the bench's view of a
library (`LibraryPlan`) read that manifest, and answer a shape off the tuned grid with `off_grid`. Nothing else
decides where a call goes.

Keys are `Library.key` tuples: (m, n, k, acc, dtype, layout)."""

from __future__ import annotations

import math

YARDSTICK = "torch"  # the default fallback: torch.matmul for nn, F.linear's product for nt
# The fallback a manifest names for shapes sent to cuBLASLt with a stored autotuned algorithm: the evaluator's
# baseline of the same name, reading B as the caller holds it (nn: row-major K x N, for kernelrl.hgemm; nt: W as
# N x K, for kernelrl.linear).
LT_FALLBACKS = {"nn": "cublaslt_auto_nn", "nt": "cublaslt_auto_tn"}
LT_LAYOUT = {"nn": "nn", "nt": "tn"}  # the shim's layout name (kr_blas LAYOUTS, lt_cache_key) of a problem layout
FALLBACK_LABEL = {"nn": "torch.matmul", "nt": "F.linear"}  # what the yardstick is called where users see it
LT_LABEL = "cuBLASLt (stored algorithm)"  # what a stored cuBLASLt fallback is called where users see it


def dispatch_label(choice: str | None, layout: str) -> str:
    """What a result row says a shape ran: the kernel's name, the stored cuBLASLt fallback (a name in LT_FALLBACKS),
    or (None) the layout's yardstick."""
    if choice in LT_FALLBACKS.values():
        return LT_LABEL
    return FALLBACK_LABEL[layout] if choice is None else choice


def lt_callable(layout: str, dtype: str) -> bool:
    """Whether the library can call cuBLASLt for such a shape: kernelrl.linear (nt) in either dtype, kernelrl.hgemm
    (nn) in fp16 only."""
    return layout == "nt" or dtype == "fp16"


def fallback(layout: str, measured: dict[str, float], lt_algo: str | None) -> str:
    """What a tuned shape runs when no tuned kernel wins: the faster of the yardstick and cuBLASLt with its stored
    algorithm (only when an algorithm was stored)."""
    lt, yardstick = measured.get(LT_FALLBACKS[layout]), measured.get(YARDSTICK)
    if lt_algo and lt and (yardstick is None or lt < yardstick):
        return LT_FALLBACKS[layout]
    return YARDSTICK


def dispatches_kernel(kernel_us: float | None, fallback_us: float | None, min_gain: float) -> bool:
    """Whether a tuned shape runs its best kernel: it must beat the fallback by more than `min_gain` (near ties go
    to the fallback, which re-measures no worse)."""
    if not kernel_us:
        return False
    return fallback_us is None or fallback_us / kernel_us > min_gain


def off_grid(key: tuple, table: dict[tuple, str | None]) -> list[str]:
    """Kernels that may serve a key the tuner never measured, best first (the caller takes the first that can
    run it). nt (nn.Linear: M is the number of tokens and changes from call to call): the tuned shapes with the same
    N, K, accumulator and dtype, nearest M at or above first. nn: the same accumulator, dtype and layout, nearest in
    log distance over (M, N, K) first."""
    if key[5] == "nt":
        tuned = sorted((other[0], name) for other, name in table.items()
                       if name is not None and other[1:] == key[1:] and other[0] >= key[0])
    else:
        tuned = sorted((_log_distance(key, other), name) for other, name in table.items()
                       if name is not None and other[3:] == key[3:])
    return [name for _, name in tuned]


def _log_distance(a: tuple, b: tuple) -> float:
    return sum(abs(math.log2(x) - math.log2(y)) for x, y in zip(a[:3], b[:3]))
