"""The tuner loop, the cost model and the tuned library, on the CPU: a made-up family and the dummy runner."""

import json

import pytest
import torch

from kernelrl.jobs.measure import NullUI
from kernelrl.library.runtime import Library, LibraryError
from kernelrl.space.base import SPACES, KernelSpace, Variant
from kernelrl.space.model import predict_us, rank, waves
from kernelrl.tune import TuneConfig, shortlist, tune
from kernelrl.workloads.hgemm import GemmProblem, parse_shapes


class ToySpace(KernelSpace):
    """Tiles and a speed label: the dummy runner makes `fast` kernels 0.8× torch's time and `slow` ones 2×."""

    family = "toy"
    knobs = {"tile": [64, 128, 256], "speed": ["fast", "slow"]}

    def check(self, v):
        return "256 tiles need the fast path" if v.p["tile"] == 256 and v.p["speed"] == "slow" else None

    def supports(self, v, problem):
        return None if problem.k % 8 == 0 else "K must be a multiple of 8"

    def resources(self, v):
        t = v.p["tile"]
        return {"threads": 256, "smem_bytes": 2 * 2 * t * 32 * 3, "tile": (t, t, 32), "split_k": 1, "stages": 3}

    def name_of(self, v):
        return f"toy_{v.acc}_{v.p['tile']}_{v.p['speed']}"

    def render(self, v):
        return f"// {self.name_of(v)}\nextern \"C\" int kernelrl_hgemm() {{ return 0; }}\n"


def test_points_skip_invalid_combinations():
    names = {v.name for v in SPACES["toy"].points("fp32")}
    assert "toy_fp32_256_slow" not in names and len(names) == 5


def test_wave_quantization_counts_a_partial_wave_as_whole():
    v = Variant.of("toy", "fp32", tile=128, speed="fast")  # 48 KiB smem, 256 threads: 4 CTAs per SM, 528 slots
    assert waves(v, GemmProblem(128 * 24, 128 * 22, 64)) == (528, 1, 1.0)
    ctas, n_waves, efficiency = waves(v, GemmProblem(128 * 24, 128 * 22 + 1, 64))
    assert (ctas, n_waves) == (552, 2) and efficiency == pytest.approx(552 / 1056)


def test_model_prefers_less_padding():
    problem = GemmProblem(64, 64, 4096)
    small, big = Variant.of("toy", "fp32", tile=64, speed="fast"), Variant.of("toy", "fp32", tile=256, speed="fast")
    assert predict_us(small, problem) < predict_us(big, problem)


def test_rank_drops_unsupported_shapes():
    assert rank(list(SPACES["toy"].points("fp32")), GemmProblem(64, 64, 12)) == []


def test_shortlist_adds_neighbour_winners():
    winner = Variant.of("toy", "fp32", tile=256, speed="fast")
    chosen = shortlist(GemmProblem(64, 64, 64), ["toy"], 1, {GemmProblem(64, 64, 128): winner}, neighbours=1)
    assert chosen[-1] == winner and len(chosen) == 2


def run_tune(tmp_path, shapes="64x64x64,128x128x128,4096x4096x4096", **kw):
    cfg = TuneConfig(problems=parse_shapes(shapes), families=["toy"], out=tmp_path / "lib", runner="dummy",
                     db_path=tmp_path / "t.db", top_k=kw.pop("top_k", 3), **kw)
    return tune(cfg, NullUI())


def test_tune_writes_a_manifest_with_the_fastest_verified_kernel(tmp_path):
    results = run_tune(tmp_path)
    manifest = json.loads((tmp_path / "lib" / "manifest.json").read_text())
    assert len(manifest["shapes"]) == 3
    for r in results:
        entry = manifest["shapes"][f"{r.problem.name}:fp32"]
        assert r.best.p["speed"] == "fast" and entry["dispatch"] == "kernel" and entry["kernel"] == r.best.name
        assert (tmp_path / "lib" / manifest["kernels"][r.best.name]["source"]).is_file()


class CountingUI(NullUI):
    def __init__(self):
        self.started = []

    def start_tasks(self, total, resumed):
        self.started.append((total, resumed))


def test_tune_resumes_from_the_database(tmp_path):
    first = run_tune(tmp_path)
    ui = CountingUI()
    cfg = TuneConfig(problems=parse_shapes("64x64x64,128x128x128,4096x4096x4096"), families=["toy"],
                     out=tmp_path / "lib", runner="dummy", db_path=tmp_path / "t.db", top_k=3)
    again = tune(cfg, ui)
    assert ui.started == [(0, 3), (0, 3)]  # nothing measured again: neither the screening nor the confirmation
    assert [r.best for r in again] == [r.best for r in first]


def test_a_kernel_slower_than_torch_is_not_dispatched(tmp_path):
    class SlowOnly(ToySpace):
        family = "toy_slow"
        knobs = {"tile": [64], "speed": ["slow"]}

        def name_of(self, v):
            return f"toyslow_{v.acc}_{v.p['tile']}"
    cfg = TuneConfig(problems=parse_shapes("64x64x64"), families=["toy_slow"], out=tmp_path / "lib", runner="dummy",
                     db_path=tmp_path / "t.db")
    tune(cfg, NullUI())
    entry = json.loads((tmp_path / "lib" / "manifest.json").read_text())["shapes"]["64x64x64:fp32"]
    assert entry["dispatch"] == "fallback" and entry["kernel"] == "toyslow_fp32_64"


def test_budget_stops_before_the_next_batch(tmp_path):
    results = run_tune(tmp_path, batch=1, budget_minutes=0.0)
    assert [r.best is not None for r in results] == [True, False, False]


def test_past_its_budget_a_rerun_reads_back_every_batch_the_database_holds(tmp_path):
    first = run_tune(tmp_path, batch=1)
    ui = CountingUI()
    cfg = TuneConfig(problems=parse_shapes("64x64x64,128x128x128,4096x4096x4096"), families=["toy"],
                     out=tmp_path / "lib", runner="dummy", db_path=tmp_path / "t.db", top_k=3, batch=1,
                     budget_minutes=0.0)
    again = tune(cfg, ui)
    assert [r.best for r in again] == [r.best for r in first] and all(r.best is not None for r in again)
    assert all(total == 0 for total, _ in ui.started)


