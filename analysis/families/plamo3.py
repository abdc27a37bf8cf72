"""Preferred Networks' PLaMo 3 (``plamo3``: pfnet/plamo-3-nict-2b-base, -8b-base, -31b-base; remote code, no
transformers class), read as the hub's configuration_plamo3.py (``Plamo3Config``'s defaults are the defaults here)
and vLLM's vllm/model_executor/models/plamo3.py build it (vLLM's weight shapes are what a checkpoint loads into).

A Gemma-3-like decoder of attention layers only: layer ``i`` attends over all keys when
``(i + 1) % sliding_window_pattern == 0``, else over a sliding window of ``window_size`` keys (vLLM's
``per_layer_sliding_window``; SGLang passes ``window_size - 1`` to its exclusive window: the same keys), which is
all those layers cache. Every layer is ``pre_mixer_norm`` -> attention -> ``post_mixer_norm`` -> residual add,
``pre_mlp_norm`` -> SwiGLU MLP (one fused ``gate_up_proj``, no biases) -> ``post_mlp_norm`` -> residual add; RMSNorms
whose scale is offset + weight (1, 1/5, 1, 1/5^1.5; the final norm and q/k norms 1).

Attention: one fused ``qkv_proj`` (``num_attention_heads`` / ``num_key_value_heads`` heads of ``head_dim``), ``o_proj``,
no biases; ``q_norm`` / ``k_norm`` RMSNorms over ``head_dim`` (one weight shared by the heads) before full-head RoPE,
base ``rope_theta`` on the full layers (YaRN by ``rope_scaling_factor`` from ``initial_context_length`` when the
factor is not 1) and ``rope_local_theta`` on the sliding ones. The embedding is tied by default.

Legacy keys as Plamo3Config reads them: ``sliding_window`` (an int, or a per-layer list whose windows agree) for
``window_size``, ``rope_global_theta`` for ``rope_theta``. The config classes published with the checkpoints disagree
on ``window_size``'s default (128 / 2048), so a config without one is refused rather than guessed.

The count is exact from vLLM's module shapes for any config (tests/test_plamo3.py checks a hand count on
Plamo3Config's defaults and on the shapes the 2B's ports name: 24 layers, hidden 2560, 4 KV heads of 128, window
2048); the checkpoints' config.json files (gated on the hub) were not reachable, so no total is matched against a
published size yet. ``verify`` refuses the offset norms.

Checkpoint names: ``model.layers.layers.N.*`` (a ``Plamo3Decoder`` holds the layers), attention under ``mixer``.
"""

from __future__ import annotations

from dataclasses import replace

from ..fields import MAX_LAYERS, Fields, short
from ..mixers import Attention
from ..spec import MLP, CheckpointLayout, Layer, ModelSpec, Norm, Numerics, PlacedNorm
from .common import read_eps, read_tie
from .plamo import read_shape

#: Plamo3Config's defaults (the hub's configuration code; no transformers class to generate them from)
PLAMO3_DEFAULTS = {"hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 4,
                   "head_dim": 128, "sliding_window_pattern": 8, "intermediate_size": 13312, "vocab_size": 32000,
                   "max_position_embeddings": 2048}

PLAMO3_LAYOUT = CheckpointLayout(renames=(("model.layers.layers.", "model.layers."),),
                                 modules=((".mixer.", ".self_attn."),))

_OFFSETS = (("pre_mixer_norm", 1.0), ("post_mixer_norm", 1.0 / 5), ("pre_mlp_norm", 1.0),
            ("post_mlp_norm", 1.0 / 5 ** 1.5), ("norm", 1.0), ("q_norm", 1.0), ("k_norm", 1.0))


def _int(f: Fields, key: str, **kw) -> int:
    return f.int(key, PLAMO3_DEFAULTS[key], **kw)


