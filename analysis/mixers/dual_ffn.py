"""Higgs Audio v2's DualFFN layer (transformers 5.24 models/higgs_audio_v2: ``HiggsAudioV2DecoderLayer``; the
protocol: ``analysis.mixers.base``).

Every decoder layer is Llama's (``input_layernorm``, GQA ``self_attn``, ``post_attention_layernorm``, SwiGLU ``mlp``)
plus an audio path of the same shapes: ``audio_input_layernorm`` and ``audio_post_attention_layernorm`` (RMSNorms over
hidden) and ``audio_mlp`` (a bias-free SwiGLU of ``intermediate_size``, ``mlp_bias`` as the text MLP). Each token runs
one path, chosen by its type (``audio_token_mask``: the ``audio_token_id`` / ``audio_delay_token_id`` positions take
the audio path, the others the text path); the attention and its one K/V cache are shared by both. A generated step
(an audio frame: ``audio_token_mask`` is None in decoding) runs the audio path alone.

This spec is the layer's attention (``Attention``: what every token runs, traces and caches) plus the audio path's
tensors under their checkpoint names, held here so that one spec says which weights a token leaves idle. The layer's
own norms and ``mlp`` are the text path's; the two paths have equal shapes, so a step's FLOPs and weight reads are the
same whichever path it takes. Both count in the parameters and the weights memory (sharded over tensor parallelism like
the text MLP), the idle path never in a token's active parameters (``inactive_params``).
"""

from __future__ import annotations

from dataclasses import replace

from ..records import frozen
from ..tensors import Tensor
from ..tensors import linear as _linear
from .attention import Attention
from .base import MixerKind


@frozen
class DualFFNAttention(Attention):
    """Llama attention with Higgs Audio v2's audio path beside it (see the module doc): ``audio_intermediate_size`` —
    the audio SwiGLU MLP's width; ``audio_mlp_bias`` — its projections' bias (``mlp_bias``)."""

    audio_intermediate_size: int = 0
    audio_mlp_bias: bool = False

    kind = MixerKind.DUAL_FFN
    title = "Higgs Audio v2 DualFFN attention"

    def summary(self) -> str:
        return (f"{super().summary()}; an audio path (its own two RMSNorms and SwiGLU MLP of "
                f"{self.audio_intermediate_size}) for audio tokens")

    def audio_tensors(self, prefix: str) -> list[Tensor]:
        """The audio path's tensors, under the layer of ``prefix`` (``model.layers.N.self_attn``)."""
        layer, h, i, b = prefix.rsplit(".", 1)[0], self.hidden_size, self.audio_intermediate_size, self.audio_mlp_bias
        out = [Tensor(f"{layer}.audio_input_layernorm.weight", (h,), "norm"),
               Tensor(f"{layer}.audio_post_attention_layernorm.weight", (h,), "norm")]
        _linear(out, f"{layer}.audio_mlp.gate_proj", i, h, b)
        _linear(out, f"{layer}.audio_mlp.up_proj", i, h, b)
        _linear(out, f"{layer}.audio_mlp.down_proj", h, i, b)
        return out

    def tensors(self, prefix: str) -> list[Tensor]:
        return super().tensors(prefix) + self.audio_tensors(prefix)

    def inactive_params(self) -> int:
        """One of the two equal paths (norms and MLP) is idle for every token."""
        return sum(t.numel for t in self.audio_tensors("model.layers.0.self_attn"))

    def tp_shard(self, tp: int) -> "DualFFNAttention":
        return replace(super().tp_shard(tp), audio_intermediate_size=self.audio_intermediate_size // tp)
