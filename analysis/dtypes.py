"""Storage dtypes: names, aliases and exact sizes in bits.

Sizes are kept in *bits* so that 4-bit formats stay exact integers: the bytes of ``n`` elements are
``ceil(n * bits / 8)``. ``compute`` names the peak-FLOP/s column of a hardware profile that a matmul
with weights in this dtype runs at (weight-only int4 formats dequantise and compute in bf16).
"""

from __future__ import annotations

from .errors import OptionError, short
from .records import frozen


@frozen
class DType:
    name: str
    bits: int
    compute: str  # key into a hardware profile's peak FLOP/s table

    def nbytes(self, numel: int) -> int:
        """Exact bytes of ``numel`` elements (rounded up to a whole byte)."""
        return -(-numel * self.bits // 8)


DTYPES: dict[str, DType] = {
    d.name: d
    for d in (
        DType("fp32", 32, "fp32"),
        DType("tf32", 32, "tf32"),
        DType("bf16", 16, "bf16"),
        DType("fp16", 16, "fp16"),
        DType("fp8", 8, "fp8"),
        DType("int8", 8, "int8"),
        DType("int4", 4, "bf16"),
        DType("fp4", 4, "fp4"),
    )
}

ALIASES: dict[str, str] = {
    "float32": "fp32",
    "float": "fp32",
    "f32": "fp32",
    "bfloat16": "bf16",
    "float16": "fp16",
    "half": "fp16",
    "f16": "fp16",
    "float8": "fp8",
    "float8_e4m3fn": "fp8",
    "float8_e4m3": "fp8",
    "float8_e5m2": "fp8",
    "e4m3": "fp8",
    "fp8_e4m3": "fp8",
    "fp8_e5m2": "fp8",
    "i8": "int8",
    "uint8": "int8",
    "i4": "int4",
    "uint4": "int4",
    "nf4": "int4",
    "mxfp4": "fp4",
    "nvfp4": "fp4",
    "float4": "fp4",
}


def get_dtype(name: str, *, what: str = "dtype") -> DType:
    """Look a dtype up by name or alias (case-insensitive); raise ``OptionError`` listing the choices."""
    key = str(name).strip().lower().replace("torch.", "")
    key = ALIASES.get(key, key)
    try:
        return DTYPES[key]
    except KeyError:
        choices = ", ".join(DTYPES)
        raise OptionError(f"unknown {what} {short(name)}", f"choose one of: {choices}") from None


def dtype_key(name: str) -> str:
    """The canonical name of ``name`` when it is a known dtype or alias ('BFloat16 ', 'torch.float16' -> 'bf16',
    'fp16'), else ``name`` stripped and lower-cased: what a command compares with its own short list, so
    that every command reads a --dtype alike."""
    d = try_dtype(name)
    return d.name if d is not None else str(name).strip().lower()


def try_dtype(name: object) -> DType | None:
    """Like ``get_dtype`` but returns None for anything unknown (used for config fields)."""
    if not isinstance(name, str):
        return None
    try:
        return get_dtype(name)
    except OptionError:
        return None
