"""Audit of how a multimodal wrapper's lm_head is tied when its config leaves ``tie_word_embeddings`` out
(analysis/families/__init__.py WRAPPER_TIE, applied in analysis/config.py parse_config).

Why an absent wrapper flag means "the text_config decides": transformers 4.45 - 4.5x tied every model by
``self.config.get_text_config(decoder=True).tie_word_embeddings`` (modeling_utils.PreTrainedModel.tie_weights), so a
checkpoint written then ships lm_head whenever its text_config is untied, whatever the wrapper says; transformers 5
ties by the wrapper's own flag and always writes it (test_transformers_5_writes_the_wrapper_flag below), so a config
without it is a 4.x file. Where transformers 5's wrapper class defaults to tied (InternVLConfig, JanusConfig,
DeepseekVLConfig, DeepseekVLHybridConfig, Mistral3Config: ``tie_word_embeddings: bool = True``) a 4.x "-hf" checkpoint
of an untied language model is built tied from its config as it stands, one vocab x hidden short; from_pretrained then
finds both tensors, differing, and unties them ("both are present in the checkpoints with different values, so we will
NOT tie them"). planner counts what the checkpoint holds: rule "text-if-absent".

Evidence, per changed model_type (rule before -> after: "wrapper" -> "text-if-absent"):
- internvl: huggingface/transformers src/transformers/models/internvl/convert_internvl_weights_to_hf.py (the
  OpenGVLab/InternVL3-{1,2,8,9,14,38,78}B-hf conversions, transformers 4.52.0.dev0 per vllm-project/vllm#17634's
  printed InternVL3-8B-hf config) builds ``InternVLConfig(text_config=Qwen2Config(**llm_config), vision_config=...,
  image_token_id=151667)`` (no wrapper flag) and copies every original tensor, ``language_model.lm_head.weight``
  included; OpenGVLab/InternVL internvl_chat/tools/internvl_custom2hf.py (the InternVL3.5 "-HF" releases) writes the
  config by hand, ``"text_config": chat_cfg["llm_config"]`` and no top-level flag, maps ``language_model.lm_head.weight``
  to ``lm_head.weight`` and loads it with ``strict=True`` before save_pretrained. InternVL3-8B's llm_config is
  Qwen2.5-7B's shape, untied (3584 / 18944 / 28 layers / 28 heads / 4 KV heads / vocab 151674: the "8b" sizes of a
  TensorRT InternVL test config, vocab 151674 in vllm-project/vllm#17634); its InternViT-300M-448px-V2_5 tower is
  ``vit_300m_config`` of internvl_custom2hf.py, quoted below.
- janus: huggingface/transformers src/transformers/models/janus/convert_janus_weights_to_hf.py: ``LlamaConfig(**text
  kwargs)`` (no flag: untied), ``JanusConfig(text_config=..., vision_config=..., vq_config=...)`` (no flag), and
  ``language_model.lm_head.weight`` -> ``lm_head.weight`` in its key map.
- deepseek_vl / deepseek_vl_hybrid: huggingface/transformers convert_deepseek_vl_weights_to_hf.py /
  convert_deepseek_vl_hybrid_weights_to_hf.py build ``DeepseekVL(Hybrid)Config(text_config={...})`` with the dicts
  quoted below (no flag anywhere: LlamaConfig's untied), map ``language_model.lm_head.(weight|bias)`` -> ``lm_head``,
  and refuse to save with a missing key, so deepseek-community/deepseek-vl-{1.3b,7b}-{base,chat} hold lm_head.

Oracle: transformers 5.24 on the meta device built the way the checkpoint was written (its lm_head untied), and, for
InternVL, the remote-code original (internvl_chat) the conversion copies tensor for tensor.

Unchanged rules with evidence pinned here: mistral3 "text-if-absent" (tests/test_real_configs_vlm_audit.py holds the
published 24,011,361,280); a wrapper flag that is set still wins over text_config's for the four changed types.
"""

import copy
import json

import pytest

from planner.analysis.config import parse_config
from planner.analysis.families import WRAPPER_TIE
from planner.analysis.params import count_params
from tests.oracle import hf_model, unique_param_count

