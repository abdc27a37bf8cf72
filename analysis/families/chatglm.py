"""ChatGLM2-6B, ChatGLM3-6B, CodeGeeX2-6B and GLM-4-9B (THUDM / zai-org ``glm-4-9b``, ``glm-4-9b-chat``,
``glm-4-9b-chat-1m``): the remote-code ``chatglm`` model type (``ChatGLMModel`` /
``ChatGLMForConditionalGeneration``), as the hub's modeling_chatglm.py / configuration_chatglm.py and vLLM's
vllm/model_executor/models/chatglm.py build it. transformers ships no class for it (its ``glm`` / ``glm4`` are
the converted ``-hf`` checkpoints), so its class defaults are ChatGLMConfig's, given here.

- ``transformer.embedding.word_embeddings``: ``padded_vocab_size`` rows; ``transformer.output_layer``: a
  bias-free Linear(hidden, padded_vocab_size), a tensor of its own (the remote model never ties it; vLLM ties it
  only when ``tie_word_embeddings`` is true, which no published config says).
- GLMBlock: ``input_layernorm`` -> SelfAttention -> residual -> ``post_attention_layernorm`` -> MLP -> residual;
  RMSNorms (``rmsnorm``, weight only) or LayerNorms with bias, eps ``layernorm_epsilon``. With
  ``apply_residual_connection_post_layernorm`` each residual is the norm's output instead of its input.
- SelfAttention: one fused ``query_key_value`` Linear(hidden, heads·kv_channels + 2·groups·kv_channels) whose
  rows are [q; k; v] (no per-head interleave), with a bias when ``add_qkv_bias`` or ``add_bias_linear``;
  ``groups`` = ``multi_query_group_num`` when ``multi_query_attention``, else every head has its K/V; head width
  ``kv_channels`` (not hidden / heads); ``dense`` Linear(heads·kv_channels, hidden), biased by ``add_bias_linear``.
  RoPE on the first kv_channels / 2 channels of each head, interleaved pairs (GPT-J style; vLLM: rotate_half
  when ``original_rope`` is false), base 10000·``rope_ratio``. The cache holds K and V of the groups
  (groups × kv_channels each) per layer and token.
- MLP: ``dense_h_to_4h`` Linear(hidden, 2·ffn_hidden_size) whose first half is the gate (silu(x0)·x1),
  ``dense_4h_to_h`` Linear(ffn_hidden_size, hidden); both biased by ``add_bias_linear``.
- ``transformer.encoder.final_layernorm`` when ``post_layer_norm``.

Refused: the first ChatGLM-6B (same model_type, GLM's 2D positions and GeLU blocks: ``position_encoding_2d``),
GLM-4V / CogAgent (a ``vision_config``: vLLM runs them as another architecture), P-tuning prefixes
(``pre_seq_len``: a prefix encoder and per-sequence prefix K/V) and the remote code's own int4 / int8 packing
(``quantization_bit``).
"""

from __future__ import annotations

from ..errors import UnsupportedModelError
from ..fields import MAX_LAYERS, Fields
from ..mixers import Attention
from ..spec import MLP, CheckpointLayout, Layer, ModelSpec, Norm, NormKind, Numerics, RopeStyle
from .common import pre_norms, read_tie

#: ChatGLMForConditionalGeneration's names -> ours (query_key_value / dense are renamed for every family; the
#: fused SwiGLU dense_h_to_4h is our gate_up_proj, which the shared renames would take for a plain up_proj)
LAYOUT = CheckpointLayout(renames=(("transformer.embedding.word_embeddings.", "model.embed_tokens."),
                                   ("transformer.encoder.layers.", "model.layers."),
                                   ("transformer.encoder.final_layernorm.", "model.norm."),
                                   ("transformer.output_layer.", "lm_head.")),
                          modules=((".mlp.dense_h_to_4h.", ".mlp.gate_up_proj."),))

#: configuration_chatglm.ChatGLMConfig's defaults (ChatGLM2/3 and GLM-4 alike) for the fields that change a shape
#: or the arithmetic; the core widths (hidden_size, num_layers, num_attention_heads, padded_vocab_size,
#: ffn_hidden_size) are required, as for every family
DEFAULTS = {"kv_channels": 128, "multi_query_attention": False, "multi_query_group_num": 1, "add_bias_linear": False,
            "add_qkv_bias": False, "rmsnorm": True, "apply_residual_connection_post_layernorm": False,
            "post_layer_norm": True, "layernorm_epsilon": 1e-5, "rope_ratio": 1.0}
NOTE = "absent: ChatGLMConfig's default (configuration_chatglm.py)"


