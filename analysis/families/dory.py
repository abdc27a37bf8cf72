"""NVIDIA Nemotron-Labs Dory (``dory``), as transformers 5.24's modeling_dory.py builds it (DoryForCausalLM): a
looped normalized transformer (nGPT).

Every layer: ``analysis.mixers.dory.DoryAttention`` (AFMoE's sigmoid-gated attention with q/k/v/o biased by
``attention_bias``, unit-norm q and k, ``sqk`` / ``s_gate`` scales; RoPE per layer type, ``sliding_window`` on the
sliding layers) and a gated MLP (``mlp_bias``) with ``suv_gate`` / ``suv_up`` scales, four weightless L2 sandwich
norms and the learned interpolation rates ``lambda_1`` / ``lambda_2``; a weightless final L2 norm; ``lm_head`` with
a per-row ``logit_scale`` (``ModelSpec.lm_head_logit_scale``). ``layer_types`` default: full attention on every
4th layer. Released configs list an "mlp" entry after each layer type and double the layer counts
(DoryConfig.__post_init__ halves them): both forms are read.

The loop: ``n_input_layers`` run once, the next ``n_recurrent_layers`` (default: the rest) run
``n_recurrent_loops`` times on their weights, the last ``n_output_layers`` once. ``layers`` lists the layers as
they run; the later passes are not ``stored`` (parameters and weight memory count them once; FLOPs and weight
reads per pass). Cache: ``recurrent_kv_cache_mode`` "per_loop" (the default) keeps a cache per pass (transformers
appends a copy of the looped layers' cache layers per extra pass); "last_loop" one per looped layer, which only the
last pass writes (the earlier passes read it: ``DoryAttention.cache_written``).
"""

from __future__ import annotations

from ..fields import MAX_LAYERS, Fields
from ..mixers.dory import DoryAttention
from ..spec import MLP, Layer, ModelSpec, Norm, PlacedNorm
from .common import Traits, read_act, read_eps

_TRAITS = Traits()
_TYPES = ("sliding_attention", "full_attention")
_THETAS = {"sliding_attention": 10_000.0, "full_attention": 10_000_000.0}  # DoryConfig's default rope_parameters


def _theta(f: Fields, layer_type: str) -> float:
    rope = f.raw("rope_parameters")
    if isinstance(rope, dict):
        per = rope.get(layer_type, rope)
        if isinstance(per, dict) and isinstance(per.get("rope_theta"), (int, float)):
            return float(per["rope_theta"])
    return _THETAS[layer_type]