def test_past_its_budget_a_batch_the_database_lacks_is_not_measured(tmp_path):
    run_tune(tmp_path, batch=1, budget_minutes=0.0)
    ui = CountingUI()
    cfg = TuneConfig(problems=parse_shapes("64x64x64,128x128x128,4096x4096x4096"), families=["toy"],
                     out=tmp_path / "lib", runner="dummy", db_path=tmp_path / "t.db", top_k=3, batch=1,
                     budget_minutes=0.0)
    again = tune(cfg, ui)
    assert [r.best is not None for r in again] == [True, False, False]
    assert all(total == 0 for total, _ in ui.started)


def from_db(tmp_path, shapes="64x64x64,128x128x128,4096x4096x4096", gpu="dummy", ui=None, batch=100):
    cfg = TuneConfig(problems=parse_shapes(shapes), families=["toy"], out=tmp_path / "again", runner="dummy",
                     db_path=tmp_path / "t.db", top_k=3, stored_gpu=gpu, batch=batch)
    tune(cfg, ui or NullUI())
    return json.loads((tmp_path / "again" / "manifest.json").read_text())["shapes"]


def test_a_library_written_from_the_database_alone_is_the_one_its_run_wrote(tmp_path):
    from kernelrl.db import Database
    run_tune(tmp_path)
    runs = Database(tmp_path / "t.db").conn.execute("SELECT COUNT(*) FROM runs").fetchone()[0]
    ui = CountingUI()
    again = from_db(tmp_path, ui=ui)
    first = json.loads((tmp_path / "lib" / "manifest.json").read_text())["shapes"]
    assert {k: (e["dispatch"], e["kernel"]) for k, e in again.items()} == \
        {k: (e["dispatch"], e["kernel"]) for k, e in first.items()}
    assert all(total == 0 for total, _ in ui.started)
    assert Database(tmp_path / "t.db").conn.execute("SELECT COUNT(*) FROM runs").fetchone()[0] == runs


def test_batches_the_database_lacks_stay_untuned_in_a_library_written_from_it(tmp_path):
    run_tune(tmp_path, shapes="64x64x64", batch=1)
    shapes = from_db(tmp_path, batch=1)
    assert shapes["64x64x64:fp32"]["dispatch"] == "kernel"
    assert [k for k, e in shapes.items() if e.get("status") == "not tuned yet"] == \
        ["128x128x128:fp32", "4096x4096x4096:fp32"]


def test_a_library_from_a_gpu_the_database_never_measured_is_one_clear_error(tmp_path):
    from kernelrl.jobs.measure import BenchError
    run_tune(tmp_path, shapes="64x64x64")
    with pytest.raises(BenchError, match="no measurements on a GPU named 'NVIDIA H100'.*'dummy'"):
        from_db(tmp_path, gpu="NVIDIA H100")


def test_shapes_left_by_the_budget_dispatch_to_torch(tmp_path):
    run_tune(tmp_path, batch=1, budget_minutes=0.0)
    shapes = json.loads((tmp_path / "lib" / "manifest.json").read_text())["shapes"]
    untuned = [s for s in shapes.values() if s.get("status") == "not tuned yet"]
    assert len(untuned) == 2 and all(s["dispatch"] == "fallback" for s in untuned)


def test_unknown_family_is_one_clear_error(tmp_path):
    from kernelrl.jobs.measure import BenchError
    with pytest.raises(BenchError, match="unknown kernel family"):
        tune(TuneConfig(problems=parse_shapes("64x64x64"), families=["nope"], out=tmp_path, runner="dummy"), NullUI())


# -- the library runtime ---------------------------------------------------------------------------------------------
def write_manifest(root, shapes, kernels=None):
    root.mkdir(parents=True, exist_ok=True)
    (root / "manifest.json").write_text(json.dumps({"shapes": shapes, "kernels": kernels or {}}))


def test_library_without_manifest_says_what_to_pass(tmp_path):
    with pytest.raises(LibraryError, match="kernelrl tune --out"):
        Library(tmp_path)


def test_shapes_without_a_loadable_kernel_fall_back_to_torch(tmp_path):
    write_manifest(tmp_path, {"64x64x64:fp32": {"m": 64, "n": 64, "k": 64, "acc": "fp32", "kernel": "k1",
                                                "dispatch": "kernel"}},
                   {"k1": {"library": "lib/libk1.so"}})
    lib = Library(tmp_path)
    assert lib.choose(64, 64, 64) is None
    a, b = torch.randn(64, 64).half(), torch.randn(64, 64).half()
    torch.testing.assert_close(lib.hgemm(a, b), torch.matmul(a, b))


@pytest.mark.parametrize("a, b, match", [
    (torch.randn(4, 8), torch.randn(8, 4), "float16"),
    (torch.randn(4, 8).half(), torch.randn(7, 4).half(), "shape mismatch"),
    (torch.randn(2, 4, 8).half(), torch.randn(8, 4).half(), "2-D"),
])
def test_bad_inputs_raise_one_clear_error(tmp_path, a, b, match):
    write_manifest(tmp_path, {})
    with pytest.raises(LibraryError, match=match):
        Library(tmp_path).hgemm(a, b)


def test_out_must_match(tmp_path):
    write_manifest(tmp_path, {})
    a, b = torch.randn(4, 8).half(), torch.randn(8, 4).half()
    with pytest.raises(LibraryError, match="out must be"):
        Library(tmp_path).hgemm(a, b, out=torch.empty(4, 5).half())


def test_custom_op_is_registered_with_a_fake_for_compile(tmp_path):
    import kernelrl
    write_manifest(tmp_path, {})
    kernelrl.load_library(tmp_path)
    a, b = torch.randn(3, 8).half(), torch.randn(8, 5).half()
    torch.testing.assert_close(torch.ops.kernelrl.hgemm(a, b), torch.matmul(a, b))
    from torch._subclasses.fake_tensor import FakeTensorMode
    with FakeTensorMode() as mode:
        out = torch.ops.kernelrl.hgemm(mode.from_tensor(a), mode.from_tensor(b))
    assert tuple(out.shape) == (3, 5)


