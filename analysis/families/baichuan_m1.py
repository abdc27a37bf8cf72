"""Baichuan-M1 (``baichuan_m1``, remote code: baichuan-inc/Baichuan-M1-14B-Base / -Instruct).

Counted from the hub's modeling_baichuan.py (``BaichuanM1ForCausalLM``), as vLLM's and mlx-lm's ``baichuan_m1``
ports build it: a Llama-style decoder (input_layernorm → attention → post_attention_layernorm → SwiGLU MLP of
``intermediate_size``, bias-free; RMSNorms; ``model.norm``) whose attention is ``analysis.mixers.conv_kv``'s:
one fused ``W_pack``, a causal ``conv_window``-tap conv over time on K and V per KV head (``conv_k`` /
``conv_v``), RoPE over the whole head (``rope_theta``). Layers listed in ``sliding_window_layers`` attend over
``sliding_window`` keys with their own head counts (``num_swa_attention_heads`` / ``num_swa_key_value_heads``,
head_dim hidden / those heads); the others are full attention with ``num_attention_heads`` /
``num_key_value_heads``. The lm_head is a ``NormHead``: untied, each row L2-normalised (as Baichuan 2's, done
once as the checkpoint is loaded).

Cache: per token, K and V of each layer's KV heads (sliding layers keep ``sliding_window`` tokens); per
sequence, each layer's last pre-conv K and V row. Baichuan-M1-14B: 20 full layers of 2 KV heads × 256 (2,048
bytes per token at bf16) and 20 sliding layers of 8 × 128 (4,096 bytes, 8,192 tokens), 122,880 bytes of conv
state per sequence. ``verify`` refuses the layer kind (the torch runtime does not run it).

No transformers class and no hub class defaults at hand: the shape fields are required (mlx-lm's ModelArgs has
no defaults for them either); ``num_swa_*`` fall back to the full layers' counts as mlx-lm's port does.
"""

from __future__ import annotations

from ..fields import REQUIRED, Fields
from ..mixers import ConvKVAttention
from ..spec import MLP, CheckpointLayout, Layer, ModelSpec, Norm
from .common import Traits, pre_norms, read_act, read_kv_heads, read_mha_core, read_tie
from .remote import BAICHUAN_LAYOUT

#: W_pack -> qkv_proj (Baichuan's layout); NormHead: lm_head rows normalised at load
LAYOUT = CheckpointLayout(modules=BAICHUAN_LAYOUT.modules, head_normalized=True)


def _swa_geometry(f: Fields, hidden: int, heads: int, kv: int) -> tuple[int, int]:
    """(query heads, KV heads) of the sliding layers; head_dim is hidden / heads (the hub's code checks it)."""
    swa_heads = f.int("num_swa_attention_heads", heads,
                      note="absent: num_attention_heads (mlx-lm's fallback; the hub's code requires it)")
    if hidden % swa_heads:
        raise f.error("num_swa_attention_heads", f"({swa_heads}) must divide hidden_size ({hidden}): the sliding "
                                                 "layers' head_dim is hidden_size / num_swa_attention_heads")
    swa_kv = f.int("num_swa_key_value_heads", kv,
                   note="absent: num_key_value_heads (mlx-lm's fallback; the hub's code requires it)")
    if swa_kv > swa_heads or swa_heads % swa_kv:
        raise f.error("num_swa_key_value_heads", f"({swa_kv}) must divide num_swa_attention_heads ({swa_heads})")
    return swa_heads, swa_kv


def build(f: Fields, model_type: str) -> ModelSpec:
    hidden, n_layers, heads, hd, vocab = read_mha_core(
        f, dict(hidden_size=REQUIRED, num_hidden_layers=REQUIRED, num_attention_heads=REQUIRED, vocab_size=REQUIRED),
        "the full layers' head_dim is hidden_size / num_attention_heads")
    kv = read_kv_heads(f, heads)
    intermediate = f.int("intermediate_size")
    act = read_act(f, Traits())  # hidden_act, default silu (vLLM's port runs only silu)
    theta = f.float("rope_theta", 1e5, note="absent: the hub's RotaryEmbedding default base")
    conv = f.int("conv_window", 2)
    if conv != 2:
        raise f.error("conv_window", f"is {conv}; Baichuan-M1's decode step keeps one previous K/V row: the hub's "
                                     "modeling_baichuan.py asserts conv_window == 2 (vLLM's port fixes it at 2)")
    swa_layers = f.int_list("sliding_window_layers", lo=0, hi=n_layers - 1) or []
    if len(set(swa_layers)) != len(swa_layers):
        raise f.error("sliding_window_layers", "lists a layer twice")
    full = ConvKVAttention(hidden, heads, kv, hd, hd, fused_qkv=True, rotary_dim=hd, rope_theta=theta,
                           conv_window=conv)
    sliding = None
    if swa_layers:
        window = f.int("sliding_window", hi=1 << 30)
        swa_heads, swa_kv = _swa_geometry(f, hidden, heads, kv)
        swa_hd = hidden // swa_heads
        sliding = ConvKVAttention(hidden, swa_heads, swa_kv, swa_hd, swa_hd, fused_qkv=True, window=window,
                                  rotary_dim=swa_hd, rope_theta=theta, conv_window=conv)
    if read_tie(f, False):
        raise f.error("tie_word_embeddings", "is true, but Baichuan-M1's NormHead (normalised lm_head rows) cannot "
                                             "share the embedding")
    mlp = MLP(hidden, intermediate, act=act)
    layers = tuple(Layer(sliding if i in swa_layers else full, mlp, pre_norms(lambda: Norm(hidden)))
                   for i in range(n_layers))
    return ModelSpec(
        model_type=model_type, hidden_size=hidden, vocab_size=vocab, layers=layers, tie_word_embeddings=False,
        final_norm=Norm(hidden), hidden_act=act, norm_eps=f.float("rms_norm_eps", 1e-6), checkpoint=LAYOUT,
    )
