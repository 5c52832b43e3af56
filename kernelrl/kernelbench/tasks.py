"""Discover, inspect, match and load KernelBench-format tasks and candidates.

Static inspection parses with `ast` only: nothing a candidate contains runs in the parent process. `load_module`
imports a file under a unique module name, for the evaluation worker (and for our own trusted tasks).

Matching, in order, for each candidate (tasks and candidates keep their level, `levelN` being the nearest
enclosing folder of that name, if any):
1. an explicit `--map task=candidate` entry (either side: a stem, `levelN/stem`, or a path);
2. the same level and stem;
3. the same stem, when exactly one task has it;
4. KernelBench naming `<n>_<Name>.py`: the same problem number `n` (and the same level, when the candidate has
   one), when exactly one task has it.
Every bad input becomes a `PairCheck` with one line of reason, and the run continues."""

from __future__ import annotations

import ast
import hashlib
import importlib.util
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

LEVEL_RE = re.compile(r"^level_?(\d+)$", re.IGNORECASE)
NUMBER_RE = re.compile(r"^(\d+)_")
TASK_NAMES = ("Model", "get_inputs", "get_init_inputs")


@dataclass
class Signature:
    """The argument list of a method without `self`: names, defaults (as source text), *args and **kwargs."""

    args: tuple[str, ...] = ()
    defaults: tuple[str, ...] = ()
    vararg: str | None = None
    kwarg: str | None = None

    @classmethod
    def of(cls, fn: ast.FunctionDef | None) -> "Signature":
        if fn is None:
            return cls()
        a = fn.args
        names = [x.arg for x in (*a.posonlyargs, *a.args)][1:] + [x.arg for x in a.kwonlyargs]
        defaults = [ast.unparse(d) for d in a.defaults] + [ast.unparse(d) for d in a.kw_defaults if d is not None]
        return cls(tuple(names), tuple(defaults), a.vararg.arg if a.vararg else None,
                   a.kwarg.arg if a.kwarg else None)

    def default_at(self, i: int) -> str | None:
        """The default (source text) of positional argument i, or None where it has none."""
        first = len(self.args) - len(self.defaults)
        return self.defaults[i - first] if first <= i < len(self.args) else None

    def __str__(self) -> str:
        parts = ["self", *self.args]
        n_plain = len(parts) - len(self.defaults)
        parts = [p if i < n_plain else f"{p}={self.defaults[i - n_plain]}" for i, p in enumerate(parts)]
        parts += [f"*{self.vararg}"] if self.vararg else []
        parts += [f"**{self.kwarg}"] if self.kwarg else []
        return f"({', '.join(parts)})"


@dataclass
class SourceFile:
    """One task or candidate file, inspected with `ast` only. `error` is one line when the file is unusable."""

    path: Path
    level: int | None
    source: str = ""
    tree: ast.Module | None = None
    error: str | None = None
    syntax_error: bool = False  # `error` says the file does not parse
    init: Signature | None = None
    forward: Signature | None = None

    @property
    def stem(self) -> str:
        return self.path.stem

    @property
    def number(self) -> int | None:
        m = NUMBER_RE.match(self.stem)
        return int(m.group(1)) if m else None

    @property
    def name(self) -> str:
        return f"level{self.level}/{self.stem}" if self.level is not None else self.stem


@dataclass
class PairCheck:
    """A task–candidate pair (either may be missing) and what loading, matching and the static checks said (the
    verdict keys themselves are kernelrl.harness.verdicts.Verdict)."""

    task: SourceFile | None
    candidate: SourceFile | None
    reasons: list[str] = field(default_factory=list)
    findings: list = field(default_factory=list)  # static_checks.Finding

    @property
    def ok(self) -> bool:
        return not self.reasons and not self.findings

    @property
    def status(self) -> str:
        if self.task is None:
            return "no task"
        if self.candidate is None:
            return "no candidate" if self.task.error is None else "bad task"
        if self.task.error:
            return "bad task"
        if self.reasons:
            return "bad candidate"
        return "flagged" if self.findings else "passed static checks"


