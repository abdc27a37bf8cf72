"""GLM-5.3-Flash (``glm5_next``: zai-org/GLM-5.3-Flash, transformers' Glm5NextForConditionalGeneration, 5.24) and its
language model (``glm5_next_text``).

The language model is a hybrid of GLM-5's sparse attention and Kimi Linear's delta rule inside DeepSeek-V4's
hyper-connections (``analysis.mixers.glm5_next``): ``layer_types`` (default: every fourth layer, i % 4 == 3, sparse,
the rest ``linear_attention``) chooses Kimi Delta Attention with low-rank gates (``linear_attn_config``'s num_heads /
head_dim / short_conv_kernel_size over linear_num_heads / linear_head_dim / linear_conv_kernel_dim, as Kimi Linear)
or GLM-5's NoPE MLA whose indexer scores pools of ``index_kpool`` tokens; ``indexer_types`` marks the sparse layers
that reuse the previous layer's selection (GLM-5's rule, ``deepseek.glm_indexer_layers``). Every layer has the two
hyper-connections (``hc_mult`` streams). The FFN is a dense clamped SwiGLU MLP where ``mlp_layer_types`` says
``dense`` (default: the first three layers; ``first_k_dense_replace`` is not read) and elsewhere DeepSeek-V3's MoE:
``n_routed_experts`` experts (fused gate_up), ``n_shared_experts`` x ``moe_intermediate_size`` shared, a sigmoid
router with a choice-only correction bias (a buffer, not a parameter). The streams are averaged before the final norm
(no tensors). lm_head is untied unless the wrapper's ``tie_word_embeddings`` says so.

The vision tower (``glm5_next_vision``) is GLM-OCR's (``vision._glm4v_vision``: no learned positions, biased qkv /
proj / MLP, q/k RMSNorms, Conv2d downsample to ``out_hidden_size``) with a merger projection_intermediate_size wide.

MTP: ``num_nextn_predict_layers`` layers after the main ones (checkpoint layer 45), which transformers does not build
(``_keys_to_ignore_on_load_unexpected``); reported apart: a sparse layer with its own indexer and a MoE, without
hyper-connections (the checkpoint has no hc tensors for it; vLLM's port runs it as a plain residual block), plus
DeepSeek's enorm / hnorm / eh_proj / head norm (the embedding and head are shared, not stored again).

Counts equal transformers' model on the meta device. The released GLM-5.3-Flash: 313,890,426,878 parameters (vision
tower and merger 563,627,008), 321,304,010,622 with its MTP layer; published "320B total / 18B active".
"""

from __future__ import annotations

from dataclasses import fields, replace

from ..fields import MAX_LAYERS, Fields
from ..mixers.glm5_next import Glm5NextKDA, PooledSparseMLA
from ..spec import MLA, MLP, Layer, ModelSpec, MoE, Norm
from .common import per_layer_types, pre_norms, read_eps, read_tie, sparse_layers
from .deepseek import glm_indexer_layers, numerics as deepseek_numerics
from .hybrid import _kimi_linear_attn_config, _kimi_linear_int

#: layer_types names: Glm5NextTextConfig maps full_attention to indexed_attention; the released config writes
#: deepseek_sparse_attention, which Glm5NextTextDecoderLayer builds as a sparse layer too (anything not linear)
LAYER_TYPES = {"linear_attention": "linear", "indexed_attention": "sparse", "full_attention": "sparse",
               "deepseek_sparse_attention": "sparse"}


def _layer_types(f: Fields, n_layers: int) -> list[str]:
    if f.raw("layer_types") is not None:
        return per_layer_types(f, "layer_types", n_layers, LAYER_TYPES)
    return f.derived("layer_types", ["linear" if i % 4 != 3 else "sparse" for i in range(n_layers)],
                     "absent: every layer with i % 4 == 3 indexed_attention, the others linear_attention")


def _moe_layers(f: Fields, n_layers: int) -> set[int]:
    if f.raw("mlp_layer_types") is not None:
        return sparse_layers(f, n_layers)
    f.derived("mlp_layer_types", ["dense"] * min(3, n_layers) + ["sparse"] * max(n_layers - 3, 0),
              "absent: the first three layers dense, the rest sparse (first_k_dense_replace is not read)")
    return set(range(3, n_layers))


def _sparse_mixer(f: Fields, hidden: int) -> PooledSparseMLA:
    """The sparse layers' MLA and indexer, checked as Glm5NextTextConfig.validate_architecture does."""
    heads = f.int("num_attention_heads")
    if f.int("num_key_value_heads", heads) != heads:
        raise f.error("num_key_value_heads", f"({f.int('num_key_value_heads')}) must equal num_attention_heads "
                                             f"({heads}), as Glm5NextTextConfig requires")
    if f.raw("q_lora_rank", 0) is None:
        raise f.error("q_lora_rank", "is null, but GLM-5.3's sparse attention always has a query LoRA")
    rope = f.int("qk_rope_head_dim", 0, lo=0)
    if rope:
        raise f.error("qk_rope_head_dim", f"is {rope}, but GLM-5.3's sparse attention is NoPE (0)")
    topk, kpool = f.int("index_topk"), f.int("index_kpool")
    if topk % kpool:
        raise f.error("index_kpool", f"({kpool}) does not divide index_topk ({topk})")
    mla = MLA(hidden, heads, f.int("q_lora_rank"), f.int("kv_lora_rank"), f.int("qk_nope_head_dim"), 0,
              f.int("v_head_dim"), bias=f.bool("attention_bias", False), rope=False)
    base = {fl.name: getattr(mla, fl.name) for fl in fields(MLA)}
    return PooledSparseMLA(**base, index_topk=topk, index_n_heads=f.int("index_n_heads"),
                           index_head_dim=f.int("index_head_dim"), index_kpool=kpool,
                           select_tail=f.bool("index_kpool_always_select_tail", True), mhc=f.int("hc_mult"))


