"""PowerInfer SmallThinker (``smallthinker``, remote code ``SmallThinkerForCausalLM``; llama.cpp's
convert_hf_to_gguf.py registers it, PowerInfer serves it). Before: refused only as "moe_num_primary_experts set, but
model_type 'smallthinker' is not a known family" (its experts unread), so no count at all.

Oracles: a hand count of modeling_smallthinker.py's modules (SmallThinkerAttention q/k/v/o bias-free, two RMSNorms,
block_sparse_moe.primary_router hidden -> experts, experts of up / gate / down, a final norm, the head tied or not);
transformers' MixtralForCausalLM on the meta device (the same modules under Mixtral's names: gate, w1 / w2 / w3);
the SmallThinker README's model summary (total 21B / 4B, activated 3B / 0.6B) and a public memory-calculator table
quoting 21.5 B / 3.33 B and 4.3 B / 0.86 B (find_string id 70083918081); the window layout of the 21B config as a
public memory calculator's test states it (13 full layers at 0, 4, 8 ..., 39 sliding of 4096, 1 = sliding; id
71036334443)."""

from __future__ import annotations

import json

import pytest

from planner.analysis.config import parse_config
from planner.analysis.dtypes import get_dtype
from planner.analysis.kv import kv_cache
from planner.analysis.params import count_params
from planner.analysis.spec import RouterKind
from tests.clirun import run
from tests.oracle import hf_model, unique_param_count

BF16 = get_dtype("bf16")

#: PowerInfer/SmallThinker-4BA0.6B-Instruct/config.json, as quoted verbatim (``config.js``) at the top of a public
#: copy of its modeling code (find_string id 62271246047); auto_map, token ids and generation fields left out
ST_4B = {"architectures": ["SmallThinkerForCausalLM"], "attention_dropout": 0.0, "head_dim": 128, "hidden_size": 1536,
         "initializer_range": 0.02, "max_position_embeddings": 32768, "model_name": "smallthinker_4b_instruct",
         "model_type": "smallthinker", "moe_ffn_hidden_size": 768, "moe_num_active_primary_experts": 4,
         "moe_num_primary_experts": 32, "norm_topk_prob": True, "num_attention_heads": 12, "num_hidden_layers": 32,
         "num_key_value_heads": 2, "output_router_logits": False, "rms_norm_eps": 1e-06, "rope_layout": [1] * 32,
         "rope_scaling": None, "rope_theta": 1.5e6, "sliding_window_size": 4096, "sliding_window_layout": [0] * 32,
         "tie_word_embeddings": True, "tokenizer_class": "Qwen2Tokenizer", "torch_dtype": "bfloat16",
         "use_cache": False, "vocab_size": 151936}

#: SmallThinker-21BA3B as the SJTU-IPADS/SmallThinker README's model summary gives it (52 layers, hidden 2560, 28 / 4
#: heads, 64 experts of 768, top-6, vocab 151,936) with head_dim 128 (the class default; 2560 / 28 is not whole),
#: the window layout of the shipped config as stated above (1 = sliding, full at 0, 4, 8 ...), and an untied head
#: (21.5 B in the quoted table is the untied count; tied it would be 21.1 B); rope_layout all 1 here: which layers
#: skip RoPE is not quoted, and it changes no count
ST_21B = dict(ST_4B, hidden_size=2560, num_hidden_layers=52, num_attention_heads=28, num_key_value_heads=4,
              moe_num_primary_experts=64, moe_num_active_primary_experts=6, max_position_embeddings=16384,
              tie_word_embeddings=False, sliding_window_layout=[0 if i % 4 == 0 else 1 for i in range(52)],
              rope_layout=[1] * 52, model_name="smallthinker_21b_instruct")


def _hand(V, h, L, heads, kv, hd, experts, inter, tied) -> int:
    """modeling_smallthinker.py: embed_tokens (+ lm_head unless tied); per layer q (h -> heads*hd), k / v (h -> kv*hd),
    o (heads*hd -> h), input / post_attention RMSNorms, primary_router (h -> experts), experts x (up, gate: h -> inter;
    down: inter -> h); the final norm."""
    layer = 2 * h * heads * hd + 2 * h * kv * hd + 2 * h + h * experts + experts * 3 * h * inter
    return V * h * (1 if tied else 2) + L * layer + h


