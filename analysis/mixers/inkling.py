"""Thinking Machines' Inkling / Inkling-2 attention block (transformers' ``InklingAttention`` /
``Inkling2SlidingAttention`` / ``Inkling2FullAttention``): the spec, its tensors, trace and cache (the
protocol: ``analysis.mixers.base``).

Softmax attention without RoPE: positions enter through a hidden-state-conditioned relative position bias
(per head, ``d_rel`` relative states from a projection of the layer input mix a learned ``(d_rel, extent)``
bank of bias-vs-distance profiles; ``extent`` is the window on sliding layers, ``rel_extent`` on full
ones). K and V go through a depthwise causal short conv (``conv_kernel`` taps) before the cache.

Inkling (``version`` 1): q/k/v/r/o projections, q/k RMSNorms over head_dim, softmax scale 1 / head_dim.
Inkling-2 (``version`` 2): the query, K and V projections are ``*.linear`` with a learned (heads, dim) scale
and an L2 clip on q (and on the relative states), an L2 clip on k and a weightless RMS norm on v; a
per-token attention sink (``sink_proj``); the output gated by sigmoid(``o_proj.gate_proj``(x)) before
``o_proj.linear``; full layers convolve K and V with taps of their own per token (``dynamic_conv``: a
``static_weight`` plus ``weight_proj`` of the layer input per KV head).

The layer's own parameters outside attention and the MoE are listed here too (with their names in the
checkpoint, one level up), so that ``Layer``, ``MLP`` and ``MoE`` stay Llama-shaped: the short convs on
the attention and FFN outputs (``attn_sconv`` / ``mlp_sconv``; Inkling-2's ``post_attention_convolution``
/ ``post_mlp_convolution``), Inkling's dense-MLP ``global_scale`` and its router's rows for the shared
experts (which the router scores beside the routed ones) and ``global_scale``; Inkling-2's block
attention-residual queries (``attention_input``: one, or three on full layers; none on layer 0;
``mlp_input``: one) and a full layer's K / V input norms.

Cache: K and V of every KV head per token (sliding layers keep ``window`` tokens); per sequence, the
four conv windows, ``(2·kv_heads·head_dim + 2·hidden) × (conv_kernel - 1)`` elements (transformers'
cache keeps ``conv_kernel`` columns of each; serving engines ``conv_kernel - 1``). The torch runtime does
not run it: ``verify`` refuses the layer kind.
"""

from __future__ import annotations

from ..opkinds import OpKind, Parallel
from ..records import frozen
from ..tensors import Tensor
from ..tensors import linear as _linear
from .attention import Attention, attended_keys, distinct_keys
from .base import MixerKind


