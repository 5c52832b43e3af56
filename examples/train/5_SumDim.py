"""A plain-PyTorch ModelNew for examples/kernelbench/tasks/5_SumDim.py: correct on any device, so CPU dry runs
of `kernelrl train` (examples/train_smoke.yaml) have a KernelBench kernel that verifies, as a seed and as the
random model's whole-file token."""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.sum(dim=self.dim, keepdim=True)
