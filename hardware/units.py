"""Exact parsing of the unit strings used in hardware profiles (standard library only).

Every value in a profile YAML carries its unit, and every parser here returns base units:

===================  ====================================  ===========================================
parser               accepts                               returns
===================  ====================================  ===========================================
``parse_bytes``      ``"80 GiB"``, ``"141 GB"``, ``512MiB`` int bytes; GB = 10^9, GiB = 2^30 (exact)
``parse_bandwidth``  ``"3.35 TB/s"``, ``"900 GBps"``       float bytes/s; SI prefixes (TiB/s binary);
                     ``"200 Gbit/s"``                      lowercase ``b`` means bits (÷ 8)
``parse_flops``      ``"989.4 TFLOP/s"``, ``"67 TFLOPS"``  float FLOP/s (``TOPS`` also accepted, for
                     ``"1.6 PFLOP/s"``, ``"393 TOPS"``     int8 rates)
``parse_time``       ``"4 us"``, ``"4 µs"``, ``"5e-6 s"``  float seconds
``parse_money``      ``2.49``, ``"$2.49"``, ``"2.49 USD"`` float US dollars
``parse_fraction``   ``0.85``, ``"85%"``                   float in (0, 1]
``parse_frequency``  ``"1830 MHz"``, ``"1.41 GHz"``         float Hz (a clock)
``parse_size``       ``"80GiB"``, ``"80 GiB"``, ``"141GB"``  int bytes (a CLI value)
===================  ====================================  ===========================================

Numbers are read as exact decimals (``fractions.Fraction``) and scaled before the single rounding
to ``float`` (or to the nearest whole byte), so ``"3.35 TB/s"`` is exactly ``3.35e12`` and
``"1.5 TiB"`` is exactly ``1649267441664``. A thousands separator is accepted only in strict groups of
three (``"1,979 TFLOP/s"``); ``"1,5 TB"`` is rejected rather than guessed.

Every failure raises :class:`analysis.errors.HardwareError` whose message names the value, the field
(and the file, when the caller passes ``where``), and the unit that was expected. Missing units,
unknown units, negative, zero (unless ``allow_zero``), NaN, infinite and absurd values are all errors.

The ``format_*`` functions write base units back as unit strings that parse to the same value.
"""

from __future__ import annotations

import math
import re
from decimal import Decimal, localcontext
from fractions import Fraction
from typing import Any

from planner.analysis.errors import HardwareError, short

__all__ = [
    "parse_bytes",
    "parse_size",
    "parse_bandwidth",
    "parse_flops",
    "parse_time",
    "parse_money",
    "parse_fraction",
    "parse_frequency",
    "format_bytes",
    "format_bandwidth",
    "format_flops",
    "format_time",
    "format_frequency",
]

# ---- unit tables ---------------------------------------------------------------------------------

_SI = {"": 1, "k": 10**3, "K": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15, "E": 10**18}
_BIN = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}

# bytes: "B", "kB", "KB", "GB", "GiB", ... (case-sensitive: "mB" would be millibytes, "Gb" gigabits)
_BYTE_UNITS: dict[str, int] = {f"{p}B": m for p, m in _SI.items()}
_BYTE_UNITS.update({f"{p}B": m for p, m in _BIN.items()})
_BYTE_UNITS.update({"byte": 1, "bytes": 1})

# bandwidth: bytes per second ("GB/s", "GBps", "GiB/s") and bits per second ("Gb/s", "Gbit/s", "Gbps")
_BANDWIDTH_UNITS: dict[str, Fraction] = {}
for _p, _m in list(_SI.items()) + list(_BIN.items()):
    for _suffix in ("B/s", "Bps", "B/sec"):
        _BANDWIDTH_UNITS[f"{_p}{_suffix}"] = Fraction(_m)
    for _suffix in ("b/s", "bps", "bit/s", "bits/s"):
        _BANDWIDTH_UNITS[f"{_p}{_suffix}"] = Fraction(_m, 8)

