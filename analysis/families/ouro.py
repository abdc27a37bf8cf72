"""ByteDance Ouro (``ouro``: Ouro-1.4B, Ouro-2.6B and their -Thinking variants), a looped language model (LoopLM):
remote code transformers does not ship. Counted from vLLM's ``vllm/model_executor/models/ouro.py`` and the hub's
``modeling_ouro.py`` (as mlx-lm's ``mlx_lm/models/ouro.py`` mirrors it).

- Every layer: bias-free q/k/v/o projections (MHA or GQA, head_dim = hidden / heads: vLLM's ``OuroAttention``
  derives it so; a config whose ``head_dim`` says otherwise is refused, the hub code would read it), RoPE over the
  whole head, a bias-free SwiGLU MLP, and four RMSNorms in a sandwich: ``input_layernorm`` before attention,
  ``input_layernorm_2`` on its output before the residual add, ``post_attention_layernorm`` before the MLP,
  ``post_attention_layernorm_2`` on its output.
- The loop: the ``num_hidden_layers`` layers run ``total_ut_steps`` times per token (4; vLLM's default too), each pass
  on the same weights, with the final ``norm`` after every pass. ``layers`` lists the layers as they run; the later
  passes are not ``stored`` (parameters and weight memory count them once; FLOPs and weight reads every pass).
- The cache: one K/V per layer per pass. vLLM builds ``total_ut_steps`` ``Attention`` modules per layer (cache slot
  ``ut_step x num_hidden_layers + layer``), the hub code's UniversalTransformerCache the same index, mlx-lm
  ``total_ut_steps x num_hidden_layers`` KVCaches: 4x a plain decoder's cache per token.
- ``model.early_exit_gate`` (Linear hidden -> 1 with a bias) scores every pass; the hub code picks which pass's
  output the LM head reads (``early_exit_threshold``, 1.0 in the released configs: the last), after all passes
  ran; vLLM always runs and reads all ``total_ut_steps`` (its card: "vLLM does not currently support the adaptive
  exit"). The gate's 2,049 parameters are counted with the model-level tensors; its per-pass 2 x hidden FLOPs and the
  per-pass final norms are not traced.

Checked against the released single-file checkpoints: Ouro-1.4B 1,434,652,673 parameters and Ouro-2.6B
2,667,974,657, each x 2 bytes (bf16) plus its safetensors header (the tensors' names, shapes and offsets, no
metadata, padded to 8 bytes) equal to the model.safetensors sizes, 2,869,336,434 and 5,336,011,242 bytes, to the byte.
"""

from __future__ import annotations

from ..fields import Fields
from ..mixers import Attention
from ..spec import MLP, Layer, ModelSpec, Norm, PlacedNorm, Tensor
from .common import Traits, read_act, read_rope, read_tie
from .looped import loop_caveat, read_heads, read_loops, unroll

_TRAITS = Traits(act_default="silu")


def build(f: Fields, model_type: str) -> ModelSpec:
    # OuroConfig (Qwen2's): num_key_value_heads absent, one KV head per query head
    hidden, heads, n, kv, hd = read_heads(f, "vLLM's Ouro attention", "the hub code the former, so no one shape "
                                                                      "describes the model")
    steps = read_loops(f, "total_ut_steps", 4, n)
    types = f.raw("layer_types")
    if types is not None and (not isinstance(types, list) or any(t != "full_attention" for t in types)):
        raise f.error("layer_types", "lists a layer other than 'full_attention': sliding-window Ouro layers are not "
                                     "modelled (vLLM's Ouro attention has no per-layer window, the hub code has)")
    if f.bool("use_sliding_window", False):
        raise f.error("use_sliding_window", "is true: sliding-window Ouro layers are not modelled (vLLM's Ouro "
                                            "attention has no per-layer window, the hub code has)")
    theta, rotary_dim, scaling = read_rope(f, hd)
    act = read_act(f, _TRAITS)
    norm = Norm(hidden)
    norms = (PlacedNorm("input_layernorm", "pre_mixer", norm), PlacedNorm("input_layernorm_2", "post_mixer", norm),
             PlacedNorm("post_attention_layernorm", "pre_ffn", norm),
             PlacedNorm("post_attention_layernorm_2", "post_ffn", norm))
    attn = Attention(hidden, heads, kv, hd, hd, rotary_dim=rotary_dim, rope_theta=theta)
    mlp = MLP(hidden, f.int("intermediate_size"), act=act)
    layers = unroll(Layer(attn, mlp, norms), n, steps)  # a later pass: the same weights, a cache of its own
    return ModelSpec(
        model_type=model_type, hidden_size=hidden, vocab_size=f.int("vocab_size", hi=1 << 26), layers=layers,
        tie_word_embeddings=read_tie(f, False), final_norm=norm, hidden_act=act,
        norm_eps=f.float("rms_norm_eps", 1e-6), rope_scaling=scaling,
        max_position_embeddings=f.int("max_position_embeddings", 32768, hi=1 << 40),
        model_params=(Tensor("model.early_exit_gate.weight", (1, hidden), "linear"),
                      Tensor("model.early_exit_gate.bias", (1,), "bias")),
        caveats=(loop_caveat("Ouro", n, steps, "total_ut_steps", "FLOPs, weight reads and the K/V cache every pass, "
                             "as vLLM caches a K/V per layer per pass",
                             "every pass runs whatever early_exit_threshold says (vLLM has no early exit; the hub code "
                             "runs all passes, then picks one to read); the per-pass final norm and early-exit gate "
                             "are not traced"),),
    )
