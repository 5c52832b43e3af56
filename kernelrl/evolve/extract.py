"""Code extraction from a model's reply: the last fenced block in the target's language.

Replies go wrong in a few recurring ways, and each gets its own one-line verdict instead of an exception, because
the verdict is shown to the model in later prompts: no code at all, a reply cut off inside its code block (or
inside its reasoning), and code split over several files where the contract asks for one."""

from __future__ import annotations

import re
from dataclasses import dataclass

from kernelrl.harness.verdicts import Verdict

LANGUAGES = {
    "cuda": ("cuda", "cu", "c++", "cpp", "cxx", "cc", "c", "cuh"),
    "python": ("python", "py", "python3"),
}
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})[ \t]*([^\s`]*)[^`\n]*$")
_THINK = re.compile(r"<think>.*?</think>", re.S)
_LOCAL_INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.M)
_FILE_LABEL = re.compile(r"([\w./-]+\.(?:cu|cuh|h|hpp|cpp|cc|py))\b")
ANALYSIS_CHARS = 8000


@dataclass
class Block:
    lang: str
    text: str
    closed: bool
    label: str | None  # a file name written just before the block (``**kernel.cuh**``), if any
    start: int = 0  # line index of the opening fence


@dataclass
class Extraction:
    """The code and the analysis before it, or a verdict saying why there is no usable code."""

    code: str | None
    verdict: str | None  # the reason line (key `malformed` and its detail), or None with code
    analysis: str = ""

    @property
    def ok(self) -> bool:
        return self.code is not None

    @property
    def key(self) -> Verdict | None:
        return None if self.ok else Verdict.MALFORMED


def blocks(text: str) -> list[Block]:
    """Every fenced block, in order; an unclosed last block is returned with closed=False."""
    out: list[Block] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        fence, lang = m.group(1), m.group(2).lower()
        label = _label(lines[i - 1] if i else "")
        body, j = [], i + 1
        while j < len(lines):
            close = _FENCE.match(lines[j])
            if close and close.group(1)[0] == fence[0] and len(close.group(1)) >= len(fence) and not close.group(2):
                break
            body.append(lines[j])
            j += 1
        out.append(Block(lang, "\n".join(body) + "\n", j < len(lines), label, i))
        i = j + 1
    return out


def _label(line: str) -> str | None:
    m = _FILE_LABEL.search(line)
    return m.group(1) if m and len(line) < 120 else None


def extract(reply: str | None, language: str = "cuda", entry: str = "kernelrl_hgemm",
            finish_reason: str | None = None) -> Extraction:
    """The last block in `language` (one of LANGUAGES); `entry` is the name the contract's file must define, used
    to tell one file from several."""
    if reply is None or not reply.strip():
        return _malformed("empty reply")
    if "<think>" in reply and "</think>" not in reply:
        return _malformed("the reply ended inside its reasoning (<think> never closed), "
                          f"before any code{_why_cut(finish_reason)}")
    text = _THINK.sub("", reply)
    names = LANGUAGES[language]
    found = blocks(text)
    mine = [b for b in found if b.lang in names] or [b for b in found if not b.lang and entry in b.text]
    if not mine:
        other = sorted({b.lang or "unlabelled" for b in found})
        seen = f" (found {', '.join(other)} blocks)" if found else ""
        return _malformed(f"no fenced ```{language} block in the reply{seen}")
    last = mine[-1]
    analysis = "\n".join(text.splitlines()[:last.start]).strip()[-ANALYSIS_CHARS:]
    if not last.closed:
        return _malformed(f"the last ```{language} block is not closed: the reply was cut off "
                          f"after {len(last.text.splitlines())} lines of code{_why_cut(finish_reason)}", analysis)
    if not last.text.strip():
        return _malformed(f"the last ```{language} block is empty", analysis)
    several = _several_files(mine, entry, language)
    if several:
        return _malformed(f"{several}; send one self-contained file", analysis)
    return Extraction(last.text, None, analysis)


def _malformed(detail: str, analysis: str = "") -> Extraction:
    return Extraction(None, Verdict.MALFORMED.reason(detail), analysis)


def _several_files(mine: list[Block], entry: str, language: str) -> str | None:
    last = mine[-1]
    if language == "cuda":
        local = [inc for inc in _LOCAL_INCLUDE.findall(last.text) if not inc.startswith(("cuda", "cute/", "cutlass/"))]
        if local:
            return f"the code includes its own header{'s' if len(local) > 1 else ''} ({', '.join(local)})"
    labels = {b.label for b in mine if b.label}
    if len(labels) > 1:
        return f"the code is split over {len(labels)} files ({', '.join(sorted(labels))})"
    if entry not in last.text and any(entry in b.text for b in mine[:-1]):
        return f"the last block does not define {entry}; an earlier block does (several files)"
    return None


def _why_cut(finish_reason: str | None) -> str:
    return " (the server stopped at max_tokens)" if finish_reason == "length" else ""
