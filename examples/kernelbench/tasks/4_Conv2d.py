import torch
import torch.nn as nn


class Model(nn.Module):
    """A 3x3 2D convolution, stride 1, padding 1."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int = 3):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=kernel_size // 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(x)


BATCH, IN_CHANNELS, OUT_CHANNELS, HEIGHT, WIDTH = 8, 32, 64, 32, 32


def get_inputs():
    return [torch.randn(BATCH, IN_CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS, 3]
