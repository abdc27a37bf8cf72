"""MiniCPM-V 4.6 / 4.7 (``minicpmv4_6``, ``minicpmv4_7``) and MiniCPM-o OCR (``minicpm_ocr``) vision towers, as
transformers' modeling_minicpmv4_6.py / modeling_minicpmv4_7.py / modeling_minicpm_ocr.py build them (one design).
Their language model is the ``text_config``'s own family (Qwen3.5 by default).

The tower (``model.vision_tower``, MiniCPMV4_6VisionModel): SigLIP's (a biased Conv2d patch embedding,
(image_size // patch_size)² learned positions, ``num_hidden_layers`` encoder layers, ``post_layernorm``, no pooling
head) plus ``vit_merger`` (the window-attention merger applied after ``insert_layer_id``): a biased q/k/v/out
self-attention over hidden, ``layer_norm1``, ``pre_norm`` over the window's hidden·kh·kw, ``linear_1`` (hidden·kh·kw →
intermediate·kh·kw) and ``linear_2`` (→ hidden), all biased (``window_kernel_size`` = (kh, kw)).

The merger (``model.merger``): ``merger_times`` DownsampleMLPs, each a LayerNorm over 4·hidden (two 2×2 merges: the
factor 4 is fixed in the code, not merge_kernel_size), a biased 4·hidden square ``linear_1`` and a biased
``linear_2`` to the vision hidden size, the last one to the text hidden size.

The hub's remote-code MiniCPM-V (model_type ``minicpmv``, architectures ``MiniCPMV``: MiniCPM-Llama3-V 2.5, MiniCPM-V
2.6, 4.0, 4.5) is the same family's older design, counted from vLLM's vllm/model_executor/models/minicpmv.py (its
MiniCPMV2_5 / 2_6 / 4_0 / 4_5 classes; the hub's modeling_minicpmv.py, resampler.py and modeling_navit_siglip.py build
the same modules). Its config is flat: the language model's fields at the top level, beside ``vision_config``; the
config's ``version`` picks the language model (vLLM's get_version_by_config: absent, 2.5 unless hidden_size 2304 and
query_num 64, i.e. 2.0): 2.5 and 4.0 LlamaForCausalLM, 2.6 Qwen2ForCausalLM, 4.5 Qwen3ForCausalLM (``llm.``).

- ``vpm``: SigLIP-400M as Idefics2VisionTransformer (NaViT: a biased 14x14 patch conv, (image_size // patch)² learned
  positions, SigLIP's blocks, ``post_layernorm``, no pooling head), the last block dropped when
  ``drop_vision_last_layer`` (MiniCPMVConfig's default: true; the published configs set false). Missing vision
  fields take MiniCPMVConfig's default vision config (1152 wide, 27 layers, 4304, 16 heads, 980 / 14).
- ``resampler`` (Resampler2_5; 4.5's Resampler4_5 adds only buffers): ``query`` (query_num x E, E = the language
  model's hidden_size), a bias-free ``kv_proj`` (vision hidden -> E, only when they differ), ``attn`` (an
  nn.MultiheadAttention: in_proj_weight 3E x E, in_proj_bias, out_proj with bias), LayerNorms ``ln_q``, ``ln_kv``,
  ``ln_post`` and ``proj`` (E x E). Its 2D (and 4.5's temporal) sincos tables are non-persistent buffers: not in the
  checkpoint, not counted.

MiniCPM-V 2.0 / 1.0 (timm's SigLIP and Resampler2 around MiniCPM) and MiniCPM-o 2.6 (``minicpmo``) are refused by name.
"""

from __future__ import annotations

from ..errors import ConfigError, UnsupportedModelError
from ..fields import Fields
from ..spec import Tensor
from ..vision import _lin, _ln, siglip_tensors


def _pair(f: Fields, key: str, default: list[int]) -> tuple[int, int]:
    raw = f.raw(key)
    if raw is None:
        raw = f.derived(key, list(default), "absent: the class default")
    if not (isinstance(raw, (list, tuple)) and len(raw) == 2
            and all(isinstance(v, int) and not isinstance(v, bool) and 0 < v <= 64 for v in raw)):
        raise f.error(key, f"must be a pair of positive integers (h, w), got {raw!r}"[:200])
    return raw[0], raw[1]


