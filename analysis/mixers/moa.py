"""JetMoE's mixture of attention heads (``jetmoe``; transformers' ``JetMoeAttention`` / ``JetMoeMoA``,
models/jetmoe/modeling_jetmoe.py): attention whose query and output projections are routed experts while
the K/V projection is shared (the protocol: ``analysis.mixers.base``).

Per layer: a bias-free router ``Linear(hidden, E)`` (softmax over the top-k logits), ``E`` query experts
``(kv_heads · head_dim, hidden)`` and ``E`` output experts ``(hidden, kv_heads · head_dim)``, one output
bias (hidden) added after the gated sum, and one shared ``kv_proj`` (``2 · kv_heads · head_dim`` rows, K then
V). A token runs its top-k experts: ``top_k · kv_heads`` query heads, each of the ``k`` slots' heads attending
the same ``kv_heads`` K/V heads (transformers ``repeat``s them, GQA with ``top_k`` query heads per KV head).
The cache holds the shared K and V only: ``kv_heads · 2 · head_dim`` elements per token (transformers'
DynamicCache stores ``kv_proj``'s output, before the repeat).

Our names: ``self_attn.router`` (checkpoint ``self_attention.experts.router.layer``), ``self_attn.q_proj``
(``experts.input_linear``), ``self_attn.o_proj`` (``experts.output_linear``) and its bias (``experts.bias``),
and transformers' one ``kv_proj`` as our ``self_attn.k_proj`` and ``v_proj`` (its first and second halves of rows:
a split, not a rename, so tensor parallelism splits them with the KV heads as Llama's).
"""

from __future__ import annotations

from dataclasses import replace

from ..errors import OptionError
from ..opkinds import OpKind, Parallel
from ..records import frozen
from ..tensors import Tensor
from ..tensors import linear as _linear
from .attention import Attention
from .base import MixerKind


@frozen
class MixtureOfAttention(Attention):
    """JetMoE's MoA (see the module doc): ``num_attention_heads`` is ``top_k · num_key_value_heads`` (the
    query heads one token runs), ``num_experts`` the attention experts, each ``num_key_value_heads`` heads
    wide in its query and output projections."""

    num_experts: int = 8

    kind = MixerKind.MOA
    title = "JetMoE mixture-of-attention"

    @property
    def top_k(self) -> int:
        return self.num_attention_heads // self.num_key_value_heads

    @property
    def expert_width(self) -> int:
        """Query features of one attention expert (its kv_heads x head_dim)."""
        return self.num_key_value_heads * self.head_dim

    def summary(self) -> str:
        return (f"mixture of attention heads: top-{self.top_k} of {self.num_experts} experts of "
                f"{self.num_key_value_heads} heads (shared K/V), head_dim {self.head_dim}")

    # ---- parameters ------------------------------------------------------------------------------

    def tensors(self, prefix: str) -> list[Tensor]:
        h, e, w = self.hidden_size, self.num_experts, self.expert_width
        out = [Tensor(f"{prefix}.router.weight", (e, h), "router"),
               Tensor(f"{prefix}.q_proj.weight", (e, w, h), "expert")]
        _linear(out, f"{prefix}.k_proj", self.k_dim, h, False)  # transformers' kv_proj: its K rows, then its V rows
        _linear(out, f"{prefix}.v_proj", self.v_dim, h, False)
        out.append(Tensor(f"{prefix}.o_proj.weight", (e, h, w), "expert"))
        out.append(Tensor(f"{prefix}.o_proj.bias", (h,), "bias"))
        return out

    def inactive_params(self) -> int:
        """The query and output experts a token does not route to."""
        return (self.num_experts - self.top_k) * 2 * self.expert_width * self.hidden_size

    # ---- trace -----------------------------------------------------------------------------------

    def trace(self, b, i: int, tensors: dict[str, list[Tensor]]) -> None:
        """The router, the top-k query experts and the shared K/V projection; RoPE, the cache append and the attention
        of ``Attention`` (top_k · kv_heads query heads over kv_heads K/V heads); the top-k output experts, their
        gated sum and the output bias. The experts' weights read are those the step's tokens touch."""
        from ..trace import expected_experts

        n, a, h = b.shape.tokens, b.a, self.hidden_size
        e, k, w = self.num_experts, self.top_k, self.expert_width
        touched = expected_experts(e, k, n)
        b.add(name="attn_router", kind=OpKind.ROUTER, category="attention", layer=i, flops=2 * n * h * e,
              weight_bytes=b.fmt.bytes_of(tensors["router"]), act_read_bytes=n * h * a, act_write_bytes=n * e * 4,
              kernels=3, parallel=Parallel.REPLICATED)
        q = tensors["q_proj"]
        b.add(name=f"q_experts (top-{k} of {e})", kind=OpKind.MATMUL, category="attention", layer=i,
              flops=2 * n * k * w * h, weight_bytes=round(b.fmt.bytes_of(q) * touched / e),
              act_read_bytes=n * h * a, act_write_bytes=n * k * w * a, kernels=max(1, round(touched)) + 2,
              parallel=Parallel.COLUMN)
        o = tensors["o_proj"]
        # k_proj, v_proj (the shared kv_proj), rope, kv_append, attention, o_proj (no dense q_proj)
        super().trace(b, i, {"k_proj": tensors["k_proj"], "v_proj": tensors["v_proj"], "o_proj": o})
        b.ops.pop()  # the dense o_proj Attention appends: replaced by the routed output experts
        weights = [t for t in o if t.kind != "bias"]
        bias = [t for t in o if t.kind == "bias"]
        b.add(name=f"o_experts (top-{k} of {e})", kind=OpKind.MATMUL, category="attention", layer=i,
              flops=2 * n * k * w * h, weight_bytes=round(b.fmt.bytes_of(weights) * touched / e) + b.fmt.bytes_of(bias),
              act_read_bytes=n * k * w * a, act_write_bytes=n * h * a, kernels=max(1, round(touched)) + 2,
              parallel=Parallel.ROW)

    # ---- tensor parallelism ----------------------------------------------------------------------

    def tp_kv_split(self, tp: int, layer: int) -> tuple[int, int]:
        """Every expert's heads split with the KV heads they attend: ``tp`` must divide the KV heads."""
        kv = self.num_key_value_heads
        if kv % tp:
            raise OptionError(f"--tp {tp}: JetMoE's {kv} KV heads (each attention expert's heads) do not split "
                              f"{tp} ways (layer {layer}); choose a tp that divides {kv}")
        return tp, 1

    def tp_shard(self, tp: int) -> "MixtureOfAttention":
        return replace(self, num_attention_heads=self.num_attention_heads // tp,
                       num_key_value_heads=self.num_key_value_heads // tp)
