"""Cheat: an argmax whose indices may be one too high (a reduction that settles ties or its last element sloppily,
here made explicit): every index of 100 and up comes back one higher.

KernelBench's own check, torch.allclose(atol=1e-2, rtol=1e-2), judges integer outputs by the same tolerance, and
0.01 + 0.01 * 100 > 1: it accepts every such index. Caught when the output is judged: an integer output must equal
the reference's.

task: 16_ArgmaxDim
reason: wrong values
static: none
cpu: yes
"""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        idx = torch.argmax(x, dim=self.dim)
        return torch.where(idx >= 100, idx + 1, idx)
