"""DeepSeek V2 / V3 (and Kimi K2, a DeepSeek V3): multi-head latent attention, MoE with shared
experts after ``first_k_dense_replace`` dense layers, multi-token-prediction layers.

V2 routes with a softmax (``topk_method: group_limited_greedy`` limits the choice to the best
groups by their best expert); V3 with sigmoid scores plus a choice-only correction bias, groups
ranked by their two best experts. RoPE runs on interleaved pairs (V3: unless ``rope_interleave``
is false).

DeepSeek-V3.2 (``deepseek_v32``) and GLM-5 (``glm_moe_dsa``) are V3 with DeepSeek sparse attention: a
lightning indexer on the attention layers (``analysis.mixers.dsa``), always a query LoRA, always
interleaved RoPE in the MLA, and MoE on the layers ``mlp_layer_types`` says are ``sparse`` (else from
``first_k_dense_replace``; transformers' V3.2 ignores ``moe_layer_freq``). GLM-5's ``indexer_types``
(else ``index_topk_pattern``, else ``index_topk_freq`` / ``index_skip_topk_offset``) mark the layers that
reuse the previous layer's top-k (``shared``: no indexer of their own); MTP layers always have one (vLLM).

GLM-4.7-Flash (``glm4_moe_lite``), A.X-K1 (``axk1``) and Sarvam MLA (``sarvam_mla``) are V3 too: see
``build_glm4_moe_lite`` and the builders beside it. Mistral Small 4 (``mistral4``) is V3's MLA and MoE with a
softmax router and Llama 4's query scaling: ``build_mistral4``.
"""

from __future__ import annotations

from dataclasses import fields, replace
from functools import partial

from ..fields import MAX_LAYERS, Fields
from ..fields import as_int, short
from ..mixers import CompressedMQA, SparseMLA
from ..spec import (MLA, MLP, CheckpointLayout, GroupScore, Layer, ModelSpec, MoE, Norm, Numerics, PlacedNorm, RopeStyle,
                    RouterKind)
from ..tensors import Tensor
from .common import Traits, mtp_extra, per_layer_types, sparse_layers, mtp_layers, pre_norms, read_act, read_eps, read_rope, read_routing, read_tie
from .decoder import moe_plan

TRAITS = Traits(moe="deepseek")


