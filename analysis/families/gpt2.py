"""The GPT-2 lineage: gpt2, gpt_bigcode (StarCoder, SantaCoder), gptj, gpt_neo, openai-gpt (GPT-1) and codegen.

Their configs name the core fields ``n_embd`` / ``n_layer`` / ``n_head`` (gpt_neo: ``hidden_size`` /
``num_layers`` / ``num_heads``); all use LayerNorms with bias and a plain (non-gated) MLP of
``n_inner`` (default 4 × hidden) with ``activation_function``.

- gpt2: learned positions (``n_positions`` rows), fused ``c_attn`` with biases, tied head. Its
  checkpoint stores every projection as a ``Conv1D``, the weight transposed ``(in, out)``.
- gpt_bigcode: gpt2's block with ``nn.Linear`` projections and multi-query attention
  (``multi_query``: one K/V head); without it the fused rows are interleaved per head.
- gptj: no position table; partial RoPE on interleaved pairs (``rotary_dim``); one LayerNorm
  feeding attention (no biases) and MLP in parallel; untied head with a bias.
- openai-gpt (GPT-1): learned positions, post-LN blocks without a final norm, Conv1D projections with
  biases, an MLP of 4 × hidden.
- codegen: GPT-J's block with one fused bias-free ``qkv_proj`` (CodeGen's ``mp_num`` = 4 blocks of
  ``[q | v | k]`` rows) and a bias-free ``out_proj``.
- gpt_neo: learned positions; q/k/v without bias, ``out_proj`` with; ``attention_types`` alternating
  global and local (``window_size``) layers; attention scores are NOT scaled by 1/sqrt(head_dim).
"""

from __future__ import annotations

from ..fields import MAX_LAYERS, Fields, short
from ..spec import MLP, Attention, CheckpointLayout, Layer, ModelSpec, Norm, NormKind, Numerics, PlacedNorm, RopeStyle
from .common import Traits, pre_norms, read_act, read_eps, read_mha_shape, read_tie

TRAITS = Traits(act_key="activation_function", act_default="gelu_new", norm_kind=NormKind.LAYER, gated=False)

_LAYERS = (("transformer.h.", "model.layers."), ("transformer.wte.", "model.embed_tokens."),
           ("transformer.wpe.", "model.embed_positions."), ("transformer.ln_f.", "model.norm."))
_GPT2_MODULES = ((".ln_1.", ".input_layernorm."), (".ln_2.", ".post_attention_layernorm."),
                 (".attn.c_attn.", ".self_attn.qkv_proj."), (".attn.c_proj.", ".self_attn.o_proj."),
                 (".mlp.c_fc.", ".mlp.up_proj."), (".mlp.c_proj.", ".mlp.down_proj."))


def _core(f: Fields) -> tuple[int, int, int, int, int]:
    hidden, n_layers, heads, vocab = read_mha_shape(f)
    inner = f.int("intermediate_size", lambda: 4 * hidden, note="absent or null: 4 x hidden size")
    return hidden, n_layers, heads, vocab, inner


def _positions(f: Fields) -> int:
    return f.int("max_position_embeddings", hi=1 << 24)


def _ln(hidden: int) -> Norm:
    return Norm(hidden, NormKind.LAYER, bias=True)


def build_gpt2(f: Fields, model_type: str) -> ModelSpec:
    """gpt2 and gpt_bigcode: pre-LN blocks, fused QKV, learned positions."""
    hidden, n_layers, heads, vocab, inner = _core(f)
    hd = hidden // heads
    bigcode = model_type == "gpt_bigcode"
    kv = (1 if f.bool("multi_query", True) else heads) if bigcode else heads
    if not f.bool("scale_attn_weights", True):
        raise f.error("scale_attn_weights", "is false (unscaled attention scores) and is not supported")
    if not bigcode and f.bool("scale_attn_by_inverse_layer_idx", False):
        raise f.error("scale_attn_by_inverse_layer_idx", "is true (scores scaled per layer) and is not supported")
    act = read_act(f, TRAITS)
    attn = Attention(hidden, heads, kv, hd, hd, True, True, True, True, fused_qkv=True)
    layer = Layer(attn, MLP(hidden, inner, gated=False, bias=True, act=act), pre_norms(lambda: _ln(hidden)))
    layout = CheckpointLayout(renames=_LAYERS, modules=_GPT2_MODULES, transposed=not bigcode,
                              qkv_grouped=bigcode and kv == heads)
    return ModelSpec(
        model_type=model_type, hidden_size=hidden, vocab_size=vocab, layers=(layer,) * n_layers,
        tie_word_embeddings=read_tie(f, True), final_norm=_ln(hidden), hidden_act=act, norm_eps=read_eps(f),
        position_embeddings=_positions(f), checkpoint=layout,
    )


