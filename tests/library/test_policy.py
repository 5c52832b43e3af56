"""kernelrl/library/policy.py, the one dispatch rule: the tuner's fallback and margin, the kernels an off-grid
call may take (nt: nearest tuned M at or above, the same N and K; nn: nearest in log distance), `route` (what serves
a call, and why), `tables` (a manifest read back) and `decide` (the tuner's answer); and the runtime, the bench's plan
and `library info` agreeing on one manifest."""

from kernelrl.library.policy import (ALIGN, FALLBACK_WON, KERNEL, LT, NEAREST, NOT_USABLE, NOTHING_NEAR, TORCH, TUNED,
                                     decide, dispatches_kernel, fallback, off_grid, route, tables)


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


# -- route: what serves a call, and why -----------------------------------------------------------------------------
TABLE = {key(64, 4096, 4096, "nt"): "own", key(128, 4096, 4096, "nt"): None, key(256, 4096, 4096, "nt"): "gone",
         key(512, 4096, 4096, "nt"): "big"}
LT_KEYS = {key(128, 4096, 4096, "nt"), key(256, 4096, 4096, "nt")}


def built(name):
    return name != "gone"


def test_a_tuned_shape_runs_its_own_kernel_when_it_is_usable():
    r = route(key(64, 4096, 4096, "nt"), TABLE, LT_KEYS, usable=built)
    assert (r.kind, r.name, r.reason, r.kernel) == (KERNEL, "own", TUNED, "own")


def test_a_tuned_shape_whose_fallback_won_runs_the_stored_cublaslt():
    r = route(key(128, 4096, 4096, "nt"), TABLE, LT_KEYS, usable=built)
    assert (r.kind, r.name, r.reason, r.kernel) == (LT, "cublaslt_auto_tn", FALLBACK_WON, None)


def test_a_tuned_shape_whose_fallback_won_without_cublaslt_runs_the_yardstick():
    r = route(key(128, 4096, 4096, "nt"), TABLE, set(), usable=built)
    assert (r.kind, r.name, r.reason) == (TORCH, None, FALLBACK_WON) and "F.linear" in r.detail


def test_a_tuned_kernel_that_is_not_usable_gives_way_to_the_stored_cublaslt():
    r = route(key(256, 4096, 4096, "nt"), TABLE, LT_KEYS, usable=built)
    assert (r.kind, r.name, r.reason) == (LT, "cublaslt_auto_tn", NOT_USABLE) and "gone" in r.detail


def test_a_tuned_kernel_that_is_not_usable_without_cublaslt_gives_way_to_the_yardstick():
    r = route(key(64, 64, 64, "nn"), {key(64, 64, 64, "nn"): "gone"}, set(), usable=built)
    assert (r.kind, r.name, r.reason) == (TORCH, None, NOT_USABLE) and "torch.matmul" in r.detail


def test_off_the_grid_the_nearest_usable_kernel_that_supports_the_shape_serves():
    r = route(key(65, 4096, 4096, "nt"), TABLE, LT_KEYS, usable=built)  # 128: the fallback; 256: not built
    assert (r.kind, r.name, r.reason) == (KERNEL, "big", NEAREST)
    r = route(key(65, 4096, 4096, "nt"), TABLE, LT_KEYS, usable=built, supports=lambda name: name != "big")
    assert (r.kind, r.reason) == (TORCH, NOTHING_NEAR)


def test_off_the_grid_a_call_never_takes_a_neighbour_s_cublaslt_algorithm():
    r = route(key(100, 4096, 4096, "nt"), {key(128, 4096, 4096, "nt"): None}, LT_KEYS)
    assert (r.kind, r.name, r.reason) == (TORCH, None, NOTHING_NEAR)


def test_supports_is_asked_off_the_grid_only():
    def refuse(name):
        raise AssertionError(f"supports({name}) asked on the grid")
    assert route(key(64, 4096, 4096, "nt"), TABLE, LT_KEYS, supports=refuse).kind == KERNEL


def test_each_route_says_which_pointer_bits_must_be_zero():
    assert ALIGN == {KERNEL: 15, LT: 255, TORCH: 0}
    assert route(key(64, 4096, 4096, "nt"), TABLE, LT_KEYS).align == 15
    assert route(key(128, 4096, 4096, "nt"), TABLE, LT_KEYS).align == 255