def build(f: Fields, model_type: str, *, version: int, interleave_fixed: bool = False, dsa: str | None = None,
          variant: str | None = None) -> ModelSpec:
    """``dsa``: DeepSeek sparse attention, ``"v32"`` (an indexer on every layer) or ``"glm"`` (GLM-5's
    full / shared layers). ``variant``: ``"glm_lite"``, ``"axk1"`` or ``"sarvam"`` (see their builders below)."""
    t = TRAITS
    if variant == "sarvam":  # SarvamMLAConfig.attribute_map: the original sarvam-105b config's names
        f.aliases = {**f.aliases, "n_routed_experts": ("num_experts",), "n_shared_experts": ("num_shared_experts",)}
    hidden = f.int("hidden_size")
    n_layers = f.int("num_hidden_layers", hi=MAX_LAYERS)
    heads = f.int("num_attention_heads")
    vocab = f.int("vocab_size", hi=1 << 26)
    # V3.2's and A.X-K1's attention always has a q LoRA
    q_lora = f.int("q_lora_rank") if dsa or variant == "axk1" else f.opt_int("q_lora_rank")
    kv_lora = f.int("kv_lora_rank")
    nope = f.int("qk_nope_head_dim")
    rope = f.int("qk_rope_head_dim")
    v_hd = f.int("v_head_dim")
    bias = f.bool("attention_bias", False)
    theta, rotary, scaling = read_rope(f, rope)
    if variant == "glm_lite" and rotary != rope:  # Glm4MoeRotaryEmbedding's cos/sin would not fit q_rot / k_rot
        raise f.error("partial_rotary_factor", f"gives {rotary} rotary dimensions, but GLM-4 MoE Lite's MLA rotates "
                                               f"all qk_rope_head_dim ({rope}): transformers cannot run it")
    if variant == "sarvam":
        scaling = sarvam_rope(scaling)
    act = read_act(f, t)
    intermediate = f.int("intermediate_size")
    mla = MLA(hidden, heads, q_lora, kv_lora, nope, rope, v_hd, bias=bias, rope_theta=theta)
    # read before moe_plan, whose first_k_dense_replace default (0) is not theirs
    own_moe_at = mlp_layer_types_moe(f, n_layers, axk1=variant == "axk1") if variant in ("glm_lite", "axk1") else None
    if variant == "mistral4":  # Mistral4DecoderLayer: MoE from first_k_dense_replace on (no moe_layer_freq)
        own_moe_at = set(range(f.int("first_k_dense_replace", 0, lo=0, hi=MAX_LAYERS), n_layers))
    moe_at, make_moe, dense = moe_plan(f, t, hidden, n_layers, intermediate, act)
    moe_at = moe_at if own_moe_at is None else own_moe_at
    norms = pre_norms(lambda: Norm(hidden))
    # A.X-K1: an RMSNorm on the MoE block's output (AXK1MoE.post_mlp_layernorm), on the sparse layers only
    moe_norms = norms + (PlacedNorm("post_mlp_layernorm", "post_ffn", Norm(hidden)),) if variant == "axk1" else norms
    mixers: list[MLA] = [mla] * n_layers
    if dsa:
        mixers = dsa_mixers(f, mla, n_layers, glm=dsa == "glm")
        moe_at = dsa_moe_layers(f, n_layers)
    layers = tuple(Layer(mixers[i], make_moe(i), moe_norms) if i in moe_at else
                   Layer(mixers[i], MLP(hidden, dense, act=act), norms) for i in range(n_layers))
    mtp = mtp_layers(f, list(layers))
    if dsa and mtp:  # an MTP layer always builds a full indexer (vLLM's DeepseekV2MLAAttention: is_mtp_layer)
        mtp = tuple(Layer(replace(mixers[-1], indexer=True), lay.ffn, lay.norms) for lay in mtp)
    return ModelSpec(
        model_type=model_type, hidden_size=hidden, vocab_size=vocab, layers=layers,
        tie_word_embeddings=read_tie(f, False), final_norm=Norm(hidden), hidden_act=act, norm_eps=read_eps(f),
        rope_scaling=scaling, mtp_layers=mtp, mtp_extra_params=mtp_extra(f, hidden),
        numerics=mistral4_numerics(f) if variant == "mistral4" else numerics(f, version, interleave_fixed),
        # transformers keeps A.X-K1's norm in the MoE module; the released checkpoints at the layer (dense layers
        # too, unused: ignored at load)
        checkpoint=CheckpointLayout(modules=((".mlp.post_mlp_layernorm.", ".post_mlp_layernorm."),))
        if variant == "axk1" else CheckpointLayout(),
    )


def mlp_layer_types_moe(f: Fields, n_layers: int, *, axk1: bool) -> set[int]:
    """The MoE layers of GLM-4 MoE Lite and A.X-K1 (and Kimi K3, ``axk1`` too): ``mlp_layer_types`` ("dense" /
    "sparse"), else Glm4MoeLiteConfig's default (layer 0 dense, the rest sparse; ``first_k_dense_replace`` is not
    read) or AXK1Config's legacy fields (sparse where i >= ``first_k_dense_replace`` (default 1) and
    i % ``moe_layer_freq`` == 0; SGLang's KimiK3 places its MoE layers so)."""
    if f.raw("mlp_layer_types") is not None:
        return sparse_layers(f, n_layers)
    if not axk1:
        f.derived("mlp_layer_types", ["dense"] + ["sparse"] * (n_layers - 1), "absent: layer 0 dense, the rest sparse")
        return set(range(1, n_layers))
    first = f.int("first_k_dense_replace", 1, lo=0, hi=MAX_LAYERS)
    freq = f.int("moe_layer_freq", 1)
    return {i for i in range(n_layers) if i >= first and i % freq == 0}


def sarvam_rope(scaling: tuple) -> tuple:
    """SarvamMLAConfig.__post_init__: a ``deepseek_yarn`` rope_scaling is standard YaRN (its ``type`` dropped)."""
    d = dict(scaling)
    if "deepseek_yarn" not in (d.get("type"), d.get("rope_type")):
        return scaling
    d.pop("type", None)
    d["rope_type"] = "yarn"
    return tuple(sorted(d.items()))


def numerics(f: Fields, version: int, interleave_fixed: bool) -> Numerics:
    if version == 2:
        method = f.str("topk_method", "greedy")
        routing = read_routing(f, RouterKind.SOFTMAX, norm_fixed=False,
                               group_score=GroupScore.MAX if method == "group_limited_greedy" else GroupScore.NONE)
        return Numerics(rope_style=RopeStyle.PAIRS, **routing)
    interleave = interleave_fixed or f.bool("rope_interleave", True)
    routing = read_routing(f, RouterKind.SIGMOID, scale_default=2.5, n_group_default=8, topk_group_default=4,
                           group_score=GroupScore.TOP2)
    return Numerics(rope_style=RopeStyle.PAIRS if interleave else RopeStyle.HALF, score_correction_bias=True,
                    **routing)