# FLOP rates: matched case-insensitively (nobody writes milli-FLOPS); OPS/TOPS for integer rates.
_FLOP_PREFIX = {"": 1, "k": 10**3, "m": 10**6, "g": 10**9, "t": 10**12, "p": 10**15, "e": 10**18}
_FLOP_SUFFIXES = ("flop/s", "flops", "flop/sec", "flops/s", "op/s", "ops", "op/sec", "ops/s")
_FLOP_UNITS: dict[str, int] = {f"{p}{s}": m for p, m in _FLOP_PREFIX.items() for s in _FLOP_SUFFIXES}

_TIME_UNITS: dict[str, Fraction] = {
    "s": Fraction(1),
    "sec": Fraction(1),
    "ms": Fraction(1, 10**3),
    "us": Fraction(1, 10**6),
    "\u00b5s": Fraction(1, 10**6),  # µ MICRO SIGN
    "\u03bcs": Fraction(1, 10**6),  # μ GREEK SMALL LETTER MU
    "ns": Fraction(1, 10**9),
}

# Plausibility bounds (inclusive) per kind; anything outside is "absurd" and almost surely a typo
# (a wrong prefix, a missing decimal point).
_MAX_BYTES = 2**60  # 1 EiB
_MIN_BANDWIDTH = 1e6  # 1 MB/s
_MAX_BANDWIDTH = 1e16  # 10 PB/s
_MIN_FLOPS = 1e6  # 1 MFLOP/s
_MAX_FLOPS = 1e19  # 10 EFLOP/s
_MAX_TIME_S = 86_400.0  # one day
_MAX_PRICE = 10_000.0  # USD per GPU-hour
_MAX_EXPONENT = 100  # a decimal exponent beyond this is no hardware figure (and 1e999999999 would hang)
_MAX_DIGITS = 100  # digits in one number: far beyond any hardware figure, far below int()'s 4,300-digit limit

_NUMBER = r"[+-]?(?:\d{1,3}(?:,\d{3})+(?:\.\d*)?|\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?|[+-]?(?:nan|inf|infinity)"
_VALUE_RE = re.compile(rf"^\s*(?P<num>{_NUMBER})\s*(?P<unit>.*?)\s*$", re.IGNORECASE)


# ---- helpers -------------------------------------------------------------------------------------

def _where(field: str, where: str | None) -> str:
    return f"{where}: field '{field}'" if where else f"'{field}'"


def _fail(value: Any, field: str, where: str | None, problem: str, hint: str) -> HardwareError:
    return HardwareError(f"{_where(field, where)}: {short(value, 80)} {problem}", hint)


def _split(value: Any, field: str, where: str | None, expected: str) -> tuple[Fraction, str]:
    """Split ``"3.35 TB/s"`` into (Fraction('3.35'), 'TB/s'). Numbers without a unit give unit ''."""
    if isinstance(value, bool) or value is None:
        raise _fail(value, field, where, "is not a value with a unit", f"expected {expected}")
    if isinstance(value, int):
        return Fraction(value), ""
    if isinstance(value, float):
        if not math.isfinite(value):
            raise _fail(value, field, where, "is not a finite number", f"expected {expected}")
        return Fraction(repr(value)), ""
    if not isinstance(value, str):
        raise _fail(value, field, where, f"has the wrong type ({type(value).__name__})", f"expected {expected}")
    m = _VALUE_RE.match(value)
    if not m:
        raise _fail(value, field, where, "is not a number followed by a unit", f"expected {expected}")
    num = m.group("num")
    if m.group("unit").startswith(","):
        raise _fail(value, field, where, "has a comma that is not a thousands separator",
                    f"write a decimal point (e.g. '1.5'); expected {expected}")
    if num.lstrip("+-").lower() in ("nan", "inf", "infinity"):
        raise _fail(value, field, where, "is not a finite number", f"expected {expected}")
    if sum(c.isdigit() for c in num) > _MAX_DIGITS:  # (int() refuses past 4,300 digits; no real figure is near)
        raise _fail(value, field, where, "has absurdly many digits", f"expected {expected}")
    exponent = re.search(r"[eE]([+-]?\d+)$", num)
    if exponent and abs(int(exponent.group(1))) > _MAX_EXPONENT:  # (Fraction would build a huge integer)
        raise _fail(value, field, where, "is absurdly large or small", f"expected {expected}")
    return Fraction(num.replace(",", "")), m.group("unit")


