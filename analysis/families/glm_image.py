"""GLM-Image (``glm_image`` wrapper, ``glm_image_text`` language model), as transformers'
``GlmImageForConditionalGeneration`` builds it (models/glm_image/modeling_glm_image.py).

* The language model (``model.language_model``): GLM-4-0414's sandwich block (input / post_self_attn /
  post_attention / post_mlp RMSNorms), q/k/v biased by ``attention_bias`` (default true), a bias-free o_proj of
  heads x head_dim, a fused bias-free ``gate_up_proj``, RoPE on ``partial_rotary_factor`` of head_dim (1.0 when
  absent; M-RoPE sections equal for text). Heads are hidden / num_attention_heads wide unless the config carries a
  ``head_dim``. The ``lm_head`` has ``vision_vocab_size`` rows (the image-token vocabulary it generates), not
  vocab_size, and is never tied (``_tied_weights_keys = {}``).
* ``model.visual``: (image_size // patch_size)^2 learned positions, a biased Conv2d patch embedding, ``depth``
  blocks of biased LayerNorms, a biased fused ``qkv`` and ``proj`` (``attention_bias``) and a biased fc1 / fc2 MLP;
  no merger, no projector.
* ``model.vqmodel``: only the codebook (num_embeddings x embed_dim) and the biased 1x1 ``quant_conv`` /
  ``post_quant_conv``: transformers builds no VQ encoder or decoder for GLM-Image.

Vision and VQ parts are counted in the checkpoint, not in the text decode. Checked against transformers on the meta
device (tests/test_glm_image.py).
"""

from __future__ import annotations

from ..fields import MAX_LAYERS, Fields
from ..spec import Tensor
from ..vision import _lin, _ln, vision_config_dict


def _sub(top: dict, key: str, where: str, family: str) -> Fields:
    from ..family_defaults import FAMILY_DEFAULTS

    return Fields(vision_config_dict(top.get(key), where, key), f"{where} ({key})",
                  defaults=FAMILY_DEFAULTS.get(family), nested=True, family=family)


def _square(f: Fields, key: str) -> int:
    raw = f.raw(key)
    if isinstance(raw, (list, tuple)):
        if len(raw) != 2 or raw[0] != raw[1]:
            raise f.error(key, "must be one integer or a square pair here")
        return f.derived(key, int(raw[0]), "a square pair")
    return f.int(key, hi=1 << 20)


def glm_image_towers(top: dict, text_hidden: int, where: str) -> tuple[Tensor, ...]:
    f = _sub(top, "vision_config", where, "glm_image_vision")
    h = f.int("hidden_size")
    inter = f.int("intermediate_size")
    depth = f.int("depth", hi=MAX_LAYERS)
    heads = f.int("num_heads")
    if h % heads:
        raise f.error("num_heads", f"({heads}) must divide hidden_size ({h})")
    bias = f.bool("attention_bias")
    size, patch = _square(f, "image_size"), _square(f, "patch_size")
    if patch > size:
        raise f.error("patch_size", "is larger than image_size")
    p = "model.visual"
    out = [Tensor(f"{p}.embeddings.position_embedding.weight", ((size // patch) ** 2, h), "vision"),
           Tensor(f"{p}.patch_embed.proj.weight", (h, f.int("in_channels", hi=64), patch, patch), "vision"),
           Tensor(f"{p}.patch_embed.proj.bias", (h,), "vision")]
    for i in range(depth):
        b = f"{p}.blocks.{i}"
        _ln(out, f"{b}.norm1", h)
        _ln(out, f"{b}.norm2", h)
        out.append(Tensor(f"{b}.attn.qkv.weight", (3 * h, h), "vision"))
        if bias:
            out.append(Tensor(f"{b}.attn.qkv.bias", (3 * h,), "vision"))
        out.append(Tensor(f"{b}.attn.proj.weight", (h, h), "vision"))
        if bias:
            out.append(Tensor(f"{b}.attn.proj.bias", (h,), "vision"))
        _lin(out, f"{b}.mlp.fc1", inter, h)
        _lin(out, f"{b}.mlp.fc2", h, inter)
    q = _sub(top, "vq_config", where, "glm_image_vqmodel")
    embed, latent = q.int("embed_dim", hi=1 << 16), q.int("latent_channels", hi=1 << 16)
    v = "model.vqmodel"
    out += [Tensor(f"{v}.quantize.embedding.weight", (q.int("num_embeddings", hi=1 << 24), embed), "vision"),
            Tensor(f"{v}.quant_conv.weight", (embed, latent, 1, 1), "vision"),
            Tensor(f"{v}.quant_conv.bias", (embed,), "vision"),
            Tensor(f"{v}.post_quant_conv.weight", (latent, embed, 1, 1), "vision"),
            Tensor(f"{v}.post_quant_conv.bias", (latent,), "vision")]
    return tuple(out)
