"""Model types of mlx-lm's registry (``ml-explore/mlx-lm``, ``mlx_lm/models/<model_type>.py``) that planner did not
know, counted from those files (the only serving code for most of them) and the checkpoints' own config classes:

- Kwai Klear (``Klear``, the capital K as Kwai-Klear/Klear-46B-A2.5B writes it, and ``klear``; KlearMoeForCausalLM;
  mlx-lm's Klear.py): a Qwen3-MoE-shaped decoder (GQA with per-head q/k RMSNorms, head_dim hidden / heads,
  ``decoder_sparse_step`` / ``mlp_only_layers`` choose the MoE layers) whose MoE block differs in three ways:
  a shared MLP of ``moe_intermediate_size x n_shared_experts``; sigmoid routing, the choice by the scores plus an
  ``expert_bias`` vector (num_experts, a parameter: mlx loads it strictly and keeps it fp32), the chosen unbiased
  scores renormalised by norm_topk_prob and never scaled (the config's routed_scaling_factor 2.5 is read by no
  implementation); and the routed and shared outputs *blended* by a per-token 2-way softmax of ``coefficient``
  (a biased Linear(hidden, 2)), not added. Before: refused only as "n_shared_experts set, but model_type 'Klear'
  is not a known family".
- Apple Foundation Model (``afm7``; mlx-lm's afm7.py): ``num_layers - num_kv_reuse_layers`` ordinary layers (one
  fused bias-free ``qkv_proj`` of heads + 2 x kv heads, ``out_proj``, q/k RMSNorms over head_dim applied after RoPE,
  K and V fake-quantised to an int8 grid by two learned scalars ``quant_key_scale`` / ``quant_value_scale``), then
  ``num_kv_reuse_layers`` layers with only ``q_proj`` / ``out_proj`` / ``q_norm`` that attend over the *last*
  ordinary layer's K/V (no cache of their own); every layer a SwiGLU MLP of int(hidden x hidden_dim_scale_factor);
  head_dim hidden / heads; the embedding tied. Before: "standard decoder fields hidden_size are missing".
- Lille 130M (``lille-130m``, Nikity/lille-130m-*; mlx-lm's lille-130m.py): a Llama-shaped GQA decoder under
  nanoGPT names (``n_embd``, ``n_head``, ``n_kv_heads``, ``n_layer``, ``block_size``): a fused bias-free qkv_proj,
  the pre-norms inside the attention and feed-forward modules, a SwiGLU of 256 x round(int(8 x n_embd / 3) / 256)
  (Python's round), a tied head. Before: "required field 'intermediate_size' is missing".
- Phixtral (``phi-msft`` with ``num_local_experts``; mlx-lm's phixtral.py, reached by its ``phi-msft`` remapping;
  the hub's modeling_phi.py of mlabonne/phixtral-*): phi-2's parallel block (one biased LayerNorm feeds attention and
  the FFN; a fused biased ``Wqkv``, a biased ``out_proj``, RoPE on ``rotary_dim`` channels) with the MLP replaced by
  ``num_local_experts`` biased fc1 / fc2 experts (n_inner, else 4 x n_embd) behind a bias-free gate whose top-k
  logits are softmaxed; the head a biased LayerNorm and a biased Linear, untied. ``build_phixtral`` is not registered itself:
  model_type ``phi-msft`` is read by analysis/families/s28d_lmdeploy_mlc.py, which hands it the configs with
  ``num_local_experts`` > 1 (dense phi-2 configs are read there as transformers' Phi).
- Pixtral under its own model_type (``pixtral`` over a ``text_config``; mlx-lm's pixtral.py): transformers' LLaVA
  layout (a Pixtral ``vision_tower``, the biased two-Linear ``multi_modal_projector``, the language model), read as
  model_type llava reads it, the text head untied as mlx-lm forces it. Before: refused as "a sub-config of mistral3".
- Youtu-LLM under the model_type of its original remote code (``youtu_llm``, mlx-lm's youtu_llm.py): transformers'
  ``youtu`` (DeepSeek-V3's MLA with a dense MLP on every layer), which planner counts; read as ``youtu_llm`` it was a
  generic Llama (MHA of 128-wide heads, no MLA).
"""

