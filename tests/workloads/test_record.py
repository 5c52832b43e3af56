"""kernelrl.record: the GEMM shapes a model runs, recorded at the ATen level on the CPU (nn.Linear, F.linear,
matmul, bmm), with layouts, bias, batch and call counts; the CLI runs a script under it."""

import json
import sys

import pytest
import torch
import torch.nn as nn

import kernelrl
from kernelrl.cli import main
from kernelrl.workloads.record import RecordError, read_shapes, record


def shape(rec, **where):
    found = [s for s in rec.shapes() if all(s[k] == v for k, v in where.items())]
    assert len(found) == 1, rec.shapes()
    return found[0]


def test_a_linear_is_x_times_w_transposed_with_the_tokens_as_m():
    layer = nn.Linear(16, 32)
    with record() as rec:
        layer(torch.randn(4, 5, 16))  # batch 4, sequence 5: 20 tokens
    assert shape(rec, n=32) == {"m": 20, "n": 32, "k": 16, "dtype": "float32", "layout": "nt", "bias": True,
                                "batch": 1, "calls": 1}


def test_calls_are_counted_per_distinct_gemm():
    layer = nn.Linear(8, 8, bias=False)
    with record() as rec:
        for _ in range(3):
            layer(torch.randn(2, 8))
        layer(torch.randn(6, 8))
    assert [(s["m"], s["calls"]) for s in rec.shapes()] == [(2, 3), (6, 1)]


def test_matmul_and_bmm_are_row_major_with_their_batch():
    with record() as rec:
        torch.randn(6, 7) @ torch.randn(7, 9)
        torch.randn(3, 6, 7) @ torch.randn(3, 7, 2)
        torch.randn(7, 6).t() @ torch.randn(7, 9)  # A transposed
    assert shape(rec, n=9, batch=1, layout="nn")["k"] == 7
    assert shape(rec, batch=3)["layout"] == "nn"
    assert shape(rec, layout="tn")["m"] == 6


def test_recording_changes_nothing_the_model_computes():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 16), nn.GELU(), nn.Linear(16, 4))
    x = torch.randn(3, 16)
    expected = model(x)
    with record():
        got = model(x)
    assert torch.equal(got, expected)


def test_the_shapes_file_round_trips(tmp_path):
    path = tmp_path / "shapes.json"
    with kernelrl.record(path):
        nn.Linear(4, 4)(torch.randn(2, 4))
    assert read_shapes(path) == [{"m": 2, "n": 4, "k": 4, "dtype": "float32", "layout": "nt", "bias": True,
                                  "batch": 1, "calls": 1}]
    assert json.loads(path.read_text())["kind"] == "kernelrl.shapes"


def test_a_file_that_is_not_a_shapes_file_is_one_clear_error(tmp_path):
    (tmp_path / "x.json").write_text("{}")
    with pytest.raises(RecordError, match="not a kernelrl shapes file"):
        read_shapes(tmp_path / "x.json")


def test_the_cli_records_a_script(tmp_path, capsys):
    script = tmp_path / "model.py"
    script.write_text("import sys, torch, torch.nn as nn\n"
                      "n = int(sys.argv[1])\n"
                      "nn.Linear(n, 2 * n)(torch.randn(3, n))\n")
    out = tmp_path / "shapes.json"
    assert main(["record", "-o", str(out), "--", sys.executable, str(script), "8"]) == 0
    assert [(s["m"], s["n"], s["k"]) for s in read_shapes(out)] == [(3, 16, 8)]
    assert "recorded 1 distinct GEMMs" in capsys.readouterr().out


def test_the_cli_without_a_script_says_how_to_call_it(tmp_path, capsys):
    assert main(["record", "-o", str(tmp_path / "s.json"), "--", "python", "missing.py"]) == 2
    assert "kernelrl record -o shapes.json -- python SCRIPT" in capsys.readouterr().err


def test_the_script_gets_its_own_arguments_double_dash_included(tmp_path):
    script = tmp_path / "args.py"
    seen = tmp_path / "argv.json"
    script.write_text(f"import json, sys\njson.dump(sys.argv[1:], open({str(seen)!r}, 'w'))\n")
    assert main(["record", "-o", str(tmp_path / "s.json"), "--", "python", str(script), "a", "--", "--b"]) == 0
    assert json.loads(seen.read_text()) == ["a", "--", "--b"]
