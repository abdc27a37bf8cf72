"""From a Hugging Face ``config.json`` (a dict) to a ``ModelSpec``.

Families are recognised by ``model_type`` but built from their fields: one generic decoder builder
reads the standard fields (``hidden_size``, ``num_key_value_heads``, ``head_dim``, ``layer_types``,
``sliding_window`` ...), and each family only states what differs (biases, norm layout, fused
projections, MoE placement). An unlisted ``model_type`` whose config has the standard fields is
analysed as a generic decoder with a caveat naming every assumption. Remote code (``auto_map``) is
never run: such a config is read for its fields only, with a caveat.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable

from .errors import ConfigError, UnsupportedModelError
from .files import read_bounded
from .fields import MAX_LAYERS, REQUIRED, Fields, as_int, short
from .spec import MLA, MLP, Attention, Layer, ModelSpec, MoE, Norm, PlacedNorm

# ---- reading the file ----------------------------------------------------------------------------

MAX_CONFIG_BYTES = 16 * 1024 * 1024


def read_config_file(path: str | os.PathLike) -> dict:
    """Read and decode a config.json; every failure is a one-line ``ConfigError`` naming the file.
    The read is bounded: a FIFO, a device or a file over ``MAX_CONFIG_BYTES`` is refused unread."""
    p = Path(path)
    if p.is_dir():
        if not (p / "config.json").is_file():
            raise ConfigError(f"{p}: folder has no config.json", "pass the folder of a Hugging Face model or a config.json file")
        p = p / "config.json"
    try:
        data = read_bounded(p, MAX_CONFIG_BYTES, what="config.json")
    except OSError as exc:
        raise ConfigError(f"{p}: cannot read: {exc.strerror or exc}") from None
    return decode_config_bytes(data, str(p))


def decode_config_bytes(data: bytes, where: str) -> dict:
    """config.json bytes to a dict; every failure is a one-line ``ConfigError`` naming ``where``."""
    p = where
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{p}: not UTF-8 text (byte {exc.start})") from None
    try:
        cfg = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{p}: not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from None
    except RecursionError:
        raise ConfigError(f"{p}: JSON nested too deeply") from None
    except ValueError as exc:  # e.g. an integer of more than 4300 digits
        raise ConfigError(f"{p}: not valid JSON: {str(exc).split(';')[0]}") from None
    if not isinstance(cfg, dict):
        raise ConfigError(f"{p}: expected a JSON object of config fields, got {type(cfg).__name__}")
    return cfg


# ---- family traits -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Traits:
    """What a family does differently from a Llama-style decoder."""

    qkv_bias: str | bool = "attention_bias"  # a config key, or a fixed value
    o_bias: str | bool = "attention_bias"
    mlp_bias: str | bool = "mlp_bias"
    bias_default: bool = False
    qk_norm: str | None = None  # "head": norm over head_dim; "full": over all heads' features
    norms: str = "pre"  # pre: input+post_attention; sandwich: +pre/post_feedforward; post: olmo2
    norm_kind: str = "rms"
    tie_default: bool = False
    head_dim_default: int | None = None  # None: hidden_size // num_attention_heads
    windows: str = "layer_types"  # layer_types | all | qwen | alternate | pattern | none
    act_key: str = "hidden_act"
    act_default: str = "silu"
    gated: bool = True
    fused_qkv: bool = False
    fused_gate_up: bool = False
    norm_offset: float = 0.0
    embed_scale: bool = False
    moe: str | None = None  # mixtral | qwen | deepseek | gpt_oss | llama4 | generic
    sinks: bool = False
    intermediate_default: int | None = None


LLAMA = Traits()
FAMILIES: dict[str, Traits] = {
    "llama": LLAMA,
    "mistral": Traits(qkv_bias=False, o_bias=False, mlp_bias=False, windows="all"),
    "ministral": Traits(qkv_bias=False, o_bias=False, mlp_bias=False, windows="layer_types"),
    "mixtral": Traits(qkv_bias=False, o_bias=False, mlp_bias=False, windows="all", moe="mixtral"),
    "qwen2": Traits(qkv_bias=True, o_bias=False, mlp_bias=False, windows="qwen"),
    "qwen3": Traits(o_bias="attention_bias", qk_norm="head", mlp_bias=False, windows="qwen", head_dim_default=128),
    "qwen2_moe": Traits(qkv_bias="qkv_bias", o_bias=False, mlp_bias=False, bias_default=True, windows="qwen", moe="qwen"),
    # no head_dim default (unlike qwen3): transformers' Qwen3MoeConfig falls back to hidden // heads
    "qwen3_moe": Traits(qk_norm="head", mlp_bias=False, windows="qwen", moe="qwen"),
    "gemma": Traits(tie_default=True, head_dim_default=256, act_key="hidden_activation", act_default="gelu_pytorch_tanh",
                    norm_offset=1.0, embed_scale=True, mlp_bias=False, windows="none"),
    "gemma2": Traits(tie_default=True, head_dim_default=256, act_key="hidden_activation", act_default="gelu_pytorch_tanh",
                     norm_offset=1.0, embed_scale=True, norms="sandwich", mlp_bias=False, windows="alternate"),
    "gemma3_text": Traits(tie_default=True, head_dim_default=256, act_key="hidden_activation", act_default="gelu_pytorch_tanh",
                          norm_offset=1.0, embed_scale=True, norms="sandwich", qk_norm="head", mlp_bias=False, windows="pattern"),
    "phi3": Traits(qkv_bias=False, o_bias=False, mlp_bias=False, fused_qkv=True, fused_gate_up=True, windows="all"),
    "olmo2": Traits(qk_norm="full", norms="post", mlp_bias=False, windows="none"),
    "olmo3": Traits(qk_norm="full", norms="post", mlp_bias=False, windows="layer_types"),
    "olmoe": Traits(qk_norm="full", mlp_bias=False, windows="none", moe="mixtral"),
    "deepseek_v2": Traits(moe="deepseek"),
    "deepseek_v3": Traits(moe="deepseek"),
    "gpt_oss": Traits(bias_default=True, mlp_bias=False, sinks=True, windows="alternate", moe="gpt_oss", head_dim_default=64),
    "llama4_text": Traits(mlp_bias=False, moe="llama4", head_dim_default=128),
    "granite": Traits(),
    "smollm3": Traits(),
    "exaone4": Traits(qk_norm="head", norms="post", windows="layer_types"),
    "glm4_moe": Traits(qkv_bias="attention_bias", o_bias=False, mlp_bias=False, moe="deepseek"),
    "starcoder2": Traits(qkv_bias="use_bias", o_bias="use_bias", mlp_bias="use_bias", bias_default=True,
                         norm_kind="layer", gated=False, act_default="gelu_pytorch_tanh", windows="all"),
}

#: Families with their own builder (different field names or block structure).
SPECIAL: dict[str, Callable[..., ModelSpec]] = {}

#: Multimodal wrappers whose language model lives in ``text_config``.
TEXT_WRAPPERS = {
    "llama4": "llama4_text",
    "gemma3": "gemma3_text",
    "mistral3": "mistral",
    "llava": None,
    "qwen2_vl": "qwen2",
    "qwen2_5_vl": "qwen2",
    "qwen3_vl": "qwen3",
    "qwen3_vl_moe": "qwen3_moe",
    "gemma3n": None,
}


#: Wrappers whose vision tower transformers' AutoModelForCausalLM builds (so it is counted).
VISION_COUNTED = {"gemma3"}


def supported_model_types() -> list[str]:
    return sorted(set(FAMILIES) | set(SPECIAL) | set(TEXT_WRAPPERS))


# ---- the entry point -----------------------------------------------------------------------------


def parse_config(cfg: Any, *, where: str = "config.json", name: str = "", source: str = "") -> ModelSpec:
    """Build a ``ModelSpec`` from a decoded config.json; raise ``ConfigError`` on anything unusable."""
    if not isinstance(cfg, dict):
        raise ConfigError(f"{where}: expected a JSON object of config fields, got {type(cfg).__name__}")
    caveats: list[str] = []
    top = cfg
    nested = False
    wrapper = None
    model_type = cfg.get("model_type")
    if model_type is not None and not isinstance(model_type, str):
        raise ConfigError(f"{where}: field 'model_type' must be a string, got {short(model_type)}")
    if cfg.get("auto_map") or cfg.get("trust_remote_code"):
        caveats.append("config points at remote code (auto_map); analysed from its fields only, no code was run")
    if isinstance(cfg.get("text_config"), dict) and ("hidden_size" not in cfg or model_type in TEXT_WRAPPERS):
        text = dict(cfg["text_config"])
        inner = text.get("model_type") or TEXT_WRAPPERS.get(model_type or "") or ""
        if not isinstance(inner, str):
            raise ConfigError(f"{where}: field 'text_config.model_type' must be a string, got {short(inner)}")
        if inner == model_type and inner in TEXT_WRAPPERS and TEXT_WRAPPERS[inner]:
            inner = TEXT_WRAPPERS[inner]
        text["model_type"] = inner
        for key in ("torch_dtype", "dtype", "quantization_config", "tie_word_embeddings"):
            if key in cfg and key not in text:
                text[key] = cfg[key]
        wrapper = model_type
        if model_type in VISION_COUNTED:
            caveats.append(f"multimodal config ({model_type}): the vision encoder is counted in the parameters and "
                           "weights, as transformers builds it, but takes no part in the text decode trace")
        else:
            caveats.append(f"multimodal config ({model_type}): the language model in text_config is analysed; "
                           "the vision/audio encoder is not counted (transformers' causal-LM class leaves it out too)")
        cfg = text
        model_type = inner
        where = f"{where} (text_config)"
        nested = True
    if not model_type:
        raise ConfigError(f"{where}: required field 'model_type' is missing",
                          "a Hugging Face config.json names its architecture in model_type")
    builder = SPECIAL.get(model_type)
    traits = FAMILIES.get(model_type)
    if builder is None and traits is None:
        if model_type in TEXT_WRAPPERS:
            raise UnsupportedModelError(f"{where}: multimodal model_type '{model_type}' has no text_config we can read")
        missing = [k for k in ("hidden_size", "num_hidden_layers", "num_attention_heads", "vocab_size")
                   if k not in cfg]
        if missing:
            raise UnsupportedModelError(
                f"{where}: unsupported model_type '{model_type}' and the standard decoder fields "
                f"{', '.join(missing)} are missing",
                f"supported: {', '.join(supported_model_types())}",
            )
        caveats.append(f"model_type '{model_type}' is not a known family: analysed as a generic Llama-style "
                       "decoder (pre-norm RMSNorm, gated MLP, RoPE); check the assumed fields below")
        traits = generic_traits(cfg)
    from .family_defaults import FAMILY_DEFAULTS

    f = Fields(cfg, where, aliases=ALIASES, defaults=FAMILY_DEFAULTS.get(model_type), nested=nested, family=model_type)
    if builder is not None:
        spec = builder(f, model_type)
    else:
        spec = build_decoder(f, model_type, traits, generic=model_type not in FAMILIES)
    if wrapper in VISION_COUNTED:
        from .vision import gemma3_vision

        spec = replace(spec, vision=gemma3_vision(top, spec.hidden_size, where.replace(" (text_config)", "")))
    spec = finish(spec, f, top_cfg=top, name=name, source=source, caveats=caveats)
    return spec


ALIASES = {
    "hidden_size": ("n_embd", "d_model", "n_embed", "dim"),
    "num_hidden_layers": ("n_layer", "num_layers", "n_layers"),
    "num_attention_heads": ("n_head", "num_heads", "n_heads"),
    "num_key_value_heads": ("num_kv_heads", "n_head_kv", "multi_query_group_num", "n_kv_heads"),
    "intermediate_size": ("ffn_hidden_size", "n_inner", "ffn_dim"),
    "max_position_embeddings": ("n_positions", "max_seq_len", "seq_length"),
    "rms_norm_eps": ("layer_norm_eps", "layer_norm_epsilon", "norm_eps"),
}


def generic_traits(cfg: dict) -> Traits:
    moe = None
    if any(cfg.get(k) for k in ("num_local_experts", "num_experts", "n_routed_experts")):
        moe = "generic"
    return Traits(moe=moe, windows="layer_types" if "layer_types" in cfg else "all")


# ---- shared readers ------------------------------------------------------------------------------


def read_core(f: Fields, traits: Traits) -> dict:
    hidden = f.int("hidden_size")
    layers = f.int("num_hidden_layers", hi=MAX_LAYERS)
    heads = f.int("num_attention_heads")
    kv = f.int("num_key_value_heads", lambda: heads, note="absent: equal to num_attention_heads (no GQA)")
    if kv > heads or heads % kv:
        raise f.error("num_key_value_heads", f"({kv}) must divide num_attention_heads ({heads})")
    head_dim = read_head_dim(f, hidden, heads, traits.head_dim_default)
    vocab = f.int("vocab_size", hi=1 << 26)
    return dict(hidden=hidden, layers=layers, heads=heads, kv=kv, head_dim=head_dim, vocab=vocab)


def read_head_dim(f: Fields, hidden: int, heads: int, family_default: int | None = None) -> int:
    if f.has("head_dim"):
        return f.int("head_dim")
    if family_default is not None:
        return f.defaulted("head_dim", family_default, "absent: the family's default")
    if hidden % heads:
        raise f.error("head_dim", f"is missing and hidden_size ({hidden}) is not divisible by "
                                  f"num_attention_heads ({heads})")
    return f.derived("head_dim", hidden // heads, "hidden_size / num_attention_heads")


def read_flag(f: Fields, key: str | bool, default: bool) -> bool:
    if isinstance(key, bool):
        return key
    return f.bool(key, default)


def read_rope(f: Fields, head_dim: int) -> tuple[float, int, tuple]:
    """(theta, rotary_dim, scaling items) from rope_theta / rope_parameters / rope_scaling."""
    params = f.raw("rope_parameters")
    scaling = f.raw("rope_scaling")
    theta = None
    if f.cfg.get("rope_theta") is not None:  # explicit in the config (family defaults come last)
        theta = f.float("rope_theta")
    factor = None
    for block in (params, scaling):
        if isinstance(block, dict):
            if theta is None and isinstance(block.get("rope_theta"), (int, float)) and not isinstance(block.get("rope_theta"), bool):
                theta = float(block["rope_theta"])
            if factor is None and isinstance(block.get("partial_rotary_factor"), (int, float)):
                factor = float(block["partial_rotary_factor"])
    if theta is None:
        theta = f.float("rope_theta", 10000.0)  # the family's default, else 10000
    if f.has("partial_rotary_factor"):
        factor = f.float("partial_rotary_factor")
    elif f.has("rotary_pct"):
        factor = f.float("rotary_pct")
    if factor is not None and not (0 < factor <= 1):
        raise f.error("partial_rotary_factor", f"must be in (0, 1], got {factor}")
    rotary_dim = int(head_dim * factor) if factor is not None else head_dim
    if f.has("rotary_dim"):  # gpt-j / phi style absolute rotary dimension
        rotary_dim = f.int("rotary_dim")
    if rotary_dim > head_dim:
        raise f.error("rotary_dim" if f.has("rotary_dim") else "partial_rotary_factor",
                      f"gives {rotary_dim} rotary dimensions, more than head_dim ({head_dim})")
    items: tuple = ()
    src = scaling if isinstance(scaling, dict) else params if isinstance(params, dict) else None
    if isinstance(src, dict):
        if all(isinstance(v, dict) for v in src.values()) and src:
            src = src.get("full_attention", {})
        items = tuple(sorted((str(k), v) for k, v in src.items() if isinstance(v, (int, float, str, bool)) or v is None))
    return theta, rotary_dim, items


def read_windows(f: Fields, n_layers: int, policy: str) -> list[tuple[int | None, int | None]]:
    """(sliding window, attention chunk) of every layer (None where absent)."""
    sliding = f.opt_int("sliding_window", lo=0, hi=1 << 30)
    if sliding == 0:
        sliding = None
    types = f.raw("layer_types")
    if types is not None and policy != "none":
        types = check_layer_types(f, n_layers)
        chunk = f.opt_int("attention_chunk_size", hi=1 << 30)
        if policy == "qwen" and not f.bool("use_sliding_window", False):
            sliding = None
        out = []
        for i, t in enumerate(types):
            if t == "sliding_attention":
                out.append((sliding, None))
            elif t == "chunked_attention":
                if chunk is None:
                    raise f.error("attention_chunk_size", f"is missing but layer {i} is chunked_attention")
                out.append((None, chunk))
            elif t in ("full_attention", "attention"):
                out.append((None, None))
            else:  # a mamba / linear-attention layer: not something this decoder builds
                raise f.error("layer_types", f"says layer {i} is {t!r}, but model_type '{f.family}' has attention "
                                             "layers only")
        return out
    if policy == "all":
        return [(sliding, None)] * n_layers
    if policy == "qwen":
        if sliding is None or not f.bool("use_sliding_window", False):
            return [(None, None)] * n_layers
        first = f.int("max_window_layers", 28, lo=0, hi=MAX_LAYERS)
        return [(sliding if i >= first else None, None) for i in range(n_layers)]
    if policy == "alternate":
        if sliding is None:
            return [(None, None)] * n_layers
        return [(sliding if (i + 1) % 2 else None, None) for i in range(n_layers)]
    if policy == "pattern":
        pattern = f.int("sliding_window_pattern", 6)
        if sliding is None:
            return [(None, None)] * n_layers
        return [(sliding if (i + 1) % pattern else None, None) for i in range(n_layers)]
    return [(None, None)] * n_layers


KNOWN_LAYER_TYPES = {
    "full_attention", "sliding_attention", "chunked_attention", "linear_attention", "mamba", "attention",
    "conv", "hybrid", "moe", "dense",
}


def check_layer_types(f: Fields, n_layers: int) -> list[str]:
    types = f.list("layer_types")
    if len(types) != n_layers:
        raise f.error("layer_types", f"has {len(types)} entries but num_hidden_layers is {n_layers}")
    for t in types:
        if not isinstance(t, str) or t not in KNOWN_LAYER_TYPES:
            raise f.error("layer_types", f"has an unknown layer type {short(t)}")
    return types


def read_act(f: Fields, traits: Traits) -> str:
    if f.has(traits.act_key):
        return f.str(traits.act_key)
    for k in ("hidden_act", "activation_function", "hidden_activation"):
        if f.has(k):
            return f.str(k)
    return f.defaulted(traits.act_key, traits.act_default)


def read_eps(f: Fields) -> float:
    for k in ("rms_norm_eps", "layer_norm_eps", "layer_norm_epsilon", "norm_epsilon"):
        if f.has(k):
            return f.float(k)
    return 1e-6


def read_tie(f: Fields, default: bool) -> bool:
    if f.has("tie_word_embeddings"):
        return f.bool("tie_word_embeddings")
    return f.defaulted("tie_word_embeddings", default, "absent: the family's default")


# ---- the generic decoder -------------------------------------------------------------------------


def build_decoder(f: Fields, model_type: str, t: Traits, generic: bool = False) -> ModelSpec:
    c = read_core(f, t)
    hidden, n_layers, heads, kv, hd, vocab = c["hidden"], c["layers"], c["heads"], c["kv"], c["head_dim"], c["vocab"]
    theta, rotary_dim, scaling = read_rope(f, hd)
    qkv_bias = read_flag(f, t.qkv_bias, t.bias_default)
    o_bias = read_flag(f, t.o_bias, t.bias_default)
    mlp_bias = read_flag(f, t.mlp_bias, False)
    act = read_act(f, t)
    windows = read_windows(f, n_layers, t.windows)
    q_norm = k_norm = 0
    if model_type == "olmoe" and hd * heads != hidden:
        # transformers sizes OLMoE's q_norm by hidden_size, so its q_proj must be hidden_size wide too
        raise f.error("head_dim", f"({hd}) x num_attention_heads ({heads}) must equal hidden_size ({hidden}) for olmoe")
    if t.qk_norm == "head":
        q_norm = k_norm = hd
    elif t.qk_norm == "full":
        q_norm, k_norm = heads * hd, kv * hd
    v_head_dim = f.int("v_head_dim", hd) if generic and f.has("v_head_dim") else hd

    no_rope = read_no_rope(f, n_layers) if model_type in ("llama4_text", "smollm3") else None
    if model_type == "llama4_text" and f.raw("layer_types") is None:
        # transformers: chunked attention on the RoPE layers, global NoPE layers in between
        chunk = f.opt_int("attention_chunk_size", hi=1 << 30)
        windows = [(None, chunk if (chunk and no_rope[i]) else None) for i in range(n_layers)]
    norm = lambda: Norm(hidden, t.norm_kind, bias=t.norm_kind == "layer")  # noqa: E731
    if t.intermediate_default:
        default_inter: Any = t.intermediate_default
    elif not t.gated:
        default_inter = lambda: 4 * hidden  # noqa: E731
    else:
        default_inter = REQUIRED
    intermediate = f.int("intermediate_size", default_inter)
    moe_at, make_moe, dense_intermediate = moe_plan(f, model_type, t, hidden, n_layers, intermediate, act)

    layers = []
    for i in range(n_layers):
        window, chunk = windows[i]
        uses_rope = bool(no_rope[i]) if no_rope is not None else True
        if model_type == "exaone4" and any(w for w, _ in windows) and not window:
            uses_rope = False  # transformers: with sliding layers present, global layers skip RoPE
        attn = Attention(
            hidden_size=hidden, num_attention_heads=heads, num_key_value_heads=kv, head_dim=hd, v_head_dim=v_head_dim,
            q_bias=qkv_bias, k_bias=qkv_bias, v_bias=qkv_bias, o_bias=o_bias, fused_qkv=t.fused_qkv,
            q_norm_dim=q_norm, k_norm_dim=k_norm, window=window, chunk=chunk,
            rotary_dim=rotary_dim if uses_rope else 0, rope_theta=local_theta(f, model_type, window, theta),
            sinks=t.sinks,
        )
        if i in moe_at:
            ffn = make_moe(i)
        else:
            ffn = MLP(hidden, dense_intermediate, gated=t.gated, bias=mlp_bias, fused_gate_up=t.fused_gate_up, act=act)
        if t.norms == "sandwich":
            norms = (PlacedNorm("input_layernorm", "pre_mixer", norm()),
                     PlacedNorm("post_attention_layernorm", "post_mixer", norm()),
                     PlacedNorm("pre_feedforward_layernorm", "pre_ffn", norm()),
                     PlacedNorm("post_feedforward_layernorm", "post_ffn", norm()))
        elif t.norms == "post":
            norms = (PlacedNorm("post_attention_layernorm", "post_mixer", norm()),
                     PlacedNorm("post_feedforward_layernorm", "post_ffn", norm()))
        else:
            norms = pre_norms(norm)
        layers.append(Layer(attn, ffn, norms))
    tie = read_tie(f, t.tie_default)
    spec = ModelSpec(
        model_type=model_type, hidden_size=hidden, vocab_size=vocab, layers=tuple(layers), tie_word_embeddings=tie,
        final_norm=norm(), hidden_act=act, norm_eps=read_eps(f), norm_offset=t.norm_offset,
        embedding_multiplier=hidden ** 0.5 if t.embed_scale else 1.0, rope_scaling=scaling,
        attn_logit_softcapping=opt_float(f, "attn_logit_softcapping"),
        final_logit_softcapping=opt_float(f, "final_logit_softcapping"),
        query_pre_attn_scalar=opt_float(f, "query_pre_attn_scalar"),
    )
    if t.moe == "deepseek":
        spec = replace(spec, mtp_layers=mtp_layers(f, layers), mtp_extra_params=mtp_extra(f, hidden))
    return spec


def read_no_rope(f: Fields, n_layers: int) -> list[int]:
    """1 where a layer uses RoPE (transformers' ``no_rope_layers`` naming), default: every
    ``no_rope_layer_interval``-th layer is NoPE."""
    raw = f.raw("no_rope_layers")
    if isinstance(raw, list) and raw:
        return f.int_list("no_rope_layers", n_layers, lo=0, hi=1)
    interval = f.int("no_rope_layer_interval", 4)
    return f.derived("no_rope_layers", [int((i + 1) % interval != 0) for i in range(n_layers)],
                     f"absent or empty: NoPE every {interval} layers")


def pre_norms(make: Callable[[], Norm]) -> tuple[PlacedNorm, ...]:
    """Llama's layout: input_layernorm before the mixer, post_attention_layernorm before the FFN."""
    return (PlacedNorm("input_layernorm", "pre_mixer", make()), PlacedNorm("post_attention_layernorm", "pre_ffn", make()))


def local_theta(f: Fields, model_type: str, window: int | None, theta: float) -> float:
    """Gemma 3 runs its sliding layers with a different RoPE base (rope_local_base_freq)."""
    if model_type == "gemma3_text" and window:
        if f.has("rope_local_base_freq"):
            return f.float("rope_local_base_freq")
        params = f.raw("rope_parameters")
        if isinstance(params, dict) and isinstance(params.get("sliding_attention"), dict):
            v = params["sliding_attention"].get("rope_theta")
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                return float(v)
        return 10000.0
    return theta


def opt_float(f: Fields, key: str) -> float | None:
    return f.float(key) if f.has(key) else None


# ---- mixture of experts --------------------------------------------------------------------------


def moe_plan(f: Fields, model_type: str, t: Traits, hidden: int, n_layers: int, intermediate: int, act: str):
    """(layers that are MoE, a factory for the MoE of a layer, the dense layers' intermediate size)."""
    if t.moe is None:
        return set(), None, intermediate
    kind = t.moe
    if kind == "mixtral" or kind == "generic":
        n_exp = f.int("num_local_experts") if f.has("num_local_experts") or kind == "mixtral" and not f.has("num_experts") \
            else f.int("num_experts")
        k = f.int("num_experts_per_tok", 2)
        if k > n_exp:
            raise f.error("num_experts_per_tok", f"({k}) exceeds the number of experts ({n_exp})")
        size = f.int("moe_intermediate_size") if kind == "generic" and f.has("moe_intermediate_size") else intermediate
        moe = MoE(hidden, n_exp, k, size, act=act)
        return set(range(n_layers)), (lambda i: moe), intermediate
    if kind == "qwen":
        n_exp = f.int("num_experts", lo=0)
        k = f.int("num_experts_per_tok")
        size = f.int("moe_intermediate_size")
        step = f.int("decoder_sparse_step", 1)
        only = set(f.int_list("mlp_only_layers", lo=0, hi=MAX_LAYERS) or [])
        # transformers builds qwen2_moe's shared expert and its gate whatever the size: 0 is not "none"
        shared = f.int("shared_expert_intermediate_size", 0, lo=1) if model_type == "qwen2_moe" else 0
        if n_exp and k > n_exp:
            raise f.error("num_experts_per_tok", f"({k}) exceeds num_experts ({n_exp})")
        at = {i for i in range(n_layers) if i not in only and n_exp > 0 and (i + 1) % step == 0}
        moe = MoE(hidden, n_exp, k, size, shared_intermediate_size=shared, shared_expert_gate=bool(shared), act=act) if at else None
        return at, (lambda i: moe), intermediate
    if kind == "deepseek":
        n_exp = f.int("n_routed_experts")
        k = f.int("num_experts_per_tok")
        size = f.int("moe_intermediate_size")
        n_shared = f.int("n_shared_experts", 0, lo=0)
        first = f.int("first_k_dense_replace", 0, lo=0, hi=MAX_LAYERS)
        freq = f.int("moe_layer_freq", 1)
        if k > n_exp:
            raise f.error("num_experts_per_tok", f"({k}) exceeds n_routed_experts ({n_exp})")
        at = {i for i in range(n_layers) if i >= first and i % freq == 0}
        moe = MoE(hidden, n_exp, k, size, shared_intermediate_size=n_shared * size, act=act)
        return at, (lambda i: moe), intermediate
    if kind == "gpt_oss":
        n_exp = f.int("num_local_experts")
        k = f.int("num_experts_per_tok", f.raw("experts_per_token", 4))
        if k > n_exp:
            raise f.error("num_experts_per_tok", f"({k}) exceeds num_local_experts ({n_exp})")
        moe = MoE(hidden, n_exp, k, intermediate, expert_bias=True, router_bias=True, act=act)
        return set(range(n_layers)), (lambda i: moe), intermediate
    if kind == "llama4":
        n_exp = f.int("num_local_experts")
        k = f.int("num_experts_per_tok", 1)
        if k > n_exp:
            raise f.error("num_experts_per_tok", f"({k}) exceeds num_local_experts ({n_exp})")
        layers_list = f.int_list("moe_layers", lo=0, hi=MAX_LAYERS)
        if layers_list is None:
            step = f.int("interleave_moe_layer_step", 1)
            layers_list = list(range(step - 1, n_layers, step))
        dense = f.int("intermediate_size_mlp", intermediate)
        moe = MoE(hidden, n_exp, k, intermediate, shared_intermediate_size=intermediate, act=act)
        return set(layers_list), (lambda i: moe), dense
    raise AssertionError(kind)


# ---- DeepSeek MLA --------------------------------------------------------------------------------


def build_deepseek(f: Fields, model_type: str) -> ModelSpec:
    t = FAMILIES.get(model_type, FAMILIES["deepseek_v3"])
    hidden = f.int("hidden_size")
    n_layers = f.int("num_hidden_layers", hi=MAX_LAYERS)
    heads = f.int("num_attention_heads")
    vocab = f.int("vocab_size", hi=1 << 26)
    q_lora = f.opt_int("q_lora_rank")
    kv_lora = f.int("kv_lora_rank")
    nope = f.int("qk_nope_head_dim")
    rope = f.int("qk_rope_head_dim")
    v_hd = f.int("v_head_dim")
    bias = f.bool("attention_bias", False)
    theta, _, scaling = read_rope(f, rope)
    act = read_act(f, t)
    intermediate = f.int("intermediate_size")
    mla = MLA(hidden, heads, q_lora, kv_lora, nope, rope, v_hd, bias=bias, rope_theta=theta)
    moe_at, make_moe, dense = moe_plan(f, model_type, t, hidden, n_layers, intermediate, act)
    norms = pre_norms(lambda: Norm(hidden))
    layers = tuple(Layer(mla, make_moe(i) if i in moe_at else MLP(hidden, dense, act=act), norms) for i in range(n_layers))
    return ModelSpec(
        model_type=model_type, hidden_size=hidden, vocab_size=vocab, layers=layers,
        tie_word_embeddings=read_tie(f, False), final_norm=Norm(hidden), hidden_act=act, norm_eps=read_eps(f),
        rope_scaling=scaling, mtp_layers=mtp_layers(f, list(layers)), mtp_extra_params=mtp_extra(f, hidden),
    )


def mtp_layers(f: Fields, layers: list[Layer]) -> tuple[Layer, ...]:
    n = f.int("num_nextn_predict_layers", 0, lo=0, hi=64)
    if not n or not layers:
        return ()
    return tuple([layers[-1]] * n)


def mtp_extra(f: Fields, hidden: int) -> int:
    """Per MTP module besides its decoder block: enorm, hnorm, eh_proj (2H -> H), the head's norm, and
    the copies of the embedding and output head the checkpoint stores with it (``embed_tokens`` and
    ``shared_head.head``: shared with the main model at run time, stored again on disk)."""
    n = as_int(f.raw("num_nextn_predict_layers", 0)) or 0
    vocab = as_int(f.raw("vocab_size", 0)) or 0
    return n * (3 * hidden + 2 * hidden * hidden + 2 * vocab * hidden)


SPECIAL["deepseek_v2"] = build_deepseek
SPECIAL["deepseek_v3"] = build_deepseek
SPECIAL["kimi_k2"] = build_deepseek


# ---- GPT-NeoX ------------------------------------------------------------------------------------


def build_gpt_neox(f: Fields, model_type: str) -> ModelSpec:
    t = Traits(norm_kind="layer", gated=False, act_default="gelu")
    c = read_core(f, t)
    hidden, n_layers, heads, hd, vocab = c["hidden"], c["layers"], c["heads"], c["head_dim"], c["vocab"]
    theta, rotary_dim, scaling = read_rope(f, hd)
    bias = f.bool("attention_bias", True)
    act = read_act(f, t)
    inter = f.int("intermediate_size")
    parallel = f.bool("use_parallel_residual", True)
    ln = lambda: Norm(hidden, "layer", bias=True)  # noqa: E731
    attn = Attention(hidden, heads, heads, hd, hd, bias, bias, bias, bias, fused_qkv=True,
                     rotary_dim=rotary_dim, rope_theta=theta)
    mlp = MLP(hidden, inter, gated=False, bias=True, act=act)
    layer = Layer(attn, mlp, pre_norms(ln), parallel=parallel)
    return ModelSpec(
        model_type=model_type, hidden_size=hidden, vocab_size=vocab, layers=(layer,) * n_layers,
        tie_word_embeddings=read_tie(f, False), final_norm=ln(), hidden_act=act, norm_eps=read_eps(f),
        rope_scaling=scaling,
    )


SPECIAL["gpt_neox"] = build_gpt_neox


# ---- Falcon --------------------------------------------------------------------------------------


def build_falcon(f: Fields, model_type: str) -> ModelSpec:
    hidden = f.int("hidden_size")
    n_layers = f.int("num_hidden_layers", hi=MAX_LAYERS)
    heads = f.int("num_attention_heads")
    vocab = f.int("vocab_size", hi=1 << 26)
    if hidden % heads:
        raise f.error("num_attention_heads", f"({heads}) must divide hidden_size ({hidden}) for Falcon")
    hd = hidden // heads
    new_arch = f.bool("new_decoder_architecture", False)
    multi_query = f.bool("multi_query", True)
    if new_arch:
        kv = f.int("num_kv_heads", heads)
        if heads % kv:
            raise f.error("num_kv_heads", f"({kv}) must divide num_attention_heads ({heads})")
    elif multi_query:
        kv = f.derived("num_kv_heads", 1, "multi_query: one K/V head")
    else:
        kv = f.derived("num_kv_heads", heads, "neither new_decoder_architecture nor multi_query: MHA")
    bias = f.bool("bias", False)
    parallel = f.bool("parallel_attn", True)
    alibi = f.bool("alibi", False)
    theta, rotary_dim, scaling = read_rope(f, hd)
    inter = f.int("ffn_hidden_size", lambda: 4 * hidden, note="absent: 4 x hidden_size")
    n_ln = f.int("num_ln_in_parallel_attn", 2 if new_arch else 1, hi=2)
    ln = lambda: Norm(hidden, "layer", bias=True)  # noqa: E731
    if not parallel:
        norms = pre_norms(ln)
    elif n_ln == 2:
        norms = (PlacedNorm("ln_attn", "pre_mixer", ln()), PlacedNorm("ln_mlp", "pre_ffn", ln()))
    else:  # one norm whose output feeds both the attention and the MLP
        norms = (PlacedNorm("input_layernorm", "pre_mixer", ln()),)
    attn = Attention(hidden, heads, kv, hd, hd, bias, bias, bias, bias, fused_qkv=True,
                     rotary_dim=0 if alibi else rotary_dim, rope_theta=theta)
    act = f.str("activation", "gelu")
    layer = Layer(attn, MLP(hidden, inter, gated=False, bias=bias, act=act), norms, parallel=parallel)
    return ModelSpec(
        model_type=model_type, hidden_size=hidden, vocab_size=vocab, layers=(layer,) * n_layers,
        tie_word_embeddings=read_tie(f, True), final_norm=ln(), hidden_act=act, norm_eps=read_eps(f),
        rope_scaling=scaling,
    )


SPECIAL["falcon"] = build_falcon
SPECIAL["RefinedWeb"] = build_falcon
SPECIAL["RefinedWebModel"] = build_falcon


# ---- finishing -----------------------------------------------------------------------------------


def finish(spec: ModelSpec, f: Fields, *, top_cfg: dict, name: str, source: str, caveats: list[str]) -> ModelSpec:
    from .quant import parse_quantization

    dtype = None
    for key in ("torch_dtype", "dtype"):
        v = top_cfg.get(key, f.cfg.get(key))
        if isinstance(v, str):
            dtype = v
            f._record(key, "read", v)
            break
    if dtype is None:
        f.defaulted("torch_dtype", "bf16", "absent: bf16 assumed")
    max_pos = f.opt_int("max_position_embeddings", hi=1 << 31)
    qc = top_cfg.get("quantization_config", f.cfg.get("quantization_config"))
    quant, qcaveats = parse_quantization(qc, f.where) if qc is not None else (None, [])
    for layer in spec.layers:
        m = layer.mixer
        if isinstance(m, Attention) and m.window is not None and m.window < 1:
            raise f.error("sliding_window", f"must be a positive integer, got {m.window}")
    return replace(
        spec, torch_dtype=dtype, max_position_embeddings=max_pos, quant=quant, name=name, source=source,
        provenance=f.provenance(), caveats=tuple(caveats) + tuple(qcaveats),
    )


from . import hybrid as _hybrid  # noqa: E402,F401  (registers the hybrid families into SPECIAL)
