"""Weights a checkpoint stores in float32 inside a 16-bit model, sized as stored (``ModelSpec.fp32_kinds`` for whole
tensor kinds, ``ModelSpec.fp32_names`` for tensors named by a fragment, as transformers' ``_keep_in_fp32_modules``).

- Qwen2.5-Omni: ``Qwen2_5OmniForConditionalGeneration.enable_talker`` builds token2wav and calls
  ``self.token2wav.float()`` (transformers 5.25, models/qwen2_5_omni/modeling_qwen2_5_omni.py); the released
  Qwen/Qwen2.5-Omni-7B checkpoint stores it so: its model.safetensors.index.json metadata.total_size is
  22,366,403,936 bytes (tests/test_qwen25_omni.py OMNI_7B_TOTAL_SIZE), against 21,464,450,816 were all 10,732,225,408
  parameters bf16; token2wav's 449,051,264 parameters at 4 bytes account for 898,102,528 of the 901,953,120 extra,
  the rest (3,850,592 bytes) being the one tensor the index lists beyond the 2,447 transformers builds. The thinker's
  own audio tower (also kind ``audio``) stays bf16, which a whole-kind fp32 would not.
- The serving engines do not load token2wav (``ModelSpec.engine_unloaded``): their weights do not change.
"""

from __future__ import annotations

import copy

import pytest

from planner.analysis.config import parse_config
from planner.analysis.params import count_params
from planner.analysis.spec import ModelSpec
from planner.analysis.tensors import Tensor
from planner.analysis.weights import WeightFormat, weight_format
from tests.test_qwen25_omni import (BIGVGAN_7B, DIT_7B, OMNI_7B, OMNI_7B_TOTAL_SIZE, TALKER_7B, THINKER_7B, TINY,
                                    bigvgan_hand, dit_hand)


def _bytes(cfg: dict, dtype: str | None = None) -> int:
    spec = parse_config(copy.deepcopy(cfg))
    fmt, _ = weight_format(spec, dtype)
    return fmt.model_bytes(spec)


def test_qwen25_omni_7b_token2wav_in_fp32():
    """Hand count (tests/test_qwen25_omni.py's module-shape counts): thinker and talker bf16, DiT and BigVGAN fp32."""
    stored = 2 * (THINKER_7B + TALKER_7B) + 4 * (DIT_7B + BIGVGAN_7B)
    assert _bytes(OMNI_7B) == stored == 22_362_553_344
    # the checkpoint's total_size: all-bf16 would be 901,953,120 bytes short; fp32 token2wav leaves one tensor's bytes
    all_bf16 = 2 * count_params(parse_config(copy.deepcopy(OMNI_7B))).total
    assert OMNI_7B_TOTAL_SIZE - all_bf16 == 901_953_120
    assert 0 < OMNI_7B_TOTAL_SIZE - stored < 2e-4 * OMNI_7B_TOTAL_SIZE


def test_qwen25_omni_thinker_alone_is_all_bf16():
    assert _bytes(dict(OMNI_7B, enable_audio_output=False)) == 2 * THINKER_7B


def test_qwen25_omni_tiny_by_hand_and_against_transformers():
    """TINY (tests/test_qwen25_omni.py): only token2wav's parameters move to 4 bytes; transformers' model built in
    bf16 on the meta device (token2wav.float() in enable_talker) holds the same bytes."""
    torch = pytest.importorskip("torch", reason="the oracle builds transformers' model on the meta device")
    transformers = pytest.importorskip("transformers", reason="the oracle is transformers' model (dev extra)")
    t2w = dit_hand(64, 3, 2, 24, 3, 16, 50, 8, 12, 10, [16, 16, 32, 48], [5, 3, 3, 1], 8, 4, 6) + \
        bigvgan_hand(8, 32, [3, 5], [7, 4])
    total = count_params(parse_config(copy.deepcopy(TINY))).total
    ours = _bytes(dict(TINY, torch_dtype="bfloat16"))
    assert ours == 2 * (total - t2w) + 4 * t2w

    transformers.logging.set_verbosity_error()
    d = {k: v for k, v in copy.deepcopy(TINY).items() if k not in ("model_type", "architectures", "torch_dtype")}
    config = transformers.AutoConfig.for_model("qwen2_5_omni", **d)
    with torch.device("meta"):
        model = transformers.Qwen2_5OmniForConditionalGeneration._from_config(config, dtype=torch.bfloat16)
    seen, hf = set(), 0
    for p in model.parameters():
        if id(p) not in seen:
            seen.add(id(p))
            hf += p.numel() * p.element_size()
    assert ours == hf


def test_qwen25_omni_engine_weights_unchanged():
    """vLLM's thinker skips token2wav.: the engine's weights are the thinker's bf16 bytes, fp32 storage or not."""
    from planner.analysis.analyze import Options, analyze
    from planner.analysis.parallel import tp_plan
    from planner.hardware.engine import load_engine, loaded_weights

    full = analyze(parse_config(copy.deepcopy(OMNI_7B)), Options())
    assert full.fmt.fp32_names == ("token2wav.",)
    assert loaded_weights(full, tp_plan(full.spec, 1), load_engine("vllm")).counted_bytes_per_gpu == 2 * THINKER_7B


def test_fp32_names_size_only_the_named_tensors():
    """The mechanism itself: a name fragment selects tensors within a kind, under a --dtype recipe or override too."""
    a = Tensor("token2wav.code2wav_dit_model.proj_out.weight", (80, 64), "audio")
    b = Tensor("model.audio_tower.proj.weight", (80, 64), "audio")
    spec = ModelSpec(model_type="x", hidden_size=64, vocab_size=10, layers=(), tie_word_embeddings=True,
                     final_norm=None, vision=(a, b), torch_dtype="bfloat16", fp32_names=("token2wav.",))
    fmt, _ = weight_format(spec)
    assert (fmt.tensor_bytes(a), fmt.tensor_bytes(b)) == (4 * 80 * 64, 2 * 80 * 64)
    fp8, _ = weight_format(spec, "fp8")  # llm-compressor FP8 recipe: converts linear / expert kinds only
    assert (fp8.tensor_bytes(a), fp8.tensor_bytes(b)) == (4 * 80 * 64, 2 * 80 * 64)
    fp16, _ = weight_format(spec, "fp16")  # an override leaves the named tensors in fp32
    assert (fp16.tensor_bytes(a), fp16.tensor_bytes(b)) == (4 * 80 * 64, 2 * 80 * 64)
    plain = WeightFormat(base=fmt.base, quant=None, compute=fmt.compute, act=fmt.act, source="torch_dtype")
    assert plain.tensor_bytes(a) == 2 * 80 * 64  # nothing named: every tensor at the base dtype
