"""A result as titled sections of rows, rendered as Rich tables or Markdown.

Commands build their human output once, as sections, so table and markdown never disagree; CSV is
the JSON's records as one table (``render.print_csv``).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Any, Sequence

from .render import PLAIN_TABLE_ROWS, OutputFormat, plain_table, rich_table, rows_to_markdown, stdout_console, visible


@dataclass
class Section:
    title: str
    headers: Sequence[str]
    rows: list[Sequence[Any]] = field(default_factory=list)
    right: Sequence[int] = ()  # right-aligned columns in the table view
    caption: str = ""

    def add(self, *row: Any) -> None:
        self.rows.append(row)


def emit(sections: list[Section], fmt: OutputFormat, *, lines: Sequence[str] = ()) -> None:
    """Print sections to stdout in ``fmt`` (table or markdown); ``lines`` are free text."""
    sections = [s for s in sections if s.rows]
    if fmt == OutputFormat.csv:  # CSV is one table of the JSON's records (render.print_csv), never sections
        raise ValueError("--format csv: the command must print its JSON records with render.print_csv")
    if fmt == OutputFormat.markdown:
        out = []
        for s in sections:
            out.append(f"### {visible(s.title)}\n\n" + rows_to_markdown(s.headers, s.rows)
                       + (f"\n{visible(s.caption)}\n" if s.caption else ""))
        if lines:
            out.append("\n".join(f"- {visible(line)}" for line in lines) + "\n")
        sys.stdout.write("\n".join(out))
        return
    console = stdout_console()
    for s in sections:
        text = None
        if len(s.rows) > PLAIN_TABLE_ROWS:  # drawn directly: Rich's layout of a large table takes seconds
            text = plain_table(s.title, s.headers, s.rows, right=s.right, width=console.width)
        if text is not None:
            console.file.write(text)
            console.file.flush()
        else:
            console.print(rich_table(s.title, s.headers, s.rows, right=s.right))
        if s.caption:
            console.print(visible(s.caption), highlight=False, markup=False)
    for line in lines:
        console.print(visible(line), highlight=False, markup=False)
