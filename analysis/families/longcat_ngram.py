"""Meituan LongCat-Flash-Lite (``longcat_flash_ngram``, ``LongcatFlashNgramForCausalLM``; remote code, vLLM's
models/longcat_flash_ngram.py): LongCat-Flash (analysis/families/longcat.py: two MLA sublayers per checkpoint layer,
a shortcut MoE with zero-computation experts) whose input embedding adds hashed n-gram embeddings.

With ``ngram_vocab_size_ratio`` set (vLLM's ``uses_ngram_embedding``; absent, the model is plain LongCat-Flash):
``k = emb_split_num`` hashes of each n-gram of 2..``emb_neighbor_num`` tokens, ``k·(n - 1)`` tables in all. Table
``i`` (``model.ngram_embeddings.embedders.i``) has ``int(m + 2i + 1)`` rows, ``m = ngram_vocab_size_ratio ·
vocab_size``, each ``hidden_size // (k·(n - 1))`` wide, and its own bias-free projection to hidden
(``post_projs.i``). A token's embedding is the mean of its word embedding and the k·(n - 1) projected rows (vLLM's
``NgramEmbedding.embed_batched``; the HF remote code and the llama.cpp / MLX ports build the same shapes). The
tables are counted as embedding parameters (one row of each read per token), the projections with them.

The layer count is ``num_layers`` as vLLM's ``FlashNgramModel`` reads it (it resets ``num_hidden_layers``, which the
remote config may give as the count of attention sublayers); without ``num_layers``, half of ``num_hidden_layers``
as for LongCat-Flash. The checkpoint's MTP layer (``model.mtp.*``, which vLLM skips) is not counted.
"""

from __future__ import annotations

from dataclasses import replace

from ..fields import MAX_LAYERS, Fields
from ..spec import ModelSpec
from . import longcat


def read_ngram(f: Fields, vocab: int, hidden: int) -> tuple[tuple[int, ...], int]:
    """(rows of each n-gram table, their width); ((), 0) without ``ngram_vocab_size_ratio``."""
    if f.raw("ngram_vocab_size_ratio") is None:
        return (), 0
    ratio = f.float("ngram_vocab_size_ratio")
    n = f.int("emb_neighbor_num", lo=2, hi=64)
    k = f.int("emb_split_num", hi=64)
    tables = k * (n - 1)
    dim = hidden // tables
    if dim < 1:
        raise f.error("emb_split_num", f"x (emb_neighbor_num - 1) = {tables} n-gram tables exceed hidden_size "
                                       f"({hidden}): each would be {hidden} // {tables} = 0 wide")
    m = ratio * vocab  # the reference's own float arithmetic (a ratio may be fractional), truncated per table
    return tuple(int(m + 2 * i + 1) for i in range(tables)), dim


def build(f: Fields, model_type: str) -> ModelSpec:
    spec = longcat.build(f, model_type, f.opt_int("num_layers", hi=MAX_LAYERS))
    rows, dim = read_ngram(f, spec.vocab_size, spec.hidden_size)
    caveats = spec.caveats
    if rows:
        caveats += (f"LongCat-Flash-Lite: {len(rows)} hashed n-gram embedding tables ({sum(rows):,} rows of {dim}) "
                    "counted as embedding parameters; a token reads one row of each and projects it to hidden",)
    return replace(spec, ngram_rows=rows, ngram_dim=dim, caveats=caveats)