def _gptj_spec(f: Fields, model_type: str, title: str, hidden: int, vocab: int, layer: Layer, n_layers: int,
               act: str, layout: CheckpointLayout) -> ModelSpec:
    """GPT-J's and CodeGen's model around their (parallel) block: a final LayerNorm, interleaved RoPE, an untied
    lm_head with a bias (a tied head would drop it: refused)."""
    spec = ModelSpec(
        model_type=model_type, hidden_size=hidden, vocab_size=vocab, layers=(layer,) * n_layers,
        tie_word_embeddings=read_tie(f, False), final_norm=_ln(hidden), hidden_act=act, norm_eps=read_eps(f),
        lm_head_bias=True, numerics=Numerics(rope_style=RopeStyle.PAIRS), checkpoint=layout,
    )
    if spec.tie_word_embeddings:
        raise f.error("tie_word_embeddings", f"is true, but {title}'s lm_head has a bias that a tied head would "
                                             "drop (not supported)")
    return spec


def build_gptj(f: Fields, model_type: str) -> ModelSpec:
    hidden, n_layers, heads, vocab, inner = _core(f)
    hd = hidden // heads
    rotary = f.opt_int("rotary_dim")
    rotary = hd if rotary is None else rotary
    if rotary > hd or rotary % 2:
        raise f.error("rotary_dim", f"({rotary}) must be even and at most head_dim ({hd})")
    act = read_act(f, TRAITS)
    attn = Attention(hidden, heads, heads, hd, hd, rotary_dim=rotary, rope_theta=10000.0)
    layer = Layer(attn, MLP(hidden, inner, gated=False, bias=True, act=act),
                  (PlacedNorm("input_layernorm", "pre_mixer", _ln(hidden)),), parallel=True)
    layout = CheckpointLayout(renames=_LAYERS, modules=(
        (".ln_1.", ".input_layernorm."), (".attn.q_proj.", ".self_attn.q_proj."), (".attn.k_proj.", ".self_attn.k_proj."),
        (".attn.v_proj.", ".self_attn.v_proj."), (".attn.out_proj.", ".self_attn.o_proj."),
        (".mlp.fc_in.", ".mlp.up_proj."), (".mlp.fc_out.", ".mlp.down_proj.")))
    return _gptj_spec(f, model_type, "GPT-J", hidden, vocab, layer, n_layers, act, layout)


#: OpenAI GPT's ACT_FNS: afn -> the activation it builds ("gelu" is GPT-2's tanh approximation)
OPENAI_GPT_ACTS = {"gelu": "gelu_new", "relu": "relu", "silu": "silu", "swish": "silu"}


def build_openai_gpt(f: Fields, model_type: str) -> ModelSpec:
    """GPT-1 (openai-gpt): learned positions (``n_positions`` rows), post-LN blocks (``ln_1`` normalises the
    residual stream after attention, ``ln_2`` after the MLP) and no final norm, GPT-2's Conv1D projections with
    biases (fused ``c_attn``), an MLP of 4 x hidden whatever the config says, tied by default."""
    hidden, n_layers, heads, vocab = read_mha_shape(f)
    hd = hidden // heads
    afn = f.str("afn")
    if afn not in OPENAI_GPT_ACTS:
        raise f.error("afn", f"is {afn!r}: transformers' OpenAI GPT knows {', '.join(sorted(OPENAI_GPT_ACTS))}")
    act = OPENAI_GPT_ACTS[afn]
    norms = (PlacedNorm("ln_1", "post_mixer_residual", _ln(hidden)),
             PlacedNorm("ln_2", "post_ffn_residual", _ln(hidden)))
    attn = Attention(hidden, heads, heads, hd, hd, True, True, True, True, fused_qkv=True)
    layer = Layer(attn, MLP(hidden, 4 * hidden, gated=False, bias=True, act=act), norms)
    layout = CheckpointLayout(
        renames=tuple((pre + old, new) for pre in ("transformer.", "")  # the hub's files: saved from OpenAIGPTModel
                      for old, new in (("tokens_embed.", "model.embed_tokens."),
                                       ("positions_embed.", "model.embed_positions."), ("h.", "model.layers."))),
        modules=((".attn.c_attn.", ".self_attn.qkv_proj."), (".attn.c_proj.", ".self_attn.o_proj.")), transposed=True)
    return ModelSpec(
        model_type=model_type, hidden_size=hidden, vocab_size=vocab, layers=(layer,) * n_layers,
        tie_word_embeddings=read_tie(f, True), final_norm=None, hidden_act=act, norm_eps=read_eps(f),
        position_embeddings=_positions(f), checkpoint=layout,
    )


CODEGEN_MP = 4  # CodeGenAttention.mp_num: the fused qkv_proj rows are 4 blocks of [q | v | k], hidden / 4 rows each


