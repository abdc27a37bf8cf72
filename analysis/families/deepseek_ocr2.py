"""DeepSeek-OCR-2 (``deepseek_ocr2`` wrapper, ``deepseek_ocr2_text`` language model; deepseek-community/DeepSeek-OCR-2,
the conversion of deepseek-ai/DeepSeek-OCR-2), as transformers 5.24's ``DeepseekOcr2ForConditionalGeneration``
builds it (models/deepseek_ocr2/modeling_deepseek_ocr2.py).

* The language model (``model.language_model``) is DeepSeek-OCR's DeepSeek-MoE v1 decoder (DeepSeek-3B-MoE), read as
  Unlimited-OCR's is (analysis/families/unlimited_ocr.py) but with full attention on every layer (the text config has
  no window): Llama MHA (q/k/v/o biased by ``attention_bias``; ``head_dim`` always hidden_size / num_attention_heads,
  the config class overwrites it), rotate-half RoPE, a SwiGLU of ``intermediate_size`` on the ``dense`` layers of
  ``mlp_layer_types`` and on the ``sparse`` ones a softmax router (fp32, experts x hidden), ``n_routed_experts``
  SwiGLU experts of ``moe_intermediate_size`` (top ``num_experts_per_tok``, never renormalised, scaled by
  ``routed_scaling_factor``; ``topk_method`` greedy or group_limited_greedy) beside one shared SwiGLU of
  ``n_shared_experts x moe_intermediate_size``. ``mlp_layer_types`` has no default (DeepseekOcr2TextConfig leaves it
  null and the decoder layer indexes it: transformers' default config does not build), so a config without it is
  refused; ``first_k_dense_replace`` / ``moe_layer_freq`` / ``norm_topk_prob`` are not read by the model. lm_head is
  tied only when the wrapper's ``tie_word_embeddings`` is set (false in the checkpoint).
* The vision tower (``model.vision_tower``): ``sam_encoder``, SAM ViT-B from ``vision_config.sam_config``
  (``deepseek_vl.sam_tensors``) and its ``proj`` (two bias-free stride-2 3x3 convs, output_channels ->
  downsample_channels[0] -> [1]); ``vision_encoder``, DeepEncoder V2's Qwen2 decoder from
  ``vision_config.encoder_config`` fed SAM's features as its first tokens: per layer q/k/v biased (GQA,
  ``num_key_value_heads``), o bias-free, a bias-free SwiGLU of ``intermediate_size``, two RMSNorms, then a final
  RMSNorm (no token embedding: ``vocab_size`` is unused); the learned queries ``query_768_resolution`` (144 x hidden)
  and ``query_1024_resolution`` (256 x hidden). ``model.multi_modal_projector``: a biased Linear(the encoder's hidden,
  the text hidden); ``view_separator`` (text hidden). No ``image_newline``.
* The hub's remote-code format (model_type ``deepseek_vl_v2``, architectures ``DeepseekOCR2ForCausalLM``) is not read
  here: analysis/families/deepseek_ocr.py refuses it by name.

Checked against transformers on the meta device (tests/test_deepseek_ocr2.py): the checkpoint's config (transformers'
convert_deepseek_ocr2_weights_to_hf.convert_config of the hub config) gives 3,389,119,360 parameters, which is
DeepSeek-OCR's published 3,336,106,240 (its bf16 safetensors) with the CLIP-L tower, its 2048-wide projector,
``image_newline`` and the 1024-channel ``net_3`` replaced by the Qwen2 encoder, the queries, the 896-wide projector
and an 896-channel conv (no DeepSeek-OCR-2 safetensors total was found to compare with; its card says 3B).
"""

from __future__ import annotations

from ..fields import MAX_LAYERS, Fields
from ..spec import ModelSpec, Tensor
from ..vision import _lin, _rms, _vision_fields, vision_config_dict
from . import unlimited_ocr

