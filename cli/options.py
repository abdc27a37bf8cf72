"""Shared ``Annotated`` option aliases, so every command spells the same option the same way."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from .render import OutputFormat

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
ContextOpt = Annotated[int, typer.Option("--context", "-c", min=0, max=1 << 30, help="Context length in tokens.")]
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
