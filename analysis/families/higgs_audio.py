"""Boson AI Higgs Audio v2 (``higgs_audio_v2``: bosonai/higgs-audio-v2-generation-3B-base), as transformers 5.24 builds
it (models/higgs_audio_v2/modeling_higgs_audio_v2.py, ``HiggsAudioV2ForConditionalGeneration``): a decoder-only
text-to-speech model that generates audio-codec frames token by token.

Llama-3.2-3B's decoder (HiggsAudioV2Config subclasses LlamaConfig: GQA, llama3-scaled RoPE, RMSNorms, SwiGLU) whose
every layer is DualFFN (``analysis.mixers.dual_ffn``: an audio path — ``audio_input_layernorm``,
``audio_post_attention_layernorm``, ``audio_mlp`` — beside the text one, one K/V cache). Model-level: the text
``embed_tokens`` (``vocab_size`` rows), the audio-codebook embedding ``model.embed_audio_tokens.embed_audio_tokens``
(``num_codebooks`` x ``codebook_size`` rows: a frame's input is the sum of its codebooks' rows; counted as the audio
part, kind ``audio``), the final norm, and the one output head ``audio_lm_head`` (hidden -> ``num_codebooks`` x
``codebook_size``: the logits of every codebook of the next frame at once), never tied (the class declares no tied
weights). So ``ModelSpec.vocab_size`` here is the head's width, and ``embedding_rows`` the text vocabulary.

``HiggsAudioV2ForConditionalGeneration(config, use_text_head=True)`` adds ``text_lm_head`` (vocab x hidden), used only
for a training loss; the default (``use_text_head=False``, what ``from_pretrained`` builds) has none and ignores the
checkpoint's copy (``_keys_to_ignore_on_load_unexpected``), so it is not counted; a caveat gives its size.
"""

from __future__ import annotations

from dataclasses import fields, replace

from ..fields import Fields
from ..mixers import DualFFNAttention
from ..spec import CheckpointLayout, ModelSpec, Tensor
from . import decoder
from .common import Traits

#: HiggsAudioV2Config is a LlamaConfig: Llama's row (attention_bias, mlp_bias, head_dim, llama3 RoPE)
TRAITS = Traits()
#: the checkpoint's output head is ``audio_lm_head`` (ours: lm_head); its codebook table keeps its own name
LAYOUT = CheckpointLayout(renames=(("audio_lm_head.", "lm_head."),))
#: HiggsAudioV2Config.__post_init__'s rope_parameters when the config has none (Llama 3.2's llama3 scaling)
ROPE_DEFAULT = {"factor": 32.0, "rope_theta": 500000.0, "high_freq_factor": 0.5, "low_freq_factor": 0.125,
                "original_max_position_embeddings": 1024, "rope_type": "llama3"}


def build(f: Fields, model_type: str) -> ModelSpec:
    if f.has("tie_word_embeddings") and f.bool("tie_word_embeddings"):
        raise f.error("tie_word_embeddings", "is true, but Higgs Audio v2's output head (audio_lm_head, num_codebooks x "
                                             "codebook_size rows) is never tied to the text embedding")
    if not any(k in f.cfg for k in ("rope_parameters", "rope_scaling", "rope_theta")):
        f.defaults["rope_parameters"] = dict(ROPE_DEFAULT)  # a class default, as transformers fills it in
    spec = decoder.build(f, model_type, TRAITS)
    codebooks = f.int("num_codebooks", hi=1 << 10)
    size = f.int("codebook_size", hi=1 << 20)
    layers = []
    for layer in spec.layers:
        m, mlp = layer.mixer, layer.ffn
        mixer = DualFFNAttention(**{x.name: getattr(m, x.name) for x in fields(m)},
                                 audio_intermediate_size=mlp.intermediate_size, audio_mlp_bias=mlp.bias)
        layers.append(replace(layer, mixer=mixer))
    audio_rows = codebooks * size
    text_vocab = spec.vocab_size
    embed_audio = Tensor("model.embed_audio_tokens.embed_audio_tokens.weight", (audio_rows, spec.hidden_size), "audio")
    return replace(
        spec, layers=tuple(layers), vocab_size=audio_rows, embedding_rows=text_vocab, tie_word_embeddings=False,
        vision=(embed_audio,), checkpoint=LAYOUT,
        caveats=spec.caveats + (
            f"Higgs Audio v2: a decode step generates one audio frame (the {codebooks} codebooks' tokens at once: its "
            f"input the sum of {codebooks} rows of the {audio_rows:,}-row codebook embedding, its logits the "
            f"{audio_rows:,}-wide audio_lm_head, so vocab_size reads {audio_rows:,}; the text vocabulary "
            f"({text_vocab:,}) is the embedding's) and runs every layer's audio path; each layer's text path (its "
            "norms and MLP: text tokens, in prefill) counts in the parameters and weights memory, not in the active "
            f"ones. The checkpoint's text_lm_head ({text_vocab * spec.hidden_size:,} parameters: training only) is "
            "not counted: transformers' default model (use_text_head=False) neither builds nor loads it",),
    )