#: OpenGVLab/InternVL internvl_chat/tools/internvl_custom2hf.py ``vit_300m_config`` (InternViT-300M-448px-V2_5 in the
#: transformers format), verbatim
VIT_300M = {
    "architectures": ["InternVisionModel"], "attention_bias": True, "attention_dropout": 0.0, "dropout": 0.0,
    "hidden_act": "gelu", "hidden_dropout_prob": 0.0, "hidden_size": 1024, "image_size": [448, 448],
    "initializer_factor": 0.1, "initializer_range": 1e-10, "intermediate_size": 4096, "layer_norm_eps": 1e-06,
    "layer_scale_init_value": 0.1, "model_type": "internvl_vision", "norm_type": "layer_norm",
    "num_attention_heads": 16, "num_channels": 3, "num_hidden_layers": 24, "patch_size": [14, 14],
    "projection_dropout": 0.0, "torch_dtype": "bfloat16", "use_absolute_position_embeddings": True,
    "use_mask_token": False, "use_mean_pooling": True, "use_qk_norm": False,
}

#: OpenGVLab/InternVL3-8B's llm_config (Qwen2.5-7B's shape, untied), as the converter passes it to Qwen2Config
INTERNVL3_8B_LLM = {
    "architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_act": "silu", "hidden_size": 3584,
    "intermediate_size": 18944, "num_hidden_layers": 28, "num_attention_heads": 28, "num_key_value_heads": 4,
    "max_position_embeddings": 32768, "rms_norm_eps": 1e-06, "rope_theta": 1000000.0, "vocab_size": 151674,
    "tie_word_embeddings": False, "use_cache": True,
}

#: OpenGVLab/InternVL3-8B-hf's config.json as convert_internvl_weights_to_hf.py writes it (abridged to the fields it
#: sets; no top-level tie_word_embeddings)
INTERNVL3_8B_HF = {
    "architectures": ["InternVLForConditionalGeneration"], "model_type": "internvl", "downsample_ratio": 0.5,
    "image_seq_length": 256, "image_token_id": 151667, "projector_hidden_act": "gelu",
    "text_config": dict(INTERNVL3_8B_LLM, eos_token_id=151645), "torch_dtype": "bfloat16",
    "transformers_version": "4.52.0.dev0", "vision_config": VIT_300M, "vision_feature_layer": -1,
    "vision_feature_select_strategy": "default",
}

#: convert_janus_weights_to_hf.py's JanusConfig for deepseek-ai/Janus-Pro-7B: text_config the LlamaConfig of the
#: original language_config's fields (DeepSeek-LLM 7B: 4096 / 11008 / 30 layers / 32 heads / vocab 102400 / 16384
#: positions), vision_config image_size 384 and the aligner's projection_dim 4096 / depth 2, vq_config from
#: gen_vision_config (n_embed 8, image_token_size 16384), gen_aligner_config (n_embed 4096, depth 2) and
#: gen_head_config (image_token_embed 4096); no tie_word_embeddings anywhere
JANUS_PRO_7B = {
    "architectures": ["JanusForConditionalGeneration"], "model_type": "janus", "image_token_id": 100581,
    "text_config": {"model_type": "llama", "vocab_size": 102400, "hidden_size": 4096, "intermediate_size": 11008,
                    "num_hidden_layers": 30, "num_attention_heads": 32, "num_key_value_heads": 32,
                    "hidden_act": "silu", "max_position_embeddings": 16384, "torch_dtype": "bfloat16"},
    "vision_config": {"image_size": 384, "projection_dim": 4096, "depth": 2},
    "vq_config": {"embed_dim": 8, "num_embeddings": 16384, "projection_dim": 4096, "depth": 2,
                  "image_token_embed_dim": 4096},
}

#: convert_deepseek_vl_weights_to_hf.py's DeepseekVLConfig (deepseek-community/deepseek-vl-1.3b-{base,chat}),
#: its dicts verbatim
DEEPSEEK_VL_1_3B = {
    "architectures": ["DeepseekVLForConditionalGeneration"], "model_type": "deepseek_vl",
    "text_config": {"hidden_size": 2048, "intermediate_size": 5632, "max_position_embeddings": 16384,
                    "num_attention_heads": 16, "num_hidden_layers": 24, "vocab_size": 102400},
    "vision_config": {"hidden_size": 1024, "intermediate_size": 4096, "image_size": 384, "patch_size": 16,
                      "hidden_act": "gelu", "vision_use_head": False, "num_attention_heads": 16,
                      "num_hidden_layers": 24},
}

