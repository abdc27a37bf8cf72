"""Audit of LMDeploy's and MLC-LLM's model registries (wave s28 D): the architectures / model_types they serve that
planner read wrongly or ended in a misleading generic-decoder error.

LMDeploy: ``lmdeploy/pytorch/models/module_map.py`` (architecture name -> module) and TurboMind's
``lmdeploy/turbomind/supported_models.py``. MLC-LLM: ``python/mlc_llm/model/model.py`` (``MODELS`` keyed by
model_type). The rest of both registries was already counted or refused by name (see tests/test_audit_s28d.py).

Built here:

- ``phi-msft`` (MLC's PhiConfig, "the Phi-2 model"; microsoft/phi-2 and phi-1_5 before their transformers
  conversion, remote code ``configuration_phi.PhiConfig`` / ``modeling_phi.PhiForCausalLM``): the generic read ended
  in "field 'intermediate_size' is null but required". Its modules are transformers' Phi under other names: a token
  embedding ``transformer.embd.wte``; per ParallelBlock one LayerNorm ``ln`` feeding in parallel the attention
  ``mixer`` (a biased fused ``Wqkv`` of head_dim x (n_head + 2 n_head_kv) rows, a biased ``out_proj``, RoPE on
  ``rotary_dim`` channels, its inv_freq buffer not persisted) and the MLP (biased ``fc1`` n_embd -> n_inner, GELU,
  biased ``fc2``); the CausalLMHead's LayerNorm ``lm_head.ln`` and biased ``lm_head.linear``. PhiConfig pads
  ``vocab_size`` up to a multiple of ``pad_vocab_size_multiple`` (64), ``n_inner`` None is 4 x n_embd, ``n_head_kv``
  None is n_head, and ``rotary_dim`` is capped at the head width (min(rotary_dim, n_embd // n_head)). The config is
  translated onto transformers' PhiConfig (n_embd -> hidden_size, n_inner -> intermediate_size, rotary_dim -> the
  rotary width) and built by planner's ``phi`` family. Phixtral (the same model_type with ``num_local_experts`` > 1:
  mlabonne/phixtral-*, a routed bank of biased fc1 / fc2 experts per layer) is handed to wave s28 A's
  ``s28a_mlx.build_phixtral`` (mlx-lm's phixtral.py); a mixformer-sequential config with experts is refused (no
  Phixtral was published in that format).
- ``mixformer-sequential`` (the first phi-1 / phi-1_5 hub format, MixFormerSequentialForCausalLM; MLC's auto_config
  reads it as phi-msft, its phi_loader maps ``layers.0.wte`` / ``layers.{i + 1}.*`` / the last layer's ``ln`` and
  ``linear`` one to one onto phi-msft's tensors; mergekit's PhiTensorNames lists the same set): the same fields and
  modules, read the same way when its ``architecture`` block is the released parallel MHA + MLP block (or null);
  any other block description (a per-layer list, GLU / fused MLPs, RMS norms, bias-free mixers or heads, sequential
  blocks: the remote code builds all of these from it) is refused by name.

Refused by name (``REFUSED_S28D``) or by architecture (``REFUSED_ARCHITECTURES_S28D``):

- reward models LMDeploy serves (InternLM2ForRewardModel: internlm/internlm2-*-reward, model_type internlm2, a
  ``v_head`` Linear(hidden, 1) and no lm_head; Qwen2ForRewardModel: Qwen/Qwen2.5-Math-RM-72B, model_type qwen2, a
  ``score`` Linear(hidden, hidden) + ReLU + Linear(hidden, num_labels) head; the same layout's
  Qwen2ForProcessRewardModel, Qwen2.5-Math-PRM): read by model_type they were counted as generative models (a
  vocabulary head, their reward head left out);
- EAGLE draft models (the hub's LlamaForCausalLMEagle3 / LlamaForCausalLMEagle, which LMDeploy renames
  Eagle3LlamaForCausalLM / EagleLlamaForCausalLM, lmdeploy/pytorch/configurations/llama.py) and MLC's ``eagle`` /
  ``medusa`` model_types: a draft layer over a target model's hidden states, read before as a whole 1-layer Llama;
- LMDeploy's MetaMoE (MetaMoeForConditionalGeneration, lmdeploy/pytorch/models/meta_moe.py): Qwen3.5-MoE's layers
  with routed experts in ``num_meta_moe_blocks`` banks shared across layers, as Intern-S2-Mobius (refused);
- Intern-S1.1 (``interns1_1``, InternS1_1_ForConditionalGeneration), which LMDeploy serves with Intern-S1-Pro's class
  plus an optional time-series encoder (``ts_config``): no config.json of it was at hand; and an Intern-S1-Pro
  (``interns1_pro``) config with a ``ts_config``, whose encoder the tower count would leave out
  (refused by that family's tower counter, interns1_pro.interns1_pro_vision).
"""

