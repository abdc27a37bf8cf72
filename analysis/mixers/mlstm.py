"""The mLSTM layer of xLSTM (NX-AI xLSTM-7B, transformers' ``xlstm``): a matrix-memory LSTM, linear attention
with exponential input gates and sigmoid forget gates per head (the protocol: ``analysis.mixers.base``; the
trace conventions of recurrent mixers: ``analysis.trace``, "recurrent mixers").

transformers' ``xLSTMLayer``, per token (h = hidden_size, H = num_heads, ``qk = int(h·qk_dim_factor)``,
``v = int(h·v_dim_factor)``, per head ``dk = qk / H`` and ``dv = v / H``):

1. ``q``, ``k`` (h -> qk), ``v`` and ``ogate_preact`` (h -> v), biased by ``use_bias``; ``igate_preact`` and
   ``fgate_preact`` (h -> H, always biased), soft-capped at ``gate_soft_cap`` (tanh). ``weight_mode`` "fused"
   stores the first four as one ``qkv_opreact`` (h -> 2·qk + 2·v) and the gates as ``ifgate_preact``
   (h -> 2·H): the same elements. No conv, no RoPE;
2. the recurrence per head, with a stabiliser m: ``m' = max(logσ(f) + m, i)``, ``C ← e^(logσ(f)+m-m')·C +
   e^(i-m')·k vᵀ`` (dk × dv), ``n ← … ·n + … ·k`` (dk), ``h = (q/√dk)·C / max(|(q/√dk)·n|, e^-m') `` (dv).
   A prompt runs chunkwise (``chunk_size``), decode the recurrent step;
3. ``multihead_norm``: a LayerNorm per head over dv (weight over all v features, bias by ``use_bias``), times
   ``sigmoid(ogate_preact)``, then ``out_proj`` (v -> h, biased by ``use_bias``).

Per-sequence state (transformers' ``xLSTMCache.rnn_state``: C, n and m per layer): ``H × (dk·dv + dk + 1)``,
no conv window, kept in the model's dtype (``inference_state_dtype`` is the step kernel's arithmetic, not the
cache's); under tensor parallelism the heads split ``tp`` ways. (The cache sizes dk and dv from the config's
dims rounded up to 64; they are the layer's whenever ``int(h·factor)`` is a multiple of 64, as in xLSTM-7B.)
"""

from __future__ import annotations

from ..errors import OptionError
from ..opkinds import OpKind, Parallel
from ..records import frozen
from ..tensors import Tensor
from ..tensors import linear as _linear
from .base import MixerKind, MixerSpec


@frozen
class MLSTM(MixerSpec):
    """xLSTM's mLSTM layer (see the module doc)."""

    hidden_size: int
    num_heads: int
    qk_dim: int
    v_dim: int
    bias: bool = False
    fused: bool = False  # weight_mode "fused": qkv_opreact and ifgate_preact

    kind = MixerKind.MLSTM
    title = "mLSTM"
    module = "mixer"  # the checkpoint's mlstm_layer (CheckpointLayout.modules)

    @property
    def head_k_dim(self) -> int:
        return self.qk_dim // self.num_heads

    @property
    def head_v_dim(self) -> int:
        return self.v_dim // self.num_heads

    def summary(self) -> str:
        return (f"mLSTM ({self.num_heads} heads, q/k {self.head_k_dim}, v {self.head_v_dim}, "
                f"state {self.head_k_dim}x{self.head_v_dim})")

    # ---- parameters ------------------------------------------------------------------------------

    def tensors(self, prefix: str) -> list[Tensor]:
        out: list[Tensor] = []
        h, qk, v, H, b = self.hidden_size, self.qk_dim, self.v_dim, self.num_heads, self.bias
        if self.fused:
            _linear(out, f"{prefix}.qkv_opreact", 2 * qk + 2 * v, h, b)
            _linear(out, f"{prefix}.ifgate_preact", 2 * H, h, True)
        else:
            _linear(out, f"{prefix}.q", qk, h, b)
            _linear(out, f"{prefix}.k", qk, h, b)
            _linear(out, f"{prefix}.v", v, h, b)
            _linear(out, f"{prefix}.ogate_preact", v, h, b)
            _linear(out, f"{prefix}.igate_preact", H, h, True)
            _linear(out, f"{prefix}.fgate_preact", H, h, True)
        out.append(Tensor(f"{prefix}.multihead_norm.weight", (v,), "norm"))
        if b:
            out.append(Tensor(f"{prefix}.multihead_norm.bias", (v,), "norm"))
        _linear(out, f"{prefix}.out_proj", h, v, b)
        return out

    # ---- trace -----------------------------------------------------------------------------------

    def trace(self, b, i: int, tensors: dict[str, list[Tensor]]) -> None:
        n, a, H, qk, v = b.shape.tokens, b.a, self.num_heads, self.qk_dim, self.v_dim
        names = ("qkv_opreact", "ifgate_preact") if self.fused else ("q", "k", "v", "ogate_preact", "igate_preact",
                                                                     "fgate_preact")
        for name in names:
            b.matmul(name, tensors[name], i, "ssm")
        # the input / forget gates' soft cap (tanh) over 2·H values per token
        b.elementwise("gate_soft_cap", 2 * n * H, 2 * n * H, i, "ssm", kernels=1)
        _, st = self.state_elements()
        rd, wr = b.state_io(st)
        # recurrent form per token and head: the outer product k vᵀ (dk·dv multiply-adds) added into
        # C ← f·C + i·k vᵀ, h = q·C (dk·dv), the normaliser q·n (dk): 2·dk·(2·dv + 1) FLOPs per head (the
        # gates, the stabiliser m and n ← f·n + i·k are elementwise; prefill's chunkwise form does more inside a
        # chunk, which is not counted). Reads q, k, v and the two gates, writes h
        flops = 2 * n * H * self.head_k_dim * (2 * self.head_v_dim + 1)
        b.add(name="mlstm_cell", kind=OpKind.SCAN, category="ssm", layer=i, flops=flops,
              act_read_bytes=n * (2 * qk + v + 2 * H) * a, act_write_bytes=n * v * a, state_read_bytes=rd,
              state_write_bytes=wr, kernels=8)
        # per-head LayerNorm over dv, times sigmoid(ogate_preact)
        b.gate(i, "multihead_norm", v, tensors.get("multihead_norm", []), kernels=4)
        b.matmul("out_proj", tensors["out_proj"], i, "ssm", parallel=Parallel.ROW)

    # ---- state and tensor parallelism ------------------------------------------------------------

    def state_elements(self) -> tuple[int, int]:
        dk, dv = self.head_k_dim, self.head_v_dim
        return 0, self.num_heads * (dk * dv + dk + 1)

    def tp_kv_split(self, tp: int, layer: int) -> tuple[int, int]:
        if self.num_heads % tp:
            raise OptionError(f"--tp {tp}: {self.num_heads} mLSTM heads do not split {tp} ways (layer {layer})")
        return tp, 1
