"""`kernelrl kb eval`: a table of static verdicts, bad inputs as lines, no crash and no made-up timings."""

from kernelrl.cli import main
from kernelrl.examples import TASKS_DIR


def test_bad_task_prints_a_line_and_does_not_crash(tmp_path, capsys):
    (tmp_path / "t").mkdir()
    (tmp_path / "c").mkdir()
    (tmp_path / "t" / "broken.py").write_text("x = 1\n")
    (tmp_path / "c" / "broken.py").write_text("class ModelNew:\n    pass\n")
    code = main(["kb", "eval", "--tasks", str(tmp_path / "t"), "--candidates", str(tmp_path / "c"),
                 "--device", "cpu", "--static-only"])
    out = capsys.readouterr().out
    assert code == 1
    assert "defines no Model, get_inputs, get_init_inputs" in out
    assert "static checks only: no GPU evaluation yet" in out


def test_honest_pair_passes_with_exit_code_0(tmp_path, capsys):
    task = (TASKS_DIR / "7_Softmax.py").read_text()
    (tmp_path / "7_Softmax.py").write_text(task.replace("class Model(", "class ModelNew("))
    code = main(["kb", "eval", "--tasks", str(TASKS_DIR / "7_Softmax.py"), "--candidates",
                 str(tmp_path / "7_Softmax.py"), "--device", "cpu", "--static-only"])
    out = capsys.readouterr().out
    assert code == 0 and "passed static checks" in out and "µs" not in out


def test_bad_path_is_one_stderr_line(tmp_path, capsys):
    code = main(["kb", "eval", "--tasks", str(tmp_path / "missing"), "--candidates", str(tmp_path)])
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert code == 1 and err == [f"kernelrl: {tmp_path / 'missing'}: no such file or folder"]
