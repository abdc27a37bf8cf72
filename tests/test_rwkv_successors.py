"""RWKV-7 "Goose" (fla's remote code, model_type rwkv7), RWKV-6 "Finch" and RWKV-5 "Eagle" (the RWKV hub repos' remote
code, model_types rwkv6 / rwkv5): no transformers class, so the counts are checked against hand counts written from
the source shapes (flash-linear-attention fla/layers/rwkv7.py, fla/models/rwkv7/modeling_rwkv7.py; the
RWKV/v6-Finch-*-HF and RWKV/rwkv-5-world-* modeling_rwkv6.py / modeling_rwkv5.py / configuration_*.py) and
against parameter totals of real checkpoints quoted in public code."""

from __future__ import annotations

import pytest

from planner.analysis.config import parse_config
from planner.analysis.params import count_params

# fla-hub/rwkv7-0.1B-world's config.json (the fields as fla's RWKV7Config writes them; vocab 65536, the RWKV World
# tokenizer; the LoRA ranks of BlinkDL's 0.1B: w 64 / a 64 / v 32 / g 128)
RWKV7_01B = {"a_low_rank_dim": 64, "attn": None, "attn_mode": "chunk", "bos_token_id": 0, "decay_low_rank_dim": 64,
             "eos_token_id": 0, "fuse_cross_entropy": True, "fuse_norm": False, "gate_low_rank_dim": 128,
             "head_dim": 64, "hidden_act": "sqrelu", "hidden_ratio": 4.0, "hidden_size": 768,
             "initializer_range": 0.006, "intermediate_size": 3072, "max_position_embeddings": 2048,
             "model_type": "rwkv7", "norm_bias": True, "norm_eps": 1e-05, "norm_first": True, "num_heads": 32,
             "num_hidden_layers": 12, "tie_word_embeddings": False, "use_cache": True, "v_low_rank_dim": 32,
             "vocab_size": 65536}

# RWKV/v6-Finch-1B6-HF's config.json (remote Rwkv6Config fields)
FINCH_1B6 = {"architectures": ["Rwkv6ForCausalLM"], "attention_hidden_size": 2048, "bos_token_id": 0,
             "eos_token_id": 0, "head_size": 64, "head_size_divisor": 8, "hidden_size": 2048,
             "intermediate_size": None, "layer_norm_epsilon": 1e-05, "model_type": "rwkv6", "num_hidden_layers": 24,
             "rescale_every": 6, "tie_word_embeddings": False, "use_cache": True, "vocab_size": 65536}

TINY7 = {"model_type": "rwkv7", "hidden_size": 64, "num_hidden_layers": 3, "vocab_size": 300, "head_dim": 16,
         "intermediate_size": 96, "decay_low_rank_dim": 8, "a_low_rank_dim": 8, "v_low_rank_dim": 4,
         "gate_low_rank_dim": 16}
TINY6 = {"model_type": "rwkv6", "hidden_size": 64, "num_hidden_layers": 3, "vocab_size": 300, "head_size": 16}


def rwkv7_layer(h, inter, w, a, v, g, first, value_dim=None):
    """One fla RWKV7Block by hand (hidden h, key dim h, value dim V): attn_norm / ffn_norm (LayerNorms with bias,
    4h); x_r, x_w, x_k, x_v, x_a, x_g (6h); k_k, k_a (2h); r_k (H x D = h); r_proj, k_proj (h x h), v_proj (V x h),
    o_proj (h x V); w_lora h->w->h with bias, a_lora h->a->h with bias, v_lora h->v->V with bias (not on layer 0),
    g_lora h->g->V without bias; g_norm weight and bias (2V); ffn x_k (h), key (inter x h), value (h x inter)."""
    vd = value_dim or h
    attn = 6 * h + 2 * h + h + 2 * h * h + 2 * h * vd
    attn += (h * w + w * h + h) + (h * a + a * h + h) + (h * g + g * vd) + 2 * vd
    if not first:
        attn += h * v + v * vd + vd
    return 4 * h + attn + h + 2 * h * inter


