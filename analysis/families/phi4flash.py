"""Phi-4-mini-flash-reasoning (``phi4flash``; remote code, no transformers class): SambaY, a decoder-hybrid-decoder.

Counted from the hub's modeling_phi4flash.py / configuration_phi4flash.py (microsoft/Phi-4-mini-flash-reasoning)
and vLLM's model_executor/models/phi4flash.py. Every layer (``SambaYDecoderLayer``) is input_layernorm → mixer →
residual, post_attention_layernorm → MLP → residual; the norms are LayerNorms with a bias (``PHI_NORM_CLASS``), the
MLP a bias-free SwiGLU whose ``fc1`` holds [gate | up] (2 · intermediate_size rows) and ``fc2`` the down projection;
no RoPE anywhere (the Mamba layers carry position). With L = num_hidden_layers (a multiple of 4, asserted by the
modeling code) and ``mb_per_layer`` 2, layer i is:

- **self-decoder** (i < L/2): Mamba-1 on even layers (``Phi3Mamba``: in_proj to [x | z], a biased depthwise conv
  of ``mamba_d_conv``, x_proj to [dt | B | C], dt_proj with bias, A_log and D; d_inner = ``mamba_expand`` ·
  hidden, dt_rank ceil(hidden / 16): the modeling code passes neither ``mamba_dt_rank`` nor ``mamba_conv_bias`` /
  ``mamba_proj_bias`` to the layer, so the conv is always biased and the projections never are), differential
  attention on odd layers over a window of ``sliding_window`` keys (``analysis.mixers.sambay``: a fused, biased
  ``Wqkv``, a biased ``out_proj``, four λ vectors of head_dim and a learned ``subln`` over 2 · head_dim), each
  with its own cache;
- **layer L/2**: a Mamba layer whose scan output (before its gate) is the *memory* the GMUs read;
- **layer L/2 + 1**: full differential attention (no window), whose K/V cache is the only growing one that the
  cross-decoder reads (YOCO);
- **cross-decoder** (i >= L/2 + 2): gated memory units on even layers (``in_proj`` and ``out_proj`` only, no
  state) and cross-attention on odd layers: a biased query projection (``Wqkv`` with H · head_dim rows) over layer
  L/2 + 1's K/V, no K/V projections and no cache of their own (vLLM's ``kv_sharing_target_layer_name``).

Caches, as SambaYCache and vLLM keep them: K and V of the self-decoder's attention layers (the sliding ones capped
at the window) and of layer L/2 + 1; per sequence the conv window (d_inner × (d_conv - 1), vLLM's) and the SSM
state (d_inner × d_state) of the L/4 + 1 Mamba layers. Phi-4-mini-flash-reasoning: 3,852,562,944 parameters (the
checkpoint's total_size 7,706,608,640 bytes is these in bf16 plus A_log and the λ vectors, which it stores in
float32: tests/test_phi4flash.py). ``verify`` refuses it (the runtime runs no Mamba layers).
"""

from __future__ import annotations

import math

from ..fields import MAX_LAYERS, Fields, short
from ..mixers import Mamba
from ..mixers.sambay import GatedMemoryUnit, SambaYDiffAttention
from ..spec import MLP, CheckpointLayout, Layer, ModelSpec, Norm, NormKind
from .common import pre_norms, read_tie
from .hybrid import _expand_inner

#: Phi4FlashConfig's defaults (the hub's configuration_phi4flash.py)
DEFAULTS = dict(vocab_size=51200, hidden_size=2560, intermediate_size=9216, num_hidden_layers=32,
                num_attention_heads=40, num_key_value_heads=4, hidden_act="silu", layer_norm_eps=1e-5,
                tie_word_embeddings=True, sliding_window=2047, mb_per_layer=2, mamba_d_state=16, mamba_d_conv=4)