def mistral4_numerics(f: Fields) -> Numerics:
    """Mistral4TopkRouter: a softmax over the experts, groups ranked by their two best scores (no correction
    bias), the top-k renormalised by ``norm_topk_prob`` and scaled by ``routed_scaling_factor``; the queries
    scaled by position as Ministral 3's (``rope_parameters.llama_4_scaling_beta``), interleaved RoPE unless
    ``rope_interleave`` is false."""
    routing = read_routing(f, RouterKind.SOFTMAX, group_score=GroupScore.TOP2)
    params = f.raw("rope_parameters")
    params = params if isinstance(params, dict) else f.raw("rope_scaling")
    beta = params.get("llama_4_scaling_beta") if isinstance(params, dict) else None
    scale = None
    if beta is not None:
        orig = params.get("original_max_position_embeddings")
        if isinstance(beta, bool) or not isinstance(beta, (int, float)) or isinstance(orig, bool) \
                or not isinstance(orig, (int, float)) or orig <= 0:
            raise f.error("rope_parameters", "llama_4_scaling_beta needs a numeric beta and a positive "
                                             "original_max_position_embeddings")
        scale = (float(beta), float(orig))
    style = RopeStyle.PAIRS if f.bool("rope_interleave", True) else RopeStyle.HALF
    return Numerics(rope_style=style, query_position_scale=scale, **routing)


def dsa_mixers(f: Fields, mla: MLA, n_layers: int, *, glm: bool) -> list[SparseMLA]:
    """The sparse-attention MLA of every layer (transformers' DeepseekV32Attention / GlmMoeDsaAttention)."""
    topk = f.int("index_topk")
    heads = f.int("index_n_heads")
    head_dim = f.int("index_head_dim")
    if head_dim < mla.qk_rope_head_dim:
        raise f.error("index_head_dim", f"({head_dim}) is smaller than qk_rope_head_dim ({mla.qk_rope_head_dim}), "
                                        "the indexer's roped dims")
    if f.raw("layer_types") is not None:  # DeepSeek sparse attention on every layer; transformers 5.x up to the
        # rename wrote its default as "deepseek_sparse_attention" (nvidia/GLM-5.2-NVFP4's config.json), the
        # decoder builds every layer the same whatever the name
        per_layer_types(f, "layer_types", n_layers, ("indexed_attention", "deepseek_sparse_attention"))
    full = glm_indexer_layers(f, n_layers) if glm else [True] * n_layers
    base = {fl.name: getattr(mla, fl.name) for fl in fields(MLA)}
    return [SparseMLA(**base, index_topk=topk, index_n_heads=heads, index_head_dim=head_dim, indexer=full[i])
            for i in range(n_layers)]


def glm_indexer_layers(f: Fields, n_layers: int) -> list[bool]:
    """GlmMoeDsaConfig.__post_init__: ``indexer_types`` ("full" runs the indexer, "shared" reuses the
    previous full layer's top-k), else ``index_topk_pattern`` ("F"/"S" per layer), else full where
    ``max(i - index_skip_topk_offset + 1, 0) % index_topk_freq == 0`` (defaults 2 and 1: every layer)."""
    names = {"full": True, "shared": False, "F": True, "S": False}
    key = "indexer_types" if f.raw("indexer_types") is not None else \
        "index_topk_pattern" if f.raw("index_topk_pattern") is not None else None
    if key is not None:
        raw = f.raw(key)
        out = per_layer_types(f, key, n_layers, names,
                              values=list(raw) if isinstance(raw, str) and key == "index_topk_pattern" else None)
    else:
        freq = max(f.int("index_topk_freq", 1, lo=0), 1)
        offset = f.int("index_skip_topk_offset", 2, lo=0, hi=MAX_LAYERS)
        out = f.derived("indexer_types", [max(i - offset + 1, 0) % freq == 0 for i in range(n_layers)],
                        f"full where max(i - {offset} + 1, 0) % {freq} == 0")
        key = "index_topk_freq"
    if out and not out[0]:
        raise f.error(key, "makes layer 0 shared, but a shared layer reuses the top-k of an earlier full layer")
    return out


