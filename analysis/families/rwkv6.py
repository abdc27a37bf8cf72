"""RWKV-6 "Finch" (model_type ``rwkv6``, the RWKV hub repos' remote code ``configuration_rwkv6.py`` /
``modeling_rwkv6.py``: RWKV/v6-Finch-1B6-HF, -3B-HF, -7B-HF, -14B-HF; not in transformers). Blocks as RWKV-4's
(``ln1`` -> time-mix -> residual, ``ln2`` -> channel-mix -> residual; the first block's ``pre_ln`` on the
embedding; ``ln_out``, torch's default eps 1e-5; ``head`` untied unless ``tie_word_embeddings``), with RWKV-6's
time-mix (``analysis.mixers.rwkv6``).

The remote ``Rwkv6Config`` defaults: vocab_size 65536, hidden_size 768, num_hidden_layers 24,
attention_hidden_size null (= hidden_size), head_size 64, head_size_divisor 8 (ln_x's eps only), layer_norm_epsilon
1e-5, rescale_every 6 (numerics only, as RWKV-4's), tie_word_embeddings false. Its ``intermediate_size`` is always
set to None (whatever config.json says), so the channel-mix is int(hidden x 3.5) // 32 x 32 wide. The LoRA ranks
are not config fields: ``Rwkv6SelfAttention`` takes 64 / 128 when hidden_size is 4096 (7B, 14B), else 32 / 64.

flash-linear-attention's own ``rwkv6`` format (fla-hub: ``expand_k`` / ``expand_v`` / ``num_heads`` /
``proj_low_rank_dim`` / ``gate_low_rank_dim``, a different layout with LerpLinear / DDLerpLinear projections and a
half-width key) shares the model_type and is refused by name here.
"""

from __future__ import annotations

from ..errors import UnsupportedModelError
from ..fields import MAX_LAYERS, Fields
from ..mixers.rwkv6 import RWKV5, RWKV6
from ..spec import CheckpointLayout, Layer, ModelSpec, Norm, NormKind, PlacedNorm

#: the checkpoint's names -> ours (as RWKV-4's)
LAYOUT = CheckpointLayout(
    renames=(("rwkv.embeddings.", "model.embed_tokens."), ("rwkv.blocks.0.pre_ln.", "model.embed_layernorm."),
             ("rwkv.blocks.", "model.layers."), ("rwkv.ln_out.", "model.norm."), ("head.", "lm_head.")),
    modules=((".attention.", ".mixer."), (".feed_forward.", ".mixer.mlp.")))

#: fields only fla's rwkv6 format has
FLA_FIELDS = ("expand_k", "expand_v", "proj_low_rank_dim", "gate_low_rank_dim", "attn_mode", "hidden_ratio")


def build(f: Fields, model_type: str) -> ModelSpec:
    return _build(f, model_type, eagle=False)


def build_rwkv5(f: Fields, model_type: str) -> ModelSpec:
    """RWKV-5 "Eagle" (model_type ``rwkv5``, RWKV/rwkv-5-world-1b5 / -3b / -7b remote code): RWKV-6's layout
    without the low-rank maps (``analysis.mixers.rwkv6.RWKV5``). The remote ``Rwkv5Config`` has the same defaults
    and also drops intermediate_size; the head size is ``head_size`` (hub configs; 64), which some revisions of the
    code read from ``num_attention_heads`` instead (the hub configs carry both, equal)."""
    return _build(f, model_type, eagle=True)


def _build(f: Fields, model_type: str, eagle: bool) -> ModelSpec:
    fla = [k for k in FLA_FIELDS if k in f.cfg]
    if fla and "head_size" not in f.cfg and not eagle:
        raise UnsupportedModelError(
            f"{f.where}: model_type 'rwkv6' in flash-linear-attention's format (fields {', '.join(fla)}) is not "
            "supported yet: its RWKV6Attention (a key of hidden_size x expand_k, LerpLinear / DDLerpLinear "
            "projections with a low-rank decay, a fused x_proj) is not the RWKV hub format (RWKV/v6-Finch-*-HF, "
            "head_size / attention_hidden_size), which is modelled",
            "a generic Llama-style analysis would miscount it, so none is given")
    hidden = f.int("hidden_size", 768, note="the remote config default")
    n_layers = f.int("num_hidden_layers", 24, hi=MAX_LAYERS, note="the remote config default")
    vocab = f.int("vocab_size", 65536, hi=1 << 26, note="the remote config default")
    att = f.int("attention_hidden_size", lambda: hidden, note="hidden_size (the remote config default)")
    if eagle and f.cfg.get("head_size") is None and f.cfg.get("num_attention_heads") is not None:
        head = f.int("num_attention_heads", note="the head size (head_size absent), as the remote Rwkv5 code reads it")
    else:
        head = f.int("head_size", 64, note="the remote config default")
    if eagle and f.cfg.get("num_attention_heads") is not None and f.cfg["num_attention_heads"] != head:
        raise f.error("num_attention_heads", f"({f.cfg['num_attention_heads']}) differs from head_size ({head}): "
                                             "revisions of the remote RWKV-5 code read either as the head size")
    if att % head:
        raise f.error("head_size", f"({head}) does not divide attention_hidden_size ({att})")
    if att != hidden:
        raise f.error("attention_hidden_size", f"({att}) differs from hidden_size ({hidden}): the remote code's ln_x "
                                               "GroupNorm is sized hidden_size and cannot run such a model")
    f.int("head_size_divisor", 8, note="the remote config default (ln_x's eps only)")
    f.int("rescale_every", 6, lo=-(1 << 31), hi=1 << 31, note="the remote config default")  # (numerics only)
    eps = f.float("layer_norm_epsilon", 1e-5, note="the remote config default")
    tied = f.bool("tie_word_embeddings", False, note="the remote config default")
    inter = int((hidden * 3.5) // 32 * 32)
    caveats: list[str] = []
    given = f.cfg.get("intermediate_size")
    if given is not None and given != inter:
        caveats.append(f"intermediate_size {given} is ignored: the remote config always sets it to None, so "
                       f"the channel-mix is int(hidden_size x 3.5) // 32 x 32 = {inter} wide")
    f.derived("intermediate_size", inter, "int(hidden_size x 3.5) // 32 x 32 (the remote config drops the field)")
    if eagle:
        mixer: RWKV6 = RWKV5(hidden, att, head, inter, 0, 0)
    else:
        mix, decay = (64, 128) if hidden == 4096 else (32, 64)
        f.derived("time_mix_extra_dim", mix, "64 when hidden_size is 4096, else 32 (Rwkv6SelfAttention)")
        f.derived("time_decay_extra_dim", decay, "128 when hidden_size is 4096, else 64 (Rwkv6SelfAttention)")
        mixer = RWKV6(hidden, att, head, inter, mix, decay)
    ln = Norm(hidden, NormKind.LAYER, bias=True)
    norms = (PlacedNorm("ln1", "pre_mixer", ln), PlacedNorm("ln2", "pre_ffn", ln))
    layer = Layer(mixer, None, norms)
    return ModelSpec(model_type=model_type, hidden_size=hidden, vocab_size=vocab, layers=(layer,) * n_layers,
                     tie_word_embeddings=tied, final_norm=ln, embedding_norm=ln, hidden_act="relu2",
                     norm_eps=eps, checkpoint=LAYOUT, caveats=tuple(caveats))
