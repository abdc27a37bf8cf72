"""LLaVA-OneVision-1.5 and Ovis2.5 in transformers' own format (5.25: ``llava_onevision1_5``, ``ovis2_5``), and the
refusal of Physical Intelligence's pi0.5 (``pi05``).

LLaVA-OneVision-1.5 (``LlavaOnevision15ForConditionalGeneration``): ``model.language_model`` is text_config's model
(a Qwen3 by default; its own family counts it), ``lm_head`` tied by the wrapper's ``tie_word_embeddings`` alone
(default false), and ``model.visual`` the RICE ViT (``LlavaOnevision15VisionModel``):

- ``patch_embed.proj``: a bias-free Conv2d (in_channels -> hidden, patch x patch);
- ``cls_embeddings``: ``class_embedding`` (hidden) and ``class_pos_emb`` (1, hidden // num_heads // 2);
- ``pre_layernorm`` (LayerNorm), then ``depth`` Qwen-VL-style blocks (LayerNorms norm1 / norm2, a biased fused
  ``attn.qkv`` and ``attn.proj``, a biased fc1 / fc2 MLP); the 2-D rotary table is a buffer;
- ``merger``: LayerNorm(hidden), then Linear(hidden·m² -> hidden·m²) and Linear(hidden·m² -> out_hidden_size),
  both biased: Qwen3-VL's merger shape (``vision._qwen3_merger``).

Ovis2.5 (``Ovis2_5ForConditionalGeneration``): ``model.language_model`` is text_config's model (Qwen3 by default),
``lm_head`` tied by the wrapper's flag (default false); ``model.vision_tower`` a NaViT SigLIP (a biased Conv2d patch
embedding, (image_size // patch_size)² learned positions, SigLIP encoder layers, ``post_layernorm``, no pooling
head); ``model.multi_modal_projector``: the visual tokenizer (a bias-free Linear(hidden·m² -> vocab_size - indicators)
and a LayerNorm over those logits) and the visual embedding table, a bias-free Linear(vocab_size -> text hidden).
The hub's remote-code Ovis2.5 (``llm_config`` / ``vit_config``, the same model_type) stays with
analysis/families/ovis_remote.py: the two formats are told apart by those fields.

pi0.5 (``pi05``) and lmms-lab's remote-code LLaVA-OneVision-1.5 (``llavaonevision1_5``) are refused by name:
see ``PI05_WHY`` and ``ONEVISION15_REMOTE_WHY``.
"""

from __future__ import annotations

from dataclasses import replace

from ..errors import ConfigError
from ..fields import MAX_LAYERS
from ..spec import Tensor
from ..vision import _ln, _qkv_block, _qwen3_merger, _vision_fields, idefics_tower, vision_config_dict
from ..vision_wrappers import _tower_type
from . import ovis_remote
from .voxtral import text_config_dict

#: the vision_config model_types LlavaOnevision15VisionConfig takes as its own (its __post_init__ renames the
#: published checkpoints' "rice_vit" / "llava_onevision1_5")
ONEVISION15_TOWER_TYPES = ("llava_onevision1_5_vision", "rice_vit", "llava_onevision1_5")
#: LlavaOnevision15VisionConfig.attribute_map: the standard names of its fields
ONEVISION15_ALIASES = {"depth": ("num_hidden_layers",), "num_heads": ("num_attention_heads",),
                       "out_hidden_size": ("text_hidden_size",)}

#: lmms-lab's own checkpoints (LLaVA-OneVision-1.5-4B / 8B-Instruct: model_type llavaonevision1_5, remote code)
ONEVISION15_REMOTE_WHY = (
    "its hub remote-code format names a language model 'llavaonevision1_5_text' that planner would read as a generic "
    "Llama (a Qwen3-shaped model's q_norm / k_norm missed) beside an uncounted RICE ViT, and no modeling code or "
    "safetensors index was at hand to check that its tensors are transformers' llava_onevision1_5 ones; the "
    "transformers-format conversion (model_type llava_onevision1_5, e.g. Deep-VLM/LLaVA-OneVision-1.5-4B-Instruct-hf) "
    "is counted whole")
PI05_WHY = ("it is a vision-language-action policy, not a token-by-token language model: PI05ForConditionalGeneration "
            "has no generate(); sample_actions encodes the images and prompt once with PaliGemma (vlm_config) into a "
            "prefix KV cache, then runs the Gemma action expert (dit_config, adaptive RMSNorm conditioned on the "
            "flow-matching time) over a whole chunk of chunk_size noisy actions for num_inference_steps denoising "
            "steps; planner's decode model (one token per step through one decoder, a growing KV cache) cannot "
            "price that, nor does it count the second decoder, the action / time projections or the tower")


# ---- LLaVA-OneVision-1.5 ------------------------------------------------------------------------------------------

