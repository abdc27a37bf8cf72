"""How weights are stored: the dtype of plain tensors and the quantization of converted ones."""

from __future__ import annotations

from dataclasses import replace
from typing import Iterator

from .records import frozen
from .dtypes import DType, get_dtype, try_dtype
from .quant import is_converted, quantized_bytes
from .spec import ModelSpec, QuantSpec, Tensor

BF16 = get_dtype("bf16")
FLOAT_COMPUTE = {"fp32", "bf16", "fp16"}

#: ``--dtype`` what-ifs for low-precision weights follow a named published recipe: the matmul
#: weights of every layer are quantized with group or channel scales, embeddings, lm_head, norms
#: and routers stay in 16 bit (``targets`` linear and expert only). Bytes per tensor come from
#: ``analysis.quant`` as for a real checkpoint of that format.
#: - int4: AutoAWQ GEMM (4-bit, group 128, fp16 scales, 4-bit zeros), e.g.
#:   hugging-quants/Meta-Llama-3.1-8B-Instruct-AWQ-INT4 (5.73 GB of safetensors);
#: - int8: llm-compressor W8A8 INT8 (compressed-tensors, channel scales), e.g. RedHatAI/*-quantized.w8a8;
#: - fp8: llm-compressor FP8-dynamic (compressed-tensors, channel scales), e.g. RedHatAI/*-FP8-dynamic.
#: - fp4 (or nvfp4): NVFP4 as NVIDIA ModelOpt and llm-compressor write it (W4A4: fp4 e2m1 weights two a byte, one
#:   fp8 e4m3 scale per 16 inputs of a row, and per tensor an fp32 weight and an fp32 input global scale), e.g.
#:   nvidia/DeepSeek-R1-0528-NVFP4-v2, RedHatAI/*-NVFP4 (``analysis.quant._ct_fp4`` sizes the real checkpoints the
#:   same way): 4.5 bits a weight;
#: - mxfp4: OCP MXFP4 as AMD Quark writes it (amd/*-MXFP4-Preview; ``analysis.quant``'s quark MXFP4): fp4 e2m1
#:   weights two a byte and one E8M0 (uint8) scale per 32 inputs of a row: 4.25 bits a weight.
#: The name the user gave picks the recipe (``recipe_for``): mxfp4 and nvfp4 are both the fp4 dtype.
RECIPES: dict[str, tuple[QuantSpec, str]] = {
    "int4": (QuantSpec("awq", 4, group_size=128, zero_point=True, raw_method="AWQ int4 g128 recipe"),
             "AutoAWQ 4-bit, group 128, fp16 scales + 4-bit zeros; embeddings and lm_head in 16 bit"),
    "int8": (QuantSpec("compressed", 8, group_size=0, zero_point=False, raw_method="W8A8 int8 recipe"),
             "llm-compressor W8A8 int8, one 16-bit scale per output channel; embeddings and lm_head in 16 bit"),
    "fp8": (QuantSpec("compressed", 8, group_size=0, zero_point=False, raw_method="FP8-dynamic recipe"),
            "llm-compressor FP8-dynamic, one 16-bit scale per output channel; embeddings and lm_head in 16 bit"),
    "fp4": (QuantSpec("fp_group", 4, group_size=16, scale_bits=8, tensor_bytes=8, zero_point=False, compute="fp4",
                      raw_method="NVFP4 recipe"),
            "NVFP4 (ModelOpt / llm-compressor): fp4 e2m1 weights, an fp8 scale per 16 and two fp32 global scales "
            "per tensor; embeddings and lm_head in 16 bit"),
    "mxfp4": (QuantSpec("fp_group", 4, group_size=32, scale_bits=8, zero_point=False, compute="fp4",
                        raw_method="MXFP4 recipe"),
              "OCP MXFP4 (AMD Quark): fp4 e2m1 weights, an E8M0 scale per 32; embeddings and lm_head in 16 bit"),
}
RECIPES["nvfp4"] = RECIPES["fp4"]


def recipe_for(name: str, d: DType) -> tuple[QuantSpec, str] | None:
    """The ``--dtype`` what-if recipe for the name the user gave (``mxfp4``, ``nvfp4``), else for its dtype."""
    return RECIPES.get(str(name).strip().lower()) or RECIPES.get(d.name)