def _suggest_case(unit: str, table: dict[str, Any]) -> str:
    for known in table:
        if known.lower() == unit.lower():
            return f"; did you mean '{known}'? Units are case-sensitive ('Gb' is gigabits, 'mB' millibytes)"
    return ""


def _check_sign(num: Fraction, value: Any, field: str, where: str | None, expected: str, allow_zero: bool) -> None:
    if num < 0:
        raise _fail(value, field, where, "is negative", f"expected a positive value, {expected}")
    if num == 0 and not allow_zero:
        raise _fail(value, field, where, "is zero", f"expected a positive value, {expected}")


# ---- parsers -------------------------------------------------------------------------------------

def parse_bytes(value: Any, *, field: str = "memory", where: str | None = None, allow_zero: bool = False) -> int:
    """``"80 GiB"`` -> 85899345920, ``"141 GB"`` -> 141000000000 (int bytes, rounded to the nearest byte).

    GB/MB/kB are decimal (10^9 ...), GiB/MiB/KiB binary (2^30 ...). A bare number has no unit and is
    rejected: write ``"85899345920 B"`` for plain bytes.
    """
    expected = "a size such as '80 GiB' or '141 GB' (GB = 10^9 bytes, GiB = 2^30 bytes)"
    num, unit = _split(value, field, where, expected)
    if unit == "":
        raise _fail(value, field, where, "has no unit", f"expected {expected}")
    if unit not in _BYTE_UNITS:
        extra = _suggest_case(unit, _BYTE_UNITS)
        if not extra and unit.endswith(("b", "bit", "bits")):
            extra = "; a lowercase 'b' means bits, write 'GB' or 'GiB' for bytes"
        raise _fail(value, field, where, f"has an unknown size unit '{unit}'{extra}", f"expected {expected}")
    _check_sign(num, value, field, where, expected, allow_zero)
    exact = num * _BYTE_UNITS[unit]
    n = int(exact + Fraction(1, 2)) if exact.denominator != 1 else int(exact)  # nearest byte
    if n > _MAX_BYTES:
        raise _fail(value, field, where, "is absurdly large (over 1 EiB)", f"expected {expected}")
    if n == 0 and not allow_zero:
        raise _fail(value, field, where, "is less than one byte", f"expected {expected}")
    return n


def parse_size(text: Any, *, field: str = "size") -> int:
    """A size typed on the command line: ``"80GiB"``, ``"80 GiB"``, ``"141GB"`` -> int bytes."""
    return parse_bytes(text, field=field, where=None)


def parse_bandwidth(value: Any, *, field: str = "memory_bandwidth", where: str | None = None) -> float:
    """``"3.35 TB/s"`` -> 3.35e12 bytes/s. SI prefixes (TB/s = 10^12 B/s); ``TiB/s`` is binary;
    ``Gb/s``, ``Gbit/s`` and ``Gbps`` are bits per second (divided by 8)."""
    expected = "a bandwidth such as '3.35 TB/s' or '900 GB/s' (bytes per second, SI prefixes)"
    num, unit = _split(value, field, where, expected)
    if unit == "":
        raise _fail(value, field, where, "has no unit", f"expected {expected}")
    if unit not in _BANDWIDTH_UNITS:
        extra = _suggest_case(unit, _BANDWIDTH_UNITS)
        if not extra and unit in _BYTE_UNITS:
            extra = "; that is a size, not a rate (add '/s')"
        raise _fail(value, field, where, f"has an unknown bandwidth unit '{unit}'{extra}", f"expected {expected}")
    _check_sign(num, value, field, where, expected, allow_zero=False)
    exact = num * _BANDWIDTH_UNITS[unit]
    if not (_MIN_BANDWIDTH <= exact <= _MAX_BANDWIDTH):  # compared exactly: float() of 1e400 would overflow
        raise _fail(value, field, where, "is outside the plausible range 1 MB/s .. 10 PB/s", f"expected {expected}")
    return float(exact)


