"""The CLI's output: the consoles (wide when read as a log) and RichUI, run_bench's progress on the terminal."""

from __future__ import annotations

import sys

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn

# Logs from a GPU machine are read as text: give tables room there instead of rich's 80-column default.
console = Console(width=None if sys.stdout.isatty() else 150)
err_console = Console(stderr=True, width=None if sys.stderr.isatty() else 150)


class RichUI:
    """Progress for the bench job: a bar over shapes and a line saying what runs now."""

    def __init__(self, quiet: bool = False):
        self.quiet = quiet
        self.bar = Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                                 TimeElapsedColumn(), TextColumn("{task.fields[now]}"), console=console,
                                 disable=quiet, transient=False)
        self.task: TaskID | None = None

    def stage(self, text: str):
        if not self.quiet:
            console.print(f"[dim]{text}[/]")

    def build_done(self, result):
        if result.ok:
            res = result.resources
            detail = f"{res.get('registers', '?')} regs, {res.get('smem_bytes', 0)} B smem, " \
                     f"{res.get('spill_bytes', 0)} B spills" if res else ""
            self.stage(f"  built {result.name} ({'cached' if result.cached else f'{result.seconds:.1f} s'}) {detail}")
        else:
            console.print(f"  [red]build failed[/] {result.name}: {result.error}")

    def start_tasks(self, total: int, resumed: int):
        """The bar counts shapes: `total` to measure (every mode of each), done as each shape's report is whole."""
        if resumed:
            self.stage(f"{resumed} shapes already measured in the database: resumed, not measured again")
        self.bar.start()
        self.task = self.bar.add_task("shapes measured", total=total, now="")

    def progress_update(self, text: str):
        if self.task is not None:
            self.bar.update(self.task, now=text)

    def progress(self, task, method, phase):
        if task is not None and method is not None:  # method None: the worker is closing a task's report
            self.progress_update(f"{task.problem.name} {method} {phase}")

    def task_done(self, task, records):
        """One shape measured (run_bench calls this once per shape, with every record of it): its failures, and
        one more shape on the bar."""
        bad = {(r["method"], r["reason"]) for r in records if not r["verified"] and r["reason"] != "not timed"}
        for method, reason in sorted(bad, key=str):
            self.bar.console.print(f"  [yellow]{task.problem.name}[/] {method}: {reason}")
        if self.task is not None:
            self.bar.advance(self.task)

    def finish(self):
        self.bar.stop()
