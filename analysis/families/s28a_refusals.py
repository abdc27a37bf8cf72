"""Model types of the wave-s28 A audit that planner refuses by name (``REFUSED`` / ``REFUSED_ARCHITECTURES`` in
analysis/families/__init__.py) rather than read in part or as a generic decoder:

- LFM2-Audio / LFM2.5-Audio (LiquidAI/LFM2-Audio-1.5B, LFM2.5-Audio-1.5B: architectures LFM2AudioModel; the
  liquid-audio package's config has no model_type and keeps the backbone under ``lfm``, the MLX ports say
  ``lfm2_audio`` with a ``text_config``): an LFM2 backbone, a FastConformer audio encoder (``encoder``), and a
  ``depthformer`` that emits ``codebooks`` Mimi audio tokens per generated frame; read before as its LFM2 text model
  alone (with the lfm2_audio model_type) or "required field 'model_type' is missing".
- MERaLiON-2 (``meralion2``, MERaLiON2ForConditionalGeneration; MERaLiON/MERaLiON-2-10B, -3B; vLLM serves it through
  its plugin): a Whisper-large-v3 speech encoder (``speech_config``) and a speech-audio adapter in front of a Gemma-2
  decoder (``text_config``); read before as the Gemma-2 alone, short by the encoder and adapter.
- ARWKV (RWKV-Red-Team/ARWKV-*: architectures RwkvHybridForCausalLM, llama.cpp's ARwkv7Model): a Qwen2.5 whose
  attention was distilled into RWKV-7 time mixing; its low-rank decay / in-context-learning-rate / value-residual /
  gate projections are sized by its own ``lora_rank_*`` fields, with Qwen2's MLP, which no family of planner joins.
"""

from __future__ import annotations

_LFM2_AUDIO = ("beside its LFM2 backbone it runs a FastConformer audio encoder (encoder: feat_in mel features, "
               "d_model, n_layers) with an audio adapter, and a depthformer (depthformer: layers, dim) that decodes "
               "codebooks Mimi audio tokens for every audio frame the backbone emits (interleaved_n_text / "
               "interleaved_n_audio), plus per-codebook audio embeddings; counting the backbone alone falls short of "
               "the checkpoint and of every audio step's compute")
_MERALION2 = ("beside its Gemma-2 text decoder (text_config) it runs a Whisper-large-v3 speech encoder (speech_config) "
              "and a speech-audio adapter that projects its frames into the decoder (MERaLiON2SpeechAudioAdaper), "
              "whose widths the serving code hard-codes (15 stacked frames, 5 x d_model gate / pool projections in "
              "vLLM's MERaLiON-2 plugin; MERaLiON-1's adapter is another layout) rather than reads from the config; "
              "reading text_config alone, as before, falls short of the checkpoint by both")

#: model_type -> (title, reason)
REFUSED_S28A: dict[str, tuple[str, str]] = {
    "lfm2_audio": ("LiquidAI LFM2-Audio (LFM2AudioModel)", _LFM2_AUDIO),
    "meralion2": ("MERaLiON-2, MERaLiON2ForConditionalGeneration", _MERALION2),
}

_ARWKV = ("its layers are Qwen2.5 blocks whose self-attention was replaced by RWKV-7 time mixing (llama.cpp's "
          "ARwkv7Model): receptance / key / value projections, low-rank decay, in-context learning rate, "
          "value-residual and gate projections sized by its lora_rank_* fields and head_size, a recurrent state per "
          "head instead of a K/V cache, beside Qwen2's SwiGLU MLP; planner's rwkv7 family builds RWKV-7's own "
          "channel mixing, not this")
#: architecture -> (title, reason): refused whatever model_type the config names (or none)
REFUSED_ARCHITECTURES_S28A: dict[str, tuple[str, str]] = {
    "LFM2AudioModel": ("LiquidAI LFM2-Audio", _LFM2_AUDIO),
    "MERaLiON2ForConditionalGeneration": ("MERaLiON-2", _MERALION2),
    "RwkvHybridForCausalLM": ("ARWKV, an RWKV-7-attention distill of Qwen2.5", _ARWKV),
}
