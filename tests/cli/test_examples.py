"""kernelrl.examples: the repository's examples/ folder beside the package (an editable install), and one line
that names the path and what to do where it is not there (a non-editable install)."""

import pytest

import kernelrl.examples as examples
from kernelrl.errors import UserError
from kernelrl.train.config import KernelBenchData


def test_own_tasks_and_candidates_are_found():
    assert examples.examples_path("kernelbench", "tasks") == examples.TASKS_DIR
    assert (examples.TASKS_DIR / "1_Matmul.py").is_file()
    assert (examples.CANDIDATES_DIR / "7_Softmax.py").is_file()


def test_missing_examples_folder_is_one_line_naming_the_path(tmp_path, monkeypatch):
    monkeypatch.setattr(examples, "EXAMPLES_DIR", tmp_path / "examples")
    with pytest.raises(UserError) as e:
        examples.examples_path("kernelbench", "tasks")
    msg = str(e.value)
    assert "\n" not in msg
    assert str(tmp_path / "examples" / "kernelbench" / "tasks") in msg
    assert "pip install -e ." in msg


def test_train_config_defaults_to_the_own_tasks():
    assert KernelBenchData().tasks == [str(examples.TASKS_DIR)]