def _layout(kinds: list[str]) -> CheckpointLayout:
    """The checkpoint names -> ours: every layer's mixer is ``attn`` there; here ``mixer`` (Mamba, GMU) or
    ``self_attn`` (attention, whose fused ``Wqkv`` is our qkv_proj, or q_proj on a cross-attention layer)."""
    modules: list[tuple[str, str]] = []
    for i, kind in enumerate(kinds):
        if kind == "cross":
            modules.append((f".layers.{i}.attn.Wqkv.", f".layers.{i}.self_attn.q_proj."))
        modules.append((f".layers.{i}.attn.", f".layers.{i}.{'mixer' if kind in ('mamba', 'gmu') else 'self_attn'}."))
    modules += [(".self_attn.Wqkv.", ".self_attn.qkv_proj."), (".self_attn.out_proj.", ".self_attn.o_proj."),
                (".self_attn.inner_cross_attn.", ".self_attn."), (".mlp.fc1.", ".mlp.gate_up_proj."),
                (".mlp.fc2.", ".mlp.down_proj.")]
    return CheckpointLayout(renames=(("model.final_layernorm.", "model.norm."),), modules=tuple(modules))


def layer_kinds(n_layers: int) -> list[str]:
    """mamba / attention / cross / gmu per layer, as SambaYDecoderLayer picks them with mb_per_layer 2."""
    half = n_layers // 2
    return [("gmu" if i >= half + 2 else "mamba") if i % 2 == 0 else ("cross" if i >= half + 2 else "attention")
            for i in range(n_layers)]


