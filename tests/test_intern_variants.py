"""InternVL-derived wrappers read through InternVL's own paths (analysis/families/intern_variants.py): Intern-S1 /
Intern-S1-mini (``interns1``: vLLM's interns1.py / interns1_vit.py, the hub's configuration_interns1.py), H2OVL-Mississippi
(``h2ovl_chat``: vLLM's h2ovl.py, H2OVLChatModel(InternVLChatModel)) and Skywork-R1V (``skywork_chat``: vLLM's
skyworkr1v.py). The whole checkpoint is checked against a hand count written from those module shapes; KV bytes and
decode FLOPs are the language model's.

No verbatim config.json or safetensors index of these checkpoints was at hand (no hub access): the configs below are
reconstructed from the components the model cards name (Intern-S1: Qwen3-235B-A22B + InternViT-6B-448px-V2_5;
Intern-S1-mini: Qwen3-8B + InternViT-300M; H2OVL-2B: H2O-Danube2-1.8B + InternViT-300M; H2OVL-800M: H2O-Danube3-500M +
InternViT-300M; Skywork-R1V-38B: DeepSeek-R1-Distill-Qwen-32B + InternViT-6B-448px-V2_5), vocabulary sizes included,
and the totals are checked against the cards' rounded figures only. No network, no remote code."""

from __future__ import annotations

import json

import pytest

from planner.analysis.config import parse_config
from planner.analysis.dtypes import get_dtype
from planner.analysis.errors import ConfigError, UnsupportedModelError
from planner.analysis.kv import kv_cache
from planner.analysis.params import count_params
from tests.clirun import run, verify_self_checks

# InternS1VisionConfig fields of InternViT-6B-448px-V2_5 in the HF layout (45 layers, RMSNorm, q/k norms, no qkv bias)
VIT_6B_HF = {"model_type": "interns1_vision", "architectures": ["InternVisionModel"], "hidden_size": 3200,
             "num_hidden_layers": 45, "num_attention_heads": 25, "intermediate_size": 12800, "attention_bias": False,
             "use_qk_norm": True, "norm_type": "rms_norm", "image_size": [448, 448], "patch_size": [14, 14],
             "use_mean_pooling": True, "use_mask_token": False, "use_absolute_position_embeddings": True,
             "num_channels": 3, "layer_scale_init_value": 0.1, "layer_norm_eps": 1e-6, "hidden_act": "gelu"}
# InternViT-300M-448px in the HF layout (24 layers, LayerNorm, biased q/k/v, no q/k norms)
VIT_300M_HF = dict(VIT_6B_HF, hidden_size=1024, num_hidden_layers=24, num_attention_heads=16, intermediate_size=4096,
                   attention_bias=True, use_qk_norm=False, norm_type="layer_norm")

INTERN_S1 = {
    "architectures": ["InternS1ForConditionalGeneration"], "model_type": "interns1", "downsample_ratio": 0.5,
    "image_seq_length": 256, "projector_hidden_act": "gelu", "vision_feature_layer": -1,
    "vision_feature_select_strategy": "default", "torch_dtype": "bfloat16",
    "text_config": {"architectures": ["Qwen3MoeForCausalLM"], "model_type": "qwen3_moe", "hidden_size": 4096,
                    "num_hidden_layers": 94, "num_attention_heads": 64, "num_key_value_heads": 4, "head_dim": 128,
                    "intermediate_size": 12288, "moe_intermediate_size": 1536, "num_experts": 128,
                    "num_experts_per_tok": 8, "decoder_sparse_step": 1, "mlp_only_layers": [], "norm_topk_prob": True,
                    "vocab_size": 153216, "tie_word_embeddings": False, "rope_theta": 1000000.0,
                    "max_position_embeddings": 40960, "rms_norm_eps": 1e-6, "attention_bias": False},
    "vision_config": VIT_6B_HF}

INTERN_S1_MINI = dict(
    INTERN_S1,
    text_config={"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "hidden_size": 4096,
                 "num_hidden_layers": 36, "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 128,
                 "intermediate_size": 12288, "vocab_size": 153216, "tie_word_embeddings": False,
                 "rope_theta": 1000000.0, "max_position_embeddings": 40960, "rms_norm_eps": 1e-6,
                 "attention_bias": False},
    vision_config=VIT_300M_HF)

