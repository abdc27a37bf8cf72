"""Qwen3-Next / Qwen3.5 / Qwen3.5-MoE multi-token prediction (MTP), reported apart ("MTP layers (not in
total)"): transformers builds no MTP module, the released checkpoints store one under ``mtp.*``.

Shapes from vLLM's ``qwen3_next_mtp.py`` (``Qwen3NextMultiTokenPredictor``) and ``qwen3_5_mtp.py``
(``Qwen3_5MultiTokenPredictor``), which load exactly the checkpoint's ``mtp.*`` tensors:

- once for the whole predictor: ``fc`` (2·hidden -> hidden, no bias), ``pre_fc_norm_embedding``,
  ``pre_fc_norm_hidden`` and the final ``norm`` (hidden each): 2·H² + 3·H;
- ``mtp_num_hidden_layers`` decoder layers (``mtp.layers.{i}``), each built with
  ``layer_type="full_attention"``: the main model's gated attention (q/k norms, output gate), its two
  norms, and the FFN the main model's rule gives layer index ``i`` (vLLM reads the index from the
  prefix): Qwen3-Next's MoE / dense choice, Qwen3.5's dense MLP, Qwen3.5-MoE's sparse block;
- ``embed_tokens`` and ``lm_head`` are the main model's (vLLM's ``load_weights`` keeps only ``mtp.*``
  and those shared names), so nothing vocabulary-sized is added.

The count field: ``mtp_num_hidden_layers`` (Qwen3.5's configs, read by ``qwen3_5_mtp.py``), else
``num_nextn_predict_layers`` (read by ``qwen3_next_mtp.py``); absent, no MTP row.
"""

from __future__ import annotations

from typing import Callable

from ..fields import Fields
from ..spec import Attention, Layer, PlacedNorm


def qwen_mtp(f: Fields, hidden: int, attn: Callable[[], Attention], ffn_at: Callable[[int], list],
             norms: tuple[PlacedNorm, ...]) -> tuple[tuple[Layer, ...], int, tuple[str, ...]]:
    """(MTP layers, MTP params besides their blocks, caveats). ``attn()`` gives the full-attention mixer,
    ``ffn_at(n)`` the FFNs of layer indices 0 .. n-1 by the main model's rule."""
    key = "num_nextn_predict_layers" if f.has("num_nextn_predict_layers") and not f.has(
        "mtp_num_hidden_layers") else "mtp_num_hidden_layers"
    n = f.int(key, 0, lo=0, hi=64)
    if not n:
        return (), 0, ()
    ffns = ffn_at(n)
    layers = tuple(Layer(attn(), ffns[i], norms) for i in range(n))
    caveats: tuple[str, ...] = ()
    if f.has("mtp_use_dedicated_embeddings") and f.bool("mtp_use_dedicated_embeddings"):
        caveats = ("mtp_use_dedicated_embeddings is true: the MTP row leaves out a dedicated embedding table "
                   "(vLLM's Qwen MTP shares the main model's embed_tokens and lm_head; no public code gives "
                   "another layout)",)
    return layers, 2 * hidden * hidden + 3 * hidden, caveats
