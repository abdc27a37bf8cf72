"""Independent oracles: Hugging Face ``transformers`` models built on the meta device (no weights,
no download). Tests that use them skip, saying why, when transformers or torch is missing."""

from __future__ import annotations

import copy
import warnings

import pytest


def hf_model(cfg: dict, *, image_text: bool = False):
    """The transformers causal-LM built from ``cfg`` on the meta device; for a multimodal wrapper
    (a config with a ``vision_config``: llava, mistral3, qwen3_5 ...), or with ``image_text``, its full
    ``*ForConditionalGeneration`` model, vision tower included (qwen3_5's causal-LM class drops it)."""
    torch = pytest.importorskip("torch", reason="the transformers oracle needs torch (the runtime extra)")
    transformers = pytest.importorskip("transformers", reason="the transformers oracle needs transformers (dev extra)")
    from transformers import AutoConfig, AutoModelForCausalLM, AutoModelForImageTextToText
    from transformers.models.auto.modeling_auto import (MODEL_FOR_CAUSAL_LM_MAPPING_NAMES,
                                                        MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES)

    transformers.logging.set_verbosity_error()
    d = dict(cfg)
    mt = d.pop("model_type")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        config = AutoConfig.for_model(mt, **d)
        with torch.device("meta"):
            wrapper = image_text or ("vision_config" in cfg and mt in MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES)
            auto = AutoModelForCausalLM if mt in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES and not wrapper \
                else AutoModelForImageTextToText
            return auto.from_config(config)


def hf_class_model(cfg: dict, cls: str):
    """transformers' class ``cls`` (e.g. ``Qwen2AudioForConditionalGeneration``: for a wrapper no Auto mapping names,
    or where the Auto class builds a part of it) built from ``cfg`` on the meta device."""
    torch = pytest.importorskip("torch", reason="the transformers oracle needs torch (the runtime extra)")
    transformers = pytest.importorskip("transformers", reason="the transformers oracle needs transformers (dev extra)")
    from transformers import AutoConfig

    transformers.logging.set_verbosity_error()
    d = {k: v for k, v in copy.deepcopy(cfg).items() if k not in ("model_type", "architectures", "torch_dtype")}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        config = AutoConfig.for_model(cfg["model_type"], **d)
        with torch.device("meta"):
            return getattr(transformers, cls)(config)


def unique_param_count(model) -> int:
    """Parameters of a torch module, tied weights once."""
    seen, n = set(), 0
    for p in model.parameters():
        if id(p) not in seen:
            seen.add(id(p))
            n += p.numel()
    return n


def hf_param_count(cfg: dict) -> int:
    """Unique parameters (tied weights once) of the transformers model of ``cfg``."""
    return unique_param_count(hf_model(cfg))


def hf_language_model_count(cfg: dict) -> int:
    """Unique parameters of a multimodal wrapper's language model and lm_head alone (its vision / audio towers
    and projectors left out): transformers' ``*ForConditionalGeneration`` on the meta device, with its
    default towers where ``cfg`` has no ``vision_config``."""
    model = hf_model(cfg, image_text=True)
    # named_parameters yields a tied lm_head once, under the embedding's name
    return sum(p.numel() for n, p in model.named_parameters() if "language_model." in n or n.startswith("lm_head."))


def hub_alibi_slopes(n: int) -> list[float]:
    """ALiBi's head slopes as the hub's remote code computes them (Baichuan 13B's modeling_baichuan.py
    _get_interleave, Jais's modeling_jais.py AlibiPositionEmbeddingLayer._get_alibi_slopes): a geometric series
    from 2^(-8/n) for a power of two n, else the nearest lower power's series plus every other slope of the
    next power's."""
    import math

    def pow2(m):
        start = 2 ** (-(2 ** -(math.log2(m) - 3)))
        return [start * start ** i for i in range(m)]
    if math.log2(n).is_integer():
        return pow2(n)
    c = 2 ** math.floor(math.log2(n))
    return pow2(c) + hub_alibi_slopes(2 * c)[0::2][: n - c]


def flop_counter(model):
    """A FlopCounterMode (no display) for an inference step of the torch ``model``, whose parameters it freezes
    (``requires_grad_(False)``, which no FLOP count depends on) first. Since transformers 5.25 the hub-kernel
    functions with a torch fallback (``causal_conv1d_update``, ``causal_conv1d_forward``,
    ``torch_chunk_gated_delta_rule``, ``mamba2_selective_state_update``, ... of the linear-attention and hybrid
    models) are ``nn.Module``s (its ``use_kernel_forward_from_hub`` is now kernels' own, which wraps a function in a
    module), so FlopCounterMode's module tracker hooks their tensor arguments; a parameter view taken under
    ``no_grad`` (``conv1d.weight.squeeze(1)``) still reports ``requires_grad`` but has no gradient edge, and the
    tracker's ``register_multi_grad_hook`` fails on it ("Expected gradient function to be set"). A frozen
    parameter's views do not require grad, so the tracker leaves them alone."""
    from torch.utils.flop_counter import FlopCounterMode

    model.requires_grad_(False)
    return FlopCounterMode(display=False)
