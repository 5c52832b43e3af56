"""The model's own GEMM shapes: `with kernelrl.record("shapes.json"):` logs every distinct matrix multiplication the
code inside runs (M, N, K, dtype, layout, bias, batch) with its call count, as PyTorch's TunableOp records untuned
GEMMs. It listens at the ATen level (a TorchDispatchMode), below nn.Linear, F.linear, torch.matmul, `@` and bmm, so
whatever API a model uses, the GEMM it reaches is what is recorded; it changes nothing the model computes. Record
an eager run: what torch.compile fuses into its own kernels never reaches the dispatcher as a GEMM.

Layouts name how A (M x K) and B (K x N) lie in memory, as BLAS does: `n` row-major, `t` transposed. nn.Linear's
x @ W^T, with W stored N x K, is `nt`."""

from __future__ import annotations

import json
import os
import tempfile
from collections import Counter
from pathlib import Path

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from kernelrl.errors import UserError

aten = torch.ops.aten
_MM = {aten.mm.default, aten.mm.out}
_ADDMM = {aten.addmm.default, aten.addmm.out}
_BMM = {aten.bmm.default, aten.bmm.out}
_BADDBMM = {aten.baddbmm.default, aten.baddbmm.out}


class RecordError(UserError):
    """The shapes file cannot be written or read."""


def _major(t: torch.Tensor) -> str | None:
    """'n' when the last dimension is contiguous (row-major), 't' when the one before it is, None otherwise."""
    if t.dim() < 2:
        return None
    if t.stride(-1) == 1 or t.shape[-1] == 1:
        return "n"
    if t.stride(-2) == 1 or t.shape[-2] == 1:
        return "t"
    return None


def _key(a: torch.Tensor, b: torch.Tensor, bias: bool, batch: int) -> tuple | None:
    la, lb = _major(a), _major(b)
    if la is None or lb is None:
        return None  # a strided view no BLAS layout describes: torch copies it first, nothing to tune as it is
    m, k = a.shape[-2], a.shape[-1]
    n = b.shape[-1]
    return (int(m), int(n), int(k), str(a.dtype).removeprefix("torch."), la + lb, bias, int(batch))


class ShapeRecorder(TorchDispatchMode):
    """Counts every GEMM the ops under it run, by (m, n, k, dtype, layout, bias, batch)."""

    def __init__(self) -> None:
        super().__init__()
        self.counts: Counter = Counter()
        self.devices: set[str] = set()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        operands = None  # (A, B, bias?, batch)
        if func in _MM:
            operands = (args[0], args[1], False, 1)
        elif func in _ADDMM:
            operands = (args[1], args[2], True, 1)
        elif func in _BMM:
            operands = (args[0], args[1], False, args[0].shape[0])
        elif func in _BADDBMM:
            operands = (args[1], args[2], True, args[1].shape[0])
        if operands is not None:
            key = _key(*operands)
            if key is not None:
                self.counts[key] += 1
                self.devices.add(str(operands[0].device))
        return func(*args, **kwargs)

    def shapes(self) -> list[dict]:
        """Distinct GEMMs, most called first."""
        names = ("m", "n", "k", "dtype", "layout", "bias", "batch")
        return [{**dict(zip(names, key)), "calls": calls}
                for key, calls in sorted(self.counts.items(), key=lambda kv: (-kv[1], kv[0]))]


class record:
    """`with kernelrl.record("shapes.json"):` (or `as rec:` and `rec.shapes()` without a file)."""

    def __init__(self, path: str | Path | None = None):
        self.path = Path(path) if path is not None else None
        self.recorder = ShapeRecorder()

    def __enter__(self) -> ShapeRecorder:
        if self.path is not None and not (self.path.parent.exists() or self.path.parent == Path("")):
            raise RecordError(f"{self.path.parent} does not exist: create it, or record to another path")
        self.recorder.__enter__()
        return self.recorder

    def __exit__(self, *exc) -> None:
        self.recorder.__exit__(*exc)
        if self.path is not None:
            write_shapes(self.path, self.recorder.shapes(), sorted(self.recorder.devices))


def write_shapes(path: Path, shapes: list[dict], devices: list[str]) -> None:
    """Atomically: a temp file beside it, then a rename (a crash never leaves half a file)."""
    doc = {"kind": "kernelrl.shapes", "version": 1, "torch": torch.__version__, "devices": devices, "shapes": shapes}
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    with os.fdopen(fd, "w") as f:
        json.dump(doc, f, indent=1)
    os.replace(tmp, path)


def read_shapes(path: str | Path) -> list[dict]:
    try:
        doc = json.loads(Path(path).read_text())
    except (OSError, ValueError) as exc:
        raise RecordError(f"{path}: not a readable shapes file ({exc}); write one with kernelrl.record") from None
    if doc.get("kind") != "kernelrl.shapes":
        raise RecordError(f"{path}: not a kernelrl shapes file (no \"kind\": \"kernelrl.shapes\")")
    return doc["shapes"]