# -- building ahead ----------------------------------------------------------------------------------------------------
def test_candidate_set_is_the_union_of_the_shortlists(tmp_path):
    from kernelrl.tune import candidate_set
    problems = parse_shapes("64x64x64,4096x4096x4096")
    cfg = TuneConfig(problems=problems, families=["toy"], out=tmp_path, top_k=2)
    expected = {v.name for p in problems for v in shortlist(p, ["toy"], 2, {}, 0)}
    assert set(candidate_set(cfg)) == expected


def test_prebuild_hands_every_candidate_to_the_builder_at_once(tmp_path):
    from kernelrl.build.builder import BuildResult
    from kernelrl.tune import candidate_set, prebuild

    class RecordingBuilder:
        def __init__(self):
            self.calls = []

        def build_many(self, requests, workers=None, on_done=None):
            self.calls.append([r.name for r in requests])
            return [BuildResult(name=r.name, key="k", ok=True) for r in requests]
    cfg = TuneConfig(problems=parse_shapes("64x64x64,4096x4096x4096"), families=["toy"], out=tmp_path, top_k=2)
    builder = RecordingBuilder()
    built = prebuild(cfg, NullUI(), builder=builder)
    assert len(builder.calls) == 1 and sorted(builder.calls[0]) == sorted(candidate_set(cfg))
    assert all(b.ok for b in built)


# -- a library measured as the method `kernelrl` ---------------------------------------------------------------------
def toy_library(root):
    """A library folder whose kernel `toy` runs 64x64x64 and loses to torch.matmul on 128x128x128."""
    (root / "lib").mkdir(parents=True)
    (root / "lib" / "libtoy.so").write_bytes(b"not loaded by the dummy runner")
    write_manifest(root, {
        "64x64x64:fp32": {"m": 64, "n": 64, "k": 64, "acc": "fp32", "kernel": "toy", "dispatch": "kernel"},
        "128x128x128:fp32": {"m": 128, "n": 128, "k": 128, "acc": "fp32", "kernel": "toy", "dispatch": "fallback"}},
        {"toy": {"library": "lib/libtoy.so"}})
    return root


def test_bench_library_reports_what_the_library_runs(tmp_path):
    from kernelrl.jobs.measure import BenchConfig, run_bench
    toy_library(tmp_path / "lib")
    cfg = BenchConfig(problems=parse_shapes("64x64x64,128x128x128"), modes=["device"], baselines=["torch"],
                      runner="dummy", db_path=tmp_path / "b.db", library=tmp_path / "lib")
    rows = run_bench(cfg, NullUI()).rows
    assert {r["method"] for r in rows} == {"torch", "kernelrl"}
    ours = {(r["m"], r["dispatch"]) for r in rows if r["method"] == "kernelrl"}
    assert ours == {(64, "toy"), (128, "torch.matmul")}
    torch_128 = next(r for r in rows if r["method"] == "torch" and r["m"] == 128)
    ours_128 = next(r for r in rows if r["method"] == "kernelrl" and r["m"] == 128)
    assert ours_128["time_us_median"] == torch_128["time_us_median"]


def test_bench_library_without_manifest_is_one_clear_error(tmp_path):
    from kernelrl.errors import UserError
    from kernelrl.jobs.measure import BenchConfig, run_bench
    cfg = BenchConfig(problems=parse_shapes("64x64x64"), modes=["device"], baselines=["torch"], runner="dummy",
                      db_path=tmp_path / "b.db", library=tmp_path / "nowhere")
    with pytest.raises(UserError, match="manifest.json"):
        run_bench(cfg, NullUI())


# -- the refinement round -------------------------------------------------------------------------------------------
class RefineToy(ToySpace):
    """Two speeds whose names sort slow first, so a one-point shortlist picks the slow one and only a refinement
    round (one knob step away) finds the fast one."""

    family = "toy_refine"
    knobs = {"tile": [64, 128], "speed": ["1slow", "2fast"]}

    def check(self, v):
        return None

    def name_of(self, v):
        return f"toyr_{v.acc}_{v.p['tile']}_{v.p['speed']}"


def test_neighbours_move_one_knob_one_step():
    v = Variant.of("toy_refine", "fp32", tile=64, speed="1slow")
    assert {n.name for n in SPACES["toy_refine"].neighbours(v)} == {"toyr_fp32_128_1slow", "toyr_fp32_64_2fast"}


def tune_64(tmp_path, family, **kw):
    """The manifest entry of 64x64x64 after tuning it with one toy family on the dummy runner."""
    cfg = TuneConfig(problems=parse_shapes("64x64x64"), families=[family], out=tmp_path / "lib", runner="dummy",
                     db_path=tmp_path / "t.db", **kw)
    tune(cfg, NullUI())
    return json.loads((tmp_path / "lib" / "manifest.json").read_text())["shapes"]["64x64x64:fp32"]


def refine_run(tmp_path, refine):
    return tune_64(tmp_path, "toy_refine", top_k=1, refine=refine)


def test_without_refinement_the_shortlist_winner_stays(tmp_path):
    assert refine_run(tmp_path, 0)["kernel"].endswith("1slow")


def test_refinement_finds_a_faster_neighbour_and_dispatches_to_it(tmp_path):
    entry = refine_run(tmp_path, 2)
    assert entry["kernel"].endswith("2fast") and entry["dispatch"] == "kernel"


def test_a_refined_run_resumes_without_measuring_anything_again(tmp_path):
    refine_run(tmp_path, 2)
    ui = CountingUI()
    cfg = TuneConfig(problems=parse_shapes("64x64x64"), families=["toy_refine"], out=tmp_path / "lib",
                     runner="dummy", db_path=tmp_path / "t.db", top_k=1, refine=2)
    tune(cfg, ui)
    assert ui.started and all(total == 0 for total, _ in ui.started)


