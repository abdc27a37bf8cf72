"""HRM-Text (Hierarchical Reasoning Model, ``hrm_text``), as transformers 5.24's modeling_hrm_text.py builds it
(HrmTextForCausalLM).

Two stacks of ``num_layers_per_stack`` Llama-shaped layers (the low-level ``L_module`` and the high-level
``H_module``): ``analysis.mixers.hrm.HrmAttention`` (MHA of ``head_dim``, a sigmoid output gate, everything biased
by ``attention_bias``) and a gated MLP (``mlp_bias``), weightless RMSNorms (each stack's ``final_norm`` too); the
embedding scaled by ``embedding_scale`` (default 1 / initializer_range); no model-level final norm; the learned
initial low-level state ``z_L_init`` (hidden, counted). Per token the model runs, ``H_cycles`` times,
``L_cycles`` passes of the L stack then one of the H stack: ``layers`` lists those
``num_layers_per_stack × H_cycles × (L_cycles + 1)`` layers in that order, each with its own cache slot (as
transformers' cache, whose ``num_hidden_layers`` its config inflates to that count); only the first pass of each
stack is ``stored`` (parameters and weight memory count each stack once; FLOPs and weight reads every pass).

A saved config carries the inflated ``num_hidden_layers`` beside ``num_layers_per_stack``; one without
``num_layers_per_stack`` gives the per-stack count as ``num_hidden_layers`` (HrmTextConfig.__post_init__).
"""

from __future__ import annotations

from ..fields import MAX_LAYERS, Fields
from ..mixers.hrm import HrmAttention
from ..spec import MLP, Layer, ModelSpec, Norm, PlacedNorm, Tensor
from .common import Traits, read_act, read_eps
from .looped import unroll

_TRAITS = Traits()


def build(f: Fields, model_type: str) -> ModelSpec:
    per_stack = f.int("num_layers_per_stack", hi=MAX_LAYERS) if f.raw("num_layers_per_stack") is not None \
        else f.int("num_hidden_layers", hi=MAX_LAYERS)
    h_cycles, l_cycles = f.int("H_cycles", hi=1024), f.int("L_cycles", hi=1024)
    if per_stack * h_cycles * (l_cycles + 1) > MAX_LAYERS:
        raise f.error("H_cycles", f"({h_cycles}) x (L_cycles ({l_cycles}) + 1) x {per_stack} layers per stack runs "
                      f"more than {MAX_LAYERS} layers")
    hidden, heads = f.int("hidden_size"), f.int("num_attention_heads")
    if hidden % heads:  # (HrmTextConfig.validate_architecture, though head_dim is its own field)
        raise f.error("num_attention_heads", f"({heads}) must divide hidden_size ({hidden})")
    hd, inter = f.int("head_dim"), f.int("intermediate_size")
    bias = f.bool("attention_bias")
    rope = f.raw("rope_parameters")
    theta = float(rope["rope_theta"]) if isinstance(rope, dict) and isinstance(rope.get("rope_theta"), (int, float)) \
        else float(f.raw("rope_theta") or 10000.0)
    act = read_act(f, _TRAITS)
    attn = HrmAttention(hidden, heads, heads, hd, hd, q_bias=bias, k_bias=bias, v_bias=bias, o_bias=bias,
                        rotary_dim=hd, rope_theta=theta, proj_gate=True)
    rms = Norm(hidden, affine=False)
    norms = (PlacedNorm("input_layernorm", "pre_mixer", rms), PlacedNorm("post_attention_layernorm", "pre_ffn", rms))
    stored = Layer(attn, MLP(hidden, inter, bias=f.bool("mlp_bias"), act=act), norms)
    # the run: the L stack's L_cycles passes of the first H cycle (the first stored), then the H stack's first pass
    # (stored) and the (H_cycles - 1) x (L_cycles + 1) passes after it (the two stacks have the same layer shape)
    layers = unroll(stored, per_stack, l_cycles) + unroll(stored, per_stack, 1 + (h_cycles - 1) * (l_cycles + 1))
    scale = f.raw("embedding_scale")
    if scale is None:
        # (HrmTextConfig's initializer_range default 0.02, spelled here: the generated defaults leave it out)
        scale = 1.0 / f.float("initializer_range", 0.02)
    elif not isinstance(scale, (int, float)) or isinstance(scale, bool):
        raise f.error("embedding_scale", f"must be a number, got {scale!r}")
    return ModelSpec(
        model_type=model_type, hidden_size=hidden, vocab_size=f.int("vocab_size", hi=1 << 26), layers=tuple(layers),
        tie_word_embeddings=f.bool("tie_word_embeddings"), final_norm=None, hidden_act=act, norm_eps=read_eps(f),
        embedding_multiplier=float(scale), max_position_embeddings=f.int("max_position_embeddings", hi=1 << 40),
        model_params=(Tensor("model.z_L_init", (hidden,), "other"),),
        caveats=(f"HRM: two stacks of {per_stack} layers run {h_cycles} x ({l_cycles} + 1) times "
                 f"({len(layers)} layers per token, as listed; parameters and weight memory count each stack once, "
                 "FLOPs, weight reads and the cache every pass; layer tensors are named by the run, "
                 "model.layers.N, not model.L_module / H_module); its prefix-LM (bidirectional instruction) mask "
                 "and the stacks' weightless final norms are not traced",),
    )