#: convert_deepseek_vl_hybrid_weights_to_hf.py's DeepseekVLHybridConfig (deepseek-community/deepseek-vl-7b-{base,chat}),
#: its dicts verbatim
DEEPSEEK_VL_7B = {
    "architectures": ["DeepseekVLHybridForConditionalGeneration"], "model_type": "deepseek_vl_hybrid",
    "text_config": {"hidden_size": 4096, "intermediate_size": 11008, "max_position_embeddings": 16384,
                    "num_attention_heads": 32, "num_hidden_layers": 30, "vocab_size": 102400},
    "vision_config": {"hidden_size": 1024, "intermediate_size": 4096, "image_size": 384, "patch_size": 16,
                      "hidden_act": "gelu", "vision_use_head": False, "num_attention_heads": 16,
                      "num_hidden_layers": 24},
    "high_res_vision_config": {"hidden_size": 768, "intermediate_size": 3072, "image_size": 1024, "patch_size": 16,
                               "num_attention_heads": 12, "num_hidden_layers": 12},
}

#: name -> (config as its converter wrote it, vocab x hidden of its untied lm_head)
CHANGED = {
    "InternVL3-8B-hf": (INTERNVL3_8B_HF, 151674 * 3584),
    "Janus-Pro-7B": (JANUS_PRO_7B, 102400 * 4096),
    "deepseek-vl-1.3b": (DEEPSEEK_VL_1_3B, 102400 * 2048),
    "deepseek-vl-7b (hybrid)": (DEEPSEEK_VL_7B, 102400 * 4096),
}


def _hf_count(cfg: dict, **top) -> int:
    return unique_param_count(hf_model(dict(copy.deepcopy(cfg), **top), image_text=True))


def test_the_audited_rules():
    for mt in ("internvl", "janus", "deepseek_vl", "deepseek_vl_hybrid", "mistral3"):
        assert WRAPPER_TIE[mt] == "text-if-absent", mt


@pytest.mark.parametrize("name", sorted(CHANGED))
def test_converted_checkpoint_counts_its_own_lm_head(name):
    """The whole checkpoint (towers, language model and its own lm_head) is transformers' model built as the
    converter's transformers 4.5x held it: untied, because its text_config is."""
    cfg, head = CHANGED[name]
    p = count_params(parse_config(copy.deepcopy(cfg)))
    assert p.lm_head == head
    assert p.total == _hf_count(cfg, tie_word_embeddings=False)


@pytest.mark.parametrize("name", sorted(CHANGED))
def test_transformers_5_builds_the_config_as_written_one_head_short(name):
    """Built from the config as it stands, transformers 5 ties (its wrapper class's default): exactly the lm_head
    fewer parameters than the checkpoint holds (the count the old "wrapper" rule gave)."""
    cfg, head = CHANGED[name]
    assert count_params(parse_config(copy.deepcopy(cfg))).total - _hf_count(cfg) == head


def test_internvl3_8b_hf_equals_its_remote_code_original():
    """The conversion copies OpenGVLab/InternVL3-8B's tensors one for one (the fused InternViT qkv split in three): the
    -hf checkpoint's count is the remote-code checkpoint's, read through llm_config (internvl_chat)."""
    original = {"architectures": ["InternVLChatModel"], "model_type": "internvl_chat", "downsample_ratio": 0.5,
                "select_layer": -1, "force_image_size": 448, "template": "internvl2_5", "torch_dtype": "bfloat16",
                "llm_config": INTERNVL3_8B_LLM,
                "vision_config": {"architectures": ["InternVisionModel"], "model_type": "intern_vit_6b",
                                  "hidden_size": 1024, "intermediate_size": 4096, "num_attention_heads": 16,
                                  "num_hidden_layers": 24, "image_size": 448, "patch_size": 14, "qkv_bias": True,
                                  "qk_normalization": False, "norm_type": "layer_norm"}}
    hf = count_params(parse_config(copy.deepcopy(INTERNVL3_8B_HF)))
    chat = count_params(parse_config(original))
    assert (hf.total, hf.vision, hf.lm_head) == (chat.total, chat.vision, chat.lm_head)


