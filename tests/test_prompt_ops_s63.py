"""A prompt step's ops, kept by part (hardware.serve StepModel._part): the weights' ops once over all the step's
tokens and each piece's attention alone, as before, while the cache holds only the parts a step prices (a k-fold's
closed loops bring thousands of distinct pieces)."""

from __future__ import annotations

import pytest

from planner.hardware.expected import graphed, prompt_attention_work, step_cost
from tests.test_fit_speed_s44 import _model


def _ops_held(cache: dict) -> int:
    return sum(len(v) for v in cache.values() if isinstance(v, list))


def test_a_mixed_step_prices_the_same_ops_as_the_full_step_lists_give():
    """Two decode tokens at 3,000 and 700 tokens of context beside a 500-token prompt chunk on 1,200 cached: its cost
    is step_cost over the non-attention ops of a 502-token step and the attention ops of each piece, each taken from
    that piece's own full step, the attention's tiles and keys counted over the pieces (session 66's ramp): the
    step's one varlen kernel runs 32 query heads x (1 + 1 + 4) 128-query blocks = 192 tiles, each piece at its
    own context."""
    cache: dict = {}
    m, hw = _model("h100-sxm", cache)
    pieces = {(1, 3000): 1, (1, 700): 1, (500, 1200): 1}
    got = m.prefill(pieces)
    fresh, _ = _model("h100-sxm", {})
    ops = [g for g in fresh._build(1, 502, 0) if g.op.kind != "attention"]
    parts = [[g for g in fresh._build(k, n, c) if g.op.kind == "attention"] for (n, c), k in pieces.items()]
    for part in parts:
        ops.extend(part)
    work = prompt_attention_work(parts, fresh.query_heads, [(n, c, k) for (n, c), k in pieces.items()])
    assert fresh.query_heads == 32 and {w[0] for w in work.values()} == {192}
    assert sorted({w[1] for w in work.values()}) == [701, 1700, 3001]
    assert sum(g.op.kind == "attention" for g in ops) > 0
    want = step_cost(ops, hw, m.compute_key, m.f, decode=False, sequences=3,
                     ideal_ops_s=fresh._ideal(("p", tuple(sorted(pieces.items()))), ops, False, 502),
                     allreduce_bytes=fresh._ar_bytes(502), allreduce_calls=fresh.allreduce_calls,
                     weight_only_bits=fresh.weight_only_bits, detail=False, rows=502,
                     graph=graphed(m.f, tokens=502, prefill=True), expert_rows=None, expert_inner=fresh.expert_inner,
                     experts_format=fresh.experts_format, allreduce_link=fresh.allreduce_link,
                     held_tokens=3001 + 701 + 1700, attention_work=work)
    assert got.expected_s == pytest.approx(want.expected_s, rel=1e-12)
    assert got.ideal_s == pytest.approx(want.ideal_s, rel=1e-12)


def test_the_cache_keeps_only_the_parts_a_prompt_step_prices():
    """After one mixed step the cache holds the step's non-attention ops and each prompt piece's attention ops, not
    the full ops of the piece's own step (Llama-3.1-8B's: 19 groups, one of them attention); a piece of decode tokens
    keeps its full ops, a decode step's shape."""
    cache: dict = {}
    m, _ = _model("h100-sxm", cache)
    m.prefill({(1, 3000): 1, (500, 1200): 1})
    assert (1, 500, 1200) not in cache  # a prompt piece: its attention alone (a decode piece keeps its full ops)
    attention = cache[("attention", 1, 500, 1200)]
    assert attention and all(g.op.kind == "attention" for g in attention)
    full = len(m._build(1, 500, 1200))
    assert len(attention) < full / 4
    # the decode piece's full ops (the shape of a decode step) and its attention part, the 501-token step's two parts
    # (one full list between them), the prompt piece's attention
    decode_piece = cache[(1, 1, 3000)]
    assert _ops_held(cache) == len(decode_piece) + len(cache[("attention", 1, 1, 3000)]) + full + len(attention)
    assert len(cache[("other", 1, 501, 0)]) + len(cache[("attention", 1, 501, 0)]) == full
    # a decode step still keeps its full ops; a piece at that shape then takes its attention from them
    m.decode(8, 2000)
    assert (8, 1, 2000) in cache
    kept = cache[(8, 1, 2000)]
    assert m._part(True, 8, 1, 2000) == [g for g in kept if g.op.kind == "attention"]