def build(f: Fields, model_type: str) -> ModelSpec:
    where = f.where
    if f.raw("position_encoding_2d") is not None or f.raw("inner_hidden_size") is not None:
        raise UnsupportedModelError(f"{where}: this is the first ChatGLM-6B (position_encoding_2d / "
                                    "inner_hidden_size): its GLM blocks (2D positions, GeLU MLP, LayerNorms) are not "
                                    "modelled; ChatGLM2/3 and GLM-4 (padded_vocab_size, ffn_hidden_size) are")
    if f.raw("vision_config") is not None:
        raise UnsupportedModelError(f"{where}: a ChatGLM config with a vision_config (GLM-4V-9B, CogAgent): its "
                                    "EVA2-CLIP vision tower is not modelled",
                                    "the text-only GLM-4-9B checkpoints (glm-4-9b, glm-4-9b-chat) are supported")
    if f.raw("pre_seq_len") is not None:
        raise UnsupportedModelError(f"{where}: pre_seq_len is set (a P-tuning v2 checkpoint): its prefix encoder and "
                                    "the prefix K/V every sequence carries are not modelled",
                                    "analyse the base model's config (pre_seq_len null)")
    qbits = f.raw("quantization_bit")
    if qbits not in (None, 0, False):
        raise UnsupportedModelError(f"{where}: quantization_bit is {qbits!r}: the remote code's own int4 / int8 weight "
                                    "packing (quantization.py) is not modelled",
                                    "analyse the unquantized checkpoint's config (quantization_bit 0)")
    for key in ("kv_channels", "multi_query_group_num"):
        if key in f.cfg and f.cfg[key] is None:  # the remote code multiplies by it: null does not build
            raise f.error(key, "is null: ChatGLM's attention needs it")

    hidden = f.int("hidden_size")
    n_layers = f.int("num_layers", hi=MAX_LAYERS)
    if "num_hidden_layers" in f.cfg and f.int("num_hidden_layers", hi=MAX_LAYERS) != n_layers:
        raise f.error("num_hidden_layers", f"({f.raw('num_hidden_layers')}) differs from num_layers ({n_layers}), "
                                           "which ChatGLM builds")
    heads = f.int("num_attention_heads")
    vocab = f.int("padded_vocab_size", hi=1 << 26)
    inter = f.int("ffn_hidden_size")
    hd = f.int("kv_channels", DEFAULTS["kv_channels"], note=NOTE)
    mqa = f.bool("multi_query_attention", DEFAULTS["multi_query_attention"], note=NOTE)
    if mqa:
        kv = f.int("multi_query_group_num", DEFAULTS["multi_query_group_num"], note=NOTE)
        if kv > heads or heads % kv:
            raise f.error("multi_query_group_num", f"({kv}) must divide num_attention_heads ({heads})")
    else:
        kv = f.derived("multi_query_group_num", heads, "multi_query_attention is false: K/V for every head")
    if hd % 4:
        # RoPE on kv_channels / 2 channels in pairs: an odd count of pairs does not split evenly
        raise f.error("kv_channels", f"({hd}) must be a multiple of 4: ChatGLM ropes kv_channels / 2 channels "
                                     "of each head in pairs")
    bias_linear = f.bool("add_bias_linear", DEFAULTS["add_bias_linear"], note=NOTE)
    qkv_bias = f.bool("add_qkv_bias", DEFAULTS["add_qkv_bias"], note=NOTE) or bias_linear
    rms = f.bool("rmsnorm", DEFAULTS["rmsnorm"], note=NOTE)
    after_norm = f.bool("apply_residual_connection_post_layernorm",
                        DEFAULTS["apply_residual_connection_post_layernorm"], note=NOTE)
    post_norm = f.bool("post_layer_norm", DEFAULTS["post_layer_norm"], note=NOTE)
    eps = f.float("layernorm_epsilon", DEFAULTS["layernorm_epsilon"], note=NOTE)
    theta = 10000.0 * f.float("rope_ratio", DEFAULTS["rope_ratio"], note=NOTE)
    f.derived("rope_theta", theta, "10000 x rope_ratio")
    pairs = f.bool("original_rope", True, note="absent: true (interleaved pairs), as every published config says")

    kind = NormKind.RMS if rms else NormKind.LAYER
    norm = lambda: Norm(hidden, kind, bias=not rms)  # noqa: E731
    attn = Attention(hidden, heads, kv, hd, hd, qkv_bias, qkv_bias, qkv_bias, bias_linear, fused_qkv=True,
                     rotary_dim=hd // 2, rope_theta=theta)
    mlp = MLP(hidden, inter, gated=True, bias=bias_linear, fused_gate_up=True, act="silu")
    layer = Layer(attn, mlp, pre_norms(norm))
    return ModelSpec(
        model_type=model_type, hidden_size=hidden, vocab_size=vocab, layers=(layer,) * n_layers,
        tie_word_embeddings=read_tie(f, False), final_norm=norm() if post_norm else None, hidden_act="silu",
        norm_eps=eps, checkpoint=LAYOUT,
        numerics=Numerics(rope_style=RopeStyle.PAIRS if pairs else RopeStyle.HALF, residual_after_norm=after_norm),
    )