def test_build_only_with_refinement_includes_the_winners_neighbours(tmp_path):
    from kernelrl.tune import candidate_set, prebuild
    refine_run(tmp_path, 0)  # a library whose manifest records the slow winner

    class Recording:
        names: list = []

        def build_many(self, requests, workers=None, on_done=None):
            from kernelrl.build.builder import BuildResult
            Recording.names = [r.name for r in requests]
            return [BuildResult(name=r.name, key="k", ok=True) for r in requests]
    cfg = TuneConfig(problems=parse_shapes("64x64x64"), families=["toy_refine"], out=tmp_path / "lib", top_k=1,
                     refine=2)
    prebuild(cfg, NullUI(), builder=Recording())
    assert set(Recording.names) == set(candidate_set(cfg)) | {"toyr_fp32_128_1slow", "toyr_fp32_64_2fast"}


def test_a_local_run_builds_the_whole_candidate_set_first(tmp_path, monkeypatch):
    """One wide build before the first batch; measurement itself runs on the dummy runner here (no GPU)."""
    import dataclasses

    import kernelrl.build.toolchain as toolchain
    import kernelrl.library.export as export
    import kernelrl.tune as mod
    built = []
    monkeypatch.setattr(mod, "require_gpu", lambda runner: None)  # as if this machine had one
    monkeypatch.setattr(mod, "prebuild", lambda cfg, ui: built.append(sorted(mod.candidate_set(cfg))))
    real = mod.run_bench
    monkeypatch.setattr(mod, "run_bench", lambda bench, ui: real(dataclasses.replace(bench, runner="dummy"), ui))
    monkeypatch.setattr(toolchain.Toolchain, "discover", classmethod(lambda cls, arch=None: None))
    real_write = export.write_library  # written without a builder: toolchain discovery is stubbed out above
    monkeypatch.setattr(export, "write_library", lambda out, results, ui, **k: real_write(out, results, ui))
    cfg = TuneConfig(problems=parse_shapes("64x64x64,4096x4096x4096"), families=["toy"], out=tmp_path / "lib",
                     runner="local", db_path=tmp_path / "t.db", top_k=2, confirm=0)
    mod.tune(cfg, NullUI())
    assert built == [sorted(mod.candidate_set(cfg))]


# -- cuBLASLt as the fallback where it beats torch.matmul ------------------------------------------------------------
class SlowToy(ToySpace):
    """Only kernels slower than every library: each shape ends on its fallback."""

    family = "toy_slow_only"
    knobs = {"tile": [64], "speed": ["slow"]}

    def name_of(self, v):
        return f"toyslowonly_{v.acc}_{v.p['tile']}"


def _lt_faster_shape(layout="nn", dtype="fp16"):
    """A shape on which the dummy runner's cuBLASLt time is below torch's (its jitter is a hash of the name)."""
    from kernelrl.run.runner import _dummy_time_us
    lt = {"nn": "cublaslt_auto_nn", "nt": "cublaslt_auto_tn"}[layout]
    for spec in ("64x64x64", "128x128x128", "256x256x256", "512x512x512", "1024x1024x1024", "2048x2048x2048"):
        p = parse_shapes(spec, layout=layout, dtype=dtype)[0]
        if _dummy_time_us(p, "device", {"name": lt}) < _dummy_time_us(p, "device", {"name": "torch"}):
            return p
    raise AssertionError("no shape with cuBLASLt faster under the dummy runner")


def _store_algo(db_path, problem, algo="ab" * 64, lt_layout="nn"):
    from kernelrl.db.database import Database
    from kernelrl.run.methods import LT_WORKSPACE_BYTES, lt_cache_key
    db = Database(db_path)
    db.add_lt_algo("dummy", 0, {"key": lt_cache_key(problem, lt_layout, LT_WORKSPACE_BYTES), "algo": algo,
                                "algo_index": 3, "time_ms": 0.01, "candidates": 8, "search_s": 0.1})
    db.close()


def test_the_faster_cublaslt_fallback_is_recorded_with_its_algorithm(tmp_path):
    problem = _lt_faster_shape()
    _store_algo(tmp_path / "t.db", problem)
    cfg = TuneConfig(problems=[problem], families=["toy_slow_only"], out=tmp_path / "lib", runner="dummy",
                     db_path=tmp_path / "t.db")
    tune(cfg, NullUI())
    entry = json.loads((tmp_path / "lib" / "manifest.json").read_text())["shapes"][f"{problem.name}:fp32"]
    assert entry["fallback"]["method"] == "cublaslt_auto_nn" and entry["fallback"]["algo"] == "ab" * 64
    assert entry["dispatch"] == "fallback"


def test_an_nt_shape_s_faster_cublaslt_fallback_is_the_tn_one_with_its_algorithm(tmp_path):
    from kernelrl.library.export import shape_key
    problem = _lt_faster_shape("nt", "bf16")
    _store_algo(tmp_path / "t.db", problem, "cd" * 64, lt_layout="tn")
    cfg = TuneConfig(problems=[problem], families=["toy_slow_only"], out=tmp_path / "lib", runner="dummy",
                     db_path=tmp_path / "t.db")
    tune(cfg, NullUI())
    key = shape_key(problem.m, problem.n, problem.k, "fp32", "bf16", "nt")
    entry = json.loads((tmp_path / "lib" / "manifest.json").read_text())["shapes"][key]
    assert entry["fallback"]["method"] == "cublaslt_auto_tn" and entry["fallback"]["algo"] == "cd" * 64


def test_tuning_nt_shapes_measures_the_tn_cublaslt_fallback_and_fp16_nn_ones_the_nn_one():
    from kernelrl.tune import _fallbacks
    nt = parse_shapes("64x64x64", layout="nt", dtype="bf16")
    nn = parse_shapes("64x64x64")
    assert _fallbacks(TuneConfig(problems=nt, families=["toy"], out="x")) == ["torch", "cublaslt_auto_tn"]
    assert _fallbacks(TuneConfig(problems=nn + nt, families=["toy"], out="x")) == \
        ["torch", "cublaslt_auto_nn", "cublaslt_auto_tn"]
    assert _fallbacks(TuneConfig(problems=nt, families=["toy"], out="x", lt_fallback=False)) == ["torch"]


