"""benchmarks/suites/export_run.py: one run's rows as a bench CSV, superseded rows included, kernelrl rows labelled by a
manifest."""

import json
import subprocess
import sys
from pathlib import Path

from kernelrl.db import Database
from kernelrl.results import read_csv
from kernelrl.workloads.hgemm import GemmProblem

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "suites" / "export_run.py"
P = GemmProblem(64, 64, 64)


def record(method, t):
    return {"method": method, "mode": "device", "time_us_median": t, "time_us_p10": t, "time_us_p90": t,
            "samples": 7, "tflops": 1.0, "max_rel_err": 1e-4, "verified": True, "reason": None}


def test_a_run_measured_again_later_is_exported_whole_and_labelled(tmp_path):
    db = Database(tmp_path / "r.db")
    first, second = db.start_run("one", {"date": "d1"}), db.start_run("two", {"date": "d2"})
    db.add("G", P, "hot", 100.0, [record("torch", 5.0), record("kernelrl", 4.0)], {"kernelrl": "A"}, {}, first)
    db.add("G", P, "hot", 100.0, [record("torch", 6.0), record("kernelrl", 3.0)], {"kernelrl": "B"}, {}, second)
    db.close()
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "manifest.json").write_text(json.dumps({"shapes": {"64x64x64:fp32": {
        "m": 64, "n": 64, "k": 64, "acc": "fp32", "dispatch": "kernel", "kernel": "small_k"}}}))
    out = tmp_path / "run1.csv"
    subprocess.run([sys.executable, str(SCRIPT), str(tmp_path / "r.db"), "--run", str(first), "--library",
                    str(tmp_path / "lib"), "--csv", str(out)], check=True, capture_output=True)
    rows = {r["method"]: r for r in read_csv(out)}
    assert rows["torch"]["time_us_median"] == 5.0 and rows["kernelrl"]["time_us_median"] == 4.0
    assert rows["kernelrl"]["dispatch"] == "small_k"


def test_rows_are_labelled_by_the_library_s_routing_function():
    """`labels` is policy.route over the manifest's tables (the library with its lib/ whole): a stored cuBLASLt
    fallback where the library can call it, the yardstick where it cannot (kernelrl.hgemm calls none for bf16)."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("export_run", SCRIPT)
    export_run = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(export_run)

    def entry(m, dtype="fp16", kernel=None, lt=None):
        e = {"m": m, "n": 64, "k": 64, "acc": "fp32", "dtype": dtype, "layout": "nn", "kernel": kernel,
             "dispatch": "kernel" if kernel else "fallback"}
        return {**e, "fallback": {"method": lt, "algo": "ab", "time_us": 1.0}} if lt else e
    manifest = {"shapes": {"a": entry(64, kernel="small_k", lt="cublaslt_auto_nn"), "b": entry(128, kernel="lost"),
                           "c": entry(256, lt="cublaslt_auto_nn"), "d": entry(512, "bf16", lt="cublaslt_auto_nn")}}
    manifest["shapes"]["b"]["dispatch"] = "fallback"  # its kernel did not beat the fallback
    assert export_run.labels(manifest) == {"a": "small_k", "b": "torch.matmul", "c": "cuBLASLt (stored algorithm)",
                                           "d": "torch.matmul"}
