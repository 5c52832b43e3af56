"""The fused gated MLP on the CPU (kernelrl/library/fused.py): the interleaved weight, the unfused path every CPU
call takes (and says once), the opt-in patch that keeps the model's state, and the bad-input lines. The kernel's
SwiGLU epilogue itself is tests/gpu/test_fused_mlp.py's."""

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import kernelrl
from kernelrl.library import fused
from kernelrl.library.runtime import LibraryError

from tests.library.test_linear import empty_library


@pytest.fixture
def lib(tmp_path):
    return empty_library(tmp_path)


class GatedMLP(nn.Module):
    """A Llama MLP's structure (transformers' LlamaMLP has these four attributes and this forward)."""

    def __init__(self, hidden=16, inter=24, bias=False, act=None):
        super().__init__()
        self.gate_proj = nn.Linear(hidden, inter, bias=bias)
        self.up_proj = nn.Linear(hidden, inter, bias=bias)
        self.down_proj = nn.Linear(inter, hidden, bias=bias)
        self.act_fn = act or nn.SiLU()

    def forward(self, x):
        return self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))


def block(**kw):
    torch.manual_seed(0)
    return nn.Sequential(GatedMLP(**kw), nn.LayerNorm(16))


def test_interleave_alternates_gate_and_up_rows():
    gate, up = torch.arange(6.0).reshape(3, 2), -torch.arange(6.0).reshape(3, 2)
    w = fused.interleave(gate, up)
    assert torch.equal(w[0::2], gate) and torch.equal(w[1::2], up) and w.shape == (6, 2)


@pytest.mark.parametrize("bias", [False, True])
def test_a_cpu_call_is_the_unfused_gated_product(lib, bias):
    x, gate, up = torch.randn(2, 5, 16), torch.randn(24, 16), torch.randn(24, 16)
    bg, bu = (torch.randn(24), torch.randn(24)) if bias else (None, None)
    b_gu = fused.interleave(bg, bu) if bias else None
    h = fused.gate_up_silu(lib, x, fused.interleave(gate, up), b_gu)
    assert torch.allclose(h, F.silu(F.linear(x, gate, bg)) * F.linear(x, up, bu), atol=1e-6, rtol=1e-5)
    assert lib.fused_calls == {(10, 48, 16, "float32"): [0, 1]}


def test_an_unfused_shape_is_said_once(lib, capsys):
    x, w = torch.randn(4, 16), torch.randn(48, 16)
    for _ in range(3):
        fused.gate_up_silu(lib, x, w)
    lines = [line for line in capsys.readouterr().err.splitlines() if "gate/up" in line]
    assert len(lines) == 1 and "4x48x16" in lines[0] and "unfused" in lines[0]
    assert lib.fused_calls[(4, 48, 16, "float32")] == [0, 3]


@pytest.mark.parametrize("x, w, b, words", [
    (torch.randn(4, 16), torch.randn(47, 16), None, "(2I, K)"),
    (torch.randn(4, 15), torch.randn(48, 16), None, "x.shape[-1] == K"),
    (torch.randn(4, 16), torch.randn(48, 16).double(), None, "one dtype"),
    (torch.randn(4, 16), torch.randn(48, 16), torch.randn(24), "interleaved like w_gu"),
])
def test_bad_input_is_one_library_error_line(lib, x, w, b, words):
    with pytest.raises(LibraryError) as err:
        fused.gate_up_silu(lib, x, w, b)
    assert words in str(err.value) and "\n" not in str(err.value)


def test_only_gated_silu_mlps_are_fusable():
    assert fused.fusable(GatedMLP()) and fused.fusable(GatedMLP(bias=True))
    assert not fused.fusable(GatedMLP(act=nn.GELU()))
    assert not fused.fusable(nn.Linear(4, 4))
    odd = GatedMLP()
    odd.up_proj = nn.Linear(16, 8, bias=False)
    assert not fused.fusable(odd)


class HandWrittenSilu(nn.Module):  # transformers' SiLUActivation is such a class: not nn.SiLU, computes SiLU
    def forward(self, x):
        return F.silu(x)


class ClippedSilu(nn.Module):  # SiLU on [-4, 4] only: not the function the epilogue computes
    def forward(self, x):
        return F.silu(x.clamp(-4, 4))


def test_an_activation_is_fusable_by_what_it_computes_not_its_class():
    assert fused.fusable(GatedMLP(act=HandWrittenSilu()))
    assert not fused.fusable(GatedMLP(act=ClippedSilu()))


