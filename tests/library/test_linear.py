"""The F.linear drop-in on the CPU: kernelrl.linear and torch.ops.kernelrl.linear (opcheck, autograd, no graph
breaks), patch/unpatch of a model's nn.Linear modules, the nt dispatch rule (nearest tuned M at or above, the same
N and K, an nk kernel), stats and the bad-input lines. CPU tensors never reach a kernel, so every call here that
is not a dispatch question runs F.linear, as a call without a tuned kernel does on the GPU."""

import json
import shutil
import subprocess

import pytest
import torch
from torch import nn

import kernelrl
from kernelrl.library.export import shape_key
from kernelrl.library.patch import KernelrlLinear
from kernelrl.library.runtime import Library, LibraryError


def empty_library(tmp_path) -> Library:
    (tmp_path / "manifest.json").write_text(json.dumps({"shapes": {}, "kernels": {}, "env": {}}))
    return kernelrl.load_library(tmp_path)


@pytest.fixture
def lib(tmp_path):
    return empty_library(tmp_path)


def model():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(16, 32), nn.GELU(), nn.Linear(32, 8, bias=False))


# -- the function and the op ---------------------------------------------------------------------------------

def test_linear_without_a_kernel_is_f_linear_and_is_counted(lib):
    x, w, b = torch.randn(2, 3, 16), torch.randn(8, 16), torch.randn(8)
    assert torch.equal(kernelrl.linear(x, w, b), torch.nn.functional.linear(x, w, b))
    assert lib.stats() == {(6, 8, 16, "float32", "nt"): {"kernel": None, "calls": 0, "fallbacks": 1}}


@pytest.mark.parametrize("shape, bias", [((4, 16), True), ((2, 3, 16), False), ((16,), True)])
def test_the_custom_op_passes_opcheck(lib, shape, bias):
    x = torch.randn(*shape, dtype=torch.float64, requires_grad=True)
    w = torch.randn(8, 16, dtype=torch.float64, requires_grad=True)
    b = torch.randn(8, dtype=torch.float64, requires_grad=True) if bias else None
    torch.library.opcheck(torch.ops.kernelrl.linear.default, (x, w, b))


def test_gradients_are_f_linear_s(lib):
    x = torch.randn(5, 16, dtype=torch.float64, requires_grad=True)
    w = torch.randn(8, 16, dtype=torch.float64, requires_grad=True)
    b = torch.randn(8, dtype=torch.float64, requires_grad=True)
    torch.ops.kernelrl.linear(x, w, b).square().sum().backward()
    ours = [t.grad.clone() for t in (x, w, b)]
    for t in (x, w, b):
        t.grad = None
    torch.nn.functional.linear(x, w, b).square().sum().backward()
    assert all(torch.allclose(a, t.grad) for a, t in zip(ours, (x, w, b)))


def test_without_a_loaded_library_linear_says_what_to_do(monkeypatch):
    from kernelrl.library import runtime
    monkeypatch.setattr(runtime, "_default", None)
    with pytest.raises(LibraryError, match="load_library"):
        kernelrl.linear(torch.randn(2, 4), torch.randn(3, 4))


@pytest.mark.parametrize("x, w, b, words", [
    (torch.randn(2, 4), torch.randn(3, 5), None, "shape mismatch"),
    (torch.randn(2, 4), torch.randn(3, 4, 1), None, "2-D weight"),
    (torch.randn(2, 4), torch.randn(3, 4).double(), None, "one dtype"),
    (torch.randn(2, 4), torch.randn(3, 4), torch.randn(4), "one value per output"),
])
def test_bad_input_is_one_library_error_line(lib, x, w, b, words):
    with pytest.raises(LibraryError) as caught:
        kernelrl.linear(x, w, b)
    assert words in str(caught.value) and "\n" not in str(caught.value)


# -- patch and unpatch ---------------------------------------------------------------------------------------

def test_patch_routes_every_linear_and_keeps_the_model_s_answer_and_state(lib):
    m, x = model(), torch.randn(4, 16)
    ref, params, keys = m(x), list(m.parameters()), list(m.state_dict())
    assert kernelrl.patch(m, lib) == ["0", "2"]
    assert all(type(mod) is KernelrlLinear for mod in (m[0], m[2]))
    assert torch.equal(m(x), ref)
    assert list(m.parameters()) == params and list(m.state_dict()) == keys  # the same Parameter objects
    assert kernelrl.unpatch(m) == ["0", "2"] and type(m[0]) is nn.Linear and torch.equal(m(x), ref)


def _ops_called(module, x) -> int:
    calls = []
    real = torch.ops.kernelrl.linear
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(torch.ops.kernelrl, "linear", lambda *a: calls.append(a) or real(*a))
        module(x)
    return len(calls)


def test_a_patched_module_skips_the_custom_op_when_no_gradient_is_needed(lib):
    m = model()
    kernelrl.patch(m, lib)
    with torch.no_grad():
        assert _ops_called(m, torch.randn(4, 16)) == 0
    assert _ops_called(m, torch.randn(4, 16)) == 2  # weights that need gradients: the op autograd knows


def test_patch_takes_only_what_the_filter_accepts(lib):
    m = model()
    assert kernelrl.patch(m, lib, filter=lambda name, mod: mod.bias is None) == ["2"]
    assert type(m[0]) is nn.Linear


def test_patch_leaves_subclasses_of_linear_and_patched_modules_alone(lib):
    class LoRALinear(nn.Linear):
        pass

    m = nn.Sequential(LoRALinear(4, 4), nn.Linear(4, 4))
    assert kernelrl.patch(m, lib) == ["1"]
    assert kernelrl.patch(m, lib) == []