def rwkv7_total(h, layers, vocab, inter, w, a, v, g):
    """Embedding and untied head (2·vocab·h), layer 0's pre_norm and the final norm (4h), the blocks."""
    return 2 * vocab * h + 4 * h + sum(rwkv7_layer(h, inter, w, a, v, g, i == 0) for i in range(layers))


def test_rwkv7_0_1b_world_by_hand_state_and_no_kv():
    """fla-hub/rwkv7-0.1B-world: 191,034,624 parameters by hand (the paper's "0.19B"), all active; nothing cached
    per token; per sequence and layer two shifted tokens (bf16) and a 12 x 64 x 64 fp32 state."""
    from planner.analysis.dtypes import get_dtype
    from planner.analysis.kv import kv_cache

    spec = parse_config(RWKV7_01B)
    p = count_params(spec)
    assert p.total == p.active == rwkv7_total(768, 12, 65536, 3072, 64, 64, 32, 128) == 191_034_624
    cache = kv_cache(spec, get_dtype("bf16"), get_dtype("bf16"))
    assert cache.bytes_per_token == 0
    assert cache.state_bytes_per_sequence == 12 * (2 * 768 * 2 + 12 * 64 * 64 * 4) == 2_396_160
    assert [layer.kind for layer in spec.layers] == ["rwkv7"] * 12
    assert spec.max_position_embeddings is None  # (fla reads it for hybrid attention layers only)


@pytest.mark.parametrize("h,layers,inter,ranks,published,extra", [
    # RWKV7-World3 2.9B, BlinkDL's .pth: 1062 tensors, 2,948,065,280 parameters (asserted in public test code that
    # loads rwkv7-g1 2.9B: n_layer 32, n_embd 2560, dim_ffn 10240); that format keeps layer 0's unused v0 / v1 / v2
    # (h + h x 64 + 64 x h), which fla's converter drops (utils/convert_from_rwkv7.py: unused_names)
    (2560, 32, 10240, (96, 96, 64, 320), 2_948_065_280, 2560 + 2 * 2560 * 64),
    # RWKV-7 G1 1.5B converted to safetensors: 1,527,404,544 parameters (a public conversion script's validation)
    (2048, 24, 8192, (96, 96, 64, 256), 1_527_404_544, 0)])
def test_rwkv7_published_checkpoints(h, layers, inter, ranks, published, extra):
    cfg = dict(RWKV7_01B, hidden_size=h, num_hidden_layers=layers, intermediate_size=inter,
               decay_low_rank_dim=ranks[0], a_low_rank_dim=ranks[1], v_low_rank_dim=ranks[2],
               gate_low_rank_dim=ranks[3])
    total = count_params(parse_config(cfg)).total
    assert total == rwkv7_total(h, layers, 65536, inter, *ranks) == published - extra


def test_rwkv7_defaults_null_ranks_value_dim_and_heads():
    """RWKV7Config's defaults (head_dim 64, hidden_ratio 4 -> intermediate rounded up to 32, ranks 64 / 128 / 64 / 16);
    null ranks take RWKV7Attention's formulas (hidden 768: decay / a round(2.5·sqrt(768)/32)·32 = 64, gate
    round(5·sqrt(768)/32)·32 = 128, v max(32, round(1.7·sqrt(768)/32)·32) = 32); head_dim null -> hidden /
    num_heads;
    value_dim 2h widens v_proj / o_proj / v_lora / g_lora / g_norm and the state's value side."""
    from planner.analysis.dtypes import get_dtype
    from planner.analysis.kv import kv_cache

    spec = parse_config({"model_type": "rwkv7", "hidden_size": 100, "num_hidden_layers": 2, "vocab_size": 300,
                         "head_dim": 20})
    m = spec.layers[1].mixer
    assert (m.intermediate_size, m.decay_rank, m.gate_rank, m.a_rank, m.v_rank) == (416, 64, 128, 64, 16)
    assert count_params(spec).total == 2 * 300 * 100 + 400 + sum(
        rwkv7_layer(100, 416, 64, 64, 16, 128, i == 0) for i in range(2))
    nulls = dict(RWKV7_01B, decay_low_rank_dim=None, gate_low_rank_dim=None, a_low_rank_dim=None, v_low_rank_dim=None)
    assert count_params(parse_config(nulls)).total == 191_034_624
    heads = dict(RWKV7_01B, head_dim=None, num_heads=6)  # head_dim 128
    assert parse_config(heads).layers[0].mixer.head_dim == 128
    wide = dict(RWKV7_01B, value_dim=1536)
    spec = parse_config(wide)
    h = 768
    assert count_params(spec).total == 2 * 65536 * h + 4 * h + sum(
        rwkv7_layer(h, 3072, 64, 64, 32, 128, i == 0, value_dim=2 * h) for i in range(12))
    assert kv_cache(spec, get_dtype("bf16"), get_dtype("bf16")).state_bytes_per_sequence == \
        12 * (2 * h * 2 + 12 * 64 * 128 * 4)
    tied = parse_config(dict(TINY7, tie_word_embeddings=True, norm_bias=False, norm_first=False))
    h = 64  # no head, bias-free LayerNorms (2h per layer, h final), no pre_norm
    assert count_params(tied).total == 300 * h + h + sum(
        rwkv7_layer(h, 96, 8, 8, 4, 16, i == 0) - 2 * h for i in range(3))


