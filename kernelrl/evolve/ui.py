"""Progress of an evolve run. EvolveUI is silent (library use, tests); RichEvolveUI shows a bar over the LLM
call budget, the best score so far and one line per candidate verdict. Both also receive run_bench's progress
calls, since evaluation happens inside the run."""

from __future__ import annotations

from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from kernelrl.jobs.measure import NullUI


class EvolveUI(NullUI):
    def call_done(self, completion): pass
    def candidate_done(self, target, candidate): pass
    def generation_done(self, target, generation, best): pass
    def finish(self): pass


class RichEvolveUI(EvolveUI):
    COLOURS = {"ok": "green", "compile": "yellow", "malformed": "yellow", "rejected": "red", "defence": "red",
               "wrong": "red", "crash": "red", "failed": "red"}

    def __init__(self, console, total_calls: int | None):
        self.console = console
        self.bar = Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                            TimeElapsedColumn(), TextColumn("best {task.fields[best]}"),
                            TextColumn("[dim]{task.fields[now]}"), console=console, transient=False)
        self.task = self.bar.add_task("LLM calls", total=total_calls, best="—", now="")
        self.bar.start()

    def _print(self, text: str):
        self.bar.console.print(text, highlight=False)

    def stage(self, text):
        self._print(f"[dim]{escape(text)}[/]")

    def call_done(self, completion):
        self.bar.advance(self.task)
        if not completion.ok and completion.outcome != "budget":
                self._print(f"  [yellow]call failed[/] ({completion.outcome}, {completion.attempts} attempts): "
                        f"{escape(completion.error or '')}")

    def candidate_done(self, target, c):
        colour = self.COLOURS.get(c.category, "white")
        what = f"{c.score:.3f}× over {target.objective}" if c.ok else escape((c.verdict or "")[:160])
        where = f"island {c.island}" if c.island is not None else "seed"
        self._print(f"  [{colour}]{c.category:9}[/] {escape(c.name)} ({c.origin}, {where}): {what}")

    def generation_done(self, target, generation, best):
        score = f"{best.score:.3f}× ({best.name})" if best is not None else "—"
        self.bar.update(self.task, best=score, now="")
        self.stage(f"{target.title}: generation {generation} done; best {score}")

    # run_bench's progress, as one status field
    def start_tasks(self, total, resumed):
        self.bar.update(self.task, now=f"measuring {total} shapes")

    def progress(self, task, method, phase):
        if task is not None and method is not None and hasattr(task, "problem"):
            self.bar.update(self.task, now=f"{task.problem.name} {method} {phase}")

    def finish(self):
        self.bar.stop()