def parse_flops(value: Any, *, field: str = "peak_flops", where: str | None = None) -> float:
    """``"989.4 TFLOP/s"`` -> 9.894e14 FLOP/s. Accepts ``FLOP/s``, ``FLOPS``, ``OPS`` with SI prefixes."""
    expected = "a rate such as '989.4 TFLOP/s', '67 TFLOPS' or '1.6 PFLOP/s' (dense, no sparsity)"
    num, unit = _split(value, field, where, expected)
    if unit == "":
        raise _fail(value, field, where, "has no unit", f"expected {expected}")
    key = unit.lower()
    if key not in _FLOP_UNITS:
        raise _fail(value, field, where, f"has an unknown FLOP-rate unit '{unit}'", f"expected {expected}")
    _check_sign(num, value, field, where, expected, allow_zero=False)
    exact = num * _FLOP_UNITS[key]
    if not (_MIN_FLOPS <= exact <= _MAX_FLOPS):
        raise _fail(value, field, where, "is outside the plausible range 1 MFLOP/s .. 10 EFLOP/s", f"expected {expected}")
    return float(exact)


def _scaled(value: Any, field: str, where: str | None, expected: str, table: dict, kind: str,
            allow_zero: bool) -> Fraction:
    """``value``'s number times its unit's factor in ``table`` (exact), refused without a unit, with one not in
    ``table`` (named a ``kind`` unit), or negative (zero too unless ``allow_zero``)."""
    num, unit = _split(value, field, where, expected)
    if unit == "":
        raise _fail(value, field, where, "has no unit", f"expected {expected}")
    if unit not in table:
        raise _fail(value, field, where, f"has an unknown {kind} unit '{unit}'", f"expected {expected}")
    _check_sign(num, value, field, where, expected, allow_zero)
    return num * table[unit]


def parse_time(value: Any, *, field: str = "time", where: str | None = None, allow_zero: bool = False) -> float:
    """``"4 us"``, ``"4 µs"``, ``"5e-6 s"``, ``"10 ms"`` -> float seconds."""
    expected = "a time such as '5 us', '4 µs', '10 ms' or '5e-6 s'"
    exact = _scaled(value, field, where, expected, _TIME_UNITS, "time", allow_zero)
    if exact > _MAX_TIME_S:
        raise _fail(value, field, where, "is absurdly long (over one day)", f"expected {expected}")
    return float(exact)


_MONEY_RE = re.compile(r"^\s*(?:\$|USD\s*)?\s*(?P<num>[^\s$]+?)\s*(?:USD|\$)?\s*(?:/\s*(?:h|hr|hour))?\s*$", re.IGNORECASE)


def parse_money(value: Any, *, field: str = "price_per_hour", where: str | None = None, allow_zero: bool = False) -> float:
    """A price in US dollars: ``2.49``, ``"2.49"``, ``"$2.49"``, ``"2.49 USD"`` -> 2.49."""
    expected = "a price in US dollars such as 2.49 or '$2.49'"
    if isinstance(value, str):
        m = _MONEY_RE.match(value)
        if not m:
            raise _fail(value, field, where, "is not a price", f"expected {expected}")
        num, unit = _split(m.group("num"), field, where, expected)
        if unit:
            raise _fail(value, field, where, "is not a price", f"expected {expected}")
    else:
        num, _unit = _split(value, field, where, expected)
    _check_sign(num, value, field, where, expected, allow_zero)
    if num > _MAX_PRICE:
        raise _fail(value, field, where, "is absurdly large (over 10,000 USD per hour)", f"expected {expected}")
    return float(num)