def _towers(top: dict, text_hidden: int, where: str, family: str) -> tuple[Tensor, ...]:
    from ..family_defaults import FAMILY_DEFAULTS

    vision_family = f"{family}_vision"
    vc = top.get("vision_config")
    if vc is None:
        vc = {}
    if not isinstance(vc, dict):
        raise ConfigError(f"{where}: field 'vision_config' must be an object")
    for key in ("image_size", "patch_size"):  # its embeddings divide them as integers
        v = vc.get(key)
        if v is not None and (isinstance(v, bool) or not isinstance(v, int)):
            raise ConfigError(f"{where} (vision_config): field '{key}' must be an integer, got {v!r}"[:200])
    p = "model.vision_tower"
    out = siglip_tensors(dict(vc, vision_use_head=False), where, p, family=vision_family)
    vf = Fields(vc, f"{where} (vision_config)", defaults=FAMILY_DEFAULTS.get(vision_family), nested=True,
                family=vision_family)
    h = vf.int("hidden_size")
    inter = vf.int("intermediate_size")
    kh, kw = _pair(vf, "window_kernel_size", [2, 2])
    m = f"{p}.vit_merger"
    for name in ("k_proj", "v_proj", "q_proj", "out_proj"):
        _lin(out, f"{m}.self_attn.{name}", h, h)
    _ln(out, f"{m}.layer_norm1", h)
    _ln(out, f"{m}.pre_norm", h * kh * kw)
    _lin(out, f"{m}.linear_1", inter * kh * kw, h * kh * kw)
    _lin(out, f"{m}.linear_2", h, inter * kh * kw)
    tf = Fields(top, where, defaults=FAMILY_DEFAULTS.get(family), family=family)
    times = tf.int("merger_times", hi=64)
    for j in range(times):
        q = f"model.merger.mlp.{j}"
        _ln(out, f"{q}.pre_norm", 4 * h)
        _lin(out, f"{q}.linear_1", 4 * h, 4 * h)
        _lin(out, f"{q}.linear_2", text_hidden if j == times - 1 else h, 4 * h)
    return tuple(out)


def minicpmv4_6_vision(top: dict, text_hidden: int, where: str) -> tuple[Tensor, ...]:
    return _towers(top, text_hidden, where, "minicpmv4_6")


def minicpmv4_7_vision(top: dict, text_hidden: int, where: str) -> tuple[Tensor, ...]:
    return _towers(top, text_hidden, where, "minicpmv4_7")


def minicpm_ocr_vision(top: dict, text_hidden: int, where: str) -> tuple[Tensor, ...]:
    return _towers(top, text_hidden, where, "minicpm_ocr")


# ---- the hub's remote-code MiniCPM-V (model_type minicpmv) -------------------------------------------------------

#: vLLM minicpmv.py's classes: version -> (the language model it builds, as a model_type, and the release)
MINICPMV_VERSIONS: dict[tuple[int, int], tuple[str, str]] = {
    (2, 5): ("llama", "MiniCPM-Llama3-V 2.5"), (2, 6): ("qwen2", "MiniCPM-V 2.6"),
    (4, 0): ("llama", "MiniCPM-V 4.0"), (4, 5): ("qwen3", "MiniCPM-V 4.5")}
#: MiniCPMVConfig's default vision_config (the hub's configuration_minicpm.py), read as a SiglipVisionConfig
MINICPMV_DEFAULT_VISION = {"hidden_size": 1152, "image_size": 980, "intermediate_size": 4304,
                           "num_attention_heads": 16, "num_hidden_layers": 27, "patch_size": 14}
#: top-level fields that describe the wrapper, not its language model
_WRAPPER_KEYS = ("model_type", "vision_config", "slice_config", "auto_map", "architectures", "_name_or_path",
                 "query_num", "version", "drop_vision_last_layer", "batch_vision_input", "slice_mode", "use_image_id",
                 "vision_batch_size", "batch_3d_resampler", "image_size", "patch_size")