from __future__ import annotations

from dataclasses import replace

from ..fields import MAX_LAYERS, Fields
from ..mixers import Attention
from ..spec import MLP, Layer, ModelSpec, MoE, Norm, NormKind, PlacedNorm, RopeStyle, RouterKind
from ..tensors import Tensor
from .common import Traits, pre_norms, read_tie


def _heads(f: Fields, hidden: int, heads_key: str, kv_key: str, kv_default: int | None = None) -> tuple[int, int, int]:
    """(heads, kv heads, head_dim = hidden / heads), as every model here derives head_dim."""
    heads = f.int(heads_key)
    kv = f.int(kv_key, heads if kv_default is None else kv_default)
    if hidden % heads:
        raise f.error(heads_key, f"({heads}) must divide the hidden size ({hidden}): head_dim is hidden / heads")
    if kv > heads or heads % kv:
        raise f.error(kv_key, f"({kv}) must divide {heads_key} ({heads})")
    return heads, kv, hidden // heads


# ---- Kwai Klear ----------------------------------------------------------------------------------

_KLEAR = Traits(qkv_bias="attention_bias", o_bias="attention_bias", mlp_bias=False, qk_norm="head", windows="none",
                moe="qwen", modules=((".mlp.shared_experts.", ".mlp.shared_expert."),))

KLEAR_BLEND = ("Klear's MoE block, which blends the routed and shared outputs by a per-token softmax of its "
               "coefficient projection instead of adding them")


def build_klear(f: Fields, model_type: str) -> ModelSpec:
    from . import decoder

    n_shared = f.int("n_shared_experts", lo=1)
    spec = decoder.build(f, model_type, _KLEAR)
    layers = []
    for layer in spec.layers:
        if isinstance(layer.ffn, MoE):  # mlx-lm's KlearSparseMoeBlock: shared_experts, coefficient, expert_bias
            moe = replace(layer.ffn, shared_intermediate_size=n_shared * layer.ffn.moe_intermediate_size,
                          correction_bias_param=True, shared_coefficient=True)
            layer = replace(layer, ffn=moe)
        layers.append(layer)
    numerics = replace(spec.numerics, router=RouterKind.SIGMOID, norm_topk_prob=f.bool("norm_topk_prob", True),
                       score_correction_bias=True, routed_scaling_factor=1.0, runtime_unsupported=KLEAR_BLEND)
    caveats = spec.caveats
    if f.has("routed_scaling_factor") and f.float("routed_scaling_factor") != 1.0:
        caveats += (f"routed_scaling_factor ({f.float('routed_scaling_factor')}) is not applied: mlx-lm's Klear (and "
                    "every port of it) reads no such field and never scales the routed experts",)
    return replace(spec, layers=tuple(layers), numerics=numerics, caveats=caveats)


# ---- Apple Foundation Model (afm7) ---------------------------------------------------------------