#: DeepseekOcr2SamVisionConfig.downsample_channels (set in __post_init__: not in family_defaults)
DOWNSAMPLE_CHANNELS = (512, 896)
#: DeepseekOcr2VisionModel's learned query tables (fixed in its __init__): 12x12 for 768-pixel tiles, 16x16 for 1024
QUERIES = (("query_768_resolution", 144), ("query_1024_resolution", 256))


def build_text(f: Fields, model_type: str) -> ModelSpec:
    if f.raw("mlp_layer_types") is None:
        raise f.error("mlp_layer_types", "is missing: DeepseekOcr2TextConfig has no default for it (transformers "
                                         "cannot build the model without it); list \"dense\" or \"sparse\" per layer, "
                                         "as the converted checkpoint does")
    method = unlimited_ocr.topk_method(f, "DeepseekOcr2TextTopkRouter")
    # the config class sets head_dim and the model ignores these: read a copy without them
    cfg = {k: v for k, v in f.cfg.items() if k not in ("head_dim", "moe_layer_freq", "norm_topk_prob",
                                                        "first_k_dense_replace", "sliding_window", "layer_types")}
    return unlimited_ocr.deepseek_moe_text(f, cfg, model_type, method)


def deepseek_ocr2_vision(top: dict, text_hidden: int, where: str) -> tuple[Tensor, ...]:
    vc = vision_config_dict(top.get("vision_config"), where)
    out, down = unlimited_ocr.sam_with_proj(vc, where, "deepseek_ocr2_sam_vision_model", DOWNSAMPLE_CHANNELS,
                                            "DeepseekOcr2SamVisionConfig")
    enc = _vision_fields(vc.get("encoder_config") or {}, f"{where} (vision_config.encoder_config)",
                         "deepseek_ocr2_encoder")
    h = enc.int("hidden_size")
    if down[1] != h:
        raise enc.error("hidden_size", f"({h}) must equal sam_config.downsample_channels[1] ({down[1]}): SAM's "
                                       "features are the encoder's first tokens")
    inter = enc.int("intermediate_size")
    layers = enc.int("num_hidden_layers", hi=MAX_LAYERS)
    heads = enc.int("num_attention_heads")
    kv = enc.opt_int("num_key_value_heads")
    if kv is None:
        kv = enc.derived("num_key_value_heads", heads, "null: num_attention_heads (DeepseekOcr2VisionEncoderConfig)")
    hd = enc.opt_int("head_dim")
    if hd is None:
        if h % heads:
            raise enc.error("num_attention_heads", f"({heads}) must divide hidden_size ({h})")
        hd = enc.derived("head_dim", h // heads, "absent: hidden_size / num_attention_heads")
    if heads % kv:
        raise enc.error("num_key_value_heads", f"({kv}) must divide num_attention_heads ({heads})")
    e = "model.vision_tower.vision_encoder"
    for i in range(layers):
        b = f"{e}.layers.{i}"
        _lin(out, f"{b}.self_attn.q_proj", heads * hd, h)
        _lin(out, f"{b}.self_attn.k_proj", kv * hd, h)
        _lin(out, f"{b}.self_attn.v_proj", kv * hd, h)
        out.append(Tensor(f"{b}.self_attn.o_proj.weight", (h, heads * hd), "vision"))
        for name, shape in (("gate_proj", (inter, h)), ("up_proj", (inter, h)), ("down_proj", (h, inter))):
            out.append(Tensor(f"{b}.mlp.{name}.weight", shape, "vision"))
        _rms(out, f"{b}.input_layernorm", h)
        _rms(out, f"{b}.post_attention_layernorm", h)
    _rms(out, f"{e}.norm", h)
    for name, n in QUERIES:
        out.append(Tensor(f"model.vision_tower.{name}.weight", (n, h), "vision"))
    _lin(out, "model.multi_modal_projector", text_hidden, h)
    out.append(Tensor("model.view_separator", (text_hidden,), "vision"))
    return tuple(out)
