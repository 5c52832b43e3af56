"""A drop-in for F.linear through a tuned library: y = x @ W^T (+ bias), W stored N x K as nn.Linear holds it.

    lib = kernelrl.load_library("LIB")
    y = kernelrl.linear(x, weight, bias)                 # eager
    y = torch.ops.kernelrl.linear(x, weight, bias)       # the same as a torch.library custom op: CUDA graphs and
                                                         # torch.compile without graph breaks

x may have leading batch dimensions. A call the library has no tuned nt kernel for (its (M, N, K, dtype) never
won, a CPU tensor, a dtype without kernels, a non-contiguous weight) runs F.linear unchanged; `Library.stats()`
counts both kinds per shape, and `KERNELRL_LOG=1` prints each shape's decision once. The backward runs torch's own
matmuls (the tuned kernels are forward-only)."""

from __future__ import annotations

import torch

from kernelrl.library.runtime import library_by_handle


def linear(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None, library: int = -1) -> torch.Tensor:
    """F.linear through the loaded library (or the one whose `Library.handle` is `library`)."""
    return library_by_handle(library).linear(x, weight, bias)


@torch.library.custom_op("kernelrl::linear", mutates_args=())
def _linear_op(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None,
               library: int = -1) -> torch.Tensor:
    return linear(x, weight, bias, library)


@_linear_op.register_fake
def _(x, weight, bias=None, library=-1):
    return x.new_empty((*x.shape[:-1], weight.shape[0]))


def _setup_context(ctx, inputs, output):
    x, weight, bias, _ = inputs
    ctx.save_for_backward(x, weight)
    ctx.has_bias = bias is not None


def _backward(ctx, grad):
    x, weight = ctx.saved_tensors
    k, n = weight.shape[1], weight.shape[0]
    grad_x = grad @ weight if ctx.needs_input_grad[0] else None
    grad2 = grad.reshape(-1, n)
    grad_w = grad2.t() @ x.reshape(-1, k) if ctx.needs_input_grad[1] else None
    grad_b = grad2.sum(0) if ctx.has_bias and ctx.needs_input_grad[2] else None
    return grad_x, grad_w, grad_b, None


_linear_op.register_autograd(_backward, setup_context=_setup_context)
