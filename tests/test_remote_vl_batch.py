"""Remote-code multimodal / hybrid model_types with no transformers 5.24 class: MiniMax-VL-01 (``minimax_vl_01``,
counted) and the ones refused by name (``nemotron_flash``, ``dots_vlm``, ``eagle_2_5_vl``, ``isaac``). No network, no
remote code.

Sources for MiniMax-VL-01 (MiniMaxAI/MiniMax-VL-01; no config.json or index of it is in the code index, so its fields
are taken from the reconstruction transformers' own port tests against the released checkpoint):
- huggingface/transformers tests/models/minimax_vl_01/test_conversion_minimax_vl_01.py: ``_old_text_config()`` and
  ``_old_vision_config()`` (the released config's text / vision fields), ``_released_config()`` (vision_feature_layer
  -1, image_token_index 200025) and ``_released_checkpoint_key_manifest()``: the checkpoint index's 8,637 keys, among
  them 24 CLIP layers, ``pre_layrnorm``, no ``post_layernorm``, biased ``multi_modal_projector.linear_1`` /
  ``linear_2`` and ``image_newline``.
- vllm-project/vllm vllm/model_executor/models/minimax_vl_01.py: the tower built with ``require_post_norm=False``,
  the projector vision hidden -> text hidden -> text hidden with ``multimodal_projector_bias=True``, ``image_newline``
  of the text hidden size; vllm/transformers_utils/configs/minimax_vl_01.py: text_config read as
  MiniMaxText01Config, a CLIP ViT-L/14-336 when vision_config is absent.
- The model card (MiniMaxAI/MiniMax-VL-01 README.md): "a 303-million-parameter Vision Transformer", MiniMax-Text-01
  (456B total, 45.9B activated) as the base LLM.
"""

import json

import pytest

from planner.analysis.config import parse_config
from planner.analysis.errors import ConfigError, UnsupportedModelError
from planner.analysis.params import count_params
from tests.clirun import run

# the released text_config as transformers' conversion test writes it (_old_text_config(), 80 layers)
MINIMAX_VL_TEXT = {
    "model_type": "minimax_text_01", "architectures": ["MiniMaxText01ForCausalLM"],
    "attn_type_list": [int((i + 1) % 8 == 0) for i in range(80)], "head_dim": 128, "hidden_size": 6144,
    "intermediate_size": 9216, "layernorm_full_attention_alpha": 3.5565588200778455,
    "layernorm_full_attention_beta": 1.0, "layernorm_linear_attention_alpha": 3.5565588200778455,
    "layernorm_linear_attention_beta": 1.0, "layernorm_mlp_alpha": 3.5565588200778455, "layernorm_mlp_beta": 1.0,
    "max_position_embeddings": 8192, "num_attention_heads": 64, "num_experts_per_tok": 2, "num_hidden_layers": 80,
    "num_key_value_heads": 8, "num_local_experts": 32, "postnorm": True, "rms_norm_eps": 1e-5,
    "rope_theta": 10_000_000, "rotary_dim": 64, "shared_intermediate_size": [0], "shared_moe_mode": "sigmoid",
    "vocab_size": 200_064, "bos_token_id": None, "eos_token_id": None}
# its vision_config (_old_vision_config(full_size=True))
MINIMAX_VL_VISION = {
    "model_type": "clip_vision_model", "attention_dropout": 0.0, "hidden_act": "gelu", "hidden_size": 1024,
    "image_size": 336, "initializer_factor": 1.0, "initializer_range": 0.02, "intermediate_size": 4096,
    "layer_norm_eps": 1e-5, "num_attention_heads": 16, "num_channels": 3, "num_hidden_layers": 24, "patch_size": 14,
    "projection_dim": 6144, "auto_map": {"AutoModel": "modeling_clip.CLIPVisionModel"}, "vocab_size": 32_000}
MINIMAX_VL_01 = {
    "model_type": "minimax_vl_01", "architectures": ["MiniMaxVL01ForConditionalGeneration"],
    "auto_map": {"AutoConfig": "configuration_minimax_vl_01.MiniMaxVL01Config",
                 "AutoModelForCausalLM": "modeling_minimax_vl_01.MiniMaxVL01ForConditionalGeneration"},
    "text_config": MINIMAX_VL_TEXT, "vision_config": MINIMAX_VL_VISION,
    "image_grid_pinpoints": [[336, 672], [672, 336]], "image_token_index": 200_025, "projector_hidden_act": "gelu",
    "vision_feature_layer": -1, "vision_feature_select_strategy": "default", "tie_word_embeddings": False}