@pytest.mark.parametrize("change,field", [({"hidden_size": 0}, "hidden_size"), ({"head_dim": 24}, "head_dim"),
                                          ({"value_dim": 100}, "value_dim"), ({"value_dim": [64, 128]}, "value_dim"),
                                          ({"hidden_ratio": "wide"}, "hidden_ratio"),
                                          ({"head_dim": None, "num_heads": 5}, "num_heads"),
                                          ({"v_low_rank_dim": -1}, "v_low_rank_dim"),
                                          ({"attn": "all"}, "attn")])
def test_rwkv7_bad_fields_are_config_errors(change, field):
    from planner.analysis.errors import ConfigError

    with pytest.raises(ConfigError, match=field):
        parse_config(dict(TINY7, **change))


def test_rwkv7_hybrid_attention_layers_are_refused():
    from planner.analysis.errors import UnsupportedModelError

    with pytest.raises(UnsupportedModelError, match="hybrid softmax-attention"):
        parse_config(dict(TINY7, attn={"layers": [1], "num_heads": 4}))
    assert parse_config(dict(TINY7, attn={"layers": []})).num_layers == 3  # (no attention layer: pure RWKV-7)


def test_rwkv7_checkpoint_names_map_onto_ours():
    """fla's parameter names (RWKV7ForCausalLM: model.embeddings, model.layers.N.{pre_norm (layer 0), attn_norm,
    attn.*, ffn_norm, ffn.*}, model.norm, lm_head), written here from the source, map exactly onto our tensors."""
    torch = pytest.importorskip("torch", reason="needs torch (the runtime extra)")
    from planner.runtime.load import translate

    spec = parse_config(TINY7)
    h, v, inter, H, D = 64, 64, 96, 4, 16
    names = {"model.embeddings.weight": (300, h), "model.norm.weight": (h,), "model.norm.bias": (h,),
             "lm_head.weight": (300, h), "model.layers.0.pre_norm.weight": (h,), "model.layers.0.pre_norm.bias": (h,)}
    for i in range(3):
        p = f"model.layers.{i}"
        for n in ("attn_norm", "ffn_norm"):
            names.update({f"{p}.{n}.weight": (h,), f"{p}.{n}.bias": (h,)})
        for x in "rwkvag":
            names[f"{p}.attn.x_{x}"] = (1, 1, h)
        names.update({f"{p}.attn.k_k": (h,), f"{p}.attn.k_a": (h,), f"{p}.attn.r_k": (H, D),
                      f"{p}.attn.r_proj.weight": (h, h), f"{p}.attn.k_proj.weight": (h, h),
                      f"{p}.attn.v_proj.weight": (v, h), f"{p}.attn.o_proj.weight": (h, v),
                      f"{p}.attn.g_norm.weight": (v,), f"{p}.attn.g_norm.bias": (v,),
                      f"{p}.ffn.x_k": (h,), f"{p}.ffn.key.weight": (inter, h), f"{p}.ffn.value.weight": (h, inter)})
        for lora, rank, out, bias in (("w", 8, h, True), ("a", 8, h, True), ("v", 4, v, True), ("g", 16, v, False)):
            if lora == "v" and i == 0:
                continue
            names[f"{p}.attn.{lora}_lora.lora.0.weight"] = (rank, h)
            names[f"{p}.attn.{lora}_lora.lora.2.weight"] = (out, rank)
            if bias:
                names[f"{p}.attn.{lora}_lora.lora.2.bias"] = (out,)
    theirs = {n: tuple(t.shape) for hf, shape in names.items()
              for n, _, t in translate(spec, hf, torch.empty(shape, device="meta"))}
    assert theirs == {t.name: tuple(t.shape) for t in spec.tensors()}


