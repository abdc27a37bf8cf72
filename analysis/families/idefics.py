"""Idefics2, Idefics3, SmolVLM and Granite-Docling: the towers and connectors of their
``*ForConditionalGeneration`` checkpoints, as transformers' modeling_idefics2.py, modeling_idefics3.py,
modeling_smolvlm.py and modeling_granite_docling.py build them (VISION_COUNTED; the language models are
registry entries: Mistral / Llama / SmolLM2 in ``text_config``, Granite-Docling's own Granite decoder).

Every one of them has the NaViT-style SigLIP tower of ``analysis.vision.idefics_tower`` under
``model.vision_model`` (biased patch conv, (image_size // patch_size)² learned positions, SigLIP blocks, a final
LayerNorm, no pooling head), read with its own vision config class's defaults. Then:

- Idefics2 (``model.connector``): ``modality_projection``, a bias-free gated MLP (vision hidden ->
  text_config.intermediate_size -> text hidden), and a perceiver resampler at the text hidden size (Idefics2Config
  forces perceiver_config.hidden_size to text_config.hidden_size): ``resampler_n_latents`` learned latents,
  ``resampler_depth`` layers of two input RMSNorms, GQA cross-attention (``resampler_n_heads`` ×
  ``resampler_head_dim`` queries, ``num_key_value_heads`` K/V heads, bias-free), an RMSNorm and a bias-free gated
  MLP of 4 × hidden, then a final RMSNorm.
- Idefics3 / SmolVLM (``model.connector.modality_projection.proj``): a pixel shuffle by ``scale_factor`` and one
  bias-free Linear(vision hidden × scale_factor², text hidden).
- Granite-Docling (``model.vision_model.connector``): ``ln_in``; a coarse path (pixel shuffle by
  ``scale_factor``) and, with ``use_fine_route``, a fine one (by scale_factor // 2), each a bias-free projection
  to ``out_hidden_size`` (the text hidden size) and one DeepStack merger per ``deepstack_visual_indexes`` entry
  (LayerNorm over the shuffled width, biased linear_1 / linear_2); shared ``ln_mid``, a bias-free ``mlp_fc2`` and
  ``ln_out``; their 2D sine-cosine positions are buffers. With ``density_router_hidden_size`` a density router
  (``model.density_router``: a biased attention-pool score, a LayerNorm, biased fc1 / fc2 to one logit).

lm_head follows the wrapper's own tie_word_embeddings (class defaults: untied for Idefics2 / Idefics3 / SmolVLM,
tied for Granite-Docling). IDEFICS v1 (``idefics``: gated cross-attention blocks) is refused by name.
"""

from __future__ import annotations

from ..errors import ConfigError
from ..fields import MAX_LAYERS, Fields
from ..spec import Tensor
from ..vision import _lin, _ln, _vision_fields, idefics_tower


def _top(top: dict, where: str, family: str) -> Fields:
    from ..family_defaults import FAMILY_DEFAULTS

    return Fields(top, where, defaults=FAMILY_DEFAULTS.get(family), family=family)


def _sub(top: dict, key: str, where: str) -> dict:
    sub = top.get(key)
    if sub is None:
        return {}
    if not isinstance(sub, dict):
        raise ConfigError(f"{where}: field '{key}' must be an object")
    return sub


def _plain(out: list[Tensor], name: str, shape: tuple[int, ...]) -> None:
    out.append(Tensor(name, shape, "vision"))


def idefics2_vision(top: dict, text_hidden: int, where: str) -> tuple[Tensor, ...]:
    from ..family_defaults import FAMILY_DEFAULTS

    out = idefics_tower(_sub(top, "vision_config", where), where, "idefics2_vision", "model.vision_model")
    vh = out[-1].shape[0]
    text = _sub(top, "text_config", where)
    text_type = text.get("model_type") or "mistral"
    tf = Fields(text, f"{where} (text_config)", defaults=FAMILY_DEFAULTS.get(str(text_type)), nested=True,
                family=str(text_type))
    inter = tf.int("intermediate_size")
    c = "model.connector"
    _plain(out, f"{c}.modality_projection.gate_proj.weight", (inter, vh))
    _plain(out, f"{c}.modality_projection.up_proj.weight", (inter, vh))
    _plain(out, f"{c}.modality_projection.down_proj.weight", (text_hidden, inter))
    pf = Fields(_sub(top, "perceiver_config", where), f"{where} (perceiver_config)", nested=True,
                defaults=FAMILY_DEFAULTS.get("idefics2_perceiver"), family="idefics2_perceiver")
    h = text_hidden  # Idefics2Config.__post_init__ sets perceiver_config.hidden_size to the text hidden size
    latents = pf.int("resampler_n_latents", hi=1 << 20)
    depth = pf.int("resampler_depth", hi=MAX_LAYERS)
    heads = pf.int("resampler_n_heads")
    hd = pf.int("resampler_head_dim")
    kv = pf.int("num_key_value_heads")
    if kv > heads or heads % kv:
        raise pf.error("num_key_value_heads", f"({kv}) must divide resampler_n_heads ({heads})")
    p = f"{c}.perceiver_resampler"
    _plain(out, f"{p}.latents", (latents, h))
    for i in range(depth):
        b = f"{p}.layers.{i}"
        for norm in ("input_latents_norm", "input_context_norm", "post_attention_layernorm"):
            _plain(out, f"{b}.{norm}.weight", (h,))
        _plain(out, f"{b}.self_attn.q_proj.weight", (heads * hd, h))
        _plain(out, f"{b}.self_attn.k_proj.weight", (kv * hd, h))
        _plain(out, f"{b}.self_attn.v_proj.weight", (kv * hd, h))
        _plain(out, f"{b}.self_attn.o_proj.weight", (h, heads * hd))
        _plain(out, f"{b}.mlp.gate_proj.weight", (4 * h, h))
        _plain(out, f"{b}.mlp.up_proj.weight", (4 * h, h))
        _plain(out, f"{b}.mlp.down_proj.weight", (h, 4 * h))
    _plain(out, f"{p}.norm.weight", (h,))
    return tuple(out)