#: Weight-only formats that compute in bf16 (pytorch-labs/gpt-fast quantize.py): every nn.Linear,
#: lm_head included, is replaced; embeddings stay bf16.
#: - int8-weight-only: WeightOnlyInt8Linear, int8 weights + one bf16 scale per output row;
#: - int4-weight-only-g32: WeightOnlyInt4Linear, group 32, bf16 scales and zeros per group (sized here
#:   with AWQ's 4-bit zeros: 3 % under for the 4-bit tensors).
WEIGHT_ONLY: dict[str, tuple[QuantSpec, str]] = {
    "int8-weight-only": (QuantSpec("compressed", 8, group_size=0, zero_point=False, targets=("linear", "expert", "lm_head"),
                                   raw_method="int8 weight-only (gpt-fast)"),
                         "gpt-fast int8 weight-only: int8 weights, a bf16 scale per output row, bf16 compute"),
    "int4-weight-only-g32": (QuantSpec("awq", 4, group_size=32, zero_point=True, targets=("linear", "expert", "lm_head"),
                                       raw_method="int4 weight-only g32 (gpt-fast)"),
                             "gpt-fast int4 weight-only, group 32, bf16 compute"),
}


@frozen
class WeightFormat:
    """``base``: dtype of every tensor not converted by ``quant`` (and of all of them when
    ``--dtype`` overrides the checkpoint). ``compute``: the dtype of matmul inputs (its peak FLOP/s
    column); ``act``: the dtype activations travel in."""

    base: DType
    quant: QuantSpec | None
    compute: DType
    act: DType
    source: str  # "--dtype" | "torch_dtype" | "default" | "quantization_config"
    override: DType | None = None
    kv_fused: bool = False  # the checkpoint's CheckpointLayout.kv_fused: v_proj shares k_proj's GPTQ g_idx
    fp32_kinds: tuple[str, ...] = ()  # the spec's ModelSpec.fp32_kinds: 4 bytes a parameter, whatever the format
    fp32_names: tuple[str, ...] = ()  # the spec's ModelSpec.fp32_names: so sized too

    def tensor_bytes(self, t: Tensor) -> int:
        # kept in float32 (transformers skips them when quantizing, too)
        if t.kind in self.fp32_kinds or (self.fp32_names and any(p in t.name for p in self.fp32_names)):
            return 4 * t.numel
        if self.override is not None:
            return self.override.nbytes(t.numel) if t.kind in ("linear", "expert", "embedding", "lm_head", "router", "conv",
                                                                "vision", "audio") \
                else self.base.nbytes(t.numel)
        if self.quant is not None and is_converted(t, self.quant):
            if self.kv_fused and self.quant.desc_act_g_idx and t.name.endswith(".self_attn.v_proj.weight"):
                return quantized_bytes(t, self.quant) - 4 * t.shape[-1]  # the fused matrix's one g_idx: k_proj's
            return quantized_bytes(t, self.quant)
        return self.base.nbytes(t.numel)

    def bytes_of(self, tensors: list[Tensor]) -> int:
        return sum(self.tensor_bytes(t) for t in tensors)

    def layer_groups(self, spec: ModelSpec) -> tuple[tuple[int, ...], ...]:
        """Groups of layers whose weights are stored alike in this format (``ModelSpec.layer_groups``,
        split by ``modules_to_not_convert`` when the checkpoint's quantization applies)."""
        return spec.storage_layer_groups if self.quant is not None else spec.layer_groups

    def counted_tensors(self, spec: ModelSpec) -> Iterator[tuple[Tensor, int]]:
        """``spec.tensors()`` with identical layers collapsed: each tensor of a distinct layer (as
        stored in this format) once, with the number of layers that hold it; model-level tensors once."""
        for t in (spec.embedding_tensors() + spec.projection_tensors() + spec.input_tensors() + spec.cross_tensors()
                  + spec.final_norm_tensors() + list(spec.head_transform) + spec.lm_head_tensors()
                  + list(spec.vision)):
            yield t, 1
        for group in self.layer_groups(spec):
            for t in spec.layer_tensors(group[0]):
                yield t, len(group)

    def model_bytes(self, spec: ModelSpec, kind: str | None = None) -> int:
        """``bytes_of(spec.tensors())`` (only tensors of ``kind`` when given), computed once per
        distinct layer and multiplied by its count."""
        return sum(n * self.tensor_bytes(t) for t, n in self.counted_tensors(spec) if kind is None or t.kind == kind)

    def describe(self) -> str:
        if self.override is not None:
            return f"{self.override.name} (--dtype)"
        if self.quant is not None and self.quant.groups:
            return f"{self.quant.raw_method}, rest {self.base.name}"
        if self.quant is not None:
            return f"{self.quant.raw_method or self.quant.method} ({self.quant.bits}-bit), rest {self.base.name}"
        return self.base.name


