"""Mistral Large 4 (``mistral_large4_text``, and the ``mistral_large4`` wrapper with its Pixtral tower), counted from
transformers' ``MistralLarge4TextModel`` / ``MistralLarge4ForConditionalGeneration``
(models/mistral_large4/modular_mistral_large4.py, transformers 5.24).

The block is GLM-5's DeepSeek sparse attention (``analysis.mixers.dsa``) with DeepSeek-V3's experts:

- no query LoRA: ``q_proj`` (hidden -> heads · qk_head_dim);
- the indexer's query from the hidden state (``q_input_norm``, a LayerNorm with bias, then ``wq_b`` from hidden);
- ``softmax_scaling``: a learned ``scale`` and ``bias`` per head, in the attention and in the indexer;
- NoPE layers (``no_rope_layers``, 1 = RoPE; else every ``no_rope_layer_interval``-th layer, 4): no rope slice in
  ``kv_a_proj_with_mqa`` or in the cache, the rope dims folded into ``qk_nope_head_dim``;
- ``kv_source_layers``: a layer pointing at an earlier one has no ``kv_a_proj_with_mqa`` / ``kv_a_layernorm`` and no
  latent cache (it attends the source's), but keeps its indexer's key cache when its indexer runs;
- ``indexer_types`` (GLM-5's full / shared), MoE by ``mlp_layer_types`` else ``first_k_dense_replace`` (1);
- a softmax router (MistralLarge4TextTopkRouter: groups by their two best scores, always renormalised, scaled by
  ``routed_scaling_factor``), shared experts of ``n_shared_experts`` x ``moe_intermediate_size``;
- a learned RoPE frequency scale (``rotary_emb.alpha``: qk_rope_head_dim / 2, fp32) and soft-capped logits.

The wrapper is Mistral 3's (Pixtral tower, RMSNorm, patch merger, two bias-free linears) with MistralLarge4Config's
default tower (hidden 2048, 30 layers, SiLU MLP 6144, patch 14, 1540 px) when vision_config is absent. The released
checkpoint's multi-token-prediction head (``mtp_dspark``) is not built by transformers and not counted. The class
defaults are Mistral-Large-4.0-1T05-A52B (no verbatim config.json was at hand): 1,050,118,202,912 parameters for the
language model (published: 1.05T), 1,704,218,624 for the default tower and projector (published: a 1.6B vision
encoder), 1,051,822,421,536 in all, equal to transformers on the meta device; 53,098,587,680 active in the language
model, 51,840,296,480 without the embedding table (published: 52B with the embedding and output layers; the published
49B without them is not matched: 50,582,005,280 here). KV per token in bf16: 99,072 bytes (54 RoPE layers' latent +
rope key, 18 NoPE layers' latent, 72 indexer keys).
"""

from __future__ import annotations

from dataclasses import fields

from .. import vision
from ..errors import ConfigError
from ..fields import MAX_LAYERS, Fields
from ..mixers import SparseMLA
from ..spec import MLA, MLP, GroupScore, Layer, ModelSpec, MoE, Norm, Numerics, RopeStyle, RouterKind
from ..tensors import Tensor
from .common import pre_norms, read_act, read_eps, read_rope, read_routing, read_tie
from .deepseek import TRAITS, dsa_moe_layers, glm_indexer_layers

#: MistralLarge4TextConfig.__post_init__'s rope_parameters when absent: YaRN over a 512-token window, no magnitude
#: scaling
DEFAULT_ROPE = {"rope_type": "yarn", "rope_theta": 10000.0, "factor": 2048.0, "original_max_position_embeddings": 512,
                "beta_fast": 32.0, "beta_slow": 1.0, "attention_factor": 1.0}

#: MistralLarge4Config.sub_configs_defaults' vision tower ("same as Mistral Small 3.1: gated SiLU MLP, 1540 px")
VISION_DEFAULT = {"model_type": "pixtral", "hidden_size": 2048, "intermediate_size": 6144, "num_hidden_layers": 30,
                  "num_attention_heads": 16, "patch_size": 14, "image_size": 1540, "hidden_act": "silu"}


