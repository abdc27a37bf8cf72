"""IQuest-Coder-V1-Loop (``iquestloopcoder``: IQuestLab/IQuest-Coder-V1-40B-Loop-Instruct and -Thinking), a looped
decoder: remote code transformers does not ship. Counted from vLLM's ``vllm/model_executor/models/iquest_loopcoder.py``
(``IQuestLoopCoderForCausalLM``).

- Every layer: Llama's block, bias-free q/k/v/o (head_dim = hidden / heads: vLLM derives it so; a config whose
  ``head_dim`` says otherwise is refused), RoPE over the whole head, a bias-free SiLU-gated MLP, pre-norm RMSNorms.
- The loop: the ``num_hidden_layers`` layers run ``loop_num`` times per token (2; vLLM's default too), on the same
  weights, the final ``norm`` once after the last pass. ``layers`` lists the layers as they run; the later passes
  are not ``stored`` (parameters and weight memory count them once; FLOPs and weight reads every pass).
- The first pass is plain attention with a K/V cache of every position. A later pass (``LoopGatedAttention``) appends
  its own K/V to a cache that keeps ``loop_window_size`` (64) positions, attends its window and, without writing,
  the first pass's whole cache of the same layer, and blends the two per head by sigmoid(gate_proj(q_h)).
- ``model.gate_projections.N`` (Linear(head_dim, heads) with a bias, one per layer, the passes sharing it) are
  model-level tensors: 80 x (128 x 40 + 40) = 412,800 parameters in the 40B.

Checked: IQuest-Coder-V1-40B-Loop-Instruct's config (5120 hidden, 80 layers, 40 heads, 8 K/V heads, intermediate
27648, vocab 76800, untied, loop_num 2, loop_window_size 64) counts 39,794,696,320 parameters, the "40B" of its card;
the K/V per token is the first pass's 80 layers (327,680 bytes at bf16) plus 80 windowed layers of the second pass.
"""

from __future__ import annotations

from ..fields import Fields
from ..mixers import Attention
from ..mixers.loop_gated import LoopGatedAttention
from ..spec import MLP, Layer, ModelSpec, Norm, Tensor
from .common import Traits, pre_norms, read_act, read_rope, read_tie
from .looped import loop_caveat, read_heads, read_loops, unroll

_TRAITS = Traits(act_default="silu")


def build(f: Fields, model_type: str) -> ModelSpec:
    hidden, heads, n, kv, hd = read_heads(f, "vLLM's LoopCoder attention", "and so do its gate projections")
    loops = read_loops(f, "loop_num", 2, n)
    window = f.int("loop_window_size", 64, hi=1 << 40)
    if f.raw("dual_chunk_attention_config") is not None:
        raise f.error("dual_chunk_attention_config", "is set: dual-chunk attention on the first pass is not modelled")
    theta, rotary_dim, scaling = read_rope(f, hd)
    act = read_act(f, _TRAITS)
    if act not in ("silu", "swish"):
        raise f.error("hidden_act", f"is {act!r}: vLLM's LlamaMLP supports only silu")
    norms = pre_norms(lambda: Norm(hidden))
    mlp = MLP(hidden, f.int("intermediate_size"), act=act)
    first = Layer(Attention(hidden, heads, kv, hd, hd, rotary_dim=rotary_dim, rope_theta=theta), mlp, norms)
    again = Layer(LoopGatedAttention(hidden, heads, kv, hd, hd, rotary_dim=rotary_dim, rope_theta=theta,
                                     window=window, loop_layers=n), mlp, norms, stored=False)
    gates = tuple(t for i in range(n) for t in (Tensor(f"model.gate_projections.{i}.weight", (heads, hd), "linear"),
                                                 Tensor(f"model.gate_projections.{i}.bias", (heads,), "bias")))
    return ModelSpec(
        model_type=model_type, hidden_size=hidden, vocab_size=f.int("vocab_size", hi=1 << 26),
        layers=unroll(first, n, loops, again), tie_word_embeddings=read_tie(f, False),
        final_norm=Norm(hidden), hidden_act=act, norm_eps=f.float("rms_norm_eps", 1e-6), rope_scaling=scaling,
        max_position_embeddings=f.int("max_position_embeddings", 131072, hi=1 << 40),
        model_params=gates if loops > 1 else (),
        caveats=(loop_caveat("IQuest Loop", n, loops, "loop_num", "FLOPs and weight reads every pass",
                             f"a later pass caches its own K/V for the last {window} positions (loop_window_size) and "
                             "also attends the first pass's full cache, blended per head by gate_projections (vLLM "
                             "computes every head's gate row for every head and keeps the diagonal: heads x heads x "
                             "head_dim per token, counted so)"),),
    )
