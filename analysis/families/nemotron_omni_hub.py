"""NVIDIA Nemotron 3 Omni in the hub's own (remote-code) format: ``NemotronH_Nano_Omni_Reasoning_V3``
(nvidia/Nemotron-3-Nano-Omni-30B-A3B-Reasoning-*), ``NemotronH_Super_Omni_Reasoning_V3`` and
``NemotronH_Omni_Reasoning_V3``. Their config.json names the architecture as its model_type, keeps the language model in
``llm_config``, the RADIO tower in ``vision_config`` (with its timm ``args``) and the Parakeet sound encoder in
``sound_config``. vLLM serves all three with ``NemotronH_Nano_VL_V2`` (nano_nemotron_vl.py): the same RADIO tower and
bias-free RMSNorm / ReLU² ``mlp1`` as NVIDIA-Nemotron-Nano-12B-v2-VL (families/nemotron_nano_vl.py), plus
``sound_encoder`` = vLLM parakeet.py ``ProjectedParakeet``: transformers' ParakeetEncoder built from sound_config with
attention_bias and scale_input forced off (``sound_encoder.encoder.*``) and ``ParakeetProjection`` (RMSNorm, Linear,
ReLU², Linear, biased by projection_bias: ``sound_projection.norm / linear1 / linear2``).

Checkpoints whose language model has MTP layers also store the vision tower's final LayerNorm
(``vision_projector.vision_final_layernorm``, Megatron-Core adds it to every block built from the shared config;
transformers' conversion_mapping renames it to ``vision_final_layernorm``); vLLM's loader skips it, so it is counted as
stored. transformers' ``nemotron_h_omni`` (vision_wrappers.nemotron_h_omni_vision) is the same checkpoint renamed:
its RadioModel differs only by the two identity LayerScale vectors per block the timm tower does not have.
KV cache and Mamba state come from the language model alone."""

from __future__ import annotations

from ..fields import MAX_LAYERS, Fields
from ..spec import Tensor
from ..vision import _ln
from ..vision_wrappers import nemotron_omni_audio
from .nemotron_nano_vl import _top_int, nano_vl_v2_text_config, nano_vl_v2_vision

#: the hub model_types (= architectures[0]) this module reads
MODEL_TYPES = ("NemotronH_Nano_Omni_Reasoning_V3", "NemotronH_Super_Omni_Reasoning_V3", "NemotronH_Omni_Reasoning_V3")


def text_config(cfg: dict, where: str) -> dict:
    """The hub's configuration builds ``NemotronHConfig(**llm_config)``, as NemotronH_Nano_VL_V2's does."""
    return nano_vl_v2_text_config(cfg, where)


def towers(top: dict, text_hidden: int, where: str) -> tuple[Tensor, ...]:
    """RADIO + mlp1 (as NemotronH_Nano_VL_V2), the MTP checkpoints' vision_final_layernorm, and the sound branch."""
    out = list(nano_vl_v2_vision({k: v for k, v in top.items() if k != "sound_config"}, text_hidden, where))
    llm = top.get("llm_config")
    lf = Fields(llm if isinstance(llm, dict) else {}, f"{where} (llm_config)", nested=True)
    if lf.int("num_nextn_predict_layers", 0, lo=0, hi=MAX_LAYERS, note="absent: NemotronHConfig's default (0)"):
        _ln(out, "vision_projector.vision_final_layernorm", _top_int(Fields(top, where), "vit_hidden_size"))
    sound = top.get("sound_config")
    if sound is not None:
        out += nemotron_omni_audio(sound, text_hidden, where, tower="sound_encoder.encoder", proj="sound_projection",
                                   names=("norm", "linear1", "linear2"))
    return tuple(out)