def _shuffle_connector(top: dict, text_hidden: int, where: str, family: str, vision_family: str) -> tuple[Tensor, ...]:
    out = idefics_tower(_sub(top, "vision_config", where), where, vision_family, "model.vision_model")
    vh = out[-1].shape[0]
    scale = _top(top, where, family).int("scale_factor", hi=64)
    _plain(out, "model.connector.modality_projection.proj.weight", (text_hidden, vh * scale * scale))
    return tuple(out)


def idefics3_vision(top: dict, text_hidden: int, where: str) -> tuple[Tensor, ...]:
    return _shuffle_connector(top, text_hidden, where, "idefics3", "idefics3_vision")


def smolvlm_vision(top: dict, text_hidden: int, where: str) -> tuple[Tensor, ...]:
    return _shuffle_connector(top, text_hidden, where, "smolvlm", "smolvlm_vision")


#: GraniteDoclingVisionConfig's deepstack_visual_indexes when the config has none
GRANITE_DOCLING_DEEPSTACK = [3, 7, 10]


def granite_docling_vision(top: dict, text_hidden: int, where: str) -> tuple[Tensor, ...]:
    vc = _sub(top, "vision_config", where)
    root = "model.vision_model"
    out = idefics_tower(vc, where, "granite_docling_vision", root)
    vh = out[-1].shape[0]
    f = _vision_fields(vc, where, "granite_docling_vision")
    d = f.int("out_hidden_size")
    if d != text_hidden:
        raise f.error("out_hidden_size", f"({d}) must equal text_config.hidden_size ({text_hidden}): "
                      "GraniteDoclingConfig refuses it otherwise")
    scale = f.int("scale_factor", hi=64)
    fine = f.bool("use_fine_route")
    if fine and scale < 2:
        raise f.error("scale_factor", f"({scale}) must be at least 2 with use_fine_route: the fine path shuffles "
                      "by scale_factor // 2")
    idx = f.raw("deepstack_visual_indexes")
    if idx is None:
        idx = f.derived("deepstack_visual_indexes", GRANITE_DOCLING_DEEPSTACK, "absent: the class default")
    if not isinstance(idx, list) or not all(isinstance(i, int) and not isinstance(i, bool) for i in idx):
        raise f.error("deepstack_visual_indexes", "must be a list of vision layer indexes")
    c = f"{root}.connector"
    _ln(out, f"{c}.ln_in", vh)
    for path, s in (("coarse", scale), ("fine", scale // 2))[:2 if fine else 1]:
        merged = vh * s * s
        _plain(out, f"{c}.{path}.projection.weight", (d, merged))
        for j in range(len(idx)):
            m = f"{c}.{path}.deepstack_mergers.{j}"
            _ln(out, f"{m}.layer_norm", merged)
            _lin(out, f"{m}.linear_1", d, merged)
            _lin(out, f"{m}.linear_2", d, d)
    _ln(out, f"{c}.ln_mid", d)
    _plain(out, f"{c}.mlp_fc2.weight", (d, d))
    _ln(out, f"{c}.ln_out", d)
    tf = _top(top, where, "granite_docling")
    router = tf.opt_int("density_router_hidden_size")
    if router is not None:
        if not fine:
            raise tf.error("density_router_hidden_size", "needs vision_config.use_fine_route (the router selects "
                           "the fine path): GraniteDoclingConfig refuses it otherwise")
        r = "model.density_router"
        _lin(out, f"{r}.att", 1, vh)
        _ln(out, f"{r}.norm", vh)
        _lin(out, f"{r}.fc1", router, vh)
        _lin(out, f"{r}.fc2", 1, router)
    return tuple(out)