def build_text(f: Fields, model_type: str) -> ModelSpec:
    hidden = f.int("hidden_size")
    n_layers = f.int("num_hidden_layers", hi=MAX_LAYERS)
    heads = f.int("num_attention_heads")
    vocab = f.int("vocab_size", hi=1 << 26)
    kv_lora, nope, rope, v_hd = f.int("kv_lora_rank"), f.int("qk_nope_head_dim"), f.int("qk_rope_head_dim"), \
        f.int("v_head_dim")
    if rope % 2:
        raise f.error("qk_rope_head_dim", f"({rope}) must be even: RoPE rotates pairs")
    if f.raw("q_lora_rank") is not None:
        raise f.error("q_lora_rank", "is set, but Mistral Large 4's attention has no query LoRA (q_proj)")
    theta, _, scaling = read_rope(f, rope)
    if f.raw("rope_parameters") is None and f.raw("rope_scaling") is None:
        scaling = tuple(sorted(f.derived("rope_parameters", DEFAULT_ROPE, "absent: YaRN (MistralLarge4TextConfig)")
                               .items()))
        theta = DEFAULT_ROPE["rope_theta"]
    topk, i_heads, i_dim = f.int("index_topk"), f.int("index_n_heads"), f.int("index_head_dim")
    if i_dim < rope:
        raise f.error("index_head_dim", f"({i_dim}) is smaller than qk_rope_head_dim ({rope}), the indexer's "
                                        "roped dims")
    uses_rope = _no_rope_layers(f, n_layers)
    sources = _kv_sources(f, n_layers)
    full = glm_indexer_layers(f, n_layers)
    bias = f.bool("attention_bias", False)
    mixers = []
    for i in range(n_layers):
        r = rope if uses_rope[i] else 0
        mla = MLA(hidden, heads, None, kv_lora, nope + rope - r, r, v_hd, bias=bias, rope_theta=theta)
        base = {fl.name: getattr(mla, fl.name) for fl in fields(MLA)}
        mixers.append(SparseMLA(**base, index_topk=topk, index_n_heads=i_heads, index_head_dim=i_dim,
                                indexer=full[i], index_q_from_hidden=True, softmax_scaling=True,
                                kv_shared=sources[i] != i))
    moe_at = dsa_moe_layers(f, n_layers)
    act = read_act(f, TRAITS)
    n_exp, k, size = f.int("n_routed_experts"), f.int("num_experts_per_tok"), f.int("moe_intermediate_size")
    if k > n_exp:
        raise f.error("num_experts_per_tok", f"({k}) exceeds the number of experts ({n_exp})")
    moe = MoE(hidden, n_exp, k, size, shared_intermediate_size=f.int("n_shared_experts", 0, lo=0) * size, act=act)
    dense = MLP(hidden, f.int("intermediate_size"), act=act)
    norms = pre_norms(lambda: Norm(hidden))
    layers = tuple(Layer(mixers[i], moe if i in moe_at else dense, norms) for i in range(n_layers))
    routing = read_routing(f, RouterKind.SOFTMAX, norm_fixed=True, group_score=GroupScore.TOP2)
    # null in the config: no soft-capping; absent: the class default (30)
    cap = None if "final_logit_softcapping" in f.cfg and f.raw("final_logit_softcapping") is None \
        else f.float("final_logit_softcapping", 30.0)
    return ModelSpec(
        model_type=model_type, hidden_size=hidden, vocab_size=vocab, layers=layers,
        tie_word_embeddings=read_tie(f, False), final_norm=Norm(hidden), hidden_act=act, norm_eps=read_eps(f),
        rope_scaling=scaling, final_logit_softcapping=cap,
        model_params=(Tensor("model.rotary_emb.alpha", (rope // 2,), "other"),),
        numerics=Numerics(rope_style=RopeStyle.PAIRS, **routing),
        caveats=("Mistral Large 4 keeps its routers and rotary_emb.alpha in fp32 (transformers' "
                 "_keep_in_fp32_modules_strict): counted here at the model's dtype",
                 "its checkpoint's multi-token-prediction head (mtp_dspark) is not built by transformers and not "
                 "counted"),
    )


def _no_rope_layers(f: Fields, n_layers: int) -> list[bool]:
    """``no_rope_layers`` (1: RoPE, 0: NoPE; at least one entry per layer), else NoPE on every
    ``no_rope_layer_interval``-th layer (4)."""
    raw = f.raw("no_rope_layers")
    if raw is None:
        every = f.int("no_rope_layer_interval", 4)
        return f.derived("no_rope_layers", [(i + 1) % every != 0 for i in range(n_layers)],
                         f"absent: NoPE on every {every}th layer")
    if not isinstance(raw, list) or len(raw) < n_layers or any(x not in (0, 1) or isinstance(x, float) for x in raw):
        raise f.error("no_rope_layers", f"must list 0 (NoPE) or 1 (RoPE) for each of the {n_layers} layers")
    return [bool(x) for x in raw[:n_layers]]


def _kv_sources(f: Fields, n_layers: int) -> list[int]:
    """``kv_source_layers``: per layer the layer whose latent cache it attends (itself: its own); the source must
    come first and own its cache (MistralLarge4TextConfig.validate_architecture)."""
    raw = f.raw("kv_source_layers")
    if raw is None:
        return list(range(n_layers))
    if not isinstance(raw, list) or len(raw) != n_layers or any(isinstance(x, bool) or not isinstance(x, int)
                                                                 for x in raw):
        raise f.error("kv_source_layers", f"must list one layer index for each of the {n_layers} layers")
    for i, s in enumerate(raw):
        if not 0 <= s <= i or raw[s] != s:
            raise f.error("kv_source_layers", f"makes layer {i} share the cache of layer {s}, which is not an earlier "
                                              "layer owning its cache")
    return list(raw)


def mistral_large4_vision(top: dict, text_hidden: int, where: str) -> tuple[Tensor, ...]:
    """Mistral 3's tower, merger and projector; MistralLarge4Config's default tower when vision_config is absent."""
    vc = top.get("vision_config")
    if vc is None:
        top = dict(top, vision_config=VISION_DEFAULT)
    elif isinstance(vc, dict) and vc.get("model_type", "pixtral") != "pixtral":
        raise ConfigError(f"{where}: field 'vision_config' has model_type {vc.get('model_type')!r}; Mistral Large 4's "
                          "tower is a Pixtral tower")
    return vision.mistral3_vision(top, text_hidden, where)
