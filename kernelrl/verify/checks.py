"""Correctness checks for HGEMM candidates. Device-agnostic: the same code runs on CPU tensors in tests.

The error metric is  max_ij |C_ij - R_ij| / (|R_ij| + rms(R)),  with R the fp32 reference of the fp16 inputs:
a relative error for large entries, scaled by the typical output magnitude for entries near zero.
A correct fp32-accumulating kernel is bounded by fp16 output rounding (2^-11); fp16 accumulation rounds a partial
sum once per tensor-core step, so its bound grows with sqrt(K). The tolerances below leave head room for split-K
and reordered sums; a dropped or doubled K term still fails, and the exact 0/1 check catches what slips through.
At small K an fp16 accumulator stays inside the fp32 tolerance on random inputs; the `accumulator` inputs tell the
two apart at any K (exact in fp32 in any order, lossy in fp16).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from kernelrl.harness.verdicts import Verdict

FP16_EPS = 2.0 ** -11  # half of fp16's relative spacing: the rounding of one output element
BF16_EPS = 2.0 ** -8   # bf16 keeps 8 significant bits to fp16's 11
TORCH_DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16}


def tolerance(acc: str, k: int, dtype: str = "fp16") -> float:
    """Largest accepted error (metric above) for a GEMM with accumulator `acc`, reduction length `k` and output
    `dtype`: the output's own rounding dominates an fp32 accumulator's error."""
    if acc == "fp32":
        return 8 * (BF16_EPS if dtype == "bf16" else FP16_EPS)
    return FP16_EPS * (16 + math.sqrt(k))


def ones_density(k: int) -> float:
    """Fraction of ones in 0/1 inputs. Every dot product is a count of at most 2048 (exact in fp16, and every partial
    sum is exact in an fp16 accumulator) when the expected count stays near 1024: half ones up to K = 4096, fewer
    above."""
    return 0.5 if k <= 4096 else math.sqrt(1024.0 / k)


ACCUMULATOR_PROBE_MIN_K = 3  # a large term, a small one and the large one's negative


def make_inputs(m: int, n: int, k: int, kind: str, seed: int, device="cpu",
                dtype: str = "fp16") -> tuple[torch.Tensor, torch.Tensor]:
    """A (m×k) and B (k×n) in fp16: `normal` draws N(0, 1); `binary` draws 0/1 at `ones_density(k)`;
    `accumulator`: every dot product is +1024 (k = 0), then sixteenths (0/0.25 times 0/0.25 at `ones_density(k)`),
    then -1024 (k = K-1). In fp32 every partial sum is exact in any order (15 significant bits) and so is the
    result, which fp16 holds exactly (below 128, in sixteenths). An fp16 accumulator, or an fp16 split-K partial,
    that holds 1024 has a spacing of 1 and drops the sixteenths: the result comes back wrong. Every value is
    exact in bf16 too (whose outputs are then the exact result rounded once)."""
    gen = torch.Generator(device=device)
    gen.manual_seed(seed & 0x7FFF_FFFF_FFFF_FFFF)
    if kind == "normal":
        a = torch.randn(m, k, device=device, generator=gen, dtype=torch.float32)
        b = torch.randn(k, n, device=device, generator=gen, dtype=torch.float32)
    elif kind == "binary":
        p = ones_density(k)
        a = (torch.rand(m, k, device=device, generator=gen) < p).float()
        b = (torch.rand(k, n, device=device, generator=gen) < p).float()
    elif kind == "accumulator":
        if k < ACCUMULATOR_PROBE_MIN_K:
            raise ValueError(f"accumulator inputs need K >= {ACCUMULATOR_PROBE_MIN_K}, got {k}")
        p = ones_density(k)
        a = (torch.rand(m, k, device=device, generator=gen) < p).float() * 0.25
        b = (torch.rand(k, n, device=device, generator=gen) < p).float() * 0.25
        a[:, 0], b[0, :] = 32.0, 32.0
        a[:, -1], b[-1, :] = -32.0, 32.0
    else:
        raise ValueError(f"unknown input kind {kind!r}")
    return a.to(TORCH_DTYPES[dtype]), b.to(TORCH_DTYPES[dtype])


def reference(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """fp32 product of the fp16 inputs, with TF32 off so the reference is a true fp32 sum."""
    previous = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False
    try:
        return torch.matmul(a.float(), b.float())
    finally:
        torch.backends.cuda.matmul.allow_tf32 = previous


@dataclass
class CheckOutcome:
    ok: bool
    max_rel_err: float
    reason: str | None = None  # for people: the verdict's text and the detail
    verdict: Verdict | None = None
    detail: str | None = None  # the detail line alone, for a verdict raised again with more context

    @classmethod
    def failed(cls, err: float, verdict: Verdict, detail: str) -> "CheckOutcome":
        return cls(False, err, verdict.reason(detail), verdict, detail)


def compare_output(c: torch.Tensor, ref: torch.Tensor, acc: str, k: int, exact: bool = False,
                   exact_verdict: Verdict = Verdict.EXACT_INPUTS) -> CheckOutcome:
    """Judge output `c` (fp16 or bf16) against the fp32 reference. NaN anywhere fails: the output was NaN-poisoned
    before the call, so a NaN means an element was never written (or the kernel produced one). `exact` inputs must
    give the reference rounded once to the output's dtype (for fp16 the reference itself); a difference is
    `exact_verdict` (which inputs they were says what it means).
    All statistics come back in one device-to-host transfer: this runs for every method on every shape."""
    cf = c.float()
    nan = torch.isnan(cf)
    diff = (cf - (ref.to(c.dtype).float() if exact else ref)).abs()
    rms = ref.pow(2).mean().sqrt().clamp_min(1e-30)
    stats = torch.stack([nan.sum().float(), torch.isinf(cf).sum().float(),
                         torch.nan_to_num(diff / (ref.abs() + rms), nan=0.0).max(),
                         (diff != 0).sum().float() if exact else torch.zeros((), device=c.device)])
    nans, infs, err, differing = stats.tolist()
    if nans:
        return CheckOutcome.failed(math.inf, Verdict.UNWRITTEN_OUTPUT, f"{int(nans)} of {c.numel()} elements still "
                                   f"NaN (first at {_first_index(nan, c.shape[1])})")
    if infs:
        return CheckOutcome.failed(math.inf, Verdict.NON_FINITE, "output holds Inf")
    if exact:
        if differing:
            return CheckOutcome.failed(err, exact_verdict, f"{int(differing)} elements differ from the exact "
                                       f"result (first at {_first_index(diff != 0, c.shape[1])})")
        return CheckOutcome(True, err)
    dtype = "bf16" if c.dtype == torch.bfloat16 else "fp16"
    tol = tolerance(acc, k, dtype)
    if err > tol:
        return CheckOutcome.failed(err, Verdict.WRONG_VALUES, f"error {err:.3g} exceeds the {acc} tolerance {tol:.3g} "
                                                          f"for K={k}" + (" (bf16)" if dtype == "bf16" else ""))
    return CheckOutcome(True, err)


def _first_index(mask: torch.Tensor, cols: int) -> tuple[int, int]:
    flat = int(torch.nonzero(mask.reshape(-1))[0])
    return divmod(flat, cols)


class GuardedBuffer:
    """A device buffer with guard bands of a known byte pattern on both sides; `intact()` tells whether anything
    wrote outside the buffer. Guards are multiples of 256 bytes so the data pointer keeps cudaMalloc's alignment."""

    PATTERN = 0xA5

    def __init__(self, shape: tuple[int, ...], dtype=torch.float16, device="cpu", guard_bytes: int = 65536):
        self.guard = -(-max(guard_bytes, 256) // 256) * 256
        self.nbytes = math.prod(shape) * torch.empty((), dtype=dtype).element_size()
        span = -(-self.nbytes // 256) * 256
        self.raw = torch.full((self.guard + span + self.guard,), self.PATTERN, dtype=torch.uint8, device=device)
        self.tail_start = self.guard + self.nbytes
        self.tensor = self.raw[self.guard:self.guard + self.nbytes].view(dtype).view(shape)

    def ptr(self) -> int:
        return self.tensor.data_ptr()

    def rearm(self) -> None:
        self.raw[:self.guard].fill_(self.PATTERN)
        self.raw[self.tail_start:].fill_(self.PATTERN)

    def intact_flag(self) -> torch.Tensor:
        """A 0-d bool tensor, left on the device so many buffers can be checked with one synchronization."""
        return (self.raw[:self.guard] == self.PATTERN).all() & (self.raw[self.tail_start:] == self.PATTERN).all()

    def intact(self) -> bool:
        return bool(self.intact_flag())


def guard_bytes_for(rows: int, row_bytes: int) -> int:
    """Guard size: room for a tile of up to 256 rows running past the edge, within [64 KiB, 32 MiB]."""
    return int(min(max(256 * row_bytes, 65536), 32 << 20))