def test_rwkv7_decode_flops_and_state_traffic():
    """A decode step: matmul FLOPs 2 x (the projections and LoRAs of every layer, the head) by hand; the WKV scan 8
    FLOPs per state element (4 multiply-adds: S·a, the rank-one update, v·kᵀ, S·r); every tensor read once (one
    embedding row); the state read and written once per sequence; a fresh prompt only writes it."""
    from planner.analysis.dtypes import get_dtype
    from planner.analysis.kv import kv_cache
    from planner.analysis.trace import step_ops
    from planner.analysis.weights import weight_format

    spec = parse_config(TINY7)
    fmt, _ = weight_format(spec, "bf16")
    ops = step_ops(spec, fmt, fmt.act, batch=1, new_tokens=1, cached_tokens=5)
    h, inter = 64, 96
    lora = h * 8 * 2 + h * 8 * 2 + h * 16 * 2  # w, a, g down + up
    per_layer = 4 * h * h + lora + 2 * h * inter
    assert sum(o.flops for o in ops if o.kind == "matmul") == 2 * (3 * per_layer + 2 * h * 4 * 2 + 300 * h)
    assert sum(o.flops for o in ops if o.kind == "scan") == 3 * 8 * 4 * 16 * 16
    emb = spec.embedding_tensors()
    assert sum(o.weight_bytes for o in ops) == fmt.bytes_of(spec.tensors()) - fmt.bytes_of(emb) + 2 * h
    per_seq = kv_cache(spec, get_dtype("bf16"), fmt.act).state_bytes_per_sequence
    ops = step_ops(spec, fmt, get_dtype("bf16"), batch=3, new_tokens=1, cached_tokens=7)
    assert sum(o.state_read_bytes for o in ops) == sum(o.state_write_bytes for o in ops) == 3 * per_seq > 0
    prefill = step_ops(spec, fmt, get_dtype("bf16"), batch=2, new_tokens=9, cached_tokens=0)
    assert sum(o.state_read_bytes for o in prefill) == 0 and sum(o.state_write_bytes for o in prefill) == 2 * per_seq


# ---- RWKV-6 Finch -------------------------------------------------------------------------------------------------


def finch_layer(h, inter, m, d, heads, s):
    """One remote Rwkv6Block by hand: ln1 / ln2 (4h); time_maa_x/w/k/v/r/g (6h), time_maa_w1 (h x 5m), time_maa_w2
    (5 x m x h), time_decay (h), time_decay_w1 (h x d), time_decay_w2 (d x h), time_faaaa (heads x s), receptance /
    key / value / gate / output (5h²), ln_x (2h); feed_forward time_maa_k/r (2h), key / value (2·h·inter),
    receptance (h²)."""
    att = 6 * h + h * 5 * m + 5 * m * h + h + h * d + d * h + heads * s + 5 * h * h + 2 * h
    return 4 * h + att + 2 * h + 2 * h * inter + h * h


