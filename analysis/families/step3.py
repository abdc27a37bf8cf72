"""StepFun Step-3 (``step3_text``, and its VLM wrapper ``step3_vl``; stepfun-ai/step3), a remote-code family
transformers does not ship, read as vLLM builds it: vllm/model_executor/models/step3_text.py (the language model)
and step3_vl.py (the wrapper), the fields and defaults of vLLM's ``Step3TextConfig`` / ``Step3VisionEncoderConfig``
/ ``Step3VLConfig`` (vllm/transformers_utils/configs/step3_vl.py).

Every layer: ``input_layernorm`` -> multi-matrix factorization attention (``analysis.mixers.mfa``: a
``share_q_dim`` low-rank query, ``inter_norm``, ``wq`` to ``num_attention_heads`` heads of ``head_dim``, one
shared K/V head, RoPE over the head) -> residual, ``post_attention_layernorm`` -> a dense SwiGLU MLP of
``intermediate_size`` or, on the layers ``moe_layers_enum`` lists (a comma-separated string; when null vLLM
makes every layer but the first sparse), a MoE: ``moe_num_experts`` experts of ``moe_intermediate_size``, a
bias-free softmax router (``moe.gate``), ``moe_top_k`` chosen (renormalised when ``norm_expert_weight``), plus one
always-on shared expert of ``share_expert_dim`` (``share_expert``). RMSNorms, a final ``norm``, and an lm_head
of its own (vLLM's ``Step3TextForCausalLM`` never ties it). Step-3's published checkpoint: 61 layers, 5 dense.

The wrapper (``Step3VLForConditionalGeneration``) adds a CLIP-like vision tower (``vision_model``: a biased
Conv2d patch embedding, a class embedding, learned positions for (image_size / patch_size)² + 1 tokens,
``num_hidden_layers`` post-LN blocks of a biased fused qkv_proj, out_proj, LayerNorms and a biased fc1 / fc2 MLP)
and its projector: ``vit_downsampler`` (Conv2d hidden -> output_hidden_size, kernel 2), ``vit_downsampler2``
(Conv2d output_hidden_size -> 2 · output_hidden_size, kernel 3) and ``vit_large_projector`` (Linear
2 · output_hidden_size -> text hidden, biased by ``projector_bias``).
"""

from __future__ import annotations

from ..fields import MAX_LAYERS, Fields
from ..mixers.mfa import MFAttention
from ..spec import MLP, CheckpointLayout, Layer, ModelSpec, MoE, Norm, NormKind, Numerics, RouterKind
from ..tensors import Tensor
from ..vision import vision_config_dict
from .common import pre_norms, read_rope

#: vLLM's Step3TextConfig: the layers moe_layers_enum lists by default (4 .. 59: Step-3's 61 layers, 5 dense)
DEFAULT_MOE_LAYERS = tuple(range(4, 60))

#: the checkpoint's module names -> ours (vLLM's load_weights: q_proj / k_proj / v_proj / inter_norm / wq); its
#: experts, stacked (experts, out, in) as moe.gate_proj / up_proj / down_proj, are not mapped: verify refuses MFA
_MODULES = ((".self_attn.q_proj.", ".self_attn.q_a_proj."), (".self_attn.wq.", ".self_attn.q_b_proj."),
            (".moe.gate.", ".mlp.router."), (".share_expert.", ".mlp.shared_expert."))


def _moe_layers(f: Fields, n_layers: int) -> set[int]:
    raw = f.raw("moe_layers_enum")
    if "moe_layers_enum" not in f.cfg:
        f.defaulted("moe_layers_enum", ",".join(map(str, DEFAULT_MOE_LAYERS)),
                    "absent: Step3TextConfig's default, layers 4 .. 59")
        idx = list(DEFAULT_MOE_LAYERS)
    elif raw is None:
        idx = f.derived("moe_layers_enum", list(range(1, n_layers)),
                        "null: vLLM makes every layer but the first a MoE")
    else:
        if isinstance(raw, str):
            parts = [p.strip() for p in raw.strip().split(",") if p.strip()]
            if not all(p.isascii() and p.isdigit() for p in parts):
                raise f.error("moe_layers_enum", f"must be comma-separated layer indices, got {raw!r}")
            idx = [int(p) for p in parts]
        elif isinstance(raw, (list, tuple)) and all(isinstance(x, int) and not isinstance(x, bool) for x in raw):
            idx = list(raw)
        else:
            raise f.error("moe_layers_enum", f"must be a string of comma-separated layer indices, got {raw!r}")
        f._record("moe_layers_enum", "read", raw, f"{len(idx)} MoE layers, the rest dense")
    bad = [i for i in idx if not 0 <= i < n_layers]
    if bad:
        shown = ", ".join(map(str, bad[:5])) + (f" ... ({len(bad)} in all)" if len(bad) > 5 else "")
        raise f.error("moe_layers_enum", f"names layer(s) {shown} outside the {n_layers} layers (num_hidden_layers)")
    return set(idx)


