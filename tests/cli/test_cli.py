"""The `kernelrl` command: expected failures are one line and exit code 2; a dummy bench runs end to end."""

import csv

import pytest

from kernelrl.baselines import BASELINES
from kernelrl.cli import main


@pytest.fixture(autouse=True)
def _private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("KERNELRL_CACHE", str(tmp_path / "cache"))


def error_lines(capsys):
    err = capsys.readouterr().err
    return [line for line in err.splitlines() if line.strip()]


def bench_args(tmp_path, *extra, runner="dummy"):
    return ["bench", "--runner", runner, "--db", str(tmp_path / "r.db"), *extra]


@pytest.mark.parametrize("extra, words", [
    (["--shapes", "12x3"], "unknown shape '12x3'"),
    (["--shapes", "64x64x64", "--mode", "fast"], "unknown mode fast"),
    (["--shapes", "64x64x64", "--baselines", "foo"], "unknown baseline foo"),
])
def test_bad_input_is_one_line_and_exit_code_2(tmp_path, capsys, extra, words):
    assert main(bench_args(tmp_path, *extra)) == 2
    lines = error_lines(capsys)
    assert len(lines) == 1, lines
    assert lines[0].startswith("kernelrl:") and words in lines[0]


def test_local_runner_without_gpu_is_one_line_and_exit_code_2(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr("kernelrl.environment.gpu_info", lambda: {})  # as on a machine without nvidia-smi
    assert main(bench_args(tmp_path, "--shapes", "64x64x64", runner="local")) == 2
    lines = error_lines(capsys)
    assert len(lines) == 1, lines
    assert lines[0].startswith("kernelrl:") and "no NVIDIA GPU" in lines[0] and "--runner dummy" in lines[0]


def test_error_message_keeps_bracketed_text(tmp_path, capsys):
    """Messages are data, not rich markup: a path with [brackets] must come out as written."""
    missing = tmp_path / "[red]x" / "k.cu"
    assert main(bench_args(tmp_path, "--shapes", "64x64x64", "--candidates", str(missing))) == 2
    err = capsys.readouterr().err
    assert err.startswith("kernelrl:")
    assert "[red]x" in err, err


def test_dummy_bench_writes_the_csv(tmp_path, capsys):
    out = tmp_path / "out" / "r.csv"
    assert main(bench_args(tmp_path, "--shapes", "64x64x64", "--csv", str(out))) == 0
    with open(out, newline="") as f:
        rows = list(csv.DictReader(f))
    assert {(r["m"], r["n"], r["k"], r["mode"]) for r in rows} == {("64", "64", "64", "device")}
    assert sorted(r["method"] for r in rows) == sorted(BASELINES)
    assert (tmp_path / "r.db").exists()
    assert "measured 1 shapes (0 resumed)" in capsys.readouterr().out


def test_dummy_bench_resumes_on_the_second_run(tmp_path, capsys):
    args = bench_args(tmp_path, "--shapes", "64x64x64,128x64x64")
    assert main(args) == 0
    capsys.readouterr()
    assert main(args) == 0
    assert "measured 0 shapes (2 resumed)" in capsys.readouterr().out


def test_eval_of_a_dummy_candidate(tmp_path, capsys):
    kernel = tmp_path / "my_kernel.cu"
    kernel.write_text("// dummy\n")
    out = tmp_path / "e.csv"
    assert main(["eval", str(kernel), "--runner", "dummy", "--shape", "64x64x64", "--db", str(tmp_path / "r.db"),
                 "--csv", str(out)]) == 0
    with open(out, newline="") as f:
        methods = sorted(r["method"] for r in csv.DictReader(f))
    assert methods == sorted(["my_kernel", "torch", "cublas_nn", "cublas_tn"])


def test_unknown_command_is_an_argparse_error(capsys):
    with pytest.raises(SystemExit) as info:
        main(["frobnicate"])
    assert info.value.code == 2


def test_tune_from_a_database_needs_one_to_read(tmp_path, capsys):
    from kernelrl.cli import main
    assert main(["tune", "--shapes", "64x64x64", "--out", str(tmp_path / "lib"), "--from-db", "NVIDIA H200"]) == 2
    err = capsys.readouterr().err
    assert "--from-db" in err and "--db" in err and len(err.strip().splitlines()) == 1


def test_tune_refuses_a_margin_below_one(tmp_path, capsys):
    from kernelrl.cli import main
    assert main(["tune", "--shapes", "64x64x64", "--out", str(tmp_path / "lib"), "--runner", "dummy",
                 "--min-gain", "0.9"]) == 2
    err = capsys.readouterr().err
    assert "--min-gain 0.9" in err and len(err.strip().splitlines()) == 1