def minicpmv_version(cfg: dict, where: str) -> tuple[int, int]:
    """vLLM's get_version_by_config, limited to the releases counted here (others refused by name)."""
    raw = cfg.get("version")
    if raw is None:
        # the old configs carry no version: MiniCPM-V 2.0 (hidden 2304, 64 queries) or MiniCPM-Llama3-V 2.5
        old = cfg.get("hidden_size") == 2304 and cfg.get("query_num", 64) == 64
        version = (2, 0) if old else (2, 5)
    else:
        if isinstance(raw, bool) or not isinstance(raw, (int, float, str)):
            raise ConfigError(f"{where}: field 'version' must be a number such as 2.6, got {raw!r}"[:200])
        parts = str(raw).split(".")
        if not (1 <= len(parts) <= 2 and all(p.isdigit() for p in parts)):
            raise ConfigError(f"{where}: field 'version' must be a number such as 2.6, got {raw!r}"[:200])
        version = (int(parts[0]), int(parts[1]) if len(parts) == 2 else 0)
    if version == (2, 0):
        raise UnsupportedModelError(
            f"{where}: MiniCPM-V 2.0 / 1.0 (minicpmv with no version, hidden_size 2304, query_num 64) is not "
            "modelled: its tower is timm's vit_so400m_patch14_siglip_384 (timm tensor names, its attention-pool head "
            "replaced) and its Resampler2 keeps a learned 2D position table, around a MiniCPM (muP) language model",
            "MiniCPM-Llama3-V 2.5 and MiniCPM-V 2.6 / 4.0 / 4.5 are supported")
    if version not in MINICPMV_VERSIONS:
        known = ", ".join(f"{a}.{b} ({name})" for (a, b), (_, name) in MINICPMV_VERSIONS.items())
        raise UnsupportedModelError(f"{where}: MiniCPM-V version {version[0]}.{version[1]} is not one vLLM's "
                                    f"minicpmv.py builds that is modelled here ({known})",
                                    "MiniCPM-V 4.6 / 4.7 ship in transformers as minicpmv4_6 / minicpmv4_7")
    return version


def minicpmv_text_config(cfg: dict, where: str) -> dict:
    """The language model of a flat minicpmv config: its top-level fields, read as the class its version builds
    (MiniCPMVConfig subclasses that class, so absent fields take its defaults)."""
    lm, _ = MINICPMV_VERSIONS[minicpmv_version(cfg, where)]
    text = {k: v for k, v in cfg.items() if k not in _WRAPPER_KEYS}
    text["model_type"] = lm
    return text


def minicpmv_vision(top: dict, text_hidden: int, where: str) -> tuple[Tensor, ...]:
    """``vpm`` (the NaViT SigLIP tower) and ``resampler`` of the hub's MiniCPM-V, as vLLM's minicpmv.py builds them."""
    from ..family_defaults import FAMILY_DEFAULTS

    minicpmv_version(top, where)
    vc = top.get("vision_config")
    if vc is None:
        vc = dict(MINICPMV_DEFAULT_VISION)
    if not isinstance(vc, dict):
        raise ConfigError(f"{where}: field 'vision_config' must be an object")
    tf = Fields(top, where)
    vf = Fields(vc, f"{where} (vision_config)", defaults=FAMILY_DEFAULTS.get("siglip_vision_model"), nested=True,
                family="siglip_vision_model")
    layers = vf.int("num_hidden_layers")
    if tf.bool("drop_vision_last_layer", True, note="absent: MiniCPMVConfig's default"):
        if layers < 2:
            raise vf.error("num_hidden_layers", "must be at least 2 when drop_vision_last_layer drops the last one")
        layers -= 1  # init_vision_module: model.encoder.layers = model.encoder.layers[:-1]
    out = siglip_tensors(dict(vc, num_hidden_layers=layers, vision_use_head=False), where, "vpm")
    vh = vf.int("hidden_size")
    e = text_hidden
    r = "resampler"
    queries = tf.int("query_num", 64, hi=1 << 16, note="absent: MiniCPMVConfig's default")
    out.append(Tensor(f"{r}.query", (queries, e), "vision"))
    if vh != e:  # BaseResampler: an Identity when kv_dim == embed_dim
        out.append(Tensor(f"{r}.kv_proj.weight", (e, vh), "vision"))
    out.append(Tensor(f"{r}.attn.in_proj_weight", (3 * e, e), "vision"))
    out.append(Tensor(f"{r}.attn.in_proj_bias", (3 * e,), "vision"))
    _lin(out, f"{r}.attn.out_proj", e, e)
    for name in ("ln_q", "ln_kv", "ln_post"):
        _ln(out, f"{r}.{name}", e)
    out.append(Tensor(f"{r}.proj", (e, e), "vision"))
    return tuple(out)
