"""Qwen2.5-Omni whole (``qwen2_5_omni``: Qwen/Qwen2.5-Omni-7B, -3B), counted as transformers 5.24's
``Qwen2_5OmniForConditionalGeneration`` builds it (models/qwen2_5_omni/modeling_qwen2_5_omni.py) on the meta device:

* ``thinker`` (``thinker_config``, Qwen2_5OmniThinkerForConditionalGeneration): Qwen2's language model
  (``thinker_config.text_config``) and lm_head (tied by the thinker's own ``tie_word_embeddings``, class default
  false), the Qwen2.5-VL vision tower and the Whisper-style audio encoder (analysis.families.qwen2_5_omni);
* when ``enable_audio_output`` (class default true; false builds the thinker alone):
  ``talker`` (``talker_config``, Qwen2_5OmniTalkerForConditionalGeneration, kind ``audio``): a biased
  ``thinker_to_talker_proj`` (embedding_size -> hidden_size), ``embed_tokens`` (vocab_size x embedding_size),
  ``num_hidden_layers`` Qwen2 decoder layers of ``hidden_size`` (biased q / k / v of ``head_dim``, bias-free o_proj, a
  bias-free gated MLP of intermediate_size, two RMSNorms), the final norm and a bias-free ``codec_head`` to vocab_size;
  ``token2wav`` (``token2wav_config``, Qwen2_5OmniToken2WavModel, kind ``audio``, kept in float32 by transformers and
  stored so: sized at 4 bytes a parameter, ``ModelSpec.fp32_names``):
  the DiT (``dit_config``: the timestep MLP, the codec embedding of num_embeds + 1 rows, the input projection and its
  ECAPA-TDNN speaker encoder, ``num_hidden_layers`` adaLN-zero blocks with biased to_q / to_k / to_v / to_out and a
  GELU MLP of ff_mult, the final adaLN and proj_out) and BigVGAN (``bigvgan_config``: conv_pre, one ConvTranspose1d
  per upsample rate, resblock_kernel_sizes AMP blocks per stage of six convs and six SnakeBeta alpha / beta pairs,
  the post activation and a bias-free conv_post).

The decode trace, FLOPs per token and K/V bytes are the thinker language model's next text token: vLLM serves this
checkpoint (architectures Qwen2_5OmniModel) as Qwen2_5OmniThinkerForConditionalGeneration, whose load_weights skips
the ``talker.`` and ``token2wav.`` prefixes (vllm/model_executor/models/qwen2_5_omni_thinker.py). The parameter total
counts the whole checkpoint; the engine's weights (hardware.engine.loaded_weights: serve, plan) leave the talker and
token2wav out (analysis.families.ENGINE_UNLOADED), and a caveat says so.

The legacy DiT names the hub config still carries (``dim``, ``depth``, ``heads``) are not read by transformers
5.24 (Qwen2_5OmniDiTConfig has hidden_size, num_hidden_layers, num_attention_heads and no attribute_map for them); a
config where they disagree with what transformers builds is refused, as that checkpoint would not load into it.

Qwen2.5-Omni-7B (Qwen/Qwen2.5-Omni-7B @ ae9e169, its config's fields as checked by a fail-closed inspection of that
snapshot, embedding_size / head_dim / intermediate_size of the talker as its fine-tunes' saved configs give them) is
10,732,225,408 parameters: the thinker 8,931,813,888, the talker 1,351,360,256, token2wav 449,051,264 (DiT
333,607,760, BigVGAN 115,443,504); in bf16 with token2wav in float32 that is 22,362,553,344 bytes against the
checkpoint's total_size 22,366,403,936 (transformers builds 2,447 tensors, the index lists 2,448: 3,850,592 bytes,
0.017 %, not accounted for; the index itself was not at hand). The published "10.7B" is this count. No verbatim
Qwen2.5-Omni-3B config.json was at hand: its count is not checked.
"""

from __future__ import annotations

from dataclasses import replace

from ..errors import ConfigError, UnsupportedModelError
from ..fields import MAX_LAYERS, Fields, short
from ..spec import ModelSpec, Tensor
from .audio_llm import _conv1d as _conv, _linear, _sub
from .qwen2_5_omni import thinker_towers

#: Qwen2_5OmniTalkerConfig's class defaults that size its weights (transformers 5.24; tests check them)
TALKER_DEFAULTS = {"vocab_size": 8448, "embedding_size": 3584, "hidden_size": 3584, "intermediate_size": 18944,
                   "num_hidden_layers": 28, "num_attention_heads": 28, "num_key_value_heads": 4, "head_dim": 128}
