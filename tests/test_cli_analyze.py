"""``planner analyze`` and ``planner models``: the JSON contract, model resolution, bad input."""

import json
import os
import subprocess
import sys

import pytest

from tests.clirun import run
from tests.conftest import ROOT, load_bundled_config


def test_json_contract_llama():
    r = run("analyze", "llama-3.1-8b", "--json", "--context", "2000", "--batch", "4", "--dtype", "bf16")
    assert r.code == 0, r.err
    d = r.json
    assert d["schema_version"] == 1
    assert d["model"]["id"] == "meta-llama/Llama-3.1-8B" and d["model"]["source"] == "bundled"
    assert d["model"]["model_type"] == "llama" and d["model"]["num_layers"] == 32
    assert d["params"]["total"] == 8030261248 and d["params"]["active"] == 8030261248
    assert d["params"]["embedding"] == d["params"]["lm_head"] == 128256 * 4096
    assert d["flops_per_token"]["decode"] > 0 and d["flops_per_token"]["prefill"] > d["flops_per_token"]["decode"]
    kv = d["kv_cache"]
    assert kv["bytes_per_token"] == 131072 and kv["bytes_per_sequence"] == 2000 * 131072
    assert kv["context"] == 2000 and kv["dtype"] == "bf16" and len(kv["per_layer"]) == 32
    mem = d["memory"]
    assert mem["weights_bytes"] == 2 * 8030261248
    assert mem["kv_bytes"] == 4 * 2000 * 131072
    assert mem["total_bytes"] == mem["weights_bytes"] + mem["kv_bytes"]
    assert mem["fits"] is True and mem["hardware"] == "h100-sxm"
    for key in ("read", "default", "derived"):
        assert all(p["status"] in ("read", "default", "derived") for p in d["provenance"])
    assert {"field": "head_dim", "status": "derived", "value": 128, "note": "hidden_size / num_attention_heads"} in d["provenance"]
    assert "NaN" not in r.out and "Infinity" not in r.out


@pytest.mark.parametrize("fmt", ["table", "markdown", "csv"])
def test_human_formats(fmt):
    r = run("analyze", "qwen2.5-0.5b", "--format", fmt)
    assert r.code == 0, r.err
    assert ("494032768" if fmt == "csv" else "494,032,768") in r.out


def test_resolution_by_path_folder_and_alias(tmp_path):
    cfg = load_bundled_config("Qwen/Qwen2.5-0.5B")
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    by_folder = run("analyze", str(tmp_path), "--json").json
    by_file = run("analyze", str(tmp_path / "config.json"), "--json").json
    by_alias = run("analyze", "qwen2.5-0.5b", "--json").json
    by_id = run("analyze", "Qwen/Qwen2.5-0.5B", "--json").json
    assert by_folder["model"]["source"] == by_file["model"]["source"] == "file"
    assert by_alias["model"]["source"] == by_id["model"]["source"] == "bundled"
    assert by_folder["params"] == by_alias["params"]


def test_dtype_default_and_override():
    d = run("analyze", "google/gemma-2-2b", "--json").json  # torch_dtype float32 in its config
    assert d["memory"]["weights_bytes"] == 4 * d["params"]["total"]
    assert d["memory"]["weights_dtype_source"] == "torch_dtype"
    d = run("analyze", "google/gemma-2-2b", "--json", "--dtype", "bf16").json
    assert d["memory"]["weights_bytes"] == 2 * d["params"]["total"]


def test_absent_torch_dtype_says_bf16_assumed(tmp_path):
    cfg = {k: v for k, v in load_bundled_config("Qwen/Qwen2.5-0.5B").items() if k not in ("torch_dtype", "dtype")}
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    d = run("analyze", str(tmp_path), "--json").json
    assert {"field": "torch_dtype", "status": "default", "value": "bf16", "note": "absent: bf16 assumed"} in d["provenance"]
    assert d["memory"]["weights_bytes"] == 2 * d["params"]["total"]


