"""The RWKV-7 "Goose" block (fla's ``rwkv7``: fla-hub/rwkv7-*-world, RWKV/RWKV7-Goose-World3-*-HF; remote code,
not in transformers): a time-mix running the generalized delta rule over a matrix-valued state per head, and a
channel-mix (a squared-ReLU feed-forward), both fed by a one-token time shift (the protocol:
``analysis.mixers.base``; the trace conventions of recurrent mixers: ``analysis.trace``, "recurrent mixers").

One mixer holds the whole block, as RWKV-4's (``analysis.mixers.rwkv``): the channel-mix keeps its own shifted
token, so it is no standard MLP (``includes_ffn``). The shapes, from fla's ``fla/layers/rwkv7.py``
(``RWKV7Attention``) and ``fla/models/rwkv7/modeling_rwkv7.py`` (``RWKV7FeedForward``, ``RWKV7Block``), with
h = hidden_size, K = key_dim = h, V = the layer's value_dim (default h), D = head_dim, H = h / D heads,
Dv = V / H, I = intermediate_size:

1. time-mix (``attn``): six blend vectors ``x_r / x_w / x_k / x_v / x_a / x_g`` (stored (1, 1, h)); ``k_k``,
   ``k_a`` (K each), ``r_k`` (H, D); ``r_proj`` / ``k_proj`` (h -> K), ``v_proj`` (h -> V), ``o_proj``
   (V -> h), all bias-free; four LoRAs ``x -> lora.0 (h -> rank, no bias) -> act -> lora.2 (rank -> out)``:
   ``w_lora`` (decay, tanh, out K, with bias), ``a_lora`` (in-context learning rate, out K, with bias),
   ``v_lora`` (value residual mix, out V, with bias; every layer but the first, whose v is the "v first" the
   later layers lerp towards) and ``g_lora`` (output gate, sigmoid, out V, no bias); ``g_norm``, a GroupNorm of
   H groups over V channels with weight and bias. Per token and head the state S (D x Dv, fp32) is
   ``S ← S·diag(w) + (S·(-kk))·(kk·a)ᵀ + v·kᵀ``, ``o = S·r``; then ``g_norm(o)``, plus the bonus
   ``((r·k·r_k) summed per head)·v``, times g, ``o_proj``;
2. channel-mix (``ffn``): ``x_k`` (h), ``key`` (h -> I), ``value`` (I -> h), bias-free: ``value(relu(key(xk))²)``.

Our tensors: the time-mix under ``mixer.*``, the channel-mix under ``mixer.mlp.*`` (the checkpoint's ``attn.`` /
``ffn.``: ``CheckpointLayout.modules``). Per-sequence state (fla's cache: ``conv_state`` and ``ffn_state``, the
last token of each block's input, in the model's dtype; ``recurrent_state`` (batch, H, D, Dv), fp32 as fla's
kernels allocate it, ``WKV_BYTES``). Nothing per token.

FLOPs: the projections and LoRAs, and the recurrent form's four multiply-adds per state element and token
(S·a, the rank-one update, v·kᵀ, S·r: 8·H·D·Dv); the decay S·diag(w), the bonus, the L2 norm of kk, the
activations and blends are elementwise (bytes only).
"""

from __future__ import annotations

from ..errors import OptionError
from ..opkinds import OpKind, Parallel
from ..records import frozen
from ..tensors import Tensor
from ..tensors import linear as _linear
from .base import MixerKind, MixerSpec
from .rwkv import channel_mix_tensors, trace_channel_mix

#: Bytes per element of the WKV state: fp32 (fla's recurrent kernels allocate the final state in fp32)
WKV_BYTES = 4

#: (name, output is the value width, activation between, up-projection bias) of RWKV-7's four LoRAs
LORAS = (("w_lora", False, True), ("a_lora", False, True), ("v_lora", True, True), ("g_lora", True, False))


