"""HY-V4-VL (``hy_v4_vl``, tencent/Hy4) and Unlimited-OCR (``unlimited_ocr``, baidu/Unlimited-OCR), transformers 5.24's
wrappers: the whole checkpoint (towers, projector, language model) against a hand count written from the module shapes
of models/hy_v4_vl/modeling_hy_v4_vl.py and models/unlimited_ocr/modeling_unlimited_ocr.py and against
``AutoModelForImageTextToText`` on the meta device, active parameters, KV bytes per token, Unlimited-OCR's decode FLOPs
and cache against transformers' own, and the CLI. No verbatim config.json of either checkpoint was at hand (Hy4's
weights are not public; Unlimited-OCR's hub config is its remote-code format, model_type ``unlimited-ocr``, not read
here), so the configs are transformers' defaults (each class's docstring names the checkpoint), scaled variants and
Unlimited-OCR's language model in the original checkpoint's format (``language_config`` + top-level
``sliding_window``) at the shapes its model cards publish. No network, no remote code."""

from __future__ import annotations

import json

import pytest

from planner.analysis.config import parse_config
from planner.analysis.dtypes import get_dtype
from planner.analysis.errors import ConfigError
from planner.analysis.kv import kv_cache
from planner.analysis.params import count_params
from tests.clirun import run
from tests.oracle import hf_model, unique_param_count

BF16 = get_dtype("bf16")


def _hf_total(cfg: dict) -> int:
    return unique_param_count(hf_model(cfg, image_text=True))


def _hf_active(cfg: dict, k: int) -> int:
    """transformers' unique parameters with each stacked (E, ...) expert tensor counted k / E."""
    seen, n = set(), 0
    for name, p in hf_model(cfg, image_text=True).named_parameters():
        if id(p) not in seen:
            seen.add(id(p))
            n += p.numel() // p.shape[0] * k if ".experts." in name and p.dim() == 3 else p.numel()
    return n


def _write(tmp_path, cfg: dict, name: str = "m"):
    d = tmp_path / name
    d.mkdir()
    (d / "config.json").write_text(json.dumps(cfg))
    return d


# ---- HY-V4-VL ------------------------------------------------------------------------------------

#: transformers' HYV4VLConfig() as saved (to_dict), the shape fields: tencent/Hy4 per the class docstrings
HY_V4_VL = {"model_type": "hy_v4_vl", "tie_word_embeddings": False, "image_token_id": 120120,
            "text_config": {"model_type": "hy_v4_vl_text", "vocab_size": 120832, "hidden_size": 6144,
                            "intermediate_size": 18432, "moe_intermediate_size": 2048, "num_hidden_layers": 78,
                            "num_attention_heads": 64, "num_key_value_heads": 64, "head_dim": 64,
                            "n_routed_experts": 256, "n_shared_experts": 1, "num_experts_per_tok": 8,
                            "routed_scaling_factor": 2.827, "q_lora_rank": 2048, "kv_lora_rank": 512,
                            "qk_nope_head_dim": 192, "qk_rope_head_dim": 64, "v_head_dim": 256, "index_topk": 2048,
                            "index_head_dim": 128, "index_n_heads": 32, "hc_mult": 4,
                            "rope_parameters": {"rope_type": "default", "rope_theta": 10000.0,
                                                "mrope_section": [12, 10, 10]},
                            "mlp_layer_types": ["dense"] + ["sparse"] * 77,
                            "layer_types": ["indexed_attention"] * 78,
                            "indexer_types": ["full" if i == 0 or (i - 1) % 4 == 0 else "shared" for i in range(78)]},
            "vision_config": {"model_type": "hy_v4_vl_vision", "hidden_size": 1536, "intermediate_size": 6144,
                              "num_hidden_layers": 40, "num_attention_heads": 16, "num_key_value_heads": 16,
                              "out_hidden_size": 6144, "patch_size": 16, "spatial_merge_size": 2,
                              "max_image_size": 2048, "num_channels": 3}}


