"""Display helpers: the only place where base units become human units.

Memory in GiB (2^30, labelled GiB), rates in SI (GB/s, TB/s, TFLOP/s), parameter counts as ``8.03 B``.
Rich consoles are built per invocation so NO_COLOR and COLUMNS are read when a command runs.
"""

from __future__ import annotations

import csv
import io
import json
import math
import sys
from enum import Enum
from typing import Any, Iterable, Sequence

SCHEMA_VERSION = 1


class OutputFormat(str, Enum):
    table = "table"
    json = "json"
    csv = "csv"
    markdown = "markdown"


def resolve_format(fmt: OutputFormat | None, as_json: bool) -> OutputFormat:
    if as_json:
        return OutputFormat.json
    return fmt or OutputFormat.table


def visible(text: Any, keep: str = "\n") -> str:
    """``text`` with its control and format characters (ESC, NUL, DEL, C1 codes, bidi overrides) written as
    escapes (``\\x1b``, ``\\u202e``): a model_type, file name or server message carrying a terminal escape
    sequence is shown, not obeyed, by the terminal that prints it. Characters in ``keep`` pass."""
    text = "" if text is None else str(text)
    if text.isprintable():
        return text
    return "".join(
        ch if ch.isprintable() or ch in keep
        else f"\\x{ord(ch):02x}" if ord(ch) < 0x100 else f"\\u{ord(ch):04x}" if ord(ch) < 0x10000 else f"\\U{ord(ch):08x}"
        for ch in text
    )


def _width() -> int | None:
    """COLUMNS when set; a wide page when stdout is not a terminal (so piped tables do not fold)."""
    import os

    cols = os.environ.get("COLUMNS", "")
    if cols.isdigit() and int(cols) > 0:
        # at least 40: narrower, a table's columns fold to nothing and its cells are lost (COLUMNS=1 printed
        # one character per line); at most 65,536 (an absurd COLUMNS is not a page width)
        return min(max(int(cols), 40), 1 << 16)
    return None if sys.stdout.isatty() else 200


def stdout_console():
    from rich.console import Console

    # emoji=False: a name or spec such as "uniform:100:900" holds ":100:", which Rich would print as an emoji
    return Console(soft_wrap=False, width=_width(), emoji=False)


def stderr_console():
    from rich.console import Console

    return Console(stderr=True, soft_wrap=False, emoji=False)


def warn(message: str) -> None:
    """A warning on stderr (never on stdout, which carries only the result)."""
    sys.stderr.write(f"Warning: {' '.join(map(visible, str(message).split()))}\n")


# ---- numbers -------------------------------------------------------------------------------------

def fmt_int(n: int | None) -> str:
    return "-" if n is None else f"{n:,}"


def fmt_count(n: int | float | None) -> str:
    """Parameter counts: 8.03 B, 135 M, 12.3 K."""
    if n is None:
        return "-"
    n = float(n)
    for unit, div in (("T", 1e12), ("B", 1e9), ("M", 1e6), ("K", 1e3)):
        if abs(n) >= div:
            return f"{n / div:.3g} {unit}" if n / div < 100 else f"{n / div:.4g} {unit}"
    return f"{n:.0f}"


def fmt_gib(n_bytes: int | float | None, digits: int = 2) -> str:
    if n_bytes is None:
        return "-"
    return f"{n_bytes / 2**30:,.{digits}f} GiB"


def fmt_bytes(n_bytes: int | float | None) -> str:
    """Binary units picked by size: B, KiB, MiB, GiB, TiB."""
    if n_bytes is None:
        return "-"
    n = float(n_bytes)
    for unit, div in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if abs(n) >= div:
            return f"{n / div:,.2f} {unit}"
    return f"{n:,.0f} B"


