"""DeepSeek Sparse Attention (DSA: DeepSeek-V3.2, GLM-5's ``glm_moe_dsa``): MLA whose queries each attend
only the ``index_topk`` cached tokens a *lightning indexer* selects (the protocol: ``analysis.mixers.base``).

The indexer (transformers' ``DeepseekV32Indexer``, models/deepseek_v32/modeling_deepseek_v32.py) has its own
projections: ``wq_b`` (q_lora_rank -> index_n_heads · index_head_dim, from the MLA's normed query latent),
``wk`` (hidden -> index_head_dim, one key shared by its heads), ``k_norm`` (a LayerNorm with bias over
index_head_dim) and ``weights_proj`` (hidden -> index_n_heads), all bias-free. For each query it scores
every cached token, ``Σ_h w_h · relu(q_h · k)`` (index_n_heads · index_head_dim multiply-adds per key for
the dot products plus index_n_heads for the weighted sum), keeps the top ``index_topk`` and the MLA attends
those alone: a query at position ``p`` attends ``min(p + 1, index_topk)`` keys, the sliding-window sum of
``attended_keys``, while the indexer's scores keep growing with the context.

Cache per token and layer: MLA's latent and rope key, plus the indexer's key. ``analysis.kv`` counts it in
the KV dtype (transformers' own cache holds it in the model dtype); at 8 bits and below the indexer key
carries one fp32 scale per 128 elements, as every serving implementation stores it. Serving engines keep
the indexer key in fp8 with its fp32 scales whatever the MLA cache dtype (``indexer_kv_bytes()``):

- vLLM: ``Indexer.k_cache = DeepseekV32IndexerCache(head_dim=index_head_dim + index_head_dim //
  quant_block_size * 4, dtype=torch.uint8)`` with ``quant_block_size = 128`` (132 B for index_head_dim
  128), vllm/model_executor/models/deepseek_v2.py at 002d6073aa034d4f5545d45021b0e56d1f3c3593; the indexer
  projections are replicated on every tensor-parallel rank ("no tensor parallel, just replicated":
  ``wq_b`` a ``ReplicatedLinear``, ``wk`` + ``weights_proj`` one ``disable_tp`` GEMM), and so is its cache;
- SGLang: ``NSATokenToKVPool`` (python/sglang/srt/mem_cache/memory_pool.py): ``quant_block_size = 128``,
  ``index_k_with_scale_buffer_dtype = torch.uint8``, ``index_head_dim + index_head_dim //
  quant_block_size * 4`` bytes per token;
- the fp8 MLA cache of FlashMLA's sparse kernels is 656 B per token (512 fp8 + 4 fp32 scales + 64 bf16
  rope; vllm/v1/attention/backends/mla/flashmla_sparse.py at 008a0c31dc020099dd40e8a2b7d2bdb37699b047,
  whose ``supported_kv_cache_dtypes`` make "fp8" an alias of ``fp8_ds_mla``; SGLang's NSA pool stores the
  same when ``nsa_kv_cache_store_fp8``): ``fp8_latent_layout``, which ``hardware.engine`` applies on every
  engine (vLLM's profile has the same for plain MLA; SGLang's stores plain MLA as 576 fp8 bytes).

Attention runs in the absorbed (latent, MQA) form for decode and prefill alike: FlashMLA's sparse kernels
(``flash_mla_with_kvcache`` with indices, ``flash_mla_sparse_fwd``) gather the selected latents, never
expanding them through ``kv_b_proj``. GLM-5 layers whose ``indexer_types`` entry is ``"shared"`` have no
indexer (no tensors, no indexer cache, no indexer ops) and reuse the previous full layer's selection.

Gated descendants, as fields: Hy4-preview (``hy_v4``: ``out_gate``, ``sinks``, ``hc_mult``; GLM-5's shared layers),
A.X-K2 (``axk2``: ``q_gate``) and dots3-note (``dots3_note_text``: MLA's ``head_gate``, one scalar per head, and
``k_rope_norm``) gate each head's output by a sigmoid before ``o_proj``; their cache is DSA's.
"""