def _hy_text(H, L, heads, ql, kvl, nope, rope, v, ih, idim, hc, E, k, moe, shared, inter, V, full, sparse,
             tied=False) -> tuple[int, int]:
    """HYV4VLTextModel + lm_head: MLA (q_a_proj, q_a_layernorm, q_b_proj, kv_a_proj_with_mqa, kv_a_layernorm,
    kv_b_proj, o_proj), gate_proj (H -> heads x v), sinks; the indexer on full layers (wq_b, wk, k_norm with bias,
    weights_proj); two RMSNorms, attn_hc / ffn_hc (fn 2hc x hc·H, base 2hc, scale 2); a dense SwiGLU or the router
    (E x H) + E experts + shared experts; embedding, final norm, hc_head (hc x hc·H, hc, 1), lm_head. (total, active)"""
    attn = H * ql + ql + ql * heads * (nope + rope) + H * (kvl + rope) + kvl + kvl * heads * (nope + v) \
        + heads * v * H + H * heads * v + heads
    indexer = ql * ih * idim + H * idim + 2 * idim + H * ih
    per = attn + 2 * H + 2 * (2 * hc * hc * H + 2 * hc + 2)
    total = active = 0
    for i in range(L):
        t = per + (indexer if full[i] else 0)
        if sparse[i]:
            mlp = E * H + 3 * H * moe * shared
            total += t + mlp + E * 3 * H * moe
            active += t + mlp + k * 3 * H * moe
        else:
            total += t + 3 * H * inter
            active += t + 3 * H * inter
    rest = V * H + H + hc * hc * H + hc + 1 + (0 if tied else V * H)
    return total + rest, active + rest