def test_context_beyond_max_position_warns_on_stderr():
    r = run("analyze", "meta-llama/Llama-2-7b-hf", "--context", "8192", "--json")
    assert r.code == 0
    assert "max_position_embeddings" in r.err and r.err.startswith("Warning:")
    assert r.json["kv_cache"]["context"] == 8192


def test_fit_and_require_fit():
    r = run("analyze", "meta-llama/Llama-3.1-70B", "--json", "--hardware", "l4")
    assert r.json["memory"]["fits"] is False
    r = run("analyze", "meta-llama/Llama-3.1-70B", "--hardware", "l4", "--require-fit", "--json")
    assert r.code == 3 and r.json["memory"]["fits"] is False
    d = run("analyze", "meta-llama/Llama-3.1-70B", "--json", "--hardware", "h100", "--gpus", "4").json
    assert d["memory"]["fits"] is True and d["memory"]["gpus"] == 4


def test_max_batch_matches_its_definition():
    d = run("analyze", "llama-3.1-8b", "--json", "--context", "8192").json
    m = d["memory"]
    per_seq = d["kv_cache"]["bytes_per_sequence"]  # the engine reserved its activation peak once, in usable
    assert m["max_batch"] == (m["usable_bytes"] - m["per_gpu"]["weights_bytes"]) // per_seq


def test_models_list():
    r = run("models", "list", "--json")
    ids = {m["id"] for m in r.json["models"]}
    assert {"meta-llama/Llama-3.1-8B", "deepseek-ai/DeepSeek-V3", "openai/gpt-oss-20b"} <= ids
    assert run("models", "list").code == 0


# ---- bad input -----------------------------------------------------------------------------------

BASE = {"model_type": "llama", "hidden_size": 256, "num_hidden_layers": 2, "num_attention_heads": 8,
        "num_key_value_heads": 4, "intermediate_size": 512, "vocab_size": 1000}


@pytest.mark.parametrize("change,fragments", [
    ({"hidden_size": None}, ["hidden_size"]),
    ({"hidden_size": "4096"}, ["hidden_size", "integer"]),
    ({"num_hidden_layers": 0}, ["num_hidden_layers"]),
    ({"num_attention_heads": -8}, ["num_attention_heads"]),
    ({"num_key_value_heads": 3}, ["num_key_value_heads", "divide"]),
    ({"vocab_size": 10**12}, ["vocab_size"]),
    ({"intermediate_size": 1.5}, ["intermediate_size"]),
    ({"tie_word_embeddings": "yes"}, ["tie_word_embeddings"]),
    ({"model_type": "nonesuch_arch", "hidden_size": None}, ["nonesuch_arch", "supported"]),
    ({"model_type": 7}, ["model_type"]),
])
def test_bad_config_fields(tmp_path, change, fragments):
    cfg = dict(BASE)
    for k, v in change.items():
        if v is None:
            cfg.pop(k)
        else:
            cfg[k] = v
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    r = run("analyze", str(path))
    r.assert_error(str(path), *fragments)


def test_missing_required_field_names_file_and_field(tmp_path):
    cfg = dict(BASE)
    del cfg["num_attention_heads"]
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    line = run("analyze", str(path)).assert_error("num_attention_heads")
    assert str(path) in line


@pytest.mark.parametrize("content,fragment", [
    (b"{not json", "not valid JSON"),
    (b"[1, 2, 3]", "JSON object"),
    (b"\xff\xfe\x00garbage", "UTF-8"),
    (b"", "not valid JSON"),
])
def test_unreadable_files(tmp_path, content, fragment):
    path = tmp_path / "config.json"
    path.write_bytes(content)
    run("analyze", str(path)).assert_error(fragment)


def test_folder_without_config(tmp_path):
    run("analyze", str(tmp_path)).assert_error("no config.json")


def test_unknown_model_suggests_bundled_names():
    line = run("analyze", "llama-3.1-8c").assert_error("llama-3.1-8c")
    assert "llama-3.1-8b" in line


