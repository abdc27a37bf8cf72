"""Zyphra ZAYA's Compressed Convolutional Attention (CCA; transformers' ``ZayaAttention`` with its
``ZayaCCAProjection`` and ``ZayaQKNorm``, models/zaya/modeling_zaya.py): the spec, its tensors, trace and cache
(the protocol: ``analysis.mixers.base``).

GQA softmax attention (``num_attention_heads`` query heads, ``num_key_value_heads`` KV heads of ``head_dim``)
whose projections are ZAYA's:

- ``qkv_proj.q_proj`` (heads · head_dim) and ``qkv_proj.k_proj`` (kv_heads · head_dim), biased by
  attention_bias; their concatenation (``(heads + kv_heads) · head_dim`` channels) goes through a depthwise
  causal conv of ``cca_time0`` taps (``conv_qk_depthwise``, biased) and then a grouped causal conv of
  ``cca_time1`` taps with one group per head (``conv_qk_grouped``: ``head_dim`` inputs per output channel,
  biased); q and k then add residual paths (the mean of q and the repeated k; its per-KV-group mean);
- V: half of each value head from ``v_proj_current`` of the token, half from ``v_proj_delayed`` of the
  previous token (kv_heads · head_dim / 2 outputs each, biased by attention_bias);
- q and k L2-normed to sqrt(head_dim), k times a learned per-KV-head ``qk_norm.temp``; partial RoPE
  (``partial_rotary_factor`` of head_dim, per layer type theta); ``o_proj`` biased by attention_bias.

The decoder layer's learned residual scales (``post_attention_residual_scale`` and ``post_mlp_residual_scale``:
``hidden_states_scale`` / ``hidden_states_bias`` / ``residual_scale`` / ``residual_bias``, hidden_size each) sit on
the layer in the checkpoint; this spec carries them (named at the layer) with their elementwise ops.

Cache (transformers' ``DynamicCache`` for ZAYA's ``hybrid`` / ``hybrid_sliding`` layer types:
``LinearAttentionAndFullAttentionLayer`` / ``...SlidingWindowAttentionLayer``): K and V of every KV head per token
(sliding layers keep ``window`` tokens); per sequence a conv state of the q/k channels ×
``(cca_time0 - 1) + (cca_time1 - 1)`` columns and a recurrent state of the previous token's ``v_proj_delayed``
output (kv_heads · head_dim / 2). The torch runtime does not run it: ``verify`` refuses the layer kind.
"""

from __future__ import annotations

from ..errors import OptionError
from ..opkinds import OpKind
from ..records import frozen
from ..tensors import Tensor
from ..tensors import linear as _linear
from .attention import Attention
from .base import MixerKind


