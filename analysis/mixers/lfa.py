"""IEIT Yuan 2.0's Localized Filtering-based Attention (LFA): softmax attention whose q and k read the layer input
after two causal convolutions over time (``lf_gate``), the spec, its tensors, trace and per-sequence state (the
protocol: ``analysis.mixers.base``; Attention's own parts: ``analysis.mixers.attention``).

From the hub's modeling_yuan.py (``LocalizedFiltering``) and the Yuan vLLM fork's yuan.py: ``conv1`` is a
Conv2d(hidden, hidden / 2, (2, 1)) and ``conv2`` a Conv2d(hidden / 2, hidden, (2, 1)), both biased, each over the
current and the previous token (no padding: the previous token of the first one is the zero state); their output
plus the input goes through ``output_layernorm`` (an RMSNorm of hidden) and feeds q_proj and k_proj, while v_proj
reads the unfiltered input. Per sequence and layer the decoder keeps the last input row (``lf1_cache``, hidden)
and the last conv1 output row (``lf2_cache``, hidden / 2) beside the KV cache.
"""

from __future__ import annotations

from ..records import frozen
from ..tensors import Tensor
from .attention import Attention


@frozen
class LFAttention(Attention):
    """Attention behind Yuan's localized filter (``lf_gate``); the rest as ``Attention``."""

    lf_gate = True  # what the runtime's attention refuses (it has no localized filter)
    title = "Yuan LFA attention"

    def summary(self) -> str:
        return super().summary() + ", localized filtering (LFA)"

    def tensors(self, prefix: str) -> list[Tensor]:
        h = self.hidden_size
        lf = f"{prefix}.lf_gate"
        return super().tensors(prefix) + [
            Tensor(f"{lf}.conv1.weight", (h // 2, h, 2, 1), "conv"), Tensor(f"{lf}.conv1.bias", (h // 2,), "bias"),
            Tensor(f"{lf}.conv2.weight", (h, h // 2, 2, 1), "conv"), Tensor(f"{lf}.conv2.bias", (h,), "bias"),
            Tensor(f"{lf}.output_layernorm.weight", (h,), "norm"),
        ]

    def trace(self, b, i: int, tensors: dict[str, list[Tensor]]) -> None:
        n, a, h = b.shape.tokens, b.a, self.hidden_size
        lf = tensors["lf_gate"]
        for name, c_in, c_out in (("conv1", h, h // 2), ("conv2", h // 2, h)):
            w = [t for t in lf if t.name.endswith(f".{name}.weight") or t.name.endswith(f".{name}.bias")]
            rd, wr = b.state_io(c_in)  # the previous token's row of this conv's input
            # a (2, 1) kernel over time: each output is 2 x c_in multiply-adds (plus its bias)
            b.add(name=f"lf_{name}", kind="conv", category="attention", layer=i, flops=2 * n * 2 * c_in * c_out,
                  weight_bytes=b.fmt.bytes_of(w), act_read_bytes=n * c_in * a, act_write_bytes=n * c_out * a,
                  state_read_bytes=rd, state_write_bytes=wr, kernels=1)
        b.elementwise("lf_residual", 2 * n * h, n * h, i, "attention")
        b.norm("lf_norm", None, h, i, tensors=[t for t in lf if ".output_layernorm." in t.name])
        super().trace(b, i, tensors)

    def state_elements(self) -> tuple[int, int]:
        """lf1_cache (hidden) and lf2_cache (hidden / 2): the conv windows, whatever the context."""
        return self.hidden_size + self.hidden_size // 2, 0