#: Qwen2_5OmniDiTConfig's (scalars and lists)
DIT_DEFAULTS = {"hidden_size": 1024, "num_hidden_layers": 22, "num_attention_heads": 16, "ff_mult": 2, "emb_dim": 512,
                "head_dim": 64, "num_embeds": 8193, "mel_dim": 80, "enc_emb_dim": 192, "enc_dim": 128,
                "enc_channels": [256, 256, 256, 256, 768], "enc_kernel_sizes": [5, 3, 3, 3, 1],
                "enc_dilations": [1, 2, 3, 4, 1], "enc_attention_channels": 64, "enc_res2net_scale": 2,
                "enc_se_channels": 64}
#: Qwen2_5OmniBigVGANConfig's
BIGVGAN_DEFAULTS = {"mel_dim": 80, "upsample_initial_channel": 1536, "resblock_kernel_sizes": [3, 7, 11],
                    "resblock_dilation_sizes": [[1, 3, 5], [1, 3, 5], [1, 3, 5]], "upsample_rates": [5, 3, 2, 2, 2, 2],
                    "upsample_kernel_sizes": [11, 7, 4, 4, 4, 4]}
#: the original Qwen code's DiT names, still in the hub config, that transformers 5.24 does not read
LEGACY_DIT = {"dim": "hidden_size", "depth": "num_hidden_layers", "heads": "num_attention_heads"}

CAVEAT = ("Qwen2.5-Omni whole: the decode trace, FLOPs and K/V are the thinker's language model (text output); "
          "token2wav is stored in float32 (transformers' token2wav.float()): its weights are counted at 4 bytes a "
          "parameter")


def _obj(top: dict, key: str, where: str) -> dict:
    sub = top.get(key)
    if sub is None:
        return {}  # transformers builds the class-default sub-model
    if not isinstance(sub, dict):
        raise ConfigError(f"{where}: field '{key}' must be an object of fields, got {short(sub)}")
    return sub


def _enabled(top: dict, where: str) -> bool:
    v = top.get("enable_audio_output", True)
    if not isinstance(v, bool):
        raise ConfigError(f"{where}: field 'enable_audio_output' must be true or false, got {short(v)}")
    return v


def text_config(cfg: dict, where: str) -> dict:
    """The thinker's text_config, read as ``qwen2_5_omni_whole_text`` (Qwen2 with Qwen2_5OmniTextConfig's defaults),
    tied by the thinker's own flag (Qwen2_5OmniThinkerConfig's default false)."""
    from ..family_defaults import FAMILY_DEFAULTS

    thinker = _obj(cfg, "thinker_config", where)
    text = _obj(thinker, "text_config", f"{where} (thinker_config)")
    mt = text.get("model_type", "qwen2_5_omni_text")
    if mt != "qwen2_5_omni_text":
        raise UnsupportedModelError(f"{where}: field 'thinker_config.text_config.model_type' is {short(mt)}: "
                                    "Qwen2.5-Omni is modelled with its qwen2_5_omni_text language model",
                                    "a Qwen2.5-Omni config.json names thinker_config.text_config.model_type "
                                    "'qwen2_5_omni_text'")
    tie = thinker.get("tie_word_embeddings", FAMILY_DEFAULTS["qwen2_5_omni_thinker"].get("tie_word_embeddings", False))
    if not isinstance(tie, bool):
        raise ConfigError(f"{where}: field 'thinker_config.tie_word_embeddings' must be true or false, "
                          f"got {short(tie)}")
    out = {**text, "model_type": "qwen2_5_omni_whole_text", "tie_word_embeddings": tie}
    for key in ("torch_dtype", "dtype"):
        if key in thinker and key not in out:
            out[key] = thinker[key]
    return out


def build_text(f: Fields, model_type: str) -> ModelSpec:
    """The thinker's language model: Qwen2 (the qwen2_5_omni_text row and class defaults), with its caveat (what the
    engines leave unloaded is said where the wrapper is read: analysis.config, ENGINE_UNLOADED)."""
    from . import REGISTRY, decoder
    from ..family_defaults import FAMILY_DEFAULTS

    f.defaults = dict(FAMILY_DEFAULTS["qwen2_5_omni_text"])
    f.family = "qwen2_5_omni_text"
    spec = decoder.build(f, "qwen2_5_omni_text", REGISTRY["qwen2_5_omni_text"])
    return replace(spec, caveats=(*spec.caveats, CAVEAT), fp32_names=("token2wav.",))


def omni_towers(top: dict, text_hidden: int, where: str) -> tuple[Tensor, ...]:
    """The thinker's vision tower and audio encoder, then (enable_audio_output) the talker and token2wav."""
    thinker = _obj(top, "thinker_config", where)
    return thinker_towers(thinker, text_hidden, f"{where} (thinker_config)") + tuple(_output_models(top, where))


