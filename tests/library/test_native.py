"""The C++ dispatch fast path without a GPU: it builds with the local compiler against the installed torch, keeps a
plan table, and declines every call it does not know (so the Python path decides). One build (about 50 s)."""

import pytest
import torch

from kernelrl.library import native


@pytest.fixture(scope="module")
def module():
    mod = native.load()  # into $KERNELRL_CACHE/torch_extensions, reused by later runs
    if mod is None:
        pytest.skip(f"the fast path does not build here: {native.failure()}")
    return mod


def half(*shape):
    return torch.zeros(*shape, dtype=torch.float16)


def test_a_registered_plan_is_counted_and_cleared(module):
    plans = module.Plans()
    plans.add(64, 128, 256, 0, native.KERNEL, 1, 0, 0, 0, 0, 15)
    assert len(plans) == 1
    plans.clear()
    assert len(plans) == 0


def test_a_cpu_call_is_declined_even_for_a_registered_shape(module):
    plans = module.Plans()
    plans.add(64, 128, 256, 0, native.KERNEL, 1, 0, 0, 0, 0, 15)
    assert plans.run(half(64, 256), half(256, 128)) is None


def test_shapes_too_large_for_the_table_are_left_to_python(module):
    plans = module.Plans()
    plans.add(1 << 21, 64, 64, 0, native.KERNEL, 1, 0, 0, 0, 0, 15)
    assert len(plans) == 0


def test_an_unknown_plan_kind_is_refused(module):
    with pytest.raises(RuntimeError, match="unknown plan kind"):
        module.Plans().add(64, 64, 64, 0, 7, 1, 0, 0, 0, 0, 15)


def test_the_build_name_follows_the_source_and_torch_version():
    assert native.build_name().startswith("kernelrl_fastpath_") and native.build_name() == native.build_name()


def test_it_can_be_switched_off(monkeypatch):
    monkeypatch.setenv("KERNELRL_FASTPATH", "0")
    assert not native.enabled()


def test_the_runtime_registers_a_decided_shape_in_the_table(module, tmp_path):
    import json

    from kernelrl.library.runtime import Library

    class Decided:
        def native(self):
            return native.KERNEL, 1234, 0, 0

    (tmp_path / "manifest.json").write_text(json.dumps({"shapes": {}, "kernels": {}}))
    lib = Library(tmp_path)
    lib._register_native(64, 128, 256, 0, Decided(), None, 0, 15)
    assert len(lib._plans) == 1


def test_a_torch_fallback_plan_is_accepted(module):
    plans = module.Plans()
    plans.add(64, 64, 64, 0, native.TORCH, 0, 0, 0, 0, 0, 0)
    assert len(plans) == 1


def test_a_cached_build_loads_without_ninja(module, monkeypatch):
    """Worker processes load the build their parent made; they may have no ninja on PATH."""
    from torch.utils import cpp_extension
    monkeypatch.setattr(cpp_extension, "load", lambda *a, **k: pytest.fail("rebuilt instead of importing"))
    assert hasattr(native._build(None), "Plans")


def test_linear_plans_report_their_shape_kind_and_calls(module):
    plans = module.Plans()
    plans.add_linear(1, 8, 1024, 4096, 0, native.KERNEL, 1, 0, 0, 0, 0, 15, 0)
    plans.add_linear(0, 2048, 4096, 4096, 0, native.TORCH, 0, 0, 0, 0, 0, 15, 0)
    assert sorted(plans.linear_counts()) == [(0, 2048, 4096, 4096, 0, native.TORCH, 0),
                                             (1, 8, 1024, 4096, 0, native.KERNEL, 0)]
    plans.clear()
    assert plans.linear_counts() == []


def test_a_cpu_linear_is_declined_even_for_a_registered_shape(module):
    plans = module.Plans()
    plans.add_linear(0, 8, 128, 256, 0, native.TORCH, 0, 0, 0, 0, 0, 15, 0)
    assert plans.linear(half(8, 256), half(128, 256)) is None
    assert plans.linear_counts()[0][-1] == 0  # a declined call is not counted


def test_a_linear_plan_of_an_unknown_dtype_is_refused(module):
    with pytest.raises(RuntimeError, match="unknown linear dtype"):
        module.Plans().add_linear(2, 8, 128, 256, 0, native.TORCH, 0, 0, 0, 0, 0, 15, 0)


def test_the_runtime_counts_fast_path_linear_calls_in_stats(module, tmp_path):
    import json

    from kernelrl.library.runtime import Library

    (tmp_path / "manifest.json").write_text(json.dumps({"shapes": {}, "kernels": {}}))
    lib = Library(tmp_path)
    lib._register_linear("bf16", 8, 1024, 4096, 0, None, None, 0, 0)
    assert lib.stats() == {(8, 1024, 4096, "bf16", "nt"): {"kernel": None, "calls": 0, "fallbacks": 0}}


def test_a_linear_plan_may_be_cublaslt_and_nothing_else_unknown(module):
    plans = module.Plans()
    plans.add_linear(1, 64, 64, 64, 0, native.LT, 1, 2, 3, 0, 0, 255, 0)
    assert plans.linear_counts() == [(1, 64, 64, 64, 0, native.LT, 0)]
    with pytest.raises(RuntimeError, match="unknown plan kind"):
        plans.add_linear(1, 64, 64, 64, 0, 7, 1, 0, 0, 0, 0, 15, 0)
