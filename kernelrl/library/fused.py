"""A gated MLP's gate and up projections as one GEMM, SiLU(gate) * up computed in its epilogue.

    h = kernelrl.library.fused.gate_up_silu(lib, x, w_gu)      # silu(x @ gate^T) * (x @ up^T), w_gu interleaved
    kernelrl.patch(model, lib, fuse_mlp=True)                  # every Llama-style MLP through it (opt-in)

`w_gu` holds the gate and up weights interleaved row by row (row 2i is gate's row i, row 2i + 1 up's), so each
thread of the GEMM holds a (gate, up) pair of one output column in adjacent accumulators: C = M x I gets
silu(gate) * up from the fp32 sums with one rounding to 16 bits (the unfused path rounds gate and up, then SiLU's
output, then the product). The kernel is the library's tuned nt kernel of the (M, 2I, K) GEMM, or where that shape
was never tuned the kernel of one projection's (M, I, K) (`swiglu_kernel`, said once), where its kernelrl_hgemm_ex
computes the SwiGLU epilogue; any other call runs the same GEMM through `Library.linear` and then F.silu and a
multiply in PyTorch, said once per shape (never silently).

A patched MLP keeps its modules and state_dict: the gate and up weights become strided views into the one
interleaved tensor (no second copy), and the forward is the fused one only where no gradient is needed (the
kernels are forward-only); with a gradient it is the module's own forward."""

from __future__ import annotations

from typing import cast

import torch
import torch.nn.functional as F
from torch import nn

from kernelrl.library import policy
from kernelrl.library.runtime import EPILOGUE_BIAS, EPILOGUE_SWIGLU, Library, LibraryError, library_by_handle, say

_DTYPES = {torch.float16: "fp16", torch.bfloat16: "bf16"}


def interleave(gate: torch.Tensor, up: torch.Tensor) -> torch.Tensor:
    """The (2I, ...) tensor whose even rows are `gate`'s and odd rows `up`'s (weights I x K, or biases of I)."""
    if gate.shape != up.shape:
        raise LibraryError(f"gate is {tuple(gate.shape)} and up {tuple(up.shape)}: a gated MLP's two projections "
                           f"have one shape")
    return torch.stack((gate, up), dim=1).reshape(2 * gate.shape[0], *gate.shape[1:])


