"""Published KernelBench kernel sets as an input format: each kernel judged against the task text it was written
for, with the speedups its authors claimed carried beside the measured ones.

    kernelrl kb eval --published cuda-l1:optimized_cuda_code/h100.json --csv l1_h100.csv

Formats (`FORMATS`):
- `cuda-l1`: CUDA-L1's `optimized_cuda_code/<gpu>.json` (github.com/deepreinforce-ai/CUDA-L1): JSON lines (or one
  JSON list), one object per KernelBench task with `level_id`, `task_id`, `ref_code` (the task), `custom_code` (the
  kernel; empty, null or the literal string "None" where none was released: 17 of h100.json's 227 non-empty
  entries are that string) and `score_default`, `score_torch_compile_default`,
  `score_torch_compile_reduce_overhead`, `score_cuda_graph` (the claimed speedups over eager, torch.compile in two
  modes and CUDA graphs).

`materialize` writes the set as KernelBench-layout folders (`tasks/levelN/<id>_<format>.py` beside
`candidates/levelN/<id>_<format>.py`), which `kb eval` matches by level and name like any other; a task whose
kernel was not released has a task file and no candidate, so its row says so."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path

from kernelrl.errors import UserError

# CUDA-L1's claimed-speedup keys, by the evaluator's baseline names
CUDA_L1_CLAIMS = {"eager": "score_default", "compile_default": "score_torch_compile_default",
                  "compile_reduce_overhead": "score_torch_compile_reduce_overhead", "cuda_graph": "score_cuda_graph"}


class PublishedSetError(UserError, ValueError):
    """A published set that cannot be read: its spec, its file or one of its entries."""


@dataclass
class PublishedKernel:
    level: int
    task_id: int
    task_text: str
    kernel_text: str | None  # None: the set releases no kernel for this task
    claims: dict[str, float] = field(default_factory=dict)  # baseline -> claimed speedup

    @property
    def stem(self) -> str:
        return f"{self.task_id}_published"


def _json_records(path: Path) -> list[dict]:
    text = path.read_text()
    try:
        data = json.loads(text)
        return data if isinstance(data, list) else [data]
    except json.JSONDecodeError:
        pass
    records = []
    for n, line in enumerate(text.splitlines(), 1):
        if line.strip():
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise PublishedSetError(f"{path}:{n}: not JSON ({exc.msg}); a CUDA-L1 set is one JSON object per "
                                        f"line") from None
    return records


def read_cuda_l1(path: Path) -> list[PublishedKernel]:
    out = []
    for n, rec in enumerate(_json_records(path), 1):
        missing = [k for k in ("level_id", "task_id", "ref_code") if k not in rec]
        if missing:
            raise PublishedSetError(f"{path}: entry {n} lacks {', '.join(missing)}: not a CUDA-L1 optimized_cuda_code "
                                    f"file")
        claims = {b: float(rec[k]) for b, k in CUDA_L1_CLAIMS.items() if rec.get(k) is not None}
        kernel = rec.get("custom_code")
        released = isinstance(kernel, str) and kernel.strip() not in ("", "None")
        out.append(PublishedKernel(int(rec["level_id"]), int(rec["task_id"]), rec["ref_code"],
                                   kernel if released else None, claims))
    return out


FORMATS = {"cuda-l1": read_cuda_l1}


def read_published(spec: str) -> tuple[str, list[PublishedKernel]]:
    """(format, kernels) of a `FORMAT:PATH` spec."""
    fmt, sep, path = spec.partition(":")
    if not sep or fmt not in FORMATS:
        raise PublishedSetError(f"--published {spec}: expected FORMAT:PATH with FORMAT one of {', '.join(FORMATS)} "
                                f"(e.g. cuda-l1:optimized_cuda_code/h100.json)")
    p = Path(path)
    if not p.is_file():
        raise PublishedSetError(f"--published {spec}: no such file {path}")
    kernels = FORMATS[fmt](p)
    seen = set()
    for k in kernels:
        if (k.level, k.task_id) in seen:
            raise PublishedSetError(f"--published {spec}: level {k.level} task {k.task_id} appears twice")
        seen.add((k.level, k.task_id))
    return fmt, kernels


@dataclass
class Materialized:
    tasks: Path
    candidates: Path
    claims: dict[str, dict[str, float]]  # the task file's resolved path -> baseline -> claimed speedup


def materialize(fmt: str, kernels: list[PublishedKernel], root: Path) -> Materialized:
    """Write the set under `root/<format>-<content hash>/` (the same set is written once) as task and candidate
    folders in KernelBench's layout."""
    digest = hashlib.sha256(json.dumps([[k.level, k.task_id, k.task_text, k.kernel_text] for k in kernels])
                            .encode()).hexdigest()[:12]
    base = root / f"{fmt}-{digest}"
    tasks, cands = base / "tasks", base / "candidates"
    claims = {}
    for k in kernels:
        level = f"level{k.level}"
        for folder, text in ((tasks, k.task_text), (cands, k.kernel_text)):
            if text is None:
                continue
            target = folder / level / f"{k.stem}.py"
            target.parent.mkdir(parents=True, exist_ok=True)
            if not target.exists() or target.read_text() != text:
                target.write_text(text)
        claims[str((tasks / level / f"{k.stem}.py").resolve())] = k.claims
    cands.mkdir(parents=True, exist_ok=True)
    return Materialized(tasks, cands, claims)