def build_afm7(f: Fields, model_type: str) -> ModelSpec:
    hidden = f.int("hidden_dim")
    n = f.int("num_layers", hi=MAX_LAYERS)
    reuse = f.int("num_kv_reuse_layers", lo=0, hi=MAX_LAYERS)
    if reuse >= n:
        raise f.error("num_kv_reuse_layers", f"({reuse}) must be fewer than num_layers ({n}): the reuse layers attend "
                                             "over the last ordinary layer's K/V")
    heads, kv, hd = _heads(f, hidden, "num_heads", "num_kv_heads")
    scale = f.float("hidden_dim_scale_factor", 3.25)
    inter = f.derived("intermediate_size", int(hidden * scale), "int(hidden_dim x hidden_dim_scale_factor)")
    theta = f.float("rope_theta", 50000.0)
    norms = pre_norms(lambda: Norm(hidden))
    mlp = MLP(hidden, inter)
    own = Attention(hidden, heads, kv, hd, hd, fused_qkv=True, q_norm_dim=hd, k_norm_dim=hd, rotary_dim=hd,
                    rope_theta=theta)
    shared = replace(own, fused_qkv=False, k_norm_dim=0, kv_shared=True)
    layers = (Layer(own, mlp, norms),) * (n - reuse) + (Layer(shared, mlp, norms),) * reuse
    # the two fake-quantisation scales of each ordinary layer (scalars in the checkpoint; no op of ours reads them)
    scales = tuple(Tensor(f"model.layers.{i}.self_attn.{name}", (), "other")
                   for i in range(n - reuse) for name in ("quant_key_scale", "quant_value_scale"))
    spec = ModelSpec(model_type=model_type, hidden_size=hidden, vocab_size=f.int("vocab_size", hi=1 << 26),
                     layers=layers, tie_word_embeddings=True, final_norm=Norm(hidden), hidden_act="silu",
                     norm_eps=f.float("rms_norm_eps", 1e-5), model_params=scales,
                     caveats=(f"AFM: the last {reuse} layers have no K/V projections and no cache: each attends over "
                              f"layer {n - reuse - 1}'s K/V (mlx-lm's KVReuseTransformerBlock); K and V are rounded to "
                              "an int8 grid by quant_key_scale / quant_value_scale but cached in the activation dtype, "
                              "as mlx-lm's KVCache keeps them",))
    numerics = replace(spec.numerics, rope_style=RopeStyle.PAIRS, qk_norm_after_rope=True,
                       runtime_unsupported="AFM's K/V reuse layers and int8 fake-quantised K/V")
    return replace(spec, numerics=numerics)


# ---- Lille 130M ----------------------------------------------------------------------------------


def build_lille(f: Fields, model_type: str) -> ModelSpec:
    hidden = f.int("n_embd")
    n = f.int("n_layer", hi=MAX_LAYERS)
    heads, kv, hd = _heads(f, hidden, "n_head", "n_kv_heads")
    # Lille130mMLP: 256 * round(int(8 * n_embd / 3) / 256), Python's round (half to even)
    inter = f.derived("intermediate_size", 256 * round(int(8 * hidden / 3) / 256),
                      "256 x round(int(8 x n_embd / 3) / 256)")
    if inter < 1:
        raise f.error("n_embd", f"({hidden}) gives an empty feed-forward (256 x round(int(8 x n_embd / 3) / 256) = 0)")
    theta = f.float("rope_theta", 10000.0)
    attn = Attention(hidden, heads, kv, hd, hd, fused_qkv=True, rotary_dim=hd, rope_theta=theta)
    layer = Layer(attn, MLP(hidden, inter), pre_norms(lambda: Norm(hidden)))
    if not read_tie(f, True):
        raise f.error("tie_word_embeddings", "is false, but Lille's logits are always tok_embeddings.as_linear "
                                             "(mlx-lm's Lille130m; LilleConfig forces the tie): no head is built")
    spec = ModelSpec(model_type=model_type, hidden_size=hidden, vocab_size=f.int("vocab_size", hi=1 << 26),
                     layers=(layer,) * n, tie_word_embeddings=True, final_norm=Norm(hidden),
                     hidden_act="silu", norm_eps=f.float("layer_norm_eps", 1e-5),
                     max_position_embeddings=f.int("block_size", 512, hi=1 << 40))
    return replace(spec, numerics=replace(spec.numerics, rope_style=RopeStyle.PAIRS))


# ---- Phixtral (phi-msft with num_local_experts) -------------------------------------------------


