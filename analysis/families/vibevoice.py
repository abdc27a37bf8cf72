"""VibeVoice TTS (``vibevoice``: vibevoice/VibeVoice-1.5B-hf, VibeVoice-7B-hf), counted whole as transformers'
``VibeVoiceForConditionalGeneration`` builds it (models/vibevoice/modeling_vibevoice.py, transformers 5.24).

* ``model.language_model`` + ``lm_head``: Qwen2 (``text_config``, Qwen2Config's class defaults under it), read as
  ``vibevoice_text`` — Qwen2's registry row, with the caveat below. lm_head is tied by text_config's own
  ``tie_word_embeddings`` (VibeVoiceConfig.__post_init__ copies it over the wrapper's; Qwen2's default: untied).
* ``model.audio_tower`` (``audio_config``, VibeVoiceAcousticTokenizerModel; kind ``audio``): the σ-VAE acoustic
  tokenizer, its encoder (VibeVoiceAcousticTokenizerEncoderModel of the same fields: analysis.families.audio_llm's
  ``_tokenizer_encoder``, as VibeVoice-ASR) and its decoder (the depths and ratios reversed): a causal conv from
  hidden_size to num_filters x 2^(len(depths) - 1) and its ConvNeXt-1d stage, one causal ConvTranspose1d (kernel
  2 x ratio, channels halving) and stage per upsampling ratio, and a causal conv head to ``channels``.
* ``model.semantic_tokenizer_encoder`` (``semantic_model_config``: hidden_size 128 only when the config is absent)
  and the two connectors ``multi_modal_projector`` (acoustic) and ``semantic_connector``: a biased Linear to the
  text hidden, an RMSNorm, a biased square Linear.
* ``model.diffusion_head`` (``diffusion_head_config``: hidden_size and latent_size are set from the language model
  and the acoustic tokenizer): bias-free ``noisy_images_proj`` (latent -> hidden), ``cond_proj``, the timestep MLP
  (frequency_embedding_size -> hidden -> hidden), ``num_hidden_layers`` adaLN layers (a SwiGLU MLP of
  intermediate_size, biased as ``mlp_bias`` says, an RMSNorm, a Linear to 3 x hidden) and the final layer (a Linear
  to 2 x hidden and one to latent_size); the two scalars ``latent_scaling_factor`` / ``latent_bias_factor``.

The decode trace is the language model's next-token step. generate() (generation_vibevoice.py) does more per speech
token, none of it a decoder step the trace can hold: the classifier-free-guidance negative branch runs a second
language-model step over its own K/V cache; the diffusion head runs ``num_diffusion_steps`` times (10 by default)
on the positive and negative conditions; the acoustic decoder and the semantic encoder run their streaming convs on
the new latent, and both connectors build the next step's input embedding. Those parameters are counted (kind
``audio``); their FLOPs, the second K/V cache and its step are not in the trace (a caveat says so).

Checked against transformers on the meta device (tests/test_vibevoice.py). VibeVoice-1.5B-hf, as its config.json is
quoted by vllm-omni's tests (the converted checkpoint, transformers 5.13.0.dev0, the diffusion-head fields then
flat at the top level), is 2,704,021,987 parameters: the original microsoft/VibeVoice-1.5B's 2704.0 M in bf16
(acoustic encoder 343,696,032 and decoder 343,695,969, semantic encoder 344,613,600, diffusion head 123,279,360,
connectors 5,022,720, the tied Qwen2.5-1.5B 1,543,714,304, the two scalars). VibeVoice-7B-hf, its config as
transformers' convert_vibevoice_to_hf.py derives it from VibeVoice-Large's (Qwen2.5-7B untied, the diffusion head's
head_ffn_ratio 3.0 x 3584 = 10,752), is 9,343,355,363 (VibeVoice-Large's 18.7 GB in bf16). A config whose flat
top-level diffusion fields (``num_head_layers``, ``intermediate_size``, ``frequency_embedding_size``, ``mlp_bias``)
differ from what transformers 5.24 builds (it reads only ``diffusion_head_config``) is refused: that checkpoint
would not load into it.
"""

from __future__ import annotations

from dataclasses import replace

from ..errors import UnsupportedModelError
from ..fields import MAX_LAYERS, Fields, short
from ..spec import ModelSpec, Tensor
from .audio_llm import VIBEVOICE_ENCODER_DEFAULTS, _convnext, _linear, _sub, _tokenizer_encoder
from .voxtral import text_config_dict

#: VibeVoiceDiffusionHeadConfig's class defaults (transformers 5.24; tests/test_vibevoice.py checks them against the
#: installed class); hidden_size and latent_size are overwritten by VibeVoiceConfig.__post_init__
DIFFUSION_DEFAULTS = {"num_hidden_layers": 4, "intermediate_size": 4608, "frequency_embedding_size": 256,
                      "mlp_bias": False}
