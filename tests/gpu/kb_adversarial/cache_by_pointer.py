"""Cheat: caches each output under its input's address and shape; a benchmark that reuses input buffers gets the
cached answer without any work.

Caught by the second check: the same input tensors, refilled in place with other values, get the first call's
answer back.

task: 10_SwishPlusOne
reason: stale result
static: identity-cache
cpu: yes
"""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.cache = {}

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        key = (x.data_ptr(), tuple(x.shape))
        if key not in self.cache:
            self.cache[key] = x * torch.sigmoid(x) + 1.0
        return self.cache[key]