def gate_up_silu(library: Library, x: torch.Tensor, w_gu: torch.Tensor,
                 b_gu: torch.Tensor | None = None) -> torch.Tensor:
    """silu(x @ gate^T + b_gate) * (x @ up^T + b_up) from the interleaved weight (and bias): (..., I)."""
    _check(x, w_gu, b_gu)
    n2, k = w_gu.shape
    m = x.numel() // k if k else 0
    flags = EPILOGUE_SWIGLU | (EPILOGUE_BIAS if b_gu is not None else 0)
    dtype = _DTYPES.get(x.dtype)
    why = None
    if not (x.is_cuda and dtype is not None and m and w_gu.is_contiguous() and x.is_contiguous() and
            (b_gu is None or b_gu.is_contiguous())):
        why = "not a contiguous fp16/bf16 CUDA call"
    else:
        kern, why = swiglu_kernel(library, m, n2, k, dtype, flags)
        if kern is not None and (x.data_ptr() | w_gu.data_ptr() | (b_gu.data_ptr() if b_gu is not None else 0)) & \
                policy.ALIGN[policy.KERNEL]:
            why = "operands not aligned for the kernel"
        elif kern is not None:
            if why and library.note_once(("gate_up_silu", m, n2, k, dtype, "borrowed")):
                say(f"gate/up {m}x{n2}x{k} {dtype}: fused in {kern.name}, {why}")
            return _fused(library, kern, x, w_gu, b_gu, m, n2, k, flags)
    shape = (m, n2, k, dtype or str(x.dtype).removeprefix("torch."))
    library.count_fused(shape, fused=False)
    if library.note_once(("gate_up_silu", *shape)):
        say(f"gate/up {m}x{n2}x{k} {shape[3]}: unfused ({why}): the GEMM, then F.silu and a multiply")
    y = library.linear(x, w_gu, b_gu).unflatten(-1, (n2 // 2, 2))
    return F.silu(y[..., 0]) * y[..., 1]


def swiglu_kernel(library: Library, m: int, n2: int, k: int, dtype: str, flags: int):
    """(the kernel that computes the gate/up GEMM of (m, n2, k) with SwiGLU in its epilogue, a note) or (None, why
    not). The library's own choice for (m, n2, k) where it has one; where it has none (the shape was never tuned: a
    library tuned on the unfused model, whose gate and up GEMMs are (m, n2/2, k) each), the kernel it runs for one
    projection's GEMM, which the note then names. A shape whose tuning chose a fallback stays with that choice."""
    decided = library.route(m, n2, k, "fp32", dtype, "nt")
    kern = library.kernel(decided.kernel) if decided.kernel else None
    if kern is not None:
        if kern.fuses(m, n2, k, flags):
            return kern, ""
        return None, f"{decided.kernel} has no SwiGLU epilogue for this shape"
    if decided.reason not in (policy.NOTHING_NEAR, policy.NOT_USABLE):
        return None, f"the library runs {decided.name or 'F.linear'} for {m}x{n2}x{k}"
    half = library.route(m, n2 // 2, k, "fp32", dtype, "nt")
    kern = library.kernel(half.kernel) if half.kernel else None
    if kern is not None and kern.fuses(m, n2, k, flags):
        return kern, f"the kernel of one projection's {m}x{n2 // 2}x{k} (none tuned for {m}x{n2}x{k})"
    return None, f"no kernel tuned for {m}x{n2}x{k} or for one projection's {m}x{n2 // 2}x{k}"


def _fused(library, kern, x, w_gu, b_gu, m, n2, k, flags) -> torch.Tensor:
    out = torch.empty((*x.shape[:-1], n2 // 2), dtype=x.dtype, device=x.device)
    ws = library.workspace(x.device, kern.workspace(m, n2, k))
    ws_ptr, ws_size = (ws.data_ptr(), ws.numel()) if ws is not None else (None, 0)
    dev = x.get_device()
    with torch.cuda.device(dev):
        rc = kern.ex(x.data_ptr(), w_gu.data_ptr(), out.data_ptr(), b_gu.data_ptr() if b_gu is not None else None,
                     m, n2, k, flags, ws_ptr, ws_size, torch.cuda.current_stream(dev).cuda_stream)
    if rc:
        raise RuntimeError(f"kernelrl {kern.name} (SwiGLU epilogue) failed on {m}x{n2}x{k} with error {rc}")
    library.count_fused((m, n2, k, _DTYPES[x.dtype]), fused=True)
    return out


def _check(x, w_gu, b_gu) -> None:
    if not isinstance(x, torch.Tensor) or not isinstance(w_gu, torch.Tensor):
        raise LibraryError("gate_up_silu takes torch tensors x (..., K) and the interleaved weight (2I, K)")
    if w_gu.dim() != 2 or w_gu.shape[0] % 2 or x.dim() < 1 or x.shape[-1] != w_gu.shape[1]:
        raise LibraryError(f"x is {tuple(x.shape)} and w_gu {tuple(w_gu.shape)}: w_gu must be (2I, K) with "
                           f"x.shape[-1] == K (kernelrl.library.fused.interleave(gate, up) makes it)")
    if x.dtype != w_gu.dtype or x.device != w_gu.device:
        raise LibraryError(f"x is {x.dtype} on {x.device}, w_gu {w_gu.dtype} on {w_gu.device}: pass one dtype "
                           f"and device")
    if b_gu is not None and (tuple(b_gu.shape) != (w_gu.shape[0],) or b_gu.dtype != x.dtype or
                             b_gu.device != x.device):
        raise LibraryError(f"b_gu is {tuple(b_gu.shape)} {b_gu.dtype}: it must be ({w_gu.shape[0]},) {x.dtype}, "
                           f"interleaved like w_gu")


# -- the opt-in module ---------------------------------------------------------------------------------------------

def fusable(module: nn.Module) -> bool:
    """A Llama-style gated MLP: gate_proj, up_proj and down_proj nn.Linear modules (gate and up alike, with or
    without bias) and an act_fn that computes SiLU (nn.SiLU, or transformers' own SiLUActivation: judged by what it
    returns on a probe, not by its class), forward down_proj(act_fn(gate_proj(x)) * up_proj(x))."""
    gate, up, down = (getattr(module, name, None) for name in ("gate_proj", "up_proj", "down_proj"))
    if not (isinstance(gate, nn.Linear) and isinstance(up, nn.Linear) and isinstance(down, nn.Linear)):
        return False
    return (_is_silu(getattr(module, "act_fn", None)) and gate.weight.shape == up.weight.shape
            and (gate.bias is None) == (up.bias is None) and gate.weight.dtype == up.weight.dtype
            and gate.weight.device == up.weight.device)


_PROBE = torch.linspace(-12.0, 12.0, 97)


def _is_silu(act) -> bool:
    if isinstance(act, nn.SiLU):
        return True
    if not isinstance(act, nn.Module) or any(True for _ in act.parameters()):
        return False
    try:
        with torch.no_grad():
            return torch.equal(act(_PROBE.clone()), F.silu(_PROBE))
    except Exception:  # noqa: BLE001 - an activation that cannot take the probe is not one to fuse
        return False


class FusedGatedMLP(nn.Module):
    """The mixin a patched MLP's class gets (its own class stays a base, so isinstance and its other methods hold)."""

    kernelrl_library: int
    kernelrl_gate_up: torch.Tensor
    kernelrl_base: type
    gate_proj: nn.Linear
    up_proj: nn.Linear
    down_proj: nn.Linear

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        needs_grad = torch.is_grad_enabled() and (x.requires_grad or self.gate_proj.weight.requires_grad)
        if needs_grad:
            return super().forward(x)  # the module's own, unfused
        w_gu, b_gu = self._gate_up()
        if torch.compiler.is_compiling():
            h = torch.ops.kernelrl.gate_up_silu(x, w_gu, b_gu, self.kernelrl_library)
        else:
            h = gate_up_silu(library_by_handle(self.kernelrl_library), x, w_gu, b_gu)
        return self.down_proj(h)

    def _gate_up(self) -> tuple[torch.Tensor, torch.Tensor | None]:
        """The interleaved weight (and bias), made again where gate's or up's weight is no longer a view into it
        (a load_state_dict keeps the views; .to() or an assigned Parameter does not). Under torch.compile the
        check is not traced (data pointers are not graph values): the tensor is the one patch or the last eager
        call made, so after replacing a weight run one eager call (or patch again) before compiling."""
        gate, up = self.gate_proj, self.up_proj
        w_gu = self.kernelrl_gate_up
        if not torch.compiler.is_compiling() and not _views_into(gate.weight, up.weight, w_gu):
            _share(self)
            w_gu = self.kernelrl_gate_up
        b_gu = None if gate.bias is None else interleave(gate.bias, up.bias)
        return w_gu, b_gu


def _views_into(gate_w: torch.Tensor, up_w: torch.Tensor, w_gu: torch.Tensor) -> bool:
    return (gate_w.data_ptr() == w_gu.data_ptr() and up_w.data_ptr() == w_gu[1].data_ptr()
            and gate_w.stride() == up_w.stride() == (2 * w_gu.shape[1], 1) and gate_w.dtype == w_gu.dtype)


def _share(module: nn.Module) -> None:
    """One interleaved (2I, K) tensor holds both weights; gate's and up's Parameters become its even and odd rows
    (the same values, requires_grad kept)."""
    gate, up = _gate_and_up(module)
    with torch.no_grad():
        w_gu = interleave(gate.weight.detach(), up.weight.detach()).contiguous()
    gate.weight = nn.Parameter(w_gu[0::2], requires_grad=gate.weight.requires_grad)
    up.weight = nn.Parameter(w_gu[1::2], requires_grad=up.weight.requires_grad)
    module.register_buffer("kernelrl_gate_up", w_gu, persistent=False)  # state_dict keys stay the model's


def _gate_and_up(module: nn.Module) -> tuple[nn.Linear, nn.Linear]:
    return cast(nn.Linear, module.gate_proj), cast(nn.Linear, module.up_proj)


_FUSED_CLASSES: dict[type, type] = {}


def fuse(module: nn.Module, library: Library) -> None:
    """Make `module` (fusable) a FusedGatedMLP of its own class, routed through `library`."""
    cls = type(module)
    if cls not in _FUSED_CLASSES:
        _FUSED_CLASSES[cls] = type(f"Kernelrl{cls.__name__}", (FusedGatedMLP, cls), {"kernelrl_base": cls})
    _share(module)
    module.__class__ = _FUSED_CLASSES[cls]
    cast(FusedGatedMLP, module).kernelrl_library = library.handle


def unfuse(module: nn.Module) -> None:
    """Back to the module's own class; gate's and up's weights become contiguous tensors of their own again."""
    module.__class__ = cast(FusedGatedMLP, module).kernelrl_base
    for proj in _gate_and_up(module):
        proj.weight = nn.Parameter(proj.weight.detach().contiguous(), requires_grad=proj.weight.requires_grad)
    del module.kernelrl_gate_up
    del module.kernelrl_library


@torch.library.custom_op("kernelrl::gate_up_silu", mutates_args=())
def _gate_up_silu_op(x: torch.Tensor, w_gu: torch.Tensor, b_gu: torch.Tensor | None = None,
                     library: int = -1) -> torch.Tensor:
    return gate_up_silu(library_by_handle(library), x, w_gu, b_gu)


@_gate_up_silu_op.register_fake
def _(x, w_gu, b_gu=None, library=-1):
    return x.new_empty((*x.shape[:-1], w_gu.shape[0] // 2))