def test_transformers_llama_mlp_is_fusable():
    transformers = pytest.importorskip("transformers")
    config = transformers.LlamaConfig(hidden_size=16, intermediate_size=24, num_attention_heads=2,
                                      num_key_value_heads=1, num_hidden_layers=1, vocab_size=32)
    assert fused.fusable(transformers.models.llama.modeling_llama.LlamaMLP(config))


@pytest.mark.parametrize("bias", [False, True])
def test_patch_fuses_the_mlp_and_keeps_its_answer_and_state(lib, bias):
    m, x = block(bias=bias), torch.randn(3, 16)
    with torch.no_grad():
        ref, state = m(x), {k: v.clone() for k, v in m.state_dict().items()}
        names = kernelrl.patch(m, lib, fuse_mlp=True)
        assert names[0] == "0" and isinstance(m[0], fused.FusedGatedMLP) and isinstance(m[0], GatedMLP)
        assert torch.allclose(m(x), ref, atol=1e-6, rtol=1e-5)
    assert m.state_dict().keys() == state.keys()
    assert all(torch.equal(m.state_dict()[k], v) for k, v in state.items())
    w_gu = m[0].kernelrl_gate_up  # one tensor holds both weights: no second copy
    assert m[0].gate_proj.weight.data_ptr() == w_gu.data_ptr() and torch.equal(w_gu[1::2], state["0.up_proj.weight"])
    assert lib.fused_calls[(3, 48, 16, "float32")] == [0, 1]  # on the CPU: unfused, and counted


def test_unpatch_gives_back_the_module_s_class_and_contiguous_weights(lib):
    m = block()
    state = {k: v.clone() for k, v in m.state_dict().items()}
    kernelrl.patch(m, lib, fuse_mlp=True)
    assert "0" in kernelrl.unpatch(m)
    assert type(m[0]) is GatedMLP and not hasattr(m[0], "kernelrl_gate_up")
    assert m[0].gate_proj.weight.is_contiguous() and m[0].up_proj.weight.is_contiguous()
    assert all(torch.equal(m.state_dict()[k], v) for k, v in state.items())


def test_with_a_gradient_the_module_s_own_forward_runs(lib):
    m, x = block(), torch.randn(3, 16)
    kernelrl.patch(m, lib, fuse_mlp=True)
    m(x).sum().backward()
    assert m[0].gate_proj.weight.grad is not None and m[0].up_proj.weight.grad is not None
    assert lib.fused_calls == {}  # the fused path was not taken


def test_a_fused_mlp_whose_weights_were_replaced_interleaves_them_again(lib):
    m, x = block(), torch.randn(3, 16, dtype=torch.float64)
    kernelrl.patch(m, lib, fuse_mlp=True)
    m.to(torch.float64)  # new tensors: gate's and up's weights are no longer views into the interleaved one
    with torch.no_grad():
        new_gate = torch.randn_like(m[0].gate_proj.weight)
        m[0].gate_proj.weight = nn.Parameter(new_gate)
        y = m(x)
        mlp = m[0]
        ref = mlp.down_proj(F.silu(F.linear(x, new_gate)) * mlp.up_proj(x))
    assert torch.allclose(y, m[1](ref)) and mlp.kernelrl_gate_up.dtype == torch.float64
    assert torch.equal(mlp.kernelrl_gate_up[0::2], new_gate)


def test_without_fuse_mlp_the_mlp_is_left_as_it_is(lib):
    m = block()
    kernelrl.patch(m, lib)
    assert type(m[0]) is GatedMLP


def test_a_fused_model_compiles_without_graph_breaks(lib):
    m, x = block(), torch.randn(4, 16)
    kernelrl.patch(m, lib, fuse_mlp=True)
    torch._dynamo.reset()
    with torch.no_grad():
        explained = torch._dynamo.explain(m)(x)
        assert explained.graph_break_count == 0
        assert torch.allclose(torch.compile(m, backend="aot_eager")(x), m(x), atol=1e-6)


def test_the_gate_up_op_passes_opcheck(lib):
    x, w = torch.randn(3, 16), torch.randn(48, 16)
    torch.library.opcheck(torch.ops.kernelrl.gate_up_silu.default, (x, w, None, lib.handle),
                          test_utils=("test_schema", "test_faketensor"))