from __future__ import annotations

from ..opkinds import OpKind, Parallel
from ..records import frozen
from ..tensors import Tensor
from ..tensors import linear as _linear
from .attention import attended_keys, distinct_keys
from .base import MixerKind
from .mla import MLA

#: Elements per fp32 scale of the fp8 indexer key (vLLM's ``Indexer.quant_block_size``, SGLang's
#: ``NSATokenToKVPool.quant_block_size``).
INDEXER_QUANT_BLOCK = 128


@frozen
class SparseMLA(MLA):
    """MLA with DeepSeek sparse attention (see the module doc). ``indexer``: the layer runs its own
    lightning indexer (False: GLM-5's ``shared`` layers, which reuse the previous full layer's top-k)."""

    index_topk: int = 2048
    index_n_heads: int = 64
    index_head_dim: int = 128
    indexer: bool = True
    # gated variants (all off for DeepSeek-V3.2 / GLM-5):
    # A.X-K2 (``axk2``): ``q_gate_proj`` (2 · q_lora_rank -> heads · (qk_head_dim + v_head_dim)) over the normed and
    # the raw query latent side by side, in place of ``q_b_proj``: the queries and a sigmoid gate on each head's output
    q_gate: bool = False
    # Hy4-preview (``hy_v4``): ``gate_proj`` (hidden -> heads · v_head_dim), a sigmoid gate on each head's output
    out_gate: bool = False
    sinks: bool = False  # Hy4-preview: a learned sink logit per head (``sinks``, fp32)
    # Hy4-preview: independent hyper-connections over ``hc_mult`` residual streams, ``attn_hc`` and ``ffn_hc`` (named
    # at the layer, as DeepSeek-V4's): ``fn`` (2n x n · hidden), ``base`` (2n), ``scale`` (2); no Sinkhorn comb. 0: none
    hc_mult: int = 0
    # Mistral Large 4 (``mistral_large4_text``; q_lora_rank None: q_proj): the indexer's query from the hidden state
    # (``q_input_norm``, a LayerNorm with bias over hidden, then ``wq_b``: hidden -> index heads · index_head_dim);
    # ``softmax_scaling``: a learned per-head ``scale`` and ``bias`` multiplying the queries by scale · log(pos + 1) +
    # bias, in the attention and in the indexer; ``kv_shared``: the layer attends an earlier layer's latent cache
    # (no kv_a_proj_with_mqa / kv_a_layernorm, no latent cache of its own; its indexer's key cache it keeps). Its NoPE
    # layers are qk_rope_head_dim 0 (the latent alone cached) with the rope dims in qk_nope_head_dim
    index_q_from_hidden: bool = False
    softmax_scaling: bool = False
    kv_shared: bool = False

    kind = MixerKind.SPARSE_MLA
    title = "DeepSeek sparse attention"
    # the latent projections (MLA) and the whole indexer are replicated on tensor-parallel ranks (vLLM)
    tp_replicated_modules = ("q_a_proj", "kv_a_proj_with_mqa", "wq_b", "wk", "weights_proj")
    tp_note = "MLA's latent cache and the DSA indexer's key cache are replicated on every tensor-parallel rank"

    # FlashMLA's sparse fp8 cache (656 B for 512 + 64): vLLM's fp8_ds_mla ("fp8" is its alias for a sparse
    # backend), SGLang's NSATokenToKVPool with nsa_kv_cache_store_fp8 (kv_cache_dim from
    # calculate_mla_kv_cache_dim), whatever the engine's layout for plain MLA
    fp8_latent_layout = {"latent_bytes": 1, "scale_group": 128, "scale_bytes": 4, "rope_bytes": 2}

    def label(self) -> str:
        return "dsa" if self.indexer else "dsa(shared)"

    def summary(self) -> str:
        s = (f"MLA (latent {self.kv_lora_rank} + rope {self.qk_rope_head_dim}) with DeepSeek sparse attention "
             f"(top {self.index_topk}; indexer {self.index_n_heads}x{self.index_head_dim})")
        if self.q_gate or self.out_gate or self.head_gate:
            s += ", a sigmoid output gate per head"
        if self.sinks:
            s += ", attention sinks"
        if self.hc_mult:
            s += f", {self.hc_mult} hyper-connection streams"
        return s

    # ---- parameters ------------------------------------------------------------------------------

    def tensors(self, prefix: str) -> list[Tensor]:
        out = super().tensors(prefix)
        nh, v = self.num_attention_heads, self.v_head_dim
        if self.kv_shared:  # Mistral Large 4: the source layer's latent, no projection of its own
            drop = (f"{prefix}.kv_a_proj_with_mqa.", f"{prefix}.kv_a_layernorm.")
            out = [t for t in out if not t.name.startswith(drop)]
        if self.softmax_scaling:
            out += [Tensor(f"{prefix}.softmax_scaling.scale", (nh,), "other"),
                    Tensor(f"{prefix}.softmax_scaling.bias", (nh,), "other")]
        if self.q_gate:  # q_gate_proj in place of q_b_proj (whose place in the list it takes)
            at = next(k for k, t in enumerate(out) if t.name == f"{prefix}.q_b_proj.weight")
            out[at] = Tensor(f"{prefix}.q_gate_proj.weight", (nh * (self.qk_head_dim + v), 2 * self.q_lora_rank),
                             "linear")
        if self.out_gate:
            _linear(out, f"{prefix}.gate_proj", nh * v, self.hidden_size, False)
        if self.sinks:
            out.append(Tensor(f"{prefix}.sinks", (nh,), "other"))
        if self.hc_mult:
            layer, n = prefix.rsplit(".", 1)[0], self.hc_mult
            for hc in ("attn_hc", "ffn_hc"):
                out.append(Tensor(f"{layer}.{hc}.fn", (2 * n, n * self.hidden_size), "other"))
                out.append(Tensor(f"{layer}.{hc}.base", (2 * n,), "other"))
                out.append(Tensor(f"{layer}.{hc}.scale", (2,), "other"))
        if self.indexer:
            p, d, nh = f"{prefix}.indexer", self.index_head_dim, self.index_n_heads
            if self.index_q_from_hidden:
                out.append(Tensor(f"{p}.q_input_norm.weight", (self.hidden_size,), "norm"))  # nn.LayerNorm
                out.append(Tensor(f"{p}.q_input_norm.bias", (self.hidden_size,), "norm"))
            _linear(out, f"{p}.wq_b", nh * d, self.hidden_size if self.index_q_from_hidden else self.q_lora_rank, False)
            _linear(out, f"{p}.wk", d, self.hidden_size, False)
            out.append(Tensor(f"{p}.k_norm.weight", (d,), "norm"))  # nn.LayerNorm: weight and bias
            out.append(Tensor(f"{p}.k_norm.bias", (d,), "norm"))
            _linear(out, f"{p}.weights_proj", nh, self.hidden_size, False)
            if self.softmax_scaling:
                out += [Tensor(f"{p}.softmax_scaling.scale", (nh,), "other"),
                        Tensor(f"{p}.softmax_scaling.bias", (nh,), "other")]
        return out

    # ---- cache -----------------------------------------------------------------------------------

    def _latent_elements(self) -> int:
        return 0 if self.kv_shared else self.kv_lora_rank + self.qk_rope_head_dim

    def kv_elements_per_token(self) -> int:
        return self._latent_elements() + (self.index_head_dim if self.indexer else 0)

    def expanded_kv_elements_per_token(self) -> int:
        own = 0 if self.kv_shared else super().expanded_kv_elements_per_token()
        return own + (self.index_head_dim if self.indexer else 0)

    def kv_bytes_per_token(self, kv_dtype) -> int:
        return kv_dtype.nbytes(self._latent_elements()) + self.indexer_kv_bytes(kv_dtype)

    def latent_kv(self) -> tuple[int, int] | None:
        return None if self.kv_shared else super().latent_kv()

    def indexer_kv_bytes(self, kv_dtype=None) -> int:
        """The indexer key of one token: in ``kv_dtype`` (at 8 bits or fewer with one fp32 scale per 128
        elements); ``None``: as vLLM and SGLang store it, fp8 plus the fp32 scales (132 B for 128 dims)."""
        if not self.indexer:
            return 0
        d = self.index_head_dim
        scales = -(-d // INDEXER_QUANT_BLOCK) * 4
        if kv_dtype is None:
            return d + scales
        return kv_dtype.nbytes(d) + (scales if kv_dtype.bits <= 8 else 0)

    # ---- trace -----------------------------------------------------------------------------------

    def trace(self, b, i: int, tensors: dict[str, list[Tensor]]) -> None:
        """The MLA projections, then (with an indexer) its projections, key append, scores over every
        cached key and top-k, then the absorbed attention over the selected keys only."""
        s, n, a = b.shape, b.shape.tokens, b.a
        nh, r, rope = self.num_attention_heads, self.kv_lora_rank, self.qk_rope_head_dim
        if self.hc_mult:
            self._trace_hc(b, i, tensors, "attn_hc")
        if self.q_lora_rank is None:  # Mistral Large 4
            b.matmul("q_proj", tensors["q_proj"], i, "attention")
        else:
            b.matmul("q_a_proj", tensors["q_a_proj"], i, "attention", parallel=Parallel.REPLICATED)
            b.norm("q_a_layernorm", None, self.q_lora_rank, i, tensors=tensors["q_a_layernorm"])
            q = "q_gate_proj" if self.q_gate else "q_b_proj"
            b.matmul(q, tensors[q], i, "attention")
        if self.out_gate:  # (a dense layer's MLP has a gate_proj too: the short names collide)
            b.matmul("gate_proj", [t for t in tensors["gate_proj"] if ".self_attn." in t.name], i, "attention")
        if not self.kv_shared:
            b.matmul("kv_a_proj_with_mqa", tensors["kv_a_proj_with_mqa"], i, "attention", parallel=Parallel.REPLICATED)
            b.norm("kv_a_layernorm", None, r, i, tensors=tensors["kv_a_layernorm"])
        if self.k_rope_norm:  # dots3-note: the shared rope key RMS-normed before RoPE
            b.norm("k_rope_only_layernorm", None, rope, i, tensors=tensors["k_rope_only_layernorm"])
        if rope:  # (a kv-shared layer ropes its queries only; NoPE layers have no rope dims)
            rope_elems = n * (nh + (0 if self.kv_shared else 1)) * rope
            b.elementwise("rope", rope_elems, rope_elems, i, "attention", kernels=10, kind=OpKind.ROPE)
        if self.softmax_scaling:  # queries times scale · log(pos + 1) + bias, per head
            qe = n * nh * self.qk_head_dim
            b.add(name="softmax_scaling", kind=OpKind.ELEMENTWISE, category="attention", layer=i,
                  weight_bytes=b.fmt.bytes_of(tensors["softmax_scaling"]), act_read_bytes=qe * a,
                  act_write_bytes=qe * a, kernels=2)
        lat_elems = r + rope
        lat_tok = b.kv.nbytes(lat_elems)
        if not self.kv_shared:
            b.add(name="kv_append", kind=OpKind.KV_APPEND, category="attention", layer=i,
                  act_read_bytes=n * lat_elems * a, kv_write_bytes=n * lat_tok, kernels=2)
        all_keys = attended_keys(s.cached_tokens, s.new_tokens)  # Σ over the queries of the keys they see
        seen = distinct_keys(s.cached_tokens, s.new_tokens)
        if self.indexer:
            self._trace_indexer(b, i, tensors, all_keys, seen)
        # the MLA over the selected keys: min(p + 1, index_topk) per query (a sliding window's sum)
        keys = attended_keys(s.cached_tokens, s.new_tokens, window=self.index_topk)
        read = min(seen, s.new_tokens * self.index_topk)  # the distinct keys the selections can cover
        kv_b = tensors["kv_b_proj"]
        kv_b_bytes = b.fmt.bytes_of(kv_b)
        k_part = nh * self.qk_nope_head_dim * r
        total = nh * (self.qk_nope_head_dim + self.v_head_dim) * r
        k_bytes = kv_b_bytes * k_part // total
        b.add(name="q_absorb", kind=OpKind.MATMUL, category="attention", layer=i, flops=2 * n * k_part,
              weight_bytes=k_bytes, act_read_bytes=n * nh * self.qk_nope_head_dim * a,
              act_write_bytes=n * nh * r * a, kernels=1)
        flops = s.batch * nh * (2 * (r + rope) + 2 * r) * keys
        b.add(name=f"attention (top-{self.index_topk})", kind=OpKind.ATTENTION, category="attention", layer=i,
              flops=flops, act_read_bytes=n * nh * (r + rope) * a + s.batch * keys * 4,  # + the int32 indices
              act_write_bytes=n * nh * r * a, kv_read_bytes=s.batch * read * lat_tok, kernels=1,
              weight_bytes=b.fmt.bytes_of(tensors["sinks"]) if self.sinks else 0)  # Hy4's sink logits
        b.add(name="v_up", kind=OpKind.MATMUL, category="attention", layer=i, flops=2 * n * (total - k_part),
              weight_bytes=kv_b_bytes - k_bytes, act_read_bytes=n * nh * r * a,
              act_write_bytes=n * nh * self.v_head_dim * a, kernels=1)
        if self.q_gate or self.out_gate:  # sigmoid(gate) times each head's output
            g = n * nh * self.v_head_dim
            b.elementwise("output_gate", 2 * g, g, i, "attention", kernels=2)
        if self.head_gate:  # dots3-note: sigmoid(g_proj(x)), one scalar per head, scales that head's output
            b.matmul("g_proj", tensors["g_proj"], i, "attention")
            b.elementwise("head_gate", n * nh * (1 + self.v_head_dim), n * nh * self.v_head_dim, i, "attention",
                          kernels=2)
        b.matmul("o_proj", tensors["o_proj"], i, "attention", parallel=Parallel.ROW)
        if self.hc_mult:  # the output weighted into every stream plus the streams, then the FFN's streams collapsed
            h, hc = self.hidden_size, self.hc_mult
            b.elementwise("hc_post", n * (hc + 1) * h + n * hc, n * hc * h, i, "other", kernels=2)
            self._trace_hc(b, i, tensors, "ffn_hc")

    def _trace_hc(self, b, i: int, tensors: dict[str, list[Tensor]], name: str) -> None:
        """An independent hyper-connection (Hy4-preview): the n streams RMS-normed, ``fn`` (a replicated fp32
        matmul to the 2n pre / post logits) and the collapse to one stream by the sigmoid pre weights."""
        n, h, hc = b.shape.tokens, self.hidden_size, self.hc_mult
        b.norm(f"{name}.input_norm", None, hc * h, i, tensors=[])
        fn = next(t for t in tensors[name] if t.name.endswith(".fn"))
        b.add(name=f"{name}.fn", kind=OpKind.MATMUL, category="other", layer=i, flops=2 * n * fn.numel,
              weight_bytes=b.fmt.bytes_of(tensors[name]), act_read_bytes=n * hc * h * 4,
              act_write_bytes=n * fn.shape[0] * 4, kernels=1, parallel=Parallel.REPLICATED)
        b.elementwise(f"{name}.collapse", n * hc * h, n * h, i, "other", kernels=2)

    def _trace_indexer(self, b, i: int, tensors: dict[str, list[Tensor]], all_keys: int, seen: int) -> None:
        """The lightning indexer, replicated on every tensor-parallel rank (vLLM): its query from the MLA's
        normed query latent, its key and head weights from the hidden state, the key normed, roped and
        appended to its cache, then scores of every query against every key it sees (fp32 logits) and
        the top ``index_topk`` of them (int32 indices)."""
        s, n, a = b.shape, b.shape.tokens, b.a
        hi, d, rope = self.index_n_heads, self.index_head_dim, self.qk_rope_head_dim
        own = {t.name.rsplit(".", 2)[-2]: [] for t in tensors["indexer"]}
        for t in tensors["indexer"]:
            own[t.name.rsplit(".", 2)[-2]].append(t)
        rep = Parallel.REPLICATED
        if self.index_q_from_hidden:  # Mistral Large 4: LayerNorm(hidden) then wq_b
            b.add(name="indexer.q_input_norm", kind=OpKind.NORM, category="norm", layer=i,
                  weight_bytes=b.fmt.bytes_of(own["q_input_norm"]), act_read_bytes=n * self.hidden_size * a,
                  act_write_bytes=n * self.hidden_size * a, kernels=1, parallel=rep)
        b.matmul("indexer.wq_b", own["wq_b"], i, "attention", parallel=rep)
        b.matmul("indexer.wk", own["wk"], i, "attention", parallel=rep)
        b.add(name="indexer.k_norm", kind=OpKind.NORM, category="norm", layer=i, weight_bytes=b.fmt.bytes_of(own["k_norm"]),
              act_read_bytes=n * d * a, act_write_bytes=n * d * a, kernels=1, parallel=rep)
        b.matmul("indexer.weights_proj", own["weights_proj"], i, "attention", parallel=rep)
        if self.softmax_scaling:
            b.add(name="indexer.softmax_scaling", kind=OpKind.ELEMENTWISE, category="attention", layer=i,
                  act_read_bytes=n * hi * d * a, act_write_bytes=n * hi * d * a, kernels=2,
                  parallel=rep, weight_bytes=b.fmt.bytes_of(own["softmax_scaling"]))
        rope_elems = n * (hi + 1) * rope
        if rope:
            b.add(name="indexer.rope", kind=OpKind.ROPE, category="attention", layer=i, act_read_bytes=rope_elems * a,
                  act_write_bytes=rope_elems * a, kernels=4, parallel=rep)
        tok = self.indexer_kv_bytes(b.kv)
        b.add(name="indexer.k_append", kind=OpKind.KV_APPEND, category="attention", layer=i,
              act_read_bytes=n * d * a, kv_write_bytes=n * tok, kernels=1, parallel=rep)
        b.add(name="indexer.scores", kind=OpKind.ATTENTION, category="attention", layer=i,
              flops=2 * s.batch * all_keys * hi * (d + 1), act_read_bytes=n * hi * (d + 1) * a,
              act_write_bytes=s.batch * all_keys * 4, kv_read_bytes=s.batch * seen * tok, kernels=1, parallel=rep)
        selected = attended_keys(s.cached_tokens, s.new_tokens, window=self.index_topk)
        # bytes only; an attention op because its cost follows each sequence's context (hardware.serve
        # rebuilds the attention ops of every prefill piece), as the scores' does
        b.add(name=f"indexer.top{self.index_topk}", kind=OpKind.ATTENTION, category="attention", layer=i,
              act_read_bytes=s.batch * all_keys * 4, act_write_bytes=s.batch * selected * 4, kernels=1, parallel=rep)
