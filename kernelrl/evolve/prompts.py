"""The prompt builder: task, hardware, earlier candidates with their measurements, failures with their verdicts,
and the instruction to analyse first and write code second.

The wording lives in templates/ (string.Template files, `$name` placeholders, so C++ braces need no escaping);
this module only decides what goes into them. The parent's source is always shown in full, since the model edits
it; other candidates' sources are shown while the prompt stays under `max_chars`."""

from __future__ import annotations

import io
import re
import tokenize
from dataclasses import dataclass, field, replace
from importlib import resources
from string import Template

from kernelrl.errors import UserError
from kernelrl.evolve.instructions import uses_line
from kernelrl.evolve.population import Candidate
from kernelrl.evolve.profile import format_summary
from kernelrl.evolve.tokens import TokenCounter, message_tokens
from kernelrl.evolve.verdicts import CATEGORIES

MAX_SHAPES_SHOWN = 8
MAX_ERROR_LINES = 60


def template(name: str) -> Template:
    return Template(resources.files("kernelrl.evolve").joinpath("templates").joinpath(name).read_text())


def render(template_name: str, /, **values) -> str:
    return template(template_name).substitute(**{k: str(v) for k, v in values.items()}).rstrip() + "\n"


def _us(t) -> str:
    return f"{t:.1f} µs" if t is not None else "—"


def measurement_lines(c: Candidate, objective: str) -> list[str]:
    lines = []
    if c.speedups:
        parts = [f"{s:.3f}× over {b}" for b, s in sorted(c.speedups.items(), key=lambda kv: kv[0] != objective)]
        over = f" (geomean over {len(c.detail)} shapes)" if len(c.detail) > 1 else ""
        lines.append(f"- speedup{over}: " + ", ".join(parts))
    shown = list(c.detail.items())[:MAX_SHAPES_SHOWN]
    for label, d in shown:
        base = ", ".join(f"{b} {_us(t)}" for b, t in sorted((d.get("baselines") or {}).items()))
        lines.append(f"- {label}: {_us(d.get('us'))}" + (f" ({base})" if base else ""))
    if len(c.detail) > len(shown):
        lines.append(f"- … and {len(c.detail) - len(shown)} more shapes")
    return lines


def resource_line(resources_: dict) -> str | None:
    if not resources_:
        return None
    spills = resources_.get("spill_bytes", 0)
    return (f"- ptxas: {resources_.get('registers', '?')} registers per thread, {resources_.get('smem_bytes', 0)} B "
            f"static shared memory, " + (f"{spills} B of spills" if spills else "no spills") +
            (f" (worst of {resources_['kernels']} kernels)" if resources_.get("kernels", 1) > 1 else ""))


@dataclass
class ContextFit:
    """The model's context in tokens: `counter` counts as the model does (evolve/tokens.py); a prompt may take
    `context_tokens - max_new_tokens`, and a request asks for at most what its prompt leaves (less SAFETY)."""

    counter: TokenCounter
    context_tokens: int
    max_new_tokens: int

    SAFETY = 32  # tokens kept free beside an exact count (a chat template's rare extra markers)

    @property
    def prompt_budget(self) -> int:
        return self.context_tokens - self.max_new_tokens

    def tokens(self, messages: list[dict]) -> int:
        return message_tokens(messages, self.counter)

    def new_tokens(self, prompt_tokens: int) -> int:
        return max(1, min(self.max_new_tokens, self.context_tokens - prompt_tokens - self.SAFETY))


@dataclass
class FitReport:
    """How the last prompt was fitted: its tokens, the budget, and what was left out to fit (in that order)."""

    tokens: int
    budget: int
    dropped: list[str] = field(default_factory=list)


class PromptTooLong(UserError, ValueError):
    """A task whose prompt cannot fit the model's context even with nothing but the task in it."""


