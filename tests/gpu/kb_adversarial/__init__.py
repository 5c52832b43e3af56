"""The adversarial KernelBench corpus: one candidate (`class ModelNew`) per cheat the evaluator must reject. Each
file's module docstring names, on lines of their own, the task it targets (`task:`, a file of
examples/kernelbench/tasks), the verdict the dynamic evaluator must give (`reason:`, the start of the reason
string; keys in kernelrl.kernelbench.worker.REASONS), the static rules that flag it (`static:`, ids of
kernelrl.kernelbench.static_checks.RULES, or `none`) and whether the dynamic check also runs on the CPU worker
(`cpu: yes|no`). tests/kernelbench/test_corpus.py checks the metadata and the static layer (and runs the `cpu: yes`
files through the CPU worker); tests/gpu/test_kernelbench_gpu.py runs every file on the GPU. Both ask for own
kernels (KBSettings.own_kernels: the kernel census after every other check)"""

import ast
import re
from pathlib import Path


def meta(path: Path) -> dict[str, str]:
    """The `key: value` lines (task, reason, static, cpu) of a corpus file's module docstring."""
    doc = ast.get_docstring(ast.parse(Path(path).read_text())) or ""
    return dict(re.findall(r"^(task|reason|static|cpu):[ \t]*(.*?)\s*$", doc, re.M))