def test_library_keeps_an_nt_shape_s_cublaslt_algorithm_and_names_it_in_stats(tmp_path):
    from kernelrl.library.export import shape_key
    shape = {"m": 64, "n": 64, "k": 64, "acc": "fp32", "dtype": "bf16", "layout": "nt", "kernel": None,
             "dispatch": "fallback", "fallback": {"method": "cublaslt_auto_tn", "algo": "ab" * 64}}
    (tmp_path / "lib").mkdir(parents=True)
    (tmp_path / "lib" / "libkr_blas.so").write_bytes(b"")
    (tmp_path / "manifest.json").write_text(json.dumps({"shapes": {shape_key(64, 64, 64, "fp32", "bf16", "nt"): shape},
                                                        "kernels": {}, "native": "lib/libkr_blas.so"}))
    lib = Library(tmp_path)
    key = Library.key(64, 64, 64, "fp32", "bf16", "nt")
    assert lib.lt_algos == {key: "ab" * 64} and lib._route(key) == "cublaslt_auto_tn"


def test_kernelrl_log_names_the_cublaslt_fallback_a_shape_runs(tmp_path, monkeypatch, capsys):
    from kernelrl.library.export import shape_key
    monkeypatch.setenv("KERNELRL_LOG", "1")
    shape = {"m": 64, "n": 64, "k": 64, "acc": "fp32", "dtype": "bf16", "layout": "nt", "kernel": None,
             "dispatch": "fallback", "fallback": {"method": "cublaslt_auto_tn", "algo": "ab" * 64}}
    (tmp_path / "lib").mkdir(parents=True)
    (tmp_path / "lib" / "libkr_blas.so").write_bytes(b"")
    (tmp_path / "manifest.json").write_text(json.dumps({"shapes": {shape_key(64, 64, 64, "fp32", "bf16", "nt"): shape},
                                                        "kernels": {}, "native": "lib/libkr_blas.so"}))
    Library(tmp_path).choose(64, 64, 64, dtype="bf16", layout="nt")
    assert capsys.readouterr().err.strip().splitlines()[-1] == "kernelrl: 64x64x64 bf16 nt: fallback (cublaslt_auto_tn)"


def test_without_a_stored_algorithm_the_fallback_stays_torch(tmp_path):
    problem = _lt_faster_shape()
    cfg = TuneConfig(problems=[problem], families=["toy_slow_only"], out=tmp_path / "lib", runner="dummy",
                     db_path=tmp_path / "t.db")
    tune(cfg, NullUI())
    entry = json.loads((tmp_path / "lib" / "manifest.json").read_text())["shapes"][f"{problem.name}:fp32"]
    assert "fallback" not in entry


def test_library_takes_cublaslt_shapes_only_with_its_native_shim(tmp_path):
    shape = {"m": 64, "n": 64, "k": 64, "acc": "fp32", "kernel": None, "dispatch": "fallback",
             "fallback": {"method": "cublaslt_auto_nn", "algo": "ab" * 64}}
    write_manifest(tmp_path / "a", {"64x64x64:fp32": shape})
    assert Library(tmp_path / "a").lt_algos == {}
    (tmp_path / "b" / "lib").mkdir(parents=True)
    (tmp_path / "b" / "lib" / "libkr_blas.so").write_bytes(b"")
    (tmp_path / "b" / "manifest.json").write_text(json.dumps({"shapes": {"64x64x64:fp32": shape}, "kernels": {},
                                                              "native": "lib/libkr_blas.so"}))
    assert Library(tmp_path / "b").lt_algos == {Library.key(64, 64, 64, "fp32"): "ab" * 64}


def lt_library(root):
    """A library folder that sends 64x64x64 to cuBLASLt with a stored algorithm, through its copy of the shim."""
    (root / "lib").mkdir(parents=True)
    (root / "lib" / "libkr_blas.so").write_bytes(b"")
    (root / "manifest.json").write_text(json.dumps({"native": "lib/libkr_blas.so", "kernels": {},
        "shapes": {"64x64x64:fp32": {"m": 64, "n": 64, "k": 64, "acc": "fp32", "kernel": None, "dispatch": "fallback",
                                     "fallback": {"method": "cublaslt_auto_nn", "algo": "ab" * 64}}}}))
    return root


def test_bench_library_reports_the_cublaslt_row_where_the_library_calls_it(tmp_path):
    from kernelrl.jobs.measure import BenchConfig, run_bench
    lt_library(tmp_path / "lib")
    cfg = BenchConfig(problems=parse_shapes("64x64x64"), modes=["device"], baselines=["torch", "cublaslt_auto_nn"],
                      runner="dummy", db_path=tmp_path / "b.db", library=tmp_path / "lib")
    rows = run_bench(cfg, NullUI()).rows
    ours = next(r for r in rows if r["method"] == "kernelrl")
    lt = next(r for r in rows if r["method"] == "cublaslt_auto_nn")
    assert ours["dispatch"].startswith("cuBLASLt") and ours["time_us_median"] == lt["time_us_median"]


def test_bench_library_is_measured_without_the_cublaslt_baseline_it_calls(tmp_path):
    from kernelrl.jobs.measure import BenchConfig, run_bench
    lt_library(tmp_path / "lib")
    cfg = BenchConfig(problems=parse_shapes("64x64x64"), modes=["device"], baselines=["torch"], runner="dummy",
                      db_path=tmp_path / "b.db", library=tmp_path / "lib")
    rows = run_bench(cfg, NullUI()).rows
    assert [(r["method"], r["dispatch"]) for r in rows if r["method"] == "kernelrl"] == \
        [("kernelrl", "cuBLASLt (stored algorithm)")]


def test_bench_library_measures_the_library_itself_not_its_kernels(tmp_path, monkeypatch):
    from kernelrl.jobs.measure import BenchConfig, run_bench
    from kernelrl.run.runner import DummyRunner
    seen, real_run = [], DummyRunner.run

    def recording_run(self, tasks, methods, *args, **kwargs):
        seen.extend(methods)
        return real_run(self, tasks, methods, *args, **kwargs)
    monkeypatch.setattr(DummyRunner, "run", recording_run)
    toy_library(tmp_path / "lib")
    cfg = BenchConfig(problems=parse_shapes("64x64x64"), modes=["device"], baselines=["torch"],
                      runner="dummy", db_path=tmp_path / "b.db", library=tmp_path / "lib")
    run_bench(cfg, NullUI())
    ours = [s for s in seen if s["name"] == "kernelrl"]
    assert [s["kind"] for s in ours] == ["library"] and not any(s["name"] == "toy" for s in seen)
    assert ours[0]["root"] == str((tmp_path / "lib").resolve())


