"""NVIDIA Jet-Nemotron (``jet_nemotron``, remote code: jet-ai/Jet-Nemotron-2B / -4B).

Counted from NVlabs/Jet-Nemotron ``jetai/modeling/hf/modeling_jet_nemotron.py`` (a Qwen2 decoder), ``jet_block.py``
and ``dynamic_conv.py``. Every layer is Qwen2's: input_layernorm → mixer → post_attention_layernorm → SwiGLU MLP
(``intermediate_size``, no biases), RMSNorms; the mixer by ``layer_types``:

- ``attn``: Qwen2 attention (q/k/v biased, o not, no q/k norms, RoPE over the whole head, head_dim =
  hidden / heads unless the config gives one), every token cached;
- ``swa``: the same, over a window of ``efficient_attention_config.swa.window_size`` keys (flash-attention's
  left window ``window_size - 1`` plus the token itself; the cache trimmed to the window);
- ``jet``: a JetBlock (``analysis.mixers.jetblock``) with ``efficient_attention_config.jet``'s ``num_heads``,
  ``head_dim``, ``expand_v``, ``conv_size`` and ``dconv_generator_reduction`` (JetBlockConfig's defaults where
  absent: 6, 256, 2.0, 4, 8).

The embedding is tied by default. Hand counts from the module shapes (tests/test_jet_nemotron.py) match the
published sizes as far as they are public (the cards' rounded "2B" / "4B"; no exact safetensors total was
reachable): Jet-Nemotron-2B 1,964,806,208 parameters (24 JetBlocks, 2 full, 2 SWA layers), Jet-Nemotron-4B
3,960,424,768 (26 JetBlocks, 3 full, 7 SWA). Both also equal the Qwen2.5 model of the same widths (transformers'
Qwen2, 1.54B / 3.09B) with each JetBlock layer's attention swapped for its JetBlock. ``verify`` refuses JetBlock
layers (the runtime does not run them).
"""

from __future__ import annotations

import math
from dataclasses import replace

from ..fields import MAX_LAYERS, Fields
from ..mixers import JetBlock
from ..spec import MLP, Layer, ModelSpec, Norm
from .common import merge_nested, nested_fields, per_layer_types, pre_norms, read_eps, read_rope, read_tie
from .hybrid import read_attention

LAYER_TYPES = ("jet", "attn", "swa")


def _jet_block(f: Fields, eac: Fields, hidden: int) -> JetBlock:
    jet = nested_fields(eac, "jet")
    heads = jet.int("num_heads", 6)
    dk = jet.int("head_dim", 256)
    expand_v = jet.float("expand_v", 2.0)
    kernel = jet.int("conv_size", 4, hi=1 << 12)
    reduction = jet.int("dconv_generator_reduction", 8)
    mode = jet.str("mode", "chunk")
    if mode not in ("chunk", "fused_recurrent"):
        raise jet.error("mode", f"is {mode!r}; JetBlock runs 'chunk' or 'fused_recurrent'")
    merge_nested(eac, "jet", jet)
    key_dim = heads * dk
    value_dim, dv = int(key_dim * expand_v), int(dk * expand_v)
    # JetBlock's own checks: expand_v must give whole widths (math.isclose, rel_tol 1e-5)
    if not math.isclose(key_dim * expand_v, value_dim, rel_tol=1e-5) or \
            not math.isclose(dk * expand_v, dv, rel_tol=1e-5) or value_dim != heads * dv:
        raise jet.error("expand_v", f"({expand_v}) does not give a whole value width for num_heads {heads} x "
                                    f"head_dim {dk}")
    if value_dim < reduction:
        raise jet.error("dconv_generator_reduction", f"({reduction}) exceeds the value width {value_dim}")
    return JetBlock(hidden, heads, heads, dk, dv, kernel, generator_reduction=reduction)


def build(f: Fields, model_type: str) -> ModelSpec:
    hidden = f.int("hidden_size")
    n_layers = f.int("num_hidden_layers", hi=MAX_LAYERS)
    vocab = f.int("vocab_size", hi=1 << 26)
    types = per_layer_types(f, "layer_types", n_layers, LAYER_TYPES)
    eac = nested_fields(f, "efficient_attention_config")
    attn = None
    if "attn" in types or "swa" in types:
        attn = read_attention(f, hidden, bias=True, qk_norm_dim=0)
        attn = replace(attn, o_bias=False)  # Qwen2: o_proj without bias
    swa = None
    if "swa" in types:
        sw = nested_fields(eac, "swa")
        swa = replace(attn, window=sw.int("window_size"))
        merge_nested(eac, "swa", sw)
    jet = _jet_block(f, eac, hidden) if "jet" in types else None
    merge_nested(f, "efficient_attention_config", eac)
    act = f.str("hidden_act", "silu")
    mlp = MLP(hidden, f.int("intermediate_size"), act=act)
    norms = pre_norms(lambda: Norm(hidden))
    mixers = {"attn": attn, "swa": swa, "jet": jet}
    layers = [Layer(mixers[t], mlp, norms) for t in types]
    return ModelSpec(model_type=model_type, hidden_size=hidden, vocab_size=vocab, layers=tuple(layers),
                     tie_word_embeddings=read_tie(f, True), final_norm=Norm(hidden), hidden_act=act,
                     norm_eps=read_eps(f), rope_scaling=read_rope(f, attn.head_dim)[2] if attn is not None else ())