class PromptBuilder:
    """`fit` (a ContextFit) sizes prompts in the model's tokens; without it, characters (`max_chars`). Earlier
    candidates are shown best first; to fit, in this order: comments and blank lines leave the other candidates'
    sources, then those sources (worst first), then those candidates (worst first), then the failed candidates
    (oldest shown last first), then the parent's comments; the prompt says what was left out, and `last_fit`
    records it."""

    def __init__(self, target, hardware_text: str, max_chars: int = 60000, fit: ContextFit | None = None):
        self.target = target
        self.hardware_text = hardware_text
        self.max_chars = max_chars
        self.fit = fit
        self.last_fit: FitReport | None = None

    def system(self) -> str:
        return render("system.md")

    def describe(self, c: Candidate, role: str, with_source: bool) -> str:
        origin = {"seed": "a seed kernel", "llm": f"proposed in generation {c.generation}",
                  "repair": f"repaired in generation {c.generation}",
                  "refine": f"refined after a verdict in generation {c.generation}"}.get(c.origin, c.origin)
        island = f", island {c.island}" if c.island is not None else ""
        lines = measurement_lines(c, self.target.objective)
        for extra in (uses_line(c.source), resource_line(c.resources), format_summary(c.profile)):
            if extra:
                lines.append(extra)
        title = f"{c.name} ({role}; {origin}{island})"
        source = c.source.rstrip() if with_source else "(source omitted to keep the prompt short)"
        return render("candidate.md", title=title, summary="\n".join(lines) or "- not measured",
                      fence=self.target.fence, source=source)

    def check_fits(self) -> None:
        """PromptTooLong (one line) when even a first prompt (the task, no earlier candidates) does not fit: said
        before any request is sent."""
        if self.fit is None:
            return
        tokens = self.fit.tokens(self.propose(None, [], [], fitted=False))
        if tokens > self.fit.prompt_budget:
            raise PromptTooLong(
                f"{self.target.title}: the prompt needs {tokens} tokens with nothing but the task in it "
                f"({self.fit.counter.describe()}), over the {self.fit.prompt_budget} a prompt may take "
                f"(context_tokens {self.fit.context_tokens} - max_tokens {self.fit.max_new_tokens}): raise "
                f"context_tokens, lower max_tokens, or shorten the task")

    def propose(self, parent: Candidate | None, inspirations: list[Candidate],
                negatives: list[Candidate], fitted: bool = True) -> list[dict]:
        if self.fit is None or not fitted:
            return self._propose_by_chars(parent, inspirations, negatives)
        shown = sorted([c for c in [parent, *inspirations] if c is not None], key=lambda c: (-(c.score or 0), c.id))
        others = [c for c in shown if parent is None or c.id != parent.id]
        form = {c.id: "full" for c in others}  # full, stripped, no source, dropped
        negs, strip_parent = list(negatives), False
        dropped: list[str] = []

        def build():
            return self._assemble(parent, shown, form, negs, strip_parent, dropped)

        def fits():
            return self.fit.tokens(build()) <= self.fit.prompt_budget

        steps = [("stripped", c) for c in others] + [("no source", c) for c in reversed(others)] + \
            [("dropped", c) for c in reversed(others)]
        for state, c in steps:
            if fits():
                break
            form[c.id] = state
            if state != "stripped":
                dropped.append(f"{c.name}: {'source' if state == 'no source' else 'whole entry'}")
        while negs and not fits():
            dropped.append(f"failed {negs.pop().name}")
        if not fits() and parent is not None:
            strip_parent = True
            dropped.append(f"{parent.name}: comments")
        messages = build()
        tokens = self.fit.tokens(messages)
        if tokens > self.fit.prompt_budget:
            raise PromptTooLong(
                f"{self.target.title}: the prompt needs {tokens} tokens with only the task and the parent "
                f"{parent.name if parent else ''} left, over the {self.fit.prompt_budget} a prompt may take: raise "
                f"context_tokens or lower max_tokens")
        self.last_fit = FitReport(tokens, self.fit.prompt_budget, dropped)
        return messages

    def _assemble(self, parent, shown, form, negatives, strip_parent, dropped) -> list[dict]:
        parts = []
        for c in shown:
            is_parent = parent is not None and c.id == parent.id
            state = "full" if is_parent else form[c.id]
            if state == "dropped":
                continue
            text = c.source
            if (is_parent and strip_parent) or state == "stripped":
                text = strip_comments(text, self.target.fence)
            shown_c = c if text == c.source else _with_source(c, text)
            parts.append(self.describe(shown_c, "parent" if is_parent else "for comparison", state != "no source"))
        if dropped:
            parts.append(f"(left out to fit the model's context: {'; '.join(dropped)})")
        return self._messages(parent, parts, negatives)

    def _messages(self, parent, parts: list[str], negatives) -> list[dict]:
        negs = "".join(render("negative.md", name=n.name, what=CATEGORIES.get(n.category, n.category),
                              verdict=(n.verdict or "").replace("\n", " ")[:500]) for n in negatives)
        instructions = (render("improve.md", parent=parent.name, fence=self.target.fence) if parent is not None
                        else render("first.md", fence=self.target.fence))
        user = render("propose.md", task=self.target.task_text().rstrip(), hardware=self.hardware_text.rstrip(),
                      candidates="\n".join(parts).rstrip() or "(none yet)", negatives=negs.rstrip() or "(none yet)",
                      instructions=instructions.rstrip())
        return [{"role": "system", "content": self.system()}, {"role": "user", "content": user}]

    def _propose_by_chars(self, parent: Candidate | None, inspirations: list[Candidate],
                          negatives: list[Candidate]) -> list[dict]:
        shown = sorted([c for c in [parent, *inspirations] if c is not None], key=lambda c: (-(c.score or 0), c.id))
        budget = self.max_chars - len(self.target.task_text()) - sum(len(n.verdict or "") for n in negatives) \
            - (len(parent.source) if parent is not None else 0)
        parts = []
        for c in shown:
            is_parent = parent is not None and c.id == parent.id
            with_source = is_parent or len(c.source) <= budget
            if with_source and not is_parent:
                budget -= len(c.source)
            parts.append(self.describe(c, "parent" if is_parent else "for comparison", with_source))
        return self._messages(parent, parts, negatives)

    def refine(self, messages: list[dict], reply: str, code: str | None, candidate: Candidate, turn: int,
               turns: int, errors: str = "") -> list[dict] | None:
        """The next turn of a trajectory: the conversation so far, the last reply condensed (its analysis's first
        paragraph and its code), and the evaluator's verdict on it. With a context fit: None where it does not fit
        (the trajectory ends there)."""
        refined = _refined(messages, reply, code, self.target.fence,
                           feedback_text(candidate, self.target.objective, errors), candidate.name, turn, turns)
        if self.fit is None:
            return refined
        tokens = self.fit.tokens(refined)
        if tokens > self.fit.prompt_budget:
            return None
        self.last_fit = FitReport(tokens, self.fit.prompt_budget, [])
        return refined

    def repair(self, messages: list[dict], reply: str, errors: str) -> list[dict] | None:
        """The conversation so far, the model's reply, and the compiler's errors: one chance to fix them. With a
        context fit: the errors cut shorter where the whole does not fit, and None where even that does not."""
        for max_lines in (MAX_ERROR_LINES, 12):
            repaired = [*messages, {"role": "assistant", "content": reply},
                        {"role": "user", "content": render("repair.md", errors=compiler_errors(errors, max_lines),
                                                           fence=self.target.fence)}]
            if self.fit is None:
                return repaired
            tokens = self.fit.tokens(repaired)
            if tokens <= self.fit.prompt_budget:
                self.last_fit = FitReport(tokens, self.fit.prompt_budget, [] if max_lines == MAX_ERROR_LINES else
                                          [f"compiler errors beyond {max_lines} lines"])
                return repaired
        return None