def test_bench_library_measurements_resume_until_the_library_changes(tmp_path):
    from kernelrl.jobs.measure import BenchConfig, run_bench
    toy_library(tmp_path / "lib")

    def measured():
        cfg = BenchConfig(problems=parse_shapes("64x64x64"), modes=["device"], baselines=["torch"],
                          runner="dummy", db_path=tmp_path / "b.db", library=tmp_path / "lib")
        return run_bench(cfg, NullUI()).measured_tasks
    assert measured() == 1 and measured() == 0
    (tmp_path / "lib" / "lib" / "libtoy.so").write_bytes(b"a rebuilt kernel")
    assert measured() == 1


def test_a_library_benched_again_after_another_is_measured_beside_its_own_baselines(tmp_path):
    """The second library's run measured torch.matmul again: the first library's row, taken beside the torch row
    that run replaced, is superseded with it, so the first library is measured afresh, never paired across runs."""
    from kernelrl.db import Database
    from kernelrl.jobs.measure import BenchConfig, run_bench
    toy_library(tmp_path / "lib")
    so = tmp_path / "lib" / "lib" / "libtoy.so"

    def measured():
        cfg = BenchConfig(problems=parse_shapes("64x64x64"), modes=["device"], baselines=["torch"],
                          runner="dummy", db_path=tmp_path / "b.db", library=tmp_path / "lib")
        return run_bench(cfg, NullUI()).measured_tasks
    first = so.read_bytes()
    measured()
    so.write_bytes(b"a rebuilt kernel")
    measured()
    so.write_bytes(first)
    assert measured() == 1
    assert {r["method"] for r in Database(tmp_path / "b.db").superseded()} == {"torch", "kernelrl"}


def test_a_local_run_without_a_gpu_stops_before_building_anything(tmp_path, monkeypatch):
    from kernelrl.jobs.measure import BenchError
    import kernelrl.environment as environment
    import kernelrl.tune as mod
    monkeypatch.setattr(environment, "gpu_info", lambda: {"gpu": None})
    monkeypatch.setattr(mod, "prebuild", lambda cfg, ui: pytest.fail("built without a GPU to measure on"))
    cfg = TuneConfig(problems=parse_shapes("64x64x64"), families=["toy"], out=tmp_path / "lib", runner="local",
                     db_path=tmp_path / "t.db")
    with pytest.raises(BenchError, match="no NVIDIA GPU"):
        mod.tune(cfg, NullUI())


def test_the_library_method_calls_the_library_as_users_do(tmp_path):
    """On CPU tensors the library's rule is torch.matmul: the bound call computes the product into C."""
    import torch

    from kernelrl.run.methods import Buffers, LibraryCall
    toy_library(tmp_path / "lib")
    method = LibraryCall("kernelrl", str(tmp_path / "lib"))
    a, b = torch.randn(64, 64).half(), torch.randn(64, 64).half()
    bufs = Buffers(a, b, None, torch.zeros(64, 64).half())
    assert method.bind(parse_shapes("64x64x64")[0], bufs, None, None)() == 0
    assert torch.equal(bufs.c, torch.matmul(a, b))


def test_a_library_method_without_a_manifest_is_a_verdict(tmp_path):
    from kernelrl.run.methods import LibraryCall, MethodError
    with pytest.raises(MethodError, match="cannot load the built library: the tuned library"):
        LibraryCall("kernelrl", str(tmp_path / "nowhere"))


def test_a_shape_is_picked_among_its_own_candidates_only():
    """On a resumed run the database also returns the shape's times of candidates from other lists and rounds."""
    from kernelrl.tune import _own, _pick
    mine = Variant.of("toy", "fp32", tile=64, speed="slow")
    other = Variant.of("toy", "fp32", tile=128, speed="fast")
    rows = [{"m": 64, "n": 64, "k": 64, "acc": "fp32", "method": v.name, "time_us_median": t, "verified": True,
             "reason": None} for v, t in ((mine, 5.0), (other, 1.0))]
    assert _pick(GemmProblem(64, 64, 64), rows, _own([mine])).best == mine


def test_a_kernel_within_the_margin_of_its_fallback_is_not_dispatched():
    from kernelrl.tune import ShapeResult
    kernel = Variant.of("toy", "fp32", tile=64, speed="fast")
    near = ShapeResult(GemmProblem(64, 64, 64), kernel, 9.95, 10.0, {"torch": 10.0}, {}, min_gain=1.01)
    clear = ShapeResult(GemmProblem(64, 64, 64), kernel, 9.0, 10.0, {"torch": 10.0}, {}, min_gain=1.01)
    assert not near.uses_kernel and near.library_us == 10.0
    assert clear.uses_kernel and clear.library_us == 9.0



# -- what tune prints is what the library it wrote does (issues 27, 30) ------------------------------------------------
class PartBuilder:
    """Builds the kernels `builds(name)` accepts (a stand-in file: nothing here loads it) and fails the rest, the
    cuBLAS shim included: what a tuning run's last builds can leave."""

    toolchain = None

    def __init__(self, where, builds):
        self.where, self.builds = where, builds
        where.mkdir(parents=True, exist_ok=True)

    def build(self, request):
        from kernelrl.build.builder import BuildResult
        if request.name == "kr_blas" or not self.builds(request.name):
            return BuildResult(name=request.name, key="k", ok=False, error="stand-in failure")
        path = self.where / f"lib{request.name}.so"
        path.write_bytes(b"stand-in")
        return BuildResult(name=request.name, key="k", ok=True, lib_path=str(path))


