"""Quantized checkpoints: ``quantization_config`` → ``QuantSpec`` → the bytes each tensor occupies.

Stored bytes of one quantized matmul weight of shape ``(out, in)`` (per expert for stacked experts),
as the checkpoint formats lay them out:

- ``fp8`` with ``weight_block_size [bo, bi]``: ``out·in`` bytes + one fp32 scale per block
  (``ceil(out/bo)·ceil(in/bi)·4``); without blocks one fp32 scale per tensor. ``fbgemm_fp8``: one fp32
  scale per output row.
- ``awq`` (b bits, group g): packed ``out·in·b/8`` + fp16 scales ``ceil(in/g)·out·2`` + packed zeros
  ``ceil(in/g)·out·b/8`` (when ``zero_point``).
- ``gptq``: the same packing + ``g_idx`` (one int32 per input row); ``group_size -1`` means one group.
- ``bitsandbytes`` 4-bit: packed ``numel/2`` + absmax per 64-element block (fp32, or uint8 with a
  nested fp32 absmax per 256 blocks and a 256-entry code when ``double_quant``) + the 16-entry code;
  8-bit: ``numel`` + one fp32 scale per output row.
- ``mxfp4`` (gpt-oss experts): ``numel/2`` + one uint8 (E8M0) scale per 32 elements.
- ``compressed-tensors``: ``num_bits`` values + a scale (base dtype) per group / channel / tensor /
  block, zero points when asymmetric.

Tensors a method does not convert (embeddings, norms, biases, routers, lm_head and whatever
``modules_to_not_convert`` names) stay in the checkpoint's ``torch_dtype``.
"""

from __future__ import annotations

import fnmatch
import re
from functools import lru_cache
from typing import Any

from .errors import ConfigError
from .fields import as_int, short
from .spec import QuantSpec, Tensor


def _list(v: Any) -> tuple[str, ...]:
    if v is None:
        return ()
    if isinstance(v, str):
        return (v,)
    if isinstance(v, list):
        return tuple(str(x) for x in v if isinstance(x, str))
    return ()


