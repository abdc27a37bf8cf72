"""Zamba2's (and Zamba's) hybrid layer: a shared transformer block (attention + MLP whose weights several
layers share), a per-layer ``linear``, then a Mamba block (the protocol: ``analysis.mixers.base``).

transformers' ``Zamba2HybridLayer``, per token (h = hidden_size):

1. ``shared_transformer``: the layer's input concatenated with the original token embedding (2h),
   ``input_layernorm`` over 2h, attention reading 2h (q/k/v ``2h -> heads x head_dim``, head_dim
   ``2h / heads``; ``o_proj`` back to h), ``pre_ff_layernorm`` over h, a fused-gate MLP
   (``gate_up_proj`` h -> 2I, ``down_proj`` I -> h). No residual inside the block.
   Each use adds its own low-rank adapters (LoRA-shaped, rank r) to the gate_up projection (always)
   and to q, k and v (``use_shared_attention_adapter``): ``Linear(in, r)`` then ``Linear(r, out)``.
2. ``linear``: h -> h, bias-free, one per layer (not shared).
3. ``mamba_decoder``: the layer's input plus that output, ``input_layernorm``, Mamba-2, residual add.

The shared block's weights are stored once per block (``num_mem_blocks`` blocks, used in turn by the
hybrid layers): the layer that first uses a block holds them (``owner``), the others hold only their
adapters, ``linear``, norm and Mamba. Every use computes the whole block and reads its weights (FLOPs
and weight bytes per use); the parameters count each block once, as transformers' tied modules do.
Each use caches its attention's K/V (``num_key_value_heads x 2 x head_dim`` per token, head_dim
being 2h / heads) and keeps its Mamba-2 state per sequence.

Tensor names: transformers' but for the MLP (``mlp``, there ``feed_forward``), the Mamba
(``mixer``, there ``mamba_decoder.mamba``) and its gated norm (``gated_norm``, there ``norm``).

Zamba (v1) is the same layer with one shared block (``shared_transf``), no adapters, a MLP with
separate gate and up projections, and a Mamba-1 of per-head x/dt projections (``Mamba.head_stacked``).
"""

from __future__ import annotations

from dataclasses import field, replace
from typing import Any

from ..opkinds import Parallel
from ..records import frozen
from ..tensors import Tensor
from ..tensors import linear as _linear
from .attention import Attention
from .base import MixerKind, MixerSpec
from .hybrid import AttentionMambaCache
from .mamba import Mamba


def _by_module(tensors: list[Tensor]) -> dict[str, list[Tensor]]:
    """Tensors keyed by their module's short name (``q_proj``, ``gate_up_proj`` ...)."""
    out: dict[str, list[Tensor]] = {}
    for t in tensors:
        out.setdefault(t.name.rsplit(".", 2)[-2], []).append(t)
    return out