# hand counts from the module shapes (the key manifest's tensors)
H, I, V, VH, VI = 6144, 9216, 200_064, 1024, 4096
LIGHT = 3 * 8192 * H + 8192 * H + 8192 + H * 8192  # qkv_proj, output_gate, norm (H·d), out_proj
SOFT = 8192 * H + 2 * 1024 * H + H * 8192  # q, k, v (8 KV heads x 128), o
TEXT_TOTAL = 2 * V * H + H + 70 * LIGHT + 10 * SOFT + 80 * (2 * H + 32 * H + 32 * 3 * H * I)
CLIP_LAYER = 4 * (VH * VH + VH) + 2 * 2 * VH + (VI * VH + VI) + (VH * VI + VH)
TOWER = VH + VH * 3 * 14 * 14 + (24 * 24 + 1) * VH + 2 * VH + 24 * CLIP_LAYER  # no post_layernorm
PROJECTOR = (H * VH + H) + (H * H + H) + H  # linear_1, linear_2, image_newline


def test_minimax_vl_01_whole_checkpoint_by_hand():
    """The language model is MiniMax-Text-01's 456,089,655,296 (its published 456B); the CLIP tower as stored
    (24 layers, no post_layernorm) is 303,505,408 (the card's "303-million-parameter" ViT); the projector and
    image_newline 44,058,624."""
    spec = parse_config(MINIMAX_VL_01)
    p = count_params(spec)
    assert TEXT_TOTAL == 456_089_655_296 and TOWER == 303_505_408
    assert sum(t.numel for t in spec.vision) == TOWER + PROJECTOR == 347_564_032
    assert p.total == TEXT_TOTAL + TOWER + PROJECTOR == 456_437_219_328
    assert all(t.kind == "vision" for t in spec.vision)
    # the manifest's vision-side keys: 3 embeddings + pre_layrnorm (2) + 24 x 16 layer tensors + 4 projector + 1
    assert len(spec.vision) == 3 + 2 + 24 * 16 + 4 + 1 == 394
    names = {t.name for t in spec.vision}
    assert not any("post_layernorm" in n for n in names) and "model.image_newline" in names
    # active: the text model's top-2 of 32 experts (45.9B without the two tables, as published) + the vision side
    assert p.active - TOWER - PROJECTOR - 2 * V * H == TEXT_TOTAL - 80 * 30 * 3 * H * I - 2 * V * H == 45_944_920_064


def test_minimax_vl_01_text_part_equals_the_bare_text_config():
    """The wrapper's language model is the bare text_config's count (read as minimax_text_01, the hub's
    one-element shared_intermediate_size list included), its KV / state too."""
    from planner.analysis.dtypes import get_dtype
    from planner.analysis.kv import kv_cache

    whole = parse_config(MINIMAX_VL_01)
    bare = parse_config(MINIMAX_VL_TEXT)
    assert count_params(bare).total == TEXT_TOTAL
    assert count_params(whole).total - sum(t.numel for t in whole.vision) == count_params(bare).total
    bf16 = get_dtype("bf16")
    kw, kb = kv_cache(whole, bf16, bf16), kv_cache(bare, bf16, bf16)
    # 10 softmax layers cache K and V of 8 heads x 128; 70 lightning layers a 64 x 128 x 128 state (bf16: 2 MiB)
    assert kw.bytes_per_token == kb.bytes_per_token == 10 * 2 * 8 * 128 * 2 == 40_960
    assert kw.state_bytes_per_sequence == kb.state_bytes_per_sequence == 70 * 64 * 128 * 128 * 2
    # text_config's model_type is not what vLLM reads: MiniMaxText01Config whatever it says (minimax_m1 too)
    m1 = parse_config(dict(MINIMAX_VL_01, text_config=dict(MINIMAX_VL_TEXT, model_type="minimax_m1")))
    assert count_params(m1).total == count_params(whole).total


def test_minimax_vl_01_absent_vision_config_is_vllms_clip_l_336():
    """vLLM's MiniMaxVL01Config builds CLIP ViT-L/14 at 336 (24 layers, 1024 wide) when vision_config is absent."""
    cfg = {k: v for k, v in MINIMAX_VL_01.items() if k != "vision_config"}
    assert sum(t.numel for t in parse_config(cfg).vision) == TOWER + PROJECTOR


