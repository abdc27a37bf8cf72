"""``planner verify MODEL --weights DIR --reference transformers`` on a tiny random checkpoint written
with ``save_pretrained`` and a tiny word-level tokenizer trained in memory (nothing downloaded)."""

from __future__ import annotations

import json

import pytest

torch = pytest.importorskip("torch", reason="the reference check needs the torch runtime")
transformers = pytest.importorskip("transformers", reason="the reference check compares with transformers")

from tests.clirun import run  # noqa: E402

CONFIGS = {
    "llama": {"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
              "num_key_value_heads": 2, "intermediate_size": 128, "vocab_size": 64, "rope_theta": 10000.0,
              "max_position_embeddings": 256, "tie_word_embeddings": False},
    "qwen2": {"model_type": "qwen2", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
              "num_key_value_heads": 2, "intermediate_size": 128, "vocab_size": 64, "rope_theta": 1000000.0,
              "max_position_embeddings": 256, "tie_word_embeddings": True},
}


def save_tokenizer(folder) -> None:
    """The bench's in-memory word-level tokenizer (bench/gpu_verify.py), saved to ``folder``."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "bench" / "gpu_verify.py"
    spec = importlib.util.spec_from_file_location("gpu_verify_bench", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    mod.save_word_tokenizer(folder)


def save_checkpoint(folder, family: str) -> None:
    from transformers import AutoConfig, AutoModelForCausalLM

    transformers.logging.set_verbosity_error()
    cfg = dict(CONFIGS[family], initializer_range=0.2)
    config = AutoConfig.for_model(cfg.pop("model_type"), **cfg)
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(config).float().eval()
    with torch.no_grad():  # norms away from 1 so that a misplaced norm weight would show
        for name, p in model.named_parameters():
            if "norm" in name:
                p.add_(0.1 * torch.randn(p.shape))
    model.save_pretrained(folder)
    save_tokenizer(folder)


@pytest.fixture
def checkpoint(tmp_path):
    def make(family: str = "llama"):
        d = tmp_path / family
        save_checkpoint(d, family)
        return d

    return make


@pytest.mark.parametrize("family", sorted(CONFIGS))
def test_reference_check_passes_on_a_saved_checkpoint(checkpoint, family):
    d = checkpoint(family)
    r = run("verify", str(d), "--weights", str(d), "--reference", "transformers", "--device", "cpu",
            "--prompt", "the capital of france is paris . the capital of germany is", "--json")
    assert r.code == 0, r.err
    j = r.json
    assert j["passed"] and j["max_abs_logit_diff"] <= 1e-3 and j["tolerance"] == 1e-3
    assert j["max_abs_logit"] > 0.1  # logits large enough for the comparison to mean something
    assert j["prompt_tokens"] >= 8 and j["top1_agree"] == j["prompt_tokens"]  # qwen2 folders load Qwen2Tokenizer
    g = j["greedy"]
    assert len(g["ours"]) == 20 and g["ours"] == g["reference"] and g["first_divergence"] is None


def test_reference_table_shows_tokens_side_by_side(checkpoint):
    d = checkpoint("llama")
    r = run("verify", str(d), "--weights", str(d), "--reference", "transformers", "--device", "cpu")
    assert r.code == 0, r.err
    for fragment in ("max |Δlogit|", "PASS", "top-1 agreement", "20 greedy tokens", "planner decoder", "transformers"):
        assert fragment in r.out, fragment


def test_reference_check_fails_when_the_decoder_is_built_from_another_config(checkpoint, tmp_path):
    """MODEL's config (rope_theta 500) differs from the checkpoint's (10000): the logits differ, and the
    command says so on one line and exits 1 after printing the comparison."""
    d = checkpoint("llama")
    other = tmp_path / "other"
    other.mkdir()
    cfg = json.loads((d / "config.json").read_text())
    cfg["rope_theta"] = 500.0
    (other / "config.json").write_text(json.dumps(cfg))
    r = run("verify", str(other), "--weights", str(d), "--reference", "transformers", "--device", "cpu", "--json")
    assert r.code == 1
    assert r.json["passed"] is False and r.json["max_abs_logit_diff"] > 1e-3
    errors = [line for line in r.err.splitlines() if line.startswith("Error: ")]
    assert len(errors) == 1 and "logits differ from transformers" in errors[0] and "Traceback" not in r.err


def test_bf16_tolerance_is_stated_and_scales_with_the_logits():
    from planner.runtime.reference import tolerance

    tol, rule = tolerance("bf16", 20.0)
    assert tol == pytest.approx(8 * 2 ** -8 * 20.0) and "bf16" in rule and "2^-8" in rule
    assert tolerance("fp32", 20.0)[0] == 1e-3


@pytest.mark.parametrize("args,fragment", [
    (("--reference", "transformers"), "--weights"),
    (("--reference", "vllm", "--weights", "."), "not a known reference"),
    (("--prompt", "hi"), "--reference"),
])
def test_reference_bad_options(checkpoint, args, fragment):
    d = checkpoint("llama")
    r = run("verify", str(d), "--device", "cpu", *args)
    r.assert_error(fragment, code=r.code)
    assert r.code in (1, 2)


def test_reference_needs_a_tokenizer(checkpoint):
    d = checkpoint("llama")
    for f in d.iterdir():
        if "token" in f.name:
            f.unlink()
    r = run("verify", str(d), "--weights", str(d), "--reference", "transformers", "--device", "cpu")
    r.assert_error("tokenizer", code=1)
