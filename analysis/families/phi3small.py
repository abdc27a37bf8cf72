"""Phi-3-small (``phi3small``: Phi-3-small-8k-instruct, -128k-instruct), a remote-code family transformers does not
ship, counted from vLLM's implementation (vllm/model_executor/models/phi3_small.py) and the hub's
configuration_phi3_small.py (``Phi3SmallConfig``: its class defaults are the defaults here).

- Attention: GQA whose q, k and v are one biased ``self_attn.query_key_value`` stored per KV group ((K, G + 2, d)
  rows: vLLM's ``HeadMajorQKVParallelLinear``), a biased output ``self_attn.dense``; head_dim = hidden / heads;
  RoPE over the whole head of base ``rope_embedding_base`` (linear factor ``rope_position_scale``; the 128k model's
  ``rope_scaling`` is LongRoPE, "su"). Layer i is dense when ``dense_attention_every_n_layers`` is set and divides
  i + 1, else block-sparse (``analysis.mixers.local_strided``: blocksparse_block_size, _num_local_blocks,
  _vert_stride, _homo_head_pattern; vLLM asserts the block size equals blocksparse_triton_kernel_block_size).
- MLP: GEGELU, one biased ``mlp.up_proj`` of 2 x intermediate rows (gate and linear halves interleaved row by row:
  vLLM's ``gegelu`` reads ``[..., ::2]`` and ``[..., 1::2]``), a biased ``down_proj``. intermediate is
  ``ff_intermediate_size``, else ``ff_dim_multiplier`` x (hidden // 3) x 2, rounded up to 256 with
  ``gegelu_pad_to_256`` (``Phi3SmallConfig.intermediate_size``; exactly one of the two may be set).
- Biased LayerNorms (``input_layernorm``, ``post_attention_layernorm``, ``model.final_layernorm``), eps
  ``layer_norm_epsilon``.
- muP: the embedding scaled by ``mup_embedding_multiplier`` (when > 0), the softmax scale ``mup_attn_multiplier /
  head_dim`` with ``mup_use_scaling`` (else 1 / sqrt(head_dim)), the logits divided by ``mup_width_multiplier``.
- The LM head is the embedding (vLLM copies ``embed_tokens`` into ``lm_head`` whatever the config says).
"""

from __future__ import annotations

from ..fields import Fields
from ..mixers import Attention, LocalStridedAttention
from ..spec import MLP, CheckpointLayout, Layer, ModelSpec, Norm, NormKind, Numerics
from .common import pre_norms, read_kv_heads, read_mha_core, read_rope_extra, read_tie

#: Phi3SmallForCausalLM's checkpoint names -> ours; query_key_value's rows are per KV group (K, G + 2, d).
#: (up_proj interleaves its gate and linear rows, unlike our [gate; up]: the runtime refuses the family.)
PHI3SMALL_LAYOUT = CheckpointLayout(
    renames=(("model.final_layernorm.", "model.norm."),),
    modules=((".self_attn.query_key_value.", ".self_attn.qkv_proj."), (".self_attn.dense.", ".self_attn.o_proj."),
             (".mlp.up_proj.", ".mlp.gate_up_proj.")),
    qkv_grouped=True)


def _next_mult(x: int, y: int) -> int:
    return (x + y - 1) // y * y


