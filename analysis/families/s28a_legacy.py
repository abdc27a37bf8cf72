"""Leftovers of earlier registry audits (llama.cpp's convert_hf_to_gguf.py registrations, vLLM's registry), counted
here or refused by name in analysis/families/s28a_refusals.py:

- Refact (``gpt_refact``; smallcloudai/Refact-1_6B-fim, remote code GPTRefactForCausalLM, llama.cpp's REFACT;
  counted from the hub's modeling_gpt_refact.py as its MLX port and vLLM's former gpt_refact.py restate it):
  ``n_layer`` blocks of a weight-only LayerNorm (no bias), multi-query attention (``q`` n_embd -> n_embd, one fused
  ``kv`` n_embd -> 2 x head_dim, ``c_proj``; all bias-free) with ALiBi and no RoPE, a second weight-only LayerNorm
  and a SwiGLU (``gate_up_proj`` n_embd -> 2 x f, ``c_proj`` f -> n_embd, f = 256 x ceil(int(2 x inner / 3) / 256),
  inner = n_inner or 4 x n_embd); ``ln_f`` and an untied bias-free ``lm_head``. Before: "required field
  'intermediate_size' is missing".
- RuGPT-3 XL (``rugpt3xl``; the converted ai-forever/rugpt3xl with remote code RuGPT3XLForCausalLM, llama.cpp's
  GPT2 arch): GPT-3-style pre-LN blocks (biased LayerNorms, biased q/k/v/o projections of hidden_size, a biased
  up/down MLP with GELU), learned absolute positions (``embed_positions``, max_position_embeddings rows), a final
  LayerNorm, the head tied when the config says so. Its ``sparse_mode`` layers only mask scores (the modeling file
  runs dense SDPA with a block-sparse mask), so they cache and compute as dense layers. Before: read as a generic
  Llama (RMSNorm, gated MLP, RoPE, no biases, no positions).
- state-spaces' Mamba / Mamba-2 checkpoints in mamba_ssm's own format (MambaLMHeadModel: ``d_model``, ``n_layer``,
  ``ssm_cfg``, ``rms_norm``, ``pad_vocab_size_multiple``, no model_type and no architectures): the same modules as
  transformers' MambaForCausalLM / Mamba2ForCausalLM (mamba_ssm's mixer_seq_simple.py: an embedding of vocab_size
  padded up to pad_vocab_size_multiple, per layer an RMSNorm and the mixer, ``norm_f``, the head tied unless
  tie_embeddings is false; Mamba's dt_rank ceil(d_model / 16), d_state 16, d_conv 4, expand 2; Mamba-2's d_state 128,
  headdim 64, ngroups 1, a gated RMSNorm), so the config is translated onto transformers' and counted by planner's
  ``mamba`` / ``mamba2`` families. Before: "required field 'model_type' is missing". Hybrids (``attn_layer_idx``),
  ``d_intermediate`` MLPs and LayerNorm models (``rms_norm`` false) are refused: transformers' classes build none.
"""

from __future__ import annotations

import math

from ..errors import UnsupportedModelError
from ..fields import MAX_LAYERS, Fields, short
from ..mixers import Attention
from ..spec import MLP, Layer, ModelSpec, Norm, NormKind, PlacedNorm
from .common import read_tie, storage_fields

_HINT = "a generic Llama-style analysis would miscount it, so none is given"


# ---- Refact --------------------------------------------------------------------------------------