def test_finch_1b6_by_hand_published_and_state():
    """RWKV/v6-Finch-1B6-HF: 1,599,873,024 parameters (24 blocks of 2048, channel-mix int(2048 x 3.5) = 7168, LoRA
    ranks 32 / 64, vocab 65536, untied head, pre_ln and ln_out); the same total is asserted in public code that
    loads that checkpoint converted to fla's rwkv6 layout (582 tensors there: the same parameters regrouped).
    State per sequence and layer (the remote code's state list):
    two shifted tokens (bf16) and a 32 x 64 x 64 fp32 WKV state; nothing per token."""
    from planner.analysis.dtypes import get_dtype
    from planner.analysis.kv import kv_cache

    spec = parse_config(FINCH_1B6)
    h = 2048
    p = count_params(spec)
    assert p.total == p.active == 2 * 65536 * h + 4 * h + 24 * finch_layer(h, 7168, 32, 64, 32, 64) == 1_599_873_024
    cache = kv_cache(spec, get_dtype("bf16"), get_dtype("bf16"))
    assert cache.bytes_per_token == 0
    assert cache.state_bytes_per_sequence == 24 * (2 * h * 2 + 32 * 64 * 64 * 4)


def test_finch_7b_and_14b_use_the_wider_loras():
    """hidden 4096 (Finch 7B: 32 layers; 14B: 61 layers): time_mix_extra_dim 64, time_decay_extra_dim 128,
    channel-mix 14336. (No published exact total found for these; the shapes are the remote code's.)"""
    h = 4096
    for layers in (32, 61):
        cfg = dict(FINCH_1B6, hidden_size=h, attention_hidden_size=h, num_hidden_layers=layers)
        assert count_params(parse_config(cfg)).total == 2 * 65536 * h + 4 * h + layers * finch_layer(
            h, 14336, 64, 128, 64, 64)


def test_finch_intermediate_size_is_ignored_as_the_remote_config_does():
    spec = parse_config(dict(TINY6, intermediate_size=256))
    assert spec.layers[0].mixer.intermediate_size == 224  # int(64 x 3.5) // 32 x 32
    assert any("intermediate_size 256 is ignored" in c for c in spec.caveats)
    assert count_params(spec).total == 2 * 300 * 64 + 4 * 64 + 3 * finch_layer(64, 224, 32, 64, 4, 16)


def test_finch_decode_flops():
    """matmuls: per layer 5 h² (time-mix) + the mix LoRA (h·5m + 5·m·h) + the decay LoRA (2·h·d) + channel-mix
    (2·h·inter + h²), and the head; the WKV scan 4 FLOPs per state element (kᵀv and r·S)."""
    from planner.analysis.trace import step_ops
    from planner.analysis.weights import weight_format

    spec = parse_config(TINY6)
    fmt, _ = weight_format(spec, "bf16")
    ops = step_ops(spec, fmt, fmt.act, batch=1, new_tokens=1, cached_tokens=5)
    h, inter = 64, 224
    per_layer = 5 * h * h + 10 * 32 * h + 2 * h * 64 + 2 * h * inter + h * h
    assert sum(o.flops for o in ops if o.kind == "matmul") == 2 * (3 * per_layer + 300 * h)
    assert sum(o.flops for o in ops if o.kind == "scan") == 3 * 4 * 4 * 16 * 16


def test_finch_checkpoint_names_map_onto_ours():
    """The remote Rwkv6ForCausalLM names (rwkv.embeddings, rwkv.blocks.N.{pre_ln, ln1, ln2, attention.*,
    feed_forward.*}, rwkv.ln_out, head), written from the source, map exactly onto our tensors."""
    torch = pytest.importorskip("torch", reason="needs torch (the runtime extra)")
    from planner.runtime.load import translate

    spec = parse_config(TINY6)
    h, inter = 64, 224
    names = {"rwkv.embeddings.weight": (300, h), "rwkv.ln_out.weight": (h,), "rwkv.ln_out.bias": (h,),
             "head.weight": (300, h), "rwkv.blocks.0.pre_ln.weight": (h,), "rwkv.blocks.0.pre_ln.bias": (h,)}
    for i in range(3):
        p = f"rwkv.blocks.{i}"
        for n in ("ln1", "ln2"):
            names.update({f"{p}.{n}.weight": (h,), f"{p}.{n}.bias": (h,)})
        a = f"{p}.attention"
        for x in "xwkvrg":
            names[f"{a}.time_maa_{x}"] = (1, 1, h)
        names.update({f"{a}.time_maa_w1": (h, 160), f"{a}.time_maa_w2": (5, 32, h), f"{a}.time_decay": (1, 1, h),
                      f"{a}.time_decay_w1": (h, 64), f"{a}.time_decay_w2": (64, h), f"{a}.time_faaaa": (4, 16),
                      f"{a}.output.weight": (h, h), f"{a}.ln_x.weight": (h,), f"{a}.ln_x.bias": (h,)})
        for n in ("receptance", "key", "value", "gate"):
            names[f"{a}.{n}.weight"] = (h, h)
        f = f"{p}.feed_forward"
        names.update({f"{f}.time_maa_k": (1, 1, h), f"{f}.time_maa_r": (1, 1, h), f"{f}.key.weight": (inter, h),
                      f"{f}.receptance.weight": (h, h), f"{f}.value.weight": (h, inter)})
    theirs = {n: tuple(t.shape) for hf, shape in names.items()
              for n, _, t in translate(spec, hf, torch.empty(shape, device="meta"))}
    assert theirs == {t.name: tuple(t.shape) for t in spec.tensors()}


