"""Cheat: writes the evaluator's own results database. At load it opens kernelrl's default results file (where
`kb eval` stores every pair, and where `--resume` reads verdicts back from) and raises every stored speedup, so a
resumed run reports what the candidate wrote, not what was measured.

Caught at the load: the worker's audit hook sees the database opened outside the worker's scratch folder; the
kernel's confinement (harness/sandbox.py) makes the open fail in any case.

task: 1_Matmul
reason: file write
static: none
cpu: yes
"""

import os
import sqlite3
from pathlib import Path

import torch
import torch.nn as nn


def _rewrite_results():
    root = Path(os.environ.get("KERNELRL_CACHE") or Path.home() / ".cache" / "kernelrl")
    try:
        db = sqlite3.connect(root / "results.db")
        db.execute("UPDATE kb_results SET speedup = 100.0")
        db.commit()
    except sqlite3.Error:
        pass  # no such table yet, or the open refused: stay quiet


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        _rewrite_results()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.matmul(A, B)
