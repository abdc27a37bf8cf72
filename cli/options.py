"""Shared ``Annotated`` option aliases, so every command spells the same option the same way."""

from __future__ import annotations

import re
from fractions import Fraction
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

try:  # typer >= 0.22 vendors its own click: its IntRange, so a bad value raises the BadParameter cli/app.py catches
    from typer._click.types import IntRange as _IntRange
except ImportError:  # pragma: no cover  (an older typer built on click itself)
    from click.types import IntRange as _IntRange

from .render import OutputFormat

# ---- token counts: 8192, 2k, 32k, 1.5k, 1M (k = 1024 tokens, M = 1024 * 1024) --------------------
#: One count as ``trace --sweep`` reads it (``context=2k,32k``), and every token-count option with it.
TOKEN_COUNT = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kKmM]?)\s*$")
TOKEN_UNITS = {"": 1, "k": 1024, "m": 1024 * 1024}
TOKENS_HELP = "k = 1024, so 2k = 2048"


def token_value(text: str) -> Fraction | None:
    """``text`` as a number of tokens by the --sweep rule, exactly ('2k' -> 2048, '1.5k' -> 1536, '0.1k' -> 512/5,
    '64' -> 64); None when it is not of that form (or its number is over 100 characters long). Whether the number
    is whole and in range is the caller's. Exact, not a float: '1.' followed by 400 zeros and a 1, times 1024, is
    not a whole number of tokens, though the float of it is 1024.0."""
    m = TOKEN_COUNT.match(text)
    if not m or len(m.group(1)) > 100:
        return None
    return Fraction(m.group(1)) * TOKEN_UNITS[m.group(2).lower()]


class TokenCount(_IntRange):
    """An ``IntRange`` that also takes the --sweep suffixes: '2k' is 2048 tokens. A plain integer goes through
    ``IntRange`` unchanged (the same values, bounds and messages as before); a bad value fails with click's
    ``BadParameter`` -- a usage error, one ``Error:`` line and exit 2 (cli/app.py)."""

    name = "token count"

    def get_metavar(self, param: Any, ctx: Any = None) -> str:  # (click < 8.2 passes no ctx)
        return "TOKENS"

    def convert(self, value: Any, param: Any, ctx: Any) -> Any:
        if isinstance(value, str):
            m = TOKEN_COUNT.match(value)
            if m and (m.group(2) or "." in m.group(1)):  # '2k', '1.5k', '2.0': the --sweep rule
                n = token_value(value)
                if n is None:  # (a number over 100 characters long)
                    self.fail(f"{value!r} is not in the range {self._describe_range()}.", param, ctx)
                if n.denominator != 1:
                    self.fail(f"{value!r} is not a whole number of tokens (k = 1024).", param, ctx)
                n = int(n)
                if (self.min is not None and n < self.min) or (self.max is not None and n > self.max):
                    self.fail(f"{value!r} ({n:,} tokens) is not in the range {self._describe_range()}.", param, ctx)
                return n
            try:
                int(value)
            except ValueError:  # (not a plain integer either: '8x', '-1k', '1e999', '')
                self.fail(f"{value!r} is not a token count (use e.g. 8192, 2k or 32k; k = 1024).", param, ctx)
        return super().convert(value, param, ctx)


def tokens(low: int, high: int) -> TokenCount:
    """The ``click_type`` of a token-count option bounded to ``low <= n <= high`` (an ``IntRange``'s bounds)."""
    return TokenCount(min=low, max=high)


# ---- one set of defaults for every command (README: "Defaults") ----------------------------------
DEFAULT_CONTEXT = 8192  # tokens in each sequence's context
DEFAULT_BATCH = 1  # concurrent sequences
DEFAULT_GPUS = 1
DEFAULT_HARDWARE = "h100-sxm"  # the profile when --hardware is not given

FormatOpt = Annotated[
    Optional[OutputFormat],
    typer.Option("--format", "-f", help="Output format: table, json, csv or markdown.", case_sensitive=False),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Shortcut for --format json.")]
HardwareOpt = Annotated[
    Optional[str],
    typer.Option("--hardware", "-H", help="Hardware profile: a name from 'planner hardware list' or a path to a YAML file."),
]
GpusOpt = Annotated[int, typer.Option("--gpus", min=1, max=4096, help="Number of GPUs (count).")]
DtypeOpt = Annotated[
    Optional[str],
    typer.Option("--dtype", help="Weight dtype (fp32, bf16, fp16, fp8, int8, int4, fp4); default: the config's torch_dtype, else bf16."),
]
KvDtypeOpt = Annotated[
    Optional[str],
    typer.Option("--kv-dtype", help="KV-cache dtype (fp32, bf16, fp16, fp8, int8, int4, fp4; serve, trace and plan take only those their --engine offers); default: the compute dtype."),
]
# ---- the parallel layout (analysis.parallel.Layout); planner plan searches it instead -------------
TpOpt = Annotated[Optional[int], typer.Option("--tp", min=1, max=1024, help="Tensor-parallel degree: GPUs per pipeline stage of a replica (count).")]
PpOpt = Annotated[Optional[int], typer.Option("--pp", min=1, max=1024, help="Pipeline-parallel stages per replica (count).")]
EpOpt = Annotated[Optional[int], typer.Option("--ep", min=1, max=1024, help="Expert-parallel ways of the MoE layers inside a stage (divides --tp).")]
DpOpt = Annotated[Optional[int], typer.Option("--dp", min=1, max=4096, help="Data-parallel replicas; the batch is shared out among them (count).")]
ContextOpt = Annotated[int, typer.Option("--context", "-c", click_type=tokens(0, 1 << 30), help=f"Context length in tokens ({TOKENS_HELP}).")]
BatchOpt = Annotated[int, typer.Option("--batch", "-b", min=1, max=1 << 24, help="Concurrent sequences (count).")]

RefreshOpt = Annotated[
    bool,
    typer.Option("--refresh", help="Fetch a Hugging Face id's config.json from the hub again, past the local cache."),
]

PlotOpt = Annotated[
    Optional[Path],
    typer.Option("--plot", metavar="PATH", dir_okay=False,
                 help="Also draw the result to PATH (.png or .svg; needs the plot extra: "
                      "pip install 'planner[plot]')."),
]
