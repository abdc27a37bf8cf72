"""StepFun Step1 (``step1``: the language model of stepfun-ai/Step-Audio-EditX and Step-Audio-TTS-3B, remote code
transformers does not ship). Counted from vLLM's ``vllm/model_executor/models/step1.py`` (``Step1ForCausalLM``: the
shared ``StepDecoderModel``) and its ``Step1Config``.

- Every layer: bias-free q/k/v/o projections (``attention_bias``, false when absent) with head_dim = hidden /
  heads and ``num_attention_groups`` K/V heads (GQA; ``num_key_value_heads`` only when the config has no groups,
  one K/V head when it has neither: vLLM's ``StepAttention``), no RoPE: ALiBi over the heads (the standard slopes
  2^(-8 i / n) over the next power of two, vLLM's ``_get_step_alibi_slopes``) applied to the square root of the key
  distance (``use_alibi_sqrt``); a bias-free SiLU-gated MLP (``mlp_bias``); pre-norm RMSNorms.
- The cache: K and V of every layer, every position (no window).
- Embeddings untied only where the config says so (vLLM: ``getattr(config, "tie_word_embeddings", True)``).

Checked: Step-Audio-EditX's config (hidden 3072, 32 layers, 48 heads in 4 groups, intermediate 8192, vocab 74752,
untied) counts 3,529,706,496 parameters, the model card's "3B parameters" LLM; a generic Llama reading (48 K/V
heads, RoPE) counted 4,083,354,624 and cached 12x the K/V.
"""

from __future__ import annotations

from dataclasses import replace

from ..fields import MAX_LAYERS, Fields
from ..mixers import Attention
from ..spec import MLP, Layer, ModelSpec, Norm, Numerics
from .common import pre_norms, read_tie


def build(f: Fields, model_type: str) -> ModelSpec:
    hidden, heads = f.int("hidden_size"), f.int("num_attention_heads")
    n = f.int("num_hidden_layers", hi=MAX_LAYERS)
    if hidden % heads:
        raise f.error("num_attention_heads", f"({heads}) must divide hidden_size ({hidden}): vLLM's Step attention "
                                             "takes head_dim = hidden_size / num_attention_heads")
    hd = hidden // heads
    if f.raw("num_attention_groups") is not None:
        kv = f.int("num_attention_groups")
    else:
        kv = f.int("num_key_value_heads", 1)
    if kv > heads or heads % kv:
        raise f.error("num_attention_groups", f"({kv}) must divide num_attention_heads ({heads})")
    act = f.str("hidden_act", "silu")
    if act not in ("silu", "swish"):
        raise f.error("hidden_act", f"is {act!r}: vLLM's Step1 MLP is SiLU-gated (SiluAndMul) whatever it says")
    bias = f.bool("attention_bias", False)
    attn = Attention(hidden, heads, kv, hd, hd, bias, bias, bias, bias, alibi=True)
    mlp_bias = f.bool("mlp_bias", False)
    layer = Layer(attn, MLP(hidden, f.int("intermediate_size"), bias=mlp_bias, act="silu"),
                  pre_norms(lambda: Norm(hidden)))
    max_pos = f.raw("max_position_embeddings")
    max_len = f.int("max_position_embeddings", hi=1 << 40) if max_pos is not None else \
        f.int("max_seq_len", 32768, hi=1 << 40)
    return ModelSpec(
        model_type=model_type, hidden_size=hidden, vocab_size=f.int("vocab_size", hi=1 << 26), layers=(layer,) * n,
        tie_word_embeddings=read_tie(f, True), final_norm=Norm(hidden), hidden_act="silu",
        norm_eps=f.float("rms_norm_eps", 1e-5), max_position_embeddings=max_len,
        numerics=replace(Numerics(), alibi_sqrt=True),
        caveats=("Step1: ALiBi (no RoPE) on the square root of the key distance (vLLM's use_alibi_sqrt); the "
                 "counts, FLOPs and K/V are those of plain ALiBi attention",),
    )