from __future__ import annotations

from dataclasses import replace

from ..errors import UnsupportedModelError, short
from ..fields import MAX_LAYERS, Fields
from ..spec import ModelSpec
from .common import storage_fields

#: PhiConfig's defaults (configuration_phi.py of the phi-msft revisions) for the fields read when absent; the widths
#: (n_embd, n_layer, n_head, vocab_size) are required: the copies of that file disagree on their defaults
PHI_MSFT_DEFAULTS = {"n_positions": 2048, "rotary_dim": 32, "activation_function": "gelu_new",
                     "layer_norm_epsilon": 1e-5, "tie_word_embeddings": False, "pad_vocab_size_multiple": 64}
_NOTE = "absent: PhiConfig's default (configuration_phi.py, model_type phi-msft)"
_HINT = "a generic Llama-style analysis would miscount it, so none is given"


#: the block of the released mixformer-sequential checkpoints (phi-1, phi-1_5): a parallel block of the default MHA
#: mixer and the plain MLP; MixFormerSequentialForCausalLM builds ``{"block_cls": "parallel"}`` for a null one
MIXFORMER_BLOCK = {"block_cls": "parallel", "mixer": {}, "mlp": {"mlp_cls": "mlp"}}


def _check_mixformer_block(f: Fields) -> None:
    """Refuse a mixformer-sequential ``architecture`` other than the released parallel MHA + MLP block: the remote
    code also builds per-layer block lists, sequential blocks, GLU / fused MLPs, RMS norms and bias-free heads from it,
    whose shapes differ from Phi's."""
    block = f.raw("architecture")
    if block is None:
        return
    if not isinstance(block, dict):
        raise UnsupportedModelError(
            f"{f.where}: field 'architecture' is a {type(block).__name__}, not one block description: "
            "MixFormerSequentialForCausalLM then builds one block per entry (per-layer layouts), which is not modelled",
            "the released phi-1 / phi-1_5 configs give one parallel block")
    # what differs from the released block once its defaults (an empty mixer, the plain mlp, parallel) are dropped
    rest = {k: v for k, v in block.items()
            if v not in ({}, None) and (k, v) not in (("block_cls", "parallel"), ("mlp", {"mlp_cls": "mlp"}))}
    if rest:
        raise UnsupportedModelError(
            f"{f.where}: field 'architecture' ({short(block)}) is not the released parallel block "
            f"{MIXFORMER_BLOCK}: other mixers, MLPs (GLU, fused), norms, heads or sequential blocks that "
            "MixFormerSequentialForCausalLM builds from it are not modelled",
            "the released phi-1 / phi-1_5 configs give that block")


