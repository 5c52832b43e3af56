"""Route a model's nn.Linear modules through a tuned library, and back.

    kernelrl.patch(model, lib)                              # every nn.Linear (exactly that class)
    kernelrl.patch(model, lib, filter=lambda name, mod: "mlp" in name)
    kernelrl.patch(model, lib, fuse_mlp=True)               # also gated MLPs: gate and up as one GEMM,
                                                            # SiLU(gate) * up in its epilogue (library/fused.py)
    kernelrl.unpatch(model)                                 # the original modules, as they were

A patched module is the same module object's state under a subclass (`KernelrlLinear`): the same Parameter objects,
the same state_dict keys, hooks and training flag, so optimizers, checkpoints and `.to()` keep working. Its forward
is `torch.ops.kernelrl.linear` where torch.compile traces it or a gradient is needed and the library's own call
otherwise; both fall back to F.linear wherever the library has no kernel (swapping modules the way torchao's
`convert_to_float8_training` does)."""

from __future__ import annotations

from typing import Callable

import torch
from torch import nn

from kernelrl.library import fused
from kernelrl.library import linear as _linear  # noqa: F401 - registers torch.ops.kernelrl.linear
from kernelrl.library.runtime import Library, LibraryError, library_by_handle

Filter = Callable[[str, nn.Module], bool]


class KernelrlLinear(nn.Linear):
    """nn.Linear whose forward goes through a tuned library (`library` is its handle)."""

    kernelrl_library: int

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # The custom op is what torch.compile traces and autograd differentiates, but its Python dispatch costs
        # ~50-100 us a call: eager calls that need no gradient (inference, under no_grad or inference_mode) go
        # straight to the library, whose C++ fast path launches a decided shape in one call.
        needs_grad = torch.is_grad_enabled() and (x.requires_grad or self.weight.requires_grad)
        if torch.compiler.is_compiling() or needs_grad:
            return torch.ops.kernelrl.linear(x, self.weight, self.bias, self.kernelrl_library)
        return library_by_handle(self.kernelrl_library).linear(x, self.weight, self.bias)

    def extra_repr(self) -> str:
        return f"{super().extra_repr()}, kernelrl library {self.kernelrl_library}"


def patch(model: nn.Module, library: Library, filter: Filter | None = None, fuse_mlp: bool = False) -> list[str]:
    """Patch the nn.Linear modules of `model` (the model itself included) that `filter(name, module)` accepts;
    returns their names. Modules already patched and subclasses of nn.Linear (their forward may differ) are left
    as they are. With `fuse_mlp`, gated MLPs the filter accepts (fused.fusable: gate_proj, up_proj, down_proj and
    SiLU) also compute gate and up as one GEMM with SwiGLU in its epilogue; their names come first."""
    if not isinstance(library, Library):
        raise LibraryError(f"patch takes a kernelrl Library (kernelrl.load_library(LIB)); got {type(library).__name__}")
    names = []
    if fuse_mlp:
        for name, module in list(model.named_modules()):
            if fused.fusable(module) and not isinstance(module, fused.FusedGatedMLP) and \
                    (filter is None or filter(name, module)):
                fused.fuse(module, library)
                names.append(name)
    for name, module in list(model.named_modules()):
        if type(module) is not nn.Linear or (filter is not None and not filter(name, module)):
            continue
        module.__class__ = KernelrlLinear
        # a KernelrlLinear now, which mypy does not follow through __class__: it still sees nn.Linear's setattr
        module.kernelrl_library = library.handle  # type: ignore[assignment]
        names.append(name)
    return names


def unpatch(model: nn.Module) -> list[str]:
    """Make every patched module of `model` a plain nn.Linear (a fused MLP its own class) again; returns their
    names."""
    names = []
    for name, module in model.named_modules():
        if isinstance(module, fused.FusedGatedMLP):
            fused.unfuse(module)
            names.append(name)
        if type(module) is KernelrlLinear:
            module.__class__ = nn.Linear  # type: ignore[assignment]  # back to the class it was patched from
            del module.kernelrl_library
            names.append(name)
    return names
