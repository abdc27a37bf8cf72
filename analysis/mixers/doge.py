"""SmallDoge's dynamic-mask attention (``doge``; transformers' ``DogeAttention``, models/doge/modeling_doge.py): GQA
softmax attention with per-head q/k RMSNorms whose scores get an additive bias per key and KV head, computed from the
cached values (the protocol: ``analysis.mixers.base``).

Every step ``dt_proj`` (num_key_value_heads · head_dim -> num_key_value_heads, biased by attention_bias) reads the
values of every visible key, ``exp(A · softplus(dt))`` (``A``: one learned scalar per KV head) is added to the
scores, and beyond ``keep_window_size`` keys all but the top keep_window_size per query are masked out (transformers
still computes the dense scores: the FLOPs here are dense). Nothing is cached beyond K and V.

The layer's learned residual scales (``input_residual`` and ``post_attention_residual``, hidden_size each:
``x = w · residual + f(x)``) sit on the decoder layer in the checkpoint; this spec carries them (named at the layer)
with their elementwise ops.
"""

from __future__ import annotations

from ..errors import OptionError
from ..opkinds import OpKind, Parallel
from ..records import frozen
from ..tensors import Tensor
from ..tensors import linear as _linear
from .attention import Attention, distinct_keys
from .base import MixerKind


@frozen
class DogeAttention(Attention):
    """Doge's attention with its dynamic mask (see the module doc). ``dt_bias``: dt_proj has a bias."""

    dt_bias: bool = False
    keep_window_size: int = 2048

    kind = MixerKind.DOGE
    title = "Doge dynamic-mask attention"

    def summary(self) -> str:
        return f"{super().summary()}, dynamic mask (top {self.keep_window_size} keys)"

    # ---- parameters ------------------------------------------------------------------------------

    def tensors(self, prefix: str) -> list[Tensor]:
        out = super().tensors(prefix)
        kv = self.num_key_value_heads
        out.append(Tensor(f"{prefix}.A", (kv,), "other"))
        _linear(out, f"{prefix}.dt_proj", kv, kv * self.v_head_dim, self.dt_bias)
        layer = prefix.rsplit(".", 1)[0]
        out.append(Tensor(f"{layer}.input_residual", (self.hidden_size,), "other"))
        out.append(Tensor(f"{layer}.post_attention_residual", (self.hidden_size,), "other"))
        return out

    # ---- trace -----------------------------------------------------------------------------------

    def trace(self, b, i: int, tensors: dict[str, list[Tensor]]) -> None:
        """Attention's ops with the dynamic mask before the attention: dt_proj over every visible key's values,
        exp(A · softplus(dt)), the top-keep_window_size selection past that many keys; the residual scales."""
        s, n, a = b.shape, b.shape.tokens, b.a
        kv, dv = self.num_key_value_heads, self.v_head_dim
        start = len(b.ops)
        super().trace(b, i, tensors)
        at = next(j for j in range(start, len(b.ops)) if b.ops[j].name == "attention")
        ops, b.ops[at:] = b.ops[at:], []
        seen = distinct_keys(s.cached_tokens, s.new_tokens, self.window, self.chunk)
        dt = tensors["dt_proj"]
        b.add(name="dt_proj", kind=OpKind.MATMUL, category="attention", layer=i,
              flops=2 * s.batch * seen * kv * kv * dv,
              weight_bytes=b.fmt.bytes_of(dt), act_write_bytes=s.batch * seen * kv * a,
              kv_read_bytes=s.batch * seen * b.kv.nbytes(kv * dv), kernels=1, parallel=Parallel.REPLICATED)
        b.elementwise("dynamic_mask", s.batch * seen * kv, s.batch * seen * kv, i, "attention", kernels=3)
        if seen > self.keep_window_size:
            b.add(name=f"dynamic_mask.top{self.keep_window_size}", kind=OpKind.ATTENTION, category="attention",
                  layer=i, act_read_bytes=n * seen * kv * a, act_write_bytes=n * self.keep_window_size * kv * 8,
                  kernels=2)
        b.ops.extend(ops)
        h = n * self.hidden_size
        b.elementwise("residual_scale", 2 * h, h, i, "other")  # input_residual and post_attention_residual
        b.elementwise("residual_scale", 2 * h, h, i, "other")

    # ---- tensor parallelism and sundries ---------------------------------------------------------

    def tp_kv_split(self, tp: int, layer: int) -> tuple[int, int]:
        if tp > 1:
            raise OptionError(f"--tp {tp}: Doge's dt_proj reads every KV head's values (layer {layer}) and its "
                              "residual scales sit on every rank: its tensor-parallel split is not modelled",
                              "use --tp 1 for this model")
        return super().tp_kv_split(tp, layer)

    def with_window(self, window: int) -> "DogeAttention | None":
        return None  # a window beside the dynamic mask is not modelled
