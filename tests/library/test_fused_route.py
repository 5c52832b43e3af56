"""Which kernel computes a fused gate/up GEMM (kernelrl.library.fused.swiglu_kernel), on stand-in kernels: the
library's own choice for (M, 2I, K), else, where that shape was never tuned, the kernel of one projection's
(M, I, K); a shape whose tuning chose a fallback, or a kernel without the epilogue, stays unfused and says why."""

import json
import shutil
import subprocess

import pytest

from kernelrl.library import fused
from kernelrl.library.export import shape_key
from kernelrl.library.runtime import EPILOGUE_SWIGLU, Library

pytestmark = pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler")
M, INTER, K = 256, 384, 1024


def stand_in(tmp_path, name: str, fuses: bool) -> dict:
    """A kernel's exports as the runtime reads them (never called on the CPU); `fuses`: its SwiGLU answer."""
    src = tmp_path / f"{name}.c"
    src.write_text('const char* kernelrl_hgemm_b_layout(void) { return "nk"; }\n'
                   "int kernelrl_hgemm_supports(int m, int n, int k) { return 1; }\n"
                   "int kernelrl_hgemm(void) { return 0; }\n"
                   "int kernelrl_hgemm_ex(void) { return 0; }\n"
                   f"int kernelrl_hgemm_epilogue_supports(int m, int n, int k, int f) {{ return {int(fuses)}; }}\n")
    (tmp_path / "lib").mkdir(exist_ok=True)
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(tmp_path / "lib" / f"lib{name}.so"), str(src)], check=True)
    return {"family": "stand-in", "acc": "fp32", "params": {}, "name": name, "library": f"lib/lib{name}.so"}


def library(tmp_path, entries, declines=()) -> Library:
    """entries: (N, kernel name or None for a tuned fallback) at M, K; kernels named in `declines` have no SwiGLU."""
    kernels = {name: stand_in(tmp_path, name, name not in declines) for _, name in entries if name}
    shapes = {shape_key(M, n, K, "fp32", "bf16", "nt"): {
        "m": M, "n": n, "k": K, "acc": "fp32", "dtype": "bf16", "layout": "nt", "kernel": name,
        "dispatch": "kernel" if name else "fallback"} for n, name in entries}
    (tmp_path / "manifest.json").write_text(json.dumps({"shapes": shapes, "kernels": kernels, "env": {}}))
    return Library(tmp_path)


def choose(lib):
    kern, note = fused.swiglu_kernel(lib, M, 2 * INTER, K, "bf16", EPILOGUE_SWIGLU)
    return (kern.name if kern is not None else None), note


def test_the_fused_shape_s_own_kernel_runs_it(tmp_path):
    assert choose(library(tmp_path, [(2 * INTER, "own"), (INTER, "half")])) == ("own", "")


def test_an_untuned_fused_shape_borrows_one_projection_s_kernel_and_says_so(tmp_path):
    kern, note = choose(library(tmp_path, [(INTER, "half")]))
    assert kern == "half" and \
        note == f"the kernel of one projection's {M}x{INTER}x{K} (none tuned for {M}x{2 * INTER}x{K})"


def test_a_fused_shape_whose_tuning_chose_the_fallback_is_not_overruled(tmp_path):
    assert choose(library(tmp_path, [(2 * INTER, None), (INTER, "half")])) == (None, f"the library runs F.linear for "
                                                                             f"{M}x{2 * INTER}x{K}")


def test_a_kernel_without_the_epilogue_is_not_used_for_it(tmp_path):
    assert choose(library(tmp_path, [(2 * INTER, "own")], declines={"own"})) == (
        None, "own has no SwiGLU epilogue for this shape")
    assert choose(library(tmp_path, [(INTER, "half")], declines={"half"}))[0] is None


def test_with_nothing_tuned_near_it_the_reason_names_both_shapes(tmp_path):
    assert choose(library(tmp_path, [])) == (None, f"no kernel tuned for {M}x{2 * INTER}x{K} or for one projection's "
                                                   f"{M}x{INTER}x{K}")