def tune_built_by(tmp_path, monkeypatch, builder, **kw):
    """A local run (measured by the dummy runner) whose library is written with `builder`."""
    import dataclasses

    import kernelrl.build.toolchain as toolchain
    import kernelrl.library.export as export
    import kernelrl.tune as mod
    from kernelrl.build.builder import BuildRequest
    monkeypatch.setattr(mod, "require_gpu", lambda runner: None)
    monkeypatch.setattr(mod, "prebuild", lambda cfg, ui: [])
    real = mod.run_bench
    monkeypatch.setattr(mod, "run_bench", lambda bench, ui: real(dataclasses.replace(bench, runner="dummy"), ui))
    monkeypatch.setattr(toolchain.Toolchain, "discover", classmethod(lambda cls, arch=None: None))
    monkeypatch.setattr(mod, "LocalBuilder", lambda tc: builder)
    monkeypatch.setattr(export.native_lib, "build_request", lambda tc: BuildRequest("", name="kr_blas"))
    cfg = TuneConfig(out=tmp_path / "lib", runner="local", db_path=tmp_path / "t.db", **kw)
    return tune(cfg, NullUI())


def assert_tune_says_what_the_library_does(out, results):
    """Per shape, the tuner's route, its closing tables and its `library_us` against the bench's view of the
    library (LibraryPlan) and `kernelrl library info`."""
    from rich.console import Console

    from kernelrl.cli.hgemm import tune_summary, tune_table
    from kernelrl.library import policy
    from kernelrl.library.bench import LibraryPlan
    from kernelrl.library.build import library_info
    plan = LibraryPlan.make(out, [r.problem for r in results])
    for r in results:
        p = r.problem
        assert r.route.name == plan.choice[(p.m, p.n, p.k, p.acc, p.dtype, p.layout)]
        assert r.library_us == (r.best_us if r.uses_kernel else r.measured[r.route.name or "torch"])
    info = library_info(out)
    info_kernels = sum(int(line.split()[0]) for line in info[4:] if line.split()[1] == "kernel"
                       and "not built" not in line)
    assert info_kernels == sum(r.uses_kernel for r in results)
    console = Console(record=True, width=250)
    console.print(tune_table(results))
    console.print(tune_summary(results))
    text = console.export_text()
    cells = [line.split("│") for line in text.splitlines() if line.startswith("│ ")]
    names = {r.problem.name for r in results}
    said = {row[1].strip(): row[6].strip() for row in cells if row[1].strip() in names}  # the per-shape rows
    assert said == {r.problem.name: "kernel" if r.uses_kernel else policy.dispatch_label(r.route.name, r.problem.layout)
                    for r in results}
    all_row = next(line for line in text.splitlines() if line.startswith("│ all"))
    assert all_row.split("│")[4].strip() == str(sum(r.uses_kernel for r in results))


def test_a_winner_whose_kernel_did_not_build_is_reported_as_the_fallback_the_library_runs(tmp_path, monkeypatch):
    from kernelrl.library import policy
    builder = PartBuilder(tmp_path / "built", lambda name: "_64_" in name)  # the 128- and 256-tile kernels fail
    results = tune_built_by(tmp_path, monkeypatch, builder, families=["toy"], top_k=3,
                            problems=parse_shapes("64x64x64,128x128x128,4096x4096x4096"))
    assert all(r.decision.kind == policy.KERNEL for r in results)  # the tuner dispatched a kernel on every shape
    runs = {r.problem.name: r.route.kind for r in results}
    assert policy.KERNEL in runs.values() and policy.TORCH in runs.values(), runs  # the library runs one on some
    assert_tune_says_what_the_library_does(tmp_path / "lib", results)


def test_a_cublaslt_fallback_without_the_shim_is_reported_as_the_yardstick(tmp_path, monkeypatch):
    from kernelrl.library import policy
    problem = _lt_faster_shape()
    _store_algo(tmp_path / "t.db", problem)
    builder = PartBuilder(tmp_path / "built", lambda name: True)  # every kernel builds, the cuBLAS shim fails
    results = tune_built_by(tmp_path, monkeypatch, builder, problems=[problem], families=["toy_slow_only"])
    (r,) = results
    assert (r.decision.kind, r.route.kind, r.route.reason) == (policy.LT, policy.TORCH, policy.FALLBACK_WON)
    assert r.library_us == r.measured["torch"] != r.fallback_us
    assert_tune_says_what_the_library_does(tmp_path / "lib", results)

# -- the confirmation run (the winner's curse) -------------------------------------------------------------------
class LuckyToy(RefineToy):
    """A kernel that wins the short screening run by luck (the dummy runner makes `lucky` 0.7x torch in short
    runs, 1.2x in long ones) beside an honest 0.8x one."""

    family = "toy_lucky"
    knobs = {"tile": [64, 128], "speed": ["lucky", "fast"]}

    def name_of(self, v):
        return f"toyl_{v.acc}_{v.p['tile']}_{v.p['speed']}"


def lucky_run(tmp_path, confirm):
    return tune_64(tmp_path, "toy_lucky", top_k=4, confirm=confirm)


def test_without_confirmation_the_lucky_screening_winner_stays(tmp_path):
    assert lucky_run(tmp_path, 0)["kernel"].endswith("lucky")


def test_a_confirmation_run_picks_the_kernel_that_stays_fast(tmp_path):
    entry = lucky_run(tmp_path, 3)
    assert entry["kernel"].endswith("fast") and entry["dispatch"] == "kernel"
    assert entry["screening"]["kernel"].endswith("lucky")  # what the screening run had said, kept beside it
    assert entry["time_us"] > entry["screening"]["time_us"]


def test_the_confirmation_run_measures_afresh_on_the_same_builds(tmp_path):
    from kernelrl.db import Database
    lucky_run(tmp_path, 2)
    keys = {r["method_key"] for r in Database(tmp_path / "t.db").rows("dummy")}
    assert any(k.endswith(":confirm15") for k in keys) and any(":" not in k for k in keys)


def test_a_budget_leaves_no_shape_screened_but_not_confirmed(tmp_path):
    cfg = TuneConfig(problems=parse_shapes("64x64x64,128x128x128"), families=["toy_lucky"], out=tmp_path / "lib",
                     runner="dummy", db_path=tmp_path / "t.db", top_k=4, confirm=2, batch=1, budget_minutes=0.0)
    tune(cfg, NullUI())
    shapes = json.loads((tmp_path / "lib" / "manifest.json").read_text())["shapes"]
    assert "screening" in shapes["64x64x64:fp32"]  # the batch the budget let start ran its confirmation too
    assert shapes["128x128x128:fp32"].get("status") == "not tuned yet"


