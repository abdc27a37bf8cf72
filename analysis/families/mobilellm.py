"""Meta MobileLLM (``mobilellm``: facebook/MobileLLM-125M / 350M / 600M / 1B / 1.5B), a remote-code family: the hub's
``modeling_mobilellm.py`` builds ``MobileLLMForCausalLM`` from transformers' Llama pieces (``LlamaDecoderLayer``:
GQA with ``head_dim``, q/k/v/o biased by ``attention_bias``, a SwiGLU MLP biased by ``mlp_bias``, RMSNorms; an
``lm_head``), so it is read as transformers' llama row with LlamaConfig's defaults, except for the head:
``share_embedding`` (true in every published config, whose ``tie_word_embeddings`` says false) makes
``lm_head.weight`` the embedding's, counted once; absent, ``tie_word_embeddings`` decides. ``layer_sharing``
(immediate block-wise repetition: each layer run twice in a row, MobileLLM-LS) is refused by name: the published
MobileLLM configs set it false.

Counted: MobileLLM-125M 124,635,456, 350M 345,355,200, 600M 603,188,352, 1B 1,005,461,760, 1.5B 1,511,188,800; the
hub model cards' table (124.6M / 345.3M / 603.1M / 1.01B / 1.51B) is each count less its RMSNorm weights, rounded; the
shapes are facebookresearch/MobileLLM's configs/<size>/config.json (head_dim 64 throughout). MobileLLM-R1 ships
transformers' ``llama4_text`` config (its own row) and is not read here.
"""

from __future__ import annotations

from dataclasses import replace

from ..fields import Fields
from ..spec import ModelSpec


def build(f: Fields, model_type: str) -> ModelSpec:
    from . import REGISTRY
    from . import decoder as _decoder

    from ..family_defaults import FAMILY_DEFAULTS
    from ..fields import CORE_FIELDS

    if f.bool("layer_sharing", False, note="MobileLLMConfig's default"):
        raise f.error("layer_sharing", "is true: MobileLLM-LS's immediate block-wise weight sharing (each layer run "
                                       "twice) is not modelled; the published MobileLLM configs set it false")
    share = f.bool("share_embedding") if f.has("share_embedding") else None
    if not f.defaults:  # MobileLLMConfig(LlamaConfig): Llama's fields and defaults
        f.defaults = {k: v for k, v in FAMILY_DEFAULTS["llama"].items() if k not in CORE_FIELDS}
    spec = _decoder.build(f, model_type, REGISTRY["llama"])
    if share is not None and share != spec.tie_word_embeddings:  # absent: tie_word_embeddings decides
        spec = replace(spec, tie_word_embeddings=share)
    return spec