def build(f: Fields, model_type: str) -> ModelSpec:
    hidden, n_layers, heads, hd, vocab = read_mha_core(f, dict(hidden_size=4096, num_hidden_layers=32,
                                                           num_attention_heads=32, vocab_size=100352))
    kv = read_kv_heads(f, heads) if f.has("num_key_value_heads") else \
        f.defaulted("num_key_value_heads", 8, "Phi3SmallConfig's default")
    if heads % kv:
        raise f.error("num_key_value_heads", f"({kv}) must divide num_attention_heads ({heads})")
    act = f.str("hidden_act", "gegelu")
    if act != "gegelu":
        raise f.error("hidden_act", f"is {act!r}: Phi-3-small's MLP is GEGELU only (vLLM's Phi3SmallMLP asserts it)")
    # Phi3SmallConfig.intermediate_size: ff_intermediate_size, else ff_dim_multiplier x (hidden // 3) x 2 (padded)
    ffi = f.opt_int("ff_intermediate_size") if "ff_intermediate_size" in f.cfg \
        else f.defaulted("ff_intermediate_size", 14336, "Phi3SmallConfig's default")
    mult = f.opt_int("ff_dim_multiplier")
    if (ffi is None) == (mult is None):
        raise f.error("ff_intermediate_size", "and ff_dim_multiplier: exactly one must be set (Phi3SmallConfig "
                                              f"refuses {'both' if ffi is not None else 'neither'})")
    if ffi is not None:
        inner = ffi
    else:
        inner = mult * (hidden // 3) * 2
        if f.bool("gegelu_pad_to_256", True, note="Phi3SmallConfig's default"):
            inner = _next_mult(inner, 256)
        inner = f.derived("intermediate_size", inner, "ff_dim_multiplier x (hidden_size // 3) x 2, rounded up to "
                                                      "256 with gegelu_pad_to_256")
    # block-sparse attention (Phi3SmallConfig defaults)
    block = f.int("blocksparse_block_size", 64)
    kernel_block = f.int("blocksparse_triton_kernel_block_size", 64)
    if kernel_block != block:
        raise f.error("blocksparse_triton_kernel_block_size", f"({kernel_block}) must equal blocksparse_block_size "
                                                              f"({block}): vLLM's Phi3SmallSelfAttention asserts it")
    local = f.int("blocksparse_num_local_blocks", 16)
    stride = f.int("blocksparse_vert_stride", 8)
    homo = f.bool("blocksparse_homo_head_pattern", False)
    every = f.int("dense_attention_every_n_layers", 2, lo=0, hi=1 << 20) \
        if f.raw("dense_attention_every_n_layers", 2) is not None else 0  # null / 0: every layer block-sparse
    # RoPE: rope_embedding_base, a linear rope_position_scale unless rope_scaling (LongRoPE) is given
    theta = f.float("rope_embedding_base", 1e6)
    pos_scale = f.float("rope_position_scale", 1.0)
    rs = f.raw("rope_scaling")
    if isinstance(rs, dict):
        scaling = tuple(sorted((str(k), v) for k, v in rs.items() if isinstance(v, (int, float, str, bool))))
        if "factor" not in rs:
            scaling = tuple(sorted(scaling + (("factor", pos_scale),)))
    elif rs is None:
        scaling = (("factor", pos_scale), ("rope_type", "linear")) if pos_scale != 1.0 else ()
    else:
        raise f.error("rope_scaling", "must be an object or null")
    dense = Attention(hidden, heads, kv, hd, hd, True, True, True, True, fused_qkv=True, rotary_dim=hd,
                      rope_theta=theta)
    step = 0 if homo else max(1, int(stride / heads))  # vLLM's get_head_sliding_step over all heads
    sparse = LocalStridedAttention(**{k: getattr(dense, k) for k in dense.__dataclass_fields__},
                                   block_size=block, local_blocks=local, vert_stride=stride, head_sliding_step=step)
    mlp = MLP(hidden, inner, gated=True, bias=True, fused_gate_up=True, act=act)
    norms = pre_norms(lambda: Norm(hidden, NormKind.LAYER, bias=True))
    layers = tuple(Layer(dense if every and (i + 1) % every == 0 else sparse, mlp, norms) for i in range(n_layers))
    if not read_tie(f, True):
        raise f.error("tie_word_embeddings", "is false, but vLLM's Phi3SmallForCausalLM always copies the embedding "
                                             "into lm_head")
    emb = f.float("mup_embedding_multiplier", 10.0, positive=False)
    use_scaling = f.bool("mup_use_scaling", True)
    attn_mult = f.float("mup_attn_multiplier", 1.0)
    width = f.float("mup_width_multiplier", 8.0)
    num = Numerics(attention_multiplier=attn_mult / hd if use_scaling else None, logits_scaling=width,
                   rope_extra=read_rope_extra(f))
    return ModelSpec(
        model_type=model_type, hidden_size=hidden, vocab_size=vocab, layers=layers, tie_word_embeddings=True,
        final_norm=Norm(hidden, NormKind.LAYER, bias=True), hidden_act=act,
        norm_eps=f.float("layer_norm_epsilon", 1e-5), embedding_multiplier=emb if emb > 0 else 1.0,
        max_position_embeddings=f.int("max_position_embeddings", 8192), rope_scaling=scaling, numerics=num,
        checkpoint=PHI3SMALL_LAYOUT,
        caveats=("Phi-3-small: block-sparse layers' FLOPs and KV reads counted over vLLM's local + vertical-stride "
                 "mask (tensor parallel: the first rank's heads); the cache holds every position in every layer",),
    )