def build(f: Fields, model_type: str) -> ModelSpec:
    raw_types = f.raw("layer_types")
    if raw_types is not None and not isinstance(raw_types, list):
        raise f.error("layer_types", f"must be a list of layer types, got {raw_types!r}")
    doubled = raw_types is not None and "mlp" in raw_types  # the released form: (type, "mlp") per layer
    half = 2 if doubled else 1
    n = f.int("num_hidden_layers", hi=half * MAX_LAYERS) // half
    n_in = f.int("n_input_layers", lo=0, hi=half * MAX_LAYERS) // half
    # (DoryConfig's default 8, spelled here: the generated defaults leave out every "output_" field)
    n_out = f.int("n_output_layers", 8, lo=0, hi=half * MAX_LAYERS) // half
    n_rec = (n - n_in - n_out) if f.raw("n_recurrent_layers") is None \
        else f.int("n_recurrent_layers", lo=0, hi=half * MAX_LAYERS) // half
    if n < 1 or n_rec < 0 or n_in + n_rec + n_out != n:
        raise f.error("n_recurrent_layers", f"({n_rec}): n_input_layers ({n_in}) + n_recurrent_layers + "
                      f"n_output_layers ({n_out}) must equal num_hidden_layers ({n})"
                      + (" (each halved: the config lists an 'mlp' entry after every layer)" if doubled else ""))
    loops = f.int("n_recurrent_loops", hi=1024)
    mode = f.str("recurrent_kv_cache_mode")
    if mode not in ("per_loop", "last_loop"):
        raise f.error("recurrent_kv_cache_mode", f"({mode!r}) must be 'per_loop' or 'last_loop'")
    if n + (loops - 1) * n_rec > MAX_LAYERS:
        raise f.error("n_recurrent_loops", f"({loops}) runs more than {MAX_LAYERS} layers")
    if raw_types is not None:
        types = raw_types[::2] if doubled else raw_types
        bad = [t for t in types if t not in _TYPES]
        if bad or len(types) != n:
            raise f.error("layer_types", f"must list {n} of {', '.join(_TYPES)}" + (" (each followed by 'mlp')"
                          if doubled else "") + f"; got {len(types)}" + (f", including {bad[0]!r}" if bad else ""))
    else:
        types = f.derived("layer_types", ["full_attention" if (i + 1) % 4 == 0 else "sliding_attention"
                                          for i in range(n)], "full attention on every 4th layer, sliding elsewhere")
    hidden, heads = f.int("hidden_size"), f.int("num_attention_heads")
    kv = f.int("num_key_value_heads")
    if kv > heads or heads % kv:
        raise f.error("num_key_value_heads", f"({kv}) must divide num_attention_heads ({heads})")
    hd, inter = f.int("head_dim"), f.int("intermediate_size")
    bias, mlp_bias = f.bool("attention_bias"), f.bool("mlp_bias")
    window = f.int("sliding_window", hi=1 << 30) if "sliding_attention" in types else None
    act = read_act(f, _TRAITS)
    l2 = Norm(hidden, affine=False)
    norms = (PlacedNorm("input_layernorm", "pre_mixer", l2), PlacedNorm("post_attention_layernorm", "post_mixer", l2),
             PlacedNorm("pre_feedforward_layernorm", "pre_ffn", l2),
             PlacedNorm("post_feedforward_layernorm", "post_ffn", l2))
    mlp = MLP(hidden, inter, bias=mlp_bias, act=act)

    def layer(i: int, *, stored: bool = True, written: bool = True) -> Layer:
        sliding = types[i] == "sliding_attention"
        attn = DoryAttention(hidden, heads, kv, hd, hd, q_bias=bias, k_bias=bias, v_bias=bias, o_bias=bias,
                             window=window if sliding else None, rotary_dim=hd, rope_theta=_theta(f, types[i]),
                             proj_gate=True, intermediate_size=inter, cache_written=written)
        return Layer(attn, mlp, norms, stored=stored)

    last_only = mode == "last_loop"
    run = [layer(i) for i in range(n_in)]
    for p in range(loops):
        run += [layer(i, stored=p == 0, written=not last_only or p == loops - 1) for i in range(n_in, n_in + n_rec)]
    run += [layer(i) for i in range(n - n_out, n)]
    vocab = f.int("vocab_size", hi=1 << 26)
    kv_note = "once (last_loop: written by the last pass only)" if last_only else "once per pass"
    return ModelSpec(
        model_type=model_type, hidden_size=hidden, vocab_size=vocab, layers=tuple(run),
        tie_word_embeddings=f.bool("tie_word_embeddings"), final_norm=l2, lm_head_logit_scale=True, hidden_act=act,
        norm_eps=read_eps(f) if any(f.has(k) for k in ("rms_norm_eps", "norm_epsilon")) else 1e-6,
        max_position_embeddings=f.int("max_position_embeddings", hi=1 << 40),
        caveats=(f"Dory: layers {n_in}..{n_in + n_rec - 1} run {loops} times on shared weights ({len(run)} layers "
                 "run per token, as listed; parameters and weight memory count them once, FLOPs and weight reads "
                 f"once per pass; the cache {kv_note}); its nGPT unit-norm residual interpolation is elementwise "
                 "(bytes only); the output layers' tensors are named by the run (model.layers.N), not the checkpoint",),
    )
