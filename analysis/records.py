"""``frozen``: ``@dataclass(frozen=True)`` at a fraction of its class-creation cost.

``dataclasses`` compiles every generated method with its own ``exec`` (``__init__``, ``__repr__``,
``__eq__``, ``__hash__``, ``__setattr__``, ``__delattr__``): about a millisecond per class, paid at
import by every command (some 60 frozen classes are on the path of ``planner analyze``). ``frozen``
lets ``dataclasses`` collect the fields (so ``fields``, ``replace``, ``asdict`` and ``is_dataclass``
work as before), compiles ``__init__``, ``__eq__`` and ``__hash__`` (the methods whose speed matters
per instance) as ``dataclasses`` writes them but in one ``exec``, and shares plain functions for the
rest: a field-by-field ``repr`` and assignment refused with ``dataclasses.FrozenInstanceError``. It
also skips the ``inspect.signature`` docstring ``dataclasses`` builds for a class without one.
Measured in bench/startup.py.

A ``frozen`` class may inherit only from another ``frozen`` class (``dataclasses`` records it as not
frozen, so a ``@dataclass(frozen=True)`` subclass would be refused).
"""

from __future__ import annotations

import dataclasses
from typing import Any, TypeVar

T = TypeVar("T")

_MISSING = dataclasses.MISSING


def _frozen_setattr(self: Any, name: str, value: Any) -> None:
    raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")


def _frozen_delattr(self: Any, name: str) -> None:
    raise dataclasses.FrozenInstanceError(f"cannot delete field {name!r}")


def _methods(cls: type, fields: list[dataclasses.Field]) -> None:
    """``__init__``, ``__eq__`` and ``__hash__`` as ``dataclasses`` writes them for a frozen class,
    compiled in one ``exec``."""
    ns: dict[str, Any] = {"__object_setattr": object.__setattr__, "MISSING": _MISSING}
    params, body = [], []
    for f in fields:
        if not f.init:
            continue
        if f.default is not _MISSING:
            ns[f"__default_{f.name}"] = f.default
            params.append(f"{f.name}=__default_{f.name}")
            body.append(f"__object_setattr(self, {f.name!r}, {f.name})")
        elif f.default_factory is not _MISSING:
            ns[f"__factory_{f.name}"] = f.default_factory
            params.append(f"{f.name}=MISSING")
            body.append(f"__object_setattr(self, {f.name!r}, __factory_{f.name}() if {f.name} is MISSING else {f.name})")
        else:
            params.append(f.name)
            body.append(f"__object_setattr(self, {f.name!r}, {f.name})")
    for f in fields:  # init=False fields with a default
        if not f.init and f.default is not _MISSING:
            ns[f"__default_{f.name}"] = f.default
            body.append(f"__object_setattr(self, {f.name!r}, __default_{f.name})")
    if hasattr(cls, "__post_init__"):
        body.append("self.__post_init__()")
    compared = [f.name for f in fields if f.compare]
    hashed = [f.name for f in fields if (f.compare if f.hash is None else f.hash)]  # dataclasses' rule
    mine = "(" + "".join(f"self.{n}," for n in compared) + ")"
    theirs = "(" + "".join(f"other.{n}," for n in compared) + ")"
    key = "(" + "".join(f"self.{n}," for n in hashed) + ")"
    src = (f"def __init__(self, {', '.join(params)}):\n    " + ("\n    ".join(body) or "pass") + "\n"
           f"def __eq__(self, other):\n    if other.__class__ is self.__class__:\n        return {mine} == {theirs}\n"
           "    return NotImplemented\n"
           f"def __hash__(self):\n    return hash({key})\n")
    exec(src, ns)  # noqa: S102  (the code dataclasses compiles, in one exec)
    for name in ("__init__", "__eq__", "__hash__"):
        fn = ns[name]
        fn.__qualname__ = f"{cls.__qualname__}.{name}"
        setattr(cls, name, fn)


def frozen(cls: type[T]) -> type[T]:
    """A frozen dataclass (see the module docstring); use as ``@frozen`` instead of
    ``@dataclass(frozen=True)``."""
    if "__doc__" not in cls.__dict__ or not cls.__doc__:
        cls.__doc__ = cls.__name__  # dataclasses would build one with inspect.signature (slow)
    cls = dataclasses.dataclass(cls, init=False, repr=False, eq=False)
    fields = [f for f in cls.__dataclass_fields__.values()
              if f._field_type is dataclasses._FIELD]  # type: ignore[attr-defined]
    _methods(cls, fields)
    shown = [f.name for f in fields if f.repr]

    def __repr__(self: Any) -> str:
        return f"{self.__class__.__qualname__}(" + ", ".join(f"{n}={getattr(self, n)!r}" for n in shown) + ")"

    cls.__repr__ = __repr__  # type: ignore[method-assign]
    cls.__setattr__, cls.__delattr__ = _frozen_setattr, _frozen_delattr  # type: ignore[method-assign]
    return cls
