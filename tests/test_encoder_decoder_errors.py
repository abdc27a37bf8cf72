"""An unknown encoder-decoder (``is_encoder_decoder``: Whisper, BART, mBART, Marian, Pegasus, T5Gemma 2,
VisionEncoderDecoder ...) is refused as such, not with "the standard decoder fields ... are missing": their configs
keep the sizes under other names (d_model, encoder_layers, encoder / decoder sub-configs), so the not-a-decoder check
runs before the missing-fields one. A config that is no encoder-decoder and lacks the fields keeps the old message."""

from __future__ import annotations

import json
import warnings

import pytest

from planner.analysis.config import parse_config
from planner.analysis.errors import UnsupportedModelError
from tests.clirun import run

ENC_DEC = "is an encoder-decoder model (is_encoder_decoder), not a decoder-only causal LM"

#: the shape fields of openai/whisper-large-v3's config.json
WHISPER_LARGE_V3 = {"architectures": ["WhisperForConditionalGeneration"], "model_type": "whisper",
                    "is_encoder_decoder": True, "d_model": 1280, "encoder_layers": 32, "decoder_layers": 32,
                    "encoder_attention_heads": 20, "decoder_attention_heads": 20, "encoder_ffn_dim": 5120,
                    "decoder_ffn_dim": 5120, "vocab_size": 51866, "num_mel_bins": 128, "max_source_positions": 1500,
                    "max_target_positions": 448, "torch_dtype": "float16"}


def _default(model_type: str) -> dict:
    """transformers' default config of ``model_type`` as its config.json would hold it."""
    transformers = pytest.importorskip("transformers")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return json.loads(json.dumps(transformers.CONFIG_MAPPING[model_type]().to_dict(), default=str))


def test_whisper_is_refused_as_an_encoder_decoder():
    with pytest.raises(UnsupportedModelError, match=r"model_type 'whisper' is an encoder-decoder model"):
        parse_config(WHISPER_LARGE_V3)


@pytest.mark.parametrize("model_type", ["bart", "mbart", "marian", "pegasus", "whisper", "t5gemma2",
                                        "vision-encoder-decoder"])
def test_transformers_encoder_decoders_are_refused_as_such(model_type):
    cfg = _default(model_type)
    assert cfg["is_encoder_decoder"] is True
    with pytest.raises(UnsupportedModelError) as e:
        parse_config(cfg)
    assert f"model_type '{model_type}' {ENC_DEC}" in e.value.message
    assert "standard decoder fields" not in e.value.message


def test_a_non_encoder_decoder_without_the_fields_keeps_the_missing_fields_message():
    with pytest.raises(UnsupportedModelError, match="unsupported model_type 'mystery' and the standard decoder fields "
                                                    "num_hidden_layers, num_attention_heads are missing"):
        parse_config({"model_type": "mystery", "d_model": 512, "vocab_size": 1000, "is_encoder_decoder": False})


def test_cli_whisper_gives_one_error_line_naming_encoder_decoder(tmp_path):
    d = tmp_path / "whisper"
    d.mkdir()
    (d / "config.json").write_text(json.dumps(WHISPER_LARGE_V3))
    run("analyze", d).assert_error("model_type 'whisper'", ENC_DEC)