def level_of(path: Path) -> int | None:
    for part in reversed(path.parent.parts):
        m = LEVEL_RE.match(part)
        if m:
            return int(m.group(1))
    return None


def discover(paths: Sequence[str | Path]) -> tuple[list[Path], list[str]]:
    """Python files from files and folders (recursively; `__init__.py` and `_`-prefixed files skipped), sorted,
    and one line for each path that does not exist or is not a .py file."""
    files, errors = [], []
    for p in map(Path, paths):
        if p.is_dir():
            files += sorted(f for f in p.rglob("*.py") if not f.name.startswith("_"))
        elif p.is_file() and p.suffix == ".py":
            files.append(p)
        elif p.exists():
            errors.append(f"{p}: not a .py file")
        else:
            errors.append(f"{p}: no such file or folder")
    return files, errors


def _parse(path: Path) -> SourceFile:
    f = SourceFile(path=path, level=level_of(path))
    try:
        f.source = path.read_text()
        f.tree = ast.parse(f.source, filename=str(path))
    except SyntaxError as exc:
        f.error, f.syntax_error = f"does not parse: line {exc.lineno}: {exc.msg}", True
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        f.error = f"cannot read: {exc}"
    return f


def _top_level(tree: ast.Module) -> dict[str, ast.AST]:
    out: dict[str, ast.AST] = {}
    for node in tree.body:
        if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            out[node.name] = node
        elif isinstance(node, ast.Assign):
            out.update({t.id: node for t in node.targets if isinstance(t, ast.Name)})
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            out.update({(a.asname or a.name).split(".")[0]: node for a in node.names})
    return out


def _method(cls: ast.ClassDef, name: str, names: dict | None = None, seen: frozenset = frozenset()) \
        -> ast.FunctionDef | None:
    """The method as the class has it: its own, else inherited from a base class defined in the same file (a
    subclass of a copied reference keeps its constructor); None where neither defines it."""
    own = next((n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == name), None)
    if own is not None or not names:
        return own
    for base in cls.bases:
        parent = names.get(base.id) if isinstance(base, ast.Name) else None
        if isinstance(parent, ast.ClassDef) and parent.name not in seen:
            found = _method(parent, name, names, seen | {cls.name})
            if found is not None:
                return found
    return None


def _inspect(f: SourceFile, cls_name: str, required: tuple[str, ...]) -> SourceFile:
    if f.error:
        return f
    assert f.tree is not None  # _parse sets `tree` or `error`
    names = _top_level(f.tree)
    missing = [n for n in required if n not in names]
    if missing:
        f.error = f"defines no {', '.join(missing)}"
        return f
    cls = names[cls_name]
    if not isinstance(cls, ast.ClassDef):
        f.error = f"{cls_name} is not a class"
        return f
    f.init, f.forward = Signature.of(_method(cls, "__init__", names)), Signature.of(_method(cls, "forward", names))
    return f


def inspect_task(path: str | Path) -> SourceFile:
    return _inspect(_parse(Path(path)), "Model", TASK_NAMES)


def inspect_candidate(path: str | Path) -> SourceFile:
    return _inspect(_parse(Path(path)), "ModelNew", ("ModelNew",))


def accepts_calls_of(cand: Signature, task: Signature) -> bool:
    """Whether every positional call the task's signature takes means the same to the candidate's. KernelBench
    calls the constructor and forward positionally, so names do not matter: the arity and the defaults do (an
    argument the task lets a call leave out must default to the same value)."""
    if cand.vararg:
        return True
    n_task, n_cand = len(task.args), len(cand.args)
    required_task, required_cand = n_task - len(task.defaults), n_cand - len(cand.defaults)
    if n_cand < n_task or required_cand > required_task:
        return False
    for i in range(required_task, n_task):  # an argument a call may omit: the same default in both
        if cand.default_at(i) != task.default_at(i):
            return False
    return True


def signature_mismatch(task: SourceFile, cand: SourceFile) -> str | None:
    """One line when a positional call of Model's constructor or forward would not mean the same to ModelNew's
    (count of arguments, defaults); argument names may differ."""
    for what, t, c in (("constructor", task.init, cand.init), ("forward", task.forward, cand.forward)):
        assert t is not None and c is not None  # both files inspected without error (check_pair)
        if not accepts_calls_of(c, t):
            return f"{what} signature differs: Model{t} vs ModelNew{c} (arity or defaults)"
    return None