def _window(f: Fields, n_layers: int) -> int | None:
    """The self-decoder's window: ``sliding_window`` (an int, or null: none), or the per-layer list newer
    configuration files keep (SambaYCache sizes every sliding cache by its entry 1, so the entries used must agree)."""
    raw = f.raw("sliding_window", DEFAULTS["sliding_window"])
    if not isinstance(raw, list):
        return f.int("sliding_window", DEFAULTS["sliding_window"], hi=1 << 30) if raw is not None else None
    if len(raw) != n_layers:
        raise f.error("sliding_window", f"has {len(raw)} entries but the model has {n_layers} layers")
    entries = [raw[i] for i in range(1, n_layers // 2, 2)]
    for w in entries:
        if w is not None and (isinstance(w, bool) or not isinstance(w, int) or w < 1):
            raise f.error("sliding_window", f"entries must be positive integers or null, got {short(w)}")
    if len(set(entries)) > 1:
        raise f.error("sliding_window", f"gives the self-decoder's attention layers different windows "
                      f"({sorted(set(entries), key=str)}): SambaYCache sizes every sliding cache by entry 1")
    w = entries[0] if entries else None
    return f.derived("sliding_window", w, "entry 1 of the per-layer list (the self-decoder's attention layers)")


def build(f: Fields, model_type: str) -> ModelSpec:
    hidden = f.int("hidden_size", DEFAULTS["hidden_size"])
    n_layers = f.int("num_hidden_layers", DEFAULTS["num_hidden_layers"], hi=MAX_LAYERS)
    vocab = f.int("vocab_size", DEFAULTS["vocab_size"], hi=1 << 26)
    heads = f.int("num_attention_heads", DEFAULTS["num_attention_heads"])
    if "num_key_value_heads" in f.cfg:  # Phi4FlashConfig: null means num_attention_heads, absent its default 4
        kv = f.int("num_key_value_heads", lambda: heads, note="null: equal to num_attention_heads (Phi4FlashConfig)")
    else:
        kv = f.int("num_key_value_heads", DEFAULTS["num_key_value_heads"], note="absent: Phi4FlashConfig's default 4")
    inter = f.int("intermediate_size", DEFAULTS["intermediate_size"])
    if n_layers % 4:
        raise f.error("num_hidden_layers", f"({n_layers}) is not a multiple of 4: SambaY's decoder layers assert it "
                      "(a self-decoder and a cross-decoder of L/2 layers each)")
    mb = f.int("mb_per_layer", DEFAULTS["mb_per_layer"], lo=0, hi=MAX_LAYERS)
    if mb != 2:
        raise f.error("mb_per_layer", f"is {mb}: SambaY's cache (SambaYCache) and vLLM's model hard-code Mamba on even "
                      "and attention on odd layers (mb_per_layer 2); other layouts are not supported")
    if hidden % heads:
        raise f.error("num_attention_heads", f"({heads}) must divide hidden_size ({hidden}): SambaY's head_dim is "
                      "hidden_size / num_attention_heads")
    if kv > heads or heads % kv:
        raise f.error("num_key_value_heads", f"({kv}) must divide num_attention_heads ({heads})")
    if heads % 2 or kv % 2:
        raise f.error("num_key_value_heads" if heads % 2 == 0 else "num_attention_heads",
                      f"({kv if heads % 2 == 0 else heads}) is odd: differential attention pairs heads 2j and 2j + 1 "
                      "(vLLM asserts both head counts even)")
    hd = f.derived("head_dim", hidden // heads, "hidden_size // num_attention_heads (SambaYAttention)")
    window = _window(f, n_layers)

    d_inner = _expand_inner(f, "mamba_expand", hidden)
    state = f.int("mamba_d_state", DEFAULTS["mamba_d_state"])
    conv = f.int("mamba_d_conv", DEFAULTS["mamba_d_conv"], hi=1 << 12)
    dt_rank = f.derived("mamba_dt_rank", math.ceil(hidden / 16),
                        "ceil(hidden_size / 16): Phi3Mamba's 'auto' (the layer is not given the config's value)")
    mamba = Mamba(hidden_size=hidden, version=1, intermediate_size=d_inner, state_size=state, conv_kernel=conv,
                  dt_rank=dt_rank, conv_bias=True, proj_bias=False, gated_norm=False)
    attn = SambaYDiffAttention(hidden_size=hidden, num_attention_heads=heads, num_key_value_heads=kv, head_dim=hd,
                               v_head_dim=hd, q_bias=True, k_bias=True, v_bias=True, o_bias=True, fused_qkv=True)
    mixers = {"mamba": mamba, "gmu": GatedMemoryUnit(hidden, d_inner),
              "attention": attn.with_window(window) if window else attn,
              "cross": SambaYDiffAttention(hidden_size=hidden, num_attention_heads=heads, num_key_value_heads=kv,
                                           head_dim=hd, v_head_dim=hd, q_bias=True, o_bias=True, kv_shared=True)}
    kinds = layer_kinds(n_layers)
    half = n_layers // 2

    act = f.str("hidden_act", DEFAULTS["hidden_act"])
    mlp = MLP(hidden, inter, fused_gate_up=True, act=act)
    norm = lambda: Norm(hidden, NormKind.LAYER, bias=True)  # noqa: E731
    # layer L/2 + 1: the attention the cross-decoder reads, with no window (its config copy has sliding_window None)
    layers = tuple(Layer(attn if i == half + 1 else mixers[k], mlp, pre_norms(norm)) for i, k in enumerate(kinds))
    return ModelSpec(model_type=model_type, hidden_size=hidden, vocab_size=vocab, layers=layers,
                     tie_word_embeddings=read_tie(f, DEFAULTS["tie_word_embeddings"]), final_norm=norm(),
                     hidden_act=act, norm_eps=f.float("layer_norm_eps", DEFAULTS["layer_norm_eps"]),
                     checkpoint=_layout(kinds),
                     caveats=(f"SambaY: layers {half + 2}-{n_layers - 1} hold no K/V or state of their own "
                              f"(cross-attention reads layer {half + 1}'s cache, the gated memory units layer {half}'s "
                              "scan output); transformers runs every layer on every prompt token, as the prefill here "
                              "counts (vLLM V0 runs those layers on the last one only); vLLM refuses pipeline "
                              "parallelism for this model",))