def _output_models(top: dict, where: str) -> list[Tensor]:
    if not _enabled(top, where):
        return []
    t2w = _obj(top, "token2wav_config", where)
    return _talker(top, where) + _dit(t2w, where) + _bigvgan(t2w, where)


def _talker(top: dict, where: str) -> list[Tensor]:
    f = _sub(top, "talker_config", where, "qwen2_5_omni_talker", "Qwen2.5-Omni's talker", TALKER_DEFAULTS)
    vocab, emb, hidden = f.int("vocab_size"), f.int("embedding_size"), f.int("hidden_size")
    inter, layers = f.int("intermediate_size"), f.int("num_hidden_layers", hi=MAX_LAYERS)
    heads, kv, hd = f.int("num_attention_heads"), f.int("num_key_value_heads"), f.int("head_dim")
    if heads % kv:
        raise f.error("num_key_value_heads", f"({kv}) must divide num_attention_heads ({heads})")
    out: list[Tensor] = []
    _linear(out, "talker.thinker_to_talker_proj", hidden, emb)
    out.append(Tensor("talker.model.embed_tokens.weight", (vocab, emb), "audio"))
    for i in range(layers):
        p = f"talker.model.layers.{i}"
        _linear(out, f"{p}.self_attn.q_proj", heads * hd, hidden)
        _linear(out, f"{p}.self_attn.k_proj", kv * hd, hidden)
        _linear(out, f"{p}.self_attn.v_proj", kv * hd, hidden)
        _linear(out, f"{p}.self_attn.o_proj", hidden, heads * hd, bias=False)
        for name, n_out, n_in in (("gate_proj", inter, hidden), ("up_proj", inter, hidden),
                                  ("down_proj", hidden, inter)):
            _linear(out, f"{p}.mlp.{name}", n_out, n_in, bias=False)
        out += [Tensor(f"{p}.input_layernorm.weight", (hidden,), "audio"),
                Tensor(f"{p}.post_attention_layernorm.weight", (hidden,), "audio")]
    out.append(Tensor("talker.model.norm.weight", (hidden,), "audio"))
    _linear(out, "talker.codec_head", vocab, hidden, bias=False)
    return out


def _ints(f: Fields, key: str, n: int | None = None, *, lo: int = 1) -> list[int]:
    v = f.list(key)
    if not v or not all(isinstance(x, int) and not isinstance(x, bool) and lo <= x <= 1 << 20 for x in v):
        raise f.error(key, f"must be a non-empty list of integers >= {lo}, got {short(v)}")
    if n is not None and len(v) != n:
        raise f.error(key, f"has {len(v)} entries, expected {n}")
    return v