# InternVisionConfig (remote code) of InternViT-300M-448px / InternViT-6B-448px-V2_5, as the chat configs carry them
VIT_300M_CHAT = {"architectures": ["InternVisionModel"], "model_type": "intern_vit_6b", "hidden_size": 1024,
                 "intermediate_size": 4096, "num_attention_heads": 16, "num_hidden_layers": 24, "image_size": 448,
                 "patch_size": 14, "qkv_bias": True, "qk_normalization": False, "norm_type": "layer_norm"}
VIT_6B_CHAT = dict(VIT_300M_CHAT, hidden_size=3200, intermediate_size=12800, num_attention_heads=25,
                   num_hidden_layers=45, qkv_bias=False, qk_normalization=True, norm_type="rms_norm")
_CHAT_TOP = {"downsample_ratio": 0.5, "select_layer": -1, "force_image_size": 448, "ps_version": "v2",
             "dynamic_image_size": True, "use_thumbnail": True, "use_backbone_lora": 0, "use_llm_lora": 0,
             "torch_dtype": "bfloat16"}

H2OVL_2B = dict(_CHAT_TOP, architectures=["H2OVLChatModel"], model_type="h2ovl_chat", use_msac=True,
                llm_config={"architectures": ["MistralForCausalLM"], "model_type": "mistral", "hidden_size": 2560,
                            "intermediate_size": 6912, "num_hidden_layers": 24, "num_attention_heads": 32,
                            "num_key_value_heads": 8, "vocab_size": 32000, "tie_word_embeddings": False,
                            "sliding_window": None, "rope_theta": 10000.0, "max_position_embeddings": 8192},
                vision_config=VIT_300M_CHAT)
H2OVL_800M = dict(H2OVL_2B, use_msac=False,
                  llm_config={"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 1536,
                              "intermediate_size": 4096, "num_hidden_layers": 16, "num_attention_heads": 16,
                              "num_key_value_heads": 8, "vocab_size": 32000, "tie_word_embeddings": False,
                              "rope_theta": 100000.0, "max_position_embeddings": 8192})
SKYWORK_R1V_38B = dict(_CHAT_TOP, architectures=["SkyworkChatModel"], model_type="skywork_chat",
                       llm_config={"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_size": 5120,
                                   "intermediate_size": 27648, "num_hidden_layers": 64, "num_attention_heads": 40,
                                   "num_key_value_heads": 8, "vocab_size": 152064, "tie_word_embeddings": False,
                                   "rope_theta": 1000000.0, "max_position_embeddings": 32768},
                       vision_config=VIT_6B_CHAT)


