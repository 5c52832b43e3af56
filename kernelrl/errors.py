"""The one base class of errors a user can fix: bad input, a missing tool, a machine without a GPU. The CLI turns
any of them into one line (`kernelrl: ...`) and exit code 2, in one place (`cli.main`); everything else is a bug
and keeps its traceback."""


class UserError(Exception):
    """Something the user can change; the message is one line that says what and how."""


class BenchError(UserError, ValueError):
    """Bad input to a bench or eval job; one line says what to change. Raised by kernelrl.jobs.measure (which
    exports it too) and the commands around it; defined here so a command that reads results needs no torch."""