def test_hub_id_offline_and_not_cached(tmp_path):
    env = {"HF_HUB_OFFLINE": "1", "HF_HOME": str(tmp_path)}
    line = run("analyze", "someorg/not-a-real-model", env=env).assert_error("someorg/not-a-real-model")
    assert "planner models list" in line


@pytest.mark.parametrize("args,fragment", [
    (["--context", "-5"], "--context"),
    (["--batch", "0"], "--batch"),
    (["--dtype", "int3"], "int3"),
    (["--kv-dtype", "bogus"], "bogus"),
    (["--hardware", "h1000"], "h1000"),
    (["--gpus", "0"], "--gpus"),
])
def test_bad_options(args, fragment):
    r = run("analyze", "llama-3.1-8b", *args)
    assert r.code in (1, 2)
    r.assert_error(fragment, code=r.code)


def test_auto_map_is_read_not_run(tmp_path):
    cfg = dict(BASE, auto_map={"AutoModelForCausalLM": "evil.Model"}, trust_remote_code=True)
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    (tmp_path / "evil.py").write_text("raise SystemExit('remote code ran')\n")
    d = run("analyze", str(tmp_path), "--json").json
    assert any("remote code" in c for c in d["caveats"])


def test_unknown_family_is_generic_with_caveat(tmp_path):
    cfg = dict(BASE, model_type="brand_new_llm")
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    d = run("analyze", str(tmp_path), "--json").json
    assert any("brand_new_llm" in c and "generic" in c for c in d["caveats"])
    assert d["params"]["total"] > 0


def test_generic_fallback_names_the_fields_it_does_not_model(tmp_path):
    cfg = dict(BASE, model_type="brand_new_llm", use_parallel_residual=True, use_embedding_sharing=True,
               sliding_window_pattern=4, use_bias=True, alibi=False)
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    d = run("analyze", str(tmp_path), "--json").json
    line = next(c for c in d["caveats"] if "does not model" in c)
    for key in ("use_parallel_residual", "use_embedding_sharing", "sliding_window_pattern", "use_bias"):
        assert key in line
    assert "alibi" not in line  # false: nothing to model


def test_unknown_family_gate_reads_aliases(tmp_path):
    cfg = {"model_type": "brand_new_gpt", "n_embd": 64, "n_layer": 2, "n_head": 4, "vocab_size": 100,
           "intermediate_size": 128}
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    d = run("analyze", str(tmp_path), "--json").json
    assert any("brand_new_gpt" in c and "generic" in c for c in d["caveats"])


def _safetensors_header(path, shapes):
    """A safetensors file holding only its header (the planner reads headers, never the data)."""
    header, offset = {}, 0
    for name, shape in shapes.items():
        n = 2
        for dim in shape:
            n *= dim
        header[name] = {"dtype": "BF16", "shape": list(shape), "data_offsets": [offset, offset + n]}
        offset += n
    raw = json.dumps(header).encode()
    path.write_bytes(len(raw).to_bytes(8, "little") + raw)


@pytest.mark.parametrize("extra_rows", [0, 7])
def test_generic_count_that_disagrees_with_the_checkpoint_is_an_error(tmp_path, extra_rows):
    from planner.analysis.config import parse_config

    cfg = dict(BASE, model_type="brand_new_llm", torch_dtype="bfloat16")
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    spec = parse_config(cfg)
    shapes = {t.name: t.shape for t in spec.tensors()}
    shapes["model.embed_tokens.weight"] = (spec.vocab_size + extra_rows, spec.hidden_size)
    _safetensors_header(tmp_path / "model.safetensors", shapes)
    r = run("analyze", str(tmp_path), "--json")
    if extra_rows == 0:
        assert r.code == 0, r.err
    else:
        assert r.code != 0 and r.err.count("Error:") == 1
        assert f"+{extra_rows * spec.hidden_size:,}" in r.err and "generic" in r.err


