"""What the looped decoders share (Ouro, IQuest-Coder-V1-Loop, Nanbeige): a core of ``num_hidden_layers`` layers run
several times per token on the same weights, listed as they run.

- ``read_loops``: the pass count (``total_ut_steps``, ``loop_num``, ``num_loops``), bounded so the run stays within
  ``MAX_LAYERS`` layers.
- ``unroll``: the layers as they run: the core once, stored, then ``loops - 1`` more passes whose layers are not
  ``stored`` (parameters and weight memory count the core once; FLOPs, weight reads and each pass's cache every pass).
- ``loop_caveat``: the caveat that says so, in one wording.
- ``read_heads``: the attention shape of a looped Qwen2 / Llama-style core whose serving code derives head_dim from
  hidden / heads (Ouro, IQuest Loop).
"""

from __future__ import annotations

from dataclasses import replace

from ..fields import MAX_LAYERS, Fields
from ..spec import Layer
from .common import read_kv_heads


def read_heads(f: Fields, attention: str, other: str) -> tuple[int, int, int, int, int]:
    """hidden_size, heads, layers, KV heads (the heads when absent) and head_dim of a looped Qwen2-style decoder
    whose ``attention`` (vLLM's) takes head_dim = hidden_size / num_attention_heads: a ``head_dim`` field that
    differs is refused (``other`` says what else it would change)."""
    hidden, heads = f.int("hidden_size"), f.int("num_attention_heads")
    n = f.int("num_hidden_layers", hi=MAX_LAYERS)
    kv = read_kv_heads(f, heads)
    if hidden % heads:
        raise f.error("num_attention_heads", f"({heads}) must divide hidden_size ({hidden}): {attention} takes "
                                             "head_dim = hidden_size / num_attention_heads")
    hd = hidden // heads
    if f.raw("head_dim") is not None and f.int("head_dim") != hd:
        raise f.error("head_dim", f"({f.int('head_dim')}) differs from hidden_size / num_attention_heads ({hd}): "
                                  f"{attention} uses the latter, {other}")
    return hidden, heads, n, kv, hd


def read_loops(f: Fields, key: str, default: int, n: int) -> int:
    """How many times the ``n`` layers run per token (``key``, else ``default``); the run must stay within
    ``MAX_LAYERS`` layers."""
    loops = f.int(key, default, hi=1024)
    if n * loops > MAX_LAYERS:
        raise f.error(key, f"({loops}) x num_hidden_layers ({n}) runs more than {MAX_LAYERS} layers")
    return loops


def unroll(first: Layer, n: int, loops: int, again: Layer | None = None) -> tuple[Layer, ...]:
    """The layers as they run: ``first`` for each of the ``n`` layers of the first pass, then ``again`` (default:
    ``first`` not ``stored``: the same weights, a cache of its own) for each layer of the ``loops - 1`` later
    passes."""
    again = replace(first, stored=False) if again is None else again
    return (first,) * n + (again,) * (n * (loops - 1))


def loop_caveat(title: str, n: int, loops: int, key: str, every_pass: str, rest: str) -> str:
    """The looped model's caveat: ``every_pass`` says what counts each pass besides parameters and weight memory
    (counted once), ``rest`` what else the family leaves out or assumes."""
    return (f"{title}: the {n} layers run {loops} times per token ({key}; {n * loops} layers run, as listed: "
            f"parameters and weight memory count them once, {every_pass}); {rest}; later passes' layers are named by "
            "the run (model.layers.N), not the checkpoint")
