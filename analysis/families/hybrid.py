"""State-space, linear-attention and other hybrid families (each a builder in the registry).

Each builder reads its family's fields (transformers' ``configuration_*.py`` names, with their class
defaults from ``family_defaults``) and states the block structure of transformers'
``modeling_*.py``; the shapes themselves live in ``spec`` (``Mamba``, ``GatedDeltaNet``,
``ShortConv``, ``GatedAttention``, ``ParallelHybrid``). Families share readers where they share
structure: one Mamba-2 reader for mamba2 / Nemotron-H / Bamba / Granite-4 hybrid / Falcon-H1 (their
field names differ, see ``MAMBA2_KEYS``), one Mamba-1 reader for mamba / falcon_mamba / Jamba, one
attention reader for all of them.

Anything a builder cannot represent exactly (Nemotron-H's latent MoE, a Phi lm_head bias with tied
embeddings ...) is a ``ConfigError`` naming the file and the field, never an approximate count.

Layer layouts (transformers 5.x):

- ``qwen3_next``: every layer is input_layernorm → (Gated DeltaNet | gated attention) →
  post_attention_layernorm → (MoE with gated shared expert | dense MLP).
- ``qwen3_5_text`` / ``qwen3_5_moe_text``: the same, with the DeltaNet input projections split in
  four; a dense MLP in every layer (qwen3_5) or the MoE with gated shared expert in every layer.
- ``nemotron_h``: every layer is ONE block with ONE norm: Mamba-2 (M), attention (*), a relu² MLP (-)
  or a non-gated MoE with a shared expert (E); Nemotron 3 Super / Ultra's ``moe_latent_size`` runs the routed
  experts in a latent width between ``fc1_latent_proj`` / ``fc2_latent_proj`` (router and shared expert at hidden).
- ``jamba``: input_layernorm → (Mamba-1 | attention) → pre_ff_layernorm → (MoE | MLP).
- ``falcon_h1``: input_layernorm → attention ∥ Mamba-2 (summed) → pre_ff_layernorm → MLP.
- ``mamba``, ``falcon_mamba``, ``mamba2``: norm → mixer, nothing else.
- ``bamba``, ``granitemoehybrid``: input_layernorm → (Mamba-2 | attention) → norm → MLP (bamba) or
  MoE + shared MLP (granite; shared MLP alone when ``num_local_experts`` is 0).
- ``lfm2``: operator_norm → (short conv | attention with q/k norms) → ffn_norm → SwiGLU MLP.
- ``phi``: ONE LayerNorm feeding attention and MLP in parallel (biases everywhere, lm_head too).
- ``zamba2`` / ``zamba``: input_layernorm → Mamba-2 / Mamba-1 (per-head x/dt projections); a hybrid
  layer first runs a shared transformer block on [hidden | embedding] and a per-layer linear, adds it
  to its input, then its own Mamba block (``mixers/zamba.py``).
- ``minimax``: input_layernorm → (lightning attention | softmax attention) → post_attention_layernorm →
  Mixtral-style MoE in every layer (``mixers/lightning.py``); the residual is taken after each norm.
"""

from __future__ import annotations

from dataclasses import fields, replace
from typing import Any

from ..dtypes import try_dtype
from ..records import frozen
from ..fields import MAX_LAYERS, Fields, as_int, short
from ..spec import (
    MLA,
    MLP,
    Attention,
    CheckpointLayout,
    GatedAttention,
    GatedDeltaNet,
    GLU,
    Layer,
    Mamba,
    ModelSpec,
    MoE,
    Norm,
    NormKind,
    Numerics,
    ParallelHybrid,
    PlacedNorm,
    RouterKind,
    ShortConv,
)
from ..mixers import KimiDeltaAttention, LightningAttention, SharedBlockMamba
from .common import Traits, per_layer_types, pre_norms, sparse_layers, read_routing, read_act, read_eps, read_head_dim, read_rope, read_rotary, read_tie
from .qwen_mtp import qwen_mtp

# ---- shared readers ------------------------------------------------------------------------------


def _present(f: Fields, key: str) -> bool:
    """Whether the config itself carries ``key`` (not a class default)."""
    return f.cfg.get(key) is not None


def _pick(f: Fields, *names: str) -> str:
    """The first of ``names`` the config carries; else the first (whose class default applies)."""
    return next((k for k in names if _present(f, k)), names[0])


def _check_heads(f: Fields, heads: int, kv: int) -> None:
    if kv > heads or heads % kv:
        raise f.error("num_key_value_heads", f"({kv}) must divide num_attention_heads ({heads})")


def read_attention(f: Fields, hidden: int, *, bias: bool, rope: bool = True, rotary_default: float = 1.0,
                   rotary_fixed: float | None = None, qk_norm_dim: int | None = None, qk_norm_bias: bool = False,
                   output_gate: bool = False, head_dim: int | None = None) -> Attention:
    """Softmax attention from the standard fields (``num_attention_heads``, ``num_key_value_heads``,
    ``head_dim``), with bias on q/k/v/o when ``bias``; NoPE when not ``rope``; ``rotary_fixed``
    overrides the config's rotary factor (Bamba); per-head q/k norms of ``qk_norm_dim`` features
    (None: head_dim; 0: none). A ``GatedAttention`` when it has an output gate or norm biases."""
    heads = f.int("num_attention_heads")
    kv = f.int("num_key_value_heads", heads, note="absent: equal to num_attention_heads (no GQA)")
    _check_heads(f, heads, kv)
    hd = head_dim if head_dim is not None else read_head_dim(f, hidden, heads)
    theta, rotary_dim = 10000.0, 0
    if rope:
        theta, rotary_dim, _ = read_rotary(f, hd, rotary_default)
        if rotary_fixed is not None:
            rotary_dim = f.derived("rotary_dim", int(hd * rotary_fixed),
                                   f"partial_rotary_factor fixed at {rotary_fixed} by transformers")
    norm_dim = hd if qk_norm_dim is None else qk_norm_dim
    attn = Attention(hidden_size=hidden, num_attention_heads=heads, num_key_value_heads=kv, head_dim=hd,
                     v_head_dim=hd, q_bias=bias, k_bias=bias, v_bias=bias, o_bias=bias, q_norm_dim=norm_dim,
                     k_norm_dim=norm_dim, rotary_dim=rotary_dim, rope_theta=theta)
    if output_gate or qk_norm_bias:
        base = {k.name: getattr(attn, k.name) for k in fields(Attention)}
        return GatedAttention(**base, output_gate=output_gate, qk_norm_bias=qk_norm_bias)
    return attn


def _expand_inner(f: Fields, key: str, hidden: int) -> int:
    """``int(expand · hidden_size)`` as transformers computes d_inner (``expand`` may be a float)."""
    v = f.raw(key, 2)
    iv = as_int(v)
    if iv is not None:
        return f.int(key, 2) * hidden
    e = f.float(key, 2.0)
    return f.derived("mamba_intermediate_size", int(e * hidden), f"int({key} x hidden_size)")


def read_ssm_state_dtype(f: Fields, key: str, default: str | None = None, note: str = "") -> str | None:
    """The dtype serving engines keep a recurrent state in when the checkpoint's config fixes it (vLLM's
    ``verify_and_update_config`` hooks turn an ``auto`` ``mamba_ssm_cache_dtype`` into the config's: NemotronH's
    ``mamba_ssm_cache_dtype``, float32 when absent; Qwen3.5's ``mamba_ssm_dtype``); None: the model's state dtype
    (``auto``, or absent without a default)."""
    raw = f.str(key, default, note=note)
    if raw is None or raw == "auto":
        return None
    dt = try_dtype(raw)
    if dt is None:
        raise f.error(key, f"is {short(raw)}: not a dtype")
    return dt.name


@frozen
class Mamba2Keys:
    """The config names of the Mamba-2 fields in one family."""

    heads: str
    head_dim: str
    state: str
    groups: str
    conv: str
    conv_bias: str
    proj_bias: str
    expand: str
    chunk: str


MAMBA2_KEYS = {
    "mamba2": Mamba2Keys("num_heads", "head_dim", "state_size", "n_groups", "conv_kernel", "use_conv_bias",
                         "use_bias", "expand", "chunk_size"),
    "nemotron_h": Mamba2Keys("mamba_num_heads", "mamba_head_dim", "ssm_state_size", "n_groups", "conv_kernel",
                             "use_conv_bias", "use_bias", "expand", "chunk_size"),
    "granite": Mamba2Keys("mamba_n_heads", "mamba_d_head", "mamba_d_state", "mamba_n_groups", "mamba_d_conv",
                          "mamba_conv_bias", "mamba_proj_bias", "mamba_expand", "mamba_chunk_size"),
}

#: Nemotron-H's legacy names, which transformers still accepts (and prefers when present).
NEMOTRON_LEGACY = {"n_groups": "mamba_n_groups", "conv_kernel": "mamba_d_conv", "use_conv_bias": "mamba_conv_bias",
                   "chunk_size": "mamba_chunk_size", "expand": "mamba_expand"}