def test_fla_rwkv6_format_and_bad_finch_fields():
    from planner.analysis.errors import ConfigError, UnsupportedModelError

    with pytest.raises(UnsupportedModelError, match="flash-linear-attention's format"):
        parse_config({"model_type": "rwkv6", "hidden_size": 64, "num_hidden_layers": 2, "vocab_size": 300,
                      "expand_k": 0.5, "num_heads": 4, "proj_low_rank_dim": 32})
    for change, field in (({"head_size": 24}, "head_size"), ({"attention_hidden_size": 128}, "attention_hidden_size"),
                          ({"hidden_size": -1}, "hidden_size"), ({"layer_norm_epsilon": "x"}, "layer_norm_epsilon")):
        with pytest.raises(ConfigError, match=field):
            parse_config(dict(TINY6, **change))


# ---- RWKV-5 Eagle -------------------------------------------------------------------------------------------------

# RWKV/rwkv-5-world-1b5's config.json (remote Rwkv5Config fields)
EAGLE_1B5 = dict(FINCH_1B6, architectures=["Rwkv5ForCausalLM"], model_type="rwkv5", num_attention_heads=64)
TINY5 = {"model_type": "rwkv5", "hidden_size": 64, "num_hidden_layers": 3, "vocab_size": 300, "head_size": 16}


def eagle_layer(h, inter):
    """One remote RWKV-5 block by hand: ln1 / ln2 (4h); time_decay, time_faaaa (H x S = h each); time_mix_key /
    value / receptance / gate (4h); receptance / key / value / gate / output (5h²); ln_x (2h); feed_forward
    time_mix_key / receptance (2h), key / value (2·h·inter), receptance (h²)."""
    return 4 * h + 2 * h + 4 * h + 5 * h * h + 2 * h + 2 * h + 2 * h * inter + h * h


def test_eagle_1b5_by_hand_and_state():
    """RWKV/rwkv-5-world-1b5: 24 blocks of 2048, channel-mix 7168 (the remote config drops intermediate_size),
    1,577,754,624 parameters by hand (no exact published total found; the model card says 1.5B); state per sequence
    and layer as RWKV-6's (two shifted tokens, 32 x 64 x 64 fp32)."""
    from planner.analysis.dtypes import get_dtype
    from planner.analysis.kv import kv_cache

    spec = parse_config(EAGLE_1B5)
    h = 2048
    p = count_params(spec)
    assert p.total == p.active == 2 * 65536 * h + 4 * h + 24 * eagle_layer(h, 7168) == 1_577_754_624
    cache = kv_cache(spec, get_dtype("bf16"), get_dtype("bf16"))
    assert cache.bytes_per_token == 0
    assert cache.state_bytes_per_sequence == 24 * (2 * h * 2 + 32 * 64 * 64 * 4)


