"""DiffLlama's differential attention (``diffllama``; transformers' ``DiffLlamaAttention``,
models/diffllama/modeling_diffllama.py; Differential Transformer, arXiv 2410.05258): Llama's q/k/v/o projections
and cache, with the softmax maps of head pairs subtracted (the protocol: ``analysis.mixers.base``).

transformers runs two standard attention calls sharing Q and K, one over each half of the V heads (each half
repeated back to every KV head); the outputs are concatenated per head (``2 · head_dim``), head ``i`` minus
``λ ·`` head ``i + H/2`` (``λ = exp(λ_q1·λ_k1) - exp(λ_q2·λ_k2) + λ_init(layer)``), a weightless RMSNorm over
the ``2 · head_dim`` features of each pair (``groupnorm``), scaled by ``1 - λ_init``, then ``o_proj``.

Parameters: Llama's projections (``attention_bias`` on all four) plus four learned vectors ``lambda_q1``,
``lambda_k1``, ``lambda_q2``, ``lambda_k2`` of ``head_dim`` each. Cache: K and V of every KV head, as Llama's.
FLOPs: the two calls' (scores twice, values of ``head_dim`` twice): ``2 · 2 · H · 2 · head_dim`` per key; the
cache is read as the two calls read it (K twice, each half of V once per call: K twice and V once).
"""

from __future__ import annotations

from dataclasses import replace

from ..errors import OptionError
from ..opkinds import OpKind
from ..records import frozen
from ..tensors import Tensor
from .attention import Attention, attended_keys, distinct_keys
from .base import MixerKind

LAMBDAS = ("lambda_q1", "lambda_k1", "lambda_q2", "lambda_k2")


@frozen
class DiffAttention(Attention):
    """Differential attention (see the module doc): Llama's attention fields, the four λ vectors of head_dim."""

    kind = MixerKind.DIFF_ATTENTION
    title = "differential attention"

    def summary(self) -> str:
        return f"{super().summary()}, differential (head pairs subtracted by a learned λ)"

    # ---- parameters ------------------------------------------------------------------------------

    def tensors(self, prefix: str) -> list[Tensor]:
        return super().tensors(prefix) + [Tensor(f"{prefix}.{n}", (self.head_dim,), "other") for n in LAMBDAS]

    # ---- trace -----------------------------------------------------------------------------------

    def trace(self, b, i: int, tensors: dict[str, list[Tensor]]) -> None:
        """Attention's ops with the attention as transformers' two calls (Q·K twice, each over one half of the V
        heads), then the λ combination of head pairs and the weightless group norm before o_proj."""
        s, n, a = b.shape, b.shape.tokens, b.a
        super().trace(b, i, tensors)
        o_proj = b.ops.pop()
        at = max(j for j, o in enumerate(b.ops) if o.name == "attention")
        keys = attended_keys(s.cached_tokens, s.new_tokens, self.window, self.chunk)
        seen = distinct_keys(s.cached_tokens, s.new_tokens, self.window, self.chunk)
        heads, hd, kv = self.num_attention_heads, self.head_dim, self.num_key_value_heads
        lam = b.fmt.bytes_of([t for n_, ts in tensors.items() if n_ in LAMBDAS for t in ts])
        b.ops[at] = replace(
            b.ops[at], name="attention (2 calls)",
            flops=2 * s.batch * heads * 2 * (hd + hd) * keys, act_read_bytes=2 * n * self.q_dim * a,
            act_write_bytes=2 * n * self.o_in * a, kv_read_bytes=s.batch * seen * b.kv.nbytes(kv * 3 * hd), kernels=2)
        out = n * self.o_in
        b.add(name="diff_combine", kind=OpKind.ELEMENTWISE, category="attention", layer=i, weight_bytes=lam,
              act_read_bytes=2 * out * a, act_write_bytes=out * a, kernels=4)
        b.norm("groupnorm", None, out, i, cat="attention", tensors=[])
        b.ops.append(o_proj)

    # ---- tensor parallelism and sundries ---------------------------------------------------------

    def tp_kv_split(self, tp: int, layer: int) -> tuple[int, int]:
        if tp > 1:
            raise OptionError(f"--tp {tp}: differential attention pairs head i with head i + H/2 and splits the V "
                              f"heads in halves (layer {layer}): its tensor-parallel split is not modelled",
                              "use --tp 1 for this model")
        return super().tp_kv_split(tp, layer)
