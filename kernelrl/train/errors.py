"""TrainError, the one error class of `kernelrl train`; in a module of its own, below every other train module, so
that any of them can raise it (config.py, which defines the settings it is mostly about, re-exports it)."""

from __future__ import annotations

from kernelrl.errors import UserError


class TrainError(UserError, ValueError):
    """A configuration or setup problem; one line says what to change."""