SUMMARY_CHARS = 600  # of an earlier turn's analysis, kept in a multi-turn conversation


def condensed_reply(reply: str, code: str | None, fence: str) -> str:
    """An earlier turn's reply as a later turn sees it: the first paragraph of its analysis (at most
    SUMMARY_CHARS) and its code; the rest of its reasoning is dropped, so a trajectory fits the context."""
    analysis = reply.split("```")[0].strip() if reply else ""
    first = analysis.split("\n\n")[0].strip()
    summary = first if len(first) <= SUMMARY_CHARS else first[:SUMMARY_CHARS].rsplit(" ", 1)[0] + " ..."
    if code is None:
        return (summary or "(no analysis)") + "\n\n(no usable code block)"
    return f"{summary or '(no analysis)'}\n\n```{fence}\n{code.rstrip()}\n```"


def failure_line(category: str | None, verdict: str | None) -> str:
    """A failed attempt as the next turn tells it: what its category means, then its verdict's line."""
    return f"- {CATEGORIES.get(category or '', category or 'not judged')}: {(verdict or '').strip()}"


def feedback_text(c: Candidate, objective: str, errors: str = "") -> str:
    """What the evaluator said about a candidate, for the next turn: its measurements when verified, else its
    verdict's category and line (a compiler's errors cut to the lines that matter)."""
    if c.ok:
        lines = ["- verified", *measurement_lines(c, objective)]
        lines += [x for x in (resource_line(c.resources), format_summary(c.profile)) if x]
        return "\n".join(lines)
    text = failure_line(c.category, c.verdict)
    if errors and c.category == "compile":
        text += f"\n\n```\n{compiler_errors(errors)}\n```"
    return text


def _with_source(c: Candidate, source: str) -> Candidate:
    return replace(c, source=source)


C_COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)


def strip_comments(source: str, language: str) -> str:
    """The source without comments and blank lines (Python's via its tokenizer, so strings keep their '#'; C, C++
    and CUDA by pattern), for a prompt that must shrink."""
    if language == "python":
        try:
            tokens = [t for t in tokenize.generate_tokens(io.StringIO(source).readline) if t.type != tokenize.COMMENT]
            source = tokenize.untokenize(tokens)
        except (tokenize.TokenError, IndentationError, SyntaxError):
            pass  # not Python that tokenizes: leave it as written
    else:
        source = C_COMMENT.sub("", source)
    return "\n".join(line.rstrip() for line in source.splitlines() if line.strip()) + "\n"


def _refined(messages, reply, code, fence, feedback, name, turn, turns) -> list[dict]:
    return [*messages, {"role": "assistant", "content": condensed_reply(reply, code, fence)},
            {"role": "user", "content": render("refine.md", turn=turn, turns=turns, name=name, feedback=feedback,
                                               fence=fence)}]


def compiler_errors(log: str, max_lines: int = MAX_ERROR_LINES) -> str:
    """The lines of a compiler log that matter: errors with a little context, at most `max_lines`."""
    lines = [ln.rstrip() for ln in log.splitlines() if ln.strip()]
    keep = [i for i, ln in enumerate(lines) if "error" in ln.lower()]
    if not keep:
        return "\n".join(lines[-max_lines:])
    chosen: list[int] = []
    for i in keep:
        for j in range(i, min(i + 3, len(lines))):  # nvcc prints the offending line and a caret after the error
            if j not in chosen:
                chosen.append(j)
    return "\n".join(lines[j] for j in chosen[:max_lines])
