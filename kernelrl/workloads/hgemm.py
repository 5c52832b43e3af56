"""HGEMM workloads: C = A @ B in half precision, and the named shape sets of the CUDA-L2 paper grid."""

from __future__ import annotations

import itertools
import json
import random
import re
from dataclasses import asdict, dataclass

from kernelrl.errors import UserError

PAPER_DIMS = (64, 128, 256, 512, 1024, 2048, 4096, 8192, 12288, 16384)
ACCUMULATORS = ("fp32", "fp16")
DTYPES = ("fp16", "bf16")  # of A, B and C; bf16 with fp32 accumulation only (no tensor-core bf16 accumulator)
TORCH_DTYPE_NAMES = {"fp16": "float16", "bf16": "bfloat16"}
# nn: C = A @ B with B K x N row-major (the paper's); nt: C = A @ W^T with W N x K row-major (nn.Linear's x @ W^T).
LAYOUTS = ("nn", "nt")
# How a candidate takes B (kernelrl_hgemm_b_layout): K x N row-major, or B^T as N x K row-major (nn.Linear's weight).
B_LAYOUTS = ("kn", "nk")
B_LAYOUT_OF = {"nn": "kn", "nt": "nk"}  # the B a problem's caller holds
SIZE_CLASSES = ("small", "medium", "large")


class ShapeError(UserError, ValueError):
    """A shape specification that cannot be understood; the message says what to write instead."""