def llava_onevision15_vision(top: dict, text_hidden: int, where: str) -> tuple[Tensor, ...]:
    """LLaVA-OneVision-1.5's RICE ViT and its patch merger (``model.visual``)."""
    _tower_type(top, where, "llava_onevision1_5", ONEVISION15_TOWER_TYPES)
    vc = vision_config_dict(top.get("vision_config"), where)
    f = _vision_fields(vc, where, "llava_onevision1_5_vision")
    f.aliases.update(ONEVISION15_ALIASES)
    h = f.int("hidden_size")
    depth = f.int("depth", hi=MAX_LAYERS)
    heads = f.int("num_heads")
    if h % (4 * heads):
        raise f.error("num_heads", f"({heads}) times 4 must divide hidden_size ({h}): LlavaOnevision15VisionConfig "
                                   "requires it for the 2-D vision RoPE")
    inter = f.int("intermediate_size")
    patch = f.int("patch_size", hi=4096)  # a Conv2d kernel [patch, patch]: an int only
    merged = h * f.int("spatial_merge_size", hi=64) ** 2
    out_dim = f.int("out_hidden_size")
    if out_dim != text_hidden:
        raise f.error("out_hidden_size", f"({out_dim}) must equal text_config's hidden_size ({text_hidden}): "
                                         "LlavaOnevision15Config requires it")
    p = "model.visual"
    out = [Tensor(f"{p}.patch_embed.proj.weight", (h, f.int("in_channels", hi=64), patch, patch), "vision"),
           Tensor(f"{p}.cls_embeddings.class_embedding", (h,), "vision"),
           Tensor(f"{p}.cls_embeddings.class_pos_emb", (1, h // heads // 2), "vision")]
    _ln(out, f"{p}.pre_layernorm", h)
    for i in range(depth):
        _qkv_block(out, f"{p}.blocks.{i}", h, inter)
    _qwen3_merger(out, f"{p}.merger", h, merged, out_dim)
    return tuple(out)


# ---- Ovis2.5 ------------------------------------------------------------------------------------------------------

def _remote(cfg: dict, where: str) -> bool:
    """Whether an ``ovis2_5`` config is the hub's remote-code format (llm_config / vit_config) rather than
    transformers' (text_config / vision_config); a config mixing the two is refused."""
    remote = "llm_config" in cfg or "vit_config" in cfg
    if remote and "vision_config" in cfg:
        raise ConfigError(f"{where}: an ovis2_5 config names both vision_config (transformers' Ovis2_5Config) and "
                          "llm_config / vit_config (the hub's remote-code Ovis2.5)", "keep one format's fields")
    return remote


def ovis2_5_text_config(cfg: dict, where: str) -> dict:
    """The language model of an ``ovis2_5`` config. Transformers' format: text_config (Qwen3 when it names no
    model_type), tied by the wrapper's ``tie_word_embeddings`` alone (absent: false). The remote-code format's
    text_config (built from llm_config) is returned as it is."""
    if _remote(cfg, where):
        return cfg["text_config"]
    text = dict(text_config_dict(cfg, where))
    text.setdefault("model_type", "qwen3")
    tie = cfg.get("tie_word_embeddings", False)
    if not isinstance(tie, bool):
        raise ConfigError(f"{where}: field 'tie_word_embeddings' must be true or false, got {tie!r}")
    text["tie_word_embeddings"] = tie
    text.pop("tie_embedding", None)
    return text


def ovis2_5_vision(top: dict, text_hidden: int, where: str) -> tuple[Tensor, ...]:
    """Ovis2.5's vision tower, visual tokenizer and visual embedding table, in either format."""
    if _remote(top, where):
        return ovis_remote.ovis2_5_vision(top, text_hidden, where)
    _tower_type(top, where, "ovis2_5", ("ovis2_5_vision",))
    vc = vision_config_dict(top.get("vision_config"), where)
    p = "model.vision_tower"
    tower = [replace(t, name=t.name.replace(f"{p}.encoder.layers.", f"{p}.layers."))
             for t in idefics_tower(vc, where, family="ovis2_5_vision", prefix=p)]
    f = _vision_fields(vc, where, "ovis2_5_vision")
    vocab = f.int("vocab_size")
    indicators = f.int("num_visual_indicator_tokens", lo=0)
    if indicators >= vocab:
        raise f.error("num_visual_indicator_tokens", f"({indicators}) must be fewer than vocab_size ({vocab})")
    merge = f.int("spatial_merge_size", hi=64)
    q = "model.multi_modal_projector"
    out = list(tower)
    out.append(Tensor(f"{q}.visual_tokenizer.linear.weight", (vocab - indicators, f.int("hidden_size") * merge ** 2),
                      "vision"))
    _ln(out, f"{q}.visual_tokenizer.norm", vocab - indicators)
    out.append(Tensor(f"{q}.visual_embeddings_table.weight", (text_hidden, vocab), "vision"))
    return tuple(out)


__all__ = ["llava_onevision15_vision", "ovis2_5_text_config", "ovis2_5_vision", "ONEVISION15_REMOTE_WHY", "PI05_WHY"]
