"""BharatGen Param2-MoE (``param2moe``: Param2-17B-A2.4B-Thinking). transformers 5.25 ships it
(``models/param2moe``): ``Param2MoeConfig`` only, whose model AutoModelForCausalLM builds as GLM-4.5's
(``Glm4MoeForCausalLM``), with the original bharatgenai names in its attribute_map (``num_experts`` ->
``n_routed_experts``, ``num_shared_experts`` -> ``n_shared_experts``, ``use_qkv_bias`` -> ``attention_bias``,
``num_mtp_layers`` -> ``num_nextn_predict_layers``) and the checkpoint's tensor names converted as Sarvam-MoE's.
Both names are read here, and an absent field takes Param2MoeConfig's default (tied embeddings, two shared experts
of ``moe_intermediate_size``, q/k norms on, RoPE base 500,000, ``head_dim`` 64). The hub's remote code is served
by vLLM's ``vllm/model_executor/models/param2moe.py`` (BharatGen's converter github.com/Bharatgen-Tech/nemo_to_hf
``nemo2hf.py`` writes its config.json and tensor names); the fields only it reads (``use_bias``,
``moe_shared_expert_intermediate_size``, ``score_function``, ``moe_router_enable_expert_bias``) keep vLLM's
reading, which follows the checkpoint's tensors; the released config's values give transformers' model exactly:

- Ling 2.0's block (see bailing.py; the checkpoint's names are Bailing's: ``word_embeddings``,
  ``attention.query_key_value``, ``attention.dense``, ``query_layernorm`` / ``key_layernorm``, ``mlp.gate.expert_bias``):
  fused GQA q/k/v of ``head_dim`` (biased by ``use_qkv_bias``), ``dense`` (biased by ``use_bias``, default false),
  per-head RMSNorms of q and k with ``use_qk_norm``, RoPE (rotate half) on head_dim x ``partial_rotary_factor``.
- A SwiGLU MLP of ``intermediate_size`` on the first ``first_k_dense_replace`` layers (default 1), then a MoE:
  a bias-free router (num_experts x hidden), ``num_experts`` SwiGLU experts of ``moe_intermediate_size`` (top
  ``num_experts_per_tok``), and ONE shared SwiGLU MLP of ``moe_shared_expert_intermediate_size`` when given -- vLLM
  reads it as the total width and does not multiply it by ``num_shared_experts`` (Param2MoeConfig's default 2),
  which only counts when that field is absent (then ``n_shared_experts x moe_intermediate_size``, transformers' width). This is where Param2 differs
  from bailing.py's reading (which multiplies), and why it is not an alias of it.
- Routing: ``score_function`` (default sigmoid) with a choice-only ``expert_bias`` (``moe_router_enable_expert_bias``,
  default true; fp32 in the checkpoint, not a parameter, as DeepSeek V3's), grouped top-k when ``n_group`` and
  ``topk_group`` are both set, renormalised by ``norm_topk_prob`` (default true), scaled by ``routed_scaling_factor``.
- ``tie_word_embeddings``: Param2MoeConfig's default true (vLLM's false; the converter writes true).

Param2-17B-A2.4B-Thinking (hidden 2048, 21 layers, 32 heads / 8 KV of 64, vocab 128008, 64 experts of 2048 top 6,
shared 4096, dense 9216, tied): 17,151,140,480 parameters (card: "17B total, 2.4B active"), KV 2,048 B/token/layer
in bf16. ``num_nextn_predict_layers`` (MTP) is refused: neither vLLM's param2moe.py nor transformers' GLM-4.5
model builds them (the released checkpoints hold none).
"""

from __future__ import annotations

from ..errors import UnsupportedModelError
from ..fields import MAX_LAYERS, Fields
from ..mixers import Attention
from ..spec import MLP, Layer, ModelSpec, MoE, Norm, Numerics, RopeStyle
from . import bailing
from .common import pre_norms, read_act, read_tie