#: the same fields as the pre-release converted configs kept them, flat at the top level
FLAT_DIFFUSION = {"num_head_layers": "num_hidden_layers", "intermediate_size": "intermediate_size",
                  "frequency_embedding_size": "frequency_embedding_size", "mlp_bias": "mlp_bias"}

CAVEAT = ("VibeVoice (TTS): the decode trace, FLOPs and K/V bytes are the Qwen2 language model's next-token step; per "
          "speech token generate() also runs the classifier-free-guidance negative branch (a second language-model "
          "step over its own K/V cache, up to a second cache per sequence), the diffusion head num_diffusion_steps "
          "times (10 by default) on two rows, the acoustic decoder's and semantic encoder's streaming convolutions "
          "and the two connectors: their parameters are counted (kind audio), their work and that second cache are "
          "not in the trace")


def vibevoice_text_config(cfg: dict, where: str) -> dict:
    """VibeVoiceConfig's text_config (Qwen2; its class defaults when absent), read as ``vibevoice_text``, with the
    tie flag transformers uses: text_config's own (VibeVoiceConfig.__post_init__), Qwen2's default false when absent."""
    text = text_config_dict(cfg, where)
    mt = text.get("model_type", "qwen2")
    if mt != "qwen2":
        raise UnsupportedModelError(f"{where}: field 'text_config.model_type' is {short(mt)}: VibeVoice is modelled "
                                    "with its Qwen2 language model (every released checkpoint)",
                                    "a VibeVoice config.json names text_config.model_type 'qwen2'")
    return {**text, "model_type": "vibevoice_text", "tie_word_embeddings": text.get("tie_word_embeddings", False)}


def build_text(f: Fields, model_type: str) -> ModelSpec:
    """VibeVoice's language model: Qwen2 (its registry row and class defaults), the trace caveat added."""
    from . import REGISTRY
    from . import decoder

    from ..family_defaults import FAMILY_DEFAULTS

    f.defaults = dict(FAMILY_DEFAULTS["qwen2"])  # Qwen2Config's, text_config being a Qwen2Config
    f.family = "qwen2"
    spec = decoder.build(f, "qwen2", REGISTRY["qwen2"])
    return replace(spec, caveats=(*spec.caveats, CAVEAT))


def _renamed(tensors: list[Tensor], old: str, new: str) -> list[Tensor]:
    return [Tensor(new + t.name[len(old):], t.shape, t.kind) if t.name.startswith(old) else t for t in tensors]


def _acoustic(top: dict, where: str) -> tuple[list[Tensor], int]:
    """``model.audio_tower``: the encoder (audio_llm's walker over the same fields, as the encoder_config property
    builds it) and the decoder (depths and ratios reversed)."""
    raw = _sub(top, "audio_config", where, "vibevoice_acoustic_tokenizer", "VibeVoice's acoustic tokenizer", {}).cfg
    # VibeVoiceAcousticTokenizerConfig.encoder_config: VibeVoiceAcousticTokenizerEncoderConfig(**self.to_dict())
    shim = {"audio_config": dict(raw, model_type="vibevoice_acoustic_tokenizer_encoder")}
    enc, hidden = _tokenizer_encoder(shim, "audio_config", where, VIBEVOICE_ENCODER_DEFAULTS)
    out = _renamed(enc, "model.audio.", "model.audio_tower.encoder.")

    # the decoder: VibeVoiceAcousticTokenizerDecoderModel of decoder_config (depths reversed, upsampling_ratios the
    # downsampling ratios reversed); the fields were checked by the encoder's walker above
    f = _sub(shim, "audio_config", where, "vibevoice_acoustic_tokenizer_encoder", "VibeVoice's acoustic tokenizer",
             VIBEVOICE_ENCODER_DEFAULTS)
    ratios = f.int_list("downsampling_ratios")
    ratios = list(reversed(VIBEVOICE_ENCODER_DEFAULTS["downsampling_ratios"] if ratios is None else ratios))
    depths = f.int_list("depths", hi=MAX_LAYERS)
    depths = list(reversed(VIBEVOICE_ENCODER_DEFAULTS["depths"] if depths is None else depths))
    nf, kernel, ffn = f.int("num_filters"), f.int("kernel_size", hi=1 << 12), f.int("ffn_expansion", hi=1 << 10)
    n = len(depths)
    p = "model.audio_tower.decoder"
    c = nf * 2 ** (n - 1)
    out += [Tensor(f"{p}.stem.conv.conv.weight", (c, hidden, kernel), "audio"),
            Tensor(f"{p}.stem.conv.conv.bias", (c,), "audio")]
    for j in range(depths[0]):
        _convnext(out, f"{p}.stem.stage.{j}", c, kernel, ffn)
    for s, ratio in enumerate(ratios):
        c_in, c = nf * 2 ** (n - 1 - s), nf * 2 ** (n - 2 - s)
        # nn.ConvTranspose1d's weight is (in_channels, out_channels, kernel)
        out += [Tensor(f"{p}.conv_layers.{s}.convtr.convtr.weight", (c_in, c, 2 * ratio), "audio"),
                Tensor(f"{p}.conv_layers.{s}.convtr.convtr.bias", (c,), "audio")]
        for j in range(depths[s + 1]):
            _convnext(out, f"{p}.conv_layers.{s}.stage.{j}", c, kernel, ffn)
    channels = f.int("channels", hi=1 << 10)
    out += [Tensor(f"{p}.head.conv.weight", (channels, nf, kernel), "audio"),
            Tensor(f"{p}.head.conv.bias", (channels,), "audio")]
    return out, hidden


