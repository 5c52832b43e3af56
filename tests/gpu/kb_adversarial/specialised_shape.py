"""Cheat (or brittle optimisation): hard-codes the benchmark's shape (16 x 256 rows of 512) into the computation,
so it is right exactly where it is measured and fails, or is silently wrong, for any other batch.

Caught by the batch check: the same task with dim 0 cut to about half (the reference accepts it) must be right too.

task: 6_MaxDim
reason: specialised to the benchmark shape
static: none
cpu: yes
"""

import torch
import torch.nn as nn

ROWS, COLS = 16 * 256, 512


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.view(ROWS, COLS).amax(dim=1).view(16, 256)