@frozen
class SharedBlockMamba(AttentionMambaCache, MixerSpec):
    """A Zamba2 hybrid layer (see the module doc). ``attention`` reads the 2h-wide concatenation
    (its ``hidden_size`` is 2h; ``o_proj`` writes h); ``mlp`` is the shared block's MLP (a
    ``spec.MLP``: h -> I -> h, fused gate_up); ``owner``: this layer holds the shared block's
    weights; ``use``: its index among the hybrid layers (the adapters' slot) and ``block_layer`` the
    layer holding its block's weights (names only: not compared, so every use of a block is one
    layer shape)."""

    hidden_size: int
    attention: Attention
    mlp: Any
    mamba: Mamba
    adapter_rank: int
    attention_adapters: bool
    owner: bool
    mlp_adapter: bool = True  # Zamba2's gate_up adapters (Zamba has no adapters)
    block_module: str = "shared_transformer"  # Zamba: shared_transf
    use: int = field(default=0, compare=False)
    block_layer: int = field(default=0, compare=False)

    kind = MixerKind.SHARED_BLOCK_MAMBA
    title = "shared attention block + Mamba"
    # vLLM's Zamba2: the per-layer ``linear`` is a ReplicatedLinear
    tp_replicated_modules = ("linear",)

    def label(self) -> str:
        return "shared-" + self.attention.label() + "+mamba"

    def summary(self) -> str:
        return f"shared attention block ({self.attention.summary()}) + {self.mamba.summary()}"

    # ---- parameters ------------------------------------------------------------------------------

    def shared_tensors(self, st: str) -> list[Tensor]:
        """The shared block's own weights under ``st`` (``...shared_transformer``)."""
        h = self.hidden_size
        out = [Tensor(f"{st}.input_layernorm.weight", (2 * h,), "norm")]
        for t in self.attention.tensors(f"{st}.self_attn"):
            if t.name == f"{st}.self_attn.o_proj.weight":
                t = Tensor(t.name, (h, self.attention.o_in), t.kind)
            out.append(t)
        out.append(Tensor(f"{st}.pre_ff_layernorm.weight", (h,), "norm"))
        out.extend(self.mlp.tensors(f"{st}.mlp"))
        return out

    def adapter_tensors(self, st: str) -> list[Tensor]:
        """This use's adapters: ``(r, in)`` then ``(out, r)`` for q, k, v (if any) and gate_up."""
        out: list[Tensor] = []
        r, k = self.adapter_rank, self.use
        wide = 2 * self.hidden_size
        if self.attention_adapters:
            for p in ("q", "k", "v"):
                _linear(out, f"{st}.self_attn.linear_{p}_adapter_list.{k}.0", r, wide, False)
                _linear(out, f"{st}.self_attn.linear_{p}_adapter_list.{k}.1", wide, r, False)
        if self.mlp_adapter:
            _linear(out, f"{st}.mlp.gate_up_proj_adapter_list.{k}.0", r, self.hidden_size, False)
            _linear(out, f"{st}.mlp.gate_up_proj_adapter_list.{k}.1", 2 * self.mlp.intermediate_size, r, False)
        return out

    def tensors(self, prefix: str) -> list[Tensor]:
        base = prefix[: -len(".mixer")] if prefix.endswith(".mixer") else prefix
        st = f"{base}.{self.block_module}"
        h = self.hidden_size
        out = self.shared_tensors(st) if self.owner else []
        out.extend(self.adapter_tensors(st))
        _linear(out, f"{base}.linear", h, h, False)
        out.append(Tensor(f"{base}.mamba_decoder.input_layernorm.weight", (h,), "norm"))
        out.extend(self.mamba.tensors(f"{base}.mixer"))
        return out

    # ---- trace -----------------------------------------------------------------------------------

    def trace(self, b, i: int, tensors: dict[str, list[Tensor]]) -> None:
        n, h = b.shape.tokens, self.hidden_size
        # the shared weights are read on every use, wherever they are stored
        shared = _by_module(self.shared_tensors(f"model.layers.{self.block_layer}.{self.block_module}"))
        adapters = self.adapter_tensors(f"model.layers.{i}.{self.block_module}")
        # concatenate the hidden state and the original embedding, norm over 2h
        b.elementwise("concat_embedding", 2 * n * h, 2 * n * h, i, "attention")
        b.norm("shared_input_layernorm", None, 2 * h, i, tensors=shared["input_layernorm"])
        start = len(b.ops)
        self.attention.trace(b, i, shared)
        if self.attention_adapters:
            # after v_proj: per projection, down (2h -> r), up (r -> out) and the add
            at = next(j for j in range(start, len(b.ops)) if b.ops[j].name == "v_proj") + 1
            tail, b.ops = b.ops[at:], b.ops[:at]
            for p, width in (("q", self.attention.q_dim), ("k", self.attention.k_dim), ("v", self.attention.v_dim)):
                down, up = (t for t in adapters if f"linear_{p}_adapter_list" in t.name)
                b.matmul(f"{p}_adapter.down", [down], i, "attention", parallel=Parallel.REPLICATED)
                b.matmul(f"{p}_adapter.up", [up], i, "attention")
                b.elementwise(f"{p}_adapter_add", 2 * n * width, n * width, i, "attention")
            b.ops.extend(tail)
        b.norm("pre_ff_layernorm", None, h, i, tensors=shared["pre_ff_layernorm"])
        if self.mlp_adapter:
            down, up = (t for t in adapters if "gate_up_proj_adapter_list" in t.name)
            two_i = 2 * self.mlp.intermediate_size
            b.matmul("gate_up_adapter.down", [down], i, "ffn", parallel=Parallel.REPLICATED)
            b.matmul("gate_up_adapter.up", [up], i, "ffn")
            b.elementwise("gate_up_adapter_add", 2 * n * two_i, n * two_i, i, "ffn")
        b.mlp(i, self.mlp, {f"shared_mlp.{k}": v for k, v in shared.items()}, prefix="shared_mlp.")
        b.matmul("linear", tensors["linear"], i, "attention", parallel=Parallel.REPLICATED)
        # the Mamba block's input: the layer's input plus the shared block's output, normed
        b.elementwise("add_shared_output", 2 * n * h, n * h, i, "other")
        b.norm("mamba_input_layernorm", None, h, i, tensors=tensors.get("mamba_decoder", []))
        self.mamba.trace(b, i, tensors)

    # the cache: AttentionMambaCache (the attention's K/V per token, the Mamba's state per sequence)

    # ---- tensor parallelism and what-ifs ---------------------------------------------------------

    def tp_kv_split(self, tp: int, layer: int) -> tuple[int, int]:
        self.mamba.tp_kv_split(tp, layer)
        return self.attention.tp_kv_split(tp, layer)

    def with_window(self, window: int) -> "SharedBlockMamba":
        return replace(self, attention=self.attention.with_window(window))

    def rope_tables(self) -> tuple[tuple[int, float], ...]:
        return self.attention.rope_tables()

    def attention_shape(self) -> tuple[int, int] | None:
        return self.attention.attention_shape()