@frozen
class InklingAttention(Attention):
    """Inkling's attention block (module doc); ``Attention``'s fields give its heads, window and cache."""

    version: int = 1
    d_rel: int = 16
    rel_extent: int = 1024  # the bias bank's width on this layer (the window on sliding layers)
    conv_kernel: int = 4
    dynamic_conv: bool = False  # Inkling-2 full layers
    mlp_scale: bool = False  # Inkling dense layers: mlp.global_scale
    router_shared_rows: int = 0  # Inkling MoE layers: shared experts scored by the router (+ its global_scale)
    residual_queries: int = 0  # Inkling-2: attention_input queries (0 on layer 0, 1 sliding, 3 full)
    # Inkling-2's block attention residuals (Inkling2BlockAttentionResidual: learned queries attending over the
    # RMS-normed block states, eager attention): the block states closed before this layer (ceil(i / per), per =
    # n_layers_per_attn_res_block; the same on every loop pass) and whether the layer opens a block (i % per == 0:
    # its input joins the states mlp_input reads). attention_input attends block_states + 1 (the partial state),
    # mlp_input block_states + block_boundary + 1: 4·hidden FLOPs per query and state
    block_states: int = 0
    block_boundary: bool = False
    kv_input_norms: bool = False  # Inkling-2 full layers: k_input_layernorm and v_input_layernorm
    # Inkling-2 Loop's looped layers: four message gates (q, k, v, mlp; each down_proj 2·hidden -> rank,
    # forget_gate_proj and message_gate_proj rank -> hidden) of this rank (0: not a looped layer). They mix the
    # previous pass's messages in on the later passes, not on the first. ``messages``: on a later pass, the states
    # message_input's four queries (for this layer) attend, the previous pass's core blocks (end - start) / per
    # (its closed ones after the first, plus its output); 0 on the first pass
    loop_gate_rank: int = 0
    messages: int = 0

    kind = MixerKind.INKLING
    title = "Inkling attention"

    def label(self) -> str:
        return (f"sliding({self.window})" if self.window else "full") + "+relbias"

    def summary(self) -> str:
        return f"{super().summary()}, relative position bias (d_rel {self.d_rel}), short convs on K and V"

    # ---- parameters ------------------------------------------------------------------------------

    def tensors(self, prefix: str) -> list[Tensor]:
        out: list[Tensor] = []
        parent = prefix.rsplit(".", 1)[0]  # model.layers.N
        h, q, k = self.hidden_size, self.q_dim, self.k_dim
        heads, kv = self.num_attention_heads, self.num_key_value_heads
        K = self.conv_kernel
        if self.version == 1:
            _linear(out, f"{prefix}.q_proj", q, h, False)
            _linear(out, f"{prefix}.k_proj", k, h, False)
            _linear(out, f"{prefix}.v_proj", k, h, False)
            _linear(out, f"{prefix}.r_proj", heads * self.d_rel, h, False)
            _linear(out, f"{prefix}.o_proj", h, q, False)
            out.append(Tensor(f"{prefix}.k_sconv.conv1d.weight", (k, 1, K), "conv"))
            out.append(Tensor(f"{prefix}.v_sconv.conv1d.weight", (k, 1, K), "conv"))
            out.append(Tensor(f"{prefix}.q_norm.weight", (self.head_dim,), "norm"))
            out.append(Tensor(f"{prefix}.k_norm.weight", (self.head_dim,), "norm"))
            out.append(Tensor(f"{prefix}.rel_logits_proj.proj", (self.d_rel, self.rel_extent), "other"))
            out.append(Tensor(f"{parent}.attn_sconv.conv1d.weight", (h, 1, K), "conv"))
            out.append(Tensor(f"{parent}.mlp_sconv.conv1d.weight", (h, 1, K), "conv"))
            if self.mlp_scale:
                out.append(Tensor(f"{parent}.mlp.global_scale", (1,), "other"))
            if self.router_shared_rows:
                out.append(Tensor(f"{parent}.mlp.router.shared_weight", (self.router_shared_rows, h), "router"))
                out.append(Tensor(f"{parent}.mlp.router.global_scale", (1,), "router"))
            return out
        if self.residual_queries:
            shape = (h,) if self.residual_queries == 1 else (self.residual_queries, h)
            out.append(Tensor(f"{parent}.attention_input.query", shape, "other"))
        out.append(Tensor(f"{parent}.mlp_input.query", (h,), "other"))
        if self.kv_input_norms:
            out.append(Tensor(f"{parent}.k_input_layernorm.weight", (h,), "norm"))
            out.append(Tensor(f"{parent}.v_input_layernorm.weight", (h,), "norm"))
        _linear(out, f"{prefix}.q_proj.linear", q, h, False)
        out.append(Tensor(f"{prefix}.q_proj.norm.scale", (heads, self.head_dim), "other"))
        for p in ("k_proj", "v_proj"):
            _linear(out, f"{prefix}.{p}.linear", k, h, False)
            if self.dynamic_conv:
                out.append(Tensor(f"{prefix}.{p}.sconv.static_weight", (K, k), "conv"))
                _linear(out, f"{prefix}.{p}.sconv.weight_proj", kv * K, h, False)
            else:
                out.append(Tensor(f"{prefix}.{p}.sconv.conv1d.weight", (k, 1, K), "conv"))
        _linear(out, f"{prefix}.o_proj.gate_proj", q, h, False)
        _linear(out, f"{prefix}.o_proj.linear", h, q, False)
        _linear(out, f"{prefix}.sink_proj", heads, h, False)
        _linear(out, f"{prefix}.relative_position_bias.linear", heads * self.d_rel, h, False)
        out.append(Tensor(f"{prefix}.relative_position_bias.norm.scale", (heads, self.d_rel), "other"))
        out.append(Tensor(f"{prefix}.relative_position_bias.proj", (self.d_rel, self.rel_extent), "other"))
        out.append(Tensor(f"{parent}.post_attention_convolution.conv1d.weight", (h, 1, K), "conv"))
        out.append(Tensor(f"{parent}.post_mlp_convolution.conv1d.weight", (h, 1, K), "conv"))
        for g in ("q", "k", "v", "mlp") if self.loop_gate_rank else ():
            r = self.loop_gate_rank
            _linear(out, f"{parent}.{g}_message_gate.down_proj", r, 2 * h, False)
            _linear(out, f"{parent}.{g}_message_gate.forget_gate_proj", h, r, False)
            _linear(out, f"{parent}.{g}_message_gate.message_gate_proj", h, r, False)
        return out

    # ---- trace -----------------------------------------------------------------------------------

    def trace(self, b, i: int, tensors: dict[str, list[Tensor]]) -> None:
        s, n, a, h = b.shape, b.shape.tokens, b.a, self.hidden_size
        heads, q, k, K = self.num_attention_heads, self.q_dim, self.k_dim, self.conv_kernel

        def named(key: str, piece: str) -> list[Tensor]:
            return [t for t in tensors.get(key, []) if f".{piece}" in t.name]

        def small(name: str, ts: list[Tensor], reads: int, writes: int, kind: str = "elementwise") -> None:
            b.add(name=name, kind=kind, category="attention", layer=i, weight_bytes=b.fmt.bytes_of(ts),
                  act_read_bytes=reads * a, act_write_bytes=writes * a, kernels=2)

        def residual(name: str, ts: list[Tensor], queries: int, states: int) -> None:
            """A block attention residual: ``queries`` learned queries over ``states`` normed states (q·k, p·v)."""
            b.add(name=name, kind=OpKind.ATTENTION, category="attention", layer=i, flops=4 * n * h * queries * states,
                  weight_bytes=b.fmt.bytes_of(ts), act_read_bytes=n * states * h * a,
                  act_write_bytes=n * queries * h * a, kernels=3)

        v2 = self.version == 2
        if v2:
            if self.residual_queries:  # block attention residual: learned queries over the block states
                residual("attention_input", tensors.get("attention_input", []), self.residual_queries,
                         self.block_states + 1)
            for p in ("k_input_layernorm", "v_input_layernorm"):
                if p in tensors:
                    b.norm(p, None, h, i, tensors=tensors[p])
            if self.messages:  # a later loop pass: the previous pass's four messages (message_input's four
                # learned queries of this layer over its block states; the queries read with final_input's), then
                # the four message gates
                residual("message_input", [], 4, self.messages)
                for g in ("q", "k", "v", "mlp"):
                    gate = tensors.get(f"{g}_message_gate", [])
                    b.matmul(f"{g}_message_gate.down_proj", [t for t in gate if "down_proj" in t.name], i,
                             "attention")
                    b.matmul(f"{g}_message_gate.gates", [t for t in gate if "down_proj" not in t.name], i,
                             "attention")
                    b.elementwise(f"{g}_message_gate.mix", 4 * n * h, n * h, i, "attention", kernels=2)
        qp = "q_proj.linear" if v2 else "q_proj."
        b.matmul("q_proj", named("q_proj", qp), i, "attention")
        for p in ("k_proj", "v_proj"):
            b.matmul(p, named(p, f"{p}.linear") if v2 else named(p, f"{p}."), i, "attention")
            conv = named(p, "sconv") if v2 else tensors.get(p[0] + "_sconv", [])
            if self.dynamic_conv:
                wp = [t for t in conv if "weight_proj" in t.name]
                b.matmul(f"{p}.weight_proj", wp, i, "attention")
                b.conv(i, f"{p}.sconv", k, K, [t for t in conv if "weight_proj" not in t.name], kernels=3)
            else:
                b.conv(i, f"{p}.sconv", k, K, conv, kernels=2)
        rel = named("relative_position_bias", "linear") if v2 else tensors.get("r_proj", [])
        b.matmul("rel_proj", rel, i, "attention")
        if v2:
            b.matmul("sink_proj", tensors.get("sink_proj", []), i, "attention", parallel=Parallel.REPLICATED)
            small("qk_norms", named("q_proj", "norm.scale") + named("relative_position_bias", "norm.scale"),
                  n * (q + 2 * k + heads * self.d_rel), n * (q + 2 * k + heads * self.d_rel), kind="norm")
        else:
            b.norm("q_norm", None, q, i, tensors=tensors.get("q_norm", []))
            b.norm("k_norm", None, k, i, tensors=tensors.get("k_norm", []))
        kv_elems = self.kv_elements_per_token()
        b.add(name="kv_append", kind=OpKind.KV_APPEND, category="attention", layer=i,
              act_read_bytes=n * kv_elems * a, kv_write_bytes=n * b.kv.nbytes(kv_elems), kernels=2)
        keys = attended_keys(s.cached_tokens, s.new_tokens, self.window, self.chunk)
        seen = distinct_keys(s.cached_tokens, s.new_tokens, self.window, self.chunk)
        # q·k and p·v over the attended keys, plus the relative states times the bias bank (every query
        # mixes the whole (d_rel, extent) bank, as transformers materialises it)
        flops = s.batch * heads * 2 * 2 * self.head_dim * keys + 2 * n * heads * self.d_rel * self.rel_extent
        bank = named("rel_logits_proj", "proj") + named("relative_position_bias", "proj")
        b.add(name="attention", kind=OpKind.ATTENTION, category="attention", layer=i, flops=flops,
              weight_bytes=b.fmt.bytes_of(bank), act_read_bytes=n * (q + heads * self.d_rel) * a,
              act_write_bytes=n * q * a, kv_read_bytes=s.batch * seen * b.kv.nbytes(kv_elems), kernels=3)
        if v2:
            b.matmul("o_gate_proj", named("o_proj", "gate_proj"), i, "attention")
            b.elementwise("output_gate", 2 * n * q, n * q, i, "attention", kernels=2)
        b.matmul("o_proj", named("o_proj", "linear") if v2 else tensors.get("o_proj", []), i, "attention",
                 parallel=Parallel.ROW)
        post = ("post_attention_convolution", "post_mlp_convolution") if v2 else ("attn_sconv", "mlp_sconv")
        for p in post:  # the attention output's conv here; the FFN output's (after the FFN) counted with it
            b.conv(i, p, h, K, tensors.get(p, []), kernels=2)
        if self.router_shared_rows:  # Inkling's router also scores the shared experts (its weight in the router op)
            b.add(name="router (shared rows)", kind="router", category="ffn", layer=i,
                  flops=2 * n * h * self.router_shared_rows, act_write_bytes=n * self.router_shared_rows * 4,
                  kernels=0, parallel=Parallel.REPLICATED)
        if v2:  # the FFN input's block attention residual
            residual("mlp_input", tensors.get("mlp_input", []), 1, self.block_states + self.block_boundary + 1)
        elif self.mlp_scale:  # Inkling's dense-MLP scale
            small("mlp_scale", tensors.get("global_scale", []), 2 * n * h, n * h)

    # ---- cache -----------------------------------------------------------------------------------

    def state_elements(self) -> tuple[int, int]:
        """The four conv windows (K, V, attention output, FFN output) of ``conv_kernel - 1`` columns."""
        return (2 * self.k_dim + 2 * self.hidden_size) * (self.conv_kernel - 1), 0

    def with_window(self, window: int) -> "InklingAttention | None":
        return None  # the bias bank's extent follows the window on sliding layers: not modelled

    def tp_shard(self, tp: int):
        raise NotImplementedError("no tensor-parallel shard of Inkling attention layers is modelled")

    def rope_tables(self) -> tuple[tuple[int, float], ...]:
        return ()
