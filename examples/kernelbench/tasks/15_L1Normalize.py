import torch
import torch.nn as nn


class Model(nn.Module):
    """Each row divided by its sum of absolute values (an L1 normalisation): outputs near 1e-4 in size, so a
    constant (or all zeros) passes atol = rtol = 1e-2 alone, and all zeros passes fp32's 1e-4 on most elements."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x / x.abs().sum(dim=-1, keepdim=True)


BATCH, DIM = 64, 16384


def get_inputs():
    return [torch.randn(BATCH, DIM)]


def get_init_inputs():
    return []
