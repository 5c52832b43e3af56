"""kernelrl/library/policy.py, the one dispatch rule: the tuner's fallback and margin, and the kernels an off-grid
call may take (nt: nearest tuned M at or above, the same N and K; nn: nearest in log distance)."""

from kernelrl.library.policy import dispatches_kernel, fallback, off_grid


def key(m, n, k, layout="nt", dtype="bf16"):
    return (m, n, k, "fp32", dtype, layout)


def test_the_fallback_is_cublaslt_only_with_a_stored_algorithm_and_a_faster_time():
    measured = {"torch": 10.0, "cublaslt_auto_tn": 9.0}
    assert fallback("nt", measured, "ab") == "cublaslt_auto_tn"
    assert fallback("nt", measured, None) == "torch"  # no algorithm stored: the library cannot call it
    assert fallback("nt", {"torch": 8.0, "cublaslt_auto_tn": 9.0}, "ab") == "torch"
    assert fallback("nn", measured, "ab") == "torch"  # the nn fallback is cublaslt_auto_nn, not measured here


def test_a_kernel_must_beat_its_fallback_by_more_than_the_margin():
    assert dispatches_kernel(9.0, 10.0, 1.01) and not dispatches_kernel(9.95, 10.0, 1.01)
    assert dispatches_kernel(9.0, None, 1.01) and not dispatches_kernel(None, 10.0, 1.01)


def test_off_grid_nt_calls_look_at_or_above_their_m_with_the_same_weight():
    table = {key(64, 4096, 4096): "a", key(512, 4096, 4096): "b", key(128, 1024, 4096): "c",
             key(256, 4096, 4096): None, key(1024, 4096, 4096, dtype="fp16"): "d"}
    assert off_grid(key(65, 4096, 4096), table) == ["b"]  # 64 is below; 256 sends to the fallback
    assert off_grid(key(1, 4096, 4096), table) == ["a", "b"]
    assert off_grid(key(513, 4096, 4096), table) == []


def test_off_grid_nn_calls_take_the_nearest_shapes_first():
    table = {key(64, 64, 64, "nn", "fp16"): "small", key(4096, 4096, 4096, "nn", "fp16"): "large"}
    assert off_grid(key(100, 100, 100, "nn", "fp16"), table) == ["small", "large"]
    assert off_grid(key(3000, 3000, 3000, "nn", "fp16"), table) == ["large", "small"]
