"""ModernBERT decoder (``modernbert-decoder``; jhu-clsp's Ettin decoders), as transformers 5.24's
modeling_modernbert_decoder.py builds ModernBertDecoderForCausalLM.

- Embedding: ``tok_embeddings`` then a LayerNorm (``embeddings.norm``; bias by ``norm_bias``, eps ``norm_eps``).
- Every LayerNorm is biased by ``norm_bias`` (class default false). Layer 0 has no pre-attention norm (nn.Identity:
  the embedding norm stands in for it); every layer has ``mlp_norm`` before its MLP.
- Attention: multi-head (no GQA), head_dim = hidden / heads (must divide), separate q/k/v projections and ``Wo``,
  all biased by ``attention_bias``. Full RoPE on every layer, each layer type its own base
  (``rope_parameters[type].rope_theta``, else ``global_rope_theta`` / ``local_rope_theta``, else 160000 / 10000).
- ``layer_types`` (absent: ``global_attn_every_n_layers``, 3: layer i full when i % n == 0, else sliding). Sliding
  layers see ``local_attention // 2`` keys (the query included; transformers' ``sliding_window``), class default 64.
- MLP: GeGLU, ``Wi`` (hidden -> 2 x intermediate, gelu on the first half times the second) and ``Wo``, biased by
  ``mlp_bias``; activation ``hidden_activation``.
- Head: a final LayerNorm, then the prediction head (``lm_head.dense`` hidden x hidden biased by ``classifier_bias``,
  ``classifier_activation``, ``lm_head.norm`` a LayerNorm) and ``decoder`` (tied to the embedding by default) with a
  bias of its own by ``decoder_bias`` (class default true).
"""

from __future__ import annotations

from ..errors import UnsupportedModelError
from ..fields import MAX_LAYERS, Fields
from ..spec import (MLP, Attention, CheckpointLayout, Layer, ModelSpec, Norm, NormKind, Numerics, PlacedNorm, Tensor)
from .common import per_layer_types, read_tie

_TYPES = ("full_attention", "sliding_attention")
_THETA = {"full_attention": ("global_rope_theta", 160_000.0), "sliding_attention": ("local_rope_theta", 10_000.0)}

#: ModernBertDecoderForCausalLM's names -> ours
LAYOUT = CheckpointLayout(
    renames=(("model.embeddings.tok_embeddings.", "model.embed_tokens."),
             ("model.embeddings.norm.", "model.embed_layernorm."), ("model.final_norm.", "model.norm."),
             ("decoder.", "lm_head.")),
    modules=((".attn.Wo.", ".self_attn.o_proj."), (".attn.", ".self_attn."), (".mlp.Wi.", ".mlp.gate_up_proj."),
             (".mlp.Wo.", ".mlp.down_proj.")))


def _rope(f: Fields, kind: str) -> tuple[float, tuple]:
    """(theta, scaling items) of one layer type: transformers applies rope_scaling to both types."""
    params = f.raw("rope_parameters")
    block = params.get(kind) if isinstance(params, dict) else None
    key, default = _THETA[kind]
    if isinstance(block, dict) and block.get("rope_theta") is not None:
        theta = block["rope_theta"]
        if isinstance(theta, bool) or not isinstance(theta, (int, float)) or theta <= 0:
            raise f.error(f"rope_parameters.{kind}.rope_theta", f"must be a positive number, got {theta!r}")
        theta = float(theta)
    else:
        theta = f.float(key, default)
    items = dict(block) if isinstance(block, dict) else {}
    scaling = f.raw("rope_scaling")
    if isinstance(scaling, dict):
        items.update(scaling)
    items.pop("rope_theta", None)
    kind_ = items.get("rope_type") or items.get("type") or "default"
    if kind_ != "default":
        raise UnsupportedModelError(f"{f.where}: modernbert-decoder with rope type {kind_!r} is not supported yet",
                                    "its published (Ettin) configs use plain RoPE")
    return theta, ()


def build(f: Fields, model_type: str) -> ModelSpec:
    hidden = f.int("hidden_size")
    n_layers = f.int("num_hidden_layers", hi=MAX_LAYERS)
    heads = f.int("num_attention_heads")
    vocab = f.int("vocab_size", hi=1 << 26)
    if hidden % heads:
        raise f.error("num_attention_heads", f"({heads}) must divide hidden_size ({hidden}) for {model_type}")
    hd = hidden // heads
    inter = f.int("intermediate_size")
    if f.raw("layer_types") is None:
        every = f.int("global_attn_every_n_layers", 3, hi=MAX_LAYERS)
        types = f.derived("layer_types", ["full_attention" if i % every == 0 else "sliding_attention"
                                          for i in range(n_layers)],
                          f"absent: full attention every {every} layers (global_attn_every_n_layers), else sliding")
    else:
        types = per_layer_types(f, "layer_types", n_layers, _TYPES)
    window = None
    if "sliding_attention" in types:
        local = f.int("local_attention", 128, lo=2, hi=1 << 30)
        window = f.derived("sliding_window", local // 2, f"local_attention ({local}) // 2, as transformers sets it")
    ropes = {t: _rope(f, t) for t in dict.fromkeys(types)}
    attn_bias = f.bool("attention_bias", False)
    mlp_bias = f.bool("mlp_bias", False)
    norm_bias = f.bool("norm_bias", False)
    act = f.str("hidden_activation", "gelu")
    ln = lambda: Norm(hidden, NormKind.LAYER, bias=norm_bias)  # noqa: E731
    mlp = MLP(hidden, inter, gated=True, bias=mlp_bias, fused_gate_up=True, act=act)
    layers = []
    for i, t in enumerate(types):
        attn = Attention(hidden, heads, heads, hd, hd, attn_bias, attn_bias, attn_bias, attn_bias,
                         window=window if t == "sliding_attention" else None, rotary_dim=hd,
                         rope_theta=ropes[t][0])
        norms = (PlacedNorm("mlp_norm", "pre_ffn", ln()),) if i == 0 else \
            (PlacedNorm("attn_norm", "pre_mixer", ln()), PlacedNorm("mlp_norm", "pre_ffn", ln()))
        layers.append(Layer(attn, mlp, norms))
    head = [Tensor("lm_head.dense.weight", (hidden, hidden), "linear")]
    if f.bool("classifier_bias", False):
        head.append(Tensor("lm_head.dense.bias", (hidden,), "bias"))
    head.append(Tensor("lm_head.norm.weight", (hidden,), "norm"))
    if norm_bias:
        head.append(Tensor("lm_head.norm.bias", (hidden,), "norm"))
    return ModelSpec(
        model_type=model_type, hidden_size=hidden, vocab_size=vocab, layers=tuple(layers),
        tie_word_embeddings=read_tie(f, True), lm_head_bias=f.bool("decoder_bias", True), final_norm=ln(),
        embedding_norm=ln(), head_transform=tuple(head), hidden_act=act, norm_eps=f.float("norm_eps", 1e-5),
        max_position_embeddings=f.int("max_position_embeddings", 8192, hi=1 << 30),
        numerics=Numerics(head_act=f.str("classifier_activation", "gelu")), checkpoint=LAYOUT,
    )
