"""PaddleOCR-VL and GOT-OCR 2.0: the towers and projectors of their multimodal wrappers, as transformers'
``*ForConditionalGeneration`` builds them (the language model is ``text_config``, counted by its own registry
entry). LightOnOCR's and GLM-OCR's towers are in analysis/vision.py (``lighton_ocr_vision``, ``glm_ocr_vision``).

PaddleOCR-VL (``paddleocr_vl``, PaddleOCR-VL 0.9B): a SigLIP tower (``model.visual.vision_model``: a biased patch
conv, (image_size // patch_size)² learned positions, SigLIP blocks, a post LayerNorm, never a pooling head) and the
projector (``model.projector``): a LayerNorm over the vision hidden, a biased Linear (vision hidden ·
spatial_merge_size² square) and a biased Linear to the text hidden size. Its language model
(``paddleocr_vl_text``) is ERNIE 4.5's dense block with half-split (not interleaved) M-RoPE; hub configs are flat.

GOT-OCR 2.0 (``got_ocr2``): a SAM ViT (``got_ocr2_vision``: analysis.families.deepseek_vl.sam_tensors, directly under
``model.vision_tower``, its neck included) and the projector: two bias-free stride-2 3×3 convs (output_channels →
2·output_channels → text hidden) and a biased text hidden square Linear. Its language model is Qwen2.
"""

from __future__ import annotations

from ..spec import Tensor
from ..vision import _lin, _ln, siglip_tensors, vision_tower_config
from .deepseek_vl import _sub, sam_tensors


def paddleocr_vl_vision(top: dict, text_hidden: int, where: str) -> tuple[Tensor, ...]:
    from ..family_defaults import FAMILY_DEFAULTS
    from ..fields import Fields

    vc = top.get("vision_config")
    if isinstance(vc, dict) and vc.get("model_type") == "paddleocr_vl":  # PaddleOCRVLConfig renames it
        vc = dict(vc, model_type="paddleocr_vl_vision")
    vc = vision_tower_config(dict(top, vision_config=vc), where, "paddleocr_vl_vision", "PaddleOCR-VL",
                             "PaddleOCR-VL's checkpoints use its SigLIP tower (paddleocr_vl_vision)")
    out = siglip_tensors(vc, where, prefix="model.visual.vision_model", family="paddleocr_vl_vision", head=False)
    vh = out[0].shape[0]
    f = Fields(vc, f"{where} (vision_config)", defaults=FAMILY_DEFAULTS.get("paddleocr_vl_vision"), nested=True,
               family="paddleocr_vl_vision")
    merged = vh * f.int("spatial_merge_size", hi=64) ** 2
    _ln(out, "model.projector.pre_norm", vh)
    _lin(out, "model.projector.linear_1", merged, merged)
    _lin(out, "model.projector.linear_2", text_hidden, merged)
    return tuple(out)


def got_ocr2_vision(top: dict, text_hidden: int, where: str, tower: str = "got_ocr2_vision",
                    name: str = "GOT-OCR 2.0") -> tuple[Tensor, ...]:
    vision_tower_config(top, where, tower, name, f"{name}'s checkpoints use its SAM ViT ({tower})")
    f = _sub(top, "vision_config", where, tower)
    out, _, ch = sam_tensors(f, "model.vision_tower", encoder="")
    p = "model.multi_modal_projector"
    out.append(Tensor(f"{p}.conv_upsampler1.weight", (2 * ch, ch, 3, 3), "vision"))
    out.append(Tensor(f"{p}.conv_upsampler2.weight", (text_hidden, 2 * ch, 3, 3), "vision"))
    _lin(out, f"{p}.multimodal_projector", text_hidden, text_hidden)
    return tuple(out)


def pp_chart2table_vision(top: dict, text_hidden: int, where: str) -> tuple[Tensor, ...]:
    """PP-Chart2Table: transformers builds GotOcr2ForConditionalGeneration from it (its own SAM config class, the same
    fields and defaults as GOT-OCR 2.0's; its Qwen2 text_config defaults are GOT-OCR 2.0's too)."""
    return got_ocr2_vision(top, text_hidden, where, "pp_chart2table_vision", "PP-Chart2Table")


