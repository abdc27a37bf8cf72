"""xLSTM (NX-AI xLSTM-7B, transformers' ``xlstm``): every block is ``norm_mlstm`` → mLSTM
(``analysis.mixers.mlstm``) → residual, ``norm_ffn`` → a SwiGLU feed-forward (``proj_up_gate``, ``proj_up``,
``proj_down``) → residual; ``out_norm`` after the blocks (always: transformers' own xLSTM does not read
``add_out_norm``), logits soft-capped at ``output_logit_soft_cap``.

Norms are RMSNorms with a weight, biased by ``use_bias`` (``out_norm`` never biased). The feed-forward's width
is ``hidden_size · ffn_proj_factor`` rounded up to ``ffn_round_up_to_multiple_of``. transformers builds
``num_blocks`` blocks (``num_hidden_layers`` when absent) and never ties lm_head to the embedding
(``xLSTMForCausalLM`` declares no tied weights, whatever ``tie_word_embeddings`` says).
"""

from __future__ import annotations

from ..fields import MAX_DIM, MAX_LAYERS, Fields
from ..spec import MLP, CheckpointLayout, Layer, ModelSpec, Norm, PlacedNorm
from ..mixers.mlstm import MLSTM

#: the checkpoint's names -> ours
LAYOUT = CheckpointLayout(
    renames=(("backbone.embeddings.", "model.embed_tokens."), ("backbone.blocks.", "model.layers."),
             ("backbone.out_norm.", "model.norm.")),
    modules=((".mlstm_layer.", ".mixer."), (".ffn.proj_up_gate_z.", ".mlp.gate_up_proj."),
             (".ffn.proj_up_gate.", ".mlp.gate_proj."), (".ffn.proj_up.", ".mlp.up_proj."),
             (".ffn.proj_down.", ".mlp.down_proj.")))


def _round_up(x: float, multiple: int) -> int:
    """transformers' ``round_up_to_next_multiple_of`` (on a float product, as it is called)."""
    return int(((x + multiple - 1) // multiple) * multiple)


def build(f: Fields, model_type: str) -> ModelSpec:
    # hidden_size (class default 4096; never null) sizes the blocks, embedding_dim the embedding: they must agree
    if "hidden_size" in f.cfg:
        hidden = f.int("hidden_size")
    else:
        hidden = f.defaulted("hidden_size", 4096, "absent: the xlstm class default (embedding_dim sizes only the "
                                                  "embedding)")
    if f.cfg.get("embedding_dim") is not None and f.int("embedding_dim") != hidden:
        raise f.error("embedding_dim", f"({f.int('embedding_dim')}) differs from hidden_size ({hidden}): "
                      "transformers would build the embedding at embedding_dim and the blocks at hidden_size")
    key = "num_blocks" if f.cfg.get("num_blocks") is not None else "num_hidden_layers"
    n_layers = (f.int(key, hi=MAX_LAYERS) if f.cfg.get(key) is not None else
                f.defaulted("num_hidden_layers", 32, "absent: the xlstm class default"))
    vocab = f.int("vocab_size", hi=1 << 26)
    heads = f.int("num_heads")
    def scaled(name: str) -> float:  # hidden_size x a factor, bounded before any rounding (1e308 overflows)
        x = hidden * f.float(name)
        if x > MAX_DIM:
            raise f.error(name, f"gives {x:.4g} features (hidden_size x factor), larger than any real model")
        return x

    qk, v = int(scaled("qk_dim_factor")), int(scaled("v_dim_factor"))
    for name, dim in (("qk_dim_factor", qk), ("v_dim_factor", v)):
        if dim > MAX_DIM:
            raise f.error(name, f"gives {dim} features (int(hidden_size x factor)), larger than any real model")
        if dim < heads or dim % heads:
            raise f.error(name, f"gives {dim} features (int(hidden_size x factor)), which do not split into "
                          f"{heads} heads")
    mode = f.str("weight_mode", "single")
    if mode not in ("single", "fused"):
        raise f.error("weight_mode", f"is {mode!r}; expected 'single' or 'fused'")
    bias = f.bool("use_bias")
    ffn = f.derived("ffn_dim", _round_up(scaled("ffn_proj_factor"), f.int("ffn_round_up_to_multiple_of")),
                    "hidden_size x ffn_proj_factor rounded up to ffn_round_up_to_multiple_of")
    if ffn > MAX_DIM:
        raise f.error("ffn_proj_factor", f"gives a feed-forward of {ffn}, larger than any real model")
    mixer = MLSTM(hidden, heads, qk, v, bias=bias, fused=mode == "fused")
    mlp = MLP(hidden, ffn, gated=True, bias=bias, fused_gate_up=mode == "fused", act="silu")
    norms = (PlacedNorm("norm_mlstm", "pre_mixer", Norm(hidden, bias=bias)),
             PlacedNorm("norm_ffn", "pre_ffn", Norm(hidden, bias=bias)))
    f.derived("tie_word_embeddings", False, "xLSTMForCausalLM never ties lm_head to the embedding")
    return ModelSpec(model_type=model_type, hidden_size=hidden, vocab_size=vocab,
                     layers=tuple([Layer(mixer, mlp, norms)] * n_layers), tie_word_embeddings=False,
                     final_norm=Norm(hidden), hidden_act="silu",
                     norm_eps=f.float("norm_eps"),
                     final_logit_softcapping=f.float("output_logit_soft_cap", 30.0, note="the xlstm class default"),
                     checkpoint=LAYOUT)
