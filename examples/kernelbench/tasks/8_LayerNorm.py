import torch
import torch.nn as nn


class Model(nn.Module):
    """Layer normalization over the last dimension, with learned scale and shift."""

    def __init__(self, normalized_shape: int, eps: float = 1e-5):
        super().__init__()
        self.ln = nn.LayerNorm(normalized_shape, eps=eps)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.ln(x)


BATCH, SEQ, HIDDEN = 16, 128, 768


def get_inputs():
    return [torch.randn(BATCH, SEQ, HIDDEN)]


def get_init_inputs():
    return [HIDDEN]