# ---- BLIP-2 / InstructBLIP ------------------------------------------------------------------------------
# The vision model (``blip_2_vision_model`` / ``instructblip_vision_model``): a class embedding (1, 1, hidden), a
# learned position table (1, patches + 1, hidden), a biased patch conv (3 channels), blocks of LayerNorms, a fused
# qkv without its own bias but, when ``qkv_bias``, a (3·hidden) bias (q and v learned, k zeros: one Parameter), a
# biased ``projection``, a biased fc1/fc2 MLP, and a post LayerNorm. ``query_tokens`` (1, num_query_tokens, Q-Former
# hidden). The Q-Former (BERT-shaped, biased): per layer self-attention (query/key/value, output dense + LayerNorm),
# every ``cross_attention_frequency``-th layer (index % frequency == 0) a cross-attention whose key/value read the
# vision hidden size (the config's encoder_hidden_size is overwritten by it), and the query feed-forward
# (intermediate_query / output_query + LayerNorm); the text feed-forward (intermediate / output) too in InstructBLIP
# and in BLIP-2 when ``use_qformer_text_input``. BLIP-2's Q-Former has one LayerNorm over the queries; InstructBLIP's
# has text embeddings (word and position tables, a LayerNorm) instead. Then ``language_projection`` (biased, Q-Former
# hidden -> text hidden). The language model is text_config's (OPT by default): a decoder-only one is counted by its
# own registry entry; an encoder-decoder one (Flan-T5) is refused by name. InstructBLIP-Video (``instructblipvideo``)
# is InstructBLIP's model under its own config classes.


#: Blip2QFormerConfig's / InstructBlipQFormerConfig's cross_attention_frequency (a field name the generator's deny-list
#: drops).
QFORMER_CROSS_ATTENTION_FREQUENCY = 2


def qformer_width(qf) -> tuple[int, int]:
    """A Blip2QFormerConfig's hidden size (its heads checked to divide it) and intermediate size."""
    qh = qf.int("hidden_size")
    q_heads = qf.int("num_attention_heads")
    if qh % q_heads:
        raise qf.error("num_attention_heads", f"({q_heads}) must divide hidden_size ({qh})")
    return qh, qf.int("intermediate_size")


def qformer_layers(out: list[Tensor], prefix: str, n_layers: int, qh: int, q_inter: int, kv_in: int, freq: int,
                   text_ffn: bool, kind: str = "vision") -> None:
    """Blip2QFormerModel's ``n_layers`` encoder layers under ``prefix``: biased query / key / value and
    output.dense + LayerNorm, a cross-attention over ``kv_in``-wide features every ``freq`` layers, the query
    feed-forward (``intermediate_query`` / ``output_query``) and, with ``text_ffn``, the text one beside it."""
    def lin(name: str, n_out: int, n_in: int) -> None:
        out.extend((Tensor(f"{name}.weight", (n_out, n_in), kind), Tensor(f"{name}.bias", (n_out,), kind)))

    def ln(name: str, dim: int) -> None:
        out.extend((Tensor(f"{name}.weight", (dim,), kind), Tensor(f"{name}.bias", (dim,), kind)))

    def attention(p: str, n_kv: int) -> None:
        for name, n_in in (("query", qh), ("key", n_kv), ("value", n_kv)):
            lin(f"{p}.attention.{name}", qh, n_in)
        lin(f"{p}.output.dense", qh, qh)
        ln(f"{p}.output.LayerNorm", qh)

    for i in range(n_layers):
        b = f"{prefix}.encoder.layer.{i}"
        attention(f"{b}.attention", qh)
        if i % freq == 0:
            attention(f"{b}.crossattention", kv_in)
        for ffn in (("", "_query") if text_ffn else ("_query",)):
            lin(f"{b}.intermediate{ffn}.dense", q_inter, qh)
            lin(f"{b}.output{ffn}.dense", qh, q_inter)
            ln(f"{b}.output{ffn}.LayerNorm", qh)


