"""Registries and factories instead of `if kind == ...` chains: a subclass declared with `kind="name"` registers
itself on its base, and `Base.create("name", **kw)` builds one."""

from __future__ import annotations


class Registered:
    """Mixin for a base class: each direct base gets its own registry (set `registry = {}` on it)."""

    registry: dict[str, type] = {}

    def __init_subclass__(cls, kind: str | None = None, **kw):
        super().__init_subclass__(**kw)
        if kind:
            cls.registry[kind] = cls

    @classmethod
    def create(cls, kind: str, **kw):
        if kind not in cls.registry:
            raise ValueError(f"unknown {cls.__name__.lower()} {kind!r}: choose from {', '.join(sorted(cls.registry))}")
        return cls.registry[kind](**kw)
