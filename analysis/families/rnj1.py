"""Essential AI's Rnj-1 series. Rnj-1 (EssentialAI/rnj-1, rnj-1-instruct) ships Gemma 3's text config (model_type
``gemma3_text``, architectures ``Gemma3ForCausalLM``) and is read by the gemma3_text row (tests/test_rnj1.py). vLLM's
``Rnj1ForCausalLM`` (vllm/model_executor/models/rnj1.py, from vLLM PR #39823 "block-local attention and YaRN for
local layers", for "an upcoming model ... in the Rnj-1 series") reads the same Gemma3TextConfig, but its
``layer_types`` name ``chunked_attention`` layers: block-local attention over blocks of ``sliding_window`` tokens
where each query also sees the whole previous block (``chunk_lookback`` 1, a receptive field of up to two blocks).
That is neither Gemma 3's sliding window nor Llama 4's chunked attention (no lookback), so such a config is refused
by name rather than read as either."""

from __future__ import annotations

from ..errors import UnsupportedModelError
from ..fields import Fields


def block_local_refused(f: Fields, layer: int) -> UnsupportedModelError:
    """The error for a ``chunked_attention`` layer in a family whose layers are sliding or full only."""
    what = (" A gemma3_text config with chunked layers is Essential AI's Rnj-1 block-local attention (vLLM's "
            "Rnj1ForCausalLM, rnj1.py: blocks of sliding_window tokens, each query seeing its own block and the one "
            "before it), whose mask and cache planner does not model.") if f.family == "gemma3_text" else ""
    return UnsupportedModelError(
        f"{f.where}: layer_types says layer {layer} is chunked_attention, but model_type '{f.family}' has sliding and "
        f"full attention layers only (transformers builds no chunked layer for it).{what}",
        "reading it as a sliding window or as Llama 4's chunked attention would miscount its cache, so none is given")
