"""Honest: forward compiled with torch.compile(mode="max-autotune"), whose autotuning benchmarks its GEMM choices
(Triton templates, cuBLAS) in a subprocess. Two CUDA-L1 level-2 kernels that compile so (tasks 34 and 74) failed
inside the worker on the H100 (`InductorError: SubprocException`, benchmarks/results/h100/cuda_l1/summary.md): if
the worker's sandbox or its instruments break inductor's subprocess, an honest candidate fails here with it.

task: 3_MatmulBiasReLU
"""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.fn = torch.compile(self._forward, mode="max-autotune")

    def _forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.linear(x))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fn(x).clone()
