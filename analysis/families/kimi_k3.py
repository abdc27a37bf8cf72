"""Kimi K3 (``kimi_k3``, moonshotai/Kimi-K3): a MoonViT-3D vision tower and a patch-merging projector around a
``kimi_linear`` text_config that adds five things to Kimi Linear (``hybrid.build_kimi_linear``, which hands such a
config here):

- attention residuals (``attn_res_block_size``): before attention and before the FFN the layer's input is a softmax
  mix of the block snapshots and the running sum, scored by an RMS-normed candidate times ``*_res_norm.weight *
  *_res_proj.weight`` (``self_attention_res_proj`` / ``mlp_res_proj``: Linear(hidden, 1), ``*_res_norm``: hidden);
  layer i (0-based) sees ceil(i / B) snapshots and writes one when i % B == 0; the model output mixes
  ceil(L / B) + 1 states with ``output_attn_res_proj`` / ``output_attn_res_norm`` (SGLang's kimi_k3.py
  KimiK3DecoderLayer / KimiK3LinearModel; mlx ports' ``_apply_attn_res``). No cache: within one token only.
- the MLA output gate (``mla_use_output_gate``): ``attn_out * sigmoid(g_proj(hidden))``, g_proj hidden -> heads x
  v_head_dim (``MLA.output_gate``);
- a full-rank KDA output gate (``linear_attn_config.use_full_rank_gate``): ``g_proj`` hidden -> H·d beside the
  low-rank forget gate; ``A_log`` stored at head_dim (zero-padded past the heads; SGLang narrows it on load)
  (``KimiDeltaAttention.full_rank_output_gate`` / ``a_log_size``);
- the latent MoE (``routed_expert_hidden_size``, ``latent_moe_use_norm``): ``routed_expert_down_proj`` (hidden ->
  latent) before the routed experts, an RMSNorm over their weighted sum, ``routed_expert_up_proj`` back; router and
  shared experts at hidden. The two projections are never quantized (SGLang / vLLM: ReplicatedLinear with
  quant_config=None; BF16 in the checkpoint whatever the ignore list says), and ``gate.e_score_correction_bias``
  is stored (F32) and counted, as the checkpoint holds it (no transformers class decides otherwise);
- SiTU (``hidden_act: situ``): a gated activation, so the MLPs keep gate / up / down.

The checkpoint (moonshotai/Kimi-K3, 96 shards) stores the routed experts as compressed-tensors MXFP4 (uint8
``weight_packed`` [out, in/2] + uint8 E8M0 ``weight_scale`` [out, in/32]), KDA's A_log, dt_bias, q/k/v conv1d and
o_norm and the routers' correction bias in F32, everything else BF16 (``fp32_names`` below). ``verify`` refuses it
(Numerics.runtime_unsupported). Not counted: a DSpark / MTP draft (a separate checkpoint; num_nextn_predict_layers
is 0 in the release).
"""

from __future__ import annotations

from dataclasses import fields, replace

from ..errors import UnsupportedModelError
from ..fields import Fields
from ..mixers import KimiDeltaAttention
from ..opkinds import OpKind
from ..records import frozen
from ..spec import MLA, Layer, ModelSpec, MoE, Tensor
from ..vision import _vision_fields
from . import hybrid
from .deepseek import mlp_layer_types_moe

#: text_config fields that only Kimi K3 sets (SGLang's KimiLinearConfig: their defaults None / False)
K3_KEYS = ("attn_res_block_size", "routed_expert_hidden_size", "mla_use_output_gate", "latent_moe_use_norm")

#: the tensors the release stores in F32 (its safetensors headers), by name fragment (ModelSpec.fp32_names)
FP32_NAMES = ("forget_gate.A_log", "forget_gate.dt_bias", ".self_attn.conv1d.", ".self_attn.o_norm.",
              "e_score_correction_bias")

RUNTIME = ("Kimi K3's decoder layer (attention residuals over block snapshots, a latent MoE, SiTU, output-gated "
           "NoPE MLA and KDA)")


def is_k3(f: Fields) -> bool:
    """Whether a kimi_linear text_config carries Kimi K3's additions (any one of them)."""
    lac = f.raw("linear_attn_config")
    full_rank = isinstance(lac, dict) and lac.get("use_full_rank_gate") is True
    return full_rank or f.raw("hidden_act") == "situ" or any(f.raw(k) not in (None, False) for k in K3_KEYS)


# ---- attention residuals (layer-level tensors listed by the mixer, one level up, as Inkling-2's) ------------------


