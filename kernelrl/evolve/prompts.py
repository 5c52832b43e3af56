"""The prompt builder: task, hardware, earlier candidates with their measurements, failures with their verdicts,
and the instruction to analyse first and write code second.

The wording lives in templates/ (string.Template files, `$name` placeholders, so C++ braces need no escaping);
this module only decides what goes into them. The parent's source is always shown in full, since the model edits
it; other candidates' sources are shown while the prompt stays under `max_chars`."""

from __future__ import annotations

from importlib import resources
from string import Template

from kernelrl.evolve.population import Candidate
from kernelrl.evolve.profile import format_summary
from kernelrl.evolve.verdicts import CATEGORIES

MAX_SHAPES_SHOWN = 8
MAX_ERROR_LINES = 60


def template(name: str) -> Template:
    return Template(resources.files("kernelrl.evolve").joinpath("templates", name).read_text())


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


class PromptBuilder:
    def __init__(self, target, hardware_text: str, max_chars: int = 60000):
        self.target = target
        self.hardware_text = hardware_text
        self.max_chars = max_chars

    def system(self) -> str:
        return render("system.md")

    def describe(self, c: Candidate, role: str, with_source: bool) -> str:
        origin = {"seed": "a seed kernel", "llm": f"proposed in generation {c.generation}",
                  "repair": f"repaired in generation {c.generation}"}.get(c.origin, c.origin)
        island = f", island {c.island}" if c.island is not None else ""
        lines = measurement_lines(c, self.target.objective)
        for extra in (resource_line(c.resources), format_summary(c.profile)):
            if extra:
                lines.append(extra)
        title = f"{c.name} ({role}; {origin}{island})"
        source = c.source.rstrip() if with_source else "(source omitted to keep the prompt short)"
        return render("candidate.md", title=title, summary="\n".join(lines) or "- not measured",
                      fence=self.target.fence, source=source)

    def propose(self, parent: Candidate | None, inspirations: list[Candidate],
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
        negs = "".join(render("negative.md", name=n.name, what=CATEGORIES.get(n.category, n.category),
                              verdict=(n.verdict or "").replace("\n", " ")[:500]) for n in negatives)
        instructions = (render("improve.md", parent=parent.name, fence=self.target.fence) if parent is not None
                        else render("first.md", fence=self.target.fence))
        user = render("propose.md", task=self.target.task_text().rstrip(), hardware=self.hardware_text.rstrip(),
                      candidates="\n".join(parts).rstrip() or "(none yet)", negatives=negs.rstrip() or "(none yet)",
                      instructions=instructions.rstrip())
        return [{"role": "system", "content": self.system()}, {"role": "user", "content": user}]

    def repair(self, messages: list[dict], reply: str, errors: str) -> list[dict]:
        """The conversation so far, the model's reply, and the compiler's errors: one chance to fix them."""
        return [*messages, {"role": "assistant", "content": reply},
                {"role": "user", "content": render("repair.md", errors=compiler_errors(errors),
                                                   fence=self.target.fence)}]


def compiler_errors(log: str) -> str:
    """The lines of a compiler log that matter: errors with a little context, at most MAX_ERROR_LINES."""
    lines = [l.rstrip() for l in log.splitlines() if l.strip()]
    keep = [i for i, l in enumerate(lines) if "error" in l.lower()]
    if not keep:
        return "\n".join(lines[-MAX_ERROR_LINES:])
    chosen: list[int] = []
    for i in keep:
        for j in range(i, min(i + 3, len(lines))):  # nvcc prints the offending line and a caret after the error
            if j not in chosen:
                chosen.append(j)
    return "\n".join(lines[j] for j in chosen[:MAX_ERROR_LINES])