def test_eagle_head_size_fields_flops_and_names():
    """head_size absent: num_attention_heads is the head size (a revision of the remote code reads it so); the two
    disagreeing is a config error. Decode FLOPs: 6 h² + 2·h·inter per layer and the head; the WKV scan 4 per state
    element. The remote names (rwkv.blocks.N.attention.time_mix_* ...) map onto ours."""
    torch = pytest.importorskip("torch", reason="needs torch (the runtime extra)")
    from planner.analysis.errors import ConfigError
    from planner.analysis.trace import step_ops
    from planner.analysis.weights import weight_format
    from planner.runtime.load import translate

    alt = {k: v for k, v in TINY5.items() if k != "head_size"}
    assert parse_config(dict(alt, num_attention_heads=32)).layers[0].mixer.head_size == 32
    with pytest.raises(ConfigError, match="num_attention_heads"):
        parse_config(dict(TINY5, num_attention_heads=32))
    spec = parse_config(TINY5)
    fmt, _ = weight_format(spec, "bf16")
    ops = step_ops(spec, fmt, fmt.act, batch=1, new_tokens=1, cached_tokens=5)
    h, inter = 64, 224
    assert sum(o.flops for o in ops if o.kind == "matmul") == 2 * (3 * (6 * h * h + 2 * h * inter) + 300 * h)
    assert sum(o.flops for o in ops if o.kind == "scan") == 3 * 4 * 4 * 16 * 16
    names = {"rwkv.embeddings.weight": (300, h), "rwkv.ln_out.weight": (h,), "rwkv.ln_out.bias": (h,),
             "head.weight": (300, h), "rwkv.blocks.0.pre_ln.weight": (h,), "rwkv.blocks.0.pre_ln.bias": (h,)}
    for i in range(3):
        p = f"rwkv.blocks.{i}"
        for n in ("ln1", "ln2"):
            names.update({f"{p}.{n}.weight": (h,), f"{p}.{n}.bias": (h,)})
        a = f"{p}.attention"
        names.update({f"{a}.time_decay": (4, 16), f"{a}.time_faaaa": (4, 16), f"{a}.output.weight": (h, h),
                      f"{a}.ln_x.weight": (h,), f"{a}.ln_x.bias": (h,)})
        for n in ("key", "value", "receptance", "gate"):
            names[f"{a}.time_mix_{n}"] = (1, 1, h)
            names[f"{a}.{n}.weight"] = (h, h)
        f = f"{p}.feed_forward"
        names.update({f"{f}.time_mix_key": (1, 1, h), f"{f}.time_mix_receptance": (1, 1, h),
                      f"{f}.key.weight": (inter, h), f"{f}.receptance.weight": (h, h), f"{f}.value.weight": (h, inter)})
    theirs = {n: tuple(t.shape) for hf, shape in names.items()
              for n, _, t in translate(spec, hf, torch.empty(shape, device="meta"))}
    assert theirs == {t.name: tuple(t.shape) for t in spec.tensors()}
    assert count_params(spec).total == 2 * 300 * h + 4 * h + 3 * eagle_layer(h, inter)


@pytest.mark.parametrize("cfg,message", [(TINY7, "verify does not support RWKV-7 layers yet"),
                                         (TINY6, "verify does not support RWKV-6 layers yet"),
                                         (TINY5, "verify does not support RWKV-5 layers yet")])
def test_verify_refuses_rwkv5_6_7(tmp_path, cfg, message):
    from tests.test_runtime import assert_verify_refuses

    assert_verify_refuses(tmp_path, cfg, message)


def test_rwkv7_and_finch_tensor_parallel_split_and_refusal():
    """Over tp ranks everything but the norms (LayerNorms, the g_norm / ln_x GroupNorms) splits; a tp that does not
    divide the heads is refused, naming the family."""
    from planner.analysis.errors import OptionError
    from planner.analysis.parallel import shard_params, tp_plan

    h = 64
    for cfg, whole in ((TINY7, 3 * (4 * h + 2 * h) + 4 * h), (TINY6, 3 * (4 * h + 2 * h) + 4 * h)):
        spec = parse_config(cfg)  # 4 heads of 16
        assert shard_params(spec, tp_plan(spec, 2)) == whole + (count_params(spec).total - whole) // 2
    with pytest.raises(OptionError, match="RWKV-7's heads"):
        tp_plan(parse_config(TINY7), 8)
    with pytest.raises(OptionError, match="RWKV-5's heads"):
        tp_plan(parse_config(TINY5), 8)
