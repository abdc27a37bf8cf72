"""Unlimited-OCR (``unlimited_ocr`` wrapper, ``unlimited_ocr_text`` language model; baidu/Unlimited-OCR), as
transformers 5.24's ``UnlimitedOcrForConditionalGeneration`` builds it (models/unlimited_ocr/modeling_unlimited_ocr.py):
DeepSeek-OCR's model (analysis/families/deepseek_ocr.py counts the hub's remote-code format) in transformers' names.

* The language model (``model.language_model``) is DeepSeek-MoE v1's decoder (``remote_moe.build_deepseek_v1``):
  Llama MHA (q/k/v/o biased by ``attention_bias``, ``head_dim`` always hidden_size / num_attention_heads: the config
  class overwrites it), rotate-half RoPE, a SwiGLU of ``intermediate_size`` on the ``dense`` layers of
  ``mlp_layer_types`` (absent: dense before ``first_k_dense_replace``, 1, sparse after; ``moe_layer_freq`` is not
  read) and on the ``sparse`` ones a softmax router (fp32, experts x hidden), ``n_routed_experts`` SwiGLU experts of
  ``moe_intermediate_size`` (top ``num_experts_per_tok``, never renormalised, scaled by ``routed_scaling_factor``;
  ``topk_method`` greedy or group_limited_greedy) beside one shared SwiGLU of ``n_shared_experts x
  moe_intermediate_size``. lm_head tied only when the wrapper's ``tie_word_embeddings`` is set.
* Its attention layers are Reference Sliding Window Attention (``layer_types`` ``reference_sliding_attention``, every
  layer by default): a token sees every prefill (prompt and image) token and the last ``sliding_window`` (128)
  generated ones. transformers' cache keeps the prefill's K/V plus a window of generated tokens; vLLM's
  unlimited_ocr.py ("Level 1: full KV cache + custom mask") keeps every token and masks. planner's cache and trace
  know one context length, not its split into prefill and generated tokens, so the layers are counted as full
  attention: the KV per token is exact, the KV per sequence and decode attention are vLLM's Level 1 (transformers'
  cache holds prefill + min(generated, window) tokens; said as a caveat).
* The vision tower (``model.vision_tower``): ``sam_encoder``, SAM ViT-B from ``vision_config.sam_config``
  (``deepseek_vl.sam_tensors``: biased patch conv, absolute positions, windowed / global blocks with relative
  positions, the neck) and ``proj`` (two bias-free stride-2 3x3 convs, output_channels -> downsample_channels[0] ->
  [1]); ``vision_encoder``, CLIP-L from ``vision_config.encoder_config`` fed SAM's features as its patches: class
  embedding, (image_size / patch_size)² + 1 positions, ``pre_layrnorm`` and CLIP's encoder layers, no patch
  embedding and no post-LayerNorm. ``model.multi_modal_projector``: a biased Linear(downsample_channels[-1] + the
  encoder's hidden, the text hidden); ``view_separator`` and ``image_newline`` (text hidden each).
* The original checkpoint's format (``language_config`` for the text model, ``sliding_window`` on the top level) is
  read as UnlimitedOcrConfig reads it. The hub's remote-code format (model_type ``unlimited-ocr``) is not read.

Checked against transformers on the meta device (tests/test_hy_v4_vl_unlimited_ocr.py).
"""

from __future__ import annotations

from dataclasses import replace

from ..errors import ConfigError
from ..fields import MAX_LAYERS, Fields
from ..spec import GroupScore, ModelSpec, RouterKind, Tensor
from ..vision import _encoder_block, _lin, _ln, _patches, _vision_fields, vision_config_dict
from .common import per_layer_types, read_routing
from .deepseek_vl import sam_tensors
from . import remote_moe

#: UnlimitedOcrSamVisionConfig.downsample_channels (a tuple default: not in family_defaults)
DOWNSAMPLE_CHANNELS = (512, 1024)


def text_config(cfg: dict, where: str) -> dict:
    """UnlimitedOcrConfig.__post_init__: no text_config -> ``language_config`` (the original checkpoint's key) with
    the top-level ``sliding_window``."""
    text = cfg.get("text_config")
    if text is None:
        text = cfg.get("language_config")
        if text is None:
            text = {}
        if not isinstance(text, dict):
            raise ConfigError(f"{where}: field 'language_config' must be an object of the language model's fields")
        text = dict(text)
        if "sliding_window" in cfg:
            text["sliding_window"] = cfg["sliding_window"]
    if not isinstance(text, dict):
        return text  # parse_config names the type error
    return dict(text, model_type="unlimited_ocr_text")  # UnlimitedOcrConfig builds UnlimitedOcrTextConfig whatever