def dsa_moe_layers(f: Fields, n_layers: int) -> set[int]:
    """transformers' V3.2 MoE placement: ``mlp_layer_types`` ("dense" / "sparse"), else every layer from
    ``first_k_dense_replace`` on."""
    if f.raw("mlp_layer_types") is not None:
        return sparse_layers(f, n_layers)
    first = f.int("first_k_dense_replace", 0, lo=0, hi=MAX_LAYERS)
    return set(range(first, n_layers))


build_v2 = partial(build, version=2)
build_v3 = partial(build, version=3)
build_kimi_k2 = partial(build, version=3, interleave_fixed=True)  # a DeepSeek V3 that always interleaves
# DeepSeek-V3.2 and GLM-5: V3 with DeepSeek sparse attention; their MLA always interleaves (transformers'
# DeepseekV32Attention / GlmMoeDsaAttention: apply_rotary_pos_emb_interleave; the config has no rope_interleave)
build_v32 = partial(build, version=3, interleave_fixed=True, dsa="v32")
build_glm_moe_dsa = partial(build, version=3, interleave_fixed=True, dsa="glm")
# GLM-4.7-Flash (glm4_moe_lite): DeepseekV3Attention's MLA with GLM-4.5's MoE (the V3 router and experts), MoE by
# mlp_layer_types; A.X-K1 (axk1): V3 with a q LoRA always, MoE by mlp_layer_types (else first_k_dense_replace,
# default 1) and an RMSNorm on each MoE block's output; Sarvam MLA (sarvam_mla): a DeepseekV3ForCausalLM whose
# config reads the original sarvam-105b names (num_experts, num_shared_experts, rope_scaling type deepseek_yarn)
build_glm4_moe_lite = partial(build, version=3, variant="glm_lite")
build_axk1 = partial(build, version=3, variant="axk1")
build_sarvam_mla = partial(build, version=3, variant="sarvam")
# Mistral Small 4 (mistral4; the language model of its mistral3 wrapper): DeepseekV3Attention's MLA (q LoRA optional)
# with Llama 4's query scaling by position, DeepseekV3's experts and shared experts after first_k_dense_replace
# dense layers, a softmax router (Mistral4TopkRouter: no correction bias)
build_mistral4 = partial(build, version=3, variant="mistral4")