def plamo3_is_full(n_layers: int, pattern: int) -> list[bool]:
    """configuration_plamo3.py's ``is_full_attn`` for every layer."""
    return [(i + 1) % pattern == 0 for i in range(n_layers)]


def _window(f: Fields) -> int:
    if f.has("window_size"):
        return f.int("window_size")
    legacy = f.raw("sliding_window")
    if isinstance(legacy, list):
        sizes = {v for v in legacy if v is not None}
        if len(sizes) != 1 or not all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in sizes):
            raise f.error("sliding_window", f"must list one window size (and nulls for full layers), got {short(legacy)}")
        return f.derived("window_size", sizes.pop(), "the legacy per-layer sliding_window's windows")
    if legacy is not None:
        return f.int("sliding_window")
    raise f.error("window_size", "is missing: Plamo3Config's published versions default it differently (128 or "
                                 "2048), so the config must give it (or the legacy sliding_window)")


def _rope_theta(f: Fields) -> float:
    if f.has("rope_theta"):
        return f.float("rope_theta")
    if f.has("rope_global_theta"):
        return f.float("rope_global_theta")
    return f.float("rope_theta", 150_000.0)


def build(f: Fields, model_type: str) -> ModelSpec:
    hidden, n_layers, vocab, heads, kv = read_shape(f, PLAMO3_DEFAULTS)
    hd = _int(f, "head_dim")
    pattern = _int(f, "sliding_window_pattern", hi=MAX_LAYERS)
    window = _window(f)
    if f.bool("attention_bias", False):
        raise f.error("attention_bias", "is true, but PLaMo 3's qkv_proj / o_proj have no bias (vLLM's plamo3.py "
                                        "builds them bias-free)")
    act = f.str("hidden_activation", "swiglu")
    if act != "swiglu":
        raise f.error("hidden_activation", f"is {act!r}; PLaMo 3's MLP is SwiGLU only")
    factor = f.float("rope_scaling_factor", 1.0)
    scaling: tuple = ()
    if factor != 1:
        if not f.has("initial_context_length"):
            raise f.error("initial_context_length", f"is missing; rope_scaling_factor {factor:g} needs it (YaRN's "
                                                    "original_max_position_embeddings)")
        scaling = (("beta_fast", 32.0), ("beta_slow", 1.0), ("factor", factor),
                   ("original_max_position_embeddings", f.int("initial_context_length")), ("rope_type", "yarn"),
                   ("truncate", False))
    attn = Attention(hidden_size=hidden, num_attention_heads=heads, num_key_value_heads=kv, head_dim=hd,
                     v_head_dim=hd, fused_qkv=True, q_norm_dim=hd, k_norm_dim=hd, rotary_dim=hd,
                     rope_theta=_rope_theta(f))
    local = replace(attn, window=window, rope_theta=f.float("rope_local_theta", 10_000.0))
    norms = (PlacedNorm("pre_mixer_norm", "pre_mixer", Norm(hidden)),
             PlacedNorm("post_mixer_norm", "post_mixer", Norm(hidden)),
             PlacedNorm("pre_mlp_norm", "pre_ffn", Norm(hidden)),
             PlacedNorm("post_mlp_norm", "post_ffn", Norm(hidden)))
    mlp = MLP(hidden, _int(f, "intermediate_size"), fused_gate_up=True, act="silu")
    layers = tuple(Layer(attn if full else local, mlp, norms) for full in plamo3_is_full(n_layers, pattern))
    return ModelSpec(model_type=model_type, hidden_size=hidden, vocab_size=vocab, layers=layers,
                     tie_word_embeddings=read_tie(f, True), final_norm=Norm(hidden), hidden_act="silu",
                     norm_eps=read_eps(f), numerics=Numerics(norm_offsets=_OFFSETS), checkpoint=PLAMO3_LAYOUT,
                     rope_scaling=scaling, max_position_embeddings=_int(f, "max_position_embeddings", hi=1 << 30))
