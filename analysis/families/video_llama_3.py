"""VideoLLaMA3 (``video_llama_3``, VideoLlama3ForConditionalGeneration) vision tower and projector, as transformers'
modeling_video_llama_3.py builds them; the language model is the ``text_config``'s own family (Qwen2 by default).

The tower (``video_llama_3_vision``, ``model.vision_model``): SigLIP's encoder without positions or head (2D RoPE:
no parameters): a biased Conv2d patch embedding (num_channels → hidden, kernel = stride = patch_size),
``num_hidden_layers`` SigLIP layers (LayerNorms, biased q/k/v/out_proj, biased fc1 / fc2) and a ``post_layernorm``.
The projector (``model.projector.readout``): a biased Linear vision hidden → text hidden, GELU, a biased Linear
text hidden → text hidden. Tied when the wrapper's or the text_config's flag is set (VideoLlama3Config forwards it).
"""

from __future__ import annotations

from ..fields import MAX_LAYERS
from ..spec import Tensor
from ..vision import _encoder_block, _lin, _ln, _vision_fields, vision_tower_config


def video_llama_3_vision(top: dict, text_hidden: int, where: str) -> tuple[Tensor, ...]:
    vc = vision_tower_config(top, where, "video_llama_3_vision", "VideoLLaMA3",
                             "VideoLlama3Config builds its tower as video_llama_3_vision")
    f = _vision_fields(vc, where, "video_llama_3_vision")
    h = f.int("hidden_size")
    heads = f.int("num_attention_heads")
    if h % heads:
        raise f.error("num_attention_heads", f"({heads}) must divide the vision hidden_size ({h})")
    inter = f.int("intermediate_size")
    layers = f.int("num_hidden_layers", hi=MAX_LAYERS)
    channels = f.int("num_channels", hi=64)
    patch = f.int("patch_size", hi=4096)  # the embedding views pixels as (channels, patch, patch): one side
    p = "model.vision_model"
    out = [Tensor(f"{p}.embeddings.patch_embedding.weight", (h, channels, patch, patch), "vision"),
           Tensor(f"{p}.embeddings.patch_embedding.bias", (h,), "vision")]
    for i in range(layers):
        _encoder_block(out, f"{p}.encoder.layers.{i}", h, inter)
    _ln(out, f"{p}.post_layernorm", h)
    _lin(out, "model.projector.readout.0", text_hidden, h)
    _lin(out, "model.projector.readout.2", text_hidden, text_hidden)
    return tuple(out)