@dataclass(frozen=True, order=True)
class GemmProblem:
    """C (M×N) = A (M×K) @ B (K×N); inputs and output in `dtype` (fp16 or bf16), row-major, accumulator `acc`.
    With layout nt the caller holds B as W = B^T (N×K row-major, nn.Linear's weight) and C = A @ W^T: the same
    product, read from the other copy."""

    m: int
    n: int
    k: int
    acc: str = "fp32"
    layout: str = "nn"
    dtype: str = "fp16"

    def __post_init__(self):
        for name in ("m", "n", "k"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise ShapeError(f"{name}={value!r}: dimensions must be positive integers")
        if self.acc not in ACCUMULATORS:
            raise ShapeError(f"acc={self.acc!r}: use one of {', '.join(ACCUMULATORS)}")
        if self.layout not in LAYOUTS:
            raise ShapeError(f"layout={self.layout!r}: use nn (A @ B, B K x N) or nt (A @ W^T, W N x K)")
        if self.dtype not in DTYPES:
            raise ShapeError(f"dtype={self.dtype!r}: use one of {', '.join(DTYPES)}")
        if self.dtype == "bf16" and self.acc != "fp32":
            raise ShapeError("bf16 GEMMs accumulate in fp32: pass acc fp32")

    @property
    def flops(self) -> int:
        return 2 * self.m * self.n * self.k

    @property
    def min_bytes(self) -> int:
        """Fewest bytes of device memory traffic: each (2-byte) input read once, the output written once."""
        return 2 * (self.m * self.k + self.k * self.n + self.m * self.n)

    @property
    def size_class(self) -> str:
        return size_class(self.flops)

    @property
    def name(self) -> str:
        return f"{self.m}x{self.n}x{self.k}"

    def with_acc(self, acc: str) -> "GemmProblem":
        return GemmProblem(self.m, self.n, self.k, acc, self.layout, self.dtype)

    def to_dict(self) -> dict:
        return asdict(self)


def size_class(flops: int) -> str:
    """`small` under 1 GFLOP, `medium` 1 to 100 GFLOP, `large` above 100 GFLOP."""
    if flops < 1e9:
        return "small"
    if flops <= 100e9:
        return "medium"
    return "large"


def paper_grid(acc: str = "fp32") -> list[GemmProblem]:
    """The 1000 (M, N, K) configurations of the CUDA-L2 paper, in M, N, K order."""
    return [GemmProblem(m, n, k, acc) for m, n, k in itertools.product(PAPER_DIMS, repeat=3)]


_LITERAL = re.compile(r"^\s*(\d+)\s*[x×]\s*(\d+)\s*[x×]\s*(\d+)\s*$")
_USAGE = "use paper, small, medium, large, sample:N:SEED, or MxNxK[,MxNxK...]"


def parse_shapes(spec: str, acc: str = "fp32", layout: str = "nn", dtype: str = "fp16") -> list[GemmProblem]:
    """Turn a shape-set spec into problems. Sets may be joined with '+', e.g. `small+4096x4096x4096`."""
    if not spec or not spec.strip():
        raise ShapeError(f"empty shape specification: {_USAGE}")
    problems: list[GemmProblem] = []
    for part in spec.split("+"):
        problems.extend(_parse_one(part.strip(), acc))
    if (layout, dtype) != ("nn", "fp16"):
        problems = [GemmProblem(p.m, p.n, p.k, p.acc, layout, dtype) for p in problems]
    return list(dict.fromkeys(problems))  # keep order, drop repeats


def _parse_one(spec: str, acc: str) -> list[GemmProblem]:
    grid = paper_grid(acc)
    if spec == "paper":
        return grid
    if spec in SIZE_CLASSES:
        return [p for p in grid if p.size_class == spec]
    if spec.startswith("sample:"):
        parts = spec.split(":")
        if len(parts) != 3 or not re.fullmatch(r"\d+", parts[1]) or not re.fullmatch(r"-?\d+", parts[2]):
            raise ShapeError(f"{spec!r}: write sample:N:SEED, e.g. sample:50:0")
        count, seed = int(parts[1]), int(parts[2])
        if not 1 <= count <= len(grid):
            raise ShapeError(f"{spec!r}: N must be between 1 and {len(grid)}")
        return sorted(random.Random(seed).sample(grid, count))
    problems = []
    for item in spec.split(","):
        match = _LITERAL.match(item)
        if not match:
            raise ShapeError(f"unknown shape {item.strip()!r}: {_USAGE}")
        m, n, k = (int(g) for g in match.groups())
        if min(m, n, k) < 1:
            raise ShapeError(f"shape {item.strip()!r}: dimensions must be at least 1")
        problems.append(GemmProblem(m, n, k, acc))
    return problems


# M values every recorded nt (N, K) is tuned at: a linear's M is the number of tokens, which changes call to call,
# and a call runs the kernel of the nearest tuned M at or above its own.
M_GRID = tuple(2 ** i for i in range(15))  # 1 .. 16384


def problems_from_shapes_file(path, acc: str = "fp32", m_grid: bool = True) -> tuple[list[GemmProblem], list[str]]:
    """The problems to tune for a `kernelrl.record` shapes file, and one line per kind of GEMM left out.

    fp16 and bf16 nn and nt GEMMs are kept, each nt (N, K) over M_GRID and its recorded M values (m_grid); bf16 ones
    accumulate in fp32 whatever `acc` says. A bias is added after the product (kernelrl.linear adds it), so it does
    not change the problem. Left out, and said: other dtypes, batched GEMMs (bmm) and layouts with A transposed."""
    try:
        doc = json.loads(open(path).read())
    except (OSError, ValueError) as exc:
        raise ShapeError(f"{path}: not a readable shapes file ({exc}); write one with kernelrl.record") from None
    if not isinstance(doc, dict) or doc.get("kind") != "kernelrl.shapes":
        raise ShapeError(f"{path}: not a kernelrl shapes file (no \"kind\": \"kernelrl.shapes\"); write one with "
                         f"kernelrl.record")
    problems: list[GemmProblem] = []
    left_out: dict[str, int] = {}
    ours = {torch_name: name for name, torch_name in TORCH_DTYPE_NAMES.items()}  # "bfloat16" -> "bf16"
    for entry in doc.get("shapes", []):
        why = None
        dtype = ours.get(entry.get("dtype"))
        if dtype is None:
            why = f"{entry.get('dtype')} GEMMs (fp16 and bf16 only)"
        elif entry.get("batch", 1) != 1:
            why = "batched GEMMs (bmm)"
        elif entry.get("layout") not in LAYOUTS:
            why = f"{entry.get('layout')} GEMMs (A transposed)"
        if why:
            left_out[why] = left_out.get(why, 0) + entry.get("calls", 1)
            continue
        assert dtype is not None  # else `why` above
        m, n, k, layout = int(entry["m"]), int(entry["n"]), int(entry["k"]), entry["layout"]
        entry_acc = "fp32" if dtype == "bf16" else acc
        problems.append(GemmProblem(m, n, k, entry_acc, layout, dtype))
        if layout == "nt" and m_grid:
            problems.extend(GemmProblem(mm, n, k, entry_acc, layout, dtype) for mm in M_GRID)
    notes = [f"{path}: left out {calls} calls of {why}" for why, calls in sorted(left_out.items())]
    if not problems:
        raise ShapeError(f"{path}: no fp16 or bf16 nn or nt GEMM to tune" + (f" ({'; '.join(notes)})" if notes else ""))
    return sorted(dict.fromkeys(problems)), notes
