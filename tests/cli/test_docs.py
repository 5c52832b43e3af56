"""The README and docs/ stay true to the repository (CPU, no torch, seconds).

1. Every repository path they name exists. A path is checked where it appears in inline code or a fenced code block
   and its first component is one of PATH_ROOTS (resolved from the repository root), or where it is the target of a
   markdown link without a scheme (resolved from the page's own folder; `#anchor` dropped). Skipped, by one explicit
   rule (`_placeholder`): a token holding a placeholder character (`<`, `>`, `{`, `}`, `$`, `[`, `]`, `...`) or an
   ALL-CAPS path component (`LIB/`, `PATH`, `TABLE.csv`). A token with `*` or `?` is a glob and must match something.
2. Every `kernelrl <subcommand> ...` shown in a bash/sh/console fence or in inline code parses with the command's own
   argparse tree (kernelrl/cli/parser.py: build_parser), argv split with shlex after the leading `kernelrl`. A line
   is split into commands at `&&`, `||`, `|`, `;` and `&`; leading `VAR=value` words are dropped; a `...` word
   ("and the other options") is dropped and `[--flag]` brackets are removed. A bare `kernelrl`, or `kernelrl` with
   only subcommand names (`kernelrl tune`, `kernelrl kb eval`), names a command: its subcommands must exist.
   UNPARSEABLE lists the commands that cannot be parsed at all, each with why.
3. README.md is at most 150 lines.
"""

from __future__ import annotations

import argparse
import contextlib
import glob
import io
import re
import shlex
from pathlib import Path

import pytest

from kernelrl.cli.parser import build_parser

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
PATH_ROOTS = ("kernelrl/", "tests/", "benchmarks/", "examples/", "docs/", ".ci/")
COMMAND_FENCES = {"bash", "sh", "shell", "console"}
README_MAX_LINES = 150

# Commands shown with shell placeholders that argparse cannot take as they stand (none today). Map the command as
# written in the page (whitespace collapsed) to why it is skipped.
UNPARSEABLE: dict[str, str] = {}

_FENCE = re.compile(r"^\s*```\s*([A-Za-z0-9_+-]*)\s*$")
_INLINE = re.compile(r"(?<!`)`([^`\n]+(?:\n[^`\n]+)*?)`(?!`)")
_LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
_CAPS = re.compile(r"^[A-Z][A-Z0-9_]*(\.[A-Za-z0-9]+)?$")


def _split(page: Path):
    """(fenced blocks as (language, text)), prose with the fences removed."""
    blocks, prose, current, lang = [], [], None, ""
    for line in page.read_text().splitlines():
        m = _FENCE.match(line)
        if m and current is None:
            current, lang = [], m.group(1).lower()
        elif line.strip().startswith("```") and current is not None:
            blocks.append((lang, "\n".join(current)))
            current = None
        elif current is not None:
            current.append(line)
        else:
            prose.append(line)
    assert current is None, f"{page.name}: a code fence is not closed"
    return blocks, "\n".join(prose)


def _inline_spans(prose: str) -> list[str]:
    return [" ".join(m.group(1).split()) for m in _INLINE.finditer(prose)]


def _placeholder(token: str) -> bool:
    if any(c in token for c in "<>{}$[]") or "..." in token:
        return True
    return any(_CAPS.match(part) for part in token.strip("/").split("/"))


def _path_tokens(text: str):
    for word in re.split(r"[\s,;()\[\]'\"=]+", text):
        word = word.rstrip(".:")
        if word.startswith(PATH_ROOTS):
            yield word


def _named_paths(page: Path):
    """(kind, token, resolved path or None for a glob)."""
    blocks, prose = _split(page)
    texts = _inline_spans(prose) + [text for _, text in blocks]
    for text in texts:
        for token in _path_tokens(text):
            if not _placeholder(token):
                yield "path", token
    for m in _LINK.finditer(prose):
        target = m.group(1)
        if re.match(r"^[A-Za-z][A-Za-z0-9+.-]*:", target) or target.startswith("#"):
            continue
        yield "link", target.split("#", 1)[0]


def _all_named_paths():
    for page in PAGES:
        for kind, token in _named_paths(page):
            yield page, kind, token


def test_every_named_path_exists():
    missing = []
    for page, kind, token in _all_named_paths():
        base = ROOT if kind == "path" else page.parent
        if kind == "path" and any(c in token for c in "*?"):
            if not glob.glob(str(base / token)):
                missing.append(f"{page.relative_to(ROOT)}: `{token}` matches nothing")
        elif not (base / token).exists():
            missing.append(f"{page.relative_to(ROOT)}: {kind} {token}")
    assert not missing, "paths named in the docs that do not exist:\n" + "\n".join(missing)


def _commands_in(text: str):
    """Each `kernelrl ...` command of one shell line or inline span, as argv after `kernelrl`."""
    lexer = shlex.shlex(text, posix=True, punctuation_chars="&|;")
    lexer.whitespace_split = True
    lexer.commenters = "#"
    try:
        words = list(lexer)
    except ValueError:  # unbalanced quotes: prose, not a command
        return
    segment: list[str] = []
    for word in words + [";"]:
        if word and set(word) <= set("&|;"):
            while segment and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", segment[0]):
                segment.pop(0)
            if segment and segment[0] == "kernelrl":
                yield segment[1:]
            segment = []
        else:
            segment.append(word)


def _shown_commands():
    """(page, the command as shown, argv)."""
    for page in PAGES:
        blocks, prose = _split(page)
        texts = _inline_spans(prose)
        for lang, block in blocks:
            if lang in COMMAND_FENCES:
                texts += [line for line in block.replace("\\\n", " ").splitlines()]
        for text in texts:
            if not re.search(r"(^|[\s;&|])kernelrl\s", text + " "):
                continue
            for argv in _commands_in(text):
                yield page, " ".join(["kernelrl", *argv]), argv


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _names_only(argv: list[str]) -> bool:
    """True where argv is only subcommand names (`tune`, `kb eval`): a command named, not shown; they must exist."""
    parser = build_parser()
    for word in argv:
        subs = _subparsers(parser)
        if word not in subs:
            return False
        parser = subs[word]
    return True


def _clean(argv: list[str]) -> list[str]:
    return [w.strip("[]") for w in argv if w != "..."]


def test_every_shown_command_parses():
    shown = list(_shown_commands())
    assert len(shown) > 20, "the extraction found too few commands: the rule is broken"
    failures = []
    for page, command, argv in shown:
        argv = _clean(argv)
        if command in UNPARSEABLE or not argv or _names_only(argv):
            continue
        err = io.StringIO()
        try:
            with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
                build_parser().parse_args(argv)
        except SystemExit as e:
            if e.code:
                failures.append(f"{page.relative_to(ROOT)}: {command}\n    {err.getvalue().strip().splitlines()[-1]}")
    assert not failures, "commands in the docs that kernelrl's parser refuses:\n" + "\n".join(failures)


def test_unparseable_list_is_current():
    shown = {command for _, command, _ in _shown_commands()}
    stale = [c for c in UNPARSEABLE if c not in shown]
    assert not stale, f"UNPARSEABLE names commands no page shows any more: {stale}"


def test_readme_is_short():
    lines = (ROOT / "README.md").read_text().splitlines()
    assert len(lines) <= README_MAX_LINES, f"README.md has {len(lines)} lines (at most {README_MAX_LINES})"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_pages_are_linked_from_readme(page):
    if page.name == "README.md":
        return
    readme = (ROOT / "README.md").read_text()
    assert f"(docs/{page.name})" in readme, f"docs/{page.name} is missing from the README's map of the docs"