def test_4b_count_equals_the_hand_count_and_the_published_sizes():
    spec = parse_config(ST_4B)
    p = count_params(spec)
    hand = _hand(151936, 1536, 32, 12, 2, 128, 32, 768, tied=True)
    assert p.total == hand == 4_035_085_824
    # active: attention, norms, router and 4 of 32 experts per layer, the tied embedding once
    assert p.active == hand - 32 * 28 * 3 * 1536 * 768 == 864_192_000
    # the quoted table's 0.86 B activated (its 4.3 B total counts a separate head: the shipped config ties it)
    assert round(p.active / 1e9, 2) == 0.86
    assert not any("not a known family" in c for c in spec.caveats)
    assert spec.layers[0].ffn.num_experts == 32 and spec.layers[0].ffn.num_experts_per_tok == 4
    assert spec.layers[0].ffn.act == "relu" and spec.layers[0].ffn.gated  # ReGLU: up * relu(gate)
    # no windows and every layer RoPE: one K/V of 2 heads x 128 per layer
    assert kv_cache(spec, BF16, BF16).bytes_per_sequence(100_000) == 32 * 2 * 2 * 128 * 2 * 100_000


def test_21b_count_and_window_layout():
    spec = parse_config(ST_21B)
    p = count_params(spec)
    hand = _hand(151936, 2560, 52, 28, 4, 128, 64, 768, tied=False)
    assert p.total == hand == 21_506_562_560
    # the quoted table's 21.5 B / 3.33 B: its "activated" leaves out the embedding lookup (the head is counted)
    assert round(p.total / 1e9, 1) == 21.5 and round((p.active - p.embedding) / 1e9, 2) == 3.33
    windows = [layer.mixer.window for layer in spec.layers]
    assert [i for i, w in enumerate(windows) if w is None] == list(range(0, 52, 4))
    assert sum(w == 4096 for w in windows) == 39
    # 13 full layers at the whole context, 39 capped at 4096; 4 KV heads x 128, bf16 (the calculator test's formula)
    per_layer = 2 * 4 * 128 * 2
    assert kv_cache(spec, BF16, BF16).bytes_per_sequence(100_000) == per_layer * (13 * 100_000 + 39 * 4096)


def test_equals_transformers_mixtral_on_meta():
    """The same modules under Mixtral's names (gate, experts w1 / w2 / w3): transformers' own count."""
    small = dict(ST_4B, num_hidden_layers=2, vocab_size=1000, rope_layout=[1, 0], sliding_window_layout=[0, 1])
    mixtral = {"model_type": "mixtral", "hidden_size": 1536, "intermediate_size": 768, "num_hidden_layers": 2,
               "num_attention_heads": 12, "num_key_value_heads": 2, "head_dim": 128, "num_local_experts": 32,
               "num_experts_per_tok": 4, "vocab_size": 1000, "tie_word_embeddings": True}
    assert count_params(parse_config(small)).total == unique_param_count(hf_model(mixtral))
    untied = dict(small, tie_word_embeddings=False)
    assert count_params(parse_config(untied)).total == unique_param_count(hf_model(dict(mixtral,
                                                                                         tie_word_embeddings=False)))