def test_bench_library_labels_nt_bf16_shapes_by_their_own_keys(tmp_path):
    from kernelrl.jobs.measure import BenchConfig, run_bench
    from kernelrl.library.export import shape_key
    root = tmp_path / "lib"
    (root / "lib").mkdir(parents=True)
    (root / "lib" / "libtoy.so").write_bytes(b"not loaded by the dummy runner")
    entry = {"n": 64, "k": 64, "acc": "fp32", "dtype": "bf16", "layout": "nt", "kernel": "toy"}
    write_manifest(root, {shape_key(64, 64, 64, "fp32", "bf16", "nt"): {"m": 64, **entry, "dispatch": "kernel"},
                          shape_key(128, 64, 64, "fp32", "bf16", "nt"): {"m": 128, **entry, "dispatch": "fallback"}},
                   {"toy": {"library": "lib/libtoy.so"}})
    cfg = BenchConfig(problems=parse_shapes("64x64x64,128x64x64", layout="nt", dtype="bf16"), modes=["device"],
                      baselines=["torch"], runner="dummy", db_path=tmp_path / "b.db", library=root)
    rows = run_bench(cfg, NullUI()).rows
    assert {(r["m"], r["dispatch"]) for r in rows if r["method"] == "kernelrl"} == {(64, "toy"), (128, "F.linear")}


# -- extending a library (tune --base) ---------------------------------------------------------------------------

class ToyWide(ToySpace):
    """A second family, for a run that extends a library tuned with `toy` only."""
    family = "toy_wide"
    knobs = {"tile": [128], "speed": ["fast"]}

    def name_of(self, v):
        return f"toywide_{v.acc}_{v.p['tile']}"


def test_a_run_with_a_base_keeps_the_shapes_it_does_not_tune_as_they_were(tmp_path):
    run_tune(tmp_path, shapes="64x64x64,128x128x128")
    base = json.loads((tmp_path / "lib" / "manifest.json").read_text())
    cfg = TuneConfig(problems=parse_shapes("128x128x128"), families=["toy_wide"], out=tmp_path / "ext",
                     runner="dummy", db_path=tmp_path / "t2.db", base=tmp_path / "lib")
    tune(cfg, NullUI())
    ext = json.loads((tmp_path / "ext" / "manifest.json").read_text())
    kept = ext["shapes"]["64x64x64:fp32"]
    assert kept["carried_from"].startswith(str(tmp_path / "lib"))
    assert {k: kept[k] for k in ("kernel", "dispatch", "time_us", "measured_us")} == \
        {k: base["shapes"]["64x64x64:fp32"][k] for k in ("kernel", "dispatch", "time_us", "measured_us")}
    assert (tmp_path / "ext" / "kernels" / f"{kept['kernel']}.cu").is_file()
    assert ext["base"]["path"] == str(tmp_path / "lib") and ext["base"]["created"] == base["created"]


def test_a_tuned_shape_measures_the_base_kernel_beside_the_new_family(tmp_path):
    run_tune(tmp_path, shapes="128x128x128")
    base_kernel = json.loads((tmp_path / "lib" / "manifest.json").read_text())["shapes"]["128x128x128:fp32"]["kernel"]
    cfg = TuneConfig(problems=parse_shapes("128x128x128"), families=["toy_wide"], out=tmp_path / "ext",
                     runner="dummy", db_path=tmp_path / "t2.db", base=tmp_path / "lib", confirm=0)
    [result] = tune(cfg, NullUI())
    assert base_kernel in result.measured and "toywide_fp32_128" in result.measured
    assert "carried_from" not in json.loads((tmp_path / "ext" / "manifest.json").read_text())["shapes"][
        "128x128x128:fp32"]


def test_a_base_kernel_is_built_from_the_library_s_own_source(tmp_path):
    run_tune(tmp_path, shapes="128x128x128")
    manifest = json.loads((tmp_path / "lib" / "manifest.json").read_text())
    name = manifest["shapes"]["128x128x128:fp32"]["kernel"]
    path = tmp_path / "lib" / manifest["kernels"][name]["source"]
    path.write_text(path.read_text() + "// as the library holds it\n")
    cfg = TuneConfig(problems=parse_shapes("128x128x128"), families=["toy_wide"], out=tmp_path / "ext",
                     runner="dummy", base=tmp_path / "lib")
    variant = cfg.base_library.kernel_for(GemmProblem(128, 128, 128))
    assert variant.name == name and cfg.source(variant).endswith("// as the library holds it\n")


def test_a_base_without_its_kernel_sources_is_one_clear_error(tmp_path):
    from kernelrl.jobs.measure import BenchError
    run_tune(tmp_path, shapes="128x128x128")
    for f in (tmp_path / "lib" / "kernels").iterdir():
        f.unlink()
    with pytest.raises(BenchError, match="source .* is missing"):
        _ = TuneConfig(problems=[], families=["toy"], out=tmp_path / "x", base=tmp_path / "lib").base_library


def test_shapes_a_budget_left_keep_the_base_s_decision(tmp_path):
    run_tune(tmp_path, shapes="64x64x64,128x128x128")
    base = json.loads((tmp_path / "lib" / "manifest.json").read_text())["shapes"]
    cfg = TuneConfig(problems=parse_shapes("64x64x64,128x128x128,4096x4096x4096"), families=["toy_wide"],
                     out=tmp_path / "ext", runner="dummy", db_path=tmp_path / "t2.db", base=tmp_path / "lib",
                     batch=1, budget_minutes=0.0)
    tune(cfg, NullUI())
    ext = json.loads((tmp_path / "ext" / "manifest.json").read_text())["shapes"]
    assert "carried_from" not in ext["64x64x64:fp32"]  # measured in this run (the first batch)
    assert ext["128x128x128:fp32"]["kernel"] == base["128x128x128:fp32"]["kernel"]  # the budget left it: kept
    assert ext["128x128x128:fp32"]["carried_from"]
    assert ext["4096x4096x4096:fp32"]["status"] == "not tuned yet"  # neither tuned nor in the base