@pytest.mark.parametrize("patch, exc, fragment", [
    ({"text_config": dict(MINIMAX_VL_TEXT, shared_intermediate_size=[0, 0])}, ConfigError, "shared_intermediate_size"),
    ({"text_config": dict(MINIMAX_VL_TEXT, shared_intermediate_size=[1024])}, ConfigError, "shared_intermediate_size"),
    ({"text_config": dict(MINIMAX_VL_TEXT, model_type="llama")}, UnsupportedModelError, "MiniMaxText01Config"),
    ({"text_config": None}, ConfigError, "text_config"),
    ({"vision_config": dict(MINIMAX_VL_VISION, model_type="siglip_vision_model")}, UnsupportedModelError,
     "clip_vision_model"),
    ({"vision_config": dict(MINIMAX_VL_VISION, num_hidden_layers=-1)}, ConfigError, "num_hidden_layers"),
])
def test_minimax_vl_01_bad_configs(patch, exc, fragment):
    with pytest.raises(exc, match=fragment):
        parse_config(dict(MINIMAX_VL_01, **patch))


def test_minimax_vl_01_cli(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(MINIMAX_VL_01))
    r = run("analyze", path, "--json")
    assert r.code == 0, r.err
    d = r.json
    assert d["params"]["total"] == 456_437_219_328
    assert d["kv_cache"]["bytes_per_token"] == 40_960
    assert not any("not a known family" in c for c in d["caveats"])
    assert run("trace", str(path), "--context", "2000", "--hardware", "h100-sxm").code == 0
    assert run("serve", path, "-H", "h100-sxm", "--gpus", "8", "--json").code == 0
    # verify cannot run lightning attention: one Error line, no traceback
    run("verify", path).assert_error("lightning attention")
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(dict(MINIMAX_VL_01, text_config=dict(MINIMAX_VL_TEXT, shared_intermediate_size=[8]))))
    run("analyze", bad).assert_error("shared_intermediate_size")
    bad.write_text(json.dumps(dict(MINIMAX_VL_01, vision_config={"model_type": "pixtral"})))
    run("analyze", bad).assert_error("minimax_vl_01", "clip_vision_model")


# ---- refused by name ---------------------------------------------------------------------------------------------

#: minimal configs naming each refused family with the fields its hub config class reads (the refusal must come
#: before any generic reading of them)
REFUSED_CONFIGS = {
    # nvidia/Nemotron-Flash-1B / -3B: NemotronFlashConfig's fields (its configuration_nemotron_flash.py defaults)
    "nemotron_flash": {"model_type": "nemotron_flash", "architectures": ["NemotronFlashForCausalLM"],
                       "hidden_size": 3072, "num_hidden_layers": 36, "num_attention_heads": 24,
                       "num_key_value_heads": 8, "vocab_size": 65536, "intermediate_size": 14336,
                       "layer_types": ["deltanet", "f", "m2", "f", "a", "f"] * 6, "mamba2_headdim": 64,
                       "mamba_expand": 2, "num_memory_tokens": 256, "ffn_expand_ratio": 3},
    "dots_vlm": {"model_type": "dots_vlm", "architectures": ["DotsVLMForCausalLM"],
                 "vision_config": {"model_type": "dots_vit", "embed_dim": 1536, "num_hidden_layers": 42},
                 "language_config": {"model_type": "deepseek_v3", "hidden_size": 7168}},
    "eagle_2_5_vl": {"model_type": "eagle_2_5_vl", "architectures": ["Eagle2_5_VLForConditionalGeneration"],
                     "vision_config": {"model_type": "siglip_vision_model"},
                     "text_config": {"model_type": "qwen2", "hidden_size": 3584, "num_hidden_layers": 28,
                                     "num_attention_heads": 28, "vocab_size": 151_674}},
    "isaac": {"model_type": "isaac", "architectures": ["IsaacForConditionalGeneration"], "hidden_size": 2048,
              "num_hidden_layers": 28, "num_attention_heads": 16, "vocab_size": 151_936},
}


@pytest.mark.parametrize("model_type", sorted(REFUSED_CONFIGS))
def test_refused_by_name_with_one_error_line(tmp_path, model_type):
    """Each is refused by its name and reason (no generic Llama reading, no nested text_config read in its place)."""
    cfg = REFUSED_CONFIGS[model_type]
    with pytest.raises(UnsupportedModelError, match=model_type):
        parse_config(cfg)
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    line = run("analyze", path, "--json").assert_error(model_type, "not supported yet")
    assert "generic" not in line.split("not supported yet")[0]
