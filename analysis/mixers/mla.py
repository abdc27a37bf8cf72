"""DeepSeek's multi-head latent attention: the spec, its tensors, trace, latent cache and
tensor-parallel split (the protocol: ``analysis.mixers.base``)."""

from __future__ import annotations

from dataclasses import replace

from ..errors import OptionError
from ..opkinds import OpKind, Parallel
from ..records import frozen
from ..tensors import Tensor
from ..tensors import linear as _linear
from .attention import attended_keys, distinct_keys
from .base import MixerKind, MixerSpec


@frozen
class MLA(MixerSpec):
    """DeepSeek multi-head latent attention.

    The cache holds, per token and layer, the compressed latent (``kv_lora_rank``) and the shared
    rope key (``qk_rope_head_dim``), as serving engines store it. Decode uses the absorbed form
    (queries projected into the latent space), prefill the expanded form, as vLLM and SGLang do.

    Tensor parallelism (vLLM): heads split ``tp`` ways; the latent projections (``q_a_proj``,
    ``kv_a_proj_with_mqa``) are whole on every rank (``ReplicatedLinear``), and so is the latent
    cache, which is not split by head.
    """

    hidden_size: int
    num_attention_heads: int
    q_lora_rank: int | None
    kv_lora_rank: int
    qk_nope_head_dim: int
    qk_rope_head_dim: int
    v_head_dim: int
    bias: bool = False  # attention_bias: q_a_proj, kv_a_proj_with_mqa and o_proj
    rope_theta: float = 10000.0
    # Ling 3 (bailing_hybrid): a bias-free g_proj (hidden -> heads) whose sigmoid scales each head's output
    head_gate: bool = False
    # Kimi K3 (mla_use_output_gate): a bias-free g_proj (hidden -> heads x v_head_dim) whose sigmoid scales the
    # attention output per feature before o_proj (SGLang's KimiK3MLAAttention, vLLM alike)
    output_gate: bool = False
    # Kimi Linear (kimi_linear): NoPE. The qk_rope_head_dim slice of kv_a_proj_with_mqa is still the shared key
    # part, cached and attended, but never rotated
    rope: bool = True
    # dots3-note (dots3_note_text): an RMSNorm over the shared rope key (k_rope_only_layernorm) before RoPE, and a
    # sliding window over the latent cache on its sliding_attention layers (None: every token kept)
    k_rope_norm: bool = False
    window: int | None = None

    kind = MixerKind.MLA
    title = "MLA"
    module = "self_attn"
    tp_replicated_modules = ("q_a_proj", "kv_a_proj_with_mqa")
    tp_replicated_kv = True
    tp_note = "MLA's latent cache is replicated on every tensor-parallel rank"

    @property
    def qk_head_dim(self) -> int:
        return self.qk_nope_head_dim + self.qk_rope_head_dim

    def label(self) -> str:
        return f"mla-sliding({self.window})" if self.window else self.kind.value

    def summary(self) -> str:
        if not self.rope:
            return f"MLA (latent {self.kv_lora_rank} + shared key {self.qk_rope_head_dim}, no RoPE)"
        if self.window:
            return f"MLA (latent {self.kv_lora_rank} + rope {self.qk_rope_head_dim}, sliding window {self.window})"
        return f"MLA (latent {self.kv_lora_rank} + rope {self.qk_rope_head_dim})"

    # ---- parameters ------------------------------------------------------------------------------

    def tensors(self, prefix: str) -> list[Tensor]:
        out: list[Tensor] = []
        h, nh = self.hidden_size, self.num_attention_heads
        if self.q_lora_rank is None:
            _linear(out, f"{prefix}.q_proj", nh * self.qk_head_dim, h, False)
        else:
            _linear(out, f"{prefix}.q_a_proj", self.q_lora_rank, h, self.bias)
            out.append(Tensor(f"{prefix}.q_a_layernorm.weight", (self.q_lora_rank,), "norm"))
            _linear(out, f"{prefix}.q_b_proj", nh * self.qk_head_dim, self.q_lora_rank, False)
        _linear(out, f"{prefix}.kv_a_proj_with_mqa", self.kv_lora_rank + self.qk_rope_head_dim, h, self.bias)
        out.append(Tensor(f"{prefix}.kv_a_layernorm.weight", (self.kv_lora_rank,), "norm"))
        _linear(out, f"{prefix}.kv_b_proj", nh * (self.qk_nope_head_dim + self.v_head_dim), self.kv_lora_rank, False)
        _linear(out, f"{prefix}.o_proj", h, nh * self.v_head_dim, self.bias)
        if self.head_gate or self.output_gate:
            _linear(out, f"{prefix}.g_proj", nh * self.v_head_dim if self.output_gate else nh, h, False)
        if self.k_rope_norm:
            out.append(Tensor(f"{prefix}.k_rope_only_layernorm.weight", (self.qk_rope_head_dim,), "norm"))
        return out

    # ---- trace -----------------------------------------------------------------------------------

    def trace(self, b, i: int, tensors: dict[str, list[Tensor]]) -> None:
        """Decode (one new token) in the absorbed form: ``q_nope`` projected into the latent space
        (``q_absorb``), scores over ``kv_lora_rank + qk_rope_head_dim`` and values over
        ``kv_lora_rank`` per head, then ``v_up``; prefill in the expanded form: every key's latent
        through ``kv_b_proj``, then ordinary attention."""
        s, n, a = b.shape, b.shape.tokens, b.a
        nh = self.num_attention_heads
        if self.q_lora_rank is None:
            b.matmul("q_proj", tensors["q_proj"], i, "attention")
        else:
            # the latent projections are replicated on tensor-parallel ranks (vLLM: ReplicatedLinear)
            b.matmul("q_a_proj", tensors["q_a_proj"], i, "attention", parallel=Parallel.REPLICATED)
            b.norm("q_a_layernorm", None, self.q_lora_rank, i, tensors=tensors["q_a_layernorm"])
            b.matmul("q_b_proj", tensors["q_b_proj"], i, "attention")
        # (with a q_a_proj, engines run q_a and kv_a as one fused_qkv_a GEMM)
        b.matmul("kv_a_proj_with_mqa", tensors["kv_a_proj_with_mqa"], i, "attention", parallel=Parallel.REPLICATED,
                 fused=self.q_lora_rank is not None)
        # (kv_a is a strided slice of that GEMM's output: SGLang copies it contiguous before the norm)
        b.norm("kv_a_layernorm", None, self.kv_lora_rank, i, tensors=tensors["kv_a_layernorm"],
               launches=1 + (self.q_lora_rank is not None))
        if self.k_rope_norm:
            b.norm("k_rope_only_layernorm", None, self.qk_rope_head_dim, i, tensors=tensors["k_rope_only_layernorm"])
        if self.rope:
            rope = n * (nh + 1) * self.qk_rope_head_dim
            b.elementwise("rope", rope, rope, i, "attention", kernels=10, kind=OpKind.ROPE)
        if b.spec.numerics.query_position_scale is not None:  # Mistral 4: the queries scaled by position
            q = n * nh * self.qk_head_dim
            b.elementwise("query_scale", q, q, i, "attention")
        kv_elems = self.kv_elements_per_token()
        kv_tok = b.kv.nbytes(kv_elems)
        b.add(name="kv_append", kind=OpKind.KV_APPEND, category="attention", layer=i, act_read_bytes=n * kv_elems * a,
              kv_write_bytes=n * kv_tok, kernels=2, launches=2)
        keys = attended_keys(s.cached_tokens, s.new_tokens, self.window)
        seen = distinct_keys(s.cached_tokens, s.new_tokens, self.window)
        kv_b = tensors["kv_b_proj"]
        kv_b_bytes = b.fmt.bytes_of(kv_b)
        k_part = nh * self.qk_nope_head_dim * self.kv_lora_rank
        total = nh * (self.qk_nope_head_dim + self.v_head_dim) * self.kv_lora_rank
        k_bytes = kv_b_bytes * k_part // total
        if s.new_tokens == 1:  # absorbed: q_nope -> latent, attention over the latent, latent -> v
            b.add(name="q_absorb", kind=OpKind.MATMUL, category="attention", layer=i, flops=2 * n * k_part,
                  weight_bytes=k_bytes, act_read_bytes=n * nh * self.qk_nope_head_dim * a,
                  act_write_bytes=n * nh * self.kv_lora_rank * a, kernels=1)
            flops = s.batch * nh * (2 * (self.kv_lora_rank + self.qk_rope_head_dim) + 2 * self.kv_lora_rank) * keys
            b.add(name="attention", kind=OpKind.ATTENTION, category="attention", layer=i, flops=flops,
                  act_read_bytes=n * nh * (self.kv_lora_rank + self.qk_rope_head_dim) * a,
                  act_write_bytes=n * nh * self.kv_lora_rank * a, kv_read_bytes=s.batch * seen * kv_tok, kernels=1,
                  launches=2)
            b.add(name="v_up", kind=OpKind.MATMUL, category="attention", layer=i,
                  flops=2 * n * (total - k_part), weight_bytes=kv_b_bytes - k_bytes,
                  act_read_bytes=n * nh * self.kv_lora_rank * a, act_write_bytes=n * nh * self.v_head_dim * a,
                  kernels=1)
        else:  # expanded: every key's latent through kv_b_proj, then ordinary attention
            rows = s.batch * seen
            b.add(name="kv_b_proj", kind=OpKind.MATMUL, category="attention", layer=i, flops=2 * rows * total,
                  weight_bytes=kv_b_bytes, act_read_bytes=rows * kv_tok,
                  act_write_bytes=rows * nh * (self.qk_nope_head_dim + self.v_head_dim) * a, kernels=1,
                  launches=1 + b.quantized_gemm(kv_b))
            flops = s.batch * nh * (2 * self.qk_head_dim + 2 * self.v_head_dim) * keys
            b.add(name="attention", kind=OpKind.ATTENTION, category="attention", layer=i, flops=flops,
                  act_read_bytes=n * nh * self.qk_head_dim * a + rows * nh * (self.qk_head_dim + self.v_head_dim) * a,
                  act_write_bytes=n * nh * self.v_head_dim * a, kv_read_bytes=s.batch * seen * kv_tok, kernels=1,
                  launches=5)
        if self.head_gate:  # sigmoid(g_proj(x)), one scalar per head, scales that head's output
            b.matmul("g_proj", tensors["g_proj"], i, "attention")
            b.elementwise("head_gate", n * nh * (1 + self.v_head_dim), n * nh * self.v_head_dim, i, "attention",
                          kernels=2)
        if self.output_gate:  # x · sigmoid(g_proj(hidden)) per feature
            b.matmul("g_proj", tensors["g_proj"], i, "attention")
            b.elementwise("output_gate", 2 * n * nh * self.v_head_dim, n * nh * self.v_head_dim, i, "attention",
                          kernels=2)
        b.matmul("o_proj", tensors["o_proj"], i, "attention", parallel=Parallel.ROW)

    # ---- cache -----------------------------------------------------------------------------------

    def kv_elements_per_token(self) -> int:
        return self.kv_lora_rank + self.qk_rope_head_dim

    def expanded_kv_elements_per_token(self) -> int:
        """What a naive cache of expanded per-head K and V would hold."""
        return self.num_attention_heads * (self.qk_head_dim + self.v_head_dim)

    def latent_kv(self) -> tuple[int, int] | None:
        return self.kv_lora_rank, self.qk_rope_head_dim

    def kv_cap(self) -> int | None:
        return self.window

    # ---- tensor parallelism ----------------------------------------------------------------------

    def tp_kv_split(self, tp: int, layer: int) -> tuple[int, int]:
        if self.num_attention_heads % tp:
            raise OptionError(f"--tp {tp}: {self.num_attention_heads} MLA heads do not split {tp} ways")
        return 1, 1  # the latent cache is whole on every rank

    def tp_shard(self, tp: int) -> "MLA":
        return replace(self, num_attention_heads=self.num_attention_heads // tp)

    # ---- what-ifs and sundries -------------------------------------------------------------------

    def with_window(self, window: int) -> None:
        return None  # a sliding window over the latent cache is not modelled

    def rope_tables(self) -> tuple[tuple[int, float], ...]:
        return ((self.qk_rope_head_dim, self.rope_theta),) if self.rope else ()
