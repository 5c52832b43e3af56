"""benchmarks/suites/llama_e2e.py on a tiny random Llama on the CPU: its record step logs the timed steps' GEMMs
(nn.Linear's nt layout, the model's dtype, M = tokens per step), and its e2e step writes a row per setting and method
with the kernelrl calls that fell back counted (an empty library: all of them)."""

import csv
import json
import sys
from pathlib import Path

import pytest

pytest.importorskip("transformers")
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks" / "suites"))
import llama_e2e  # noqa: E402

TINY = ["--device", "cpu", "--layers", "1", "--hidden", "64", "--intermediate", "128", "--heads", "4",
        "--kv-heads", "2", "--vocab", "128", "--prefill", "16", "--decode-batches", "1,2", "--rounds", "1"]


def test_record_logs_the_timed_steps_gemms(tmp_path):
    assert llama_e2e.main(["record", "--out", str(tmp_path)] + TINY) == 0
    shapes = json.loads((tmp_path / "shapes.json").read_text())["shapes"]
    assert {s["layout"] for s in shapes} == {"nt"} and {s["dtype"] for s in shapes} == {"bfloat16"}
    assert {s["m"] for s in shapes} == {16, 1, 2}  # prefill 1 x 16 tokens, decode at batch 1 and 2 (not the caches)
    assert {(s["n"], s["k"]) for s in shapes} >= {(128, 64), (64, 128)}  # the MLP's up and down projections


def test_e2e_writes_a_row_per_setting_and_method(tmp_path):
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "manifest.json").write_text(json.dumps({"shapes": {}, "kernels": {}, "env": {}}))
    assert llama_e2e.main(["e2e", "--out", str(tmp_path), "--library", str(tmp_path / "lib"),
                           "--methods", "eager,kernelrl"] + TINY) == 0
    rows = list(csv.DictReader(open(tmp_path / "e2e.csv")))
    assert [(r["setting"], r["method"]) for r in rows] == [  # eager and kernelrl timed in interleaved rounds
        ("prefill", "eager"), ("prefill", "kernelrl"), ("decode_b1", "eager"), ("decode_b1", "kernelrl"),
        ("decode_b2", "eager"), ("decode_b2", "kernelrl")]
    assert all(float(r["tokens_per_s"]) > 0 for r in rows)
    assert all(int(r["kernel_calls"]) == 0 and int(r["fallback_calls"]) > 0 for r in rows if r["method"] == "kernelrl")
    layers = list(csv.DictReader(open(tmp_path / "e2e_layers.csv")))  # the per-layer hit rate: none, CPU tensors
    assert {r["setting"] for r in layers} == {"prefill", "decode_b1", "decode_b2"} and \
        {r["runs"] for r in layers} == {"F.linear"} and {"lm_head", "model.layers.0.mlp.down_proj"} <= {
            r["layer"] for r in layers}


def test_an_appended_run_keeps_the_other_methods_rows_and_a_failed_setting_is_a_row(tmp_path, monkeypatch):
    assert llama_e2e.main(["e2e", "--out", str(tmp_path), "--methods", "eager"] + TINY) == 0
    real = llama_e2e.make_step

    def fails_at_decode_b1(model, ids, cache, setting):
        step = real(model, ids, cache, setting)
        if setting.name != "decode_b1":
            return step

        def fails():
            raise RuntimeError("CUDA error: an illegal memory access was encountered\nmore")
        return fails

    monkeypatch.setattr(llama_e2e, "make_step", fails_at_decode_b1)
    monkeypatch.setattr(llama_e2e.torch, "compile", lambda model, **kw: model)  # the method, not inductor's time
    assert llama_e2e.main(["e2e", "--out", str(tmp_path), "--methods", "compile", "--append"] + TINY) == 0
    rows = list(csv.DictReader(open(tmp_path / "e2e.csv")))
    assert [(r["setting"], r["method"]) for r in rows] == [
        ("prefill", "eager"), ("decode_b1", "eager"), ("decode_b2", "eager"),
        ("prefill", "compile"), ("decode_b1", "compile")]  # the failure ends its method
    assert rows[-1]["error"] == "CUDA error: an illegal memory access was encountered"
    assert "failed: CUDA error" in (tmp_path / "e2e.md").read_text()


def test_record_fused_adds_the_gate_up_gemms_of_twice_the_intermediate_columns(tmp_path):
    assert llama_e2e.main(["record", "--out", str(tmp_path), "--fused"] + TINY) == 0
    shapes = json.loads((tmp_path / "shapes.json").read_text())["shapes"]
    assert {(s["n"], s["k"]) for s in shapes} >= {(128, 64), (256, 64), (64, 128)}  # gate, gate/up fused, down
    assert sum(1 for s in shapes if (s["m"], s["n"], s["k"]) == (16, 128, 64)) == 1  # the plain GEMMs once
    down = [s for s in shapes if (s["m"], s["n"], s["k"]) == (16, 64, 128)]
    assert down[0]["calls"] == 1  # counted from the plain model's pass only, not again from the fused one


def test_methods_name_their_arm_and_an_unknown_one_lists_those_that_exist():
    assert llama_e2e.parse_method("compile+kernelrl+fused") == llama_e2e.Method(
        "compile+kernelrl+fused", "max-autotune-no-cudagraphs", True, True)
    assert llama_e2e.parse_method("compile_default").compile_mode == "default"
    assert llama_e2e.parse_method("kernelrl") == llama_e2e.Method("kernelrl", None, True, False)
    with pytest.raises(ValueError, match="unknown method 'fused'.*compile_default"):
        llama_e2e.parse_method("fused")


def test_compiled_and_fused_arms_are_rows_beside_their_unpatched_ones(tmp_path, monkeypatch):
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "manifest.json").write_text(json.dumps({"shapes": {}, "kernels": {}, "env": {}}))
    monkeypatch.setattr(llama_e2e.torch, "compile", lambda model, **kw: model)  # the arms, not inductor's time
    methods = "compile,compile+kernelrl,compile+kernelrl+fused"
    assert llama_e2e.main(["e2e", "--out", str(tmp_path), "--library", str(tmp_path / "lib"), "--methods", methods,
                           "--settings", "prefill"] + TINY) == 0
    rows = {r["method"]: r for r in csv.DictReader(open(tmp_path / "e2e.csv"))}
    assert list(rows) == methods.split(",")
    assert rows["compile+kernelrl+fused"]["fused_calls"] == "0 / 1"  # one MLP, on the CPU: unfused, and counted
    assert rows["compile+kernelrl"]["fused_calls"] == "" and rows["compile"]["kernel_calls"] == ""
    table = (tmp_path / "e2e.md").read_text()
    assert "| prefill | compile+kernelrl+fused |" in table and "vs unpatched" in table