def _vit(h, layers, inter, qkv_bias, qk_norm, layer_norm, image=448, patch=14) -> int:
    """InternViT as both layouts store it (HF: cls_token, q/k/v, projection_layer, lambda_1/2; remote: class_embedding,
    fused qkv, proj, ls1/ls2 — the same counts): class token, biased 3-channel patch conv, (image / patch)^2 + 1
    positions; per layer q/k/v (+ biases), q/k RMSNorms of h, biased out projection, biased fc1 / fc2, two norms
    (LayerNorm: weight + bias), two layer scales; no final norm (mean pooling / none in the remote code)."""
    layer = 3 * h * h + (3 * h if qkv_bias else 0) + (2 * h if qk_norm else 0) + (h * h + h) \
        + (h * inter + inter) + (inter * h + h) + (4 * h if layer_norm else 2 * h) + 2 * h
    return h + (3 * patch * patch * h + h) + ((image // patch) ** 2 + 1) * h + layers * layer


def _projector(vh, text) -> int:
    m = 4 * vh  # pixel shuffle at downsample_ratio 0.5
    return 2 * m + (m * text + text) + (text * text + text)  # LayerNorm, two biased linears


def _decoder(V, h, layers, heads, kv, hd, mlp, qkv_bias=False, qk_norm=False) -> int:
    """Untied embedding and lm_head, final RMSNorm; per layer q/k/v/o (+ q/k/v biases), per-head q/k norms, two
    RMSNorms and ``mlp`` parameters."""
    attn = h * heads * hd + 2 * h * kv * hd + heads * hd * h + ((heads + 2 * kv) * hd if qkv_bias else 0) \
        + (2 * hd if qk_norm else 0)
    return 2 * V * h + h + layers * (attn + 2 * h + mlp)


VIT_6B = _vit(3200, 45, 12800, False, True, False)
VIT_300M = _vit(1024, 24, 4096, True, False, True)
QWEN3_MOE_EXPERTS = 94 * 128 * 3 * 4096 * 1536
QWEN3_235B = _decoder(153216, 4096, 94, 64, 4, 128, 128 * 4096 + 128 * 3 * 4096 * 1536, qk_norm=True)
QWEN3_8B = _decoder(153216, 4096, 36, 32, 8, 128, 3 * 4096 * 12288, qk_norm=True)
DANUBE2 = _decoder(32000, 2560, 24, 32, 8, 80, 3 * 2560 * 6912)
DANUBE3_500M = _decoder(32000, 1536, 16, 16, 8, 96, 3 * 1536 * 4096)
QWEN2_32B = _decoder(152064, 5120, 64, 40, 8, 128, 3 * 5120 * 27648, qkv_bias=True)


def test_hand_counts_of_the_parts():
    assert VIT_6B == 5_536_496_000  # InternViT-6B-448px-V2_5: its card's 5.5B
    assert VIT_300M == 304_012_288  # InternViT-300M-448px: 0.3B
    assert _projector(3200, 4096) == 69_239_808 and _projector(1024, 4096) == 33_570_816
    assert QWEN3_8B == 8_201_221_120  # at its own vocabulary (151,936): 8,190,735,360, Qwen3-8B's published 8.19B
    assert _decoder(151936, 4096, 36, 32, 8, 128, 3 * 4096 * 12288, qk_norm=True) == 8_190_735_360
    # Qwen3-235B-A22B at its own vocabulary (151,936): 235,093,634,560, its published 235B
    assert QWEN3_235B - 2 * (153216 - 151936) * 4096 == 235_093_634_560
    assert QWEN2_32B == 32_763_876_352  # DeepSeek-R1-Distill-Qwen-32B / Qwen2.5-32B: the published 32.76B
    assert DANUBE2 == 1_831_201_280  # H2O-Danube2-1.8B: 1.83B
    assert DANUBE3_500M == 513_590_784  # H2O-Danube3-500M: 514M


@pytest.mark.parametrize("cfg,lm,vit,vh,text,kv_layers,kv_heads,head_dim,card", [
    (INTERN_S1, QWEN3_235B, VIT_6B, 3200, 4096, 94, 4, 128, 241),
    (INTERN_S1_MINI, QWEN3_8B, VIT_300M, 1024, 4096, 36, 8, 128, 9),
    (H2OVL_2B, DANUBE2, VIT_300M, 1024, 2560, 24, 8, 80, 2),
    (H2OVL_800M, DANUBE3_500M, VIT_300M, 1024, 1536, 16, 8, 96, 1),
    (SKYWORK_R1V_38B, QWEN2_32B, VIT_6B, 3200, 5120, 64, 8, 128, 38),
], ids=["intern-s1", "intern-s1-mini", "h2ovl-2b", "h2ovl-800m", "skywork-r1v-38b"])
def test_whole_checkpoint_by_hand(cfg, lm, vit, vh, text, kv_layers, kv_heads, head_dim, card):
    spec = parse_config(cfg)
    p = count_params(spec)
    assert p.vision == vit + _projector(vh, text)
    assert p.total == lm + vit + _projector(vh, text)
    assert round(p.total / 1e9) == card  # the model cards' rounded totals (Intern-S1: the paper's 241B)
    assert spec.tie_word_embeddings is False
    # the language model's GQA cache, bf16: every layer K and V
    assert kv_cache(spec, get_dtype("bf16"), get_dtype("bf16")).bytes_per_token == kv_layers * 2 * kv_heads * head_dim * 2


def test_intern_s1_totals_and_active():
    p = count_params(parse_config(INTERN_S1))
    assert p.total == 240_709_856_128  # the paper: "241 billion total parameters"
    # 8 of 128 experts a token: the paper's "28 billion activated parameters"
    assert p.active == p.total - 94 * 120 * 3 * 4096 * 1536 == 27_806_985_088
    assert count_params(parse_config(INTERN_S1_MINI)).total == 8_201_221_120 + 304_012_288 + 33_570_816 == 8_538_804_224
    assert count_params(parse_config(SKYWORK_R1V_38B)).total == 38_392_158_592
    assert count_params(parse_config(H2OVL_2B)).total == 2_152_266_240
    assert count_params(parse_config(H2OVL_800M)).total == 513_590_784 + 304_012_288 + 8_662_016 == 826_265_088


def test_intern_s1_ties_by_its_text_config():
    """The remote code (transformers 4.x) ties by the text config's flag, Qwen3Config's default (false) when it has
    none; the wrapper's flag is not read."""
    text = {k: v for k, v in INTERN_S1_MINI["text_config"].items() if k != "tie_word_embeddings"}
    untied = count_params(parse_config(dict(INTERN_S1_MINI, text_config=text, tie_word_embeddings=True)))
    assert untied.total == 8_538_804_224
    tied = parse_config(dict(INTERN_S1_MINI, text_config=dict(text, tie_word_embeddings=True),
                             tie_word_embeddings=False))
    assert tied.tie_word_embeddings is True
    assert count_params(tied).total == 8_538_804_224 - 153216 * 4096
    with pytest.raises(UnsupportedModelError, match="no text_config"):
        parse_config({k: v for k, v in INTERN_S1.items() if k != "text_config"})


def test_intern_s1_tensor_names_are_the_hf_layouts():
    from planner.analysis.families.intern_variants import interns1_vision

    names = {t.name: t.shape for t in interns1_vision(INTERN_S1, 4096, "x")}
    # vLLM's hf_to_vllm_mapper: model.vision_tower. / model.multi_modal_projector. in the checkpoint
    assert names["model.vision_tower.embeddings.cls_token"] == (1, 1, 3200)
    assert names["model.vision_tower.embeddings.position_embeddings"] == (1, 1025, 3200)
    assert names["model.vision_tower.encoder.layer.44.attention.q_proj.weight"] == (3200, 3200)
    assert names["model.vision_tower.encoder.layer.0.attention.q_norm.weight"] == (3200,)
    assert names["model.vision_tower.encoder.layer.0.lambda_1"] == (3200,)
    assert names["model.multi_modal_projector.linear_1.weight"] == (4096, 12800)
    assert names["model.multi_modal_projector.linear_2.bias"] == (4096,)
    assert "model.vision_tower.encoder.layer.0.attention.q_proj.bias" not in names
    assert "model.vision_tower.layernorm.weight" not in names  # use_mean_pooling: no final norm
    assert "model.vision_tower.encoder.layer.45.lambda_1" not in names


def test_refusals_and_bad_fields():
    with pytest.raises(ConfigError, match=r"\(text_config\): required field 'model_type' is missing"):
        parse_config(dict(INTERN_S1, text_config={k: v for k, v in INTERN_S1["text_config"].items()
                                                  if k != "model_type"}))
    with pytest.raises(UnsupportedModelError, match="vision tower 'siglip_vision_model'"):
        parse_config(dict(INTERN_S1, vision_config=dict(VIT_6B_HF, model_type="siglip_vision_model")))
    with pytest.raises(ConfigError, match="downsample_ratio"):
        parse_config(dict(INTERN_S1, downsample_ratio=3))
    with pytest.raises(ConfigError, match="disagrees with its architectures"):
        parse_config(dict(H2OVL_2B, llm_config=dict(H2OVL_2B["llm_config"], model_type="llama")))
    with pytest.raises(UnsupportedModelError, match="architecture 'GemmaForCausalLM'"):
        parse_config(dict(H2OVL_2B, llm_config=dict(H2OVL_2B["llm_config"], architectures=["GemmaForCausalLM"])))
    with pytest.raises(ConfigError, match="llm_config"):
        parse_config({k: v for k, v in SKYWORK_R1V_38B.items() if k != "llm_config"})
    with pytest.raises(UnsupportedModelError, match="use_backbone_lora"):
        parse_config(dict(SKYWORK_R1V_38B, use_backbone_lora=8))
    # KeyeConfig.model_type is "Keye" and KeyeVL1_5Config's "KeyeVL1_5" (transformers' models/keye); 1.5 nests
    # its language model under text_config
    for mt in ("Keye", "keye", "keye_vl_1_5"):
        with pytest.raises(UnsupportedModelError, match="Keye-VL"):
            parse_config(dict(INTERN_S1_MINI["text_config"], model_type=mt, vision_config={"hidden_size": 1152}))
    with pytest.raises(UnsupportedModelError, match="Keye-VL-1.5"):
        parse_config({"model_type": "KeyeVL1_5", "text_config": dict(INTERN_S1_MINI["text_config"], model_type="qwen3"),
                      "vision_config": {"hidden_size": 1152}})


@pytest.mark.parametrize("cfg,key,decode", [
    # 2 x (94 x (q/k/v/o 2*4096*8192 + 2*4096*512, router 4096*128, 8 experts 8*3*4096*1536, q.k and p.v over
    # 8193 keys 2*64*128*8193) + lm_head 153216*4096)
    (INTERN_S1, "text_config", 68_381_769_728),
    # 2 x (64 x (2*5120*5120 + 2*5120*1024 + 3*5120*27648 + 2*5120*8193) + 152064*5120)
    (SKYWORK_R1V_38B, "llm_config", 74_707_107_840),
    (H2OVL_2B, "llm_config", None),
], ids=["intern-s1", "skywork", "h2ovl-2b"])
def test_cli_end_to_end(tmp_path, cfg, key, decode):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    r = run("analyze", str(path), "--json")
    assert r.code == 0, r.err
    assert r.json["params"]["total"] == count_params(parse_config(cfg)).total
    text = tmp_path / "text.json"
    text.write_text(json.dumps(cfg[key]))  # the language model's config alone
    t = run("analyze", str(text), "--json")
    assert t.code == 0, t.err
    # the decode trace and the cache are the language model's alone
    assert r.json["flops_per_token"]["decode"] == t.json["flops_per_token"]["decode"]
    assert r.json["kv_cache"]["bytes_per_token"] == t.json["kv_cache"]["bytes_per_token"]
    if decode is not None:
        assert r.json["flops_per_token"]["decode"] == decode


def test_cli_bad_configs_give_one_error(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(dict(SKYWORK_R1V_38B, llm_config=dict(SKYWORK_R1V_38B["llm_config"],
                                                                     architectures=["X"]))))
    run("analyze", str(bad)).assert_error("llm_config architecture 'X'")
    keye = tmp_path / "keye.json"
    keye.write_text(json.dumps(dict(INTERN_S1_MINI["text_config"], model_type="keye",
                                    architectures=["KeyeForConditionalGeneration"])))
    run("analyze", str(keye)).assert_error("Kwai Keye-VL")


def test_language_models_verify(tmp_path):
    """verify builds the language model (the towers are counted apart): its exact self-checks pass."""
    small = {"hidden_size": 64, "intermediate_size": 96, "num_attention_heads": 4, "num_key_value_heads": 2,
             "num_hidden_layers": 2, "vocab_size": 256, "max_position_embeddings": 256}
    tiny_vit = {"hidden_size": 32, "num_attention_heads": 2, "intermediate_size": 48, "num_hidden_layers": 2}
    mini = dict(INTERN_S1_MINI, text_config=dict(INTERN_S1_MINI["text_config"], head_dim=16, **small),
                vision_config=dict(VIT_300M_HF, image_size=[28, 28], **tiny_vit))
    verify_self_checks(tmp_path, mini, name="s1mini")
    h2o = dict(H2OVL_2B, llm_config=dict(H2OVL_2B["llm_config"], **small),
               vision_config=dict(VIT_300M_CHAT, image_size=28, **tiny_vit))
    verify_self_checks(tmp_path, h2o, name="h2ovl")
