"""Model_types an audit against vLLM's supported-architecture list found falling to the generic Llama-style reading
although their block is an existing family's, aliased to that family (analysis/families/__init__.py).

StableLM-Epoch (``stablelm_epoch``, remote code ``StableLMEpochForCausalLM``: stabilityai/stablelm-zephyr-3b and the
first uploads of stablelm-3b-4e1t / stablelm-2-1_6b; vLLM serves it with stablelm.py, the same class as
transformers' ``stablelm``): transformers' StableLM block (biased LayerNorms, RoPE on rope_pct of each head, optional
q/k/v bias) under the original field names ``rope_pct`` and ``norm_eps``. Read generically it came to 2,795,276,800
for stablelm-zephyr-3b: RMSNorms without bias, 166,400 parameters (65 LayerNorm biases of 2560) short, and RoPE over
the whole head.
"""

from __future__ import annotations

import json

from planner.analysis.config import parse_config
from planner.analysis.kv import kv_cache
from planner.analysis.params import count_params
from planner.analysis.weights import weight_format
from tests.clirun import run
from tests.oracle import hf_model, unique_param_count

#: stabilityai/stablelm-zephyr-3b config.json (the hub's StableLMEpochConfig field names: rope_pct, norm_eps,
#: use_qkv_bias; its shapes are those of stablelm-3b-4e1t, which transformers' StableLmConfig takes as defaults)
STABLELM_ZEPHYR_3B = {
    "architectures": ["StableLMEpochForCausalLM"],
    "auto_map": {"AutoConfig": "configuration_stablelm_epoch.StableLMEpochConfig",
                 "AutoModelForCausalLM": "modeling_stablelm_epoch.StableLMEpochForCausalLM"},
    "bos_token_id": 0, "eos_token_id": 0, "hidden_act": "silu", "hidden_size": 2560, "initializer_range": 0.02,
    "intermediate_size": 6912, "max_position_embeddings": 4096, "model_type": "stablelm_epoch", "norm_eps": 1e-05,
    "num_attention_heads": 32, "num_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 32, "rope_pct": 0.25,
    "rope_theta": 10000, "rotary_scaling_factor": 1.0, "tie_word_embeddings": False, "torch_dtype": "bfloat16",
    "use_cache": True, "vocab_size": 50304,
}


def _hand_count(h: int, i: int, n: int, v: int, *, qkv_bias: bool = False) -> int:
    layer = 4 * h * h + 3 * h * i + 2 * 2 * h + (3 * h if qkv_bias else 0)  # q/k/v/o, gated MLP, 2 biased LayerNorms
    return 2 * v * h + n * layer + 2 * h  # untied embedding and head, the final biased LayerNorm


def _as_transformers(cfg: dict) -> dict:
    """The same model as transformers' StableLmConfig names it (rope_pct / norm_eps renamed)."""
    d = {k: v for k, v in cfg.items() if k not in ("auto_map", "architectures", "rope_pct", "norm_eps", "num_heads",
                                                   "rotary_scaling_factor")}
    return dict(d, model_type="stablelm", partial_rotary_factor=cfg["rope_pct"], layer_norm_eps=cfg["norm_eps"])


def test_stablelm_zephyr_3b_matches_the_published_count():
    total = _hand_count(2560, 6912, 32, 50304)
    # stablelm-3b-4e1t's model card: "Parameters 2,795,443,200" (stablelm-zephyr-3b is its fine-tune)
    assert total == 2_795_443_200
    spec = parse_config(STABLELM_ZEPHYR_3B)
    assert count_params(spec).total == total
    assert not spec.generic and not any("not a known family" in c for c in spec.caveats)
    attn = spec.layers[0].mixer
    assert attn.rotary_dim == 20 and attn.head_dim == 80  # rope_pct 0.25 of an 80-wide head
    assert spec.norm_eps == 1e-05
    bf16 = weight_format(spec, "bf16")[0].act
    assert kv_cache(spec, bf16, bf16).bytes_per_token == 32 * 2 * 32 * 80 * 2 == 327_680


def test_stablelm_epoch_equals_transformers_stablelm():
    spec = parse_config(STABLELM_ZEPHYR_3B)
    assert count_params(spec).total == unique_param_count(hf_model(_as_transformers(STABLELM_ZEPHYR_3B)))
    # stablelm-2-1_6b's first upload: q/k/v biases (use_qkv_bias), its 1.6B shape
    small = dict(STABLELM_ZEPHYR_3B, hidden_size=2048, intermediate_size=5632, num_hidden_layers=24,
                 vocab_size=100352, use_qkv_bias=True)
    total = _hand_count(2048, 5632, 24, 100352, qkv_bias=True)
    assert count_params(parse_config(small)).total == total
    assert unique_param_count(hf_model(_as_transformers(small))) == total


def test_stablelm_epoch_cli(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(STABLELM_ZEPHYR_3B))
    r = run("analyze", path, "--json")
    assert r.code == 0, r.err
    assert r.json["params"]["total"] == 2_795_443_200
    assert r.json["kv_cache"]["bytes_per_token"] == 327_680
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(dict(STABLELM_ZEPHYR_3B, rope_pct=1.5)))
    run("analyze", bad).assert_error("1.5")
