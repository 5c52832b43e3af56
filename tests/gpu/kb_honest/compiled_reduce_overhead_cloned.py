"""Honest: forward compiled with torch.compile(mode="reduce-overhead") (CUDA graphs replaying a fused Triton
kernel), its output cloned before it is returned, as the verdict on compiled_reduce_overhead asks. Its graphs are
captured in the checks and replayed under the kernel census's profiler: the harness's instruments must not break
them.

task: 10_SwishPlusOne
"""

import torch
import torch.nn as nn


def _swish_plus_one(x: torch.Tensor) -> torch.Tensor:
    return x * torch.sigmoid(x) + 1.0


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.fn = torch.compile(_swish_plus_one, mode="reduce-overhead")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fn(x).clone()
