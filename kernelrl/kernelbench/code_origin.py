"""Whether code that names a trusted file came from it.

The worker's checks tell the candidate's frames from library and harness frames by `co_filename` (a library may
walk the stack, start threads, catch its own exceptions). A file name is only a claim: `compile(src, torch_file)`,
`code.replace(co_filename=...)` and `_imp._fix_co_filename` put any name on any code, and a frame walk or a
try/except fallback compiled so would read as torch's own (corpus: reads_reference_frames_disguised,
fallback_disguised). So a frame counts as trusted only where its code object is one the named file compiles to: the
file (or the frozen module) is compiled once per worker and its code objects' signatures kept; a code object is
trusted when its signature is among them. Results are cached per code object (code objects live as long as their
functions; the cache holds them, so an id is never reused for another)."""

from __future__ import annotations

import _imp
import marshal
import os
from types import CodeType

FROZEN = "<frozen "
# frozen modules whose code names another module than they are frozen as
FROZEN_AS = {"importlib._bootstrap": "_frozen_importlib", "importlib._bootstrap_external": "_frozen_importlib_external"}


def harness_root() -> str:
    """kernelrl's own package folder (a realpath prefix ending in a separator)."""
    return os.path.dirname(os.path.dirname(os.path.realpath(__file__))) + os.sep


def signature(code: CodeType) -> tuple:
    """What a code object does and where it claims to be from, hashable: nested code objects by their own
    signature."""
    return (code.co_name, code.co_firstlineno, code.co_code, code.co_names, code.co_varnames, code.co_freevars,
            code.co_cellvars, tuple(_constant(c) for c in code.co_consts))


def _constant(value) -> tuple:
    """A constant by value, never by identity, and the same in every process: a frozenset's members sorted (its
    repr follows string hashing, which differs from process to process)."""
    if isinstance(value, CodeType):
        return ("code", signature(value))
    if isinstance(value, tuple):
        return ("tuple", tuple(_constant(v) for v in value))
    if isinstance(value, frozenset):
        return ("frozenset", tuple(sorted((_constant(v) for v in value), key=repr)))
    return (type(value).__name__, repr(value))


def code_names(data) -> set[str]:
    """The file names the code objects in marshalled `data` carry (none where it holds no code or cannot be read)."""
    try:
        value = marshal.loads(data)
    except (ValueError, EOFError, TypeError):
        return set()
    return {c.co_filename for c in _all_codes(value)} if isinstance(value, CodeType) else set()


def _all_codes(code: CodeType):
    yield code
    for const in code.co_consts:
        if isinstance(const, CodeType):
            yield from _all_codes(const)


class CodeOrigins:
    """Trusted code: under one of `roots` (realpath prefixes ending in a separator, or `<frozen`) by name, and one of
    the code objects that file compiles to."""

    def __init__(self, roots: tuple[str, ...]):
        self.roots = tuple(roots)
        self._files: dict[str, frozenset | None] = {}
        self._codes: dict[int, tuple[CodeType, bool]] = {}

    def named_trusted(self, filename: str) -> bool:
        """The name alone: under a trusted root (what the checks believed before this module)."""
        if filename.startswith(FROZEN):
            return "<frozen" in self.roots
        return os.path.realpath(filename).startswith(tuple(r for r in self.roots if not r.startswith("<")))

    def trusted(self, code: CodeType) -> bool:
        seen = self._codes.get(id(code))
        if seen is not None and seen[0] is code:
            return seen[1]
        verdict = self.named_trusted(code.co_filename) and self._genuine(code)
        self._codes[id(code)] = (code, verdict)
        return verdict

    def _genuine(self, code: CodeType) -> bool:
        filename = code.co_filename
        if filename not in self._files:
            self._files[filename] = self._signatures(filename)
        known = self._files[filename]
        return known is not None and signature(code) in known

    @staticmethod
    def _signatures(filename: str) -> frozenset | None:
        """Every code object's signature the file (or frozen module) compiles to; None where it cannot be read."""
        try:
            if filename.startswith(FROZEN) and filename.endswith(">"):
                name = filename[len(FROZEN):-1]
                top = _imp.get_frozen_object(FROZEN_AS.get(name, name))
            else:
                with open(filename, "rb") as f:
                    source = f.read()
                top = compile(source, filename, "exec", dont_inherit=True)
        except (OSError, SyntaxError, ValueError, ImportError, TypeError):
            return None
        return frozenset(signature(c) for c in _all_codes(top))