def _dit(t2w: dict, where: str) -> list[Tensor]:
    f = _sub(t2w, "dit_config", where, "qwen2_5_omni_dit", "Qwen2.5-Omni's token2wav DiT",
             DIT_DEFAULTS, label="token2wav_config.dit_config")
    dim, layers, heads = f.int("hidden_size"), f.int("num_hidden_layers", hi=MAX_LAYERS), f.int("num_attention_heads")
    for legacy, key in LEGACY_DIT.items():
        if legacy in f.cfg and f.cfg[legacy] != {"hidden_size": dim, "num_hidden_layers": layers,
                                                 "num_attention_heads": heads}[key]:
            raise UnsupportedModelError(f"{f.where}: field '{legacy}' ({short(f.cfg[legacy])}) disagrees with '{key}' "
                                        f"({f.raw(key)}), which transformers 5.24 reads ('{legacy}' is the original "
                                        "code's name, not read): that checkpoint would not load into it",
                                        f"set '{key}' to the checkpoint's value")
    inner = f.int("head_dim") * heads
    ff = f.int("ff_mult") * dim
    emb, mel, enc_emb, enc_dim = f.int("emb_dim"), f.int("mel_dim"), f.int("enc_emb_dim"), f.int("enc_dim")
    chans = _ints(f, "enc_channels")
    if len(chans) < 2:
        raise f.error("enc_channels", "must have at least two entries (the first TDNN and the aggregation)")
    kernels = _ints(f, "enc_kernel_sizes", len(chans))
    _ints(f, "enc_dilations", len(chans))  # (no weight; ECAPA_TimeDelayNet requires one per channel entry)
    scale, se, att = f.int("enc_res2net_scale"), f.int("enc_se_channels"), f.int("enc_attention_channels")
    out: list[Tensor] = []
    p = "token2wav.code2wav_dit_model"
    _linear(out, f"{p}.time_embed.time_mlp.0", dim, 256)  # DiTTimestepEmbedding's freq_embed_dim
    _linear(out, f"{p}.time_embed.time_mlp.2", dim, dim)
    out.append(Tensor(f"{p}.text_embed.codec_embed.weight", (f.int("num_embeds") + 1, emb), "audio"))
    _linear(out, f"{p}.input_embed.proj", dim, mel + enc_dim + enc_emb + emb)
    s = f"{p}.input_embed.spk_encoder"
    _conv(out, f"{s}.blocks.0.conv", chans[0], mel, kernels[0])
    for i in range(1, len(chans) - 1):
        c_in, c = chans[i - 1], chans[i]
        if c % scale:
            raise f.error("enc_res2net_scale", f"({scale}) must divide enc_channels[{i}] ({c})")
        b = f"{s}.blocks.{i}"
        _conv(out, f"{b}.tdnn1.conv", c, c_in, 1)
        for j in range(scale - 1):
            _conv(out, f"{b}.res2net_block.blocks.{j}.conv", c // scale, c // scale, kernels[i])
        _conv(out, f"{b}.tdnn2.conv", c, c, 1)
        _conv(out, f"{b}.se_block.conv1", se, c, 1)
        _conv(out, f"{b}.se_block.conv2", c, se, 1)
    last = chans[-1]
    _conv(out, f"{s}.mfa.conv", last, last, kernels[-1])
    _conv(out, f"{s}.asp.tdnn.conv", att, 3 * last, 1)
    _conv(out, f"{s}.asp.conv", last, att, 1)
    _conv(out, f"{s}.fc", enc_dim, 2 * last, 1)
    for i in range(layers):
        b = f"{p}.transformer_blocks.{i}"
        _linear(out, f"{b}.attn_norm.linear", 6 * dim, dim)
        for name in ("to_q", "to_k", "to_v"):
            _linear(out, f"{b}.attn.{name}", inner, dim)
        _linear(out, f"{b}.attn.to_out.0", dim, inner)
        _linear(out, f"{b}.ff.ff.0", ff, dim)
        _linear(out, f"{b}.ff.ff.3", dim, ff)
    _linear(out, f"{p}.norm_out.linear", 2 * dim, dim)
    _linear(out, f"{p}.proj_out", mel, dim)
    return out


def _bigvgan(t2w: dict, where: str) -> list[Tensor]:
    f = _sub(t2w, "bigvgan_config", where, "qwen2_5_omni_bigvgan", "Qwen2.5-Omni's BigVGAN",
             BIGVGAN_DEFAULTS, label="token2wav_config.bigvgan_config")
    mel, c0 = f.int("mel_dim"), f.int("upsample_initial_channel")
    rates = _ints(f, "upsample_rates")
    ups_k = _ints(f, "upsample_kernel_sizes", len(rates))
    res_k = _ints(f, "resblock_kernel_sizes")
    dil = f.list("resblock_dilation_sizes")
    if len(dil) != len(res_k) or not all(isinstance(d, list) and len(d) == 3 for d in dil):
        raise f.error("resblock_dilation_sizes", f"must hold one list of three dilations per resblock kernel size, got "
                                                 f"{short(dil)}")
    if c0 % (1 << len(rates)):
        raise f.error("upsample_initial_channel", f"({c0}) must be divisible by 2^{len(rates)} (one halving per rate)")
    out: list[Tensor] = []
    p = "token2wav.code2wav_bigvgan_model"
    _conv(out, f"{p}.conv_pre", c0, mel, 7)
    for i, k in enumerate(ups_k):
        # ConvTranspose1d: weight (in, out, k)
        out.append(Tensor(f"{p}.ups.{i}.0.weight", (c0 >> i, c0 >> (i + 1), k), "audio"))
        out.append(Tensor(f"{p}.ups.{i}.0.bias", (c0 >> (i + 1),), "audio"))
    r = 0
    for i in range(len(rates)):
        c = c0 >> (i + 1)
        for k in res_k:
            b = f"{p}.resblocks.{r}"
            for j in range(3):
                _conv(out, f"{b}.convs1.{j}", c, c, k)
                _conv(out, f"{b}.convs2.{j}", c, c, k)
            for j in range(6):
                out += [Tensor(f"{b}.activations.{j}.act.alpha", (c,), "audio"),
                        Tensor(f"{b}.activations.{j}.act.beta", (c,), "audio")]
            r += 1
    c = c0 >> len(rates)
    out += [Tensor(f"{p}.activation_post.act.alpha", (c,), "audio"),
            Tensor(f"{p}.activation_post.act.beta", (c,), "audio")]
    _conv(out, f"{p}.conv_post", 1, c, 7, bias=False)
    return out
