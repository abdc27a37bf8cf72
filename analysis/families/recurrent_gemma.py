"""RecurrentGemma (Google RecurrentGemma-2B / 9B, the Griffin architecture; transformers' ``recurrent_gemma``).

Every residual block is ``temporal_pre_norm`` → a temporal block → residual, ``channel_pre_norm`` → a GeGLU MLP →
residual. The temporal block of layer i is ``block_types[i % len(block_types)]`` (class default recurrent,
recurrent, attention):

- ``recurrent``: Griffin's recurrent block, the RG-LRU behind a temporal conv in ``lru_width`` channels
  (``analysis.mixers.rglru``), with a fixed state per sequence;
- ``attention``: local (sliding-window) attention over ``attention_window_size`` keys, ``num_key_value_heads``
  K/V heads (MQA in the published models), q/k/v biased by ``attention_bias``, o_proj always biased, RoPE on
  ``partial_rotary_factor`` (class default 0.5) of ``head_dim`` (the config's, else hidden_size / heads).

The MLP is ``intermediate_size / 2`` wide (transformers halves it), all three projections biased, GELU (tanh).
Norms are Gemma's RMSNorms scaling by ``1 + weight``; the embedding is scaled by ``sqrt(hidden_size)``
(rounded to bf16 in transformers), the logits soft-capped at ``logits_soft_cap``, lm_head tied to the embedding.
"""

from __future__ import annotations

import math

from ..fields import MAX_LAYERS, Fields
from ..mixers import Attention
from ..mixers.rglru import RGLRU
from ..spec import MLP, CheckpointLayout, Layer, ModelSpec, Norm, PlacedNorm
from .common import read_rotary, read_tie

#: the checkpoint's names -> ours (the temporal block is self_attn on attention layers, mixer on recurrent ones)
LAYOUT = CheckpointLayout(
    renames=(("model.final_norm.", "model.norm."),),
    modules=tuple((f".temporal_block.{p}.", f".self_attn.{p}.") for p in ("q_proj", "k_proj", "v_proj", "o_proj"))
    + ((".temporal_block.", ".mixer."), (".mlp_block.", ".mlp.")))

BLOCK_TYPES = ("recurrent", "attention")
#: RecurrentGemmaConfig's block_types (a tuple: not among the generated scalar defaults)
DEFAULT_BLOCK_TYPES = ["recurrent", "recurrent", "attention"]


def _block_types(f: Fields, n_layers: int) -> list[str]:
    if f.cfg.get("block_types") is None:
        types = f.defaulted("block_types", list(DEFAULT_BLOCK_TYPES), "absent: the recurrent_gemma class default")
    else:
        types = f.list("block_types")
    if not types:
        raise f.error("block_types", "is empty: every layer needs a temporal block ('recurrent' or 'attention')")
    for j, t in enumerate(types):
        if t not in BLOCK_TYPES:
            raise f.error("block_types", f"entry {j} is {t!r}; expected 'recurrent' or 'attention'")
    if n_layers > 100 * len(types):  # transformers repeats the pattern 100 times: more layers have no type
        raise f.error("block_types", f"({len(types)} entries) is repeated 100 times by transformers, fewer than "
                      f"num_hidden_layers ({n_layers})")
    return [types[i % len(types)] for i in range(n_layers)]


def build(f: Fields, model_type: str) -> ModelSpec:
    hidden = f.int("hidden_size")
    n_layers = f.int("num_hidden_layers", hi=MAX_LAYERS)
    vocab = f.int("vocab_size", hi=1 << 26)
    heads = f.int("num_attention_heads")
    types = _block_types(f, n_layers)
    mixers: dict[str, object] = {}
    if "attention" in types:
        kv = f.int("num_key_value_heads", heads, note="absent: equal to num_attention_heads (no GQA)")
        if kv > heads or heads % kv:
            raise f.error("num_key_value_heads", f"({kv}) must divide num_attention_heads ({heads})")
        if f.has("head_dim"):
            hd = f.int("head_dim")
        elif hidden < heads:
            raise f.error("num_attention_heads", f"({heads}) exceeds hidden_size ({hidden}): head_dim would be 0")
        else:
            hd = f.derived("head_dim", hidden // heads, "hidden_size // num_attention_heads (transformers)")
        params = f.raw("rope_parameters")
        if isinstance(params, dict) and params.get("rope_type", "default") != "default":
            raise f.error("rope_parameters", f"has rope_type {params.get('rope_type')!r}; RecurrentGemma's rotary "
                          "embedding supports only 'default'")
        theta, rotary_dim, _ = read_rotary(f, hd, 0.5)
        window = (f.int("attention_window_size", hi=1 << 30) if f.cfg.get("attention_window_size") is not None
                  or f.cfg.get("sliding_window") is None else
                  f.int("sliding_window", hi=1 << 30, note="RecurrentGemmaConfig's alias of attention_window_size"))
        bias = f.bool("attention_bias", False)
        mixers["attention"] = Attention(hidden_size=hidden, num_attention_heads=heads, num_key_value_heads=kv,
                                        head_dim=hd, v_head_dim=hd, q_bias=bias, k_bias=bias, v_bias=bias, o_bias=True,
                                        window=window, rotary_dim=rotary_dim, rope_theta=theta)
    if "recurrent" in types:
        lru = f.int("lru_width", hidden, note="absent: hidden_size")
        if lru % heads:
            raise f.error("lru_width", f"({lru}) must split into num_attention_heads ({heads}) blocks: the RG-LRU's "
                          "gates are block-diagonal, one block per head")
        mixers["recurrent"] = RGLRU(hidden, lru, heads, f.int("conv1d_width", 4, hi=1 << 12))
    inter = f.int("intermediate_size")
    if inter < 2:
        raise f.error("intermediate_size", f"({inter}) gives an empty MLP: transformers builds intermediate_size // 2")
    width = f.derived("ffn_dim", inter // 2, "intermediate_size // 2 (RecurrentGemmaMlp)")
    act = f.str("hidden_activation", "gelu_pytorch_tanh")
    mlp = MLP(hidden, width, gated=True, bias=True, act=act)
    norms = (PlacedNorm("temporal_pre_norm", "pre_mixer", Norm(hidden)),
             PlacedNorm("channel_pre_norm", "pre_ffn", Norm(hidden)))
    layers = tuple(Layer(mixers[t], mlp, norms) for t in types)  # type: ignore[arg-type]
    return ModelSpec(model_type=model_type, hidden_size=hidden, vocab_size=vocab, layers=layers,
                     tie_word_embeddings=read_tie(f, True), final_norm=Norm(hidden), hidden_act=act,
                     norm_eps=f.float("rms_norm_eps", 1e-6), norm_offset=1.0, embedding_multiplier=math.sqrt(hidden),
                     final_logit_softcapping=f.float("logits_soft_cap", 30.0), checkpoint=LAYOUT)