@frozen
class RWKV7(MixerSpec):
    """An RWKV-7 block: generalized delta-rule time-mix and squared-ReLU channel-mix (see the module doc)."""

    hidden_size: int
    head_dim: int
    value_dim: int
    intermediate_size: int
    decay_rank: int
    a_rank: int
    v_rank: int
    gate_rank: int
    first: bool = False  # the first layer: no v_lora (its value is the "v first" of the later layers)

    kind = MixerKind.RWKV7
    title = "RWKV-7"
    module = "mixer"  # the checkpoint's attn (and ffn, as mixer.mlp: CheckpointLayout.modules)
    includes_ffn = True
    tp_allreduces = 2  # time-mix's o_proj, channel-mix's value

    @property
    def num_heads(self) -> int:
        return self.hidden_size // self.head_dim

    @property
    def head_v_dim(self) -> int:
        return self.value_dim // self.num_heads

    def summary(self) -> str:
        return (f"RWKV-7 ({self.num_heads} heads of {self.head_dim} x {self.head_v_dim} state, channel-mix "
                f"{self.intermediate_size}, token shift)")

    def _rank(self, name: str) -> int:
        return {"w_lora": self.decay_rank, "a_lora": self.a_rank, "v_lora": self.v_rank,
                "g_lora": self.gate_rank}[name]

    # ---- parameters ------------------------------------------------------------------------------

    def tensors(self, prefix: str) -> list[Tensor]:
        out: list[Tensor] = []
        h, k, v, ii = self.hidden_size, self.hidden_size, self.value_dim, self.intermediate_size
        for name in ("r", "w", "k", "v", "a", "g"):
            out.append(Tensor(f"{prefix}.x_{name}", (1, 1, h), "other"))
        out.append(Tensor(f"{prefix}.k_k", (k,), "other"))
        out.append(Tensor(f"{prefix}.k_a", (k,), "other"))
        out.append(Tensor(f"{prefix}.r_k", (self.num_heads, self.head_dim), "other"))
        _linear(out, f"{prefix}.r_proj", k, h, False)
        _linear(out, f"{prefix}.k_proj", k, h, False)
        _linear(out, f"{prefix}.v_proj", v, h, False)
        _linear(out, f"{prefix}.o_proj", h, v, False)
        for name, of_v, bias in LORAS:
            if name == "v_lora" and self.first:
                continue
            _linear(out, f"{prefix}.{name}.lora.0", self._rank(name), h, False)
            _linear(out, f"{prefix}.{name}.lora.2", v if of_v else k, self._rank(name), bias)
        out.append(Tensor(f"{prefix}.g_norm.weight", (v,), "norm"))
        out.append(Tensor(f"{prefix}.g_norm.bias", (v,), "norm"))
        channel_mix_tensors(out, prefix, h, ii, {"x_k": (h,)}, receptance=False)
        return out

    # ---- trace -----------------------------------------------------------------------------------

    def trace(self, b, i: int, tensors: dict[str, list[Tensor]]) -> None:
        n, act, h, v, ii = b.shape.tokens, b.a, self.hidden_size, self.value_dim, self.intermediate_size
        # time shift: six blends of each token with the previous one (the shifted token is state)
        rd, wr = b.state_io(h)
        mix = [t for name in ("r", "w", "k", "v", "a", "g") for t in tensors[f"x_{name}"]]
        b.add(name="time_shift", kind=OpKind.ELEMENTWISE, category="ssm", layer=i, weight_bytes=b.fmt.bytes_of(mix),
              act_read_bytes=2 * n * h * act, act_write_bytes=6 * n * h * act, state_read_bytes=rd,
              state_write_bytes=wr, kernels=1)
        for name in ("r_proj", "k_proj", "v_proj"):
            b.matmul(name, tensors[name], i, "ssm")
        for name, _, _ in LORAS:
            if name == "v_lora" and self.first:
                continue
            t = tensors[name]
            b.matmul(f"{name}_down", [x for x in t if ".lora.0." in x.name], i, "ssm")
            b.matmul(f"{name}_up", [x for x in t if ".lora.2." in x.name], i, "ssm")
        # generalized delta rule in fp32: 4 multiply-adds per state element and token; reads r, w, k, kk, a
        # (K each) and v, writes o
        st = self.num_heads * self.head_dim * self.head_v_dim
        per_seq = b.shape.batch * WKV_BYTES * st
        b.add(name="wkv7", kind=OpKind.SCAN, category="ssm", layer=i, flops=8 * n * st,
              weight_bytes=b.fmt.bytes_of(tensors["k_k"] + tensors["k_a"]),
              act_read_bytes=n * (5 * h + v) * act, act_write_bytes=n * v * act,
              state_read_bytes=per_seq if b.shape.cached_tokens > 0 else 0, state_write_bytes=per_seq, kernels=3)
        # GroupNorm over the heads, the r·k·r_k bonus, times g
        b.gate(i, "g_norm_gate", v, tensors["g_norm"] + tensors["r_k"], kernels=2)
        b.matmul("o_proj", tensors["o_proj"], i, "ssm", parallel=Parallel.ROW)
        # the time-mix's residual add, then ffn_norm (the layer adds the channel-mix's residual after this mixer)
        trace_channel_mix(b, i, tensors, h, ii, ("x_k",), receptance=False)

    # ---- state and tensor parallelism ------------------------------------------------------------

    def state_elements(self) -> tuple[int, int]:
        """(the two shifted tokens, the WKV matrix state H x D x Dv) elements per sequence."""
        return 2 * self.hidden_size, self.num_heads * self.head_dim * self.head_v_dim

    # the recurrent part in fp32 whatever the dtype (WKV_BYTES): MixerSpec.state_bytes / recurrent_dtype read it
    ssm_state_dtype = "fp32"

    def tp_kv_split(self, tp: int, layer: int) -> tuple[int, int]:
        for what, dim in (("heads", self.num_heads), ("intermediate_size", self.intermediate_size)):
            if dim % tp:
                verb = "do" if what == "heads" else "does"
                raise OptionError(f"--tp {tp}: RWKV-7's {what} ({dim}) {verb} not split {tp} ways (layer {layer})")
        return tp, 1