def build_text(f: Fields, model_type: str) -> ModelSpec:
    n_layers = f.int("num_hidden_layers", hi=MAX_LAYERS)
    window = f.opt_int("sliding_window", hi=1 << 30)
    if window is None:  # UnlimitedOcrTextConfig.validate_architecture
        raise f.error("sliding_window", "is null: UnlimitedOcrTextConfig requires it (the reference sliding window "
                                        "of the R-SWA layers)")
    if f.raw("layer_types") is not None:
        types = per_layer_types(f, "layer_types", n_layers, ("reference_sliding_attention", "full_attention"))
    else:
        types = f.derived("layer_types", ["reference_sliding_attention"] * n_layers,
                          "absent: reference_sliding_attention on every layer (UnlimitedOcrTextConfig)")
    method = topk_method(f, "UnlimitedOcrTextTopkRouter")
    # the config class sets head_dim, mlp_layer_types and ignores moe_layer_freq / norm_topk_prob: read a copy
    cfg = {k: v for k, v in f.cfg.items() if k not in ("head_dim", "moe_layer_freq", "norm_topk_prob",
                                                        "first_k_dense_replace")}
    if f.raw("mlp_layer_types") is None:
        first = f.int("first_k_dense_replace", 1, lo=0, hi=MAX_LAYERS)
        cfg["mlp_layer_types"] = f.derived("mlp_layer_types", ["dense" if i < first else "sparse"
                                                               for i in range(n_layers)],
                                           f"absent: dense before first_k_dense_replace ({first}), sparse after")
    spec = deepseek_moe_text(f, cfg, model_type, method)
    caveats = ()
    if "reference_sliding_attention" in types:
        caveats = (f"Reference Sliding Window Attention ({types.count('reference_sliding_attention')} layers, window "
                   f"{window}): counted as full attention, the KV per sequence and decode attention over the whole "
                   "context as vLLM's unlimited_ocr.py caches it (every token, masked); transformers' cache holds the "
                   f"prefill's K/V and only the last {window} generated tokens', and a generated token attends those",)
    return replace(spec, caveats=(*spec.caveats, *caveats))


def topk_method(f: Fields, router: str) -> str:
    """The DeepSeek-MoE v1 text config's ``topk_method`` (greedy or group_limited_greedy: ``router``'s), with its
    unmodelled ``mlp_bias`` refused (Unlimited-OCR's and DeepSeek-OCR-2's language models)."""
    if f.bool("mlp_bias"):
        raise f.error("mlp_bias", "true (biased dense MLPs and shared experts) is not modelled; the checkpoints have "
                                  "none")
    method = f.str("topk_method")
    if method not in ("greedy", "group_limited_greedy"):
        raise f.error("topk_method", f"must be greedy or group_limited_greedy ({router}), got {method!r}")
    return method


def deepseek_moe_text(f: Fields, cfg: dict, model_type: str, method: str) -> ModelSpec:
    """DeepSeek-MoE v1's decoder from ``cfg`` (the text config without the fields its config class overrides and
    its model ignores), the softmax router never renormalised, group-limited or greedy as ``method`` says; what
    was read is recorded on ``f``."""
    g = Fields(cfg, f.where, aliases=f.aliases, family=f.family)
    g.defaults = {k: v for k, v in f.defaults.items() if k != "head_dim"}
    spec = remote_moe.build_deepseek_v1(g, model_type)
    routing = read_routing(g, RouterKind.SOFTMAX, norm_fixed=False,
                           group_score=GroupScore.MAX if method == "group_limited_greedy" else GroupScore.NONE)
    if method == "greedy":
        routing.update(n_group=1, topk_group=1, group_score=GroupScore.NONE)
    f.records.update({k: v for k, v in g.records.items() if k not in f.records or v.status == "read"})
    return replace(spec, numerics=replace(spec.numerics, **routing))


def sam_with_proj(vc: dict, where: str, family: str, default_channels: tuple[int, int], cls: str,
                  ) -> tuple[list[Tensor], list[int]]:
    """``model.vision_tower.sam_encoder``: SAM ViT-B from ``vision_config.sam_config`` and its ``proj`` (two bias-free
    stride-2 3x3 convs, output_channels -> downsample_channels[0] -> [1]; ``cls``'s ``default_channels`` when
    absent). Returns the tensors and the two channel counts."""
    sam = _vision_fields(vc.get("sam_config") or {}, f"{where} (vision_config.sam_config)", family)
    p = "model.vision_tower.sam_encoder"
    out, _, ch = sam_tensors(sam, p, encoder="")
    down = sam.int_list("downsample_channels", 2, lo=1)
    if down is None:
        down = list(sam.derived("downsample_channels", default_channels, f"absent: {cls}'s"))
    out.append(Tensor(f"{p}.proj.conv1.weight", (down[0], ch, 3, 3), "vision"))
    out.append(Tensor(f"{p}.proj.conv2.weight", (down[1], down[0], 3, 3), "vision"))
    return out, down


def unlimited_ocr_vision(top: dict, text_hidden: int, where: str) -> tuple[Tensor, ...]:
    vc = vision_config_dict(top.get("vision_config"), where)
    out, down = sam_with_proj(vc, where, "unlimited_ocr_sam_vision_model", DOWNSAMPLE_CHANNELS,
                              "UnlimitedOcrSamVisionConfig")
    enc = _vision_fields(vc.get("encoder_config") or {}, f"{where} (vision_config.encoder_config)",
                         "unlimited_ocr_vision_encoder")
    h = enc.int("hidden_size")
    inter = enc.int("intermediate_size")
    layers = enc.int("num_hidden_layers", hi=MAX_LAYERS)
    heads = enc.int("num_attention_heads")
    if h % heads:
        raise enc.error("num_attention_heads", f"({heads}) must divide hidden_size ({h})")
    patches, _ = _patches(enc)
    e = "model.vision_tower.vision_encoder"
    out += [Tensor(f"{e}.embeddings.class_embedding", (h,), "vision"),
            Tensor(f"{e}.embeddings.position_embedding.weight", (patches + 1, h), "vision")]
    _ln(out, f"{e}.pre_layrnorm", h)
    for i in range(layers):
        _encoder_block(out, f"{e}.encoder.layers.{i}", h, inter)
    _lin(out, "model.multi_modal_projector", text_hidden, down[1] + h)
    out.append(Tensor("model.view_separator", (text_hidden,), "vision"))
    out.append(Tensor("model.image_newline", (text_hidden,), "vision"))
    return tuple(out)
