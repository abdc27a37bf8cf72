"""Preferred Networks' PLaMo-2 (``plamo2``: pfnet/plamo-2-1b, plamo-2-8b; remote code, no transformers class), read
as the hub's modeling_plamo.py / configuration (``Plamo2Config``'s defaults are the defaults here) and vLLM's
vllm/model_executor/models/plamo2.py build it (vLLM's weight shapes are what a checkpoint loads into).

A Samba-style hybrid: layer ``i`` is Mamba when ``i % mamba_step != mamba_step // 2`` (with no more than
``mamba_step // 2`` layers, only the last layer is attention; ``mamba_enabled`` false: every layer attention, as the
hub's ``is_mamba``), else attention. Every layer is ``pre_mixer_norm`` -> mixer -> ``post_mixer_norm`` -> residual
add, ``pre_mlp_norm`` -> SwiGLU MLP (one fused ``gate_up_proj``) -> ``post_mlp_norm`` -> residual add; RMSNorms whose
scale is offset + weight (1, 1/5, 1, 1/5^1.5; the final norm 1).

- Mamba (``analysis.mixers.plamo2``): d_inner = ``mamba_num_heads · hidden_size_per_head``, state ``mamba_d_state``,
  conv ``mamba_d_conv``, dt_dim ``max(64, hidden_size // 16)``.
- Attention: one fused ``qkv_proj`` (``num_attention_heads`` / ``num_key_value_heads`` heads of
  ``hidden_size_per_head``), ``o_proj``, no biases; per-head q/k RMSNorm weights of shape (heads, head_dim)
  (``q_weight`` / ``k_weight``) before full-head RoPE. Layers outside ``full_attention_idx`` (every layer in the
  published configs) attend over a sliding window of ``attention_window_size`` keys and cache that many (the hub's
  ``PlamoCache.update_attention``; vLLM applies the config's ``sliding_window``, set from attention_window_size, to
  every attention layer). The window counts the query (vLLM's convention; the hub's mask lets a query see the
  window cached keys and itself, one more).

Checkpoint names: ``model.layers.layers.N.*`` (a ``PlamoDecoder`` holds the layers); attention and Mamba both
under ``mixer``.
"""

from __future__ import annotations

from dataclasses import replace

from ..fields import MAX_LAYERS, Fields
from ..mixers import Attention, Plamo2Mamba
from ..spec import MLP, CheckpointLayout, Layer, ModelSpec, Norm, Numerics, PlacedNorm
from .common import read_eps, read_rotary, read_tie

#: Plamo2Config's defaults (the hub's configuration code; no transformers class to generate them from)
PLAMO2_DEFAULTS = {"hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 4,
                   "hidden_size_per_head": 128, "attention_window_size": 2048, "mamba_d_state": 64, "mamba_d_conv": 4,
                   "mamba_num_heads": 64, "mamba_step": 2, "mamba_chunk_size": 256, "intermediate_size": 13312,
                   "vocab_size": 32000}

#: the checkpoint's names -> ours (vLLM's load_weights renames A_log, the dt/B/C norm weights and q/k_weight alike)
PLAMO2_LAYOUT = CheckpointLayout(
    renames=(("model.layers.layers.", "model.layers."),),
    modules=((".mixer.qkv_proj.", ".self_attn.qkv_proj."), (".mixer.o_proj.", ".self_attn.o_proj."),
             (".mixer.q_weight", ".self_attn.q_norm.weight"), (".mixer.k_weight", ".self_attn.k_norm.weight")))

_OFFSETS = (("pre_mixer_norm", 1.0), ("post_mixer_norm", 1.0 / 5), ("pre_mlp_norm", 1.0),
            ("post_mlp_norm", 1.0 / 5 ** 1.5), ("norm", 1.0))


def _int(f: Fields, key: str, **kw) -> int:
    return f.int(key, PLAMO2_DEFAULTS[key], **kw)


def read_shape(f: Fields, defaults: dict) -> tuple[int, int, int, int, int]:
    """PLaMo 2's and PLaMo 3's hidden size, layers, vocabulary, query heads and KV heads (their config classes'
    ``defaults`` where absent), the KV heads checked to divide the query heads."""
    def get(key: str, **kw) -> int:
        return f.int(key, defaults[key], **kw)
    hidden, n_layers = get("hidden_size"), get("num_hidden_layers", hi=MAX_LAYERS)
    vocab, heads, kv = get("vocab_size", hi=1 << 26), get("num_attention_heads"), get("num_key_value_heads")
    if kv > heads or heads % kv:
        raise f.error("num_key_value_heads", f"({kv}) must divide num_attention_heads ({heads})")
    return hidden, n_layers, vocab, heads, kv