@pytest.mark.parametrize("name", sorted(CHANGED))
@pytest.mark.parametrize("wrapper_tie", [True, False])
def test_a_wrapper_flag_that_is_set_still_decides(name, wrapper_tie):
    """A transformers 5 file carries the wrapper's flag; set, it decides as transformers 5 ties, whatever the
    text_config says (here the opposite)."""
    cfg, _ = CHANGED[name]
    cfg = dict(copy.deepcopy(cfg), tie_word_embeddings=wrapper_tie)
    cfg["text_config"]["tie_word_embeddings"] = not wrapper_tie
    assert count_params(parse_config(cfg)).total == _hf_count(cfg)


@pytest.mark.parametrize("name", sorted(CHANGED))
def test_a_tied_text_config_without_the_wrapper_flag_is_tied(name):
    """A 4.x file whose text_config ties (InternVL's small Qwen2.5 models' llm_config may): 4.x tied and saved no
    lm_head; transformers 5's wrapper default ties too, so the two agree."""
    cfg, head = CHANGED[name]
    cfg = copy.deepcopy(cfg)
    cfg["text_config"]["tie_word_embeddings"] = True
    p = count_params(parse_config(cfg))
    assert p.lm_head == 0
    assert p.total == _hf_count(cfg)


@pytest.mark.parametrize("cls", ["InternVLConfig", "JanusConfig", "DeepseekVLConfig", "DeepseekVLHybridConfig",
                                 "Mistral3Config"])
def test_transformers_5_writes_the_wrapper_flag(cls):
    """save_pretrained's diff keeps the wrapper's tie_word_embeddings even at its class default (true): a transformers
    5 config.json always has it, so one without it was written by 4.x (the baidu/ERNIE-Image Mistral3 file, 5.2.0, has
    it: tests/test_real_configs_vlm_audit.py)."""
    transformers = pytest.importorskip("transformers")
    written = json.loads(getattr(transformers, cls)().to_json_string(use_diff=True))
    assert written["tie_word_embeddings"] is True


#: Unchanged "wrapper" rules whose transformers 5 class ties by default (AyaVisionConfig, Cohere2VisionConfig,
#: Lfm2VlConfig, PaliGemmaConfig: true) around a text family that ties by default too (Cohere2Config, Lfm2Config's
#: tie_embedding, GemmaConfig: true): a 4.x file leaving both flags out was tied by its text_config and saved no
#: lm_head, and transformers 5 ties it by the wrapper's default, so the rule cannot miscount it; no released config of
#: theirs with an untied text_config and no wrapper flag was found (tests/test_families.py's tiny wrappers reused)
UNCHANGED_TIED_BOTH_WAYS = ("aya_vision", "cohere2_vision", "lfm2_vl", "paligemma-default-tower")


@pytest.mark.parametrize("name", UNCHANGED_TIED_BOTH_WAYS)
def test_unchanged_wrapper_rules_agree_with_the_4x_reading(name):
    transformers = pytest.importorskip("transformers")
    from tests.test_families import WRAPPERS

    cfg = copy.deepcopy(WRAPPERS[name])
    assert WRAPPER_TIE[cfg["model_type"]] == "wrapper"
    assert "tie_word_embeddings" not in cfg and "tie_word_embeddings" not in cfg["text_config"]
    text_default = transformers.AutoConfig.for_model(cfg["text_config"]["model_type"]).tie_word_embeddings
    assert text_default is True
    p = count_params(parse_config(copy.deepcopy(cfg)))
    assert p.lm_head == 0
    assert p.total == _hf_count(cfg) == _hf_count(cfg, tie_word_embeddings=text_default)


def test_internvl3_8b_hf_is_the_published_size():
    """OpenGVLab/InternVL3-8B's hub size, 7.94B (README's InternVL row), is the untied count; tied it would be 7.40B."""
    total = count_params(parse_config(copy.deepcopy(INTERNVL3_8B_HF))).total
    assert total == 7_944_373_760 and round(total / 1e9, 2) == 7.94