def parse_quantization(qc: Any, where: str) -> tuple[QuantSpec | None, list[str]]:
    """Parse ``quantization_config``; unknown methods give (None, [caveat]), never a guess."""
    if not isinstance(qc, dict):
        raise ConfigError(f"{where}: field 'quantization_config' must be an object, got {short(qc)}")
    method = qc.get("quant_method")
    if not isinstance(method, str):
        if qc.get("load_in_4bit") or qc.get("load_in_8bit"):
            method = "bitsandbytes"
        else:
            return None, ["quantization_config has no quant_method: weights sized at torch_dtype; real storage unknown"]
    m = method.lower()
    skip = _list(qc.get("modules_to_not_convert")) + _list(qc.get("llm_int8_skip_modules")) + \
        _list(qc.get("ignore")) + _list(qc.get("ignored_layers"))

    def bits(key: str = "bits", default: int | None = None) -> int:
        v = qc.get(key, default)
        b = as_int(v)
        if b is None or b not in (2, 3, 4, 8):
            raise ConfigError(f"{where}: field 'quantization_config.{key}' must be 2, 3, 4 or 8, got {short(v)}")
        return b

    def group(key: str = "group_size", default: int = 128) -> int:
        v = qc.get(key, default)
        g = as_int(v)
        if g is None or (g < 1 and g != -1) or g > 1 << 20:
            raise ConfigError(f"{where}: field 'quantization_config.{key}' must be a positive integer or -1, got {short(v)}")
        return 0 if g == -1 else g

    if m == "fp8":
        block = qc.get("weight_block_size")
        if block is None:
            return QuantSpec("fp8", 8, modules_to_not_convert=skip, raw_method=method), []
        if (not isinstance(block, list) or len(block) != 2 or any(as_int(b) is None or as_int(b) < 1 for b in block)):
            raise ConfigError(f"{where}: field 'quantization_config.weight_block_size' must be two positive integers, got {short(block)}")
        return QuantSpec("fp8", 8, block_size=(as_int(block[0]), as_int(block[1])), scale_bits=32,
                         modules_to_not_convert=skip, raw_method=method), []
    if m == "fbgemm_fp8":
        return QuantSpec("fp8_channel", 8, scale_bits=32, modules_to_not_convert=skip, raw_method=method), []
    if m == "awq":
        b = bits("bits", qc.get("w_bit", 4))
        g = group("group_size", qc.get("q_group_size", 128))
        zp = qc.get("zero_point", True) is not False
        return QuantSpec("awq", b, group_size=g, zero_point=zp, modules_to_not_convert=skip, raw_method=method), []
    if m == "gptq":
        b = bits("bits", 4)
        g = group("group_size", 128)
        return QuantSpec("gptq", b, group_size=g, zero_point=True, desc_act_g_idx=True,
                         modules_to_not_convert=skip, raw_method=method), []
    if m == "bitsandbytes":
        if qc.get("load_in_4bit") or qc.get("_load_in_4bit"):
            return QuantSpec("bnb4", 4, double_quant=bool(qc.get("bnb_4bit_use_double_quant")),
                             modules_to_not_convert=skip + ("lm_head",), raw_method=method), []
        if qc.get("load_in_8bit") or qc.get("_load_in_8bit"):
            return QuantSpec("bnb8", 8, modules_to_not_convert=skip + ("lm_head",), raw_method=method), []
        return None, ["bitsandbytes config loads neither 4-bit nor 8-bit: weights sized at torch_dtype"]
    if m == "mxfp4":
        return QuantSpec("mxfp4", 4, group_size=32, scale_bits=8, targets=("expert",),
                         modules_to_not_convert=skip, raw_method=method), []
    if m == "compressed-tensors":
        return _compressed_tensors(qc, where, skip)
    return None, [f"quantization_config.quant_method '{method}' is not understood: weights are sized at "
                  "torch_dtype, which is likely wrong for this checkpoint (pass --dtype to choose)"]


def _compressed_tensors(qc: dict, where: str, skip: tuple[str, ...]) -> tuple[QuantSpec | None, list[str]]:
    groups = qc.get("config_groups")
    if not isinstance(groups, dict) or not groups:
        return None, ["compressed-tensors config without config_groups: weights sized at torch_dtype"]
    caveats = []
    if len(groups) > 1:
        caveats.append("compressed-tensors config has several groups: the first one is applied to every linear layer")
    first = next(iter(groups.values()))
    w = first.get("weights") if isinstance(first, dict) else None
    if not isinstance(w, dict):
        return None, ["compressed-tensors group without weights: weights sized at torch_dtype"]
    nb = as_int(w.get("num_bits"))
    if nb not in (2, 3, 4, 8):
        raise ConfigError(f"{where}: field 'quantization_config.config_groups.weights.num_bits' must be 2, 3, 4 or 8, got {short(w.get('num_bits'))}")
    strategy = w.get("strategy") or "tensor"
    g = as_int(w.get("group_size")) or 0
    block = w.get("block_structure")
    bs = (0, 0)
    if isinstance(block, list) and len(block) == 2 and all((as_int(x) or 0) > 0 for x in block):
        bs = (as_int(block[0]), as_int(block[1]))
    if strategy == "group" and g < 1:
        raise ConfigError(f"{where}: compressed-tensors group strategy without a positive group_size "
                          f"(got {short(w.get('group_size'))})")
    if strategy == "block" and not bs[0]:
        raise ConfigError(f"{where}: compressed-tensors block strategy without a block_structure of two positive "
                          f"integers (got {short(block)})")
    return QuantSpec(
        "compressed", nb, group_size=g if strategy == "group" else 0, block_size=bs if strategy == "block" else (0, 0),
        zero_point=w.get("symmetric") is False, scale_bits=16, modules_to_not_convert=skip,
        raw_method=f"compressed-tensors ({w.get('type', 'int')}{nb}, {strategy})",
    ), caveats