def build_phixtral(f: Fields, model_type: str) -> ModelSpec:
    """A ``phi-msft`` config with ``num_local_experts``: phi-2's parallel block with its MLP replaced by that many
    biased fc1 / fc2 experts behind a bias-free gate (mlx-lm's phixtral.py; the hub's modeling_phi.py of
    mlabonne/phixtral-*). Not registered: model_type ``phi-msft`` belongs to analysis/families/s28d_lmdeploy_mlc.py,
    which hands these here; its ``phi_config`` reads and checks the Phi fields both share."""
    from .s28d_lmdeploy_mlc import phi_config

    c = phi_config(f)
    hidden, heads, kv, act = (c["hidden_size"], c["num_attention_heads"], c["num_key_value_heads"], c["hidden_act"])
    hd = hidden // heads
    e = f.int("num_local_experts")
    k = f.int("num_experts_per_tok", 2)
    if k > e:
        raise f.error("num_experts_per_tok", f"({k}) exceeds num_local_experts ({e})")
    attn = Attention(hidden, heads, kv, hd, hd, q_bias=True, k_bias=True, v_bias=True, o_bias=True, fused_qkv=True,
                     rotary_dim=c["rotary_dim"], rope_theta=10000.0)
    ln = lambda: Norm(hidden, NormKind.LAYER, bias=True)  # noqa: E731
    layer = Layer(attn, MoE(hidden, e, k, c["intermediate_size"], gated=False, expert_bias=True, act=act),
                  (PlacedNorm("input_layernorm", "pre_mixer", ln()),), parallel=True)
    if c["tie_word_embeddings"]:
        raise f.error("tie_word_embeddings", "is true, but Phixtral's lm_head.linear has a bias a tied head would drop")
    spec = ModelSpec(model_type=model_type, hidden_size=hidden, vocab_size=c["vocab_size"],
                     layers=(layer,) * c["num_hidden_layers"], tie_word_embeddings=False, final_norm=ln(),
                     hidden_act=act,
                     norm_eps=c["layer_norm_eps"], lm_head_bias=True,
                     max_position_embeddings=c["max_position_embeddings"])
    # the top-k of the gate's logits, softmaxed over the chosen (phixtral's MOE.__call__)
    return replace(spec, numerics=replace(spec.numerics, router=RouterKind.TOPK_SOFTMAX))


# ---- Youtu-LLM under its original model_type -----------------------------------------------------

def build_youtu_llm(f: Fields, model_type: str) -> ModelSpec:
    """Youtu-LLM's fields with transformers' YoutuConfig defaults, which mlx-lm youtu_llm.py's ModelArgs share but for
    rope_theta (1.6e6) and mlp_bias; the shape fields (CORE_FIELDS) stay required, as for model_type youtu."""
    from . import deepseek
    from ..family_defaults import FAMILY_DEFAULTS
    from ..fields import CORE_FIELDS

    youtu = {k: v for k, v in FAMILY_DEFAULTS["youtu"].items() if k not in CORE_FIELDS and k != "rope_interleave"}
    for key, value in {**youtu, "rope_theta": 1600000.0, "mlp_bias": False}.items():
        f.defaults.setdefault(key, value)
    if f.raw("rope_interleave") is None:  # mlx-lm's name for it: rope_traditional (default true: interleaved pairs)
        f.defaults["rope_interleave"] = f.bool("rope_traditional", True)
    return deepseek.build_youtu(f, model_type)


# ---- Pixtral under its own model_type ------------------------------------------------------------


def pixtral_vision(top: dict, text_hidden: int, where: str) -> tuple:
    """A top-level ``pixtral`` config (mlx-lm's pixtral.py: a text_config it builds as Llama, untied, and
    ``vision_tower`` / ``multi_modal_projector`` weights it drops): transformers' LLaVA layout with a Pixtral tower,
    counted as model_type llava counts it. Without a Pixtral vision_config the tower's shape is unknown: refused."""
    from .. import vision
    from ..errors import UnsupportedModelError

    vc = top.get("vision_config")
    if not isinstance(vc, dict) or vc.get("model_type") != "pixtral":
        raise UnsupportedModelError(
            f"{where}: model_type 'pixtral' over a text_config needs a vision_config of model_type pixtral: the "
            "checkpoint's vision_tower and multi_modal_projector (which mlx-lm drops on load) are shaped by it",
            "a text-only count would fall short of the checkpoint, so none is given")
    return vision.llava_vision(top, text_hidden, where)


#: model_type -> builder, registered in analysis/families/__init__.py
BUILDERS = {"Klear": build_klear, "klear": build_klear, "afm7": build_afm7, "lille-130m": build_lille,
            "youtu_llm": build_youtu_llm}
