"""Typed, provenance-recording access to the fields of a ``config.json``.

Every read goes through ``Fields`` so that (1) a wrong type or an impossible value becomes a
``ConfigError`` naming the file and the field, and (2) the output can say which fields were read,
which were defaulted and which were derived.
"""

from __future__ import annotations

import math
import re
from typing import Any, Callable, Iterable

from .errors import ConfigError, short  # noqa: F401  (short: re-exported)
from .spec import Provenance

try:
    from re import _compiler as _sre_compile, _parser as _sre_parse  # Python >= 3.11
except ImportError:  # pragma: no cover - Python 3.10
    import sre_compile as _sre_compile
    import sre_parse as _sre_parse

REQUIRED = object()

#: Largest value accepted for a width (hidden size, heads, intermediate size, vocabulary ...).
MAX_DIM = 1 << 24
#: Largest number of layers accepted.
MAX_LAYERS = 1 << 14
#: The largest float a config field may hold (real ones stay below 1e11: rope_theta). A finite 1e308 times a width
#: overflows to infinity, and int() of it raises; capping here keeps every derived size a finite integer.
MAX_FLOAT = 1e15


#: Fields a top-level config.json always carries; missing, they are an error rather than a default.
CORE_FIELDS = frozenset({"hidden_size", "num_hidden_layers", "num_attention_heads", "vocab_size", "intermediate_size"})


class Fields:
    """``defaults``: the family's class defaults (what an absent field means to transformers). They
    apply to every absent field except ``CORE_FIELDS``, which apply only to a nested ``text_config``
    (saved as a diff against its class defaults)."""

    def __init__(self, cfg: dict, where: str, aliases: dict[str, Iterable[str]] | None = None,
                 defaults: dict[str, Any] | None = None, nested: bool = False, family: str = ""):
        if not isinstance(cfg, dict):
            raise ConfigError(f"{where}: expected a JSON object of config fields, got {type(cfg).__name__}")
        self.cfg = cfg
        self.where = where
        self.aliases = {k: tuple(v) for k, v in (aliases or {}).items()}
        self.records: dict[str, Provenance] = {}
        self.defaults = {k: v for k, v in (defaults or {}).items() if nested or k not in CORE_FIELDS}
        self.family = family

    # ---- plumbing --------------------------------------------------------------------------------

    def error(self, key: str, message: str) -> ConfigError:
        return ConfigError(f"{self.where}: field '{key}' {message}")

    def _lookup(self, key: str) -> tuple[str, Any] | None:
        for k in (key, *self.aliases.get(key, ())):
            if k in self.cfg:
                return k, self.cfg[k]
        return None

    def has(self, key: str) -> bool:
        found = self._lookup(key)
        return (found is not None and found[1] is not None) or (found is None and key in self.defaults)

    def raw(self, key: str, default: Any = None) -> Any:
        found = self._lookup(key)
        if found is None:
            return self.defaults.get(key, default)
        return found[1]

    def _record(self, key: str, status: str, value: Any, note: str = "") -> None:
        if key not in self.records or status == "read":
            self.records[key] = Provenance(key, status, value, note)

    def derived(self, key: str, value: Any, note: str) -> Any:
        self._record(key, "derived", value, note)
        return value

    def defaulted(self, key: str, value: Any, note: str = "") -> Any:
        self._record(key, "default", value, note)
        return value

    def _get(self, key: str, default: Any, note: str, check: Callable[[str, Any], Any]) -> Any:
        found = self._lookup(key)
        if found is None and key in self.defaults:
            value = check(key, self.defaults[key])
            self._record(key, "default", value, f"absent: the {self.family} class default in transformers")
            return value
        if found is None or found[1] is None:
            if default is REQUIRED:
                if found is not None:
                    raise self.error(key, "is null but required")
                raise ConfigError(f"{self.where}: required field '{key}' is missing")
            value = default() if callable(default) else default
            if value is not None:  # an absent optional field with no default says nothing worth recording
                self._record(key, "derived" if callable(default) else "default", value, note)
            return value
        name, value = found
        value = check(name, value)
        self._record(key, "read", value, "" if name == key else f"from '{name}'")
        return value

    # ---- typed getters ---------------------------------------------------------------------------

    def int(self, key: str, default: Any = REQUIRED, *, lo: int = 1, hi: int = MAX_DIM, note: str = "") -> int:
        def check(name: str, v: Any) -> int:
            iv = as_int(v)
            if iv is None:
                raise self.error(name, f"must be an integer, got {short(v)}")
            # the value as the file gives it (1e300, not the 301-digit integer it equals), bounded
            if iv < lo:
                what = "a positive integer" if lo == 1 else f"an integer >= {lo}"
                raise self.error(name, f"must be {what}, got {short(v)}")
            if iv > hi:
                raise self.error(name, f"is {short(v)}, larger than any real model (limit {hi})")
            return iv

        return self._get(key, default, note, check)

    def opt_int(self, key: str, *, lo: int = 1, hi: int = MAX_DIM, note: str = "") -> int | None:
        return self.int(key, None, lo=lo, hi=hi, note=note)

    def bool(self, key: str, default: Any = REQUIRED, note: str = "") -> bool:
        def check(name: str, v: Any) -> bool:
            if isinstance(v, bool):
                return v
            if isinstance(v, int) and v in (0, 1):
                return bool(v)
            raise self.error(name, f"must be true or false, got {short(v)}")

        return self._get(key, default, note, check)

    def float(self, key: str, default: Any = REQUIRED, *, positive: bool = True, note: str = "") -> float:
        def check(name: str, v: Any) -> float:
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                raise self.error(name, f"must be a number, got {short(v)}")
            fv = float(v)
            if not math.isfinite(fv) or (positive and fv <= 0):
                raise self.error(name, f"must be a positive finite number, got {short(v)}")
            if fv > MAX_FLOAT:
                raise self.error(name, f"is {short(v)}, larger than any real model (limit {MAX_FLOAT:g})")
            return fv

        return self._get(key, default, note, check)

    def str(self, key: str, default: Any = REQUIRED, note: str = "") -> str:
        def check(name: str, v: Any) -> str:
            if not isinstance(v, str):
                raise self.error(name, f"must be a string, got {short(v)}")
            return v

        return self._get(key, default, note, check)

    def list(self, key: str, default: Any = REQUIRED, note: str = "") -> list:
        def check(name: str, v: Any) -> list:
            if not isinstance(v, list):
                raise self.error(name, f"must be a list, got {short(v)}")
            return v

        return self._get(key, default, note, check)

    def dict(self, key: str, default: Any = REQUIRED, note: str = "") -> dict:
        def check(name: str, v: Any) -> dict:
            if not isinstance(v, dict):
                raise self.error(name, f"must be an object, got {short(v)}")
            return v

        return self._get(key, default, note, check)

    def int_list(self, key: str, length: int | None = None, *, lo: int = 0, hi: int = MAX_DIM) -> list[int] | None:
        """A list of integers (or None when absent); ``length`` checks it has one entry per layer."""
        found = self._lookup(key)
        if found is None or found[1] is None:
            return None
        name, v = found
        if not isinstance(v, list):
            raise self.error(name, f"must be a list of integers, got {short(v)}")
        out = []
        for item in v:
            iv = as_int(item)
            if iv is None or iv < lo or iv > hi:
                raise self.error(name, f"must hold integers in [{lo}, {hi}], got {short(item)}")
            out.append(iv)
        if length is not None and len(out) != length:
            raise self.error(name, f"has {len(out)} entries but the model has {length} layers")
        self._record(key, "read", f"list[{len(out)}]")
        return out

    def provenance(self) -> tuple[Provenance, ...]:
        return tuple(self.records.values())