def weight_format(spec: ModelSpec, dtype: str | None = None) -> tuple[WeightFormat, list[str]]:
    """The storage format for ``spec``: ``dtype`` (from ``--dtype``) overrides the checkpoint's; the kinds the spec
    keeps in float32 (``ModelSpec.fp32_kinds``, ``ModelSpec.fp32_names``) stay there."""
    fmt, notes = _weight_format(spec, dtype)
    if spec.fp32_kinds or spec.fp32_names:
        fmt = replace(fmt, fp32_kinds=spec.fp32_kinds, fp32_names=spec.fp32_names)
    return fmt, notes


def _weight_format(spec: ModelSpec, dtype: str | None) -> tuple[WeightFormat, list[str]]:
    notes: list[str] = []
    cfg_dtype = try_dtype(spec.torch_dtype) if spec.torch_dtype else None
    if spec.torch_dtype and cfg_dtype is None:
        notes.append(f"torch_dtype '{spec.torch_dtype}' is not a known dtype: bf16 assumed")
    if dtype is not None and str(dtype).strip().lower() in WEIGHT_ONLY:
        q, words = WEIGHT_ONLY[str(dtype).strip().lower()]
        base = cfg_dtype if cfg_dtype is not None and cfg_dtype.name in ("bf16", "fp16") else BF16
        notes.append(f"--dtype {dtype}: {words}")
        return WeightFormat(base=base, quant=q, compute=base, act=base, source="--dtype"), notes
    if dtype is not None:
        d = get_dtype(dtype, what="--dtype")
        shown = str(dtype).strip().lower() if d.name == "fp4" else d.name  # mxfp4 / nvfp4 name their recipe
        if spec.quant is not None:
            notes.append(f"--dtype {shown} overrides the checkpoint's quantization_config "
                         f"({spec.quant.raw_method or spec.quant.method})")
        # norms and biases stay in a float dtype: the activation dtype
        act = d if d.name in FLOAT_COMPUTE else BF16
        recipe = recipe_for(dtype, d)
        if recipe is not None:
            q, words = recipe
            base = cfg_dtype if cfg_dtype is not None and cfg_dtype.name in ("bf16", "fp16") else BF16
            notes.append(f"--dtype {shown}: {words}")
            return WeightFormat(base=base, quant=q, compute=_compute(d), act=base, source="--dtype"), notes
        return WeightFormat(base=act, quant=None, compute=_compute(d), act=act, source="--dtype", override=d), notes
    base = cfg_dtype or BF16
    if base.name not in FLOAT_COMPUTE:  # e.g. torch_dtype float8 with no quantization_config
        act = BF16
    else:
        act = base
    if spec.quant is not None:
        if spec.quant.compute:
            compute = act if spec.quant.compute == "act" else get_dtype(spec.quant.compute)
        else:
            compute = get_dtype("fp8") if spec.quant.method in ("fp8", "fp8_channel") else act
        return WeightFormat(base=base, quant=spec.quant, compute=compute, act=act, source="quantization_config",
                            kv_fused=spec.checkpoint.kv_fused), notes
    return WeightFormat(base=base, quant=None, compute=_compute(base), act=act,
                        source="torch_dtype" if cfg_dtype else "default"), notes


def _compute(d: DType) -> DType:
    if d.name == "int4":
        return BF16
    return d
