"""The bench job end to end on the CPU, with the dummy runner (no compiler, no GPU)."""

import csv

import pytest

from kernelrl.baselines import BASELINES
from kernelrl.harness.verdicts import Rejected, Verdict
from kernelrl.jobs.measure import (BenchConfig, BenchError, Built, NullUI, build, candidate_names,
                                      expand_candidates, measure, parse_baselines, parse_modes, run_bench)
from kernelrl.run.runner import RunSettings
from kernelrl.workloads.hgemm import parse_shapes

MODES = ["device", "offline"]


class QuietUI(NullUI):
    """Silent; remembers what each task reported."""

    def __init__(self):
        self.done = []

    def task_done(self, task, records):
        self.done.append((task.problem.name, records))


@pytest.fixture(autouse=True)
def _private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("KERNELRL_CACHE", str(tmp_path / "cache"))


def candidate(tmp_path, name="fast_kernel", text="// a dummy candidate; the dummy runner does not compile\n"):
    path = tmp_path / f"{name}.cu"
    path.write_text(text)
    return path


def bench(tmp_path, candidates, shapes="sample:5:1", modes=MODES, baselines=BASELINES, csv_name="out.csv"):
    cfg = BenchConfig(problems=parse_shapes(shapes), modes=list(modes), candidates=[str(c) for c in candidates],
                      baselines=list(baselines), settings=RunSettings(), db_path=tmp_path / "results.db",
                      csv_path=tmp_path / csv_name, runner="dummy", command="test")
    return run_bench(cfg, QuietUI())


def test_rows_for_every_shape_method_and_mode(tmp_path):
    outcome = bench(tmp_path, [candidate(tmp_path)])
    got = {(r["m"], r["n"], r["k"], r["mode"], r["method"]) for r in outcome.rows}
    shapes = {(p.m, p.n, p.k) for p in parse_shapes("sample:5:1")}
    expected = {(*s, mode, method) for s in shapes for mode in MODES for method in (*BASELINES, "fast_kernel")}
    assert got == expected
    assert len(outcome.rows) == len(expected)
    assert all(r["verified"] and r["time_us_median"] > 0 for r in outcome.rows)
    assert (outcome.measured_tasks, outcome.resumed_tasks) == (5, 0)