def as_int(v: Any) -> int | None:
    """An int from an int or an integral float; None for anything else (bools included)."""
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v
    if isinstance(v, float) and math.isfinite(v) and v.is_integer():
        return int(v)
    return None


#: the most repetitions of variable width (``*``, ``+``, ``?``, ``{m,n}``) one ``re:`` pattern may hold: each is a
#: factor of the name's length in the backtracking a failed match may do (5 ``.*`` take 30 ms a module name). One
#: followed by a literal its body cannot match (``[0-9]+\.``) is not counted: it can end in one place only
_MAX_VARIABLE_REPEATS = 4


def _pinned(body, following) -> bool:
    """Whether a repetition of ``body`` followed by the parsed item ``following`` can end in one place only: the
    item is a literal character the body cannot match."""
    if following is None or following[0] != _sre_parse.LITERAL:
        return False
    try:
        return _sre_compile.compile(body).fullmatch(chr(following[1])) is None
    except Exception:  # (an odd body: counted)
        return False


def slow_regex(pattern: str) -> str:
    """Why matching ``pattern`` may backtrack without bound (Python's ``re`` has no timeout), or '': a repetition
    of variable width or an alternation inside a repetition (``(a+)+``, ``(.*)*``, ``(a|ab)*``: exponential in the
    name's length), or more than ``_MAX_VARIABLE_REPEATS`` repetitions of variable width that a literal after them
    does not pin (``.*.*.*.*.*!``, ``.*e.*e.*e.*e.*e!``: a polynomial of that degree)."""
    p = _sre_parse
    repeats = (p.MAX_REPEAT, p.MIN_REPEAT, getattr(p, "POSSESSIVE_REPEAT", p.MAX_REPEAT))
    count = 0

    def walk(items, under: bool) -> str:
        nonlocal count
        items = list(items)
        for i, (op, av) in enumerate(items):
            subs, inner = [], under
            if op in repeats:
                lo, hi, body = av
                if lo != hi:
                    if under:
                        return "a repetition inside a repetition"
                    if not _pinned(body, items[i + 1] if i + 1 < len(items) else None):
                        count += 1
                subs, inner = [body], under or hi > 1
            elif op == p.BRANCH:
                if under:
                    return "an alternation inside a repetition"
                subs = list(av[1])
            elif op == p.SUBPATTERN:
                subs = [av[-1]]
            elif op in (p.ASSERT, p.ASSERT_NOT):
                subs = [av[1]]
            elif op == p.GROUPREF_EXISTS:
                subs = [b for b in av[1:] if b is not None]
            elif op == getattr(p, "ATOMIC_GROUP", None):
                subs = [av]
            for sub in subs:
                why = walk(sub, inner)
                if why:
                    return why
        return ""

    why = walk(_sre_parse.parse(pattern), False)
    if not why and count > _MAX_VARIABLE_REPEATS:
        why = f"{count} repetitions of variable width, at most {_MAX_VARIABLE_REPEATS}"
    return why


def config_regex(pattern: str, what: str) -> re.Pattern:
    """``pattern`` (a regular expression a config holds) compiled; a ConfigError starting with ``what`` when it is
    not one (too deep or too large for ``re`` as well) or when matching it may backtrack without bound."""
    try:
        rx = re.compile(pattern)
        slow = slow_regex(pattern)
    except (re.error, RecursionError, OverflowError) as exc:
        raise ConfigError(f"{what}: {exc}") from None
    if slow:
        raise ConfigError(f"{what}: matching it may take exponential time ({slow})")
    return rx
