import torch
import torch.nn as nn


class Model(nn.Module):
    """Softmax over rows of 65536 columns (KernelBench's 23_Softmax draws its input uniform in [0, 1) too): every
    output is near 1 / 65536 = 1.5e-5, below fp32's atol of 1e-4, so all zeros pass atol = rtol alone."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x, dim=-1)


BATCH, DIM = 16, 65536


def get_inputs():
    return [torch.rand(BATCH, DIM)]


def get_init_inputs():
    return []
