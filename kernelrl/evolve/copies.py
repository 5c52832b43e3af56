"""Copies: a model's kernel that repeats one it was shown (or one proposed earlier for the same target) earns no
improvement, so a policy cannot learn to copy the best variant in its prompt.

Two kernels are the same
- as a `copy` when they are equal once comments are gone and whitespace is collapsed;
- as a `renamed copy` when, besides, the names the kernel itself defines are renamed consistently: each defined
  name becomes a placeholder numbered by its first appearance. Defined names are, in Python (read with `ast`), the
  functions, classes, arguments, assigned names and attributes set on `self`; in C, C++ and CUDA (read by pattern,
  an approximation), the names declared after a type, `struct`/`class`/`using`/`#define` and template parameters.
  Names the kernel only uses (library functions such as `expf` or `__expf`, intrinsics, torch calls) are kept, so
  a kernel that swaps one library call for another is a different kernel."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from kernelrl.evolve.prompts import strip_comments

TOKEN = re.compile(r"[A-Za-z_]\w*|\d[\w.]*|\"(?:\\.|[^\"\\])*\"|'(?:\\.|[^'\\])*'|\S")
C_TYPES = ("void", "int", "unsigned", "signed", "long", "short", "char", "bool", "float", "double", "half", "auto",
           "size_t", "int64_t", "int32_t", "uint32_t", "uint64_t", "int8_t", "uint8_t", "__half", "__nv_bfloat16",
           "half2", "float2", "float4", "int4", "dim3", "const", "constexpr", "typename", "class", "struct", "using")
# the name is a lookahead, so `const int N` yields `int` and then `N` (a captured type word is dropped below)
C_DECLARED = re.compile(r"\b(?:" + "|".join(C_TYPES) + r"|[A-Za-z_]\w*_t|[A-Z]\w*)\s*[*&]*\s+(?=([A-Za-z_]\w*))")
C_DEFINE = re.compile(r"#\s*define\s+([A-Za-z_]\w*)")


@dataclass(frozen=True)
class CopyMatch:
    kind: str  # "copy" or "renamed copy"
    of: str  # the name of the kernel it repeats
    key: object = None  # what that kernel was added under (a population id)

    def verdict(self) -> str:
        return f"copy: {'a renamed ' if self.kind == 'renamed copy' else ''}copy of {self.of}, which was already " \
               f"shown or proposed"


def _defined_python(source: str) -> set[str]:
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return set()
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store) and \
                isinstance(node.value, ast.Name) and node.value.id == "self":
            names.add(node.attr)
    return names - {"self", "ModelNew", "forward", "__init__"}  # the contract's own names are not the model's


def _defined_c(source: str) -> set[str]:
    return (set(C_DECLARED.findall(source)) | set(C_DEFINE.findall(source))) - set(C_TYPES)


def normal_form(source: str, language: str) -> str:
    """The source without comments, its tokens joined by single spaces."""
    return " ".join(TOKEN.findall(strip_comments(source, language)))


def renamed_form(source: str, language: str) -> str:
    """The normal form with every name the source defines replaced by a placeholder numbered by first use."""
    defined = _defined_python(source) if language == "python" else _defined_c(source)
    names: dict[str, str] = {}
    out = []
    for tok in TOKEN.findall(strip_comments(source, language)):
        if tok in defined:
            tok = names.setdefault(tok, f"_n{len(names)}")
        out.append(tok)
    return " ".join(out)


class CopyIndex:
    """The kernels a new one must not repeat (shown in its prompt, or proposed earlier for the same target), by
    name; their forms are computed once."""

    def __init__(self, language: str):
        self.language = language
        self.normal: dict[object, tuple[str, str]] = {}  # key -> (name, normal form)
        self.renamed: dict[object, str] = {}

    def add(self, name: str, source: str, key=None) -> None:
        key = name if key is None else key
        if key not in self.normal:
            self.normal[key] = (name, normal_form(source, self.language))
            self.renamed[key] = renamed_form(source, self.language)

    def find(self, source: str) -> CopyMatch | None:
        normal = normal_form(source, self.language)
        for key, (name, form) in self.normal.items():
            if form == normal:
                return CopyMatch("copy", name, key)
        renamed = renamed_form(source, self.language)
        for key, form in self.renamed.items():
            if form == renamed:
                return CopyMatch("renamed copy", self.normal[key][0], key)
        return None
