"""Griffin's recurrent block (Google RecurrentGemma, transformers' ``recurrent_gemma``): a gated linear
recurrence (RG-LRU) behind a temporal conv, in ``lru_width`` channels (the protocol: ``analysis.mixers.base``;
the trace conventions of recurrent mixers: ``analysis.trace``, "recurrent mixers").

transformers' ``RecurrentGemmaRecurrentBlock``, per token (h = hidden_size, w = lru_width, H =
num_attention_heads, blocks of ``bw = w / H`` channels):

1. ``linear_y`` (h -> w, biased) then GELU: the output gate branch; ``linear_x`` (h -> w, biased);
2. ``conv_1d``: a depthwise causal conv of ``conv1d_width`` taps over the w channels, biased, no activation;
3. the RG-LRU (``rg_lru``): two block-diagonal gates, ``input_gate_weight`` and ``recurrent_gate_weight``
   ((H, bw, bw) each, biased (H, bw)), sigmoids; ``log a = -8 · r · softplus(recurrent_param)`` (w);
   ``h ← a ⊙ h + sqrt(1 - a²) ⊙ (i ⊙ x)``: one multiply-add per channel on the state;
4. ``x · y`` then ``linear_out`` (w -> h, biased).

Per-sequence state (transformers' ``_setup_cache`` / the block's ``conv1d_state`` and ``rg_lru.recurrent_states``):
the conv window, ``w × (conv1d_width - 1)`` in the state dtype (after a prompt transformers keeps that many columns
of the w conv inputs; its zero-initialised buffer is sized by hidden_size, the same in every published config),
plus the recurrence's ``w`` channels, in fp32 whatever the model dtype (``RECURRENCE_BYTES``; transformers'
``_setup_cache``). Under tensor parallelism the H gate blocks split ``tp``
ways with the channels.
"""

from __future__ import annotations

from ..errors import OptionError
from ..opkinds import OpKind, Parallel
from ..records import frozen
from ..tensors import Tensor
from ..tensors import linear as _linear
from .base import MixerKind, MixerSpec

#: Bytes per element of the RG-LRU's recurrence: fp32, whatever the model or state dtype
RECURRENCE_BYTES = 4


@frozen
class RGLRU(MixerSpec):
    """Griffin / RecurrentGemma's recurrent block (see the module doc)."""

    hidden_size: int
    lru_width: int
    num_heads: int  # blocks of the block-diagonal gates (the config's num_attention_heads)
    conv_kernel: int  # conv1d_width

    kind = MixerKind.RG_LRU
    title = "RG-LRU"
    module = "mixer"  # the checkpoint's temporal_block on recurrent layers (CheckpointLayout.modules)

    @property
    def block_width(self) -> int:
        return self.lru_width // self.num_heads

    def summary(self) -> str:
        return f"RG-LRU (width {self.lru_width}, {self.num_heads} gate blocks, conv {self.conv_kernel})"

    # ---- parameters ------------------------------------------------------------------------------

    def tensors(self, prefix: str) -> list[Tensor]:
        out: list[Tensor] = []
        h, w, H, bw = self.hidden_size, self.lru_width, self.num_heads, self.block_width
        _linear(out, f"{prefix}.linear_y", w, h, True)
        _linear(out, f"{prefix}.linear_x", w, h, True)
        out.append(Tensor(f"{prefix}.conv_1d.weight", (w, 1, self.conv_kernel), "conv"))
        out.append(Tensor(f"{prefix}.conv_1d.bias", (w,), "bias"))
        out.append(Tensor(f"{prefix}.rg_lru.recurrent_param", (w,), "other"))
        for gate in ("input_gate", "recurrent_gate"):
            out.append(Tensor(f"{prefix}.rg_lru.{gate}_weight", (H, bw, bw), "linear"))
            out.append(Tensor(f"{prefix}.rg_lru.{gate}_bias", (H, bw), "bias"))
        _linear(out, f"{prefix}.linear_out", h, w, True)
        return out

    # ---- trace -----------------------------------------------------------------------------------

    def trace(self, b, i: int, tensors: dict[str, list[Tensor]]) -> None:
        n, a, w = b.shape.tokens, b.a, self.lru_width
        b.matmul("linear_y", tensors["linear_y"], i, "ssm")
        b.elementwise("gelu_y", n * w, n * w, i, "ssm")
        b.matmul("linear_x", tensors["linear_x"], i, "ssm")
        # depthwise causal conv over w channels, biased: 2·n·w·conv_kernel
        b.conv(i, "conv_1d", w, self.conv_kernel, tensors["conv_1d"], kernels=1)
        lru = {t.name.rsplit(".", 1)[-1]: t for t in tensors["rg_lru"]}
        # the two block-diagonal gates (baddbmm over H blocks of bw x bw): 2·n·H·bw² each; read x (w), write w
        for gate in ("input_gate", "recurrent_gate"):
            wt, bias = lru[f"{gate}_weight"], lru[f"{gate}_bias"]
            b.add(name=gate, kind=OpKind.MATMUL, category="ssm", layer=i, flops=2 * n * wt.numel,
                  weight_bytes=b.fmt.bytes_of([wt, bias]), act_read_bytes=n * w * a, act_write_bytes=n * w * a,
                  kernels=2, parallel=Parallel.COLUMN)
        # the fp32 recurrence, written every step, read when the sequences already have one (b.state_io's rule)
        per_seq = b.shape.batch * RECURRENCE_BYTES * self.lru_width
        rd, wr = (per_seq if b.shape.cached_tokens > 0 else 0), per_seq
        # the recurrence, per token and channel: h ← a·h + x̃ (one multiply-add: 2·n·w FLOPs); a from the
        # recurrent gate and softplus(recurrent_param), x̃ = sqrt(1 - a²)·(input gate · x) elementwise. Reads x and
        # both gates, writes the output
        b.add(name="rg_lru_scan", kind=OpKind.SCAN, category="ssm", layer=i, flops=2 * n * w,
              weight_bytes=b.fmt.bytes_of([lru["recurrent_param"]]), act_read_bytes=3 * n * w * a,
              act_write_bytes=n * w * a, state_read_bytes=rd, state_write_bytes=wr, kernels=8)
        b.gate(i, "gate", w, [], kernels=1)  # x · y
        b.matmul("linear_out", tensors["linear_out"], i, "ssm", parallel=Parallel.ROW)

    # ---- state and tensor parallelism ------------------------------------------------------------

    def state_elements(self) -> tuple[int, int]:
        """(conv window, recurrence) elements per sequence."""
        return self.lru_width * (self.conv_kernel - 1), self.lru_width

    # the recurrent part in fp32 whatever the dtype (RECURRENCE_BYTES): MixerSpec.state_bytes / recurrent_dtype read it
    ssm_state_dtype = "fp32"

    def tp_kv_split(self, tp: int, layer: int) -> tuple[int, int]:
        if self.num_heads % tp:
            raise OptionError(f"--tp {tp}: {self.num_heads} RG-LRU gate blocks do not split {tp} ways (layer {layer})")
        return tp, 1
