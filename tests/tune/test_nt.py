"""Tuning nn.Linear's layout (nt: C = A @ W^T with W N x K) on the CPU: problems from a recorded shapes file, a
shortlist of kernels that take W as it is, a dummy-runner tune that writes nt entries, and the evaluator's layout
rule for methods that read B the other way."""

import json

import pytest
import torch
from torch import nn

import kernelrl
from kernelrl.jobs.measure import NullUI
from kernelrl.library.runtime import Library
from kernelrl.run import methods as M
from kernelrl.tune import TuneConfig, shortlist, tune
from kernelrl.workloads.hgemm import M_GRID, GemmProblem, ShapeError, parse_shapes, problems_from_shapes_file


def recorded(tmp_path):
    model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 32, bias=False))
    path = tmp_path / "shapes.json"
    with kernelrl.record(path):
        model(torch.randn(24, 64).half().float())  # fp32 on the CPU: recorded, then left out
        model.half()
        model(torch.randn(24, 64).half())
        torch.bmm(torch.randn(2, 4, 8).half(), torch.randn(2, 8, 4).half())
    return path


def test_a_shapes_file_gives_fp16_nt_problems_over_the_m_grid_and_says_what_it_left_out(tmp_path):
    problems, notes = problems_from_shapes_file(recorded(tmp_path))
    assert {(p.n, p.k, p.layout) for p in problems} == {(128, 64, "nt"), (32, 128, "nt")}
    assert {p.m for p in problems if p.n == 128} == set(M_GRID) | {24}
    assert any("float32" in line for line in notes) and any("batched" in line for line in notes)
    only_recorded, _ = problems_from_shapes_file(recorded(tmp_path), m_grid=False)
    assert sorted(p.m for p in only_recorded) == [24, 24]


def test_a_file_that_is_not_a_shapes_file_is_one_clear_line(tmp_path):
    (tmp_path / "x.json").write_text(json.dumps({"shapes": []}))
    with pytest.raises(ShapeError, match="kernelrl.record"):
        problems_from_shapes_file(tmp_path / "x.json")


def test_parse_shapes_takes_a_layout():
    (p,) = parse_shapes("256x512x1024", layout="nt")
    assert p == GemmProblem(256, 512, 1024, "fp32", "nt")


def test_an_nt_shortlist_holds_only_kernels_that_take_w_as_it_is():
    nt = GemmProblem(256, 4096, 4096, layout="nt")
    chosen = shortlist(nt, ["wgmma", "mma_sync"], top_k=8, winners={}, neighbours=0)
    assert chosen and all(v.family == "wgmma" and v.p["b_layout"] == "nk" for v in chosen)
    nn_chosen = shortlist(GemmProblem(256, 4096, 4096), ["wgmma"], top_k=8, winners={}, neighbours=0)
    assert nn_chosen and all(v.p["b_layout"] == "kn" for v in nn_chosen)


def test_a_dummy_tune_of_nt_problems_writes_nt_entries_the_runtime_reads(tmp_path):
    cfg = TuneConfig(problems=parse_shapes("256x512x1024,64x512x1024", layout="nt"), families=["wgmma"],
                     out=tmp_path / "lib", runner="dummy", db_path=tmp_path / "t.db", top_k=3)
    tune(cfg, NullUI())
    manifest = json.loads((tmp_path / "lib" / "manifest.json").read_text())
    assert set(manifest["shapes"]) == {"256x512x1024:fp32:fp16:nt", "64x512x1024:fp32:fp16:nt"}
    assert all(e["layout"] == "nt" and e["dtype"] == "fp16" for e in manifest["shapes"].values())
    assert all(k["params"]["b_layout"] == "nk" for k in manifest["kernels"].values())
    lib = Library(tmp_path / "lib")
    assert {key[4:] for key in lib.table} == {("fp16", "nt")}
    from kernelrl.library.build import library_info
    assert any(line.startswith("shapes: 2 (nt fp16: 2)") for line in library_info(tmp_path / "lib"))


@pytest.mark.parametrize("method, readable", [
    (M.TorchMatmul(), True), (M.Cublas(None, None, "tn"), True), (M.Cublas(None, None, "nn"), False)])
def test_on_nt_problems_only_methods_that_read_w_run(method, readable):
    nt = GemmProblem(64, 64, 64, layout="nt")
    assert (M.layout_mismatch(method, nt) is None) == readable
    assert M.layout_mismatch(method, GemmProblem(64, 64, 64)) is None
    assert M.reads_bt(method, nt) == readable


def test_bf16_gemms_of_a_shapes_file_are_bf16_problems_with_fp32_accumulation(tmp_path):
    model = nn.Linear(64, 128).to(torch.bfloat16)
    path = tmp_path / "shapes.json"
    with kernelrl.record(path):
        model(torch.randn(8, 64, dtype=torch.bfloat16))
    problems, notes = problems_from_shapes_file(path, acc="fp16", m_grid=False)
    assert problems == [GemmProblem(8, 128, 64, "fp32", "nt", "bf16")] and notes == []


def test_bf16_with_an_fp16_accumulator_is_one_clear_line():
    with pytest.raises(ShapeError, match="accumulate in fp32"):
        GemmProblem(64, 64, 64, "fp16", dtype="bf16")