def read_mamba2(f: Fields, hidden: int, keys: Mamba2Keys, *, inner: str, gated_norm: bool = True,
                out_proj_bias: bool | None = None, legacy: dict[str, str] | None = None) -> Mamba:
    """A Mamba-2 mixer. ``inner``: how d_inner is set: ``heads`` (num_heads × head_dim, Nemotron-H),
    ``expand`` (expand × hidden, head_dim may be 'auto'), ``d_ssm`` (Falcon-H1's mamba_d_ssm, else
    expand × hidden)."""
    legacy = legacy or {}

    def name(k: str) -> str:
        # the legacy name when the config carries it, else the current one (whose class default applies when absent)
        return legacy[k] if k in legacy and _present(f, legacy[k]) else k

    heads = f.int(keys.heads)
    state = f.int(keys.state)
    groups = f.int(name(keys.groups))
    kernel = f.int(name(keys.conv), hi=1 << 12)
    conv_bias = f.bool(name(keys.conv_bias), True)
    proj_bias = f.bool(keys.proj_bias, False)
    chunk = f.int(name(keys.chunk), 256)
    if inner == "heads":
        head_dim = f.int(keys.head_dim)
        d_inner = f.derived("mamba_intermediate_size", heads * head_dim, f"{keys.heads} x {keys.head_dim}")
    else:
        if inner == "d_ssm" and f.has("mamba_d_ssm"):
            d_inner = f.int("mamba_d_ssm")
        else:
            d_inner = _expand_inner(f, name(keys.expand), hidden)
        raw_hd = f.raw(keys.head_dim, "auto")
        if raw_hd == "auto" or raw_hd is None:
            head_dim = f.derived(keys.head_dim, d_inner // heads, f"'auto': d_inner ({d_inner}) / {keys.heads}")
        else:
            head_dim = f.int(keys.head_dim)
        if heads * head_dim != d_inner:
            what = "mamba_d_ssm" if inner == "d_ssm" and f.has("mamba_d_ssm") else f"{name(keys.expand)} x hidden_size"
            raise f.error(keys.head_dim, f"({head_dim}) x {keys.heads} ({heads}) must equal the Mamba inner size "
                                         f"{d_inner} ({what})")
    if heads % groups:
        raise f.error(name(keys.groups), f"({groups}) must divide {keys.heads} ({heads})")
    return Mamba(hidden_size=hidden, version=2, intermediate_size=d_inner, state_size=state, conv_kernel=kernel,
                 num_heads=heads, head_dim=head_dim, n_groups=groups, conv_bias=conv_bias, proj_bias=proj_bias,
                 out_proj_bias=out_proj_bias, gated_norm=gated_norm, norm_groups=groups, chunk_size=chunk)


def _dt_rank(f: Fields, key: str, hidden: int) -> int:
    raw = f.raw(key, "auto")
    if raw == "auto" or raw is None:
        return f.derived(key, -(-hidden // 16), "'auto': ceil(hidden_size / 16)")
    return f.int(key)


def read_mamba1(f: Fields, hidden: int, *, jamba: bool, weightless_norms: bool = False) -> Mamba:
    """A Mamba-1 mixer: mamba / falcon_mamba names, or Jamba's ``mamba_*`` names (``jamba``)."""
    if jamba:
        d_inner = f.derived("mamba_intermediate_size", f.int("mamba_expand", 2) * hidden, "mamba_expand x hidden_size")
        state, kernel = f.int("mamba_d_state"), f.int("mamba_d_conv", hi=1 << 12)
        dt_rank = _dt_rank(f, "mamba_dt_rank", hidden)
        conv_bias, proj_bias = f.bool("mamba_conv_bias", True), f.bool("mamba_proj_bias", False)
    else:
        # transformers sets intermediate_size = int(expand · hidden) unless the config names one
        d_inner = f.int("intermediate_size") if _present(f, "intermediate_size") else _expand_inner(f, "expand", hidden)
        state, kernel = f.int("state_size"), f.int("conv_kernel", hi=1 << 12)
        dt_rank = _dt_rank(f, "time_step_rank", hidden)
        conv_bias, proj_bias = f.bool("use_conv_bias", True), f.bool("use_bias", False)
    return Mamba(hidden_size=hidden, version=1, intermediate_size=d_inner, state_size=state, conv_kernel=kernel,
                 dt_rank=dt_rank, conv_bias=conv_bias, proj_bias=proj_bias, gated_norm=False,
                 dt_layernorms=jamba, bcdt_rms=weightless_norms)


def _act(f: Fields, default: str) -> str:
    return read_act(f, Traits(act_default=default))


def _core(f: Fields) -> tuple[int, int, int]:
    return f.int("hidden_size"), f.int("num_hidden_layers", hi=MAX_LAYERS), f.int("vocab_size", hi=1 << 26)



def _spec(f: Fields, model_type: str, hidden: int, vocab: int, layers: list[Layer], final_norm: Norm,
          tie_default: bool, act: str, **kw: Any) -> ModelSpec:
    return ModelSpec(model_type=model_type, hidden_size=hidden, vocab_size=vocab, layers=tuple(layers),
                     tie_word_embeddings=read_tie(f, tie_default), final_norm=final_norm, hidden_act=act,
                     norm_eps=read_eps(f), **kw)


# ---- Qwen3-Next ----------------------------------------------------------------------------------

QWEN3_NEXT_TYPES = {"linear_attention": "linear", "full_attention": "full"}


def _qwen_hybrid_types(f: Fields, n_layers: int) -> list[str]:
    """"linear" / "full" per layer: ``layer_types``, else every ``full_attention_interval``-th layer full."""
    if f.raw("layer_types") is not None:
        return per_layer_types(f, "layer_types", n_layers, QWEN3_NEXT_TYPES)
    every = f.int("full_attention_interval", 4)
    f.derived("layer_types", f"list[{n_layers}]", f"absent: every {every}th layer full attention, "
                                                  "the others linear_attention (full_attention_interval)")
    return ["full" if (i + 1) % every == 0 else "linear" for i in range(n_layers)]


def _qwen_gdn(f: Fields, hidden: int, split_in_proj: bool) -> GatedDeltaNet:
    k_heads, v_heads = f.int("linear_num_key_heads"), f.int("linear_num_value_heads")
    if v_heads % k_heads:
        raise f.error("linear_num_value_heads", f"({v_heads}) must be a multiple of linear_num_key_heads ({k_heads})")
    return GatedDeltaNet(hidden, k_heads, v_heads, f.int("linear_key_head_dim"), f.int("linear_value_head_dim"),
                         f.int("linear_conv_kernel_dim", hi=1 << 12), split_in_proj=split_in_proj,
                         ssm_state_dtype=read_ssm_state_dtype(f, "mamba_ssm_dtype") if split_in_proj else None)


def _qwen_moe(f: Fields, hidden: int, n_exp: int, act: str) -> MoE:
    """Qwen3-Next's sparse block: routed experts and a shared expert behind a sigmoid gate."""
    k = f.int("num_experts_per_tok")
    if k > n_exp:
        raise f.error("num_experts_per_tok", f"({k}) exceeds num_experts ({n_exp})")
    return MoE(hidden, n_exp, k, f.int("moe_intermediate_size"),
               shared_intermediate_size=f.int("shared_expert_intermediate_size"), shared_expert_gate=True, act=act)


def _qwen_gdn_gate(f: Fields, numerics: Numerics) -> Numerics:
    """``output_gate_type``: the activation of the gate a Gated DeltaNet layer's RMSNormGated multiplies its normed
    output by (vLLM's qwen_gdn_linear_attn.py: absent -> silu, "swish" is silu, "sigmoid"; any other value fails its
    assert; transformers hard-codes silu and reads no such field). Qwen3.8's configs say "swish" (Qwen/Qwen3.8-27B,
    Qwen/Qwen3.8-2.4T-A95B). Parameters, caches and FLOPs do not depend on it; verify's module gates with silu, so a
    sigmoid gate is refused there."""
    gate = f.str("output_gate_type", "silu")
    if gate not in ("silu", "swish", "sigmoid"):
        raise f.error("output_gate_type", f"({gate!r}) must be silu, swish or sigmoid (vLLM's Qwen Gated DeltaNet)")
    if gate != "sigmoid":
        return numerics
    return replace(numerics, runtime_unsupported="a sigmoid Gated DeltaNet output gate (output_gate_type)")


def _qwen_hybrid(f: Fields, model_type: str, *, split_in_proj: bool, ffn_at, numerics: Numerics) -> ModelSpec:
    """The Qwen3-Next layer: input_layernorm → (Gated DeltaNet | gated attention with per-head q/k
    norms, partial RoPE 0.25 by default) → post_attention_layernorm → FFN; zero-centred RMSNorms
    (``1 + weight``). ``ffn_at(n_layers, act)`` gives each layer's FFN."""
    hidden, n_layers, vocab = _core(f)
    types = _qwen_hybrid_types(f, n_layers)
    if "linear" in types:
        numerics = _qwen_gdn_gate(f, numerics)
    act = _act(f, "silu")
    def full_attn():
        return read_attention(f, hidden, bias=f.bool("attention_bias", False), rotary_default=0.25, output_gate=True)

    attn = full_attn() if "full" in types else None
    gdn = _qwen_gdn(f, hidden, split_in_proj) if "linear" in types else None
    ffns = ffn_at(n_layers, act)
    norms = pre_norms(lambda: Norm(hidden))
    layers = [Layer(attn if types[i] == "full" else gdn, ffns[i], norms) for i in range(n_layers)]
    head_dim = attn.head_dim if attn is not None else 0
    # the checkpoint's mtp.* module (vLLM's qwen3_next_mtp.py / qwen3_5_mtp.py): reported, not in the total
    mtp, mtp_extra, mtp_caveats = qwen_mtp(f, hidden, lambda: attn or full_attn(), lambda n: ffn_at(n, act), norms)
    # transformers names the DeltaNet module linear_attn (ours: mixer, as for every recurrent mixer)
    return _spec(f, model_type, hidden, vocab, layers, Norm(hidden), False, act, norm_offset=1.0,
                 rope_scaling=read_rope(f, head_dim)[2] if attn is not None else (), numerics=numerics,
                 checkpoint=CheckpointLayout(modules=((".linear_attn.", ".mixer."),)),
                 mtp_layers=mtp, mtp_extra_params=mtp_extra, caveats=mtp_caveats)


def build_qwen3_next(f: Fields, model_type: str) -> ModelSpec:
    """MoE on every ``decoder_sparse_step``-th layer not in ``mlp_only_layers``, a dense MLP elsewhere."""
    hidden = f.int("hidden_size")

    def ffn_at(n_layers: int, act: str) -> list:
        n_exp = f.int("num_experts", lo=0)
        step = f.int("decoder_sparse_step", 1)
        only = set(f.int_list("mlp_only_layers", lo=0, hi=MAX_LAYERS) or [])
        moe_at = {i for i in range(n_layers) if i not in only and n_exp > 0 and (i + 1) % step == 0}
        moe = _qwen_moe(f, hidden, n_exp, act) if moe_at else None
        dense = MLP(hidden, f.int("intermediate_size"), act=act) if len(moe_at) < n_layers else None
        return [moe if i in moe_at else dense for i in range(n_layers)]

    # softmax router, the top-k renormalised when norm_topk_prob
    return _qwen_hybrid(f, model_type, split_in_proj=False, ffn_at=ffn_at,
                        numerics=Numerics(**read_routing(f, RouterKind.SOFTMAX)))


def build_qwen3_5(f: Fields, model_type: str) -> ModelSpec:
    """Qwen3.5 (``qwen3_5_text``): Qwen3-Next's layers with the DeltaNet input projections split in four
    (``in_proj_qkv``, ``in_proj_z``, ``in_proj_b``, ``in_proj_a``) and a dense SwiGLU MLP in every
    layer (transformers' Qwen3_5TextConfig has no expert fields)."""
    hidden = f.int("hidden_size")
    return _qwen_hybrid(f, model_type, split_in_proj=True,
                        ffn_at=lambda n, act: [MLP(hidden, f.int("intermediate_size"), act=act)] * n,
                        numerics=Numerics())


def build_qwen3_5_moe(f: Fields, model_type: str) -> ModelSpec:
    """Qwen3.5-MoE (``qwen3_5_moe_text``): the split DeltaNet projections, and Qwen3-Next's sparse block
    (experts plus the gated shared expert) in every layer (no decoder_sparse_step, no mlp_only_layers,
    no intermediate_size)."""
    hidden = f.int("hidden_size")
    # the router always renormalises its top-k (transformers reads no norm_topk_prob for it)
    return _qwen_hybrid(f, model_type, split_in_proj=True,
                        ffn_at=lambda n, act: [_qwen_moe(f, hidden, f.int("num_experts"), act)] * n,
                        numerics=Numerics(**read_routing(f, RouterKind.SOFTMAX, norm_fixed=True)))


LARA_TYPES = {"linear_attention": "linear", "sliding_attention": "sliding", "full_attention": "full"}
LARA_PATTERN = ("linear", "sliding", "linear", "full", "sliding")  # LaraMiniConfig's default, period 5


def build_lara_mini(f: Fields, model_type: str) -> ModelSpec:
    """Lara-4-Mini (``lara_mini``): Qwen3.5's split DeltaNet on the linear_attention layers, Qwen3's attention
    (per-head q/k norms, q/k/v/o biased by attention_bias, no output gate) elsewhere: RoPE over the whole head and
    a sliding_window on the sliding_attention layers, neither on the full_attention ones; Flint's sparse block
    (a softmax router, the top-k renormalised by norm_topk_prob, experts plus an ungated shared expert) on every
    layer; plain RMSNorms (``weight · x``, not Qwen3.5's ``1 + weight``), tied by default."""
    hidden, n_layers, vocab = _core(f)
    if f.raw("layer_types") is not None:
        types = per_layer_types(f, "layer_types", n_layers, LARA_TYPES)
    else:
        types = [LARA_PATTERN[i % 5] for i in range(n_layers)]
        f.derived("layer_types", f"list[{n_layers}]", "absent: linear, sliding, linear, full, sliding, repeated")
    act = _act(f, "silu")
    attn = None
    if "sliding" in types or "full" in types:
        attn = read_attention(f, hidden, bias=f.bool("attention_bias", False), rotary_fixed=1.0)
    window = (f.opt_int("sliding_window", lo=0, hi=1 << 30) or None) if "sliding" in types else None
    mixers = {"sliding": attn and replace(attn, window=window), "full": attn and replace(attn, rotary_dim=0),
              "linear": _qwen_gdn(f, hidden, True) if "linear" in types else None}
    n_exp, k = f.int("num_experts"), f.int("num_experts_per_tok")
    if k > n_exp:
        raise f.error("num_experts_per_tok", f"({k}) exceeds num_experts ({n_exp})")
    moe = MoE(hidden, n_exp, k, f.int("moe_intermediate_size"),
              shared_intermediate_size=f.int("shared_expert_intermediate_size", lo=1), act=act)
    norms = pre_norms(lambda: Norm(hidden))
    layers = [Layer(mixers[t], moe, norms) for t in types]
    return _spec(f, model_type, hidden, vocab, layers, Norm(hidden), True, act,
                 rope_scaling=read_rope(f, attn.head_dim)[2] if attn is not None else (),
                 numerics=Numerics(**read_routing(f, RouterKind.SOFTMAX)),
                 # the published checkpoints name the gated norm out_norm and fuse in_proj (split by the loader)
                 checkpoint=CheckpointLayout(modules=((".linear_attn.out_norm.", ".mixer.norm."),
                                                      (".linear_attn.", ".mixer."))))


# ---- Nemotron-H ----------------------------------------------------------------------------------

NEMOTRON_PATTERN = {"M": "mamba", "*": "attention", "-": "mlp", "E": "moe"}
NEMOTRON_TYPES = {"mamba": "mamba", "linear_attention": "mamba", "attention": "attention",
                  "full_attention": "attention", "mlp": "mlp", "moe": "moe"}


def _nemotron_pattern(f: Fields, key: str) -> list[str]:
    """A string of M * - E read as block types."""
    pattern = f.str(key)
    for i, ch in enumerate(pattern):
        if ch not in NEMOTRON_PATTERN:
            raise f.error(key, f"has {ch!r} at position {i}; expected M (Mamba-2), * (attention), - (MLP) or E (MoE)")
    return [NEMOTRON_PATTERN[ch] for ch in pattern]


def _nemotron_mtp(f: Fields) -> tuple[int, list[str]]:
    """Nemotron 3's MTP module (vLLM's nemotron_h_mtp.py; transformers builds none): ``num_nextn_predict_layers``
    steps, each the blocks of ``mtp_layers_block_type`` (a list) or ``mtp_hybrid_override_pattern`` (a string),
    else transformers' default [attention, moe]. Reported apart, not in the total."""
    steps = f.int("num_nextn_predict_layers", 0, lo=0, hi=MAX_LAYERS)
    if not steps:
        return 0, []
    if _present(f, "mtp_layers_block_type"):
        types = per_layer_types(f, "mtp_layers_block_type", None, NEMOTRON_TYPES)
    elif _present(f, "mtp_hybrid_override_pattern"):
        types = _nemotron_pattern(f, "mtp_hybrid_override_pattern")
    else:
        types = f.defaulted("mtp_layers_block_type", ["attention", "moe"], "absent: transformers' default")
    if not types:
        raise f.error("mtp_layers_block_type", "is empty")
    return steps, types


def nemotron_block_types(f: Fields) -> list[str]:
    """``layers_block_type`` / ``layer_types`` (a list) or ``hybrid_override_pattern`` (a string of
    M * - E), as transformers reads them (the list wins); ``num_hidden_layers``, when given, must agree."""
    declared = f.opt_int("num_hidden_layers", hi=MAX_LAYERS) if _present(f, "num_hidden_layers") else None
    list_key = next((k for k in ("layers_block_type", "layer_types") if _present(f, k)), None)
    if list_key is not None:
        types = per_layer_types(f, list_key, None, NEMOTRON_TYPES)
        key = list_key
    elif _present(f, "hybrid_override_pattern"):
        key = "hybrid_override_pattern"
        types = _nemotron_pattern(f, key)
    else:
        types = ["mamba", "moe", "attention", "mlp"]
        f.defaulted("layers_block_type", "list[4]", "absent, and no hybrid_override_pattern: the nemotron_h "
                                                    "class default (Mamba-2, MoE, attention, MLP)")
        key = "layers_block_type"
    if not types:
        raise f.error(key, "is empty")
    if len(types) > MAX_LAYERS:
        raise f.error(key, f"has {len(types)} layers, more than any real model (limit {MAX_LAYERS})")
    if declared is not None and declared != len(types):
        raise f.error(key, f"describes {len(types)} layers but num_hidden_layers is {declared}")
    return types


def build_nemotron_h(f: Fields, model_type: str) -> ModelSpec:
    hidden, vocab = f.int("hidden_size"), f.int("vocab_size", hi=1 << 26)
    types = nemotron_block_types(f)
    mtp_steps, mtp_types = _nemotron_mtp(f)
    used = set(types) | set(mtp_types)
    act = f.str("mlp_hidden_act", "relu2")
    mlp_bias = f.bool("mlp_bias", False)
    mixers: dict[str, Any] = {}
    if "mamba" in used:
        # d_inner = mamba_num_heads x mamba_head_dim (not expand x hidden); in/out_proj bias: use_bias
        mixers["mamba"] = replace(
            read_mamba2(f, hidden, MAMBA2_KEYS["nemotron_h"], inner="heads", legacy=NEMOTRON_LEGACY),
            ssm_state_dtype=read_ssm_state_dtype(f, "mamba_ssm_cache_dtype", "float32",
                                                 "absent: vLLM's NemotronH default (and transformers')"))
    if "attention" in used:
        if f.bool("attention_bias", False):
            raise f.error("attention_bias", "is true, but Nemotron-H attention has no biases in transformers")
        hd = None  # the original configs name it attention_head_dim
        if not _present(f, "head_dim") and _present(f, "attention_head_dim"):
            hd = f.derived("head_dim", f.int("attention_head_dim"), "from 'attention_head_dim'")
        mixers["attention"] = read_attention(f, hidden, bias=False, rope=False, qk_norm_dim=0, head_dim=hd)  # NoPE
    ffns: dict[str, Any] = {}
    if "mlp" in used:
        ffns["mlp"] = MLP(hidden, f.int("intermediate_size"), gated=False, bias=mlp_bias, act=act)
    if "moe" in used:
        # Nemotron 3 Super / Ultra (LatentMoE): routed experts at moe_latent_size between fc1/fc2_latent_proj
        latent = f.opt_int("moe_latent_size") or 0
        if mlp_bias:
            raise f.error("mlp_bias", "is true with MoE (E) layers: a shared expert with biases is not supported")
        e_key = _pick(f, "n_routed_experts", "num_local_experts")
        n_exp = f.int(e_key)
        k = f.int("num_experts_per_tok")
        if k > n_exp:
            raise f.error("num_experts_per_tok", f"({k}) exceeds {e_key} ({n_exp})")
        shared = f.int("moe_shared_expert_intermediate_size", lo=0)
        if not shared:  # transformers: NemotronHMLP(intermediate_size=0 or config.intermediate_size)
            shared = f.derived("moe_shared_expert_intermediate_size", f.int("intermediate_size"),
                               "0: transformers falls back to intermediate_size")
        ffns["moe"] = MoE(hidden, n_exp, k, f.int("moe_intermediate_size"), gated=False,
                          shared_intermediate_size=shared, act=act, latent_size=latent)
    norm = Norm(hidden)
    pre_mixer = (PlacedNorm("norm", "pre_mixer", norm),)
    pre_ffn = (PlacedNorm("norm", "pre_ffn", norm),)
    def block(t: str) -> Layer:
        return Layer(mixers[t], None, pre_mixer) if t in mixers else Layer(None, ffns[t], pre_ffn)

    # MTP: each step's blocks, its enorm / hnorm, eh_proj (2·hidden -> hidden, bias-free) and final_layernorm
    spec = _spec(f, model_type, hidden, vocab, [block(t) for t in types], Norm(hidden), False, act,
                 mtp_layers=tuple(block(t) for t in mtp_types * mtp_steps),
                 mtp_extra_params=mtp_steps * (3 * hidden + 2 * hidden * hidden))
    if spec.tie_word_embeddings:
        raise f.error("tie_word_embeddings", "is true, but transformers' Nemotron-H never ties its lm_head "
                                             "(an untied head of vocab x hidden would be counted): not supported")
    return spec


# ---- Jamba ---------------------------------------------------------------------------------------


def _period(f: Fields, period_key: str, offset_key: str) -> tuple[int, int]:
    period, offset = f.int(period_key), f.int(offset_key, lo=0)
    if offset >= period:
        raise f.error(offset_key, f"({offset}) must be smaller than {period_key} ({period})")
    return period, offset


def build_jamba(f: Fields, model_type: str) -> ModelSpec:
    hidden, n_layers, vocab = _core(f)
    a_period, a_offset = _period(f, "attn_layer_period", "attn_layer_offset")
    e_period, e_offset = _period(f, "expert_layer_period", "expert_layer_offset")
    act = _act(f, "silu")
    is_attn = [i % a_period == a_offset for i in range(n_layers)]
    attn = read_attention(f, hidden, bias=False, rope=False, qk_norm_dim=0) if any(is_attn) else None  # NoPE
    mamba = read_mamba1(f, hidden, jamba=True) if not all(is_attn) else None
    inter = f.int("intermediate_size")
    e_key = _pick(f, "num_experts", "num_local_experts")
    n_exp = f.int(e_key)
    is_moe = [n_exp > 1 and i % e_period == e_offset for i in range(n_layers)]
    moe = None
    if any(is_moe):
        k = f.int("num_experts_per_tok")
        if k > n_exp:
            raise f.error("num_experts_per_tok", f"({k}) exceeds {e_key} ({n_exp})")
        moe = MoE(hidden, n_exp, k, inter, act=act)
    dense = MLP(hidden, inter, act=act)
    norms = (PlacedNorm("input_layernorm", "pre_mixer", Norm(hidden)),
             PlacedNorm("pre_ff_layernorm", "pre_ffn", Norm(hidden)))
    layers = [Layer(attn if is_attn[i] else mamba, moe if is_moe[i] else dense, norms) for i in range(n_layers)]
    return _spec(f, model_type, hidden, vocab, layers, Norm(hidden), False, act)


# ---- pure Mamba ----------------------------------------------------------------------------------


def build_mamba(f: Fields, model_type: str) -> ModelSpec:
    """mamba / falcon_mamba (Mamba-1) and mamba2: norm → mixer blocks, ``norm_f``, tied by default for
    Mamba-1 (the family defaults say which)."""
    hidden, n_layers, vocab = _core(f)
    if model_type == "mamba2":
        mixer = read_mamba2(f, hidden, MAMBA2_KEYS["mamba2"], inner="expand")
    else:
        mixer = read_mamba1(f, hidden, jamba=False, weightless_norms=model_type == "falcon_mamba")
    layer = Layer(mixer, None, (PlacedNorm("norm", "pre_mixer", Norm(hidden)),))
    return _spec(f, model_type, hidden, vocab, [layer] * n_layers, Norm(hidden), model_type != "mamba2",
                 f.str("hidden_act", "silu"))


# ---- Falcon-H1 -----------------------------------------------------------------------------------


def build_falcon_h1(f: Fields, model_type: str) -> ModelSpec:
    """Attention and Mamba-2 side by side in every layer. The µP multipliers (embedding, lm_head,
    key, attention/ssm in/out, mlp, ssm_multipliers) scale activations only: no shapes change."""
    hidden, n_layers, vocab = _core(f)
    act = _act(f, "silu")
    attn = read_attention(f, hidden, bias=f.bool("attention_bias", False), qk_norm_dim=0)
    mamba = read_mamba2(f, hidden, MAMBA2_KEYS["granite"], inner="d_ssm", gated_norm=f.bool("mamba_rms_norm", False),
                        out_proj_bias=f.bool("projectors_bias", False))
    mlp = MLP(hidden, f.int("intermediate_size"), bias=f.bool("mlp_bias", False), act=act)
    norms = (PlacedNorm("input_layernorm", "pre_mixer", Norm(hidden)),
             PlacedNorm("pre_ff_layernorm", "pre_ffn", Norm(hidden)))
    layer = Layer(ParallelHybrid(attn, mamba), mlp, norms)
    return _spec(f, model_type, hidden, vocab, [layer] * n_layers, Norm(hidden), False, act,
                 rope_scaling=read_rope(f, attn.head_dim)[2])


# ---- Bamba and Granite-4 hybrid ------------------------------------------------------------------

GRANITE_TYPES = {"mamba": "mamba", "linear_attention": "mamba", "attention": "attention",
                 "full_attention": "attention"}


def build_bamba(f: Fields, model_type: str) -> ModelSpec:
    """bamba (``attn_layer_indices``, SwiGLU MLP) and granitemoehybrid (``layer_types``, MoE plus an
    always-on shared MLP, or the shared MLP alone when ``num_local_experts`` is 0)."""
    hidden, n_layers, vocab = _core(f)
    act = _act(f, "silu")
    if model_type == "bamba":
        idx = set(f.int_list("attn_layer_indices", lo=0, hi=MAX_LAYERS) or [])
        types = ["attention" if i in idx else "mamba" for i in range(n_layers)]
        rope, fixed = True, 0.5  # transformers hard-codes partial_rotary_factor 0.5 for Bamba
    else:
        key = _pick(f, "layer_types", "layers_block_type")
        if _present(f, key):
            types = per_layer_types(f, key, n_layers, GRANITE_TYPES)
        else:
            types = ["mamba"] * n_layers
            f.defaulted("layer_types", f"list[{n_layers}]", "absent: every layer Mamba-2 (the class default)")
        rope, fixed = f.str("position_embedding_type", "none") == "rope", None  # else NoPE
    attn = None
    if "attention" in types:
        attn = read_attention(f, hidden, bias=f.bool("attention_bias", False), rope=rope, rotary_fixed=fixed,
                              qk_norm_dim=0)
    mamba = read_mamba2(f, hidden, MAMBA2_KEYS["granite"], inner="expand") if "mamba" in types else None
    if model_type == "bamba":
        ffn: Any = MLP(hidden, f.int("intermediate_size"), bias=f.bool("mlp_bias", False), act=act)
        norms = (PlacedNorm("input_layernorm", "pre_mixer", Norm(hidden)),
                 PlacedNorm("pre_ff_layernorm", "pre_ffn", Norm(hidden)))
    else:
        n_exp = f.int(_pick(f, "num_local_experts", "num_experts"), lo=0)
        shared = f.int("shared_intermediate_size", lo=0)
        if n_exp:
            k = f.int("num_experts_per_tok")
            if k > n_exp:
                raise f.error("num_experts_per_tok", f"({k}) exceeds num_local_experts ({n_exp})")
            ffn = MoE(hidden, n_exp, k, f.int("intermediate_size"), shared_intermediate_size=shared, act=act)
        else:
            if not shared:
                raise f.error("shared_intermediate_size", "is 0 and num_local_experts is 0: the layers have no FFN")
            ffn = MLP(hidden, shared, fused_gate_up=True, act=act)
        norms = pre_norms(lambda: Norm(hidden))
    layers = [Layer(attn if t == "attention" else mamba, ffn, norms) for t in types]
    return _spec(f, model_type, hidden, vocab, layers, Norm(hidden), False, act,
                 rope_scaling=read_rope(f, attn.head_dim)[2] if attn is not None else ())


# ---- LFM2 ----------------------------------------------------------------------------------------

LFM2_TYPES = {"full_attention": "attention", "attention": "attention", "conv": "conv"}


def lfm2_ffn_size(f: Fields) -> int:
    """transformers' ``Lfm2MLP`` width: ``block_ff_dim`` (or ``intermediate_size``), and when
    ``block_auto_adjust_ff_dim``: ``int(2·i/3)``, times ``block_ffn_dim_multiplier``, rounded up to
    a multiple of ``block_multiple_of``."""
    size = f.int("block_ff_dim") if _present(f, "block_ff_dim") else f.int("intermediate_size")
    if not f.bool("block_auto_adjust_ff_dim", True):
        return size
    size = 2 * size // 3  # int(2 * size / 3), exact for integers
    mult = f.raw("block_ffn_dim_multiplier", 1.0)
    if mult is not None:
        m = f.float("block_ffn_dim_multiplier")
        size = int(m * size)
        of = f.int("block_multiple_of", 256)
        size = of * (-(-size // of))
    return f.derived("ffn_dim", size, "block_auto_adjust_ff_dim: int(2/3 x block_ff_dim x multiplier) "
                                      "rounded up to block_multiple_of")


#: transformers' LFM2 / LFM2-MoE names -> ours (routed experts: feed_forward.experts.*, the generic rename)
LFM2_LAYOUT = CheckpointLayout(
    renames=(("model.embedding_norm.", "model.norm."),),
    modules=((".self_attn.out_proj.", ".self_attn.o_proj."), (".self_attn.q_layernorm.", ".self_attn.q_norm."),
             (".self_attn.k_layernorm.", ".self_attn.k_norm."), (".feed_forward.w1.", ".mlp.gate_proj."),
             (".feed_forward.w3.", ".mlp.up_proj."), (".feed_forward.w2.", ".mlp.down_proj."),
             (".feed_forward.expert_bias", ".mlp.gate.e_score_correction_bias")))


def build_lfm2(f: Fields, model_type: str) -> ModelSpec:
    hidden, n_layers, vocab = _core(f)
    moe = model_type == "lfm2_moe"
    if moe and not _present(f, "layer_types"):  # Lfm2MoeConfig has no default layout (transformers fails without)
        raise f.error("layer_types", "is required for lfm2_moe (which layers are conv and which attention)")
    if _present(f, "layer_types"):
        types = per_layer_types(f, "layer_types", n_layers, LFM2_TYPES)
    else:
        idx = f.int_list("full_attn_idxs", lo=0, hi=MAX_LAYERS)
        if idx is None:
            idx = list(range(n_layers))
            f.defaulted("full_attn_idxs", f"list[{n_layers}]", "absent: every layer attention (the class default)")
        types = ["attention" if i in set(idx) else "conv" for i in range(n_layers)]
    attn = read_attention(f, hidden, bias=False) if "attention" in types else None  # q/k RMSNorms over head_dim
    if attn is not None and not f.has("rope_theta") and not isinstance(f.raw("rope_parameters"), dict):
        attn = replace(attn, rope_theta=f.defaulted("rope_theta", 1000000.0, "lfm2's default_theta"))
    conv = ShortConv(hidden, f.int("conv_L_cache", hi=1 << 12), f.bool("conv_bias", False)) if "conv" in types else None
    norms = (PlacedNorm("operator_norm", "pre_mixer", Norm(hidden)), PlacedNorm("ffn_norm", "pre_ffn", Norm(hidden)))
    if moe:
        # LFM2-MoE (LFM2-8B-A1B): a SwiGLU MLP of intermediate_size (no LFM2 width adjustment) on the first
        # num_dense_layers layers, a sparse block on the others: a sigmoid router whose choice adds the
        # expert_bias buffer (use_expert_bias), the chosen sigmoids renormalised (norm_topk_prob) and scaled
        # (routed_scaling_factor); no shared expert
        dense = f.int("num_dense_layers", 2, lo=0, hi=n_layers)
        n_exp, k = f.int("num_experts", lo=1), f.int("num_experts_per_tok", lo=1)
        if k > n_exp:
            raise f.error("num_experts_per_tok", f"({k}) exceeds num_experts ({n_exp})")
        sparse = MoE(hidden, n_exp, k, f.int("moe_intermediate_size"))
        mlp = MLP(hidden, f.int("intermediate_size"))
        layers = [Layer(attn if t == "attention" else conv, mlp if i < dense else sparse, norms)
                  for i, t in enumerate(types)]
        numerics = Numerics(**read_routing(f, RouterKind.SIGMOID), score_correction_bias=f.bool("use_expert_bias", True))
        spec = _spec(f, model_type, hidden, vocab, layers, Norm(hidden), True, "silu", numerics=numerics,
                     checkpoint=LFM2_LAYOUT)
    else:
        mlp = MLP(hidden, lfm2_ffn_size(f))
        layers = [Layer(attn if t == "attention" else conv, mlp, norms) for t in types]
        spec = _spec(f, model_type, hidden, vocab, layers, Norm(hidden), True, "silu", checkpoint=LFM2_LAYOUT)
    if _present(f, "tie_embedding"):  # transformers: tie_embedding overrides tie_word_embeddings
        spec = replace(spec, tie_word_embeddings=f.bool("tie_embedding"))
    return spec


# ---- LFM3 ----------------------------------------------------------------------------------------

LFM3_TYPES = {"conv": "conv", "sliding_attention": "sliding", "full_attention": "full"}
#: Lfm3Config's rope_parameters when absent: (rope_type, theta, partial_rotary_factor) per attention type
LFM3_ROPE = {"sliding_attention": ("default", 10_000.0, 1.0), "full_attention": ("proportional", 1_000_000.0, 0.5)}


def _lfm3_rope(f: Fields, kind: str) -> tuple[float, float | None]:
    """(theta, proportional factor or None) of one attention type from the nested ``rope_parameters``
    (Lfm3RotaryEmbedding reads ``rope_parameters[layer_type]`` only; a flat dict does not build). "default"
    rotates all of head_dim; "proportional" the first ``factor · head_dim / 2`` frequencies over head_dim."""
    params = f.raw("rope_parameters")
    if params is None:
        kind_, theta, factor = LFM3_ROPE[kind]
        f.defaulted(f"rope_parameters.{kind}", f"{kind_}, theta {theta:g}", "absent: Lfm3Config's default")
        return theta, factor if kind_ == "proportional" else None
    if not isinstance(params, dict) or not isinstance(params.get(kind), dict):
        raise f.error("rope_parameters", f"has no '{kind}' block; LFM3 reads one per attention layer type")
    block = params[kind]
    rope_type = block.get("rope_type", "default")
    theta = block.get("rope_theta")
    if isinstance(theta, bool) or not isinstance(theta, (int, float)) or theta <= 0:
        raise f.error(f"rope_parameters.{kind}.rope_theta", f"must be a positive number, got {short(theta)}")
    if rope_type == "default":
        return float(theta), None
    factor = block.get("partial_rotary_factor", 1.0)
    if rope_type != "proportional" or block.get("factor", 1.0) != 1.0:
        raise f.error(f"rope_parameters.{kind}", f"is {short(block)}: only default and proportional RoPE "
                                                 "(without a scaling factor) are modelled for LFM3")
    if isinstance(factor, bool) or not isinstance(factor, (int, float)) or not 0 < factor <= 1:
        raise f.error(f"rope_parameters.{kind}.partial_rotary_factor", f"must be in (0, 1], got {short(factor)}")
    return float(theta), float(factor)


def build_lfm3(f: Fields, model_type: str) -> ModelSpec:
    """LFM3 (``lfm3``): LFM2's layer with three layer types (``conv``: the short conv; ``sliding_attention``
    / ``full_attention``: Qwen3 attention, q/k/v/o biased by attention_bias, per-head q/k RMSNorms, and with
    use_attention_gate a bias-free ``g_proj`` (hidden -> heads) whose sigmoid scales each head's output);
    with use_sandwich_norm, RMSNorms on the operator and FFN outputs before each residual add
    (post_operator_norm, post_ffn_norm); a SwiGLU MLP of intermediate_size (w1 / w3 / w2, no LFM2 width
    adjustment). Default layout: full at i % 4 == 2, sliding at i % 4 == 0 (i > 0), conv elsewhere. RoPE per
    attention type from ``rope_parameters`` (default: sliding plain at 10k, full proportional 0.5 at 1M)."""
    hidden, n_layers, vocab = _core(f)
    if _present(f, "layer_types"):
        types = per_layer_types(f, "layer_types", n_layers, LFM3_TYPES)
    else:
        types = ["full" if i % 4 == 2 else "sliding" if i % 4 == 0 and i > 0 else "conv" for i in range(n_layers)]
        f.defaulted("layer_types", f"list[{n_layers}]", "absent: full_attention at i % 4 == 2, sliding_attention "
                                                        "at i % 4 == 0 (i > 0), conv elsewhere")
    mixers: dict[str, Any] = {}
    proportional = None
    if "sliding" in types or "full" in types:
        attn = read_attention(f, hidden, bias=f.bool("attention_bias", False), qk_norm_dim=None, rope=False)
        if f.bool("use_attention_gate", True):
            attn = GatedAttention(**{k.name: getattr(attn, k.name) for k in fields(Attention)}, head_gate=True)
        if "full" in types:
            theta, proportional = _lfm3_rope(f, "full_attention")
            mixers["full"] = replace(attn, rotary_dim=attn.head_dim, rope_theta=theta)
        if "sliding" in types:
            theta, factor = _lfm3_rope(f, "sliding_attention")
            if factor is not None:
                raise f.error("rope_parameters.sliding_attention", "is proportional: only the full-attention "
                                                                  "layers' proportional RoPE is modelled")
            mixers["sliding"] = replace(attn, rotary_dim=attn.head_dim, rope_theta=theta,
                                        window=f.int("sliding_window", hi=1 << 30))
    if "conv" in types:
        mixers["conv"] = ShortConv(hidden, f.int("conv_L_cache", hi=1 << 12), f.bool("conv_bias", False))
    mlp = MLP(hidden, f.int("intermediate_size"))
    norms = [PlacedNorm("operator_norm", "pre_mixer", Norm(hidden)), PlacedNorm("ffn_norm", "pre_ffn", Norm(hidden))]
    if f.bool("use_sandwich_norm", True):
        norms += [PlacedNorm("post_operator_norm", "post_mixer", Norm(hidden)),
                  PlacedNorm("post_ffn_norm", "post_ffn", Norm(hidden))]
    layers = [Layer(mixers[t], mlp, tuple(norms)) for t in types]
    return _spec(f, model_type, hidden, vocab, layers, Norm(hidden), True, "silu",
                 numerics=Numerics(proportional_rope=proportional),
                 checkpoint=CheckpointLayout(renames=(("model.embedding_norm.", "model.norm."),),
                                             modules=LFM3_MODULES))


#: transformers' LFM3 module names -> ours
LFM3_MODULES = ((".feed_forward.w1.", ".mlp.gate_proj."), (".feed_forward.w3.", ".mlp.up_proj."),
                (".feed_forward.w2.", ".mlp.down_proj."), (".conv.in_proj.", ".mixer.in_proj."),
                (".conv.conv.", ".mixer.conv."), (".conv.out_proj.", ".mixer.out_proj."))


def _kda_moe_at(f: Fields, n_layers: int, first_dense: int) -> set[int]:
    """Kimi Linear's and Ling 3's MoE layers: by ``mlp_layer_types``, else all but the first first_k_dense_replace
    (the family's class default ``first_dense``; neither transformers class reads moe_layer_freq)."""
    if f.raw("mlp_layer_types") is not None:
        return sparse_layers(f, n_layers)
    return set(range(f.int("first_k_dense_replace", first_dense, lo=0, hi=MAX_LAYERS), n_layers))


def _kda_mla(f: Fields, hidden: int, heads: int, rope_dim: int, **kw: Any) -> MLA:
    """Their DeepSeek V3 MLA on ``full_attention`` layers (``kw``: the family's RoPE and gate)."""
    return MLA(hidden, heads, f.opt_int("q_lora_rank"), f.int("kv_lora_rank"), f.int("qk_nope_head_dim"), rope_dim,
               f.int("v_head_dim"), bias=f.bool("attention_bias", False), **kw)


def _kda_hybrid_spec(f: Fields, model_type: str, cls: str, core: tuple[int, int, int], mixers: dict,
                     types: list[str], moe_at: set[int], act: str, rope_scaling: tuple = ()) -> ModelSpec:
    """Kimi Linear's and Ling 3's shared layer: input_layernorm -> mixer -> post_attention_layernorm -> a
    DeepSeek-V3 MoE on the ``moe_at`` layers (n_shared_experts x moe_intermediate_size shared), a dense MLP
    elsewhere; lm_head never tied (``cls`` ties no weights), DeepSeek's routing numerics. ``core``: ``_core(f)``."""
    from .deepseek import numerics as deepseek_numerics

    hidden, n_layers, vocab = core
    dense = MLP(hidden, f.int("intermediate_size"), act=act) if len(moe_at) < n_layers else None
    moe = None
    if moe_at:
        n_exp, k = f.int("num_local_experts"), f.int("num_experts_per_tok")
        if k > n_exp:
            raise f.error("num_experts_per_tok", f"({k}) exceeds the number of experts ({n_exp})")
        size = f.int("moe_intermediate_size")
        moe = MoE(hidden, n_exp, k, size, shared_intermediate_size=f.int("n_shared_experts", 0, lo=0) * size, act=act)
    norms = pre_norms(lambda: Norm(hidden))
    layers = [Layer(mixers[t], moe if i in moe_at else dense, norms) for i, t in enumerate(types)]
    if f.raw("tie_word_embeddings") is True:
        f.derived("tie_word_embeddings", False, f"{cls} ties no weights: lm_head is its own")
    return ModelSpec(model_type=model_type, hidden_size=hidden, vocab_size=vocab, layers=tuple(layers),
                     tie_word_embeddings=False, final_norm=Norm(hidden), hidden_act=act, norm_eps=read_eps(f),
                     rope_scaling=rope_scaling, numerics=deepseek_numerics(f, 3, interleave_fixed=True))


# ---- Ling 3 (bailing_hybrid) ---------------------------------------------------------------------

#: BailingHybridConfig.attribute_map: the dataclass names (ours, with their class defaults) and the names
#: transformers saves and Ling's checkpoints use
BAILING_ALIASES = {"num_local_experts": ("num_experts",), "num_experts_per_tok": ("num_experts_per_token",),
                   "n_group": ("num_expert_group",), "n_shared_experts": ("num_shared_experts",),
                   "norm_topk_prob": ("moe_renormalize",)}


def build_bailing_hybrid(f: Fields, model_type: str) -> ModelSpec:
    """Ling 3 (``bailing_hybrid``, Ling-3.0-Flash): Kimi Linear's layer (input_layernorm → mixer →
    post_attention_layernorm → MLP), the mixer Kimi Delta Attention (``mixers/kda.py``: num_attention_heads
    heads of head_dim, short_conv_kernel_size taps) on ``linear_attention`` layers and DeepSeek V3's MLA with a
    per-head sigmoid output gate (``g_proj``, hidden -> heads) on ``full_attention`` layers (default: the last
    of every layer_group_size); a dense SwiGLU MLP on the first first_k_dense_replace layers (or by
    mlp_layer_types), elsewhere DeepSeek V3's MoE (sigmoid router with a choice-only correction bias, grouped,
    scaled; num_shared_experts shared experts). RoPE on interleaved pairs, always. lm_head is never tied
    (BailingHybridForCausalLM ties nothing). The MTP layers the checkpoint stores (num_nextn_predict_layers)
    are not built by transformers and not counted."""
    f.aliases = {**f.aliases, **BAILING_ALIASES}
    hidden, n_layers, vocab = _core(f)
    if _present(f, "layer_types"):
        types = per_layer_types(f, "layer_types", n_layers, QWEN3_NEXT_TYPES)
    else:
        group = f.int("layer_group_size", 6)
        types = ["full" if (i + 1) % group == 0 else "linear" for i in range(n_layers)]
        f.defaulted("layer_types", f"list[{n_layers}]", f"absent: the last layer of every {group} "
                                                        "(layer_group_size) full_attention, the others linear")
    moe_at = _kda_moe_at(f, n_layers, 2)
    act = _act(f, "silu")
    heads = f.int("num_attention_heads")
    mixers: dict[str, Any] = {}
    if "full" in types:
        rope = f.int("qk_rope_head_dim")
        theta, rotary, _ = read_rope(f, rope)
        if f.cfg.get("rope_theta") is None and not isinstance(f.raw("rope_parameters"), dict):
            theta = f.defaulted("rope_theta", 6_000_000.0, "absent: BailingHybridConfig's default")
        # A partial_rotary_factor (Ling-3.0-flash-VL's text_config carries 0.5, of its 128-wide KDA head_dim) is
        # read by neither reference: transformers' BailingHybridRotaryEmbedding rotates head_dim, which
        # BailingHybridConfig sets to qk_rope_head_dim, and vLLM's bailing_moe_v3._build_rope_parameters pops it
        # ("applying it here would shrink the rotary cache to half of the qk_rope_head_dim"). An explicit
        # rotary_dim other than qk_rope_head_dim is still refused.
        if rotary != rope and f.has("rotary_dim"):
            raise f.error("rotary_dim", f"gives {rotary} rotary dimensions; Ling 3's MLA rotates all "
                                        f"qk_rope_head_dim ({rope})")
        mixers["full"] = _kda_mla(f, hidden, heads, rope, rope_theta=theta, head_gate=True)
    if "linear" in types:
        # transformers' __post_init__ copies head_dim into linear_head_dim, then overwrites head_dim with
        # qk_rope_head_dim: a config it saved carries both, and linear_head_dim is the KDA head
        hd = f.int("linear_head_dim") if _present(f, "linear_head_dim") else f.int("head_dim", 128)
        mixers["linear"] = KimiDeltaAttention(hidden, heads, heads, hd, hd,
                                              f.int("short_conv_kernel_size", 4, hi=1 << 12))
    rope_scaling = read_rope(f, mixers["full"].qk_rope_head_dim)[2] if "full" in types else ()
    spec = _kda_hybrid_spec(f, model_type, "BailingHybridForCausalLM", (hidden, n_layers, vocab), mixers, types,
                            moe_at, act, rope_scaling=rope_scaling)
    # transformers 5.25: per-layer SwiGLU clamps of the MoE layers' routed and shared experts (Step-3.7's, after the
    # activation; 0 or absent: none; the dense MLPs never clamp). Nothing to count; verify refuses GLU.STEP.
    from .step3p5 import _limits

    def limits(*keys: str) -> list[float]:
        return _limits(f, next((k for k in keys if f.raw(k) is not None), keys[0]), n_layers, 0)

    routed = limits("expert_swiglu_limit_list", "swiglu_limits")
    shared = limits("share_expert_swiglu_limit_list", "swiglu_limits_shared")
    has_shared = any(isinstance(layer.ffn, MoE) and layer.ffn.shared_intermediate_size for layer in spec.layers)
    clamped = sorted(i for i in moe_at if routed[i] or (shared[i] and has_shared))
    if clamped:
        spec = replace(spec, numerics=replace(spec.numerics, glu=GLU.STEP), caveats=spec.caveats + (
            f"SwiGLU clamped on layers {clamped} (expert_swiglu_limit_list / share_expert_swiglu_limit_list)",))
    return spec


# ---- Kimi Linear (kimi_linear) -------------------------------------------------------------------

#: KimiLinearConfig.__post_init__: linear_attn_config's keys, over the dataclass fields they override
KIMI_LINEAR_ATTN = {"head_dim": "linear_head_dim", "num_heads": "linear_num_heads",
                    "short_conv_kernel_size": "linear_conv_kernel_dim"}


def _kimi_linear_attn_config(f: Fields) -> dict:
    lac = f.raw("linear_attn_config")
    if lac is None:
        return {}
    if not isinstance(lac, dict):
        raise f.error("linear_attn_config", f"must be an object, got {short(lac)}")
    return lac


def _kimi_linear_int(f: Fields, lac: dict, sub: str, hi: int) -> int:
    """linear_attn_config[sub] when the config has it (transformers' precedence), else the dataclass field."""
    key = KIMI_LINEAR_ATTN[sub]
    if sub not in lac:
        return f.int(key, hi=hi)
    iv = as_int(lac[sub])
    if iv is None or iv < 1 or iv > hi:
        raise f.error("linear_attn_config", f"entry '{sub}' must be an integer in [1, {hi}], got {short(lac[sub])}")
    return f.derived(key, iv, f"linear_attn_config.{sub}")


def _kimi_linear_types(f: Fields, lac: dict, n_layers: int) -> list[str]:
    """"linear" / "full" per layer: layer_types, else linear_attn_config's 1-indexed full_attn_layers and
    kda_layers (transformers sets the full layers, then the KDA ones), else every 4th layer from layer 4
    (index i > 0, i % 4 == 0) full."""
    if _present(f, "layer_types"):
        return per_layer_types(f, "layer_types", n_layers, QWEN3_NEXT_TYPES)
    if "full_attn_layers" in lac and "kda_layers" in lac:
        types: list[str | None] = [None] * n_layers
        for key, t in (("full_attn_layers", "full"), ("kda_layers", "linear")):
            idx = lac[key]
            if not isinstance(idx, list):
                raise f.error("linear_attn_config", f"entry '{key}' must be a list of layer numbers, got {short(idx)}")
            for v in idx:
                iv = as_int(v)
                if iv is None or not 1 <= iv <= n_layers:
                    raise f.error("linear_attn_config", f"entry '{key}' holds {short(v)}; layers are numbered 1 to "
                                                        f"{n_layers}")
                types[iv - 1] = t
        if None in types:
            raise f.error("linear_attn_config", f"names no type for layer {types.index(None) + 1} (neither in "
                                                "full_attn_layers nor in kda_layers)")
        f.derived("layer_types", f"list[{n_layers}]", "linear_attn_config's full_attn_layers and kda_layers")
        return [t for t in types if t is not None]
    f.defaulted("layer_types", f"list[{n_layers}]", "absent: every 4th layer (from index 4) full_attention, the "
                                                    "others linear")
    return ["full" if i and i % 4 == 0 else "linear" for i in range(n_layers)]


def build_kimi_linear(f: Fields, model_type: str) -> ModelSpec:
    """Kimi Linear (``kimi_linear``, Kimi-Linear-48B-A3B): input_layernorm → mixer → post_attention_layernorm →
    MLP. The mixer is Kimi Delta Attention with low-rank gates (``mixers/kda.py``, ``gate_rank`` = the head
    dim: linear_num_heads heads of linear_head_dim, linear_conv_kernel_dim taps, linear_attn_config's
    num_heads / head_dim / short_conv_kernel_size first) on ``linear_attention`` layers and DeepSeek V3's MLA
    without RoPE on ``full_attention`` layers (the qk_rope_head_dim key slice is kept, shared and cached, but
    never rotated: KimiLinearModel has no rotary embedding). A dense SwiGLU MLP on the first
    first_k_dense_replace layers (default 1, or by mlp_layer_types), elsewhere DeepSeek V3's MoE (sigmoid
    router with a choice-only correction bias, grouped, scaled; n_shared_experts shared experts). lm_head is
    never tied (KimiLinearForCausalLM ties nothing). Kimi K3's text_config (its additions set) is read by
    ``kimi_k3.build_text``."""
    from . import kimi_k3

    if kimi_k3.is_k3(f):
        return kimi_k3.build_text(f, model_type)
    (hidden, n_layers, vocab), lac, types = kimi_linear_plan(f)
    moe_at = _kda_moe_at(f, n_layers, 1)
    act = _act(f, "silu")
    return _kda_hybrid_spec(f, model_type, "KimiLinearForCausalLM", (hidden, n_layers, vocab),
                            kimi_linear_mixers(f, hidden, lac, types), types, moe_at, act)


def kimi_linear_plan(f: Fields) -> tuple[tuple[int, int, int], dict, list[str]]:
    """What Kimi Linear and Kimi K3's text model (``kimi_k3.build_text``) read first: ``BAILING_ALIASES``
    (KimiLinearConfig.attribute_map is Ling 3's) applied, (hidden, layers, vocab), ``linear_attn_config`` and the
    "full" / "linear" type of every layer."""
    f.aliases = {**f.aliases, **BAILING_ALIASES}
    core = _core(f)
    lac = _kimi_linear_attn_config(f)
    return core, lac, _kimi_linear_types(f, lac, core[1])


def kimi_linear_mixers(f: Fields, hidden: int, lac: dict, types: list[str]) -> dict[str, Any]:
    """Kimi Linear's mixers by layer type (those ``types`` uses): NoPE MLA ("full") and KDA with low-rank gates
    ("linear"; v at head_dim too, as transformers' KimiLinearDeltaAttention and SGLang's fused [q, k, v, g]
    projection: v_head_dim is MLA's)."""
    mixers: dict[str, Any] = {}
    if "full" in types:
        mixers["full"] = _kda_mla(f, hidden, f.int("num_attention_heads"), f.int("qk_rope_head_dim"), rope=False)
    if "linear" in types:
        heads = _kimi_linear_int(f, lac, "num_heads", 1 << 16)
        hd = _kimi_linear_int(f, lac, "head_dim", 1 << 16)
        kernel = _kimi_linear_int(f, lac, "short_conv_kernel_size", 1 << 12)
        mixers["linear"] = KimiDeltaAttention(hidden, heads, heads, hd, hd, kernel, gate_rank=hd)
    return mixers


# ---- Phi (phi-1, phi-1.5, phi-2) -----------------------------------------------------------------


def build_phi(f: Fields, model_type: str) -> ModelSpec:
    """One LayerNorm (with bias) feeds attention and MLP in parallel; q/k/v/dense, fc1/fc2 and the
    lm_head all have biases; partial rotary (transformers' default factor 0.5)."""
    hidden, n_layers, vocab = _core(f)
    qk_ln = f.bool("qk_layernorm", False)  # LayerNorm(hidden // heads) with a bias on q and on k
    attn = read_attention(f, hidden, bias=True, rotary_default=0.5, qk_norm_bias=qk_ln,
                          qk_norm_dim=hidden // f.int("num_attention_heads") if qk_ln else 0)
    act = _act(f, "gelu_new")
    ln = lambda: Norm(hidden, NormKind.LAYER, bias=True)  # noqa: E731
    layer = Layer(attn, MLP(hidden, f.int("intermediate_size"), gated=False, bias=True, act=act),
                  (PlacedNorm("input_layernorm", "pre_mixer", ln()),), parallel=True)
    spec = _spec(f, model_type, hidden, vocab, [layer] * n_layers, ln(), False, act, lm_head_bias=True,
                 rope_scaling=read_rope(f, attn.head_dim)[2])
    if spec.tie_word_embeddings:
        raise f.error("tie_word_embeddings", "is true, but Phi's lm_head has a bias that a tied head would drop "
                                             "(not supported)")
    return spec


# ---- Zamba2 --------------------------------------------------------------------------------------

ZAMBA2_TYPES = {"mamba": "mamba", "linear_attention": "mamba", "hybrid": "hybrid"}

#: transformers' Zamba2Config default layout (54 layers), used when the config names none
ZAMBA2_DEFAULT_TYPES = (["mamba"] + (["mamba"] * 5 + ["hybrid"]) * 7 + ["mamba"] * 4 + ["hybrid"] + ["mamba"] * 3
                        + ["hybrid"] + ["mamba"] * 2)


#: transformers' names -> ours (the Mamba is ``mixer``, the final norm ``model.norm``; the shared block's
#: ``feed_forward`` is ``mlp`` by the rename every family shares)
ZAMBA2_LAYOUT = CheckpointLayout(renames=(("model.final_layernorm.", "model.norm."),),
                                 modules=((".mamba_decoder.mamba.", ".mixer."), (".mamba.", ".mixer.")))


def build_zamba2(f: Fields, model_type: str) -> ModelSpec:
    """Zamba2: Mamba-2 layers (input_layernorm → Mamba-2), and hybrid layers that first run one of
    ``num_mem_blocks`` shared transformer blocks (taken in turn) on the hidden state concatenated
    with the token embedding, with per-use adapters, then a per-layer ``linear``, then their own
    Mamba-2 block (``mixers/zamba.py``). The attention head_dim is ``attention_head_dim`` (alias
    ``head_dim``), else 2·hidden / heads. What transformers computes rather than reads: the Mamba head_dim
    (int(expand·hidden) / n_mamba_heads), the conv bias (always on: ``use_conv_bias`` is not read),
    the gate_up adapters (always built: ``use_shared_mlp_adapter`` is not read)."""
    hidden, _, vocab = _core(f)
    key = _pick(f, "layers_block_type", "layer_types")
    if _present(f, key):
        types = per_layer_types(f, key, f.int("num_hidden_layers", hi=MAX_LAYERS), ZAMBA2_TYPES)
    else:
        types = list(ZAMBA2_DEFAULT_TYPES)
        if _present(f, "num_hidden_layers") and f.int("num_hidden_layers", hi=MAX_LAYERS) != len(types):
            raise f.error("num_hidden_layers", f"is {f.int('num_hidden_layers')} but there is no layers_block_type: "
                                               f"transformers builds its default {len(types)}-layer layout")
        f.defaulted("layers_block_type", f"list[{len(types)}]", "absent: transformers' default Zamba2 layout")
    bias = f.bool("add_bias_linear", False)
    d_inner = _expand_inner(f, "mamba_expand", hidden)
    m_heads = f.int("n_mamba_heads")
    if d_inner % m_heads:
        raise f.error("n_mamba_heads", f"({m_heads}) must divide the Mamba inner size {d_inner} "
                                       "(mamba_expand x hidden_size)")
    m_head_dim = f.derived("mamba_headdim", d_inner // m_heads, "int(mamba_expand x hidden_size) / n_mamba_heads")
    groups = f.int("mamba_ngroups", 1)
    if m_heads % groups:
        raise f.error("mamba_ngroups", f"({groups}) must divide n_mamba_heads ({m_heads})")
    mamba = Mamba(hidden_size=hidden, version=2, intermediate_size=d_inner, state_size=f.int("mamba_d_state"),
                  conv_kernel=f.int("mamba_d_conv", hi=1 << 12), num_heads=m_heads, head_dim=m_head_dim,
                  n_groups=groups, conv_bias=True, proj_bias=bias, gated_norm=True, norm_groups=groups,
                  chunk_size=f.int("chunk_size", 256))
    act = _act(f, "gelu")
    norm = Norm(hidden)
    mamba_layer = Layer(mamba, None, (PlacedNorm("input_layernorm", "pre_mixer", norm),))
    hybrid_at = [i for i, t in enumerate(types) if t == "hybrid"]
    layers: list[Layer] = [mamba_layer] * len(types)
    rope_items: tuple = ()
    if hybrid_at:
        heads = f.int("num_attention_heads")
        kv = f.int("num_key_value_heads", heads, note="absent: equal to num_attention_heads (no GQA)")
        _check_heads(f, heads, kv)
        # Zamba2Config: attention_head_dim (attribute_map: head_dim) when the config gives it, else
        # 2 x hidden / heads (__post_init__); Zamba2Attention sizes q/k/v/o, the cache and the rotary with it
        named = next((k for k in ("attention_head_dim", "head_dim") if _present(f, k)), None)
        hd = f.int(named) if named else f.derived(
            "attention_head_dim", 2 * hidden // heads, "absent: 2 x hidden_size / num_attention_heads "
                                                       "(Zamba2Config; the attention reads 2 x hidden_size)")
        theta, rotary = 10000.0, 0
        if f.bool("use_mem_rope", False):
            theta, rotary, rope_items = read_rope(f, hd)
        attn = Attention(hidden_size=2 * hidden, num_attention_heads=heads, num_key_value_heads=kv, head_dim=hd,
                         v_head_dim=hd, rotary_dim=rotary, rope_theta=theta)
        adapters = f.bool("use_shared_attention_adapter", False)
        if adapters and (kv != heads or heads * hd != 2 * hidden):
            raise f.error("use_shared_attention_adapter", "is true, but the q/k/v adapters write 2 x hidden_size "
                                                          "features and the projections do not (GQA or a head count "
                                                          "that does not divide 2 x hidden_size): transformers "
                                                          "cannot run it")
        inter = (f.int("intermediate_size") if _present(f, "intermediate_size")
                 else f.derived("intermediate_size", 4 * hidden, "absent: 4 x hidden_size"))
        mlp = MLP(hidden, inter, bias=bias, fused_gate_up=True, act=act)
        blocks = f.int("num_mem_blocks", 1)
        rank = f.int("adapter_rank", 128)
        if not read_tie(f, True) and len(hybrid_at) > blocks:
            # transformers 5 ties the shared blocks through _tied_weights_keys, which it skips unless
            # tie_word_embeddings: every hybrid layer would build a block (and adapters) of its own
            raise f.error("tie_word_embeddings", "is false: transformers then ties none of Zamba2's shared transformer "
                                                 "blocks (each hybrid layer builds its own copy, which a checkpoint "
                                                 "does not hold): not supported")
        for k, i in enumerate(hybrid_at):
            mixer = SharedBlockMamba(hidden, attn, mlp, mamba, rank, adapters, owner=k < blocks, use=k,
                                     block_layer=hybrid_at[k % blocks])
            layers[i] = Layer(mixer, None)
    spec = _spec(f, model_type, hidden, vocab, layers, Norm(hidden), True, act, rope_scaling=rope_items,
                 checkpoint=ZAMBA2_LAYOUT)
    if hybrid_at:  # scores scaled by (head_dim / 2)^-0.5
        spec = replace(spec, query_pre_attn_scalar=hd / 2)
    return spec


# ---- Zamba ---------------------------------------------------------------------------------------


def build_zamba(f: Fields, model_type: str) -> ModelSpec:
    """Zamba (v1): Zamba2's layout (``mixers/zamba.py``) with ONE shared transformer block
    (``shared_transf``, used by every hybrid layer), no adapters, a gated MLP with separate gate and up
    projections, NoPE attention, and Mamba-1 layers whose x_proj / dt_proj are per head
    (``n_mamba_heads``; ``Mamba.head_stacked``). Default layout: two Mamba layers, a hybrid one, then a
    hybrid layer wherever i % attn_layer_period == attn_layer_offset over the remaining layers."""
    hidden, n_layers, vocab = _core(f)
    key = _pick(f, "layers_block_type", "layer_types")
    if _present(f, key):
        types = per_layer_types(f, key, n_layers, ZAMBA2_TYPES)
    else:
        period, offset = f.int("attn_layer_period"), f.int("attn_layer_offset", lo=0)
        types = ["mamba", "mamba", "hybrid"] + ["hybrid" if i % period == offset else "mamba"
                                                for i in range(n_layers - 3)]
        f.defaulted("layers_block_type", f"list[{len(types)}]", "absent: two Mamba layers, a hybrid one, then "
                                                                "attn_layer_period / attn_layer_offset")
    d_inner = f.derived("mamba_intermediate_size", f.int("mamba_expand", 2) * hidden, "mamba_expand x hidden_size")
    m_heads = f.int("n_mamba_heads")
    if d_inner % m_heads:
        raise f.error("n_mamba_heads", f"({m_heads}) must divide the Mamba inner size {d_inner} "
                                       "(mamba_expand x hidden_size)")
    mamba = Mamba(hidden_size=hidden, version=1, intermediate_size=d_inner, state_size=f.int("mamba_d_state"),
                  conv_kernel=f.int("mamba_d_conv", hi=1 << 12), num_heads=m_heads,
                  dt_rank=_dt_rank(f, "mamba_dt_rank", hidden), conv_bias=f.bool("mamba_conv_bias", True),
                  proj_bias=f.bool("mamba_proj_bias", False), gated_norm=False, head_stacked=True)
    act = _act(f, "gelu")
    norm = Norm(hidden)
    layers: list[Layer] = [Layer(mamba, None, (PlacedNorm("input_layernorm", "pre_mixer", norm),))] * len(types)
    hybrid_at = [i for i, t in enumerate(types) if t == "hybrid"]
    spec_kw: dict[str, Any] = {}
    if hybrid_at:
        if _present(f, "attention_hidden_size") and f.int("attention_hidden_size") != 2 * hidden:
            raise f.error("attention_hidden_size", f"({f.int('attention_hidden_size')}) is not 2 x hidden_size: "
                                                   "the shared block reads the 2 x hidden_size concatenation")
        heads = f.int("num_attention_heads")
        kv = f.int("num_key_value_heads", heads)
        _check_heads(f, heads, kv)
        hd = (f.int("attention_head_dim") if _present(f, "attention_head_dim")
              else f.derived("attention_head_dim", 2 * hidden // heads,
                             "absent: 2 x hidden_size / num_attention_heads"))
        attn = Attention(hidden_size=2 * hidden, num_attention_heads=heads, num_key_value_heads=kv, head_dim=hd,
                         v_head_dim=hd)  # NoPE
        mlp = MLP(hidden, f.int("intermediate_size"), act=act)
        if not read_tie(f, True) and len(hybrid_at) > 1:
            raise f.error("tie_word_embeddings", "is false: transformers then ties none of Zamba's shared transformer "
                                                 "blocks (each hybrid layer builds its own copy, which a checkpoint "
                                                 "does not hold): not supported")
        for k, i in enumerate(hybrid_at):
            layers[i] = Layer(SharedBlockMamba(hidden, attn, mlp, mamba, 0, False, owner=k == 0, mlp_adapter=False,
                                               block_module="shared_transf", use=k, block_layer=hybrid_at[0]), None)
        spec_kw["query_pre_attn_scalar"] = hd / 2  # scores scaled by (head_dim / 2)^-0.5
    spec = _spec(f, model_type, hidden, vocab, layers, Norm(hidden), True, act, checkpoint=ZAMBA2_LAYOUT)
    return replace(spec, **spec_kw)


# ---- MiniMax (MiniMax-Text-01, MiniMax-M1) -------------------------------------------------------

MINIMAX_TYPES = {"linear_attention": "linear", "full_attention": "full"}


def _minimax_types(f: Fields, n_layers: int) -> list[str]:
    """"linear" / "full" per layer: ``layer_types``; else MiniMax's own ``attn_type_list`` (0: lightning,
    1: softmax), which its original configs carry; else transformers' default (full at even indices)."""
    if _present(f, "layer_types"):
        return per_layer_types(f, "layer_types", n_layers, MINIMAX_TYPES)
    if _present(f, "attn_type_list"):
        v = f.list("attn_type_list")
        if len(v) != n_layers:
            raise f.error("attn_type_list", f"has {len(v)} entries but num_hidden_layers is {n_layers}")
        for i, t in enumerate(v):
            if t not in (0, 1) or isinstance(t, bool):
                raise f.error("attn_type_list", f"entry {i} is {short(t)}; expected 0 (lightning) or 1 (softmax)")
        f.derived("layer_types", f"list[{n_layers}]", "absent: from attn_type_list (0: linear_attention, "
                                                      "1: full_attention)")
        return ["full" if t == 1 else "linear" for t in v]
    f.defaulted("layer_types", f"list[{n_layers}]", "absent: transformers' default, full_attention at even "
                                                    "layers, linear_attention at odd ones")
    return ["full" if i % 2 == 0 else "linear" for i in range(n_layers)]


def build_minimax(f: Fields, model_type: str) -> ModelSpec:
    """MiniMax-Text-01 / MiniMax-M1 (``minimax``): lightning-attention layers (``mixers/lightning.py``)
    and softmax-attention layers (GQA, RoPE over the whole head_dim: transformers' MiniMax rotary reads
    no partial factor), a Mixtral-style MoE (softmax router, top-k renormalised, fused gate_up experts)
    in every layer. The lightning layers use ``num_attention_heads`` heads of ``head_dim``. The
    alpha / beta residual factors scale activations only."""
    hidden, n_layers, vocab = _core(f)
    types = _minimax_types(f, n_layers)
    act = _act(f, "silu")
    heads = f.int("num_attention_heads")
    hd = read_head_dim(f, hidden, heads)
    attn = (read_attention(f, hidden, bias=False, qk_norm_dim=0, rotary_fixed=1.0, head_dim=hd)
            if "full" in types else None)
    lightning = LightningAttention(hidden, heads, hd, f.int("block_size", 256)) if "linear" in types else None
    n_exp = f.int("num_local_experts")
    k = f.int("num_experts_per_tok")
    if k > n_exp:
        raise f.error("num_experts_per_tok", f"({k}) exceeds num_local_experts ({n_exp})")
    moe = MoE(hidden, n_exp, k, f.int("intermediate_size"), act=act)
    norms = pre_norms(lambda: Norm(hidden))
    layers = [Layer(attn if t == "full" else lightning, moe, norms) for t in types]
    return _spec(f, model_type, hidden, vocab, layers, Norm(hidden), False, act,
                 rope_scaling=read_rope(f, hd)[2] if attn is not None else (),
                 numerics=Numerics(router=RouterKind.SOFTMAX, norm_topk_prob=True, residual_after_norm=True))


# ---- OLMo Hybrid ---------------------------------------------------------------------------------


def build_olmo_hybrid(f: Fields, model_type: str) -> ModelSpec:
    """OLMo Hybrid (``olmo_hybrid``): Gated DeltaNet layers in Llama's pre-norm layout (input_layernorm →
    ``linear_attn`` → post_attention_layernorm → MLP) with q/k/v/a/b/g projections apart
    (``GatedDeltaNet.separate_proj``), and OLMo 3 attention layers in its post-norm layout (attention →
    post_attention_layernorm, MLP → post_feedforward_layernorm) with q/k RMSNorms over all heads; a SwiGLU
    MLP everywhere. Default layout: every 4th layer full attention (the last one when there is none).
    Linear-attention widths default as transformers sets them: heads = num_attention_heads, key head dim
    int(0.75·hidden / key heads), value head dim twice that."""
    hidden, n_layers, vocab = _core(f)
    if _present(f, "layer_types"):
        types = per_layer_types(f, "layer_types", n_layers, QWEN3_NEXT_TYPES)
    else:
        types = ["full" if i % 4 == 3 else "linear" for i in range(n_layers)]
        if "full" not in types:
            types[-1] = "full"
        f.defaulted("layer_types", f"list[{n_layers}]", "absent: every 4th layer full_attention (the last when "
                                                        "none), the others linear_attention")
    if "linear" not in types or "full" not in types:
        raise f.error("layer_types", "must hold both linear_attention and full_attention layers (transformers' "
                                     "OlmoHybridConfig refuses anything else)")
    act = _act(f, "silu")
    heads = f.int("num_attention_heads")
    attn = read_attention(f, hidden, bias=f.bool("attention_bias", False), qk_norm_dim=0)
    attn = replace(attn, q_norm_dim=heads * attn.head_dim, k_norm_dim=attn.num_key_value_heads * attn.head_dim)
    k_heads = (f.int("linear_num_key_heads") if _present(f, "linear_num_key_heads")
               else f.derived("linear_num_key_heads", heads, "absent: num_attention_heads"))
    v_heads = (f.int("linear_num_value_heads") if _present(f, "linear_num_value_heads")
               else f.derived("linear_num_value_heads", heads, "absent: num_attention_heads"))
    if v_heads % k_heads:
        raise f.error("linear_num_value_heads", f"({v_heads}) must be a multiple of linear_num_key_heads ({k_heads})")
    dk = (f.int("linear_key_head_dim") if _present(f, "linear_key_head_dim")
          else f.derived("linear_key_head_dim", int(0.75 * hidden / k_heads), "absent: int(0.75 x hidden_size / "
                                                                              "linear_num_key_heads)"))
    dv = (f.int("linear_value_head_dim") if _present(f, "linear_value_head_dim")
          else f.derived("linear_value_head_dim", 2 * dk, "absent: 2 x linear_key_head_dim"))
    gdn = GatedDeltaNet(hidden, k_heads, v_heads, dk, dv, f.int("linear_conv_kernel_dim", 4, hi=1 << 12),
                        separate_proj=True)
    mlp = MLP(hidden, f.int("intermediate_size"), act=act)
    post = (PlacedNorm("post_attention_layernorm", "post_mixer", Norm(hidden)),
            PlacedNorm("post_feedforward_layernorm", "post_ffn", Norm(hidden)))
    pre = pre_norms(lambda: Norm(hidden))
    layers = [Layer(attn, mlp, post) if t == "full" else Layer(gdn, mlp, pre) for t in types]
    return _spec(f, model_type, hidden, vocab, layers, Norm(hidden), False, act,
                 rope_scaling=read_rope(f, attn.head_dim)[2],
                 checkpoint=CheckpointLayout(modules=((".linear_attn.", ".mixer."),)))
