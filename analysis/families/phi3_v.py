"""Microsoft Phi-3-vision / Phi-3.5-vision (``phi3_v``, remote code: modeling_phi3_v.py, image_embedding_phi3_v.py on
the hub; vLLM's vllm/model_executor/models/phi3v.py). No transformers class: counted from the remote code's shapes.

Its config.json is flat: Phi-3's text fields at the top level (read as ``phi3``: ``FLAT_TEXT_WRAPPERS``), beside
``img_processor`` and ``embd_layer``. Phi3VModel builds ``model.vision_embed_tokens`` (Phi3ImageEmbedding) only
when ``embd_layer`` is an object (Phi3VConfig's default, the string "default", builds none: a plain Phi-3):

- ``img_processor``: must name ``clip_vision_model`` / ``openai/clip-vit-large-patch14-336`` (anything else is a
  NotImplementedError / an assert in the remote code); the tower is then transformers' CLIPVisionModel with the
  code's fixed CLIP ViT-L/14-336 config (hidden 1024, intermediate 4096, 24 layers, 16 heads, 336-pixel images in
  14-pixel patches), all 24 layers and post_layernorm in the checkpoint (vLLM builds the tower only up to
  ``layer_idx`` (-2) and skips the rest when it loads: it holds 23 layers; the checkpoint and this count hold 24).
  ``image_dim_out`` (required; 1024) sizes what follows.
- ``glb_GN`` (1, 1, 4 × image_dim_out) and ``sub_GN`` (1, 1, 1, 4 × image_dim_out) when
  ``embd_layer.with_learnable_separator`` (which must equal ``use_hd_transform``: the code asserts it).
- ``img_projection``: ``projection_cls`` "linear" (the default): Linear(image_dim_out, hidden); "mlp": Linear(d,
  hidden), GELU, Linear(hidden, hidden) with d = 4 × image_dim_out under the HD transform (the 2 × 2 token merge),
  image_dim_out without; every Linear biased.

lm_head follows the flat config's tie_word_embeddings (Phi-3's default: untied).
"""

from __future__ import annotations

from ..errors import ConfigError, UnsupportedModelError, short
from ..spec import Tensor
from ..vision import clip_tensors

#: image_embedding_phi3_v.py's CLIP_VIT_LARGE_PATCH14_336_CONFIG (the tower whatever else the config says)
CLIP_VIT_L_336 = {"model_type": "clip_vision_model", "hidden_size": 1024, "intermediate_size": 4096,
                  "num_hidden_layers": 24, "num_attention_heads": 16, "num_channels": 3, "image_size": 336,
                  "patch_size": 14}
CLIP_NAME = "openai/clip-vit-large-patch14-336"
PREFIX = "model.vision_embed_tokens"


def _flag(d: dict, key: str, where: str) -> bool:
    v = d.get(key, False)
    if not isinstance(v, bool):
        raise ConfigError(f"{where}: field 'embd_layer.{key}' must be true or false, got {short(v)}")
    return v


def phi3_v_vision(top: dict, text_hidden: int, where: str) -> tuple[Tensor, ...]:
    embd = top.get("embd_layer", "default")
    if not isinstance(embd, dict):
        return ()  # Phi3VModel: vision_embed_tokens = None unless embd_layer is a dict
    img = top.get("img_processor")
    if not isinstance(img, dict):
        raise ConfigError(f"{where}: field 'img_processor' must be an object (Phi-3-vision's image encoder), "
                          f"got {short(img)}")
    if img.get("name") != "clip_vision_model" or img.get("model_name") != CLIP_NAME:
        raise UnsupportedModelError(
            f"{where}: img_processor {short(img.get('name'))} / {short(img.get('model_name'))} is not one Phi-3-vision "
            "builds", f"its code builds only name 'clip_vision_model' with model_name '{CLIP_NAME}'")
    for key in ("image_dim_out", "num_img_tokens"):
        if key not in img:
            raise ConfigError(f"{where}: field 'img_processor.{key}' is missing (Phi-3-vision's code requires it)")
    dim = img["image_dim_out"]
    if not isinstance(dim, int) or isinstance(dim, bool) or not 0 < dim <= 1 << 20:
        raise ConfigError(f"{where}: field 'img_processor.image_dim_out' must be a positive integer, got {short(dim)}")
    hd = _flag(embd, "use_hd_transform", where)
    if hd != _flag(embd, "with_learnable_separator", where):
        raise ConfigError(f"{where}: fields 'embd_layer.use_hd_transform' and 'embd_layer.with_learnable_separator' "
                          "must be equal (Phi-3-vision's code asserts it)")
    proj = embd.get("projection_cls", "linear")
    if proj not in ("linear", "mlp"):
        raise UnsupportedModelError(f"{where}: embd_layer.projection_cls {short(proj)} is not one Phi-3-vision builds",
                                    "its code builds 'linear' or 'mlp'")
    out = clip_tensors(CLIP_VIT_L_336, where, prefix=f"{PREFIX}.img_processor.vision_model")
    if hd:
        out.append(Tensor(f"{PREFIX}.glb_GN", (1, 1, 4 * dim), "vision"))
        out.append(Tensor(f"{PREFIX}.sub_GN", (1, 1, 1, 4 * dim), "vision"))
    d_in = 4 * dim if hd else dim
    linears = ((f"{PREFIX}.img_projection", text_hidden, d_in),) if proj == "linear" else (
        (f"{PREFIX}.img_projection.0", text_hidden, d_in), (f"{PREFIX}.img_projection.2", text_hidden, text_hidden))
    for name, n_out, n_in in linears:
        out.append(Tensor(f"{name}.weight", (n_out, n_in), "vision"))
        out.append(Tensor(f"{name}.bias", (n_out,), "vision"))
    return tuple(out)
