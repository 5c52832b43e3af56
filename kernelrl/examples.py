"""The repository's examples/ folder, beside the package in a clone (installed with `pip install -e .`); a
non-editable install does not ship it. `TASKS_DIR`: kernelrl's own KernelBench-format tasks (one per file,
`<n>_<Name>.py`, fp32 inputs, modest shapes); `CANDIDATES_DIR`: honest hand-written CUDA candidates for 8 of them,
under the task's file name, so `kernelrl kb eval --tasks examples/kernelbench/tasks --candidates
examples/kernelbench/candidates` pairs them (each compiles its kernels with `load_inline` when imported: a GPU
machine, ninja on PATH). Code that needs a folder at run time asks `examples_path`, which says what to do when it
is not there."""

from pathlib import Path

from kernelrl.errors import UserError

EXAMPLES_DIR = Path(__file__).resolve().parent.parent / "examples"
TASKS_DIR = EXAMPLES_DIR / "kernelbench" / "tasks"
CANDIDATES_DIR = EXAMPLES_DIR / "kernelbench" / "candidates"


def examples_path(*parts: str) -> Path:
    """EXAMPLES_DIR/parts, or a UserError naming the path looked for when it is not there."""
    path = EXAMPLES_DIR.joinpath(*parts)
    if not path.exists():
        raise UserError(f"{path} not found: the examples ship with the repository, not the installed package; "
                        "install kernelrl from a clone (pip install -e .) or name your own files")
    return path
