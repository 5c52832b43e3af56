"""The dispatch policy: which kernel or fallback serves a GEMM, written once.

The tuner decides every tuned shape with `decide` (`fallback`, `dispatches_kernel`) and writes the answer into the
manifest (`dispatch`, `kernel`, `fallback`). `tables` reads a manifest back into the two tables `route` takes, and
`route` says what serves a call of a given shape, layout, dtype and accumulator, and why, in this order:

1. on the tuned grid, the shape's own kernel, when the tuner dispatched it and it is usable here;
2. on the tuned grid, cuBLASLt with the stored autotuned algorithm, when that was the faster fallback;
3. off the grid, the first kernel of `off_grid` (the nearest tuned shapes) that is usable and supports the shape;
4. the layout's yardstick: torch.matmul (nn), F.linear (nt).

The runtime (`Library.route`, `choose`, `runs`, the plans of the C++ fast path), the bench's view of a library
(`LibraryPlan`) and `kernelrl library info` call `route`; each says what "usable" means where it runs (the runtime:
built and taking B as the layout holds it; the bench and `library info`, which load nothing: built). What a single
call adds (a CPU tensor, a misaligned pointer: `Route.align`, a non-contiguous weight) only ever sends it to the
yardstick. Nothing else decides where a call goes.

Keys are `key` tuples: (m, n, k, acc, dtype, layout)."""

from __future__ import annotations

import math
from collections.abc import Callable, Container
from dataclasses import dataclass

YARDSTICK = "torch"  # the default fallback: torch.matmul for nn, F.linear's product for nt
# The fallback a manifest names for shapes sent to cuBLASLt with a stored autotuned algorithm: the evaluator's
# baseline of the same name, reading B as the caller holds it (nn: row-major K x N, for kernelrl.hgemm; nt: W as
# N x K, for kernelrl.linear).
LT_FALLBACKS = {"nn": "cublaslt_auto_nn", "nt": "cublaslt_auto_tn"}
LT_LAYOUT = {"nn": "nn", "nt": "tn"}  # the shim's layout name (kr_blas LAYOUTS, lt_cache_key) of a problem layout
FALLBACK_LABEL = {"nn": "torch.matmul", "nt": "F.linear"}  # what the yardstick is called where users see it
LT_LABEL = "cuBLASLt (stored algorithm)"  # what a stored cuBLASLt fallback is called where users see it

# Route.kind
KERNEL, LT, TORCH = "kernel", "cublaslt", "yardstick"
# Route.reason: why the call goes there
TUNED = "tuned"                # on the grid: its own kernel beat the fallbacks by more than the margin
FALLBACK_WON = "fallback_won"  # on the grid: no tuned kernel beat the fallback (cuBLASLt or the yardstick)
NOT_USABLE = "not_usable"      # on the grid: its kernel is not built here (or takes B the other way)
NEAREST = "nearest"            # off the grid: the kernel of the nearest tuned shape that takes it
NOTHING_NEAR = "nothing_near"  # off the grid: no tuned kernel near it takes it
ALIGN = {KERNEL: 15, LT: 255, TORCH: 0}  # pointer bits that must be zero: kernels load 16 bytes at a time, the
# stored cuBLASLt algorithm was chosen for 256-byte aligned operands; a misaligned call runs the yardstick


@dataclass(frozen=True)
class Route:
    """What serves a call: `kind` (KERNEL, LT or TORCH), `name` (the kernel, the layout's LT_FALLBACKS method, or
    None for the yardstick), `reason` (a key above) and `detail` (one line for people)."""
    kind: str
    name: str | None
    reason: str
    detail: str

    @property
    def kernel(self) -> str | None:
        """The tuned kernel's name, or None for either fallback."""
        return self.name if self.kind == KERNEL else None

    @property
    def align(self) -> int:
        return ALIGN[self.kind]


def key(m: int, n: int, k: int, acc: str = "fp32", dtype: str = "fp16", layout: str = "nn") -> tuple:
    """A dispatch table key: the shape, the accumulator, the inputs' dtype and the layout (nn: A @ B with B K x N;
    nt: x @ W^T with W N x K, nn.Linear's)."""
    return (m, n, k, acc, dtype, layout)


def tables(manifest: dict, shim: bool) -> tuple[dict[tuple, str | None], dict[tuple, str]]:
    """A manifest's dispatch tables: every tuned key -> the kernel the tuner dispatched (None: the fallback), and the
    keys whose fallback is cuBLASLt with a stored algorithm the library can call (`shim`: lib/libkr_blas.so is
    there; `lt_callable`) -> that algorithm."""
    table: dict[tuple, str | None] = {}
    lt_algos: dict[tuple, str] = {}
    for entry in manifest.get("shapes", {}).values():
        at = key(entry["m"], entry["n"], entry["k"], entry["acc"], entry.get("dtype", "fp16"),
                 entry.get("layout", "nn"))
        table[at] = entry["kernel"] if entry.get("dispatch") == "kernel" else None
        stored = entry.get("fallback") or {}
        if stored.get("method") == LT_FALLBACKS[at[5]] and stored.get("algo") and shim and \
                lt_callable(at[5], at[4]):
            lt_algos[at] = stored["algo"]
    return table, lt_algos


def route(at: tuple, table: dict[tuple, str | None], lt_algos: Container[tuple],
          usable: Callable[[str], bool] = lambda name: True,
          supports: Callable[[str], bool] = lambda name: True) -> Route:
    """What serves a call of key `at` (the order is the module's): `table` and `lt_algos` as `tables` makes them;
    `usable(name)`: the kernel can run here; `supports(name)`: it takes this shape (asked off the grid only)."""
    yardstick = FALLBACK_LABEL[at[5]]
    if at in table:
        name = table[at]
        if name is not None and usable(name):
            return Route(KERNEL, name, TUNED, f"its tuned kernel {name}")
        reason = FALLBACK_WON if name is None else NOT_USABLE
        why = "no tuned kernel beat the fallback" if name is None else f"its tuned kernel {name} is not usable here"
        if at in lt_algos:
            return Route(LT, LT_FALLBACKS[at[5]], reason, f"{why}: {LT_LABEL}")
        return Route(TORCH, None, reason, f"{why}: {yardstick}")
    for name in off_grid(at, table):
        if usable(name) and supports(name):
            return Route(KERNEL, name, NEAREST, f"off the tuned grid: {name}, the nearest tuned shape's kernel")
    return Route(TORCH, None, NOTHING_NEAR, f"off the tuned grid, no tuned kernel near it takes it: {yardstick}")


def decide(layout: str, best: str | None, best_us: float | None, measured: dict[str, float],
           lt_algo: str | None, min_gain: float) -> Route:
    """The tuner's answer for a tuned shape (what `route` later reads from the manifest): its best kernel when it
    beats the fallback by more than `min_gain`, else that fallback (`fallback`)."""
    chosen = fallback(layout, measured, lt_algo)
    if best is not None and dispatches_kernel(best_us, measured.get(chosen), min_gain):
        return Route(KERNEL, best, TUNED, f"its tuned kernel {best}")
    if chosen == YARDSTICK:
        return Route(TORCH, None, FALLBACK_WON, f"no tuned kernel beat the fallback: {FALLBACK_LABEL[layout]}")
    return Route(LT, chosen, FALLBACK_WON, f"no tuned kernel beat the fallback: {LT_LABEL}")


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
