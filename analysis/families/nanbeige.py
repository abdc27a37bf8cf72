"""Nanbeige looped decoders (``nanbeige``: Nanbeige/Nanbeige4.2-3B and -Base, NanbeigeForCausalLM), remote code
transformers does not ship. Counted from SGLang's ``python/sglang/srt/models/nanbeige.py`` (and its
``configs/nanbeige.py``), which the checkpoint's card names as the serving branch.

- Every layer: Llama's block. Bias-free q/k/v/o (``head_dim`` as the config gives it, else hidden / heads: 4.2-3B's
  48 heads of 128 on a 3072 hidden), RoPE over the whole head, a bias-free SiLU-gated MLP, pre-norm RMSNorms.
- The loop: the ``num_hidden_layers`` layers run ``num_loops`` times per token (2 in 4.2-3B) on the same weights.
  SGLang builds ``num_loops`` attention modules per layer (cache slot ``layer + loop x num_hidden_layers``), so every
  pass keeps a K/V cache of its own: ``num_loops`` x a plain decoder's cache per token (44 cache layers in 4.2-3B, as
  the mlx / Rust ports assert). ``layers`` lists the layers as they run; the later passes are not ``stored``
  (parameters and weight memory count them once; FLOPs, weight reads and the cache every pass).
- Between passes the residual is folded in and, unless ``skip_loop_final_norm``, the final ``norm`` runs (its
  weights are the final norm's: no extra parameter); that per-pass norm is not traced.
- The hub code's optional features (hyper-connections, mHC, LoopSplit, depth attention, n-gram embeddings, q/k
  norms), off in the released checkpoint, are refused when a config switches them on: SGLang builds none of them.
"""

from __future__ import annotations

from ..fields import Fields
from ..mixers import Attention
from ..spec import MLP, Layer, ModelSpec, Norm
from .common import Traits, pre_norms, read_act, read_core, read_rope, read_tie
from .looped import loop_caveat, read_loops, unroll

_TRAITS = Traits(act_default="silu")

#: config switches of the hub's modeling_nanbeige.py that SGLang's NanbeigeForCausalLM does not build
_UNBUILT = ("enable_hyper_connection", "enable_mhc", "enable_double_loop_split", "enable_depth_attention",
            "qk_layernorm")


def build(f: Fields, model_type: str) -> ModelSpec:
    # NanbeigeConfig: num_key_value_heads absent, one K/V head per query head; head_dim absent, hidden / heads
    core = read_core(f, _TRAITS)
    hidden, heads, n, kv, hd = core["hidden"], core["heads"], core["layers"], core["kv"], core["head_dim"]
    if f.raw("kv_channels") is not None and f.int("kv_channels") != hd:
        raise f.error("kv_channels", f"({f.int('kv_channels')}) differs from head_dim ({hd}): SGLang reads head_dim, "
                                     "the ports kv_channels, so no one shape describes the model")
    for key in _UNBUILT:
        if f.bool(key, False):
            raise f.error(key, "is true: SGLang's Nanbeige (the serving code the checkpoint names) does not build it, "
                               "and planner does not model it")
    if f.raw("ngram_vocab_size_ratio") is not None:
        raise f.error("ngram_vocab_size_ratio", "is set: Nanbeige's n-gram embedding tables are not modelled")
    loops = read_loops(f, "num_loops", 2, n)
    weights = f.raw("loop_loss_weights")
    if weights and (not isinstance(weights, list) or len(weights) + 1 != loops):
        raise f.error("loop_loss_weights", f"is {weights!r}: the hub code then runs len(loop_loss_weights) + 1 loops, "
                                           f"SGLang num_loops ({loops}); they disagree")
    act = read_act(f, _TRAITS)
    if act not in ("silu", "swish"):
        raise f.error("hidden_act", f"is {act!r}: SGLang's NanbeigeMLP supports only silu")
    theta, rotary_dim, scaling = read_rope(f, hd)
    norms = pre_norms(lambda: Norm(hidden))
    attn = Attention(hidden, heads, kv, hd, hd, rotary_dim=rotary_dim, rope_theta=theta)
    mlp = MLP(hidden, f.int("intermediate_size"), act=act)
    layers = unroll(Layer(attn, mlp, norms), n, loops)  # a later pass: the same weights, a K/V cache of its own
    between = "no norm (skip_loop_final_norm)" if f.bool("skip_loop_final_norm", False) else "the final norm"
    return ModelSpec(
        model_type=model_type, hidden_size=hidden, vocab_size=core["vocab"], layers=layers,
        tie_word_embeddings=read_tie(f, False), final_norm=Norm(hidden), hidden_act=act,
        norm_eps=f.float("rms_norm_eps", 1e-5), rope_scaling=scaling,
        max_position_embeddings=f.int("max_position_embeddings", 4096, hi=1 << 40),
        caveats=(loop_caveat("Nanbeige loop", n, loops, "num_loops", "FLOPs, weight reads and the K/V cache every "
                             "pass, as SGLang caches a K/V per layer per pass", f"between passes {between} runs, not "
                             "traced"),),
    )