def _blip_vision(top: dict, text_hidden: int, where: str, wrapper: str) -> tuple[Tensor, ...]:
    from ..family_defaults import FAMILY_DEFAULTS
    from ..fields import MAX_LAYERS, Fields

    fam = wrapper.replace("-", "_")  # its sub-configs' model_types: blip_2_qformer, instructblipvideo_vision_model ...
    instruct = wrapper != "blip-2"
    vf = _sub(top, "vision_config", where, f"{fam}_vision_model")
    qf = _sub(top, "qformer_config", where, f"{fam}_qformer")

    tf = Fields(top, where, defaults=FAMILY_DEFAULTS.get(wrapper), family=wrapper)
    h = vf.int("hidden_size")
    inter = vf.int("intermediate_size")
    layers = vf.int("num_hidden_layers", hi=MAX_LAYERS)
    heads = vf.int("num_attention_heads")
    if h % heads:
        raise vf.error("num_attention_heads", f"({heads}) must divide hidden_size ({h})")
    size = vf.int("image_size", hi=1 << 16)
    patch = vf.int("patch_size", hi=4096)
    if patch > size:
        raise vf.error("patch_size", f"({patch}) is larger than image_size ({size})")
    qkv_bias = vf.bool("qkv_bias")
    out: list[Tensor] = []
    v = "vision_model"
    out.append(Tensor(f"{v}.embeddings.class_embedding", (1, 1, h), "vision"))
    out.append(Tensor(f"{v}.embeddings.position_embedding", (1, (size // patch) ** 2 + 1, h), "vision"))
    out.append(Tensor(f"{v}.embeddings.patch_embedding.weight", (h, 3, patch, patch), "vision"))
    out.append(Tensor(f"{v}.embeddings.patch_embedding.bias", (h,), "vision"))
    for i in range(layers):
        b = f"{v}.encoder.layers.{i}"
        out.append(Tensor(f"{b}.self_attn.qkv.weight", (3 * h, h), "vision"))
        if qkv_bias:
            out.append(Tensor(f"{b}.self_attn.qkv.bias", (3 * h,), "vision"))
        _lin(out, f"{b}.self_attn.projection", h, h)
        _ln(out, f"{b}.layer_norm1", h)
        _lin(out, f"{b}.mlp.fc1", inter, h)
        _lin(out, f"{b}.mlp.fc2", h, inter)
        _ln(out, f"{b}.layer_norm2", h)
    _ln(out, f"{v}.post_layernorm", h)
    qh, q_inter = qformer_width(qf)
    freq = qf.int("cross_attention_frequency", QFORMER_CROSS_ATTENTION_FREQUENCY, hi=MAX_LAYERS,
                  note="absent: the Q-Former config class default")
    text_ffn = instruct or qf.bool("use_qformer_text_input")
    out.append(Tensor("query_tokens", (1, tf.int("num_query_tokens", hi=1 << 16), qh), "vision"))
    if instruct:
        out.append(Tensor("qformer.embeddings.word_embeddings.weight", (qf.int("vocab_size"), qh), "vision"))
        out.append(Tensor("qformer.embeddings.position_embeddings.weight",
                          (qf.int("max_position_embeddings", hi=1 << 24), qh), "vision"))
        _ln(out, "qformer.embeddings.layernorm", qh)
    else:
        _ln(out, "qformer.layernorm", qh)
    qformer_layers(out, "qformer", qf.int("num_hidden_layers", hi=MAX_LAYERS), qh, q_inter, h, freq, text_ffn)
    _lin(out, "language_projection", text_hidden, qh)
    return tuple(out)


def blip2_vision(top: dict, text_hidden: int, where: str) -> tuple[Tensor, ...]:
    return _blip_vision(top, text_hidden, where, "blip-2")


def instructblip_vision(top: dict, text_hidden: int, where: str) -> tuple[Tensor, ...]:
    return _blip_vision(top, text_hidden, where, "instructblip")


def instructblipvideo_vision(top: dict, text_hidden: int, where: str) -> tuple[Tensor, ...]:
    """InstructBLIP-Video: InstructBLIP's modules and names (its own config classes, the same fields and defaults);
    frames go through the same tower and Q-Former one by one."""
    return _blip_vision(top, text_hidden, where, "instructblipvideo")