def _connector(out: list[Tensor], p: str, n_in: int, hidden: int) -> None:
    _linear(out, f"{p}.linear_1", hidden, n_in)
    out.append(Tensor(f"{p}.act.weight", (hidden,), "audio"))  # VibeVoiceRMSNorm, under the name `act`
    _linear(out, f"{p}.linear_2", hidden, hidden)


def _diffusion_fields(top: dict, where: str) -> Fields:
    raw = top.get("diffusion_head_config")
    if raw is None:
        # the pre-release converted format kept these fields flat; transformers 5.24 reads only diffusion_head_config
        # (absent: its class defaults), so a flat value that differs would build a head the checkpoint does not fit
        for key, field in FLAT_DIFFUSION.items():
            if key in top and top[key] != DIFFUSION_DEFAULTS[field]:
                raise UnsupportedModelError(
                    f"{where}: field '{key}' ({short(top[key])}) is a diffusion-head field of the pre-release "
                    f"converted format: transformers 5.24 reads diffusion_head_config only and would build {field} "
                    f"{DIFFUSION_DEFAULTS[field]}, which that checkpoint does not fit",
                    f"move it under diffusion_head_config as '{field}'")
    return _sub(top, "diffusion_head_config", where, "vibevoice_diffusion", "VibeVoice's diffusion head",
                DIFFUSION_DEFAULTS)


def _diffusion_head(out: list[Tensor], f: Fields, hidden: int, latent: int) -> None:
    p = "model.diffusion_head"
    inter = f.int("intermediate_size")
    freq = f.int("frequency_embedding_size", hi=1 << 16)
    if freq % 2:  # VibeVoiceDiffusionHeadSinusoidalEmbedding concatenates cos and sin of freq // 2 frequencies
        raise f.error("frequency_embedding_size", f"({freq}) must be even: the timestep embedding is cos and sin of "
                                                  "half as many frequencies, fed to a Linear of that width")
    bias = f.bool("mlp_bias")
    _linear(out, f"{p}.noisy_images_proj", hidden, latent, bias=False)
    _linear(out, f"{p}.cond_proj", hidden, hidden, bias=False)
    _linear(out, f"{p}.timestep_proj.fc1", hidden, freq, bias=False)
    _linear(out, f"{p}.timestep_proj.fc2", hidden, hidden, bias=False)
    for i in range(f.int("num_hidden_layers", lo=0, hi=MAX_LAYERS)):
        b = f"{p}.layers.{i}"
        _linear(out, f"{b}.ffn.gate_proj", inter, hidden, bias)
        _linear(out, f"{b}.ffn.up_proj", inter, hidden, bias)
        _linear(out, f"{b}.ffn.down_proj", hidden, inter, bias)
        out.append(Tensor(f"{b}.norm.weight", (hidden,), "audio"))
        _linear(out, f"{b}.linear", 3 * hidden, hidden, bias=False)
    _linear(out, f"{p}.final_layer.linear_1", 2 * hidden, hidden, bias=False)
    _linear(out, f"{p}.final_layer.linear_2", latent, hidden, bias=False)


def vibevoice_towers(top: dict, text_hidden: int, where: str) -> tuple[Tensor, ...]:
    """Everything of VibeVoiceForConditionalGeneration beside the language model and lm_head (kind ``audio``)."""
    diffusion = _diffusion_fields(top, where)  # (the flat-format check first: it is about the whole config)
    out, latent = _acoustic(top, where)
    # the semantic encoder: VibeVoiceConfig's init_kwargs (hidden_size 128) only when semantic_model_config is absent
    _sub(top, "semantic_model_config", where, "vibevoice_acoustic_tokenizer_encoder", "VibeVoice's semantic tokenizer",
         {})
    semantic_defaults = VIBEVOICE_ENCODER_DEFAULTS if top.get("semantic_model_config") is not None else \
        dict(VIBEVOICE_ENCODER_DEFAULTS, hidden_size=128)
    sem, semantic = _tokenizer_encoder(top, "semantic_model_config", where, semantic_defaults)
    out += _renamed(sem, "model.semantic_model.", "model.semantic_tokenizer_encoder.")
    _connector(out, "model.multi_modal_projector", latent, text_hidden)
    _connector(out, "model.semantic_connector", semantic, text_hidden)
    _diffusion_head(out, diffusion, text_hidden, latent)
    out += [Tensor("model.latent_scaling_factor", (), "audio"), Tensor("model.latent_bias_factor", (), "audio")]
    return tuple(out)