def _hy_vision(h, inter, layers, patch, size, merge, out, ch=3) -> int:
    """HunYuan-VL's patch conv (biased), (size / patch)² + 1 positions, blocks (2 LayerNorms, biased q/k/v/o, fc1,
    fc2); HY-V4-VL's merger: proj_conv (h -> h·m², m x m, biased), proj_out (1x1 -> out, biased), image_newline,
    before_rms."""
    n = h * ch * patch * patch + h + ((size // patch) ** 2 + 1) * h
    n += layers * (4 * h + 4 * (h * h + h) + (h * inter + inter) + (inter * h + h))
    wide = h * merge * merge
    return n + wide * h * merge * merge + wide + out * wide + out + out + h


def test_hy_v4_vl_default_config_by_hand_and_transformers():
    full = [i == 0 or (i - 1) % 4 == 0 for i in range(78)]
    sparse = [i > 0 for i in range(78)]
    text, text_active = _hy_text(6144, 78, 64, 2048, 512, 192, 64, 256, 32, 128, 4, 256, 8, 2048, 1, 18432, 120832,
                                 full, sparse)
    vision = _hy_vision(1536, 6144, 40, 16, 2048, 2, 6144)
    spec = parse_config(HY_V4_VL)
    p = count_params(spec)
    assert p.vision == vision == 1_235_126_784
    assert p.total == text + vision == 771_142_515_869 == _hf_total(HY_V4_VL)
    assert p.active == text_active + vision == 50_292_653_213
    # per token and layer: the latent (512) and the rope key (64); the 21 full layers also the indexer key (128)
    assert sum(full) == 21
    assert kv_cache(spec, BF16, BF16).bytes_per_token == (21 * (512 + 64 + 128) + 57 * (512 + 64)) * 2 == 95_232
    # its text model is Hy4-preview's block: the same layers, RoPE on interleaved pairs (M-RoPE, text positions)
    assert spec.numerics.rope_style == "pairs" and spec.model_type == "hy_v4_vl_text"
    assert [layer.kind for layer in spec.layers[:3]] == ["dsa", "dsa+moe", "dsa(shared)+moe"]


#: a scaled variant: small widths, a 3x3 merge, explicit indexer / MLP layer types, tied at the wrapper
HY_SMALL = {"model_type": "hy_v4_vl", "tie_word_embeddings": True,
            "text_config": {"hidden_size": 256, "num_hidden_layers": 4, "num_attention_heads": 4, "q_lora_rank": 48,
                            "kv_lora_rank": 32, "qk_nope_head_dim": 16, "qk_rope_head_dim": 8, "v_head_dim": 24,
                            "index_n_heads": 2, "index_head_dim": 16, "hc_mult": 3, "n_routed_experts": 6,
                            "num_experts_per_tok": 2, "n_shared_experts": 2, "moe_intermediate_size": 40,
                            "intermediate_size": 300, "vocab_size": 1000, "pad_token_id": None,
                            "bos_token_id": None, "eos_token_id": None,
                            "indexer_types": ["full", "shared", "full", "shared"],
                            "mlp_layer_types": ["sparse", "dense", "sparse", "sparse"],
                            "rope_parameters": {"rope_type": "default", "rope_theta": 10000.0,
                                                "mrope_section": [2, 1, 1]}},
            "vision_config": {"hidden_size": 64, "intermediate_size": 96, "num_hidden_layers": 2,
                              "num_attention_heads": 4, "out_hidden_size": 256, "patch_size": 8,
                              "spatial_merge_size": 3, "max_image_size": 128}}


def test_hy_v4_vl_scaled_variant_by_hand_and_transformers():
    text, active = _hy_text(256, 4, 4, 48, 32, 16, 8, 24, 2, 16, 3, 6, 2, 40, 2, 300, 1000,
                            [True, False, True, False], [True, False, True, True], tied=True)
    vision = _hy_vision(64, 96, 2, 8, 128, 3, 256)
    p = count_params(parse_config(HY_SMALL))
    assert (p.total, p.active) == (text + vision, active + vision)
    assert p.total == _hf_total(HY_SMALL) and p.active == _hf_active(HY_SMALL, 2)


def test_hy_v4_vl_refuses_a_merger_width_other_than_the_text_hidden_size():
    bad = json.loads(json.dumps(HY_SMALL))
    bad["vision_config"]["out_hidden_size"] = 128
    with pytest.raises(ConfigError, match="out_hidden_size.*must equal the language model's hidden_size"):
        parse_config(bad)


# ---- Unlimited-OCR -------------------------------------------------------------------------------

#: transformers' UnlimitedOcrConfig() as saved (to_dict), the shape fields: baidu/Unlimited-OCR per the docstrings
UNLIMITED_OCR = {"model_type": "unlimited_ocr", "tie_word_embeddings": False, "image_token_id": 128815,
                 "text_config": {"model_type": "unlimited_ocr_text", "vocab_size": 129280, "hidden_size": 1280,
                                 "intermediate_size": 6848, "num_hidden_layers": 12, "num_attention_heads": 10,
                                 "num_key_value_heads": 10, "head_dim": 128, "n_routed_experts": 64,
                                 "n_shared_experts": 2, "num_experts_per_tok": 6, "moe_intermediate_size": 896,
                                 "topk_method": "greedy", "routed_scaling_factor": 1.0, "sliding_window": 128,
                                 "max_position_embeddings": 32768,
                                 "layer_types": ["reference_sliding_attention"] * 12,
                                 "mlp_layer_types": ["dense"] + ["sparse"] * 11},
                 "vision_config": {"model_type": "unlimited_ocr_vision",
                                   "sam_config": {"hidden_size": 768, "output_channels": 256, "num_hidden_layers": 12,
                                                  "num_attention_heads": 12, "image_size": 1024, "patch_size": 16,
                                                  "window_size": 14, "global_attn_indexes": [2, 5, 8, 11],
                                                  "mlp_dim": 3072, "downsample_channels": [512, 1024]},
                                   "encoder_config": {"hidden_size": 1024, "intermediate_size": 4096,
                                                      "num_hidden_layers": 24, "num_attention_heads": 16,
                                                      "image_size": 224, "patch_size": 14}}}

#: the original checkpoint's format, as UnlimitedOcrConfig.__post_init__ reads it: the language model under
#: language_config (DeepSeek-OCR's DeepSeek-3B-MoE fields: the MLX / GGUF cards give 12 layers, hidden 1280, 64 routed
#: + 2 shared experts, 6 per token) and sliding_window on the top level; vision_config in DeepSeek-OCR's descriptive
#: form, which UnlimitedOcrVisionConfig does not read (its sub-configs keep their defaults)
UNLIMITED_OCR_ORIGINAL = {
    "model_type": "unlimited_ocr", "sliding_window": 128, "torch_dtype": "bfloat16",
    "language_config": {"bos_token_id": 0, "eos_token_id": 1, "first_k_dense_replace": 1, "hidden_size": 1280,
                        "intermediate_size": 6848, "kv_lora_rank": None, "lm_head": True,
                        "max_position_embeddings": 8192, "moe_intermediate_size": 896, "n_group": 1,
                        "n_routed_experts": 64, "n_shared_experts": 2, "num_attention_heads": 10,
                        "num_experts_per_tok": 6, "num_hidden_layers": 12, "num_key_value_heads": 10,
                        "q_lora_rank": None, "qk_nope_head_dim": 0, "qk_rope_head_dim": 0, "rm_head": False,
                        "topk_group": 1, "topk_method": "greedy", "use_mla": False, "v_head_dim": 0,
                        "vocab_size": 129280},
    "vision_config": {"image_size": 1024, "mlp_ratio": 3.7362, "model_name": "deeplip_b_l", "model_type": "vision",
                      "width": {"clip-l-14-224": {"heads": 16, "image_size": 224, "layers": 24, "patch_size": 14,
                                                  "width": 1024},
                                "sam_vit_b": {"downsample_channels": [512, 1024], "global_attn_indexes": [2, 5, 8, 11],
                                              "heads": 12, "layers": 12, "width": 768}}}}


def _sam(d=768, layers=12, heads=12, grid=64, window=14, glob=(2, 5, 8, 11), mlp=3072, ch=256, down=(512, 1024)):
    """UnlimitedOcrSamVisionEncoder: biased patch conv 3 -> d (16x16), pos_embed (grid, grid, d); per layer two
    LayerNorms, biased qkv and proj, rel_pos_h / rel_pos_w (2n - 1, head_dim), biased lin1 / lin2; the neck (bias-free
    1x1 and 3x3 convs, two LayerNorms) and proj (two bias-free stride-2 3x3 convs)."""
    hd = d // heads
    n = d * 3 * 16 * 16 + d + grid * grid * d
    for i in range(layers):
        side = grid if i in glob else window
        n += 4 * d + (3 * d * d + 3 * d) + (d * d + d) + 2 * (2 * side - 1) * hd + (d * mlp + mlp) + (mlp * d + d)
    n += ch * d + 2 * ch + ch * ch * 9 + 2 * ch
    return n + down[0] * ch * 9 + down[1] * down[0] * 9


def _clip(c=1024, inter=4096, layers=24, positions=257) -> int:
    """UnlimitedOcrVisionEncoder: class embedding, positions, pre_layrnorm, CLIP layers; no patch embedding (SAM's
    features are its patches) and no post-LayerNorm."""
    return c + positions * c + 2 * c + layers * (4 * c + 4 * (c * c + c) + (c * inter + inter) + (inter * c + c))


def _uo_text(V=129280, h=1280, L=12, kv=1280, inter=6848, E=64, k=6, moe=896, shared=2, sparse=None,
             bias=False, tied=False) -> tuple[int, int]:
    """UnlimitedOcrTextModel + lm_head: q / o (h x h) and k / v (K/V heads x h / heads = ``kv`` wide), biased with
    attention_bias, two RMSNorms a layer, a dense SwiGLU or the router (E x h) + E experts + the shared SwiGLU of
    shared x moe; embedding, final norm, lm_head."""
    sparse = [i > 0 for i in range(L)] if sparse is None else sparse
    total = active = V * h + h + (0 if tied else V * h)
    for s in sparse:
        base = 2 * h * h + 2 * h * kv + ((2 * h + 2 * kv) if bias else 0) + 2 * h
        if s:
            total += base + E * h + E * 3 * h * moe + 3 * h * shared * moe
            active += base + E * h + k * 3 * h * moe + 3 * h * shared * moe
        else:
            total += base + 3 * h * inter
            active += base + 3 * h * inter
    return total, active


def test_unlimited_ocr_default_config_by_hand_transformers_and_published():
    text, active = _uo_text()
    vision = _sam() + _clip() + (2048 * 1280 + 1280) + 2 * 1280  # + multi_modal_projector, view_separator, newline
    spec = parse_config(UNLIMITED_OCR)
    p = count_params(spec)
    assert p.vision == vision == 400_770_048
    assert p.total == text + vision == 3_335_504_128 == _hf_total(UNLIMITED_OCR)
    assert p.active == active + vision == 1_140_375_808
    # published: the GGUF conversion of baidu/Unlimited-OCR's language model, Unlimited-OCR-BF16.gguf, is 5.47 GiB
    assert round(text * 2 / 2**30, 2) == 5.47
    # DeepSeek-OCR's checkpoint (the same model: 3,336,106,240 parameters, its 6,672,212,480-byte bf16 safetensors)
    # less the CLIP patch embedding transformers does not build (its features come from SAM)
    assert p.total == 3_336_106_240 - 1024 * 3 * 14 * 14
    # MHA cache: 12 layers x K and V of 10 heads x 128, bf16, whatever the R-SWA window (counted as vLLM caches it)
    kv = kv_cache(spec, BF16, BF16)
    assert kv.bytes_per_token == 12 * 2 * 10 * 128 * 2 == 61_440
    assert kv.bytes_per_sequence(4096) == 4096 * 61_440
    assert any("Reference Sliding Window Attention" in c for c in spec.caveats)


def test_unlimited_ocr_original_format_reads_language_config_and_top_level_window():
    spec = parse_config(UNLIMITED_OCR_ORIGINAL)
    p = count_params(spec)
    assert p.total == _hf_total(UNLIMITED_OCR_ORIGINAL) == 3_335_504_128
    assert spec.model_type == "unlimited_ocr_text" and spec.max_position_embeddings == 8192
    assert [layer.kind for layer in spec.layers[:2]] == ["full", "full+moe"]
    assert "window 128" in next(c for c in spec.caveats if "Reference Sliding" in c)


#: a scaled variant: GQA, biased attention, explicit layer types, group-limited routing, tied at the wrapper
UO_SMALL = {"model_type": "unlimited_ocr", "tie_word_embeddings": True,
            "text_config": {"hidden_size": 256, "num_attention_heads": 8, "num_key_value_heads": 4,
                            "num_hidden_layers": 4, "n_routed_experts": 8, "n_shared_experts": 1,
                            "num_experts_per_tok": 2, "moe_intermediate_size": 48, "intermediate_size": 320,
                            "vocab_size": 1000, "attention_bias": True, "sliding_window": 16,
                            "topk_method": "group_limited_greedy", "n_group": 4, "topk_group": 2,
                            "mlp_layer_types": ["dense", "sparse", "dense", "sparse"],
                            "layer_types": ["reference_sliding_attention", "full_attention"] * 2},
            "vision_config": {"sam_config": {"hidden_size": 96, "num_hidden_layers": 3, "num_attention_heads": 4,
                                             "global_attn_indexes": [1], "mlp_dim": 200, "output_channels": 32,
                                             "downsample_channels": [64, 128], "image_size": 256, "window_size": 4},
                              "encoder_config": {"hidden_size": 64, "intermediate_size": 100, "num_hidden_layers": 2,
                                                 "num_attention_heads": 4, "image_size": 112}}}


def test_unlimited_ocr_scaled_variant_by_hand_and_transformers():
    text, active = _uo_text(V=1000, h=256, L=4, kv=4 * 32, inter=320, E=8, k=2, moe=48, shared=1,
                            sparse=[False, True, False, True], bias=True, tied=True)
    vision = _sam(d=96, layers=3, heads=4, grid=16, window=4, glob=(1,), mlp=200, ch=32, down=(64, 128)) \
        + _clip(c=64, inter=100, layers=2, positions=(112 // 14) ** 2 + 1) + (128 + 64) * 256 + 256 + 2 * 256
    spec = parse_config(UO_SMALL)
    p = count_params(spec)
    assert p.vision == vision
    assert (p.total, p.active) == (text + vision, active + vision)
    assert p.total == _hf_total(UO_SMALL) and p.active == _hf_active(UO_SMALL, 2)
    assert (spec.numerics.n_group, spec.numerics.topk_group, spec.numerics.group_score) == (4, 2, "max")
    assert spec.numerics.norm_topk_prob is False
    assert kv_cache(spec, BF16, BF16).bytes_per_token == 4 * 2 * 128 * 2


def assert_text_cache_and_decode_flops_equal_transformers(cfg: dict) -> None:
    """A DeepSeek-MoE v1 OCR wrapper (Unlimited-OCR, DeepSeek-OCR-2) in fp32: transformers' own cache after a 5-token
    text prefill holds exactly our bytes per token per layer (R-SWA layers keep theirs as prefill states), and
    FlopCounterMode over its text-only decode step (eager attention and experts) equals the trace's FLOPs. ``cfg``
    has 4 MHA layers of 256 K/V features (the eager attention does not repeat grouped K/V heads)."""
    torch = pytest.importorskip("torch")
    from torch.utils.flop_counter import FlopCounterMode
    from transformers import AutoConfig, AutoModelForImageTextToText

    from planner.analysis.trace import step_ops
    from planner.analysis.weights import weight_format

    spec = parse_config(cfg)
    d = dict(cfg)
    mt = d.pop("model_type")
    torch.manual_seed(0)
    conf = AutoConfig.for_model(mt, **d, attn_implementation="eager", experts_implementation="eager")
    model = AutoModelForImageTextToText.from_config(conf).eval()
    n = 5
    fp32 = get_dtype("fp32")
    with torch.no_grad():
        out = model(input_ids=torch.randint(0, 1000, (1, n)), use_cache=True)
        cache = out.cache if hasattr(out, "cache") else out.past_key_values
        per_layer = []
        for lc in cache.layers:
            held = [t for t in (getattr(lc, "prefill_keys", None), getattr(lc, "prefill_values", None), lc.keys,
                                lc.values) if t is not None]
            per_layer.append(sum(t.numel() for t in held) * 4 // n)
        assert per_layer == [lk.bytes_per_token for lk in kv_cache(spec, fp32, fp32).layers] == [2 * 256 * 4] * 4
        counter = FlopCounterMode(display=False)
        with counter:
            model(input_ids=torch.randint(0, 1000, (1, 1)), cache=cache, use_cache=True)
    hf = sum(counter.get_flop_counts()["Global"].values())
    fmt, _ = weight_format(spec, "fp32")
    assert hf == sum(o.flops for o in step_ops(spec, fmt, fmt.act, batch=1, new_tokens=1, cached_tokens=n))


def test_unlimited_ocr_cache_and_decode_flops_equal_transformers():
    """Inside the window R-SWA is full attention, so the decode step equals transformers' (the helper's doc)."""
    cfg = json.loads(json.dumps(UO_SMALL))
    cfg["text_config"].update(topk_method="greedy", num_key_value_heads=8)  # MHA: eager attention (line 635)
    assert_text_cache_and_decode_flops_equal_transformers(cfg)


def test_unlimited_ocr_bad_configs_are_refused():
    def text(**kw):
        cfg = json.loads(json.dumps(UO_SMALL))
        cfg["text_config"].update(kw)
        return cfg
    with pytest.raises(ConfigError, match="layer_types.*entry 0 is 'sliding_attention'"):
        parse_config(text(layer_types=["sliding_attention"] * 4))
    with pytest.raises(ConfigError, match="sliding_window' is null"):
        parse_config(text(sliding_window=None))
    with pytest.raises(ConfigError, match="topk_method"):
        parse_config(text(topk_method="noaux_tc"))
    with pytest.raises(ConfigError, match="mlp_bias"):
        parse_config(text(mlp_bias=True))


# ---- CLI -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("cfg,total", [(HY_V4_VL, 771_142_515_869), (UNLIMITED_OCR, 3_335_504_128),
                                       (UNLIMITED_OCR_ORIGINAL, 3_335_504_128)])
def test_cli_analyze(tmp_path, cfg, total):
    r = run("analyze", _write(tmp_path, cfg), "--json")
    assert r.code == 0, r.err
    assert r.json["params"]["total"] == total


def test_cli_bad_configs_give_one_error_line(tmp_path):
    bad = json.loads(json.dumps(HY_SMALL))
    bad["vision_config"]["out_hidden_size"] = 128
    run("analyze", _write(tmp_path, bad, "hy")).assert_error("out_hidden_size")
    bad = json.loads(json.dumps(UO_SMALL))
    bad["text_config"]["sliding_window"] = None
    run("analyze", _write(tmp_path, bad, "uo")).assert_error("sliding_window")


def test_cli_verify_refuses_hy_v4_vl_sparse_attention(tmp_path):
    run("verify", _write(tmp_path, HY_SMALL)).assert_error("DeepSeek sparse attention")


def test_cli_verify_runs_unlimited_ocr_self_checks(tmp_path):
    """The torch runtime runs its language model (R-SWA as full attention, as it is counted): parameters, decode
    FLOPs and KV bytes predicted == measured."""
    from tests.clirun import verify_self_checks

    tiny = json.loads(json.dumps(UO_SMALL))
    tiny["text_config"].update(num_key_value_heads=8, topk_method="greedy", hidden_size=128, intermediate_size=160,
                               vocab_size=512)
    out = verify_self_checks(tmp_path, tiny)
    p = count_params(parse_config(tiny))
    assert out["checks"]["params"]["measured"] == p.total - p.vision  # the decoder it builds: no towers
