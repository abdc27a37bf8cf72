"""Quantized checkpoints: ``quantization_config`` → ``QuantSpec`` → the bytes each tensor occupies.

Stored bytes of one quantized matmul weight of shape ``(out, in)`` (per expert for stacked experts),
as the checkpoint formats lay them out:

- ``fp8`` with ``weight_block_size [bo, bi]``: ``out·in`` bytes + one fp32 scale per block
  (``ceil(out/bo)·ceil(in/bi)·4``; DeepSeek, GLM, MiniMax); Qwen's own FP8 releases (``model_type``
  ``qwen*``) store those ``weight_scale_inv`` in 16 bits (BF16: Qwen3-1.7B-FP8, Qwen3-32B-FP8,
  Qwen3.5-35B-A3B-FP8; F16: Qwen3-4B-Instruct-2507-FP8), 2 bytes a block; without blocks one fp32
  ``weight_scale_inv`` per tensor, and with ``activation_scheme static`` (Mistral's FP8 releases) one fp32
  ``activation_scale`` per tensor too (transformers' ``FP8Linear``). ``fbgemm_fp8``: one fp32 scale per
  output row.
  DeepSeek-V4 (``model_type`` ``deepseek_v4``): its block scales are stored as one byte each (F8_E8M0, the
  ``scale_fmt ue8m0`` transformers' FP8Linear allocates), and ``expert_dtype: "fp4"`` (top level, or inside
  ``quantization_config`` as transformers' DeepseekV4Config moves it) stores the routed experts as fp4 e2m1
  two a byte (int8 ``[out, in/2]``) with one E8M0 scale per 32 inputs (``FP8Experts``: ``weight_k_div`` 2,
  ``sf_gran_k`` 32, ``sf_gran_n`` 1); the compressor / indexer projections transformers lists in
  DeepseekV4PreTrainedModel's ``_keep_in_fp32_modules`` (which its FP8 quantizer skips) stay in bf16.
  Oracle: deepseek-ai/DeepSeek-V4-Pro's dtype census (tests/test_quant_real_audit3.py).
- ``awq`` (b bits, group g): packed ``out·in·b/8`` + fp16 scales ``ceil(in/g)·out·2`` + packed zeros
  ``ceil(in/g)·out·b/8`` (when ``zero_point``).
- ``gptq``: the same packing + ``g_idx`` (one int32 per input row); ``group_size -1`` means one group.
- ``bitsandbytes`` 4-bit: packed ``numel/2`` + absmax per 64-element block (fp32, or uint8 with a
  nested fp32 absmax per 256 blocks and a 256-entry code when ``double_quant``) + the 16-entry code;
  not counted: the ``quant_state.bitsandbytes__nf4`` / ``__fp4`` uint8 JSON of each matrix (80-82 bytes;
  about 170 with double quantization, whose ``nested_offset`` float is written there in a data-dependent
  number of digits);
  8-bit: ``numel`` + one fp32 scale per output row.
- ``mxfp4`` (gpt-oss experts): ``numel/2`` + one uint8 (E8M0) scale per 32 elements.
- ``compressed-tensors``: ``num_bits`` values + a scale (base dtype) per group / channel / tensor /
  block, zero points when asymmetric; format ``pack-quantized`` adds each matrix's int64 ``weight_shape``,
  and ``actorder: "group"`` an int32 ``weight_g_idx`` per input column.
  Float 4-bit formats as their vLLM schemes create them
  (vllm/model_executor/layers/quantization/compressed_tensors/schemes/compressed_tensors_w4a4_nvfp4.py,
  ``compressed_tensors_w4a16_nvfp4.py``, ``compressed_tensors_w4a16_mxfp4.py``):
  NVFP4 (``strategy tensor_group``, format ``nvfp4-pack-quantized``): ``weight_packed`` uint8
  ``[out, in/2]`` + ``weight_scale`` fp8-e4m3 ``[out, in/16]`` + ``weight_global_scale`` fp32 scalar
  (+ ``input_global_scale`` fp32 scalar when activations are quantized too, W4A4);
  MXFP4 (format ``mxfp4-pack-quantized``, group 32): ``weight_packed`` + ``weight_scale`` uint8 (E8M0)
  ``[out, in/32]``. ``ignore`` entries with a ``re:`` prefix are regular expressions matched at the
  start of the module name (compressed_tensors.utils.match: ``re.match``).
- ``modelopt`` (NVIDIA ModelOpt; ``quantization_config`` with ``quant_method modelopt`` and
  ``quant_algo``, or the older ``hf_quant_config.json`` ``{"quantization": {"quant_algo", ...}}``),
  vllm/model_executor/layers/quantization/modelopt.py (vllm-project/vllm@00155cde) ``create_weights``:
  ``NVFP4``: ``weight`` uint8 ``[out, in/2]`` + ``weight_scale`` fp8-e4m3 ``[out, in/group_size]``
  (group 16) + ``weight_scale_2`` and ``input_scale`` fp32 scalars (``ModelOptNvFp4LinearMethod``);
  ``W4A16_NVFP4`` the same without ``input_scale``; ``FP8``: fp8 ``weight`` + ``weight_scale`` and
  ``input_scale`` fp32 scalars (``ModelOptFp8LinearMethod``); ``FP8_PER_CHANNEL_PER_TOKEN``: fp32
  ``weight_scale [out]`` (``ModelOptFp8PcPtLinearMethod``); ``FP8_PB_WO``: fp32 scales per 128x128
  block (``ModelOptFp8PbWoLinearMethod``). Each expert's gate / up / down is a matrix of its own with
  its own scalars. ``exclude_modules`` (``ignore``) are fnmatch wildcards. ``MIXED_PRECISION`` with a
  ``quantized_layers`` table sizes each listed module in its own algorithm (``_modelopt_mixed``). Other
  ``quant_algo`` values (``MXFP8``, ``W4A8_AWQ``, ...) are a caveat, not sized.
- ``quark`` (AMD Quark, ``global_quant_config``), vllm .../quantization/quark/schemes
  (``quark_w8a8_fp8.py``, ``quark_ocp_mx.py``): fp8-e4m3 ``per_tensor``: fp8 weight + fp32 ``weight_scale``
  scalar (+ fp32 ``input_scale`` scalar for static activations); ``per_channel``: fp32 ``weight_scale
  [out]``; ``fp4`` ``per_group`` 32 (OCP MXFP4): uint8 ``[out, in/2]`` + uint8 (E8M0) ``weight_scale
  [out, in/32]``. A ``layer_quant_config`` / ``layer_type_quant_config`` override is a caveat.
- ``auto-round`` (Intel): ``packing_format`` ``auto_gptq`` / ``auto_awq`` (alone or after
  ``auto_round:``) as GPTQ / AWQ above; its own ``auto_round`` packing is a caveat.
KV-cache scales (``k_scale`` / ``v_scale``, fp32 scalars per attention layer) of checkpoints with a
quantized KV cache are not counted (8 bytes a layer).

Tensors a method does not convert (embeddings, norms, biases, routers, lm_head and whatever
``modules_to_not_convert`` names) stay in the checkpoint's ``torch_dtype``.
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import replace
from functools import lru_cache
from typing import Any

from .errors import ConfigError
from .fields import as_int, config_regex, short
from .spec import QuantSpec, Tensor


def _list(qc: dict, key: str, where: str) -> tuple[str, ...]:
    """``quantization_config[key]``, a module name or a list of them (absent or null: none); anything else is
    refused naming the field, so that no entry of a skip list is dropped unseen."""
    v = qc.get(key)
    if v is None:
        return ()
    if isinstance(v, str):
        return (v,)
    if isinstance(v, list) and all(isinstance(x, str) for x in v):
        return tuple(v)
    bad = next((x for x in v if not isinstance(x, str)), None) if isinstance(v, list) else v
    raise ConfigError(f"{where}: field 'quantization_config.{key}' must be a module name or a list of them, "
                      f"got {short(bad)}" + (" in the list" if isinstance(v, list) else ""))


def parse_quantization(qc: Any, where: str, model_type: str = "",
                       expert_dtype: Any = None) -> tuple[QuantSpec | None, list[str]]:
    """Parse ``quantization_config``; unknown methods give (None, [caveat]), never a guess. ``model_type``
    picks the producer's scale dtype where the config does not say it (Qwen's block fp8: 16-bit scales;
    DeepSeek-V4's: 8-bit); ``expert_dtype`` is the config's top-level field of that name (DeepSeek-V4)."""
    if not isinstance(qc, dict):
        raise ConfigError(f"{where}: field 'quantization_config' must be an object, got {short(qc)}")
    method = qc.get("quant_method")
    if not isinstance(method, str):
        if qc.get("load_in_4bit") or qc.get("load_in_8bit"):
            method = "bitsandbytes"
        elif isinstance(qc.get("quantization"), dict) and "quant_algo" in qc["quantization"]:
            method = "modelopt"  # hf_quant_config.json's layout
        else:
            return None, ["quantization_config has no quant_method: weights sized at torch_dtype; real storage unknown"]
    m = method.lower()
    skip = sum((_list(qc, key, where) for key in ("modules_to_not_convert", "llm_int8_skip_modules", "ignore",
                                                    "ignored_layers")), ())

    _check_patterns(skip, where, "ignore")

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
        if block is None:  # per-tensor scales (FP8Linear: weight_scale_inv, + activation_scale when static)
            static = str(qc.get("activation_scheme", "dynamic")).lower() == "static"
            return QuantSpec("fp8", 8, tensor_bytes=4 if static else 0, modules_to_not_convert=skip,
                             raw_method=method), []
        if (not isinstance(block, list) or len(block) != 2 or any(as_int(b) is None or as_int(b) < 1 for b in block)):
            raise ConfigError(f"{where}: field 'quantization_config.weight_block_size' must be two positive integers, got {short(block)}")
        # the stored weight_scale_inv dtype is not in the config: fp32 (DeepSeek-V3's convention, transformers'
        # FineGrainedFP8) except in Qwen's FP8 releases, which store 16-bit scales (see the module docstring)
        mt = str(model_type).lower()
        scale_bits = 16 if mt.startswith("qwen") else 8 if mt == "deepseek_v4" else 32
        ed = str(qc.get("expert_dtype", expert_dtype) or "fp8").lower()
        if ed not in ("fp8", "fp4"):
            return None, [f"expert_dtype '{ed}' is not understood: weights sized at torch_dtype, which is likely "
                          "wrong for this checkpoint (pass --dtype to choose)"]
        if mt == "deepseek_v4":
            skip = skip + _V4_BF16_MODULES
        return QuantSpec("fp8", 8, block_size=(as_int(block[0]), as_int(block[1])), scale_bits=scale_bits,
                         modules_to_not_convert=skip, expert_group=32 if ed == "fp4" else 0,
                         raw_method=method + (" (experts fp4)" if ed == "fp4" else "")), []
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
    if m.startswith("modelopt"):
        return _modelopt(qc, method, where, skip)
    if m == "quark":
        return _quark(qc, where, skip)
    if m in ("auto-round", "intel/auto-round", "auto_round"):
        return _auto_round(qc, method, where, skip, bits, group)
    return None, [f"quantization_config.quant_method '{method}' is not understood: weights are sized at "
                  "torch_dtype, which is likely wrong for this checkpoint (pass --dtype to choose)"]


#: transformers' DeepseekV4PreTrainedModel._keep_in_fp32_modules (non-strict): the FP8 quantizer leaves them
#: unconverted and the checkpoints store them in bf16 without a scale
_V4_BF16_MODULES = ("self_attn.compressor.kv_proj", "self_attn.compressor.gate_proj",
                    "self_attn.compressor.indexer.kv_proj", "self_attn.compressor.indexer.gate_proj",
                    "self_attn.compressor.indexer.scorer.weights_proj")


def _check_patterns(patterns: tuple[str, ...], where: str, key: str) -> None:
    for p in patterns:
        if p.startswith("re:"):
            config_regex(p[3:], f"{where}: field 'quantization_config.{key}' has an invalid regular expression "
                                f"{short(p)}")


def _compressed_tensors(qc: dict, where: str, skip: tuple[str, ...]) -> tuple[QuantSpec | None, list[str]]:
    groups = qc.get("config_groups")
    if not isinstance(groups, dict) or not groups:
        return None, ["compressed-tensors config without config_groups: weights sized at torch_dtype"]
    if len(groups) == 1:
        return _ct_group(qc, next(iter(groups.values())), where, skip, [])
    # several groups (llm-compressor's mixed-precision format): each sized in its own format, on the matrices its
    # targets name (converted_spec); with_primary picks the group that prices the GEMMs once the tensors are known
    subs, caveats = [], []
    for name, grp in groups.items():
        targets = grp.get("targets") if isinstance(grp, dict) else None
        if not isinstance(targets, list) or not targets or not all(isinstance(t, str) for t in targets):
            raise ConfigError(f"{where}: field 'quantization_config.config_groups.{short(name, 40)}.targets' must be a "
                              f"non-empty list of module names, 're:' patterns or class names, got {short(targets)}")
        _check_patterns(tuple(targets), where, f"config_groups.{short(name, 40)}.targets")
        sub, cav = _ct_group(qc, grp, where, skip, [])
        if sub is None:
            return None, [f"compressed-tensors group {str(name)[:40]}: {c}" for c in cav] + [
                f"compressed-tensors group {str(name)[:40]} is not understood, so none of the config's groups is "
                "applied: weights sized at torch_dtype"]
        caveats.extend(cav)
        subs.append((tuple(targets), sub, str(name)))
    raw = "compressed-tensors mixed: " + " + ".join(_ct_kind(sub) for _, sub, _ in subs)
    return replace(subs[0][1], groups=tuple((t, sub) for t, sub, _ in subs), raw_method=raw,
                   group_names=tuple(n for _, _, n in subs)), caveats


def _ct_kind(sub: QuantSpec) -> str:
    """A group's format in a few words: its raw_method without the method's name ('float8, channel, W8A8';
    ModelOpt's 'FP8')."""
    k = sub.raw_method.removeprefix("compressed-tensors ").removeprefix("modelopt ")
    return k[1:-1] if k.startswith("(") and k.endswith(")") else k


def _ct_group(qc: dict, first: Any, where: str, skip: tuple[str, ...],
              caveats: list[str]) -> tuple[QuantSpec | None, list[str]]:
    """One compressed-tensors config group's (``first``: the group object) weight format."""
    w = first.get("weights") if isinstance(first, dict) else None
    if not isinstance(w, dict):
        return None, ["compressed-tensors group without weights: weights sized at torch_dtype"]
    nb = as_int(w.get("num_bits"))
    if nb not in (2, 3, 4, 8):
        raise ConfigError(f"{where}: field 'quantization_config.config_groups.weights.num_bits' must be 2, 3, 4 or 8, got {short(w.get('num_bits'))}")
    strategy = w.get("strategy") or "tensor"
    g = as_int(w.get("group_size")) or 0
    fmt = first.get("format") or qc.get("format")
    if w.get("type") == "float" and nb == 4:
        return _ct_fp4(qc, first, w, strategy, g, fmt, where, skip, caveats)
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
    # W8A8 (8-bit weights and 8-bit input activations of the same kind: llm-compressor's FP8-dynamic / FP8 and
    # W8A8-INT8 schemes) runs its matmuls in 8 bits (vLLM: CompressedTensorsW8A8Fp8 / W8A8Int8, cutlass_scaled_mm);
    # without 8-bit activations (W8A16, W4A16) the weights are dequantized into 16-bit GEMMs (Marlin / machete)
    a = first.get("input_activations")
    a_bits = as_int(a.get("num_bits")) if isinstance(a, dict) else None
    compute = ""
    if nb == 8 and a_bits == 8:
        w_float, a_float = w.get("type") == "float", a.get("type") == "float"
        compute = "fp8" if w_float and a_float else "int8" if not w_float and not a_float else ""
    # strategy "tensor": one scale per matrix (weight_scale of shape [1]), not one per output channel; static input
    # activations add their input_scale (one per matrix as well); both in the scales' 16 bits
    static_input = isinstance(a, dict) and a.get("dynamic") is False
    # format pack-quantized also stores each matrix's weight_shape: torch.tensor(weight.shape), int64 [2]
    # (compressed_tensors/compressors/pack_quantized: compressed_dict["weight_shape"]), 16 bytes a matrix
    shape_bytes = 16 if fmt == "pack-quantized" else 0
    # actorder "group" (GPTQ's activation ordering with a g_idx map; removed from compressed-tensors 2026-08) also
    # stores weight_g_idx, one int32 per input column (RedHatAI/Llama-3.3-70B-Instruct-quantized.w4a16: 6,225,920
    # of them, tests/test_quant_real_audit3.py)
    g_idx = str(w.get("actorder")).lower() == "group"
    return QuantSpec(
        "compressed", nb, group_size=g if strategy == "group" else 0, block_size=bs if strategy == "block" else (0, 0),
        zero_point=w.get("symmetric") is False, scale_bits=16, modules_to_not_convert=skip,
        raw_method=f"compressed-tensors ({w.get('type', 'int')}{nb}, {strategy}{', W8A8' if compute else ''})",
        compute=compute, per_tensor=strategy == "tensor", tensor_bytes=(2 if static_input else 0) + shape_bytes,
        desc_act_g_idx=g_idx), caveats


def _ct_fp4(qc: dict, group: dict, w: dict, strategy: str, g: int, fmt: Any, where: str, skip: tuple[str, ...],
            caveats: list[str]) -> tuple[QuantSpec | None, list[str]]:
    """compressed-tensors 4-bit float weights: NVFP4 (tensor_group, fp8 scales per 16 + fp32 global scales)
    or MXFP4 (group 32, uint8 E8M0 scales)."""
    if g < 1:
        raise ConfigError(f"{where}: compressed-tensors 4-bit float weights ({strategy} strategy) need a positive "
                          f"group_size, got {short(w.get('group_size'))}")
    a = group.get("input_activations")
    a4 = isinstance(a, dict) and a.get("type") == "float" and as_int(a.get("num_bits")) == 4
    if strategy == "tensor_group":
        if fmt not in (None, "nvfp4-pack-quantized", "mixed-precision"):
            return None, caveats + [f"compressed-tensors float4 tensor_group weights in format '{fmt}' are not "
                                    "understood: weights sized at torch_dtype"]
        return QuantSpec("fp_group", 4, group_size=g, scale_bits=8, tensor_bytes=8 if a4 else 4,
                         zero_point=False, compute="fp4" if a4 else "", modules_to_not_convert=skip,
                         raw_method=f"compressed-tensors NVFP4 ({'W4A4' if a4 else 'W4A16'}, group {g})"), caveats
    if strategy == "group" and fmt == "mxfp4-pack-quantized":
        return QuantSpec("fp_group", 4, group_size=g, scale_bits=8, zero_point=False, compute="fp4" if a4 else "",
                         modules_to_not_convert=skip,
                         raw_method=f"compressed-tensors MXFP4 ({'W4A4' if a4 else 'W4A16'}, group {g})"), caveats
    return None, caveats + [f"compressed-tensors float4 weights with strategy '{strategy}' and format '{fmt}' are not "
                            "understood: weights sized at torch_dtype"]


def _modelopt(qc: dict, method: str, where: str, skip: tuple[str, ...]) -> tuple[QuantSpec | None, list[str]]:
    """NVIDIA ModelOpt: config.json's flat form or hf_quant_config.json's ``quantization`` object."""
    inner = qc.get("quantization", qc)
    key = "quantization_config.quantization" if inner is not qc else "quantization_config"
    if not isinstance(inner, dict):
        raise ConfigError(f"{where}: field 'quantization_config.quantization' must be an object, got {short(inner)}")
    algo = inner.get("quant_algo")
    if not isinstance(algo, str) or not algo.strip():
        raise ConfigError(f"{where}: field '{key}.quant_algo' must be a string such as 'NVFP4' or 'FP8', got {short(algo)}")
    excl = inner.get("exclude_modules", inner.get("ignore", []))
    if excl is None:
        excl = []
    if not isinstance(excl, list) or not all(isinstance(x, str) for x in excl):
        raise ConfigError(f"{where}: field '{key}.exclude_modules' must be a list of module names, got {short(excl)}")
    _check_patterns(tuple(excl), where, key.removeprefix("quantization_config").lstrip(".") + ".exclude_modules")
    skip = tuple(excl) + skip
    a = algo.strip().upper()
    raw = f"modelopt {a}"
    if a == "MIXED_PRECISION" and isinstance(inner.get("quantized_layers"), dict):
        return _modelopt_mixed(inner["quantized_layers"], method, where, key, skip)
    if a in ("NVFP4", "W4A16_NVFP4"):
        gv = inner.get("group_size", 16)
        g = as_int(gv)
        if g is None or g < 1 or g > 1 << 20:
            raise ConfigError(f"{where}: field '{key}.group_size' must be a positive integer, got {short(gv)}")
        w4a4 = a == "NVFP4"
        return QuantSpec("fp_group", 4, group_size=g, scale_bits=8, tensor_bytes=8 if w4a4 else 4, zero_point=False,
                         compute="fp4" if w4a4 else "", modules_to_not_convert=skip, raw_method=raw), []
    if a == "FP8":
        return QuantSpec("fp8_tensor", 8, tensor_bytes=8, scale_bits=32, zero_point=False, compute="fp8",
                         modules_to_not_convert=skip, raw_method=raw), []
    if a == "FP8_PER_CHANNEL_PER_TOKEN":
        return QuantSpec("fp8_channel", 8, scale_bits=32, zero_point=False, compute="fp8",
                         modules_to_not_convert=skip, raw_method=raw), []
    if a == "FP8_PB_WO":
        return QuantSpec("fp8", 8, block_size=(128, 128), scale_bits=32, zero_point=False, compute="fp8",
                         modules_to_not_convert=skip, raw_method=raw), []
    return None, [f"modelopt quant_algo '{algo}' is not sized by planner: weights are sized at torch_dtype, which is "
                  "likely wrong for this checkpoint (pass --dtype to choose)"]


#: ModelOpt's per-layer algorithm that leaves a module as it is (vLLM ModelOptMixedPrecisionConfig)
_MODELOPT_UNQUANTIZED = ("UNQUANTIZED", "NONE")


def _modelopt_mixed(layers: dict, method: str, where: str, key: str,
                    skip: tuple[str, ...]) -> tuple[QuantSpec | None, list[str]]:
    """ModelOpt ``MIXED_PRECISION``: ``quantized_layers`` maps each module to its own algorithm
    (``{"model.layers.0.self_attn.q_proj": {"quant_algo": "FP8"}, "model.layers.0.mlp.experts": {"quant_algo":
    "NVFP4", "group_size": 16}, ...}``; vllm/model_executor/layers/quantization/modelopt.py
    ``ModelOptMixedPrecisionConfig``: a layer takes the entry of its own name). Each algorithm is one group of
    ``QuantSpec.groups`` whose targets are the names that carry it, sized as that algorithm alone is; a module not
    listed (or ``UNQUANTIZED``) stays in torch_dtype."""
    if len(layers) > 1 << 20:
        raise ConfigError(f"{where}: field '{key}.quantized_layers' lists {len(layers):,} modules (at most 1,048,576)")
    by_algo: dict[tuple, list[str]] = {}
    for name, entry in layers.items():
        if not isinstance(entry, dict) or not isinstance(entry.get("quant_algo"), str):
            raise ConfigError(f"{where}: field '{key}.quantized_layers.{short(name, 60)}' must be an object with a "
                              f"'quant_algo' string, got {short(entry)}")
        algo = entry["quant_algo"].strip().upper()
        if algo in _MODELOPT_UNQUANTIZED:
            continue
        group = entry.get("group_size", 16)
        if as_int(group) is None or as_int(group) < 1:
            raise ConfigError(f"{where}: field '{key}.quantized_layers.{short(name, 60)}.group_size' must be a "
                              f"positive integer, got {short(group)}")
        by_algo.setdefault((algo, as_int(group)), []).append(str(name))
    if not by_algo:
        return None, ["modelopt MIXED_PRECISION lists no quantized module: weights sized at torch_dtype"]
    subs = []
    for (algo, group), names in by_algo.items():
        sub, cav = _modelopt({"quant_algo": algo, "group_size": group}, method, where, skip)
        if sub is None:
            return None, [f"modelopt MIXED_PRECISION layer algorithm {short(algo, 30)} ({len(names):,} modules): {c}"
                          for c in cav]
        subs.append((tuple(sorted(names)), sub, algo))
    raw = "modelopt MIXED_PRECISION: " + " + ".join(f"{algo} ({len(t):,} modules)" for t, _, algo in subs)
    return replace(subs[0][1], groups=tuple((t, sub) for t, sub, _ in subs), raw_method=raw,
                   group_names=tuple(algo for _, _, algo in subs)), []


_QUARK_FP8 = ("fp8_e4m3", "fp8_e4m3fn", "float8_e4m3fn")


def _quark(qc: dict, where: str, skip: tuple[str, ...]) -> tuple[QuantSpec | None, list[str]]:
    """AMD Quark: the global weight scheme (fp8 per tensor / per channel, OCP MXFP4)."""
    gq = qc.get("global_quant_config")
    if not isinstance(gq, dict):
        raise ConfigError(f"{where}: field 'quantization_config.global_quant_config' must be an object, got {short(gq)}")
    w = gq.get("weight")
    if isinstance(w, list) and len(w) == 1:
        w = w[0]
    if not isinstance(w, dict):
        return None, ["quark global_quant_config without a single weight scheme: weights sized at torch_dtype"]
    excl = qc.get("exclude", [])
    if excl is None:
        excl = []
    if not isinstance(excl, list) or not all(isinstance(x, str) for x in excl):
        raise ConfigError(f"{where}: field 'quantization_config.exclude' must be a list of module names, got {short(excl)}")
    _check_patterns(tuple(excl), where, "exclude")
    skip = tuple(excl) + skip
    caveats = []
    if qc.get("layer_quant_config") or qc.get("layer_type_quant_config"):
        caveats.append("quark layer_quant_config / layer_type_quant_config overrides are not modelled: the global "
                       "weight scheme is applied to every linear layer")
    dtype, scheme = str(w.get("dtype", "")).lower(), str(w.get("qscheme", "")).lower()
    a = gq.get("input_tensors")
    if isinstance(a, list) and len(a) == 1:
        a = a[0]
    a = a if isinstance(a, dict) else None
    a_static = a is not None and a.get("is_dynamic") is False and str(a.get("qscheme", "")).lower() == "per_tensor"
    a_dtype = str(a.get("dtype", "")).lower() if a else ""
    raw = f"quark {dtype} {scheme}"
    if dtype in _QUARK_FP8 and scheme in ("per_tensor", "per_channel"):
        compute = "fp8" if a_dtype in _QUARK_FP8 else "act"
        if scheme == "per_tensor":
            return QuantSpec("fp8_tensor", 8, tensor_bytes=4 + (4 if a_static else 0), scale_bits=32, zero_point=False,
                             compute=compute, modules_to_not_convert=skip, raw_method=raw), caveats
        return QuantSpec("fp8_channel", 8, tensor_bytes=4 if a_static else 0, scale_bits=32, zero_point=False,
                         compute=compute, modules_to_not_convert=skip, raw_method=raw), caveats
    if dtype in ("fp4", "fp4_e2m1") and scheme == "per_group":
        gv = w.get("group_size")
        g = as_int(gv)
        if g is None or g < 1 or g > 1 << 20:
            raise ConfigError(f"{where}: field 'quantization_config.global_quant_config.weight.group_size' must be a "
                              f"positive integer, got {short(gv)}")
        if g == 32 and str(w.get("scale_format", "e8m0")).lower() == "e8m0":
            return QuantSpec("fp_group", 4, group_size=32, scale_bits=8, zero_point=False,
                             compute="fp4" if a_dtype in ("fp4", "fp4_e2m1") else "", modules_to_not_convert=skip,
                             raw_method="quark MXFP4"), caveats
    return None, caveats + [f"quark weight scheme {dtype or '?'} {scheme or '?'} is not sized by planner: weights "
                            "sized at torch_dtype, which is likely wrong for this checkpoint (pass --dtype to choose)"]


def _auto_round(qc: dict, method: str, where: str, skip: tuple[str, ...], bits, group) -> tuple[QuantSpec | None, list[str]]:
    """Intel auto-round: GPTQ / AWQ packing as those formats."""
    pf = qc.get("packing_format", "auto_round:auto_gptq")
    if not isinstance(pf, str):
        raise ConfigError(f"{where}: field 'quantization_config.packing_format' must be a string, got {short(pf)}")
    kind = pf.split(":")[-1].strip().lower()
    b, g = bits("bits", 4), group("group_size", 128)
    if kind == "auto_gptq":
        return QuantSpec("gptq", b, group_size=g, zero_point=True, desc_act_g_idx=True, modules_to_not_convert=skip,
                         raw_method=f"{method} ({pf})"), []
    if kind == "auto_awq":
        return QuantSpec("awq", b, group_size=g, zero_point=True, modules_to_not_convert=skip,
                         raw_method=f"{method} ({pf})"), []
    return None, [f"auto-round packing_format '{pf}' is not sized by planner: weights sized at torch_dtype, which is "
                  "likely wrong for this checkpoint (pass --dtype to choose)"]


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
    wildcards matches the module or one of its parents, as ``fnmatch`` does; ``re:REGEX`` (compressed-tensors)
    matches when the regular expression matches at the start of the module's name."""
    res = [p[3:] for p in patterns if p.startswith("re:")]
    patterns = tuple(p for p in patterns if not p.startswith("re:"))
    plain = frozenset(p for p in patterns if not any(ch in p for ch in "*?["))
    wild = [p for p in patterns if any(ch in p for ch in "*?[")]
    parts = [f"(?:{fnmatch.translate(p)})|(?:{fnmatch.translate(p + '.*')})" for p in wild]
    regex = re.compile("|".join(parts)) if parts else None
    # compressed-tensors "re:" entries: re.match against the module name, each compiled alone (a pattern's inline
    # global flags, "(?i)...", must stay at its start)
    regexes = ((regex,) if regex else ()) + tuple(re.compile(r) for r in res)

    def skipped(module: str) -> bool:
        if plain:
            parts = module.split(".")
            for i in range(len(parts)):
                for j in range(i + 1, len(parts) + 1):
                    if ".".join(parts[i:j]) in plain:
                        return True
        return any(r.match(module) for r in regexes)

    return skipped


#: our module-name pieces the checkpoints spell otherwise (runtime/load.py _MODULES, checkpoint's -> ours), for
#: matching modules_to_not_convert / ignore lists written against the checkpoint: DeepSeek-V2/V3, Kimi K2 and GLM
#: MoE store ``mlp.shared_experts`` (Kimi-K2.5's ignore ``re:.*shared_experts.*``, tests/test_quant_real_audit3.py); the
#: Qwen3-Next / Qwen3.5 / Qwen4-Exp checkpoints name the Gated DeltaNet module ``linear_attn`` (ours: ``mixer``), as
#: Qwen3.8-2.4T-A95B-FP8's modules_to_not_convert does (tests/test_qwen3_8.py)
_CHECKPOINT_SPELLINGS = ((".mlp.shared_expert.", ".mlp.shared_experts."), (".mixer.", ".linear_attn."))


def _ignored(module: str, q: QuantSpec) -> bool:
    return _ignored_by(module, q.modules_to_not_convert)


@lru_cache(maxsize=1 << 16)
def _ignored_by(module: str, patterns: tuple[str, ...]) -> bool:
    """Whether ``patterns`` skip ``module``; cached, as a plan asks it of the same modules for each candidate
    layout (tens of thousands of times) and a ``re:`` pattern may take a millisecond a name."""
    skipped = _skip_matcher(patterns)
    if skipped(module):
        return True
    return any(ours in module and skipped(module.replace(ours, theirs)) for ours, theirs in _CHECKPOINT_SPELLINGS)


def is_converted(t: Tensor, q: QuantSpec) -> bool:
    if q.groups:
        return converted_spec(t, q) is not None
    if t.kind not in q.targets or len(t.shape) < 2:
        return False
    return not _ignored(_module(t), q)


#: the matrices a stacked expert tensor stands for in a checkpoint that stores each expert apart (expert 0's names:
#: a target names one expert's modules, or all of them by a pattern)
_EXPERT_MATRICES = {"gate_up_proj": ("gate_proj", "up_proj"), "down_proj": ("down_proj",)}


def _checkpoint_modules(module: str, expert_matrices: tuple[str, ...]) -> tuple[str, ...]:
    """The module names a tensor of ``module`` may carry in the checkpoint a compressed-tensors target was written
    against: ours, the spellings of ``_CHECKPOINT_SPELLINGS``, a multimodal wrapper's ``model.language_model.``
    prefix, and a stacked expert tensor's per-expert modules
    (``mlp.experts.gate_up_proj`` -> ``mlp.experts.0.gate_proj``, ``mlp.experts.0.up_proj``)."""
    names = [module] + [module.replace(ours, theirs) for ours, theirs in _CHECKPOINT_SPELLINGS if ours in module]
    # a multimodal checkpoint's text model (Qwen3.5 / Qwen3.6, Gemma 3/4, Llama 4, Mistral 3: model.language_model.)
    names += [n.replace("model.", "model.language_model.", 1) for n in names if n.startswith("model.")]
    if expert_matrices:
        parents = [n.rpartition(".")[0] for n in names]
        # expert 0's modules (a target names one expert's, or all by a pattern) and the experts module itself
        # (ModelOpt's quantized_layers name it whole: "model.layers.0.mlp.experts")
        names += [f"{n}.0.{m}" for n in parents for m in expert_matrices] + parents
    return tuple(names)


def converted_spec(t: Tensor, q: QuantSpec) -> QuantSpec | None:
    """The format ``t`` is stored in: ``q`` itself, one of its ``groups``' specs, or None (unconverted).

    With several compressed-tensors groups a matrix (a linear, an expert, lm_head) takes the first group one of
    whose targets names it, a module name matching exactly or a ``re:`` pattern matching at the start, in the
    groups' order; failing that, the first group whose targets include the class name ``Linear`` (a linear or
    expert matrix; lm_head only when named), as vLLM resolves a layer's scheme (compressed_tensors_utils
    ``find_matched_target``: name, then class). ``ignore`` (``modules_to_not_convert``) wins over both."""
    if not q.groups:
        return q if is_converted(t, q) else None
    i = _group_of(t, q)
    return None if i < 0 else q.groups[i][1]


def _group_of(t: Tensor, q: QuantSpec) -> int:
    """The index in ``q.groups`` of the group ``t`` is stored in (``converted_spec``'s rule), -1 for none."""
    if len(t.shape) < 2 or t.kind not in ("linear", "expert", "lm_head") or _ignored(_module(t), q):
        return -1
    return _group_index(_module(t), t.kind, _stored_matrices(t), tuple(g for g, _ in q.groups))


def _stored_matrices(t: Tensor) -> tuple[str, ...]:
    """The per-expert matrices a stacked expert tensor stands for in a checkpoint (() for any other tensor): a gated
    ``gate_up_proj`` is ``gate_proj`` and ``up_proj``, a non-gated one ``up_proj`` alone."""
    if t.kind != "expert" or len(t.shape) != 3:
        return ()
    leaf = t.name.rpartition(".")[2]
    if leaf == "gate_up_proj" and not t.gated:
        return ("up_proj",)
    return _EXPERT_MATRICES.get(leaf, ())


@lru_cache(maxsize=1 << 16)
def _group_index(module: str, kind: str, expert_matrices: tuple[str, ...], groups: tuple[tuple[str, ...], ...]) -> int:
    """converted_spec's choice of group (-1: none) for a tensor of ``module``; cached as ``_ignored_by`` is."""
    names = _checkpoint_modules(module, expert_matrices)
    for i, targets in enumerate(groups):
        plain, regexes = _target_matcher(targets)
        if any(n in plain for n in names) or any(r.match(n) for r in regexes for n in names):
            return i
    if kind != "lm_head":
        for i, targets in enumerate(groups):
            if any(target.lower() == "linear" for target in targets):
                return i
    return -1


@lru_cache(maxsize=64)
def _target_matcher(targets: tuple[str, ...]):
    """A group's targets as (the exact module names, its compiled ``re:`` patterns): a config may list thousands
    of module names (checked by ``_check_patterns`` when parsed)."""
    return (frozenset(t for t in targets if not t.startswith("re:")),
            tuple(re.compile(t[3:]) for t in targets if t.startswith("re:")))


def storage_key(t: Tensor, q: QuantSpec):
    """What decides ``t``'s stored bytes besides its shape: whether it is converted, and with several groups
    which group's format it takes (layers alike in shape but unlike in this are stored apart)."""
    if not q.groups:
        return is_converted(t, q)
    return _group_of(t, q)


def group_params(spec, q: QuantSpec) -> list[int]:
    """The parameters each of ``q.groups`` stores, over ``spec``'s tensors (identical layers counted once each)."""
    out = [0] * len(q.groups)
    for t in spec.tensors():
        i = _group_of(t, q)
        if i >= 0:
            out[i] += t.numel
    return out


def with_primary(q: QuantSpec | None, spec) -> tuple[QuantSpec | None, list[str]]:
    """A mixed-precision spec's top-level fields set to the group that stores the most parameters of ``spec`` (its
    compute dtype prices the GEMMs, its bits the weight-only kernels), and the caveat that says how the weights were
    split between the groups."""
    if q is None or not q.groups:
        return q, []
    params = group_params(spec, q)
    best = max(range(len(params)), key=lambda i: params[i])
    names = tuple(n[:40] for n in q.group_names)
    parts = "; ".join(f"{n if _ct_kind(sub) == n else f'{n} {_ct_kind(sub)}'}: {p:,} parameters"
                      for n, (_, sub), p in zip(names, q.groups, params))
    out = [f"{q.raw_method.partition(' ')[0]} mixed precision, each group's matrices sized in its own format "
           f"({parts}); the GEMMs are priced in the compute format of {names[best]}, the group that holds the most "
           "parameters"]
    empty = [n for n, p in zip(names, params) if not p]
    if empty:
        out.append(f"mixed-precision group(s) {', '.join(empty)}: no matrix of this model matches their targets")
    primary = q.groups[best][1]
    return replace(primary, groups=q.groups, group_names=q.group_names, raw_method=q.raw_method,
                   modules_to_not_convert=q.modules_to_not_convert), out


def quantized_bytes(t: Tensor, q: QuantSpec) -> int:
    """Stored bytes of a converted tensor (weights of shape (out, in) or stacked (E, out, in)).

    Checkpoints store each routed expert's gate and up projections as two matrices (transformers
    fuses them on load), so a stacked ``gate_up_proj`` is sized as two halves: block and group
    scales follow the stored shapes. With several groups, ``t``'s group's format (``converted_spec``)."""
    if q.groups:
        sub = converted_spec(t, q)
        if sub is None:
            raise ValueError(f"{t.name} is not converted by any group of this quantization config")
        q = sub
    if len(t.shape) == 3:
        experts, n_out, n_in = t.shape
    else:
        experts, (n_out, n_in) = 1, t.shape[-2:]
    if t.kind == "expert" and q.expert_group:  # fp4 e2m1 two a byte + one scale per expert_group inputs a row
        return experts * (_cdiv(n_out * n_in, 2) + n_out * _cdiv(n_in, q.expert_group) * q.scale_bits // 8)
    if t.kind == "expert" and t.name.endswith("gate_up_proj") and t.gated and n_out % 2 == 0:
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
            return numel + _cdiv(n_out, bo) * _cdiv(n_in, bi) * q.scale_bits // 8 + q.tensor_bytes
        return numel + 4 + q.tensor_bytes
    if m == "fp8_channel":
        return numel + n_out * 4 + q.tensor_bytes
    if m == "fp8_tensor":
        return numel + q.tensor_bytes
    if m == "fp_group":  # packed values + one scale_bits scale per group along the input + fp32 scalars
        return packed + n_out * _cdiv(n_in, q.group_size) * q.scale_bits // 8 + q.tensor_bytes
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
            # uint8 absmax + fp32 nested_absmax (one per 256 blocks) + the 256-entry fp32 nested_quant_map;
            # nested_offset is a Python float inside the quant_state JSON, not a tensor (QuantState.as_dict)
            absmax = blocks + _cdiv(blocks, 256) * 4 + 256 * 4
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
        elif q.per_tensor:
            scales = 1
        else:
            scales = n_out  # channel strategy
        total = packed + scales * 2 + q.tensor_bytes + (4 * n_in if q.desc_act_g_idx else 0)
        if q.zero_point:
            total += _cdiv(scales * q.bits, 8)
        return total
    raise AssertionError(m)