# ---- which tensors are converted -----------------------------------------------------------------


def _module(t: Tensor) -> str:
    name = t.name
    for suffix in (".weight", ".bias"):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


@lru_cache(maxsize=64)
def _skip_matcher(patterns: tuple[str, ...]):
    """One matcher for a whole ``modules_to_not_convert`` list (some configs list hundreds of modules).

    A plain pattern matches a module when it is a run of whole dotted segments of the module's name
    (``mlp.gate`` matches ``model.layers.3.mlp.gate`` but not ``mlp.gate_proj``); a pattern with
    wildcards matches the module or one of its parents, as ``fnmatch`` does."""
    plain = frozenset(p for p in patterns if not any(ch in p for ch in "*?["))
    wild = [p for p in patterns if any(ch in p for ch in "*?[")]
    regex = re.compile("|".join(f"(?:{fnmatch.translate(p)})|(?:{fnmatch.translate(p + '.*')})" for p in wild)) if wild else None

    def skipped(module: str) -> bool:
        if plain:
            parts = module.split(".")
            for i in range(len(parts)):
                for j in range(i + 1, len(parts) + 1):
                    if ".".join(parts[i:j]) in plain:
                        return True
        return bool(regex and regex.match(module))

    return skipped


def is_converted(t: Tensor, q: QuantSpec) -> bool:
    if t.kind not in q.targets or len(t.shape) < 2:
        return False
    return not _skip_matcher(q.modules_to_not_convert)(_module(t))


def quantized_bytes(t: Tensor, q: QuantSpec) -> int:
    """Stored bytes of a converted tensor (weights of shape (out, in) or stacked (E, out, in)).

    Checkpoints store each routed expert's gate and up projections as two matrices (transformers
    fuses them on load), so a stacked ``gate_up_proj`` is sized as two halves: block and group
    scales follow the stored shapes."""
    if len(t.shape) == 3:
        experts, n_out, n_in = t.shape
    else:
        experts, (n_out, n_in) = 1, t.shape[-2:]
    if t.kind == "expert" and t.name.endswith("gate_up_proj") and n_out % 2 == 0:
        return experts * 2 * _matrix_bytes(n_out // 2, n_in, q)
    return experts * _matrix_bytes(n_out, n_in, q)


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def _matrix_bytes(n_out: int, n_in: int, q: QuantSpec) -> int:
    numel = n_out * n_in
    packed = _cdiv(numel * q.bits, 8)
    m = q.method
    if m == "fp8":
        if q.block_size[0]:
            bo, bi = q.block_size
            return numel + _cdiv(n_out, bo) * _cdiv(n_in, bi) * 4
        return numel + 4
    if m == "fp8_channel":
        return numel + n_out * 4
    if m in ("awq", "gptq"):
        groups = _cdiv(n_in, q.group_size) if q.group_size else 1
        total = packed + groups * n_out * 2
        if q.zero_point:
            total += _cdiv(groups * n_out * q.bits, 8)
        if q.desc_act_g_idx:
            total += 4 * n_in
        return total
    if m == "bnb4":
        blocks = _cdiv(numel, 64)
        if q.double_quant:
            absmax = blocks + _cdiv(blocks, 256) * 4 + 256 * 4 + 4
        else:
            absmax = blocks * 4
        return packed + absmax + 16 * 4
    if m == "bnb8":
        return numel + n_out * 4
    if m == "mxfp4":
        return packed + _cdiv(numel, 32)
    if m == "compressed":
        if q.group_size:
            scales = n_out * _cdiv(n_in, q.group_size)
        elif q.block_size[0]:
            scales = _cdiv(n_out, q.block_size[0]) * _cdiv(n_in, q.block_size[1])
        else:
            scales = n_out  # channel strategy (tensor strategy is one scale: rounded into this)
        total = packed + scales * 2
        if q.zero_point:
            total += _cdiv(scales * q.bits, 8)
        return total
    raise AssertionError(m)
