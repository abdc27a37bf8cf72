"""MiniMax-VL-01 (``minimax_vl_01``: MiniMaxAI/MiniMax-VL-01; remote code, no class in transformers 5.24), counted
as vLLM builds it (vllm/model_executor/models/minimax_vl_01.py, vllm/transformers_utils/configs/minimax_vl_01.py)
and as its checkpoint stores it (the key manifest of MiniMax-VL-01's index, written out in huggingface/transformers
tests/models/minimax_vl_01/test_conversion_minimax_vl_01.py: 8,637 keys).

- The language model: ``text_config`` read as ``MiniMaxText01Config`` whatever its model_type says (vLLM's config
  class), i.e. MiniMax-Text-01 (``minimax_text_01``: lightning attention, a softmax layer every 8th, 32 experts;
  analysis/families/remote_moe.py, which reads the hub's one-element ``shared_intermediate_size`` list, [0]).
- The tower: CLIP's ViT (``clip_vision_model``; vLLM's default when vision_config is absent: ViT-L/14 at 336) as the
  checkpoint stores it: class / patch / position embeddings, ``pre_layrnorm``, every encoder layer, and no
  ``post_layernorm`` (vLLM builds the tower with ``require_post_norm=False``; the manifest has none).
- The projector: ``linear_1`` (vision hidden -> text hidden) and ``linear_2`` (text hidden square), both biased
  (vLLM passes ``multimodal_projector_bias=True`` whatever the config says), and ``image_newline`` (text hidden).
"""

from __future__ import annotations

from ..errors import UnsupportedModelError
from ..fields import short
from ..spec import Tensor
from .voxtral import required_sub_config
from ..vision import LLAVA_VISION_DEFAULT, _lin, clip_tensors, vision_config_dict


def text_config(cfg: dict, where: str) -> dict:
    """``text_config`` as vLLM's MiniMaxVL01Config reads it: MiniMaxText01Config (model_type minimax_text_01)."""
    text = required_sub_config(cfg, "text_config", where,
                               "MiniMax-VL-01's language model (MiniMax-Text-01's fields) is in text_config")
    mt = text.get("model_type", "minimax_text_01")
    if mt not in ("minimax_text_01", "minimax_m1", "minimax"):
        raise UnsupportedModelError(f"{where}: minimax_vl_01 with text_config.model_type {short(mt)} is not modelled",
                                    "MiniMaxVL01Config reads text_config as MiniMaxText01Config")
    return dict(text, model_type="minimax_text_01")


def minimax_vl_01_vision(top: dict, text_hidden: int, where: str) -> tuple[Tensor, ...]:
    vc = top.get("vision_config")
    vc = LLAVA_VISION_DEFAULT if vc is None else vision_config_dict(vc, where)
    mt = vc.get("model_type", "clip_vision_model")
    if mt != "clip_vision_model":
        raise UnsupportedModelError(f"{where}: minimax_vl_01's vision tower {short(mt)} is not one we can count",
                                    "MiniMax-VL-01's checkpoint is a CLIP ViT (clip_vision_model)")
    prefix = "model.vision_tower.vision_model"
    tower = [t for t in clip_tensors(vc, where, prefix=prefix) if not t.name.startswith(f"{prefix}.post_layernorm")]
    vh = tower[0].shape[0]  # class_embedding: (hidden,)
    out = list(tower)
    _lin(out, "model.multi_modal_projector.linear_1", text_hidden, vh)
    _lin(out, "model.multi_modal_projector.linear_2", text_hidden, text_hidden)
    out.append(Tensor("model.image_newline", (text_hidden,), "vision"))
    return tuple(out)


#: Remote-code model_types refused by name (title, reason): no transformers class, and nothing found to count them
#: exactly from (no published config.json and checkpoint index, or shapes the config does not give).
REFUSED_REMOTE: dict[str, tuple[str, str]] = {
    "nemotron_flash": (
        "NVIDIA Nemotron-Flash-1B / -3B, remote code",
        "a hybrid of Mamba2, DeltaNet and attention layers (layer_types 'm2' / 'deltanet' / 'a', 'f' FFN-only "
        "layers) with learned memory tokens, whose checkpoint shapes do not follow its config.json: vLLM's "
        "nemotron_flash config hard-codes the 3B checkpoint's Mamba2 widths (in_proj 2 x 6320, conv1d 6400, "
        "norm / out_proj 6144, 96 heads of 64) where mamba_expand says 2, and no published config.json or checkpoint "
        "index of either model was at hand to count the 1B or the 3B exactly"),
    "dots_vlm": (
        "rednote-hilab dots.vlm1, remote code",
        "a DeepSeek-V3 language model with a 1.2B NaViT (dots_vit) tower and merger; no published config.json or "
        "checkpoint index of dots.vlm1 was at hand to fix which sub-config holds the language model and the tower's "
        "and merger's shapes"),
    "eagle_2_5_vl": (
        "NVIDIA Eagle 2.5-VL, remote code",
        "InternVL's layout under other names (vLLM eagle2_5_vl.py: a SigLIP vision_model cut to select_layer, "
        "mlp1 = LayerNorm / Linear / GELU / Linear over the pixel-shuffled features, a Qwen2 text_config); no "
        "published config.json or checkpoint index of Eagle2.5-8B was at hand to fix its tower (image size, depth, "
        "whether the checkpoint keeps SigLIP's pooling head) and its language model exactly. The one real "
        "eagle_2_5_vl config found (GR00T N1.5's backbone, NVIDIA/Isaac-GR00T eagle2_hg_model/config.json: Qwen3-1.7B, "
        "SigLIP at 224) sets mlp_connector_layers 1 and use_pixel_shuffle false, a single Linear connector vLLM's "
        "mlp1 does not build, inside an action policy that keeps only part of that language model"),
    "isaac": (
        "Perceptron Isaac-0.1, remote code",
        "its vision encoder and config layout were not at hand (no published config.json, modeling code or "
        "checkpoint index found), so neither the tower nor which fields hold the language model can be read"),
}