def _res_tensors(prefix: str, h: int) -> list[Tensor]:
    parent = prefix.rsplit(".", 1)[0]  # model.layers.N
    out: list[Tensor] = []
    for side in ("self_attention", "mlp"):
        out.append(Tensor(f"{parent}.{side}_res_proj.weight", (1, h), "other"))
        out.append(Tensor(f"{parent}.{side}_res_norm.weight", (h,), "norm"))
    return out


def _res_trace(b, i: int, m, tensors: dict[str, list[Tensor]]) -> None:
    """The two mixes: softmax over ``states`` RMS-normed candidates (score, then the weighted sum: 4·hidden FLOPs
    per candidate, Inkling-2's convention); the attention side skipped while no snapshot exists (layer 0)."""
    n, a, h = b.shape.tokens, b.a, m.hidden_size
    for side, states in (("self_attention", m.res_states + 1 if m.res_states else 0),
                         ("mlp", m.res_states + m.res_boundary + 1)):
        if states:
            b.add(name=f"{side}_attn_res", kind=OpKind.ATTENTION, category="attention", layer=i,
                  flops=4 * n * h * states,
                  weight_bytes=b.fmt.bytes_of(tensors[f"{side}_res_proj"] + tensors[f"{side}_res_norm"]),
                  act_read_bytes=n * states * h * a, act_write_bytes=n * h * a, kernels=3)


@frozen
class _AttnRes:
    """The attention residuals a K3 mixer adds to its layer (``attn_res`` False: none; ``res_states`` snapshots
    before the layer, ``res_boundary``: the layer writes one); its fields follow the mixer's."""

    attn_res: bool = False
    res_states: int = 0
    res_boundary: bool = False

    def tensors(self, prefix: str) -> list[Tensor]:
        return super().tensors(prefix) + (_res_tensors(prefix, self.hidden_size) if self.attn_res else [])

    def trace(self, b, i: int, tensors: dict[str, list[Tensor]]) -> None:
        super().trace(b, i, tensors)
        if self.attn_res:
            _res_trace(b, i, self, tensors)


@frozen
class K3DeltaAttention(_AttnRes, KimiDeltaAttention):
    """Kimi K3's KDA layer with its attention residuals."""


@frozen
class K3LatentAttention(_AttnRes, MLA):
    """Kimi K3's MLA layer (NoPE, output gate) with its attention residuals."""


@frozen
class K3MoE(MoE):
    """The latent MoE, its two latent projections of kind ``other`` (never quantized, replicated on every rank)."""

    def tensors(self, prefix: str) -> list[Tensor]:
        return [Tensor(t.name, t.shape, "other") if "_latent_proj." in t.name else t for t in super().tensors(prefix)]


def _as(cls, obj, **kw):
    """``obj`` (a dataclass) as its subclass ``cls``: the same field values, but those ``kw`` sets."""
    return cls(**{fl.name: getattr(obj, fl.name) for fl in fields(obj)} | kw)


