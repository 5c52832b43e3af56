"""A lexical stand-in for nvcc, used only with the dummy runner (which builds nothing): unterminated comments and
strings, and brackets that do not pair, reported in nvcc's `file(line): error: ...` form.

It exists so the CPU tests can drive the repair turn through the same path a real compile error takes; it says
nothing about whether nvcc would accept the file."""

from __future__ import annotations

PAIRS = {")": "(", "]": "[", "}": "{"}


def lexical_errors(source: str, filename: str = "candidate.cu") -> list[str]:
    errors: list[str] = []
    stack: list[tuple[str, int]] = []
    i, line, n = 0, 1, len(source)
    while i < n:
        c = source[i]
        if c == "\n":
            line += 1
        elif source.startswith("//", i):
            end = source.find("\n", i)
            i = n if end < 0 else end
            continue
        elif source.startswith("/*", i):
            end = source.find("*/", i + 2)
            if end < 0:
                errors.append(f"{filename}({line}): error: unterminated comment")
                break
            line += source.count("\n", i, end)
            i = end + 2
            continue
        elif c in "\"'":
            j = i + 1
            while j < n and source[j] != c and source[j] != "\n":
                j += 2 if source[j] == "\\" else 1
            if j >= n or source[j] != c:
                errors.append(f"{filename}({line}): error: missing closing quote")
            i = j + 1
            continue
        elif c in "([{":
            stack.append((c, line))
        elif c in ")]}":
            if not stack or stack[-1][0] != PAIRS[c]:
                errors.append(f"{filename}({line}): error: unexpected '{c}'")
            else:
                stack.pop()
        i += 1
    for opener, at in stack:
        errors.append(f"{filename}({at}): error: '{opener}' is never closed (expected a "
                      f"'{dict((v, k) for k, v in PAIRS.items())[opener]}')")
    return errors