def test_csv_is_written(tmp_path):
    outcome = bench(tmp_path, [candidate(tmp_path)])
    with open(tmp_path / "out.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == len(outcome.rows) == 5 * 2 * (len(BASELINES) + 1)
    assert {r["method"] for r in rows} == {*BASELINES, "fast_kernel"}
    assert {r["gpu"] for r in rows} == {"dummy"}


def test_fast_candidate_beats_the_baselines(tmp_path):
    outcome = bench(tmp_path, [candidate(tmp_path)], baselines=["torch"], modes=["device"])
    times = {(r["m"], r["n"], r["k"], r["method"]): r["time_us_median"] for r in outcome.rows}
    for (m, n, k, method), t in times.items():
        if method == "fast_kernel":
            assert t < times[(m, n, k, "torch")]


def test_identical_second_run_resumes(tmp_path):
    path = candidate(tmp_path)
    first = bench(tmp_path, [path])
    second = bench(tmp_path, [path])
    assert (second.measured_tasks, second.resumed_tasks) == (0, 5)

    def key(r):
        return r["m"], r["n"], r["k"], r["mode"], r["method"]

    assert sorted((key(r), r["time_us_median"]) for r in second.rows) == \
        sorted((key(r), r["time_us_median"]) for r in first.rows)


def test_editing_the_candidate_measures_again(tmp_path):
    path = candidate(tmp_path)
    bench(tmp_path, [path])
    path.write_text("// edited: a new version of the kernel\n")
    again = bench(tmp_path, [path])
    assert (again.measured_tasks, again.resumed_tasks) == (5, 0)
    assert len([r for r in again.rows if r["method"] == "fast_kernel"]) == 5 * len(MODES)


def test_adding_a_mode_measures_only_that_mode(tmp_path):
    path = candidate(tmp_path)
    bench(tmp_path, [path], modes=["device"])
    again = bench(tmp_path, [path], modes=["device", "offline"])
    assert again.measured_tasks == 5
    assert {r["mode"] for r in again.rows} == {"device", "offline"}


def test_broken_candidate_is_unverified_and_others_are_not(tmp_path):
    outcome = bench(tmp_path, [candidate(tmp_path), candidate(tmp_path, "broken_kernel")])
    broken = [r for r in outcome.rows if r["method"] == "broken_kernel"]
    others = [r for r in outcome.rows if r["method"] != "broken_kernel"]
    assert len(broken) == 5 * len(MODES)
    assert all(not r["verified"] and r["reason"] and r["time_us_median"] is None for r in broken)
    assert others and all(r["verified"] for r in others)


def test_crashing_candidate_gets_a_crash_verdict(tmp_path):
    outcome = bench(tmp_path, [candidate(tmp_path, "crash_kernel")], baselines=["torch"])
    crashed = [r for r in outcome.rows if r["method"] == "crash_kernel"]
    assert len(crashed) == 5 * len(MODES)
    assert all(r["reason"].startswith("crash") for r in crashed)
    assert all(r["verified"] for r in outcome.rows if r["method"] == "torch")


def test_missing_candidate_raises_bench_error(tmp_path):
    with pytest.raises(BenchError, match="not found"):
        bench(tmp_path, [tmp_path / "nope.cu"])
    assert not (tmp_path / "results.db").exists()


def test_candidate_names_avoid_collisions():
    names = candidate_names(["a/k.cu", "b/k.cu", "c/torch.cu"])
    assert list(names) == ["k", "k_2", "torch_2"]
    assert names["k_2"] == "b/k.cu"


def test_expand_candidates_takes_cu_files_of_folders(tmp_path):
    (tmp_path / "b.cu").write_text("")
    (tmp_path / "a.cu").write_text("")
    (tmp_path / "notes.txt").write_text("")
    assert expand_candidates([str(tmp_path), "x.cu"]) == [str(tmp_path / "a.cu"), str(tmp_path / "b.cu"), "x.cu"]


# -- parsing options -----------------------------------------------------------------------------------------

def test_parse_modes_keeps_order_and_drops_repeats():
    assert parse_modes("server, device,server") == ["server", "device"]


@pytest.mark.parametrize("text, named", [("fast", "fast"), ("device,hot", "hot"), ("", "''"), (",", "','")])
def test_parse_modes_rejects_unknown_names(text, named):
    with pytest.raises(BenchError) as info:
        parse_modes(text)
    message = str(info.value)
    assert named in message and "device, offline or server" in message


@pytest.mark.parametrize("text, expected", [("all", list(BASELINES)), ("", list(BASELINES)), ("none", []),
                                            ("torch, cublas_tn", ["torch", "cublas_tn"])])
def test_parse_baselines(text, expected):
    assert parse_baselines(text) == expected


def test_parse_baselines_rejects_unknown_names():
    with pytest.raises(BenchError) as info:
        parse_baselines("torch,cublas_xx")
    message = str(info.value)
    assert "cublas_xx" in message and "cublas_nn" in message and "all or none" in message


def test_measure_takes_the_builders_artifacts_and_never_rebuilds(tmp_path):
    cfg = BenchConfig(problems=parse_shapes("64x64x64,128x128x128"), modes=["device"], baselines=["torch"],
                      runner="dummy", db_path=tmp_path / "m.db", sources={"fast_k": "// a kernel"})
    built = build(cfg, NullUI(), {})
    assert [s["name"] for s in built.specs] == ["torch", "fast_k"] and built.keys["fast_k"]
    first = measure(built, cfg, NullUI())
    assert first.measured_tasks == 2 and all(r["verified"] for r in first.rows)
    again = measure(built, cfg, NullUI())  # same artifacts, same keys: everything is resumed from the database
    assert again.measured_tasks == 0 and again.resumed_tasks == 2


def test_a_candidate_that_did_not_build_gets_its_verdict_on_every_shape(tmp_path):
    cfg = BenchConfig(problems=parse_shapes("64x64x64,128x128x128"), modes=["device"], baselines=["torch"],
                      runner="dummy", db_path=tmp_path / "m.db")
    built = Built(specs=[{"name": "torch", "kind": "torch"}], keys={"torch": "", "broken_k": "abc"},
                  failures={"broken_k": Rejected(Verdict.COMPILE_ERROR, "k.cu(3): error: expected a ';'")})
    rows = [r for r in measure(built, cfg, NullUI()).rows if r["method"] == "broken_k"]
    assert len(rows) == 2 and all(r["verdict"] == "compile error" and not r["verified"] for r in rows)


def test_a_run_beside_a_candidate_that_still_does_not_build_resumes(tmp_path):
    """Its verdict, written again, was measured beside nothing: the earlier run's times stay whole."""
    cfg = BenchConfig(problems=parse_shapes("64x64x64,128x128x128"), modes=["device"], baselines=["torch"],
                      runner="dummy", db_path=tmp_path / "m.db")
    built = Built(specs=[{"name": "torch", "kind": "torch"}], keys={"torch": "", "broken_k": "abc"},
                  failures={"broken_k": Rejected(Verdict.COMPILE_ERROR, "k.cu(3): error: expected a ';'")})
    assert measure(built, cfg, NullUI()).measured_tasks == 2
    again = measure(built, cfg, NullUI())
    assert again.measured_tasks == 0 and sorted(r["m"] for r in again.rows if r["method"] == "torch") == [64, 128]


def test_a_cuda_l2_file_is_measured_on_its_own_shape_only(tmp_path):
    text = "void cuda_l2_h100_fp32(torch::Tensor a, torch::Tensor b, torch::Tensor b_col_major, torch::Tensor c) {}\n"
    path = candidate(tmp_path, "64_64_64", text)
    rows = bench(tmp_path, [path], shapes="64x64x64,128x128x128", modes=["device"], baselines=["torch"]).rows
    assert sorted((r["m"], r["method"]) for r in rows) == [(64, "64_64_64"), (64, "torch"), (128, "torch")]


def test_a_cuda_l2_file_for_a_shape_not_asked_for_is_not_built(tmp_path):
    text = "void cuda_l2_h100_fp32(torch::Tensor a, torch::Tensor b, torch::Tensor b_col_major, torch::Tensor c) {}\n"
    asked, elsewhere = candidate(tmp_path, "64_64_64", text), candidate(tmp_path, "256_256_256", text)
    plain = candidate(tmp_path, "fast_kernel")
    cfg = BenchConfig(problems=parse_shapes("64x64x64"), modes=["device"], candidates=[str(asked), str(elsewhere),
                      str(plain)], baselines=["torch"], settings=RunSettings(), db_path=tmp_path / "m.db",
                      runner="dummy", command="test")
    built = build(cfg, NullUI(), {})
    assert {s["name"] for s in built.specs if s["kind"] == "candidate"} == {"64_64_64", "fast_kernel"}
