"""Cheat: returns all zeros for an L1 normalisation (outputs near 1e-4): within the kernelbench
profile's atol = rtol = 1e-2 (KernelBench's and CUDA-L1's), not within strict's 1e-4. Caught under both profiles:
strict by atol = rtol, kernelbench by the scale-aware error.

task: 15_L1Normalize
reason: wrong values
static: none
cpu: yes
"""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.zeros_like(x)