def build_refact(f: Fields, model_type: str) -> ModelSpec:
    hidden = f.int("n_embd")
    n = f.int("n_layer", hi=MAX_LAYERS)
    heads = f.int("n_head")
    if hidden % heads:
        raise f.error("n_head", f"({heads}) must divide n_embd ({hidden})")
    if not f.bool("multi_query", True):
        raise f.error("multi_query", "is false: Refact's attention is built multi-query (one K/V head) whatever "
                                     "the flag says, and no checkpoint with another layout was at hand")
    hd = hidden // heads
    inner = f.int("n_inner") if f.raw("n_inner") is not None else 4 * hidden
    ffn = f.derived("intermediate_size", 256 * -(-int(2 * inner / 3) // 256),
                    "256 x ceil(int(2 x (n_inner or 4 x n_embd) / 3) / 256), Refact's MLP")
    ln = lambda: Norm(hidden, NormKind.LAYER)  # noqa: E731  (LayerNormNoBias: a weight, no bias)
    attn = Attention(hidden, heads, 1, hd, hd, alibi=True)
    layer = Layer(attn, MLP(hidden, ffn, fused_gate_up=True), (PlacedNorm("ln_1", "pre_mixer", ln()),
                                                               PlacedNorm("ln_2", "pre_ffn", ln())))
    if f.bool("tie_word_embeddings", False):
        raise f.error("tie_word_embeddings", "is true, but GPTRefactForCausalLM builds an untied lm_head")
    return ModelSpec(model_type=model_type, hidden_size=hidden, vocab_size=f.int("vocab_size", hi=1 << 26),
                     layers=(layer,) * n, tie_word_embeddings=False, final_norm=ln(), hidden_act="silu",
                     norm_eps=f.float("layer_norm_epsilon", 1e-5),
                     max_position_embeddings=f.int("n_positions", 4096, hi=1 << 40))


# ---- RuGPT-3 XL ----------------------------------------------------------------------------------


def build_rugpt3xl(f: Fields, model_type: str) -> ModelSpec:
    hidden = f.int("hidden_size")
    n = f.int("num_hidden_layers", hi=MAX_LAYERS)
    heads = f.int("num_attention_heads")
    if hidden % heads:
        raise f.error("num_attention_heads", f"({heads}) must divide hidden_size ({hidden})")
    hd = hidden // heads
    act = f.str("hidden_act", "gelu_new")
    sparse = f.str("sparse_mode", "none")
    if sparse not in ("none", "alternating", "all"):
        raise f.error("sparse_mode", f"is {sparse!r}; RuGPT3XLModel knows none, alternating and all")
    ln = lambda: Norm(hidden, NormKind.LAYER, bias=True)  # noqa: E731
    attn = Attention(hidden, heads, heads, hd, hd, q_bias=True, k_bias=True, v_bias=True, o_bias=True)
    norms = (PlacedNorm("input_layernorm", "pre_mixer", ln()), PlacedNorm("post_attention_layernorm", "pre_ffn", ln()))
    layer = Layer(attn, MLP(hidden, f.int("intermediate_size"), gated=False, bias=True, act=act), norms)
    positions = f.int("max_position_embeddings", 2048, hi=1 << 24)
    caveats = ()
    if sparse != "none":
        caveats = (f"sparse_mode {sparse}: those layers apply a block-sparse mask (sparse_block_size blocks) to dense "
                   "attention scores, as RuGPT3XLAttention computes them, so they are counted, cached and traced as "
                   "dense attention",)
    return ModelSpec(model_type=model_type, hidden_size=hidden, vocab_size=f.int("vocab_size", hi=1 << 26),
                     layers=(layer,) * n, tie_word_embeddings=read_tie(f, False), final_norm=ln(), hidden_act=act,
                     norm_eps=f.float("layer_norm_eps", 1e-5), position_embeddings=positions,
                     max_position_embeddings=positions, caveats=caveats)


# ---- mamba_ssm's MambaLMHeadModel config (no model_type) -----------------------------------------

#: the fields that name a mamba_ssm MambaConfig (mamba_ssm/models/config_mamba.py) when there is no model_type
MAMBA_SSM_KEYS = ("d_model", "n_layer", "ssm_cfg")


def is_mamba_ssm(cfg: dict) -> bool:
    """A state-spaces checkpoint's config.json: mamba_ssm's MambaConfig, no model_type, no architectures."""
    return not cfg.get("model_type") and not cfg.get("architectures") and all(k in cfg for k in MAMBA_SSM_KEYS)


def mamba_ssm_config(cfg: dict, where: str) -> dict:
    """mamba_ssm's MambaConfig as transformers' MambaConfig / Mamba2Config (module doc)."""
    f = Fields(cfg, where)
    ssm = f.raw("ssm_cfg")
    if not isinstance(ssm, dict):
        raise f.error("ssm_cfg", f"must be an object of the mixer's settings, got {short(ssm)}")
    if f.raw("attn_layer_idx"):
        raise UnsupportedModelError(
            f"{where}: a mamba_ssm checkpoint with attn_layer_idx {short(f.raw('attn_layer_idx'))} (a Mamba-attention "
            "hybrid, MambaLMHeadModel with attn_cfg layers) is not supported yet: transformers' Mamba classes build no "
            "attention layers and planner has no family for mamba_ssm's hybrid layout", _HINT)
    if f.int("d_intermediate", 0, lo=0):
        raise UnsupportedModelError(
            f"{where}: a mamba_ssm checkpoint with d_intermediate {f.raw('d_intermediate')} (a gated MLP after every "
            "mixer) is not supported yet: transformers' Mamba classes build no MLP", _HINT)
    if not f.bool("rms_norm", True):
        raise UnsupportedModelError(
            f"{where}: a mamba_ssm checkpoint with rms_norm false (biased LayerNorms) is not supported yet: "
            "transformers' Mamba classes build RMSNorms only", _HINT)
    hidden = f.int("d_model")
    multiple = f.int("pad_vocab_size_multiple", 8)
    vocab = f.int("vocab_size", 50277, hi=1 << 26)
    vocab += (multiple - vocab % multiple) % multiple  # MambaLMHeadModel pads the vocabulary up
    layer = ssm.get("layer", "Mamba1")
    unknown = sorted(set(ssm) - {"layer", "d_state", "d_conv", "expand", "dt_rank", "headdim", "ngroups", "bias",
                                 "conv_bias", "rmsnorm", "dt_min", "dt_max", "dt_init", "dt_scale", "dt_init_floor",
                                 "dt_limit", "A_init_range", "D_has_hdim", "norm_before_gate", "chunk_size",
                                 "use_fast_path", "learnable_init_states", "activation"})
    if layer not in ("Mamba1", "Mamba2") or unknown or ssm.get("D_has_hdim") or ssm.get("rmsnorm") is False:
        what = f"layer {layer!r}" if layer not in ("Mamba1", "Mamba2") else \
            f"ssm_cfg fields {', '.join(unknown)}" if unknown else "D_has_hdim / rmsnorm false"
        raise UnsupportedModelError(f"{where}: a mamba_ssm checkpoint whose ssm_cfg sets {what} is not supported: "
                                    "transformers' Mamba / Mamba-2 classes (the shapes planner counts) build neither",
                                    _HINT)
    out = {"hidden_size": hidden, "num_hidden_layers": f.int("n_layer", hi=MAX_LAYERS), "vocab_size": vocab,
           "layer_norm_epsilon": f.float("norm_epsilon", 1e-5), "tie_word_embeddings": f.bool("tie_embeddings", True),
           "hidden_act": "silu", "residual_in_fp32": f.bool("residual_in_fp32", True)}
    s = Fields(ssm, f"{where}: ssm_cfg", nested=True)  # the mixer's settings, checked under their own names
    expand = s.int("expand", 2)
    mixer = dict(conv_kernel=s.int("d_conv", 4), expand=expand, use_bias=s.bool("bias", False),
                 use_conv_bias=s.bool("conv_bias", True))
    if layer == "Mamba1":
        rank = math.ceil(hidden / 16) if s.raw("dt_rank") in (None, "auto") else s.int("dt_rank")
        out.update(model_type="mamba", state_size=s.int("d_state", 16), time_step_rank=rank, **mixer)
    else:
        headdim = s.int("headdim", 64)
        if (expand * hidden) % headdim:
            raise s.error("headdim", f"({headdim}) must divide expand x d_model ({expand * hidden})")
        out.update(model_type="mamba2", state_size=s.int("d_state", 128), head_dim=headdim,
                   num_heads=expand * hidden // headdim, n_groups=s.int("ngroups", 1),
                   chunk_size=s.int("chunk_size", 256), **mixer)
    out.update(storage_fields(cfg))
    return out


def translate_mamba_ssm(cfg: dict, where: str) -> tuple[dict, str]:
    """(transformers' config, the caveat saying so) for a mamba_ssm config (``is_mamba_ssm``)."""
    out = mamba_ssm_config(cfg, where)
    return out, ("a state-spaces mamba_ssm config (MambaLMHeadModel: d_model, n_layer, ssm_cfg; no model_type) "
                 f"read as transformers' {out['model_type']} with the same modules (vocab_size {out['vocab_size']} "
                 "after mamba_ssm's padding to pad_vocab_size_multiple)")


#: model_type -> builder, registered in analysis/families/__init__.py
BUILDERS = {"gpt_refact": build_refact, "rugpt3xl": build_rugpt3xl}
