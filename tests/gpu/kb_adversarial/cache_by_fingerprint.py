"""Cheat: caches each output under a cheap content fingerprint (eight sampled elements of each input and the
shape); a benchmark that repeats its inputs gets the cached answer after reading eight numbers.

Caught by the third check: a copy of the previous inputs with a few elements (secret positions) changed gets the
previous answer back. (Timed calls never repeat inputs either, so even a full-content hash would gain nothing.)

task: 11_GeluMul
reason: stale result
static: none
cpu: yes
"""

import torch
import torch.nn as nn
import torch.nn.functional as F


def _fingerprint(t: torch.Tensor) -> tuple:
    flat = t.reshape(-1)
    return tuple(t.shape) + tuple(flat[:: max(1, flat.numel() // 8)][:8].tolist())


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.cache = {}

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        key = _fingerprint(x) + _fingerprint(y)
        if key not in self.cache:
            self.cache[key] = F.gelu(x) * y
        return self.cache[key]
