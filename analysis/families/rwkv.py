"""RWKV-4 (transformers' ``rwkv``: RWKV/rwkv-4-169m-pile ... rwkv-4-14b-pile, rwkv-raven-*): a recurrent model,
every block ``ln1`` → time-mix → residual, ``ln2`` → channel-mix → residual (one mixer,
``analysis.mixers.rwkv``, holds both: the channel-mix shares the token shift); the first block's ``pre_ln``
normalises the embedding (our ``embedding_norm``); ``ln_out`` after the blocks; ``head`` tied to the embedding
only when ``tie_word_embeddings`` (class default False). Every norm is a LayerNorm with a bias; ``ln_out`` uses
torch's default eps (1e-5), the others ``layer_norm_epsilon``.

``rescale_every`` changes no shape: at inference transformers divides each block's ``attention.output`` and
``feed_forward.value`` weights by 2^(block // rescale_every) and halves the hidden state every rescale_every
blocks (the same function up to the LayerNorms' eps; it keeps fp16 in range). ``context_length`` is the
longest single forward of the CUDA kernel, not a limit of the recurrent mode, so it is not a context limit
here.
"""

from __future__ import annotations

from ..fields import MAX_LAYERS, Fields
from ..mixers.rwkv import RWKV4
from ..spec import CheckpointLayout, Layer, ModelSpec, Norm, NormKind, PlacedNorm

#: the checkpoint's names -> ours
LAYOUT = CheckpointLayout(
    renames=(("rwkv.embeddings.", "model.embed_tokens."), ("rwkv.blocks.0.pre_ln.", "model.embed_layernorm."),
             ("rwkv.blocks.", "model.layers."), ("rwkv.ln_out.", "model.norm."), ("head.", "lm_head.")),
    modules=((".attention.", ".mixer."), (".feed_forward.", ".mixer.mlp.")))


def build(f: Fields, model_type: str) -> ModelSpec:
    # (hidden_size, num_hidden_layers, vocab_size: the class defaults when absent, as transformers builds them)
    hidden = (f.int("hidden_size") if f.cfg.get("hidden_size") is not None else
              f.defaulted("hidden_size", 4096, "absent: the rwkv class default"))
    n_layers = (f.int("num_hidden_layers", hi=MAX_LAYERS) if f.cfg.get("num_hidden_layers") is not None else
                f.defaulted("num_hidden_layers", 32, "absent: the rwkv class default"))
    vocab = (f.int("vocab_size", hi=1 << 26) if f.cfg.get("vocab_size") is not None else
             f.defaulted("vocab_size", 50277, "absent: the rwkv class default"))
    att = f.int("attention_hidden_size", lambda: hidden, note="hidden_size (the rwkv default)")
    inter = f.int("intermediate_size", lambda: 4 * hidden, note="4 x hidden_size (the rwkv default)")
    f.int("rescale_every", 6, lo=-(1 << 31), hi=1 << 31, note="the rwkv class default")  # (numerics only)
    eps = f.float("layer_norm_epsilon", 1e-5, note="the rwkv class default")
    tied = f.bool("tie_word_embeddings", False, note="the rwkv class default")
    caveats: list[str] = []
    if att != hidden:
        # transformers sizes its state (batch, hidden_size, layers) whatever attention_hidden_size says, so its
        # cached generation fails on such a config; the state here is the recurrence's own (a channels)
        caveats.append(f"attention_hidden_size ({att}) differs from hidden_size ({hidden}): transformers allocates "
                       "its recurrent state at hidden_size and cannot generate with a cache on such a config; the "
                       "state counted is the WKV recurrence's own (attention_hidden_size channels)")
    ln = Norm(hidden, NormKind.LAYER, bias=True)
    norms = (PlacedNorm("ln1", "pre_mixer", ln), PlacedNorm("ln2", "pre_ffn", ln))
    layer = Layer(RWKV4(hidden, att, inter), None, norms)
    return ModelSpec(model_type=model_type, hidden_size=hidden, vocab_size=vocab, layers=(layer,) * n_layers,
                     tie_word_embeddings=tied, final_norm=ln, embedding_norm=ln, hidden_act="relu2",
                     norm_eps=eps, checkpoint=LAYOUT, caveats=tuple(caveats))
