"""NVIDIA NVLM-D (nvidia/NVLM-D-72B: model_type ``NVLM_D``, architectures ``NVLM_D``; remote code), counted from the
hub's modeling_nvlm_d.py / modeling_intern_vit.py / configuration_nvlm_d.py and vLLM's
vllm/model_executor/models/nvlm_d.py (NVLM_D_Model(InternVLChatModel): InternVL's remote-code layout, see
``analysis.families.internvl``), with two differences from InternVL's ``internvl_chat``:

- InternViT's attention carries 7 dummy heads (the hub's ``InternAttention.num_dummy_heads = 7``, "to make the number
  of heads divisible by 8"; vLLM's ``num_dummy_heads=7``): with head_dim = hidden / num_attention_heads and
  dummy = (num_attention_heads + 7) x head_dim, ``attn.qkv`` is (3 x dummy, hidden), ``q_norm`` / ``k_norm`` are
  over dummy and ``attn.proj`` is (hidden, dummy), biased. The rest of the layer is InternViT-6B's (fc1 / fc2,
  norm1 / norm2, ls1 / ls2).
- ``mlp1`` = LayerNorm(m), Linear(m, llm intermediate_size, no bias), GELU, Linear(llm intermediate_size, llm
  hidden, no bias), m = vision hidden x int(1 / downsample_ratio)^2.

The language model is ``llm_config``, which NVLM_D_Config builds as ``Qwen2Config`` whenever its
``architectures[0]`` is Qwen2ForCausalLM (any other raises), whatever its ``model_type`` says (the published config
says "llama"). NVLM-D-72B: InternViT-6B-448px-V1-5 (45 layers, 3200 wide, 25 heads + 7 dummy) 6,052,672,640, mlp1
620,717,056, Qwen2-72B-Instruct 72,706,203,648: 79,379,593,344 parameters. Matched to the byte against the
published model.safetensors.index.json (total_size 176,901,927,168): the checkpoint keeps the language model's
q/k/v (weights and biases) and the tower's qkv / proj.weight / q_norm / k_norm in fp32, the rest in bf16 (the 46
shard sizes fit that split, headers included).
"""

from __future__ import annotations

from ..errors import ConfigError, UnsupportedModelError
from ..fields import REQUIRED, Fields
from ..spec import Tensor
from .voxtral import required_sub_config
from ..vision import _ln
from .internvl import CHAT_DEFAULTS, intern_vit_tensors

#: InternAttention.num_dummy_heads in the hub's modeling_intern_vit.py (vLLM: num_dummy_heads=7)
DUMMY_HEADS = 7


def text_config(cfg: dict, where: str) -> dict:
    """NVLM_D_Config's language model: ``llm_config`` built as Qwen2Config (its architectures[0] must be
    Qwen2ForCausalLM; the model_type it names is not read), tied as llm_config says (Qwen2Config's default: no)."""
    llm = required_sub_config(cfg, "llm_config", where, "an NVLM_D config names its language model's fields in llm_config")
    arch = llm.get("architectures")
    if not (isinstance(arch, list) and arch and isinstance(arch[0], str)):
        raise ConfigError(f"{where}: field 'llm_config.architectures' must be a non-empty list of class names",
                          "NVLM_D_Config builds llm_config as Qwen2Config when architectures[0] is Qwen2ForCausalLM")
    if arch[0] != "Qwen2ForCausalLM":
        raise UnsupportedModelError(f"{where}: llm_config architecture '{arch[0]}' is not one NVLM_D_Config builds "
                                    "(it raises 'Unsupported architecture')",
                                    "NVLM-D's language model is Qwen2ForCausalLM")
    text = dict(llm, model_type="qwen2")
    text.setdefault("tie_word_embeddings", False)
    return text


def nvlm_d_vision(top: dict, text_hidden: int, where: str) -> tuple[Tensor, ...]:
    """NVLM_D_Model's ``vision_model`` (InternViT with 7 dummy heads) and its bias-free ``mlp1``."""
    for key in ("use_backbone_lora", "use_llm_lora"):
        if top.get(key):  # the published config says 0
            raise UnsupportedModelError(f"{where}: field '{key}' ({top[key]!r}) asks for LoRA adapters; they are not "
                                        "modelled", "the published NVLM-D-72B sets it to 0")
    out, h = intern_vit_tensors(top, where, extra_heads=DUMMY_HEADS)
    top_f = Fields(top, where, family="NVLM_D")
    ratio = top_f.float("downsample_ratio", CHAT_DEFAULTS["downsample_ratio"], note="absent: the class default")
    if not 1 / 64 <= ratio <= 1:
        raise top_f.error("downsample_ratio", f"must be between 1/64 and 1 (the pixel shuffle merges 1/ratio patches "
                                              f"a side), got {ratio}")
    merged = h * int(1 / ratio) ** 2
    llm = Fields(top.get("llm_config") or {}, f"{where} (llm_config)", family="qwen2")
    llm_inter = llm.int("intermediate_size", REQUIRED)
    _ln(out, "mlp1.0", merged)
    out.append(Tensor("mlp1.1.weight", (llm_inter, merged), "vision"))
    out.append(Tensor("mlp1.3.weight", (text_hidden, llm_inter), "vision"))
    return tuple(out)