def build(f: Fields, model_type: str) -> ModelSpec:
    hidden = f.int("hidden_size", 7168)
    n_layers = f.int("num_hidden_layers", 61, hi=MAX_LAYERS)
    heads = f.int("num_attention_heads", 64)
    groups = f.int("num_attention_groups", 1)
    if groups != 1:
        raise f.error("num_attention_groups", f"is {groups}: Step-3's MFA has one shared K/V head (vLLM's "
                                              "Step3TextAttention builds exactly one and refuses any other count)")
    hd = f.int("head_dim", 256)
    q_rank = f.int("share_q_dim", 2048)
    vocab = f.int("vocab_size", 128815, hi=1 << 26)
    inter = f.int("intermediate_size", 18432)
    act = f.str("hidden_act", "silu")
    if act != "silu":
        raise f.error("hidden_act", f"is {act!r}: vLLM's Step3TextMLP runs SiLU only")
    eps = f.float("rms_norm_eps", 1e-5)
    given = f.cfg.get("rope_theta") is not None or any(
        isinstance(f.raw(k), dict) and f.raw(k).get("rope_theta") is not None for k in ("rope_parameters", "rope_scaling"))
    if not given:  # recorded first, so read_rope's own fallback (10000) is not what provenance shows
        f.defaulted("rope_theta", 500000.0, "absent: Step3TextConfig's default")
    theta, rotary_dim, scaling = read_rope(f, hd)
    if not given:
        theta = 500000.0
    if rotary_dim != hd:
        raise f.error("partial_rotary_factor", f"gives {rotary_dim} rotary dimensions: vLLM's Step-3 ropes the "
                                               f"whole head ({hd})")
    moe_at = _moe_layers(f, n_layers)
    moe = None
    if moe_at:
        n_exp = f.int("moe_num_experts", 48)
        k = f.int("moe_top_k", 3)
        if k > n_exp:
            raise f.error("moe_top_k", f"({k}) exceeds moe_num_experts ({n_exp})")
        moe = MoE(hidden, n_exp, k, f.int("moe_intermediate_size", 5120),
                  shared_intermediate_size=f.int("share_expert_dim", 5120), act="silu")
    norm_topk = f.bool("norm_expert_weight", False)
    if f.cfg.get("tie_word_embeddings"):
        f.derived("tie_word_embeddings", False, "ignored: vLLM's Step3TextForCausalLM always loads its own lm_head")
    attn = MFAttention(hidden_size=hidden, num_attention_heads=heads, num_key_value_heads=1, head_dim=hd,
                       v_head_dim=hd, rotary_dim=rotary_dim, rope_theta=theta, q_rank=q_rank)
    dense = MLP(hidden, inter, act="silu")
    norm = lambda: Norm(hidden, NormKind.RMS)  # noqa: E731
    layers = tuple(Layer(attn, moe if i in moe_at else dense, pre_norms(norm)) for i in range(n_layers))
    return ModelSpec(
        model_type=model_type, hidden_size=hidden, vocab_size=vocab, layers=layers, tie_word_embeddings=False,
        final_norm=norm(), hidden_act="silu", norm_eps=eps, rope_scaling=scaling,
        numerics=Numerics(router=RouterKind.SOFTMAX, norm_topk_prob=norm_topk),
        checkpoint=CheckpointLayout(modules=_MODULES),
    )


# ---- the wrapper's vision tower and projector (vLLM's step3_vl.py) ----------------------------------------


def step3_vision(top: dict, text_hidden: int, where: str) -> tuple[Tensor, ...]:
    """Step3VLForConditionalGeneration's vision_model, vit_downsampler(2) and vit_large_projector (module doc)."""
    vc = vision_config_dict(top.get("vision_config"), where)
    v = Fields(vc, f"{where} (vision_config)", nested=True, family="step3_vision_encoder")
    w = Fields(top, where, family="step3_vl")
    h = v.int("hidden_size", 1792)
    inter = v.int("intermediate_size", 3072)
    out_h = v.int("output_hidden_size", 4096)
    n = v.int("num_hidden_layers", 63, hi=MAX_LAYERS)
    heads = v.int("num_attention_heads", 16)
    if h % heads:
        raise v.error("num_attention_heads", f"({heads}) must divide hidden_size ({h})")
    ch = v.int("num_channels", 3, hi=64)
    image = v.int("image_size", 728, hi=1 << 16)
    patch = v.int("patch_size", 14, hi=1 << 16)
    if patch > image:
        raise v.error("patch_size", f"({patch}) exceeds image_size ({image})")
    bias = w.bool("projector_bias", True)
    p = "vision_model"
    out = [Tensor(f"{p}.embeddings.class_embedding", (h,), "vision"),
           Tensor(f"{p}.embeddings.patch_embedding.weight", (h, ch, patch, patch), "vision"),
           Tensor(f"{p}.embeddings.patch_embedding.bias", (h,), "vision"),
           Tensor(f"{p}.embeddings.position_embedding.weight", ((image // patch) ** 2 + 1, h), "vision")]
    for i in range(n):
        q = f"{p}.transformer.layers.{i}"
        for name, shape in ((f"{q}.self_attn.qkv_proj.weight", (3 * h, h)), (f"{q}.self_attn.qkv_proj.bias", (3 * h,)),
                            (f"{q}.self_attn.out_proj.weight", (h, h)), (f"{q}.self_attn.out_proj.bias", (h,)),
                            (f"{q}.layer_norm1.weight", (h,)), (f"{q}.layer_norm1.bias", (h,)),
                            (f"{q}.mlp.fc1.weight", (inter, h)), (f"{q}.mlp.fc1.bias", (inter,)),
                            (f"{q}.mlp.fc2.weight", (h, inter)), (f"{q}.mlp.fc2.bias", (h,)),
                            (f"{q}.layer_norm2.weight", (h,)), (f"{q}.layer_norm2.bias", (h,))):
            out.append(Tensor(name, shape, "vision"))
    out += [Tensor("vit_downsampler.weight", (out_h, h, 2, 2), "vision"),
            Tensor("vit_downsampler.bias", (out_h,), "vision"),
            Tensor("vit_downsampler2.weight", (2 * out_h, out_h, 3, 3), "vision"),
            Tensor("vit_downsampler2.bias", (2 * out_h,), "vision"),
            Tensor("vit_large_projector.weight", (text_hidden, 2 * out_h), "vision")]
    if bias:
        out.append(Tensor("vit_large_projector.bias", (text_hidden,), "vision"))
    return tuple(out)