def build_text(f: Fields, model_type: str) -> ModelSpec:
    """Kimi K3's language model (module doc): Kimi Linear's layer plan and mixers (``hybrid.kimi_linear_plan`` /
    ``kimi_linear_mixers``: linear_attn_config's 1-indexed lists) with K3's additions to the mixers, its MoE layers
    as SGLang places them (``mlp_layer_types``, else first_k_dense_replace dense layers, then every moe_layer_freq-th:
    ``deepseek.mlp_layer_types_moe``), its latent MoE and attention residuals."""
    (hidden, n_layers, vocab), lac, types = hybrid.kimi_linear_plan(f)
    moe_at = mlp_layer_types_moe(f, n_layers, axk1=True)
    act = hybrid._act(f, "silu")
    block = f.opt_int("attn_res_block_size", hi=n_layers)
    mixers = hybrid.kimi_linear_mixers(f, hidden, lac, types)
    if "full" in mixers:
        mixers["full"] = _as(K3LatentAttention, mixers["full"], output_gate=f.bool("mla_use_output_gate", False))
    if "linear" in mixers:
        kda = mixers["linear"]
        mixers["linear"] = _as(K3DeltaAttention, kda, full_rank_output_gate=lac.get("use_full_rank_gate") is True,
                               a_log_size=kda.head_k_dim)
    spec = hybrid._kda_hybrid_spec(f, model_type, "KimiLinearForCausalLM", (hidden, n_layers, vocab), mixers, types,
                                   moe_at, act)
    latent = f.opt_int("routed_expert_hidden_size")
    layers: list[Layer] = []
    for i, layer in enumerate(spec.layers):
        m, ffn = layer.mixer, layer.ffn
        if block:
            m = replace(m, attn_res=True, res_states=-(-i // block), res_boundary=i % block == 0)
        if isinstance(ffn, MoE):
            ffn = _as(K3MoE, replace(ffn, latent_size=latent or 0, correction_bias_param=True,
                                     latent_norm=bool(latent) and f.bool("latent_moe_use_norm", False)))
        layers.append(replace(layer, mixer=m, ffn=ffn))
    head = ()
    if block:
        head = (Tensor("model.output_attn_res_proj.weight", (1, hidden), "other"),
                Tensor("model.output_attn_res_norm.weight", (hidden,), "norm"))
    numerics = replace(spec.numerics, runtime_unsupported=RUNTIME)
    return replace(spec, layers=tuple(layers), head_hc=head, final_input_states=-(-n_layers // block) + 1 if block else 0,
                   fp32_names=FP32_NAMES, numerics=numerics)


# ---- the vision tower and projector ---------------------------------------------------------------------------------

#: vision_config values the released tower has; another value is a tower we have not seen (refused, not guessed)
VISION_FIXED = {"norm_type": "rmsnorm", "attn_bias": False, "linear_bias": False, "patch_embed_proj_bias": False,
                "mlp_type": "mlp2", "mm_projector_type": "patchmergerv2", "pos_emb_type": "divided_fixed"}


def kimi_k3_vision(top: dict, text_hidden: int, where: str) -> tuple[Tensor, ...]:
    """MoonViT-3D as the checkpoint stores it (moonshotai/Kimi-K3's vision_tower.* / mm_projector.*): a bias-free
    Conv2d patch embed, a learned (init_pos_emb_height, init_pos_emb_width, hidden) position grid (the time table of
    divided_fixed is fixed, not stored), blocks of RMSNorms (norm0, norm1), a fused bias-free ``wqkv`` (hidden ->
    3·qkv_hidden_size), ``wo`` and a GELU ``fc0`` / ``fc1`` MLP, a final RMSNorm; the patchmergerv2 projector:
    ``proj.0`` (mm_hidden_size·merge², square), GELU, ``proj.2`` (-> text hidden) and ``post_norm`` (text hidden),
    all bias-free. Without a vision_config (exporters' text-only checkpoints) no tower is counted."""
    if top.get("vision_config") is None:  # a text-only export (no tower in its checkpoint): nothing to count
        return ()
    f = _vision_fields(top.get("vision_config"), where, "kimi_k3_vision")
    for key, want in VISION_FIXED.items():
        got = f.raw(key, want)
        if got != want:
            raise UnsupportedModelError(f"{f.where}: field '{key}' is {got!r}: only Kimi K3's released tower "
                                        f"({key} {want!r}) is modelled")
    h, inter = f.int("vt_hidden_size"), f.int("vt_intermediate_size")
    qkv, layers = f.int("qkv_hidden_size"), f.int("vt_num_hidden_layers", hi=1 << 12)
    patch = f.int("patch_size", hi=1 << 12)
    merge = f.int_list("merge_kernel_size", hi=64) or [2, 2]
    if len(merge) != 2:
        raise f.error("merge_kernel_size", "must be two integers")
    mm = f.int("mm_hidden_size", h)
    if f.int("text_hidden_size", text_hidden) != text_hidden:
        raise f.error("text_hidden_size", f"differs from the language model's hidden_size ({text_hidden})")
    merged = mm * merge[0] * merge[1]
    v = lambda name, *shape: Tensor(name, shape, "vision")  # noqa: E731
    p = "vision_tower"
    out = [v(f"{p}.patch_embed.proj.weight", h, 3, patch, patch),
           v(f"{p}.patch_embed.pos_emb.weight", f.int("init_pos_emb_height"), f.int("init_pos_emb_width"), h)]
    for i in range(layers):
        b = f"{p}.encoder.blocks.{i}"
        out += [v(f"{b}.norm0.weight", h), v(f"{b}.wqkv.weight", 3 * qkv, h), v(f"{b}.wo.weight", h, qkv),
                v(f"{b}.norm1.weight", h), v(f"{b}.mlp.fc0.weight", inter, h), v(f"{b}.mlp.fc1.weight", h, inter)]
    out += [v(f"{p}.encoder.final_layernorm.weight", h), v("mm_projector.proj.0.weight", merged, merged),
            v("mm_projector.proj.2.weight", text_hidden, merged), v("mm_projector.post_norm.weight", text_hidden)]
    return tuple(out)
