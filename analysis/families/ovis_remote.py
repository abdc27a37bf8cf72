"""AIDC-AI Ovis2.5 in its hub remote-code format (model_type ``ovis2_5``: AIDC-AI/Ovis2.5-2B, Ovis2.5-9B), as the
hub's modeling_ovis2_5.py / configuration_ovis2_5.py build ``Ovis2_5`` (and vLLM's ovis2_5.py loads it):

- ``llm``: ``AutoModelForCausalLM.from_config(llm_config)``, where Ovis2_5_Config always builds llm_config as
  ``Qwen3Config`` (its own family counts it, lm_head tied by llm_config's flag alone: ``tie_weights`` calls
  ``self.llm.tie_weights()``). The constructor asserts the wrapper's ``hidden_size`` equals the language model's.
- ``visual_tokenizer.vit``: ``Siglip2NavitModel`` of vit_config (Siglip2NavitConfig), its ``vision_model`` SigLIP's
  blocks and ``post_layernorm``, no pooling head. The patch embedding is a biased Conv2d (channels -> hidden,
  patch x patch) when ``num_patches`` <= 0 (the released checkpoints: -1), else a biased Linear
  (channels·patch² -> hidden); with ``preserve_original_pe`` a ``position_embedding`` of (image_size // patch_size)²
  rows (Conv2d) or ``num_patches`` rows (Linear), none without it. The 2-D rotary table is a non-persistent buffer.
- ``visual_tokenizer.head``: Sequential(Linear(hidden · hidden_stride² -> visual_vocab_size - 4, no bias),
  LayerNorm(visual_vocab_size - 4)): the hub's INDICATOR_IDS holds 4 ids (-301 .. -304), not Ovis2's 5.
- ``vte``: the visual embedding table, visual_vocab_size x the wrapper's hidden_size.

Exact against the published Ovis2.5-9B model.safetensors.index.json (tests/test_ovis_remote.py): every shard's size
fits these shapes in bf16, headers included. The Ovis1.6 / Ovis2 format (model_type ``ovis``) stays refused by name.
"""

from __future__ import annotations

from ..errors import ConfigError, UnsupportedModelError
from ..fields import Fields
from ..spec import Tensor
from .voxtral import required_sub_config
from ..vision import _ln, siglip_tensors

#: len(INDICATOR_IDS) in the hub's modeling_ovis2_5.py ([-301, -302, -303, -304]): the head's logits stop short of them
INDICATORS = 4

#: Siglip2NavitConfig's defaults (the hub's configuration_ovis2_5.py) and Ovis2_5_Config's visual_vocab_size
NAVIT_DEFAULTS = {"hidden_size": 1024, "intermediate_size": 4096, "num_hidden_layers": 24, "num_attention_heads": 16,
                  "num_channels": 3, "num_patches": -1, "image_size": 512, "patch_size": 16, "hidden_stride": 2,
                  "temporal_patch_size": 1, "preserve_original_pe": True}
VISUAL_VOCAB = 65536


def _sub(cfg: dict, key: str, where: str, what: str) -> dict:
    return required_sub_config(cfg, key, where, f"an Ovis2.5 config names {what} in {key}", what)


def ovis2_5_text_config(cfg: dict, where: str) -> dict:
    """Ovis2_5_Config's language model: ``llm_config`` built as Qwen3Config whatever else it names (a model_type
    other than qwen3 is refused rather than read as one), tied as llm_config says (Qwen3Config's default: no)."""
    llm = _sub(cfg, "llm_config", where, "the language model")
    mt = llm.get("model_type", "qwen3")
    if mt != "qwen3":
        raise UnsupportedModelError(f"{where}: llm_config model_type {mt!r} is not the Qwen3 that Ovis2_5_Config "
                                    "builds llm_config as", "the released Ovis2.5 checkpoints use a qwen3 llm_config")
    text = dict(llm, model_type="qwen3")
    text.setdefault("tie_word_embeddings", False)  # the wrapper's own flag never reaches the language model
    return text


def ovis2_5_vision(top: dict, text_hidden: int, where: str) -> tuple[Tensor, ...]:
    """Ovis2.5's visual tokenizer (SigLIP2-NaViT + head) and its visual embedding table ``vte``."""
    w = Fields(top, where, family="ovis2_5")
    if "hidden_size" not in top or top["hidden_size"] is None:
        raise ConfigError(f"{where}: required field 'hidden_size' is missing",
                          "Ovis2_5 asserts it equals llm_config's hidden_size and sizes vte by it")
    hidden = w.int("hidden_size")
    if hidden != text_hidden:
        raise w.error("hidden_size", f"({hidden}) must equal llm_config's hidden_size ({text_hidden}): Ovis2_5 "
                                     "asserts 'hidden size mismatch'")
    vocab = w.int("visual_vocab_size", VISUAL_VOCAB, note="absent: Ovis2_5_Config's default")
    if vocab <= INDICATORS:
        raise w.error("visual_vocab_size", f"({vocab}) must exceed the {INDICATORS} indicator tokens")
    vc = dict(NAVIT_DEFAULTS, **{k: v for k, v in _sub(top, "vit_config", where, "the vision tower").items()
                                 if v is not None})
    f = Fields(vc, f"{where} (vit_config)", family="siglip2_navit")
    linear = f.int("num_patches", lo=-(1 << 24), hi=1 << 24) > 0
    tower = siglip_tensors(vc, where, "visual_tokenizer.vit.vision_model",
                           family="siglip2_vision_model" if linear else "siglip_vision_model", head=False)
    if not f.bool("preserve_original_pe"):
        tower = [t for t in tower if not t.name.endswith("embeddings.position_embedding.weight")]
    stride = f.int("hidden_stride", hi=64)
    head = vocab - INDICATORS
    out = list(tower)
    out.append(Tensor("visual_tokenizer.head.0.weight", (head, f.int("hidden_size") * stride * stride), "vision"))
    _ln(out, "visual_tokenizer.head.1", head)
    out.append(Tensor("vte.weight", (vocab, hidden), "vision"))
    return tuple(out)