def build_codegen(f: Fields, model_type: str) -> ModelSpec:
    """CodeGen (Salesforce CodeGen, CodeGen2): GPT-J's parallel block with one
    bias-free fused ``qkv_proj`` whose rows are ``mp_num`` (4) blocks of ``[q | v | k]`` (``hidden / 4`` rows
    each: transformers' ``view(..., 4, -1).split``), a bias-free ``out_proj``, RoPE on interleaved pairs of
    the first ``rotary_dim`` channels of each head, an untied head with a bias. (CodeGen2's own remote code splits
    the rows in 8 blocks, not 4: the same tensors and counts; the runtime loads transformers' native layout.)"""
    hidden, n_layers, heads, vocab, inner = _core(f)
    hd = hidden // heads
    if hidden % CODEGEN_MP:
        raise f.error("hidden_size", f"({hidden}) must be divisible by CodeGen's mp_num ({CODEGEN_MP}): "
                                     "transformers splits qkv_proj into 4 blocks")
    rotary = f.opt_int("rotary_dim")
    if rotary is None:  # transformers then builds sin/cos hidden_size wide, which only fits a single head
        if heads != 1:
            raise f.error("rotary_dim", "is null: transformers' CodeGen then ropes hidden_size channels per head, "
                                        "which fails with more than one head; not supported")
        rotary = hd
    if rotary > hd or rotary % 2:
        raise f.error("rotary_dim", f"({rotary}) must be even and at most head_dim ({hd})")
    act = read_act(f, TRAITS)
    attn = Attention(hidden, heads, heads, hd, hd, fused_qkv=True, rotary_dim=rotary, rope_theta=10000.0)
    layer = Layer(attn, MLP(hidden, inner, gated=False, bias=True, act=act),
                  (PlacedNorm("input_layernorm", "pre_mixer", _ln(hidden)),), parallel=True)
    layout = CheckpointLayout(renames=_LAYERS, qkv_mp=CODEGEN_MP, modules=(
        (".ln_1.", ".input_layernorm."), (".attn.qkv_proj.", ".self_attn.qkv_proj."),
        (".attn.out_proj.", ".self_attn.o_proj."), (".mlp.fc_in.", ".mlp.up_proj."),
        (".mlp.fc_out.", ".mlp.down_proj.")))
    return _gptj_spec(f, model_type, "CodeGen", hidden, vocab, layer, n_layers, act, layout)


def _neo_layer_types(f: Fields, n_layers: int) -> list[str]:
    raw = f.raw("attention_types")
    if raw is None:
        raw = [[["global", "local"], 12]]
        f.defaulted("attention_types", short(raw), "absent: the class default, 12 x (global, local)")
    out: list[str] = []
    if not isinstance(raw, list):
        raise f.error("attention_types", f"must be a list of [[types...], repeat] pairs, got {short(raw)}")
    for item in raw:
        ok = (isinstance(item, list) and len(item) == 2 and isinstance(item[0], list)
              and isinstance(item[1], int) and not isinstance(item[1], bool) and 0 <= item[1] <= MAX_LAYERS
              and all(t in ("global", "local") for t in item[0]))
        if not ok:
            raise f.error("attention_types", f"entry {short(item)} is not [[\"global\"|\"local\", ...], repeat]")
        for _ in range(item[1]):
            out.extend(item[0])
        if len(out) > MAX_LAYERS:
            raise f.error("attention_types", "expands to too many layers")
    if len(out) != n_layers:
        raise f.error("attention_types", f"expands to {len(out)} layers but num_layers is {n_layers}")
    return out


def build_gpt_neo(f: Fields, model_type: str) -> ModelSpec:
    hidden, n_layers, heads, vocab, inner = _core(f)
    hd = hidden // heads
    types = _neo_layer_types(f, n_layers)
    window = f.int("window_size", 256, hi=1 << 30)
    act = read_act(f, TRAITS)
    mlp = MLP(hidden, inner, gated=False, bias=True, act=act)
    layers = tuple(Layer(Attention(hidden, heads, heads, hd, hd, o_bias=True, window=window if t == "local" else None),
                         mlp, pre_norms(lambda: _ln(hidden))) for t in types)
    layout = CheckpointLayout(renames=_LAYERS, modules=(
        (".ln_1.", ".input_layernorm."), (".ln_2.", ".post_attention_layernorm."),
        (".attn.attention.q_proj.", ".self_attn.q_proj."), (".attn.attention.k_proj.", ".self_attn.k_proj."),
        (".attn.attention.v_proj.", ".self_attn.v_proj."), (".attn.attention.out_proj.", ".self_attn.o_proj."),
        (".mlp.c_fc.", ".mlp.up_proj."), (".mlp.c_proj.", ".mlp.down_proj.")))
    return ModelSpec(
        model_type=model_type, hidden_size=hidden, vocab_size=vocab, layers=layers,
        tie_word_embeddings=read_tie(f, True), final_norm=_ln(hidden), hidden_act=act, norm_eps=read_eps(f),
        position_embeddings=_positions(f), numerics=Numerics(attention_multiplier=1.0),  # unscaled scores
        checkpoint=layout,
    )