@frozen
class CCAttention(Attention):
    """ZAYA's CCA attention (see the module doc); ``Attention``'s fields give its heads, window, RoPE and cache
    (``q_bias`` is attention_bias, on every projection)."""

    cca_time0: int = 2  # the depthwise conv's taps
    cca_time1: int = 2  # the grouped conv's taps

    kind = MixerKind.CCA
    title = "ZAYA compressed convolutional attention"

    def label(self) -> str:
        return f"{super().label()}+cca"

    def summary(self) -> str:
        return f"{super().summary()}, CCA (q/k convs of {self.cca_time0} and {self.cca_time1} taps, half-delayed V)"

    @property
    def conv_channels(self) -> int:
        return self.q_dim + self.k_dim

    @property
    def conv_window(self) -> int:
        """Columns of the q/k conv state transformers keeps: (cca_time0 - 1) + (cca_time1 - 1)."""
        return (self.cca_time0 - 1) + (self.cca_time1 - 1)

    # ---- parameters ------------------------------------------------------------------------------

    def tensors(self, prefix: str) -> list[Tensor]:
        out: list[Tensor] = []
        h, q, k, bias = self.hidden_size, self.q_dim, self.k_dim, self.q_bias
        c, hd = self.conv_channels, self.head_dim
        p = f"{prefix}.qkv_proj"
        _linear(out, f"{p}.q_proj", q, h, bias)
        _linear(out, f"{p}.k_proj", k, h, bias)
        _linear(out, f"{p}.v_proj_current", k // 2, h, bias)
        _linear(out, f"{p}.v_proj_delayed", k // 2, h, bias)
        out.append(Tensor(f"{p}.conv_qk_depthwise.weight", (c, 1, self.cca_time0), "conv"))
        out.append(Tensor(f"{p}.conv_qk_depthwise.bias", (c,), "bias"))
        # groups = heads + kv_heads over (heads + kv_heads) · head_dim channels: head_dim inputs per output
        out.append(Tensor(f"{p}.conv_qk_grouped.weight", (c, hd, self.cca_time1), "conv"))
        out.append(Tensor(f"{p}.conv_qk_grouped.bias", (c,), "bias"))
        _linear(out, f"{prefix}.o_proj", h, q, bias)
        out.append(Tensor(f"{prefix}.qk_norm.temp", (self.num_key_value_heads,), "other"))
        layer = prefix.rsplit(".", 1)[0]
        for r in ("post_attention_residual_scale", "post_mlp_residual_scale"):
            for name in ("hidden_states_scale", "hidden_states_bias", "residual_scale", "residual_bias"):
                out.append(Tensor(f"{layer}.{r}.{name}", (h,), "other"))
        return out

    # ---- trace -----------------------------------------------------------------------------------

    def trace(self, b, i: int, tensors: dict[str, list[Tensor]]) -> None:
        """The CCA projections, convs, residual paths, delayed V and q/k norms, then attention's RoPE, cache
        append, attention and o_proj; the layer's two residual scalings."""
        n, a, hd = b.shape.tokens, b.a, self.head_dim
        q, k, c = self.q_dim, self.k_dim, self.conv_channels
        cca = tensors.get("qkv_proj", [])

        def named(piece: str) -> list[Tensor]:
            return [t for t in cca if f".{piece}." in t.name]

        for p in ("q_proj", "k_proj", "v_proj_current", "v_proj_delayed"):
            b.matmul(p, named(p), i, "attention")
        b.elementwise("qk_residual", n * (q + k), n * (q + k), i, "attention", kernels=3)
        # the state is the conv *inputs* (cca_time0 - 1 + cca_time1 - 1 columns): the depthwise conv recomputes the
        # cca_time1 - 1 outputs before each sequence's new tokens that the grouped conv reads
        rd, wr = b.state_io(c * (self.cca_time0 - 1))
        outs = n + b.shape.batch * (self.cca_time1 - 1)
        b.add(name="conv_qk_depthwise", kind="conv", category="ssm", layer=i, flops=2 * outs * c * self.cca_time0,
              weight_bytes=b.fmt.bytes_of(named("conv_qk_depthwise")), act_read_bytes=n * c * a,
              act_write_bytes=n * c * a, state_read_bytes=rd, state_write_bytes=wr, kernels=1)
        rd, wr = b.state_io(c * (self.cca_time1 - 1))
        b.add(name="conv_qk_grouped", kind="conv", category="ssm", layer=i, flops=2 * n * c * hd * self.cca_time1,
              weight_bytes=b.fmt.bytes_of(named("conv_qk_grouped")), act_read_bytes=n * c * a,
              act_write_bytes=n * c * a, state_read_bytes=rd, state_write_bytes=wr, kernels=1)
        rd, wr = b.state_io(k // 2)  # the previous token's delayed V (recurrent state)
        b.add(name="value_shift", kind="elementwise", category="attention", layer=i, act_read_bytes=n * k * a,
              act_write_bytes=n * k * a, state_read_bytes=rd, state_write_bytes=wr, kernels=2)
        b.add(name="qk_norm", kind=OpKind.NORM, category="attention", layer=i,
              weight_bytes=b.fmt.bytes_of(tensors.get("qk_norm", [])), act_read_bytes=n * (q + k) * a,
              act_write_bytes=n * (q + k) * a, kernels=2)
        super().trace(b, i, {"o_proj": tensors["o_proj"]})
        hs = n * self.hidden_size
        for r in ("post_attention_residual_scale", "post_mlp_residual_scale"):
            b.add(name=r, kind="elementwise", category="other", layer=i, weight_bytes=b.fmt.bytes_of(tensors.get(r, [])),
                  act_read_bytes=2 * hs * a, act_write_bytes=hs * a, kernels=1)

    # ---- cache -----------------------------------------------------------------------------------

    def state_elements(self) -> tuple[int, int]:
        """(the q/k conv window, the delayed-V recurrent state) per sequence."""
        return self.conv_channels * self.conv_window, self.k_dim // 2

    # ---- tensor parallelism and sundries ---------------------------------------------------------

    def tp_kv_split(self, tp: int, layer: int) -> tuple[int, int]:
        if tp > 1:
            raise OptionError(f"--tp {tp}: ZAYA's CCA mixes every query head with its KV head's keys in the "
                              f"q/k residual paths and convs (layer {layer}): its tensor-parallel split is not "
                              "modelled", "use --tp 1 for this model")
        return super().tp_kv_split(tp, layer)

    def with_window(self, window: int) -> "CCAttention":
        return super().with_window(window)