# -- tables: a manifest read back ------------------------------------------------------------------------------------
def entry(m, layout="nt", dtype="fp16", kernel=None, lt=None):
    e = {"m": m, "n": 64, "k": 64, "acc": "fp32", "dtype": dtype, "layout": layout, "kernel": kernel,
         "dispatch": "kernel" if kernel else "fallback"}
    if lt:
        e["fallback"] = {"method": lt, "algo": "ab", "time_us": 1.0}
    return e


MANIFEST = {"shapes": {str(i): e for i, e in enumerate([
    entry(64, kernel="k", lt="cublaslt_auto_tn"),      # a kernel that won; its fallback was cuBLASLt
    entry(128, lt="cublaslt_auto_tn"),                 # cuBLASLt won
    entry(256),                                        # F.linear won
    entry(64, "nn", "bf16", lt="cublaslt_auto_nn"),    # cuBLASLt won, but hgemm calls none for bf16
    entry(64, "nn", "fp16", lt="cublaslt_auto_tn"),    # another layout's cuBLASLt: not this shape's fallback
])}}


def test_tables_read_the_dispatched_kernel_of_every_tuned_shape():
    table, _ = tables(MANIFEST, shim=True)
    assert table == {key(64, 64, 64, "nt", "fp16"): "k", key(128, 64, 64, "nt", "fp16"): None,
                     key(256, 64, 64, "nt", "fp16"): None, key(64, 64, 64, "nn", "bf16"): None,
                     key(64, 64, 64, "nn", "fp16"): None}


def test_tables_keep_a_cublaslt_algorithm_only_where_the_library_can_call_it():
    _, lt_algos = tables(MANIFEST, shim=True)
    assert lt_algos == {key(64, 64, 64, "nt", "fp16"): "ab", key(128, 64, 64, "nt", "fp16"): "ab"}
    assert tables(MANIFEST, shim=False)[1] == {}  # no lib/libkr_blas.so


# -- decide: the tuner's answer --------------------------------------------------------------------------------------
def test_the_tuner_dispatches_a_kernel_that_beats_its_fallback_by_the_margin():
    r = decide("nt", "k", 9.0, {"torch": 10.0, "cublaslt_auto_tn": 9.5}, "ab", 1.01)
    assert (r.kind, r.name, r.reason) == (KERNEL, "k", TUNED)


def test_the_tuner_sends_a_near_tie_to_the_faster_fallback():
    r = decide("nt", "k", 9.45, {"torch": 10.0, "cublaslt_auto_tn": 9.5}, "ab", 1.01)
    assert (r.kind, r.name, r.reason) == (LT, "cublaslt_auto_tn", FALLBACK_WON)
    assert decide("nn", None, None, {"torch": 10.0}, None, 1.01).kind == TORCH


# -- every reader of a library agrees ---------------------------------------------------------------------------------
def test_the_runtime_the_bench_and_library_info_route_alike(tmp_path):
    import json

    from kernelrl.library.bench import LibraryPlan
    from kernelrl.library.build import library_info
    from kernelrl.library.runtime import Library
    from kernelrl.workloads.hgemm import GemmProblem

    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "libkr_blas.so").write_text("stand-in")  # never loaded: nothing here is called
    manifest = {**MANIFEST, "kernels": {"k": {"library": None}}, "native": "lib/libkr_blas.so", "env": {}}
    (tmp_path / "manifest.json").write_text(json.dumps(manifest))
    lib = Library(tmp_path)
    expected = {(64, "nt", "fp16"): "cublaslt_auto_tn",  # k is not built: its cuBLASLt fallback
                (128, "nt", "fp16"): "cublaslt_auto_tn", (256, "nt", "fp16"): "F.linear",
                (64, "nn", "bf16"): "torch.matmul", (64, "nn", "fp16"): "torch.matmul"}
    assert {(m, layout, dtype): lib.runs(m, 64, 64, dtype, layout) for m, layout, dtype in expected} == expected
    problems = [GemmProblem(m, 64, 64, "fp32", layout=layout, dtype=dtype) for m, layout, dtype in expected]
    plan = LibraryPlan.make(tmp_path, problems)
    assert [plan.choice[key(p.m, 64, 64, layout=p.layout, dtype=p.dtype)] for p in problems] == \
        ["cublaslt_auto_tn", "cublaslt_auto_tn", None, None, None]
    info = "\n".join(library_info(tmp_path))
    assert "kernel k (not built: runs cublaslt_auto_tn)" in info  # it used to say "runs torch"
    assert "cublaslt_auto_nn (no cuBLASLt call for nn bf16: runs torch)" in info