def parse_fraction(value: Any, *, field: str = "efficiency", where: str | None = None) -> float:
    """A fraction of peak in (0, 1]: ``0.85`` or ``"85%"``."""
    expected = "a fraction of peak in (0, 1], such as 0.85 or '85%'"
    num, unit = _split(value, field, where, expected)
    if unit == "%":
        num = num / 100
    elif unit:
        raise _fail(value, field, where, f"has an unknown unit '{unit}'", f"expected {expected}")
    if not (0 < num <= 1):
        raise _fail(value, field, where, "is not in (0, 1]", f"expected {expected}")
    return float(num)


_FREQUENCY_UNITS = {"Hz": 1, "kHz": 10**3, "MHz": 10**6, "GHz": 10**9}


def parse_frequency(value: Any, *, field: str = "boost_clock", where: str | None = None) -> float:
    """A clock: ``"1830 MHz"`` or ``"1.83 GHz"`` -> 1.83e9 Hz (plausible range 100 MHz .. 10 GHz)."""
    expected = "a clock such as '1830 MHz' or '1.83 GHz'"
    exact = _scaled(value, field, where, expected, _FREQUENCY_UNITS, "clock", False)
    if not (10**8 <= exact <= 10**10):
        raise _fail(value, field, where, "is outside the plausible range 100 MHz .. 10 GHz", f"expected {expected}")
    return float(exact)


# ---- formatting (base units -> unit strings that parse back to the same value) -------------------

def _decimal_str(value: float | int, divisor: int) -> str:
    """Exact decimal text of ``value / divisor`` (shortest round-trip digits of ``value``)."""
    with localcontext() as ctx:
        ctx.prec = 60
        d = Decimal(repr(value) if isinstance(value, float) else int(value)) / Decimal(divisor)
        text = format(d.normalize(), "f")
    return text


def format_bytes(n_bytes: int) -> str:
    """85899345920 -> '80 GiB'; 141000000000 -> '141 GB'; otherwise MiB/MB or plain bytes. Exact."""
    n = int(n_bytes)
    for unit, mult in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20)):
        if n and n % mult == 0:
            return f"{n // mult} {unit}"
    for unit, mult in (("TB", 10**12), ("GB", 10**9), ("MB", 10**6)):
        if n and n % mult == 0:
            return f"{n // mult} {unit}"
    for unit, mult in (("GiB", 2**30), ("GB", 10**9)):
        if n >= mult:
            return f"{_decimal_str(n, mult)} {unit}"
    return f"{n} B"


def _format_si(value: float, unit: str, *, top: str = "P") -> str:
    v = float(value)
    prefixes = (("P", 10**15), ("T", 10**12), ("G", 10**9), ("M", 10**6), ("k", 10**3))
    prefixes = prefixes[[p for p, _ in prefixes].index(top):]
    for prefix, div in prefixes:
        if abs(v) >= div:
            return f"{_decimal_str(v, div)} {prefix}{unit}"
    return f"{_decimal_str(v, 1)} {unit}"


def format_bandwidth(bytes_per_s: float) -> str:
    """3.35e12 -> '3.35 TB/s' (exact round trip through ``parse_bandwidth``)."""
    return _format_si(bytes_per_s, "B/s")


def format_flops(flops_per_s: float) -> str:
    """9.894e14 -> '989.4 TFLOP/s', 2.25e15 -> '2250 TFLOP/s' (datasheet style; exact round trip)."""
    return _format_si(flops_per_s, "FLOP/s", top="T")


def format_frequency(hz: float) -> str:
    """1.83e9 -> '1830 MHz' (exact round trip through ``parse_frequency``)."""
    return f"{_decimal_str(float(hz), 10**6)} MHz"


def format_time(seconds: float) -> str:
    """5e-06 -> '5 us' (exact round trip through ``parse_time``)."""
    s = float(seconds)
    if s == 0:
        return "0 s"
    for unit, scale in (("s", 1), ("ms", 10**3), ("us", 10**6), ("ns", 10**9)):
        if abs(s) * scale >= 1 or unit == "ns":
            with localcontext() as ctx:
                ctx.prec = 60
                d = Decimal(repr(s)) * scale
                return f"{format(d.normalize(), 'f')} {unit}"
    raise AssertionError("unreachable")  # pragma: no cover
