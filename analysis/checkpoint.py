"""Checkpoint reconciliation: what the safetensors files beside a config really hold.

Reads only metadata — ``model.safetensors.index.json`` (its ``metadata.total_size``) or the JSON
headers of ``*.safetensors`` files (8-byte length, then the header; tensor data is never read) — and
compares the stored bytes and dtypes with the computed weight bytes. A difference above 1 % becomes
a caveat: the config and the checkpoint disagree, or the format is one we size differently.
"""

from __future__ import annotations

import json
import struct
from collections import Counter
from pathlib import Path

from .errors import PlannerError
from .files import open_regular, read_bounded
from .records import frozen

MAX_HEADER_BYTES = 100 * 1024 * 1024

#: safetensors dtype names → bits per element
ST_BITS = {"F64": 64, "F32": 32, "F16": 16, "BF16": 16, "F8_E4M3": 8, "F8_E5M2": 8, "F8_E8M0": 8, "I64": 64,
           "I32": 32, "I16": 16, "I8": 8, "U8": 8, "U16": 16, "U32": 32, "U64": 64, "BOOL": 8, "F4": 4, "F6_E2M3": 6,
           "F6_E3M2": 6}


@frozen
class Checkpoint:
    source: str  # the index file or the folder of headers
    total_bytes: int
    dtypes: dict[str, int]  # safetensors dtype → bytes (empty when only the index was read)
    tensors: int
    elements: int | None = None  # parameters stored (from the headers' shapes; None from the index alone)


def read_safetensors_header(path: Path) -> dict:
    try:
        fh = open_regular(path, what="safetensors file")
    except PlannerError as exc:  # a FIFO or a device: never opened for reading
        raise ValueError(str(exc)) from None
    with fh:
        raw = fh.read(8)
        if len(raw) != 8:
            raise ValueError("file too short")
        (n,) = struct.unpack("<Q", raw)
        if n <= 0 or n > MAX_HEADER_BYTES:
            raise ValueError(f"header length {n} is not plausible")
        header = json.loads(fh.read(n).decode("utf-8"))
    if not isinstance(header, dict):
        raise ValueError("header is not a JSON object")
    return header


def find_checkpoint(folder: Path) -> Checkpoint | None:
    """The checkpoint beside a config, from its safetensors headers or its index; None if absent or unreadable."""
    try:
        files = sorted(folder.glob("*.safetensors"))
    except OSError:
        return None
    if files:
        total = 0
        count = 0
        elements = 0
        dtypes: Counter = Counter()
        try:
            for f in files:
                for name, info in read_safetensors_header(f).items():
                    if name == "__metadata__" or not isinstance(info, dict):
                        continue
                    start, end = info["data_offsets"]
                    nbytes = int(end) - int(start)
                    if nbytes < 0 or int(start) < 0:
                        raise ValueError("negative tensor extent")
                    total += nbytes
                    dtypes[str(info.get("dtype"))] += nbytes
                    count += 1
                    n = 1
                    for dim in info.get("shape", ()):
                        n *= int(dim)
                    elements += n
        except (OSError, ValueError, KeyError, TypeError, UnicodeDecodeError, OverflowError, RecursionError):
            return None  # (OverflowError: int(1e400); RecursionError: a header of nested brackets)
        return Checkpoint(str(folder), total, dict(dtypes), count, elements)
    index = folder / "model.safetensors.index.json"
    if index.is_file():
        try:
            data = json.loads(read_bounded(index, MAX_HEADER_BYTES, what="safetensors index").decode("utf-8"))
            total = int(data["metadata"]["total_size"])
            count = len(data.get("weight_map", {}))
            if total < 0:
                return None
        except (OSError, ValueError, KeyError, TypeError, AttributeError, OverflowError, RecursionError, PlannerError):
            return None
        return Checkpoint(str(index), total, {}, count)
    return None


@frozen
class Reconciliation:
    checkpoint: Checkpoint
    computed_bytes: int
    difference: float  # (checkpoint - computed) / computed

    @property
    def caveat(self) -> str | None:
        if abs(self.difference) <= 0.01:
            return None
        return (f"the checkpoint ({self.checkpoint.source}) holds {self.checkpoint.total_bytes:,} bytes of tensors, "
                f"{100 * self.difference:+.1f}% from the computed {self.computed_bytes:,}: the config and the "
                "checkpoint disagree, or the format is sized differently here")


def reconcile(folder: Path, computed_bytes: int) -> Reconciliation | None:
    ck = find_checkpoint(folder)
    if ck is None or computed_bytes <= 0:
        return None
    return Reconciliation(ck, computed_bytes, (ck.total_bytes - computed_bytes) / computed_bytes)