def fmt_si(value: float | int | None, unit: str, digits: int = 3) -> str:
    """SI prefixes: fmt_si(3.35e12, 'B/s') -> '3.35 TB/s'."""
    if value is None:
        return "-"
    v = float(value)
    for prefix, div in (("P", 1e15), ("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(v) >= div:
            return f"{v / div:.{digits}g} {prefix}{unit}"
    return f"{v:.{digits}g} {unit}"


def fmt_time(seconds: float | None) -> str:
    """Seconds in s/ms/µs/ns at 3 significant digits; a negative time (a factor that saves time: the
    explain table's parts) carries its sign; below a picosecond in size it is 0 (float residue)."""
    if seconds is None:
        return "-"
    s = float(seconds)
    if abs(s) < 1e-12:
        return "0 ns"
    if s < 0:
        return "-" + fmt_time(-s)
    if s >= 1:
        return f"{s:.3g} s"
    if s >= 1e-3:
        return f"{s * 1e3:.3g} ms"
    if s >= 1e-6:
        return f"{s * 1e6:.3g} µs"
    return f"{s * 1e9:.3g} ns"


# ---- machine-readable output ---------------------------------------------------------------------

def _clean(obj: Any) -> Any:
    """JSON never carries NaN or Infinity: they become null."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {str(k): _clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_clean(v) for v in obj]
    if isinstance(obj, Enum):
        return obj.value
    return obj


def dumps_json(obj: Any) -> str:
    return json.dumps(_clean(obj), indent=2, allow_nan=False)


def print_json(obj: Any) -> None:
    sys.stdout.write(dumps_json(obj) + "\n")


def flat(d: dict, prefix: str = "") -> dict[str, Any]:
    """A JSON record as one CSV row: nested objects' keys joined with '.' (``memory.per_gpu.kv_bytes``);
    lists of numbers or strings as a JSON array (``[0,1,2]``); lists of objects (per-layer tables,
    provenance) left to the JSON."""
    if not prefix and not any(isinstance(v, (dict, list, tuple)) for v in d.values()):
        return d  # already flat
    out: dict[str, Any] = {}
    for k, v in d.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict):
            out.update(flat(v, key + "."))
        elif isinstance(v, (list, tuple)):
            if all(not isinstance(x, (dict, list, tuple)) for x in v):
                out[key] = json.dumps(list(v), ensure_ascii=False, separators=(",", ":"))
        else:
            out[key] = v
    return out


def _csv_cells(values: Iterable[Any]) -> list[Any]:
    """Base units as JSON writes them: ints, floats (shortest repr), true/false, empty for null (and
    for a non-finite float)."""
    return ["" if v is None else ("true" if v else "false") if v is True or v is False
            else (repr(v) if math.isfinite(v) else "") if type(v) is float
            else v.value if isinstance(v, Enum) else visible(v) if isinstance(v, str) else v for v in values]


def records_to_csv(records: Sequence[dict]) -> str:
    """One table with a header row: the union of the records' keys (first seen first), one line per
    record (``csv.DictReader`` loads it back)."""
    keys: dict[str, None] = {}
    shapes: set[tuple] = set()
    for r in records:
        shape = tuple(r)
        if shape not in shapes:
            shapes.add(shape)
            keys.update(dict.fromkeys(shape))
    order = list(keys)
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(order)
    w.writerows(_csv_cells(map(r.get, order)) for r in records)
    return buf.getvalue()


def print_csv(records: Sequence[dict]) -> None:
    """``--format csv`` of every command: its JSON records (one row per model, op, sweep point,
    profile ...), flattened with ``flat``, in base units."""
    sys.stdout.write(records_to_csv([flat(r) for r in records]))


def rows_to_markdown(headers: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    def cell(v: Any) -> str:
        return visible(v).replace("|", "\\|")

    out = ["| " + " | ".join(cell(h) for h in headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    for r in rows:
        out.append("| " + " | ".join(cell(v) for v in r) + " |")
    return "\n".join(out) + "\n"


def rich_table(title: str | None, headers: Sequence[str], rows: Iterable[Sequence[Any]], right: Sequence[int] = ()):
    """A Rich table whose every string is literal text: a model id, folder or profile name with
    brackets (``[/x]``) is shown as written, never parsed as Rich markup."""
    from rich.table import Table
    from rich.text import Text

    t = Table(title=None if title is None else Text(visible(title)), title_justify="left", show_lines=False,
              show_header=any(str(h) for h in headers))
    for i, h in enumerate(headers):
        t.add_column(Text(visible(h)), justify="right" if i in right else "left", overflow="fold")
    for r in rows:
        t.add_row(*[Text(visible(v)) for v in r])
    return t


#: Tables with more rows than this are drawn by ``plain_table`` (Rich lays out every cell of a large
#: table in Python: 2.6 s for DeepSeek-V3's 1,100-row --all-layers trace).
PLAIN_TABLE_ROWS = 200


def _cell_width(text: str) -> int:
    if text.isascii():
        return len(text)
    from rich.cells import cell_len

    return cell_len(text)


def plain_table(title: str | None, headers: Sequence[str], rows: Sequence[Sequence[Any]], right: Sequence[int] = (),
                width: int | None = None) -> str | None:
    """The table as Rich draws it (same box characters and padding, no styles), column by column over
    the distinct cell values; None when it is wider than ``width`` (Rich then folds the columns to
    fit) or has a multi-line cell."""
    n = len(headers)
    show_header = any(str(h) for h in headers)
    raw_cols = list(zip(*rows)) if rows else [() for _ in headers]
    cols: list[list[str]] = []
    widths: list[int] = []
    for i, raw in enumerate(raw_cols):
        try:
            text_of = {v: visible(v) for v in set(raw)}
        except TypeError:  # an unhashable cell
            text_of = None
        texts = list(map(text_of.__getitem__, raw)) if text_of is not None else [visible(v) for v in raw]
        distinct = set(text_of.values()) if text_of is not None else set(texts)
        if any("\n" in t for t in distinct):  # a multi-line cell: Rich's layout
            return None
        w_of = {t: _cell_width(t) for t in distinct}
        head = visible(headers[i]) if show_header else ""
        w = max([_cell_width(head), *w_of.values()])
        pad = {t: (" " * (w - tw) + t if i in right else t + " " * (w - tw)) for t, tw in w_of.items()}
        cols.append(list(map(pad.__getitem__, texts)))
        widths.append(w)
    total = sum(widths) + 3 * n + 1
    if width is not None and total > width:
        return None

    def cell(i: int, text: str) -> str:
        pad = widths[i] - _cell_width(text)
        return " " * pad + text if i in right else text + " " * pad

    out = []
    if title:
        out.append(visible(title).ljust(total))
    if show_header:
        out.append("┏" + "┳".join("━" * (w + 2) for w in widths) + "┓")
        out.append("┃ " + " ┃ ".join(cell(i, visible(h)) for i, h in enumerate(headers)) + " ┃")
        out.append("┡" + "╇".join("━" * (w + 2) for w in widths) + "┩")
    else:
        out.append("┌" + "┬".join("─" * (w + 2) for w in widths) + "┐")
    out.extend(map("│ {} │".format, map(" │ ".join, zip(*cols))))
    out.append("└" + "┴".join("─" * (w + 2) for w in widths) + "┘")
    return "\n".join(out) + "\n"


def literal(text: Any):
    """``text`` as a Rich renderable that is never parsed as markup."""
    from rich.text import Text

    return Text(visible(text))