#: Param2MoeConfig.attribute_map (transformers 5.25): the original bharatgenai config's names
ALIASES = {"n_routed_experts": ("num_experts", "num_local_experts"), "n_shared_experts": ("num_shared_experts",),
           "attention_bias": ("use_qkv_bias",), "num_nextn_predict_layers": ("num_mtp_layers",)}


def build(f: Fields, model_type: str) -> ModelSpec:
    f.aliases = {**f.aliases, **ALIASES}
    hidden = f.int("hidden_size")
    n_layers = f.int("num_hidden_layers", hi=MAX_LAYERS)
    heads = f.int("num_attention_heads")
    kv = f.int("num_key_value_heads")
    vocab = f.int("vocab_size", hi=1 << 26)
    if kv > heads or heads % kv:
        raise f.error("num_key_value_heads", f"({kv}) must divide num_attention_heads ({heads})")
    hd, theta, rotary_dim, scaling = bailing.read_head_rope(f, hidden, heads)
    if f.int("num_nextn_predict_layers", 0, lo=0, hi=64):
        raise UnsupportedModelError(f"{f.where}: num_nextn_predict_layers > 0: vLLM's Param2MoE builds no MTP "
                                    "layers, so their shapes are not known")
    qkv_bias = f.bool("attention_bias", False)
    o_bias = f.bool("use_bias", False)
    qk_norm = f.bool("use_qk_norm", False)
    act = read_act(f, bailing.TRAITS)

    first_dense = f.int("first_k_dense_replace", 1, lo=0, hi=MAX_LAYERS)
    dense_at = set(range(min(first_dense, n_layers)))
    moe = None
    if len(dense_at) < n_layers:
        n_exp = f.int("n_routed_experts")
        k = f.int("num_experts_per_tok")
        if k > n_exp:
            raise f.error("num_experts_per_tok", f"({k}) exceeds the number of experts ({n_exp})")
        size = f.int("moe_intermediate_size")
        n_shared = f.int("n_shared_experts", 1, lo=0)
        shared = 0
        if n_shared:
            # vLLM: the field is the TOTAL shared width (never multiplied); else n_shared x moe_intermediate_size
            shared = f.int("moe_shared_expert_intermediate_size") \
                if f.raw("moe_shared_expert_intermediate_size") is not None else n_shared * size
        moe = MoE(hidden, n_exp, k, size, shared_intermediate_size=shared, act=act)
    dense = MLP(hidden, f.int("intermediate_size"), act=act) if dense_at else None

    numerics = _routing(f, moe) if moe is not None else Numerics(rope_style=RopeStyle.HALF)

    norm = lambda: Norm(hidden)  # noqa: E731
    attn = Attention(hidden, heads, kv, hd, hd, q_bias=qkv_bias, k_bias=qkv_bias, v_bias=qkv_bias, o_bias=o_bias,
                     fused_qkv=True, q_norm_dim=hd if qk_norm else 0, k_norm_dim=hd if qk_norm else 0,
                     rotary_dim=rotary_dim, rope_theta=theta)
    layers = tuple(Layer(attn, dense if i in dense_at else moe, pre_norms(norm)) for i in range(n_layers))
    return ModelSpec(
        model_type=model_type, hidden_size=hidden, vocab_size=vocab, layers=layers,
        tie_word_embeddings=read_tie(f, False), final_norm=norm(), hidden_act=act,
        norm_eps=f.float("rms_norm_eps", 1e-6), rope_scaling=scaling,
        max_position_embeddings=f.int("max_position_embeddings", 4096, hi=1 << 40),
        numerics=numerics, checkpoint=bailing.CHECKPOINT,
    )


def _routing(f: Fields, moe: MoE) -> Numerics:
    """vLLM's Param2MoEMoEBlock router: bailing.py's, with Param2's defaults (sigmoid, an expert bias)."""
    fn = f.str("score_function", "sigmoid")
    if fn not in ("softmax", "sigmoid"):
        raise f.error("score_function", f"is {fn!r}; vLLM's Param2MoE router takes 'softmax' or 'sigmoid'")
    bias = f.bool("moe_router_enable_expert_bias", True)
    return bailing.grouped_routing(f, moe, fn, bias)