def build_mla_dense(f: Fields, model_type: str, *, minicpm: bool) -> ModelSpec:
    """Multi-head latent attention with a dense MLP on every layer, tied by default.

    Youtu-LLM (``minicpm=False``): DeepSeek V3's attention (interleaved RoPE unless ``rope_interleave`` is
    false) in a Llama block. MiniCPM3 (openbmb/MiniCPM3-4B): DeepSeek V2's multi-head latent attention (transformers'
    MiniCPM3Attention is DeepseekV2Attention's modules with Llama's rotate-half RoPE) on every layer, a dense
    Llama MLP, and MiniCPM's multipliers: the embedding times ``scale_emb``, each residual branch times
    ``scale_depth / sqrt(num_hidden_layers)``, the final hidden state divided by ``hidden_size / dim_model_base``
    before the (tied by default) head. ``v_head_dim`` defaults to hidden_size / num_attention_heads."""
    hidden = f.int("hidden_size")
    n_layers = f.int("num_hidden_layers", hi=MAX_LAYERS)
    heads = f.int("num_attention_heads")
    vocab = f.int("vocab_size", hi=1 << 26)
    q_lora = f.opt_int("q_lora_rank")
    kv_lora = f.int("kv_lora_rank")
    nope = f.int("qk_nope_head_dim")
    rope = f.int("qk_rope_head_dim")
    if hidden % heads and f.raw("v_head_dim") is None:
        raise f.error("v_head_dim", f"is missing and hidden_size ({hidden}) is not divisible by "
                                    f"num_attention_heads ({heads})")
    v_hd = f.int("v_head_dim", lambda: hidden // heads, note="absent: hidden_size / num_attention_heads")
    bias = f.bool("attention_bias", False)
    theta, _, scaling = read_rope(f, rope)
    act = read_act(f, TRAITS)
    intermediate = f.int("intermediate_size")
    mla = MLA(hidden, heads, q_lora, kv_lora, nope, rope, v_hd, bias=bias, rope_theta=theta)
    mlp = MLP(hidden, intermediate, bias=f.bool("mlp_bias", False), act=act)
    layers = tuple(Layer(mla, mlp, pre_norms(lambda: Norm(hidden))) for _ in range(n_layers))
    # null in the config means the no-op (MiniCPM3Config.__post_init__: sqrt(layers), hidden_size)
    depth = f.raw("scale_depth") if minicpm else None
    depth = n_layers ** 0.5 if depth is None else f.float("scale_depth")
    base = f.raw("dim_model_base") if minicpm else None
    base = hidden if base is None else f.float("dim_model_base")
    num = Numerics(rope_style=RopeStyle.HALF, residual_multiplier=depth / n_layers ** 0.5, logits_scaling=hidden / base)
    if not minicpm:  # Youtu: no multipliers; DeepseekV3Attention's RoPE layout
        num = Numerics(rope_style=RopeStyle.PAIRS if f.bool("rope_interleave", True) else RopeStyle.HALF)
    return ModelSpec(
        model_type=model_type, hidden_size=hidden, vocab_size=vocab, layers=layers,
        tie_word_embeddings=read_tie(f, True), final_norm=Norm(hidden), hidden_act=act, norm_eps=read_eps(f),
        embedding_multiplier=f.float("scale_emb", 12.0) if minicpm else 1.0, rope_scaling=scaling, numerics=num,
    )


build_minicpm3 = partial(build_mla_dense, minicpm=True)
build_youtu = partial(build_mla_dense, minicpm=False)


# ---- DeepSeek-V4 ----------------------------------------------------------------------------------

_V4_RATIO_TYPES = {0: "sliding_attention", 4: "compressed_sparse_attention", 128: "heavily_compressed_attention"}
_V4_TYPES = ("sliding_attention", "compressed_sparse_attention", "heavily_compressed_attention")


def build_v4(f: Fields, model_type: str) -> ModelSpec:
    """DeepSeek-V4 (transformers' DeepseekV4ForCausalLM): shared-KV MQA with a sliding window on every layer,
    compressed entries on CSA / HCA layers (``analysis.mixers.compressed``), ``hc_mult`` hyper-connection
    streams (``attn_hc`` / ``ffn_hc`` per layer, ``hc_head`` at the end), and a MoE on every layer whose shared
    expert is one MLP of ``moe_intermediate_size`` (transformers' DeepseekV4MLP reads ``intermediate_size``,
    mapped to ``moe_intermediate_size``; ``n_shared_experts`` is not read). ``hash_moe`` layers choose their
    experts by token id (a ``tid2eid`` buffer) with the same parameters as ``moe`` layers.

    ``layer_types`` (else the legacy per-layer ``compress_ratios`` 0 / 4 / 128, else two HCA layers then HCA /
    CSA alternating); ``compress_rates`` per type (else 4 and 128, or ``compress_rate_csa`` /
    ``compress_rate_hca``), as DeepseekV4Config.__post_init__. MTP layers (``num_nextn_predict_layers``, not built
    by transformers) are reported apart: ``v4_mtp``."""
    hidden = f.int("hidden_size")
    n_layers = f.int("num_hidden_layers", hi=MAX_LAYERS)
    heads = f.int("num_attention_heads")
    vocab = f.int("vocab_size", hi=1 << 26)
    head_dim = f.int("head_dim")
    q_lora = f.int("q_lora_rank")
    groups = f.int("o_groups")
    o_lora = f.int("o_lora_rank")
    if (heads * head_dim) % groups:
        raise f.error("o_groups", f"({groups}) does not divide num_attention_heads x head_dim ({heads * head_dim})")
    if f.raw("qk_rope_head_dim") is not None and f.raw("partial_rotary_factor") is None:
        rope = f.int("qk_rope_head_dim")
    else:
        prf = f.raw("partial_rotary_factor")
        rope = int(head_dim * (f.float("partial_rotary_factor") if prf is not None else 64 / 512))
    window = f.int("sliding_window")
    raw_rates = f.raw("compress_rates") or {}
    if not isinstance(raw_rates, dict):
        raise f.error("compress_rates", f"must be an object of a rate per attention type, got {short(raw_rates)}")
    rates = dict(raw_rates)
    rates.setdefault("compressed_sparse_attention", as_int(f.raw("compress_rate_csa")) or 4)
    rates.setdefault("heavily_compressed_attention", as_int(f.raw("compress_rate_hca")) or 128)
    types = _v4_layer_types(f, n_layers)
    hc = f.int("hc_mult")
    theta = f.float("rope_theta")
    ctheta = f.float("compress_rope_theta", 160000.0)
    mixers = []
    for t in types:
        ratio = 0 if t == "sliding_attention" else as_int(rates.get(t))
        if ratio is None or (t != "sliding_attention" and ratio < 1):
            raise f.error("compress_rates", f"has no positive rate for {short(t)}")
        mixers.append(CompressedMQA(
            hidden, heads, head_dim, q_lora, groups, o_lora, rope, window, compress_ratio=ratio,
            indexer=t == "compressed_sparse_attention", index_n_heads=f.int("index_n_heads"),
            index_head_dim=f.int("index_head_dim"), index_topk=f.int("index_topk"), hc_mult=hc,
            rope_theta=theta if t == "sliding_attention" else ctheta))
    _v4_mlp_types(f, n_layers)
    # DeepseekV4Config.attribute_map: an intermediate_size in the config is its moe_intermediate_size (and wins)
    inter = f.int("intermediate_size") if f.raw("intermediate_size") is not None else f.int("moe_intermediate_size")
    act = read_act(f, TRAITS)
    moe = MoE(hidden, f.int("n_routed_experts"), f.int("num_experts_per_tok"), inter, shared_intermediate_size=inter,
              act=act)
    norms = pre_norms(lambda: Norm(hidden))
    layers = tuple(Layer(m, moe, norms) for m in mixers)
    head_hc = hc_head(hc, hidden)
    mtp, mtp_extra_tensors, mtp_caveats = v4_mtp(f, layers[-1] if layers else None, n_layers, theta)
    routing = read_routing(f, RouterKind.SIGMOID, scale_default=1.5)
    return ModelSpec(
        model_type=model_type, hidden_size=hidden, vocab_size=vocab, layers=layers,
        tie_word_embeddings=read_tie(f, False), final_norm=Norm(hidden), hidden_act=act, norm_eps=read_eps(f),
        max_position_embeddings=f.int("max_position_embeddings", hi=1 << 40), mtp_layers=mtp,
        mtp_extra_tensors=mtp_extra_tensors, head_hc=head_hc,
        # DeepseekV4PreTrainedModel._keep_in_fp32_modules_strict, stored in F32 too (DeepSeek-V4-Pro's dtype census,
        # tests/test_quant_real_audit3.py); its norms, also listed, are stored in bf16 and counted so
        fp32_names=("attn_hc.", "ffn_hc.", "hc_head.", ".sinks", ".position_bias"),
        numerics=Numerics(rope_style=RopeStyle.PAIRS, score_correction_bias=True, **routing),
        caveats=("DeepSeek-V4's router scores with sqrt(softplus) (modelled as sigmoid for the numerics; counts, "
                 "cache and FLOPs are exact)",) + mtp_caveats,
    )


def v4_mtp(f: Fields, last: Layer | None, n_layers: int, theta: float) -> tuple[tuple[Layer, ...], tuple[Tensor, ...],
                                                                              tuple[str, ...]]:
    """DeepSeek-V4's MTP modules (layers, their own tensors, caveats), as vLLM builds them
    (vllm/model_executor/models/deepseek_v4_mtp.py, DeepSeekV4MultiTokenPredictorLayer) and DeepSeek's
    inference/model.py MTPBlock: a DeepseekV4DecoderLayer at index num_hidden_layers + i whose attention is
    sliding-window only (vLLM deepseek_v4.py DeepseekV4Attention: compress_ratio 1 past num_hidden_layers, so no
    compressor or indexer; DeepSeek's compress_ratios[num_hidden_layers] is 0 in DeepSeek-V4-Pro's config), the
    model's MoE; then e_proj and h_proj (hidden x hidden, quantized like the model's linears), enorm, hnorm and
    norm, and its own hc_head (hc_head_fn / base / scale, F32). The embedding and head are the model's (no copy
    stored: DeepSeek-V4-Pro's dtype census, tests/test_quant_real_audit3.py)."""
    # common.mtp_layers: num_nextn_predict_layers copies of the last layer (none without one); V4's attend sliding only
    n = len(mtp_layers(f, [last] if last is not None else []))
    if not n:
        return (), (), ()
    m = last.mixer
    sliding = replace(m, compress_ratio=0, indexer=False, rope_theta=theta)
    layers = (Layer(sliding, last.ffn, last.norms),) * n
    h, hc = m.hidden_size, m.hc_mult
    extra: list[Tensor] = []
    for i in range(n):
        p = f"model.mtp.{i}"
        extra += [Tensor(f"{p}.e_proj.weight", (h, h), "linear"), Tensor(f"{p}.h_proj.weight", (h, h), "linear")]
        extra += [Tensor(f"{p}.{name}.weight", (h,), "norm") for name in ("enorm", "hnorm", "norm")]
        extra += hc_head(hc, h, p)
    ratios = f.raw("compress_ratios")
    listed = ratios[n_layers:n_layers + n] if isinstance(ratios, list) else []
    caveats = () if all(r == 0 for r in listed) else (
        f"compress_ratios lists {short(listed)} for the MTP layers; vLLM builds them sliding-window only (counted so)",)
    return layers, tuple(extra), caveats


def _v4_layer_types(f: Fields, n_layers: int) -> list[str]:
    """One attention type per layer; longer lists are cut to num_hidden_layers (DeepseekV4Config)."""
    if f.raw("layer_types") is not None:
        return per_layer_types(f, "layer_types", n_layers, _V4_TYPES, at_least=True)
    if f.raw("compress_ratios") is not None:
        ratios = f.list("compress_ratios")
        for r in ratios:
            if isinstance(r, bool) or not isinstance(r, int) or r not in _V4_RATIO_TYPES:
                raise f.error("compress_ratios", f"has {short(r)}; DeepSeek-V4 layers compress by 0, 4 or 128")
        return per_layer_types(f, "compress_ratios", n_layers, _V4_TYPES,
                               values=[_V4_RATIO_TYPES[r] for r in ratios], at_least=True)
    inter = ["compressed_sparse_attention" if i % 2 else "heavily_compressed_attention"
             for i in range(max(n_layers - 2, 0))]
    return f.derived("layer_types", ["heavily_compressed_attention"] * min(n_layers, 2) + inter,
                     "two HCA layers, then HCA / CSA alternating (DeepseekV4Config)")


def _v4_mlp_types(f: Fields, n_layers: int) -> None:
    """``mlp_layer_types`` (hash_moe / moe) only chooses how experts are picked: checked, not needed."""
    if f.raw("mlp_layer_types") is not None:
        per_layer_types(f, "mlp_layer_types", n_layers, ("hash_moe", "moe"), at_least=True)


# ---- Hy4-preview and A.X-K2: DeepSeek sparse attention with output gates ---------------------------


def build_gated_dsa(f: Fields, model_type: str, *, hy: bool) -> ModelSpec:
    """DeepSeek-V3.2's block (MLA with a q LoRA, the lightning indexer, DeepSeek-V3's MoE) with a sigmoid gate on
    each head's output, the differences as ``SparseMLA`` / ``Norm`` fields.

    Hy4-preview (``hy``; tencent/Hy4-preview, transformers' HYV4ForCausalLM): GLM-5's full / shared indexer layers
    (``indexer_types``, else full on layer 0 and where (i - 1) % 4 == 0), ``gate_proj`` (hidden -> heads x
    v_head_dim), a learned sink per head, DeepSeek-V4's hyper-connections without the Sinkhorn comb (``attn_hc`` /
    ``ffn_hc``: ``fn`` 2n x n·hidden, ``base`` 2n, ``scale`` 2) and its ``hc_head``; rotate-half RoPE; MoE by
    ``mlp_layer_types`` (else layer 0 dense, the rest sparse), GLM-4.7-Flash's experts (sigmoid router, shared
    experts of moe_intermediate_size x n_shared_experts); its MTP layers are not built by transformers.

    A.X-K2 (skt/A.X-K2, AXK2ForCausalLM): an indexer on every layer; ``q_gate_proj`` (2 x q_lora_rank -> heads x
    (qk_head_dim + v_head_dim), over the normed and the raw query latent) in place of ``q_b_proj``, its v_head_dim
    part the output gate; the input norm (and, on MoE layers, the post-attention norm) an RMSNorm times a
    rank-``gated_norm_rank`` sigmoid gate (``Norm.gate_rank``); MoE by ``mlp_layer_types``, else the legacy
    ``first_k_dense_replace`` (1) and ``moe_layer_freq`` (1); interleaved RoPE; ungrouped routing unless
    ``n_group`` is set."""
    hidden = f.int("hidden_size")
    n_layers = f.int("num_hidden_layers", hi=MAX_LAYERS)
    heads = f.int("num_attention_heads")
    vocab = f.int("vocab_size", hi=1 << 26)
    rope = f.int("qk_rope_head_dim")
    theta, _, scaling = read_rope(f, rope)
    mla = MLA(hidden, heads, f.int("q_lora_rank"), f.int("kv_lora_rank"), f.int("qk_nope_head_dim"), rope,
              f.int("v_head_dim"), bias=f.bool("attention_bias", False), rope_theta=theta)
    if hy:
        if f.raw("indexer_types") is not None:
            full = per_layer_types(f, "indexer_types", n_layers, {"full": True, "shared": False})
        else:
            full = f.derived("indexer_types", [i == 0 or (i - 1) % 4 == 0 for i in range(n_layers)],
                             "full on layer 0 and where (i - 1) % 4 == 0 (HYV4Config)")
        if full and not full[0]:
            raise f.error("indexer_types", "makes layer 0 shared, but a shared layer reuses the top-k of an earlier "
                                           "full layer")
        extra = dict(out_gate=True, sinks=True, hc_mult=f.int("hc_mult"))
    else:
        full, extra = [True] * n_layers, dict(q_gate=True)
    mixers = [replace(m, indexer=full[i], **extra) for i, m in enumerate(dsa_mixers(f, mla, n_layers, glm=False))]
    if f.raw("mlp_layer_types") is not None:
        moe_at = sparse_layers(f, n_layers)
    elif hy:
        f.derived("mlp_layer_types", ["dense"] + ["sparse"] * (n_layers - 1), "absent: layer 0 dense, the rest sparse")
        moe_at = set(range(1, n_layers))
    else:
        first = f.int("first_k_dense_replace", 1, lo=0, hi=MAX_LAYERS)
        freq = f.int("moe_layer_freq", 1)
        moe_at = {i for i in range(first, n_layers) if i % freq == 0}
    act = read_act(f, TRAITS)
    dense = MLP(hidden, f.int("intermediate_size"), act=act)
    n_exp, k, size = f.int("n_routed_experts"), f.int("num_experts_per_tok"), f.int("moe_intermediate_size")
    if k > n_exp:
        raise f.error("num_experts_per_tok", f"({k}) exceeds the number of experts ({n_exp})")
    moe = MoE(hidden, n_exp, k, size, shared_intermediate_size=f.int("n_shared_experts", 0, lo=0) * size, act=act)
    plain = pre_norms(lambda: Norm(hidden))
    gated = Norm(hidden, gate_rank=0 if hy else f.int("gated_norm_rank"))
    layers = []
    for i in range(n_layers):
        norms = plain if hy else (PlacedNorm("input_layernorm", "pre_mixer", gated),
                                  PlacedNorm("post_attention_layernorm", "pre_ffn", gated if i in moe_at else Norm(hidden)))
        layers.append(Layer(mixers[i], moe if i in moe_at else dense, norms))
    mtp = tuple(Layer(replace(lay.mixer, indexer=True), lay.ffn, lay.norms) for lay in mtp_layers(f, layers))
    routing = read_routing(f, RouterKind.SIGMOID, scale_default=2.5, n_group_default=1, topk_group_default=1,
                           group_score=GroupScore.TOP2)
    caveats = ()
    if hy:
        caveats = ("Hy4-preview keeps lm_head, the router, the indexer's weights_proj / k_norm, the sinks and the "
                   "hyper-connections in fp32 (transformers' _keep_in_fp32_modules_strict): counted here at the "
                   "model's dtype", f"its routed experts clamp SwiGLU at swiglu_limit ({f.float('swiglu_limit', 10.0)}), "
                   "which the numerics do not model")
    return ModelSpec(
        model_type=model_type, hidden_size=hidden, vocab_size=vocab, layers=tuple(layers),
        tie_word_embeddings=read_tie(f, False), final_norm=Norm(hidden), hidden_act=act, norm_eps=read_eps(f),
        rope_scaling=scaling, mtp_layers=mtp, mtp_extra_params=mtp_extra(f, hidden),
        head_hc=hc_head(extra["hc_mult"], hidden) if hy else (),
        numerics=Numerics(rope_style=RopeStyle.HALF if hy else RopeStyle.PAIRS, score_correction_bias=True, **routing),
        caveats=caveats,
    )


def hc_head(hc: int, hidden: int, prefix: str = "model") -> tuple[Tensor, ...]:
    """DeepSeek-V4's and Hy4-preview's ``hc_head``: the ``hc`` streams collapsed before the final norm (DeepSeek-V4's
    MTP modules have their own)."""
    return (Tensor(f"{prefix}.hc_head.hc_fn", (hc, hc * hidden), "other"),
            Tensor(f"{prefix}.hc_head.hc_base", (hc,), "other"), Tensor(f"{prefix}.hc_head.hc_scale", (1,), "other"))


build_hy_v4 = partial(build_gated_dsa, hy=True)
build_axk2 = partial(build_gated_dsa, hy=False)