def test_no_torch_for_help_analyze_trace():
    code = (
        "import sys\n"
        "from typer.testing import CliRunner\n"
        "from planner.cli.app import app\n"
        "r = CliRunner()\n"
        "for args in (['--help'], ['analyze', 'llama-3.1-8b', '--json'], ['trace', 'llama-3.1-8b', '--json'],"
        " ['models', 'list', '--json'], ['hardware', 'list', '--json']):\n"
        "    res = r.invoke(app, args)\n"
        "    assert res.exit_code == 0, (args, res.output)\n"
        "assert 'torch' not in sys.modules, 'torch was imported'\n"
        "assert 'huggingface_hub' not in sys.modules\n"
        "print('ok')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120,
                         env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().endswith("ok")


@pytest.mark.parametrize("extra,why", [
    # BERT-base's published config: token-type embeddings, a masked-LM head (the generic count was 1.25x)
    ({"model_type": "bert", "architectures": ["BertForMaskedLM"], "type_vocab_size": 2}, "token-type embeddings"),
    ({"model_type": "roberta_like", "architectures": ["RobertaForSequenceClassification"]}, "architectures"),
    ({"model_type": "t5_like", "is_encoder_decoder": True}, "encoder-decoder"),
    # facebook/wav2vec2-base-960h and google/vit-base-patch16-224: speech / vision encoders with their heads
    ({"model_type": "wav2vec2", "architectures": ["Wav2Vec2ForCTC"]}, "Wav2Vec2ForCTC"),
    ({"model_type": "vit", "architectures": ["ViTForImageClassification"]}, "ViTForImageClassification"),
    # openai/clip-vit-base-patch32 (architectures CLIPModel): two towers scored against each other, no LM head
    ({"model_type": "clip", "architectures": ["CLIPModel"], "logit_scale_init_value": 2.6592}, "dual encoder"),
])
def test_an_unknown_encoder_is_refused_not_counted_as_a_decoder(tmp_path, extra, why):
    (tmp_path / "config.json").write_text(json.dumps(dict(BASE, **extra)))
    r = run("analyze", str(tmp_path), "--json")
    assert r.code != 0 and r.out == ""
    assert r.err.startswith("Error: ") and r.err.count("\n") <= 1
    assert why in r.err and "not a decoder-only causal LM" in r.err


def test_an_unknown_family_that_says_is_moe_false_is_counted_dense(tmp_path):
    """SmallDoge's Doge keeps num_experts (16384) beside is_moe: false; the generic decoder counted 16384
    routed experts (8186x transformers'). The dense count is the Llama one, from transformers on meta."""
    from tests.oracle import hf_param_count

    cfg = dict(BASE, model_type="brand_new_llm", is_moe=False, num_experts=64, num_experts_per_tok=4)
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    d = run("analyze", str(tmp_path), "--json").json
    assert d["params"]["total"] == d["params"]["active"] == hf_param_count(dict(BASE, model_type="llama"))


def test_an_unknown_family_with_expert_fields_it_cannot_read_is_refused(tmp_path):
    """Aria's text model names its experts moe_num_experts / moe_topk: the generic decoder found no MoE and
    counted one dense MLP (0.22x transformers'), so such a config is refused, naming the fields."""
    cfg = dict(BASE, model_type="brand_new_moe", moe_num_experts=8, moe_topk=2)
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    r = run("analyze", str(tmp_path), "--json")
    assert r.code != 0 and r.out == "" and r.err.startswith("Error: ")
    assert "moe_num_experts" in r.err and "not a known family" in r.err


def test_a_generic_read_that_fails_says_the_family_is_unknown(tmp_path):
    """MiniMax-Text-01's lightning-attention layers (layer_types 'linear_attention') are not something the generic
    decoder reads; the error names the unknown family rather than blaming the config."""
    cfg = dict(BASE, model_type="brand_new_hybrid", layer_types=["linear_attention", "full_attention"])
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    r = run("analyze", str(tmp_path), "--json")
    assert r.code != 0 and r.out == "" and r.err.startswith("Error: ") and r.err.count("\n") <= 1
    assert "unknown model_type 'brand_new_hybrid'" in r.err and "linear_attention" in r.err
