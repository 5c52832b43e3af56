"""The packages a KernelBench candidate needs that this environment lacks, found before any worker starts (the
parent reads the source with `ast`; nothing of the candidate runs): the distributions it declares in a
`# requires: name, name` comment (pip names, e.g. `# requires: nvidia-cutlass-dsl`) that are not installed, and the
top-level modules it imports unconditionally (at module level, outside any `try`) that cannot be found. Such a pair
gets its `environment` verdict without a worker, and a run reports each missing package once with the pairs that
need it."""

from __future__ import annotations

import ast
import importlib.metadata
import importlib.util
import re
from pathlib import Path

REQUIRES_RE = re.compile(r"^\s*#\s*requires:\s*(.+?)\s*$", re.M | re.I)


def declared(source: str) -> list[str]:
    """Distribution names from `# requires:` comments, in order, without duplicates or version specifiers."""
    names = []
    for line in REQUIRES_RE.findall(source):
        for part in line.split(","):
            name = re.split(r"[\s<>=!~\[;]", part.strip(), maxsplit=1)[0]
            if name and name not in names:
                names.append(name)
    return names


def unconditional_imports(tree: ast.Module) -> list[str]:
    """Top-level module names imported by module-level statements (not inside try, if, def or class)."""
    names = []
    for node in tree.body:
        if isinstance(node, ast.Import):
            found = [a.name.split(".")[0] for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found = [node.module.split(".")[0]]
        else:
            continue
        names += [n for n in found if n not in names]
    return names


def _installed(distribution: str) -> bool:
    try:
        importlib.metadata.distribution(distribution)
        return True
    except importlib.metadata.PackageNotFoundError:
        return False


def missing_packages(path: str | Path) -> list[str]:
    """What the candidate at `path` needs and this environment lacks (empty when it parses badly: the static
    checks say why)."""
    source = Path(path).read_text()
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    out = [d for d in declared(source) if not _installed(d)]
    out += [m for m in unconditional_imports(tree) if not _findable(m) and m not in out]
    return out


def _findable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a module without a spec (__main__), or a broken parent
        return True  # not this check's to judge: the worker's import says what happens


def environment_detail(packages: list[str]) -> str:
    return (f"the candidate needs {', '.join(packages)}, which this environment does not have: install "
            f"{'it' if len(packages) == 1 else 'them'} where the evaluation runs, or leave "
            f"{'it' if len(packages) == 1 else 'them'} out")