def phi_config(f: Fields, model_type: str = "phi-msft") -> dict:
    """The phi-msft (or mixformer-sequential) config as transformers' PhiConfig (module doc)."""
    if model_type == "mixformer-sequential":
        _check_mixformer_block(f)
    hidden = f.int("n_embd")
    heads = f.int("n_head")
    if hidden % heads:
        raise f.error("n_head", f"({heads}) must divide n_embd ({hidden}): Phi's heads are n_embd / n_head wide")
    head_dim = hidden // heads
    kv = f.int("n_head_kv") if f.raw("n_head_kv") is not None else f.derived("n_head_kv", heads, "null: n_head")
    if kv > heads or heads % kv:
        raise f.error("n_head_kv", f"({kv}) must divide n_head ({heads})")
    inner = f.int("n_inner") if f.raw("n_inner") is not None else f.derived("n_inner", 4 * hidden, "null: 4 x n_embd")
    multiple = f.int("pad_vocab_size_multiple", PHI_MSFT_DEFAULTS["pad_vocab_size_multiple"], note=_NOTE)
    vocab = f.int("vocab_size", hi=1 << 26)
    padded = -(-vocab // multiple) * multiple
    if padded != vocab:
        f.derived("vocab_size", padded, f"{vocab} padded up to a multiple of pad_vocab_size_multiple ({multiple}), "
                                        "as PhiConfig stores it")
    rotary = f.int("rotary_dim", PHI_MSFT_DEFAULTS["rotary_dim"], lo=0, note=_NOTE)
    if rotary > head_dim:
        rotary = f.derived("rotary_dim", head_dim,
                           f"min(rotary_dim, n_embd // n_head = {head_dim}), as PhiConfig caps it")
    if rotary == 0 or rotary % 2:
        raise f.error("rotary_dim", f"({rotary}) must be a positive even number: RoPE rotates channel pairs")
    out = {"model_type": "phi", "hidden_size": hidden, "num_hidden_layers": f.int("n_layer", hi=MAX_LAYERS),
           "num_attention_heads": heads, "num_key_value_heads": kv, "intermediate_size": inner,
           "vocab_size": padded, "rotary_dim": rotary,
           "hidden_act": f.str("activation_function", PHI_MSFT_DEFAULTS["activation_function"], note=_NOTE),
           "layer_norm_eps": f.float("layer_norm_epsilon", PHI_MSFT_DEFAULTS["layer_norm_epsilon"], note=_NOTE),
           "max_position_embeddings": f.int("n_positions", PHI_MSFT_DEFAULTS["n_positions"], hi=1 << 30, note=_NOTE),
           "rope_theta": 10000.0, "qk_layernorm": False,
           "tie_word_embeddings": f.bool("tie_word_embeddings", False, note=_NOTE)}
    return {**out, **storage_fields(f.cfg)}


def build_phi_msft(f: Fields, model_type: str) -> ModelSpec:
    from . import REGISTRY
    from ..family_defaults import FAMILY_DEFAULTS

    n_local = f.raw("num_local_experts")
    if n_local is not None and f.int("num_local_experts", lo=1) > 1:
        if model_type != "phi-msft":
            raise UnsupportedModelError(
                f"{f.where}: model_type '{model_type}' with num_local_experts {n_local}: Phixtral's routed fc1 / fc2 "
                "experts are read in its phi-msft format (mlabonne/phixtral-*), and no mixformer-sequential "
                "checkpoint with experts was published", _HINT)
        from .s28a_mlx import build_phixtral  # Phixtral: mlx-lm's phixtral.py (analysis/families/s28a_mlx.py)
        return build_phixtral(f, model_type)

    g = Fields(phi_config(f, model_type), f"{f.where} (as transformers' PhiConfig)",
               defaults=FAMILY_DEFAULTS.get("phi"), family="phi")
    spec = REGISTRY["phi"](g, "phi")
    f.records.update(g.records)
    return replace(spec, caveats=spec.caveats + (
        f"model_type {model_type} (Phi's remote-code config) read as transformers' Phi: the same modules under "
        "other names (transformer.embd.wte, mixer.Wqkv / out_proj, lm_head.ln / lm_head.linear; mixformer-sequential: "
        "layers.0 the embedding, layers.1 .. n_layer the blocks, the last the head)",))


# ---- refused by name ----------------------------------------------------------------------------------------------

_DRAFT = ("it is a speculative-decoding draft, not a language model of its own: {how}; its parameters and decode "
          "cost belong to the target model's serving plan, which planner does not model (analyse the target model's "
          "config)")
_EAGLE3 = _DRAFT.format(how="EAGLE-3's single midlayer attends over the concatenation of the token embedding and an "
                            "fc projection of three target layers' hidden states (3 x hidden -> hidden; q/k/v from "
                            "2 x hidden, a hidden_norm beside input_layernorm), and its lm_head predicts "
                            "draft_vocab_size tokens mapped back by the d2t table (LMDeploy's llama_eagle3.py, "
                            "SGLang's llama_eagle3.py); read as a 1-layer Llama it was miscounted")
_EAGLE = _DRAFT.format(how="EAGLE's draft layer (its input_layernorm dropped) reads an fc projection (2 x hidden -> "
                           "hidden) of the token embedding concatenated with the target's last hidden state "
                           "(LMDeploy's llama_eagle.py, MLC's eagle_model.py); read as a 1-layer Llama it was "
                           "miscounted")

#: model_type -> (title, reason)
REFUSED_S28D: dict[str, tuple[str, str]] = {
    "eagle": ("an EAGLE draft model (MLC-LLM's eagle model, vLLM's EAGLEConfig)", _EAGLE),
    "medusa": ("a Medusa draft-head set (MLC-LLM's medusa model, vLLM's MedusaConfig)", _DRAFT.format(
        how="medusa_num_heads (num_heads) heads of medusa_num_layers residual blocks and an lm_head each read the base "
            "model's last hidden state (MLC's medusa_model.py, vLLM's medusa.py); the base model runs the tokens")),
    "interns1_1": (
        "Shanghai AI Lab Intern-S1.1 (InternS1_1_ForConditionalGeneration, remote code)",
        "LMDeploy serves it with Intern-S1-Pro's class (lmdeploy/pytorch/models/interns1_pro.py: a Qwen3-MoE "
        "text_config, the vision tower without DeepStack, and a time-series encoder when the config has a ts_config), "
        "but no config.json or checkpoint index of it was at hand to fix which of those it stores; Intern-S1-Pro "
        "(model_type interns1_pro) is counted"),
}

_REWARD = ("it is a reward model (scores a whole sequence in one forward pass, no token-by-token generation): "
           "{head}, which a {body} reading leaves out, and planner's decode figures describe next-token generation")
_INTERNLM2_RM = _REWARD.format(head="its output is a v_head Linear(hidden, 1), no vocabulary head (LMDeploy's "
                                    "internlm2_reward.py, vLLM's InternLM2ForRewardModel)", body="InternLM2")
_QWEN2_RM = _REWARD.format(head="its output is a score head Linear(hidden, hidden) + ReLU + Linear(hidden, num_labels) "
                                "(vLLM's qwen2_rm.py builds no vocabulary head; LMDeploy's qwen2_reward.py allocates "
                                "one beside it)", body="Qwen2")
_META_MOE = ("LMDeploy builds it (lmdeploy/pytorch/models/meta_moe.py) as Qwen3.5-MoE's hybrid layers whose routed "
             "experts live in num_meta_moe_blocks (4) banks of num_experts experts, layer i using bank i % 4, beside "
             "each layer's own gated shared expert; planner's MoE keeps one routed bank per layer, so the shared banks "
             "would be counted once per layer (Intern-S2-Mobius, model_type interns2_mobius, is refused for the same "
             "layout)")

#: architecture -> (title, reason): refused whatever model_type the config names
REFUSED_ARCHITECTURES_S28D: dict[str, tuple[str, str]] = {
    "InternLM2ForRewardModel": ("InternLM2 reward model (internlm/internlm2-*-reward)", _INTERNLM2_RM),
    "Qwen2ForRewardModel": ("Qwen2 reward model (Qwen/Qwen2.5-Math-RM-72B)", _QWEN2_RM),
    "Qwen2ForProcessRewardModel": ("Qwen2 process reward model (Qwen/Qwen2.5-Math-PRM-*)", _QWEN2_RM),
    "LlamaForCausalLMEagle3": ("an EAGLE-3 draft model", _EAGLE3),
    "Eagle3LlamaForCausalLM": ("an EAGLE-3 draft model (LMDeploy's name)", _EAGLE3),
    "LlamaForCausalLMEagle": ("an EAGLE draft model", _EAGLE),
    "EagleLlamaForCausalLM": ("an EAGLE draft model (LMDeploy's name)", _EAGLE),
    "MetaMoeForConditionalGeneration": ("LMDeploy MetaMoE (a Qwen3.5-MoE checkpoint family)", _META_MOE),
}



__all__ = ["REFUSED_ARCHITECTURES_S28D", "REFUSED_S28D", "build_phi_msft", "phi_config"]
