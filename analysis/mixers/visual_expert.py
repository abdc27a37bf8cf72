"""CogVLM's visual-expert attention (THUDM CogVLM / CogVLM2 remote code, modeling_cogvlm.py: ``VisionExpertAttention``
and ``VisionExpertMLP``; the protocol: ``analysis.mixers.base``).

Every decoder layer holds two sets of weights and routes each token by its type (``token_type_ids``): a language
expert (``language_expert_query_key_value``, a fused [q; k; v] Linear, and ``language_expert_dense``; the MLP's
``language_mlp``) for text tokens and a vision expert of the same shapes (``vision_expert_query_key_value``, biased in
CogVLM2, ``vision_expert_dense``; ``vision_mlp``, a SwiGLU of the same intermediate size) for image tokens. Both
write the same K/V cache: one set of ``num_key_value_heads`` K and V heads per layer and token, whichever expert
projected it.

This spec is the language expert's attention (``Attention``, fused qkv, named ``self_attn.qkv_proj`` /
``self_attn.o_proj``: what a text token runs, traces and caches) plus the vision expert's tensors under their
checkpoint names: ``self_attn.vision_expert_query_key_value``, ``self_attn.vision_expert_dense`` and the layer's
``mlp.vision_mlp.{gate,up,down}_proj`` (held here, beside the attention, so that one spec says which weights a text
token leaves idle). They count in the parameters and the weights memory (sharded over tensor parallelism like the
language expert's), never in a text token's active parameters (``inactive_params``), its trace, FLOPs or weight reads.
"""

from __future__ import annotations

from dataclasses import replace

from ..records import frozen
from ..tensors import Tensor
from ..tensors import linear as _linear
from .attention import Attention
from .base import MixerKind


@frozen
class VisualExpertAttention(Attention):
    """The language expert's attention with the vision expert's attention and MLP beside it (see the module doc):
    ``vision_qkv_bias`` — the vision expert's fused qkv has a bias (CogVLM2); ``vision_intermediate_size`` — its
    SwiGLU MLP's width (0: no vision MLP)."""

    vision_qkv_bias: bool = False
    vision_intermediate_size: int = 0

    kind = MixerKind.VISUAL_EXPERT
    title = "CogVLM visual-expert attention"

    def summary(self) -> str:
        return (f"{super().summary()}; a vision expert (its own qkv, dense and SwiGLU MLP of "
                f"{self.vision_intermediate_size}) for image tokens")

    def vision_tensors(self, prefix: str) -> list[Tensor]:
        """The vision expert's tensors: attention under ``prefix`` (``model.layers.N.self_attn``), its MLP under the
        layer's ``mlp.vision_mlp``."""
        out: list[Tensor] = []
        h = self.hidden_size
        _linear(out, f"{prefix}.vision_expert_query_key_value", self.q_dim + self.k_dim + self.v_dim, h,
                self.vision_qkv_bias)
        _linear(out, f"{prefix}.vision_expert_dense", h, self.o_in, False)
        if self.vision_intermediate_size:
            mlp, i = prefix.rsplit(".", 1)[0] + ".mlp.vision_mlp", self.vision_intermediate_size
            _linear(out, f"{mlp}.gate_proj", i, h, False)
            _linear(out, f"{mlp}.up_proj", i, h, False)
            _linear(out, f"{mlp}.down_proj", h, i, False)
        return out

    def tensors(self, prefix: str) -> list[Tensor]:
        return super().tensors(prefix) + self.vision_tensors(prefix)

    def inactive_params(self) -> int:
        """The vision expert: image tokens only (a text token runs the language expert)."""
        return sum(t.numel for t in self.vision_tensors("model.layers.0.self_attn"))

    def tp_shard(self, tp: int) -> "VisualExpertAttention":
        return replace(super().tp_shard(tp), vision_intermediate_size=self.vision_intermediate_size // tp)