def _resolve(spec: str, files: list[SourceFile]) -> list[SourceFile]:
    p = Path(spec)
    key = spec[:-3] if spec.endswith(".py") else spec
    by_path = [f for f in files if p.exists() and f.path.resolve() == p.resolve()]
    return by_path or [f for f in files if key in (f.name, f.stem)]


def match(tasks: list[SourceFile], candidates: list[SourceFile],
          mapping: dict[str, str] | None = None) -> tuple[list[tuple[SourceFile | None, SourceFile | None]], list[str]]:
    """Pairs (task, candidate), with None on a side that has no partner, and one line per bad mapping entry."""
    errors, used = [], set()
    taken: dict[int, SourceFile] = {}  # id(task) -> candidate
    for t_spec, c_spec in (mapping or {}).items():
        ts, cs = _resolve(t_spec, tasks), _resolve(c_spec, candidates)
        if len(ts) != 1 or len(cs) != 1:
            side, spec, found = ("task", t_spec, ts) if len(ts) != 1 else ("candidate", c_spec, cs)
            errors.append(f"--map {t_spec}={c_spec}: " + (f"no {side} named {spec}" if not found else
                                                           f"{spec} names {len(found)} {side}s; use levelN/stem"))
            continue
        taken[id(ts[0])] = cs[0]
        used.add(id(cs[0]))
    for c in candidates:
        if id(c) in used:
            continue
        options = [t for t in tasks if t.level == c.level and t.stem == c.stem and id(t) not in taken]
        if not options:
            same_stem = [t for t in tasks if t.stem == c.stem]
            options = same_stem if len(same_stem) == 1 and id(same_stem[0]) not in taken else []
        if not options and c.number is not None:
            same_n = [t for t in tasks if t.number == c.number and c.level in (None, t.level)]
            options = same_n if len(same_n) == 1 and id(same_n[0]) not in taken else []
        if options:
            taken[id(options[0])] = c
            used.add(id(c))
    pairs: list[tuple[SourceFile | None, SourceFile | None]] = [(t, taken.get(id(t))) for t in tasks]
    pairs += [(None, c) for c in candidates if id(c) not in used]
    return pairs, errors


def check_pair(task: SourceFile | None, cand: SourceFile | None) -> PairCheck:
    """Loading and signature verdicts for one pair (static checks are added by the caller)."""
    v = PairCheck(task, cand)
    if task is None:
        assert cand is not None  # match() never pairs None with None
        v.reasons.append(f"{cand.name}: no task matches this candidate")
    elif task.error:
        v.reasons.append(f"task {task.name}: {task.error}")
    elif cand is None:
        v.reasons.append(f"task {task.name}: no candidate")
    elif cand.error:
        v.reasons.append(f"candidate {cand.name}: {cand.error}")
    else:
        bad = signature_mismatch(task, cand)
        if bad:
            v.reasons.append(f"candidate {cand.name}: {bad}")
    return v


def load_module(path: str | Path, on_code=None):
    """Import a file under a unique module name (its own namespace; never shared between files or runs of the
    same path with different contents). For the evaluation worker and trusted files only: this runs the code.
    `on_code(code)` gets the module's code object before it runs (every function of the file is made from it)."""
    path = Path(path).resolve()
    digest = hashlib.sha1(f"{path}:{path.stat().st_mtime_ns}:{path.read_bytes()!r}".encode()).hexdigest()[:12]
    name = f"kernelrl_kb_{re.sub(r'[^0-9a-zA-Z_]', '_', path.stem)}_{digest}"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None, f"{path}: no module loader for this file"
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses and pickling look modules up here
    try:
        if on_code is None:
            spec.loader.exec_module(module)
        else:  # what exec_module does, with the code object in hand
            code = spec.loader.get_code(name)  # type: ignore[attr-defined]
            on_code(code)
            exec(code, module.__dict__)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return module
