"""What a kernel computes its products with, read from its source: the line a prompt shows beside its
measurements (a prompt that called every kernel "mma.sync" misled the model about wgmma ones). Nothing is
compiled or run; the PTX instructions a source writes (inline `asm`), the C++ APIs it calls and the libraries it
includes are the evidence, in the order a reader would trust them."""

from __future__ import annotations

import re

# (label, pattern) in order: the first ones found name the kernel's tensor-core path
EVIDENCE = (
    ("wgmma", re.compile(r"\bwgmma\.|SM90_\w*GMMA|GMMA::|warpgroup_arrive")),
    ("mma.sync", re.compile(r"\bmma\.sync\b|SM80_\w+_TN|SM75_\w+_TN")),
    ("WMMA", re.compile(r"\bwmma::(?:mma_sync|load_matrix_sync|fragment)|nvcuda::wmma")),
    ("CUTLASS", re.compile(r"#\s*include\s*[<\"](?:cutlass|cute)/")),
    ("cuBLAS", re.compile(r"\bcublas(?:Lt)?\w*\s*\(|#\s*include\s*[<\"]cublas")),
    ("Triton", re.compile(r"@triton\.jit|\bimport triton\b")),
    ("torch", re.compile(r"\btorch\.(?:matmul|mm|bmm|nn\.functional\.linear|addmm|einsum)\s*\(|\bF\.linear\s*\(")),
)


def uses(source: str) -> list[str]:
    """The tensor-core paths and libraries the source shows, most specific first (empty: plain CUDA cores, or
    nothing recognisable)."""
    return [label for label, pattern in EVIDENCE if pattern.search(source or "")]


def uses_line(source: str) -> str | None:
    found = uses(source)
    return f"- computes with: {', '.join(found)} (from its source)" if found else None