def test_router_nope_layers_and_class_defaults():
    spec = parse_config(dict(ST_4B, rope_layout=[0 if i % 4 == 3 else 1 for i in range(32)]))
    assert spec.numerics.router == RouterKind.LOGIT_SIGMOID and spec.numerics.norm_topk_prob
    # the modeling code renormalises whatever norm_topk_prob says
    assert parse_config(dict(ST_4B, norm_topk_prob=False)).numerics.norm_topk_prob
    soft = parse_config(dict(ST_4B, moe_primary_router_apply_softmax=True))
    assert soft.numerics.router == RouterKind.TOPK_SOFTMAX
    assert [layer.mixer.rotary_dim > 0 for layer in spec.layers][:4] == [True, True, True, False]
    # a config with only the geometry: the remote class's defaults (4B's) fill the rest, all RoPE, no windows
    bare = {"model_type": "smallthinker", "hidden_size": 1536, "num_hidden_layers": 32, "vocab_size": 151936}
    bare_spec = parse_config(bare)
    assert count_params(bare_spec).total == 4_035_085_824
    assert all(layer.mixer.rotary_dim == 128 and layer.mixer.window is None for layer in bare_spec.layers)


def test_verify_refuses_the_pre_norm_router_by_name():
    model = pytest.importorskip("planner.runtime.model", reason="the runtime needs torch")
    from planner.analysis.errors import RuntimeUnavailableError

    tiny = dict(ST_4B, hidden_size=64, head_dim=16, num_attention_heads=4, num_key_value_heads=2, num_hidden_layers=2,
                moe_ffn_hidden_size=32, moe_num_primary_experts=4, moe_num_active_primary_experts=2, vocab_size=128,
                rope_layout=[1, 1], sliding_window_layout=[0, 0])
    with pytest.raises(RuntimeUnavailableError, match="before input_layernorm"):
        model.build_decoder(parse_config(tiny), seed=0)


def test_cli_and_bad_layout(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(ST_4B))
    r = run("analyze", str(path), "--json")
    assert r.code == 0, r.err
    assert r.json["params"]["total"] == 4_035_085_824
    path.write_text(json.dumps(dict(ST_4B, sliding_window_layout=[0] * 31)))
    run("analyze", str(path)).assert_error("sliding_window_layout")
    path.write_text(json.dumps(dict(ST_4B, moe_num_active_primary_experts=40)))
    run("analyze", str(path)).assert_error("num_experts_per_tok")


def test_checkpoint_names_land_on_the_router_and_expert_rows():
    """modeling_smallthinker.py's names (block_sparse_moe.primary_router, experts.N.gate / up / down) map onto our router
    and the gate / up rows of the stacked experts."""
    torch = pytest.importorskip("torch", reason="the loader needs torch")
    from planner.runtime.load import translate

    tiny = dict(ST_4B, hidden_size=64, head_dim=16, num_attention_heads=4, num_key_value_heads=2, num_hidden_layers=2,
                moe_ffn_hidden_size=32, moe_num_primary_experts=4, moe_num_active_primary_experts=2, vocab_size=128,
                rope_layout=[1, 1], sliding_window_layout=[0, 0])
    spec = parse_config(tiny)
    pre = "model.layers.0.block_sparse_moe."

    def where(name, shape):
        return [(ours, idx) for ours, idx, _ in translate(spec, pre + name, torch.zeros(shape))]

    assert where("primary_router.weight", (4, 64)) == [("model.layers.0.mlp.router.weight", None)]
    assert where("experts.1.gate.weight", (32, 64)) == [("model.layers.0.mlp.experts.gate_up_proj", (1, slice(0, 32)))]
    assert where("experts.1.up.weight", (32, 64)) == [("model.layers.0.mlp.experts.gate_up_proj", (1, slice(32, 64)))]
    assert where("experts.1.down.weight", (64, 32)) == [("model.layers.0.mlp.experts.down_proj", (1,))]


def test_rope_layout_under_transformers_name_is_read_alike():
    """``no_rope_layers`` (the name transformers' readers use; rope_layout is SmallThinker's alias of it) switches the
    per-layer NoPE reading on just as rope_layout does: the same layers, the same NoPE ones."""
    cfg = dict(ST_4B, rope_layout=[1, 1, 1, 0] * 8)  # NoPE every fourth layer (the 21B's kind of layout)
    renamed = {("no_rope_layers" if k == "rope_layout" else k): v for k, v in cfg.items()}
    assert parse_config(renamed).layers == parse_config(cfg).layers
    assert parse_config(renamed).layers != parse_config(ST_4B).layers