def plamo2_is_mamba(n_layers: int, step: int, enabled: bool) -> list[bool]:
    """The hub's ``is_mamba`` (vLLM's too, which ignores mamba_enabled) for every layer."""
    if not enabled:
        return [False] * n_layers
    if n_layers <= step // 2:
        return [i != n_layers - 1 for i in range(n_layers)]
    return [i % step != step // 2 for i in range(n_layers)]


def build_plamo2(f: Fields, model_type: str) -> ModelSpec:
    hidden, n_layers, vocab, heads, kv = read_shape(f, PLAMO2_DEFAULTS)
    hd = _int(f, "hidden_size_per_head")
    window = _int(f, "attention_window_size")
    full = set(f.int_list("full_attention_idx", lo=0, hi=MAX_LAYERS) or [])
    step = _int(f, "mamba_step", lo=2, hi=MAX_LAYERS)  # the hub's and vLLM's is_mamba assert mamba_step > 1
    enabled = f.bool("mamba_enabled", True)
    inter = _int(f, "intermediate_size")
    theta, rotary_dim, scaling = read_rotary(f, hd)  # vLLM: get_rope(rope_parameters); the hub's code: plain RoPE
    attn = Attention(hidden_size=hidden, num_attention_heads=heads, num_key_value_heads=kv, head_dim=hd,
                     v_head_dim=hd, fused_qkv=True, q_norm_dim=hd, k_norm_dim=hd, qk_norm_per_head=True,
                     rotary_dim=rotary_dim, rope_theta=theta)
    types = plamo2_is_mamba(n_layers, step, enabled)
    mamba = None
    if any(types):
        m_heads = _int(f, "mamba_num_heads")
        mamba = Plamo2Mamba(hidden_size=hidden, version=2, intermediate_size=m_heads * hd,
                            state_size=_int(f, "mamba_d_state"), conv_kernel=_int(f, "mamba_d_conv"),
                            num_heads=m_heads, head_dim=hd, n_groups=1,
                            dt_rank=f.derived("mamba_dt_dim", max(64, hidden // 16), "max(64, hidden_size // 16)"),
                            conv_bias=False, gated_norm=False, chunk_size=_int(f, "mamba_chunk_size"))
    norms = (PlacedNorm("pre_mixer_norm", "pre_mixer", Norm(hidden)),
             PlacedNorm("post_mixer_norm", "post_mixer", Norm(hidden)),
             PlacedNorm("pre_mlp_norm", "pre_ffn", Norm(hidden)),
             PlacedNorm("post_mlp_norm", "post_ffn", Norm(hidden)))
    mlp = MLP(hidden, inter, fused_gate_up=True, act="silu")
    # Plamo2Config: max(10 · 2^20, max_position_embeddings) ("samba should have extrapolation abilities")
    max_pos = f.derived("max_position_embeddings", max(10 * 1024 * 1024, f.int("max_position_embeddings", 2048)),
                        "max(10485760, the config's): Plamo2Config's")
    layers = []
    for i, is_m in enumerate(types):
        mixer = mamba if is_m else (attn if i in full else replace(attn, window=window))
        layers.append(Layer(mixer, mlp, norms))
    return ModelSpec(model_type=model_type, hidden_size=hidden, vocab_size=vocab, layers=tuple(layers),
                     tie_word_embeddings=read_tie(f, True), final_norm=Norm(hidden), hidden_act="silu",
                     norm_eps=read_eps(f), numerics=Numerics(norm_offsets=_OFFSETS), checkpoint=PLAMO2_LAYOUT,
                     rope_scaling=scaling, max_position_embeddings=max_pos)


# ---- PLaMo-1 -------------------------------------------------------------------------------------


def build_plamo(f: Fields, model_type: str) -> ModelSpec:
    """PLaMo-1 (``plamo``: pfnet/plamo-13b; remote code, the hub's modeling_plamo.py; vLLM has no implementation):
    Llama's attention and SwiGLU MLP (``gate_proj`` / ``up_proj`` / ``down_proj``), bias-free, in a *parallel*
    block: one RMSNorm (``norm``) feeds both, ``x + attn(norm(x)) + mlp(norm(x))``; untied ``lm_head`` by default.
    head_dim is hidden / heads; K and V have ``ceil(heads / n_shared_head)`` heads (the config's
    ``num_key_value_heads`` is ignored by the hub's code: plamo-13b says 40 where its checkpoint has 5), each query
    head h reading KV head h mod that (the copies are tiled, not interleaved as transformers' repeat_kv). RoPE over
    the whole head at base 10000 (hard-coded). The hub's code caches K and V after that expansion (n_shared_head
    times the shared heads' bytes); the KV here is the shared heads an engine keeps (llama.cpp's head_count_kv)."""
    hidden = f.int("hidden_size", 4096)
    n_layers = f.int("num_hidden_layers", 32, hi=MAX_LAYERS)
    vocab = f.int("vocab_size", 32000, hi=1 << 26)
    heads = f.int("num_attention_heads", 32)
    shared = f.int("n_shared_head", 8)
    if heads % shared:
        raise f.error("n_shared_head", f"({shared}) must divide num_attention_heads ({heads}): the hub's code tiles "
                                       "the shared K/V heads n_shared_head times to the query heads")
    if hidden % heads:
        raise f.error("num_attention_heads", f"({heads}) must divide hidden_size ({hidden})")
    hd = hidden // heads
    kv = f.derived("num_key_value_heads", heads // shared, "num_attention_heads / n_shared_head (the hub's "
                                                           "Attention; the config's own field is ignored)")
    attn = Attention(hidden_size=hidden, num_attention_heads=heads, num_key_value_heads=kv, head_dim=hd,
                     v_head_dim=hd, rotary_dim=hd, rope_theta=10000.0)
    mlp = MLP(hidden, f.int("intermediate_size", 13312), act="silu")
    layer = Layer(attn, mlp, (PlacedNorm("input_layernorm", "pre_mixer", Norm(hidden)),), parallel=True)  # its `norm`
    return ModelSpec(model_type=model_type, hidden_size=hidden, vocab_size=vocab, layers=(layer,) * n_layers,
                     tie_word_embeddings=read_tie(f, False), final_norm=Norm(hidden), hidden_act="silu",
                     norm_eps=read_eps(f), max_position_embeddings=f.int("max_position_embeddings", 2048),
                     caveats=(f"{f.where}: PLaMo-1's own code caches K and V expanded to every query head "
                              f"({shared}x the shared heads counted here); its checkpoint names "
                              "(model.layers.layers.N) and tiled K/V heads are not mapped for loading",))