def test_patch_wants_a_library():
    with pytest.raises(LibraryError, match="kernelrl Library"):
        kernelrl.patch(model(), "LIB")


def test_a_patched_model_compiles_without_graph_breaks(lib):
    m, x = model(), torch.randn(4, 16)
    kernelrl.patch(m, lib)
    torch._dynamo.reset()
    explained = torch._dynamo.explain(m)(x)
    assert explained.graph_break_count == 0 and explained.graph_count == 1
    assert torch.allclose(torch.compile(m, backend="aot_eager")(x), m(x))


# -- the nt dispatch rule ------------------------------------------------------------------------------------

needs_cc = pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler")


def kernel_library(tmp_path, name: str, b_layout: str, max_m: int = 1 << 30):
    """A stand-in kernel: the exports the runtime reads (it is never called on the CPU)."""
    src = tmp_path / f"{name}.c"
    src.write_text(f'const char* kernelrl_hgemm_b_layout(void) {{ return "{b_layout}"; }}\n'
                   f"int kernelrl_hgemm_supports(int m, int n, int k) {{ return m <= {max_m}; }}\n"
                   "int kernelrl_hgemm(void) { return 0; }\n")
    (tmp_path / "lib").mkdir(exist_ok=True)
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(tmp_path / "lib" / f"lib{name}.so"), str(src)], check=True)
    return {"family": "stand-in", "acc": "fp32", "params": {}, "name": name, "library": f"lib/lib{name}.so"}


def nt_library(tmp_path, entries):
    """entries: (M, N, K, kernel name or None); kernels named *_kn take B as K x N, the others as N x K."""
    kernels = {name: kernel_library(tmp_path, name, "kn" if name.endswith("_kn") else "nk",
                                    max_m=100 if name.endswith("_small") else 1 << 30)
               for _, _, _, name in entries if name}
    shapes = {shape_key(m, n, k, "fp32", "bf16", "nt"): {
        "m": m, "n": n, "k": k, "acc": "fp32", "dtype": "bf16", "layout": "nt", "kernel": name,
        "dispatch": "kernel" if name else "fallback"} for m, n, k, name in entries}
    (tmp_path / "manifest.json").write_text(json.dumps({"shapes": shapes, "kernels": kernels, "env": {}}))
    return Library(tmp_path)


@needs_cc
def test_nt_calls_take_the_kernel_of_the_nearest_tuned_m_at_or_above(tmp_path):
    lib = nt_library(tmp_path, [(64, 4096, 4096, "wide"), (512, 4096, 4096, "tall"), (512, 1024, 4096, "other")])
    assert lib.choose(64, 4096, 4096, dtype="bf16", layout="nt") == "wide"
    assert lib.choose(65, 4096, 4096, dtype="bf16", layout="nt") == "tall"
    assert lib.choose(513, 4096, 4096, dtype="bf16", layout="nt") is None  # nothing tuned at or above: F.linear
    assert lib.choose(64, 4096, 4096, dtype="fp16", layout="nt") is None  # another dtype's table


@needs_cc
def test_nt_dispatch_skips_kernels_that_decline_the_call_or_take_b_the_other_way(tmp_path):
    lib = nt_library(tmp_path, [(64, 256, 256, "k_small"), (128, 256, 256, "k_kn"), (256, 256, 256, "k_big")])
    assert lib.choose(32, 256, 256, dtype="bf16", layout="nt") == "k_small"
    assert lib.choose(120, 256, 256, dtype="bf16", layout="nt") == "k_big"  # k_small says no above M = 100
    assert lib.choose(128, 256, 256, dtype="bf16", layout="nt") is None  # k_kn would read W as K x N


@needs_cc
def test_runs_names_what_a_call_of_a_shape_runs(tmp_path):
    lib = nt_library(tmp_path, [(64, 256, 256, "k"), (128, 256, 256, None)])
    assert lib.runs(32, 256, 256, "bf16") == "k"  # the nearest tuned M at or above
    assert lib.runs(128, 256, 256, "bf16") == "F.linear"  # tuned, and the fallback won
    assert lib.runs(64, 256, 256, "fp16") == "F.linear"  # another dtype's table


@needs_cc
def test_kernelrl_log_says_each_decision_once(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("KERNELRL_LOG", "1")
    lib = nt_library(tmp_path, [(64, 256, 256, "k")])
    for _ in range(3):
        lib.choose(64, 256, 256, dtype="bf16", layout="nt")
    lib.choose(65, 256, 256, dtype="bf16", layout="nt")
    lines = capsys.readouterr().err.strip().splitlines()
    assert lines == ["kernelrl: 64x256x256 bf16 nt: k", "kernelrl: 65x256x256 bf16 nt: fallback (F.linear)"]


def test_manifest_keys_carry_dtype_and_layout_and_the_paper_s_keep_their_form():
    assert shape_key(64, 64, 64, "fp32") == "64x64x64:fp32"
    assert shape_key(64, 64, 64, "fp32", "bf16", "nt") == "64x64x64:fp32:bf16:nt"


def test_linear_writes_into_out_as_the_evaluator_calls_it(lib):
    x, w = torch.randn(4, 16), torch.randn(8, 16)
    out = torch.empty(4, 8)
    assert lib.linear(x, w, out=out) is out and torch.allclose(out, torch.nn.functional.linear(x, w))
    with pytest.raises(LibraryError, match="out must be"):
        lib.linear(x, w, torch.randn(8), out=out)