def build(f: Fields, model_type: str) -> ModelSpec:
    hidden = f.int("hidden_size")
    n_layers = f.int("num_hidden_layers", hi=MAX_LAYERS)
    vocab = f.int("vocab_size", hi=1 << 26)
    types = _layer_types(f, n_layers)
    moe_at = _moe_layers(f, n_layers)
    hc = f.int("hc_mult")
    act = f.str("hidden_act", "silu")
    mixers: list = []
    sparse = _sparse_mixer(f, hidden) if "sparse" in types else None
    if sparse is not None:
        full = glm_indexer_layers(f, n_layers)
        for i, t in enumerate(types):
            if t == "sparse" and not full[i] and (i == 0 or types[i - 1] != "sparse" or not full[i - 1]):
                raise f.error("indexer_types", f"makes layer {i} shared, but a shared layer reuses the top-k of the "
                                               "layer just before it, which must be a full sparse-attention layer "
                                               "(Glm5NextTextAttention raises otherwise)")
    linear = None
    if "linear" in types:
        lac = _kimi_linear_attn_config(f)
        heads = _kimi_linear_int(f, lac, "num_heads", 1 << 16)
        hd = _kimi_linear_int(f, lac, "head_dim", 1 << 16)
        kernel = _kimi_linear_int(f, lac, "short_conv_kernel_size", 1 << 12)
        linear = Glm5NextKDA(hidden, heads, heads, hd, hd, kernel, gate_rank=hd, mhc=hc)
    for i, t in enumerate(types):
        mixers.append(linear if t == "linear" else replace(sparse, indexer=full[i]))
    dense = MLP(hidden, f.int("intermediate_size"), act=act)
    moe = None
    if moe_at or f.int("num_nextn_predict_layers", 0, lo=0, hi=64):
        n_exp, k, size = f.int("n_routed_experts"), f.int("num_experts_per_tok"), f.int("moe_intermediate_size")
        if k > n_exp:
            raise f.error("num_experts_per_tok", f"({k}) exceeds the number of experts ({n_exp})")
        moe = MoE(hidden, n_exp, k, size, shared_intermediate_size=f.int("n_shared_experts", 0, lo=0) * size,
                  act=act)
    norms = pre_norms(lambda: Norm(hidden))
    layers = tuple(Layer(m, moe if i in moe_at else dense, norms) for i, m in enumerate(mixers))
    n_mtp = f.int("num_nextn_predict_layers", 0, lo=0, hi=64)
    mtp = ()
    if n_mtp:
        if sparse is None:
            raise f.error("num_nextn_predict_layers", f"is {n_mtp}, but the model has no sparse-attention layer to "
                                                      "take the MTP layer's shape from")
        mtp = tuple(Layer(replace(sparse, indexer=True, mhc=0), moe, norms) for _ in range(n_mtp))
    limit = f.float("swiglu_limit", 10.0)
    return ModelSpec(
        model_type=model_type, hidden_size=hidden, vocab_size=vocab, layers=layers,
        tie_word_embeddings=read_tie(f, False), final_norm=Norm(hidden), hidden_act=act, norm_eps=read_eps(f),
        max_position_embeddings=f.int("max_position_embeddings", hi=1 << 40), mtp_layers=mtp,
        # enorm, hnorm, shared_head.norm and eh_proj (2H -> H); the MTP layer shares the embedding and head, which
        # the checkpoint does not store again (its layer 45 has no embed_tokens / shared_head.head)
        mtp_extra_params=n_mtp * (3 * hidden + 2 * hidden * hidden),
        numerics=deepseek_numerics(f, 3, interleave_fixed=True),
        caveats=(f"GLM-5.3-Flash clamps every SwiGLU (dense, shared and routed experts, vision) at swiglu_limit "
                 f"({limit}) and bounds the KDA decay by linear_lower_bound, which the numerics do not model; "
                 "counts, cache and FLOPs are exact",
                 "transformers keeps the router, conv1d, dt_bias, A_log and the hyper-connections' base / scale in "
                 "fp32 (_keep_in_fp32_modules_strict): counted here at the model's dtype"),
    )


def glm5_next_vision(top: dict, text_hidden: int, where: str) -> tuple:
    """Glm5NextVisionModel: GLM-OCR's tower with a projection_intermediate_size merger (``vision._glm4v_vision``)."""
    from .. import vision

    return vision._glm4v_vision(top, where, "glm5_next_vision")
