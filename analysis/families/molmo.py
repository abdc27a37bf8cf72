"""Ai2 Molmo v1 (``molmo``: Molmo-7B-D-0924, Molmo-7B-O-0924, Molmo-72B-0924, MolmoE-1B-0924), hub remote code,
counted from the module shapes of the hub's modeling_molmo.py (Molmo-7B-D / 7B-O / 72B: ``MolmoForCausalLM``
builds a ``FullMolmoConfig`` from the flat ``MolmoConfig``, the vision part hard-coded) and modeling_molmoe.py
(MolmoE-1B: the whole ``FullMolmoConfig`` saved as config.json, the vision part read from it; its OLMoE block is
allenai/molmo's olmo/model.py ``OLMoEBlock`` over megablocks' ``dMoE``), cross-checked with vLLM's
vllm/model_executor/models/molmo.py (dense checkpoints only; it builds the same 23 ViT layers the checkpoints hold).
Molmo-7B-D-0924's published model.safetensors.index.json total_size is 32,084,101,120 bytes of fp32: 8,021,025,280
parameters, this module's count to the parameter. MolmoE-1B comes to 7,221,875,712, 1,584,731,136 active (its card:
7.2B total, 1.5B active); Molmo-7B-O to 7,665,032,192 and Molmo-72B to 73,308,285,952 (their configs rebuilt from
allenai/molmo's training configs OLMO_1024_PREVIEW / QWEN2_72B: no verbatim config or index was at hand).

- Language model: ``model.transformer``: ``wte`` of ``embedding_size`` rows (else vocab_size) plus
  ``new_embedding`` of ``additional_vocab_size`` (the hub's MolmoForCausalLM hard-codes 128) rows; blocks of a
  fused ``att_proj`` (q, k, v; biased by ``qkv_bias``), a bias-free ``attn_out``, RMSNorm ``attn_norm`` / ``ff_norm``
  (before each sublayer, or with ``norm_after`` on its output before the residual add: OLMo 2's post-norm),
  ``q_norm`` (hidden wide) / ``k_norm`` (kv heads x head_dim) where ``attention_layer_norm``; a SwiGLU whose fused
  ``ff_proj`` is ``intermediate_size`` wide, so each half (and ``ff_out``'s input) is intermediate_size / 2 (Molmo's
  config names the fused width: Molmo-7B-D's 37888 is Qwen2-7B's 18944 x 2); ``ln_f``; an untied ``ff_out`` head of
  embedding_size rows (MolmoForCausalLM hard-codes weight_tying false). MolmoE: the same attention (no q/k/v bias)
  and, in place of the MLP, ``ffn``: a bias-free router (experts x d_model) over ``moe_num_experts`` SwiGLU experts
  of (mlp_hidden_size or mlp_ratio x d_model) / 2, top ``moe_top_k``, the top-k softmax weights not renormalised
  (megablocks' default, OLMoE's norm_topk_prob false).
- Vision (``model.vision_backbone``): OpenAI CLIP ViT-L/14-336 as Molmo stores it: ``image_vit`` with a
  ``class_embedding``, 577 ``positional_embedding`` rows, a bias-free Linear ``patch_embedding`` (14 x 14 x 3 ->
  1024), ``pre_ln``, 23 ``resblocks`` (the checkpoints keep 23 of CLIP's 24: "we accidentally set the number of
  layers for OpenAI CLIP ViT to 23", allenai/molmo's convert script) of biased wq / wk / wv / wo, quick-GELU w1 / w2
  of 4096 and two LayerNorms, no post-LayerNorm; ``image_pooling_2d`` (attention-meanq: 2x2 patches attend to their
  mean; wq / wk / wv read the ``vit_layers`` features concatenated, 2 x 1024, wo returns 1024; biased);
  ``image_projector`` a bias-free SwiGLU MLP (w1 / w3: 1024 -> the LM's SwiGLU width, w2 -> hidden);
  ``pad_embed`` (2, 2048) for pad_and_partial_pad.
KV cache and the decode trace are the language model's (every layer full attention, K/V of kv heads x head_dim).
"""

from __future__ import annotations

from ..errors import ConfigError, UnsupportedModelError
from ..fields import MAX_LAYERS, Fields, short
from ..spec import ModelSpec, Tensor
from . import decoder
from .common import Traits

#: additional_vocab_size: MolmoForCausalLM (modeling_molmo.py) hard-codes 128 new embedding rows
ADDITIONAL_VOCAB = 128
#: the vision backbone MolmoForCausalLM hard-codes (modeling_molmo.py; vLLM's molmo.py VisionBackboneConfig)
VISION = dict(image_default_input_size=[336, 336], image_patch_size=14, image_emb_dim=1024, image_num_heads=16,
              image_num_key_value_heads=16, image_num_layers=23, image_head_dim=64, image_mlp_dim=4096,
              image_num_pos=577)
VIT_LAYERS = (-2, -9)

_DENSE = Traits(qkv_bias="attention_bias", o_bias=False, mlp_bias=False, fused_qkv=True, fused_gate_up=True,
                windows="none", clip_qkv=True)
_MOE = Traits(qkv_bias=False, o_bias=False, mlp_bias=False, fused_qkv=True, windows="none", clip_qkv=True,
              moe="mixtral", norm_topk_default=False, norm_topk_fixed=False)


def _full_format(f: Fields) -> bool:
    """MolmoE saves the whole FullMolmoConfig (d_model, n_heads, block_type ...); the dense models a flat
    MolmoConfig (hidden_size, num_attention_heads ...)."""
    return "d_model" in f.cfg or "block_type" in f.cfg


def _refuse(f: Fields, key: str, value, allowed, why: str) -> None:
    if value not in allowed:
        raise UnsupportedModelError(f"{f.where}: Molmo with {key} = {short(value)} is not modelled: {why}",
                                    "the released Molmo checkpoints (7B-D, 7B-O, 72B, MolmoE-1B) are")


def _text_fields(f: Fields) -> dict:
    """The language model's shape in transformers' names, each read through ``f`` (recorded for --fields)."""
    _refuse(f, "layer_norm_type", f.str("layer_norm_type", "rms", note="MolmoConfig's default"), ("rms",),
            "only RMSNorm (vLLM asserts layer_norm_type == 'rms')")
    if f.bool("weight_tying", False):
        raise UnsupportedModelError(f"{f.where}: Molmo with weight_tying = true is not modelled: the hub's "
                                    "MolmoForCausalLM builds an untied ff_out whatever it says, vLLM ties the head",
                                    "the released Molmo checkpoints are untied")
    full = _full_format(f)
    if full:
        hidden = f.int("d_model")
        heads = f.int("n_heads")
        layers = f.int("n_layers", hi=MAX_LAYERS)
        if f.raw("n_kv_heads") is not None:
            kv = f.int("n_kv_heads")
        else:  # FullMolmoConfig.effective_n_kv_heads
            kv = f.derived("n_kv_heads", 1 if f.raw("multi_query_attention") is True else heads,
                           "null: 1 with multi_query_attention, else n_heads")
        block = f.str("block_type", "sequential")
        _refuse(f, "block_type", block, ("sequential", "moe"), "only the sequential and MoE (OLMoE) blocks")
        if f.raw("mlp_hidden_size") is not None:
            fused = f.int("mlp_hidden_size")
        else:
            fused = f.derived("mlp_hidden_size", f.int("mlp_ratio", 4, note="FullMolmoConfig's default") * hidden,
                              "null: mlp_ratio x d_model")
        for key in ("include_bias", "bias_for_layer_norm", "moe_shared_expert", "scale_logits",
                    "normalize_input_embeds", "alibi", "use_cls_feature"):
            if f.raw(key):
                _refuse(f, key, f.raw(key), (False, None), "not a layout the released checkpoints use")
        for key in ("layer_norm_with_affine", "attention_layer_norm_with_affine", "rope"):
            if f.raw(key) is not None:
                _refuse(f, key, f.bool(key), (True,), "not a layout the released checkpoints use")
        if f.raw("head_dim") is not None:
            _refuse(f, "head_dim", f.raw("head_dim"), (None,), "att_proj is sized by d_model / n_heads, attn_out "
                    "by head_dim x n_heads")
        pos = f.raw("max_position_embeddings")
        max_pos = f.int("max_position_embeddings") if pos is not None else f.int("max_sequence_length", 2048)
        extra = f.int("additional_vocab_size", ADDITIONAL_VOCAB, lo=0, hi=1 << 24)
    else:
        hidden = f.int("hidden_size", 4096, note="MolmoConfig's default")
        heads = f.int("num_attention_heads", 32, note="MolmoConfig's default")
        layers = f.int("num_hidden_layers", 32, hi=MAX_LAYERS, note="MolmoConfig's default")
        kv = f.raw("num_key_value_heads")
        kv = f.derived("num_key_value_heads", heads, "null: equal to num_attention_heads") if kv is None \
            else f.int("num_key_value_heads")
        block = "sequential"
        fused = f.int("intermediate_size", 11008, note="MolmoConfig's default")
        max_pos = f.int("max_position_embeddings", 2048, note="MolmoConfig's default")
        extra = f.derived("additional_vocab_size", ADDITIONAL_VOCAB, "MolmoForCausalLM hard-codes 128")
    if hidden % heads:
        raise f.error("hidden_size" if not full else "d_model", f"({hidden}) must be a multiple of the attention heads "
                                                                f"({heads}): Molmo's head_dim is hidden / heads")
    if kv < 1 or heads % kv:
        raise f.error("num_key_value_heads" if not full else "n_kv_heads",
                      f"({kv}) must divide the attention heads ({heads})")
    if fused % 2:
        raise f.error("intermediate_size" if not full else "mlp_hidden_size",
                      f"({fused}) must be even: Molmo's SwiGLU splits ff_proj into two halves")
    vocab = f.int("vocab_size", 50304, hi=1 << 26, note="MolmoConfig's default")
    rows = f.raw("embedding_size")
    rows = vocab if rows is None else f.int("embedding_size", hi=1 << 26)
    if rows < vocab:
        raise f.error("embedding_size", f"({rows}) must be at least vocab_size ({vocab})")
    text = {"hidden_size": hidden, "num_hidden_layers": layers, "num_attention_heads": heads,
            "num_key_value_heads": kv, "head_dim": hidden // heads, "vocab_size": rows,
            "intermediate_size": fused // 2, "max_position_embeddings": max_pos,
            "rms_norm_eps": f.float("layer_norm_eps", 1e-5, note="MolmoConfig's default"),
            "rope_theta": f.float("rope_theta", 10000.0, note="MolmoConfig's default"),
            "attention_bias": f.bool("qkv_bias", False, note="MolmoConfig's default"),
            "hidden_act": "silu", "tie_word_embeddings": False, "clip_qkv": f.raw("clip_qkv")}
    if block == "moe":
        text.update(num_local_experts=f.int("moe_num_experts"), num_experts_per_tok=f.int("moe_top_k"),
                    norm_topk_prob=False)
    f.derived("ff_proj_half", fused // 2, "intermediate_size / 2: each SwiGLU half and ff_out's input")
    return dict(text, _qk_norm=f.bool("attention_layer_norm", False, note="MolmoConfig's default"),
                _norm_after=f.bool("norm_after", False, note="MolmoConfig's default"), _moe=block == "moe",
                _extra=extra)


def build_text(f: Fields, model_type: str) -> ModelSpec:
    """Molmo's language model (the flat wrapper's fields, or MolmoE's FullMolmoConfig fields)."""
    from dataclasses import replace

    text = _text_fields(f)
    t = _MOE if text.pop("_moe") else _DENSE
    t = replace(t, qk_norm="full" if text.pop("_qk_norm") else None, norms="post" if text.pop("_norm_after") else "pre")
    extra = text.pop("_extra")
    g = Fields(text, f.where, nested=True, family=model_type)
    spec = decoder.build(g, model_type, t)
    return replace(spec, embedding_rows=spec.vocab_size + extra if extra else 0)


# ---- the vision backbone -------------------------------------------------------------------------------------------


def _vision_shape(top: dict, where: str) -> tuple[dict, list, str, str, str | None]:
    """The vision backbone's shape: hard-coded for the flat format, read from MolmoE's FullMolmoConfig."""
    if "d_model" not in top and "block_type" not in top:
        return dict(VISION), list(VIT_LAYERS), "attention-meanq", "mlp", "pad_and_partial_pad"
    vb = top.get("vision_backbone")
    if not isinstance(vb, dict):
        raise ConfigError(f"{where}: field 'vision_backbone' must be an object of the ViT's fields, got {short(vb)}")
    shape = {}
    for key, default in VISION.items():
        v = vb.get(key, default)
        if key == "image_default_input_size":
            if not (isinstance(v, list) and len(v) == 2 and all(isinstance(s, int) and not isinstance(s, bool)
                                                                  and s > 0 for s in v)):
                raise ConfigError(f"{where}: field 'vision_backbone.{key}' must be a [height, width] pair of positive "
                                  f"integers, got {short(v)}")
        elif not (isinstance(v, int) and not isinstance(v, bool) and 0 < v <= 1 << 20):
            raise ConfigError(f"{where}: field 'vision_backbone.{key}' must be a positive integer, got {short(v)}")
        shape[key] = v
    for key in ("image_model_type",):
        if vb.get(key, "openai") != "openai":
            raise UnsupportedModelError(f"{where}: Molmo with vision_backbone.{key} = {short(vb[key])} is not "
                                        "modelled: only the OpenAI CLIP ViT (class embedding, pre_ln)",
                                        "the released Molmo checkpoints use it")
    vit_layers = top.get("vit_layers", list(VIT_LAYERS))
    if not (isinstance(vit_layers, list) and vit_layers
            and all(isinstance(i, int) and not isinstance(i, bool) for i in vit_layers)):
        raise ConfigError(f"{where}: field 'vit_layers' must be a non-empty list of ViT layer indices, "
                          f"got {short(vit_layers)}")
    n = shape["image_num_layers"]
    if not all(-n <= i < n for i in vit_layers):
        raise ConfigError(f"{where}: field 'vit_layers' ({vit_layers}) must index the {n} layers of the ViT")
    pooling = top.get("image_pooling_2d", "attention-meanq")
    projector = top.get("image_projector", "mlp")
    pad = top.get("image_padding_embed")
    return shape, vit_layers, pooling, projector, pad


def molmo_vision(top: dict, text_hidden: int, where: str) -> tuple[Tensor, ...]:
    from ..vision import _lin, _ln

    v, vit_layers, pooling, projector, pad = _vision_shape(top, where)
    if pooling not in ("attention-meanq", "attention_meanq"):
        raise UnsupportedModelError(f"{where}: Molmo with image_pooling_2d = {short(pooling)} is not modelled: only "
                                    "attention-meanq (the released checkpoints')", "the released checkpoints use it")
    if projector != "mlp":
        raise UnsupportedModelError(f"{where}: Molmo with image_projector = {short(projector)} is not modelled: only "
                                    "mlp (the released checkpoints')", "the released checkpoints use it")
    if pad not in (None, "pad_embed", "regress", "pad_and_partial_pad"):
        raise ConfigError(f"{where}: field 'image_padding_embed' ({short(pad)}) must be null, pad_embed, regress or "
                          "pad_and_partial_pad")
    if "d_model" in top or "block_type" in top:
        inner = top.get("mlp_hidden_size") or top.get("mlp_ratio", 4) * text_hidden
    else:
        inner = top.get("intermediate_size", 11008)
    if not isinstance(inner, int) or isinstance(inner, bool):
        raise ConfigError(f"{where}: the language model's SwiGLU width must be an integer, got {short(inner)}")
    d, patch, mlp = v["image_emb_dim"], v["image_patch_size"], v["image_mlp_dim"]
    heads, kv, hd = v["image_num_heads"], v["image_num_key_value_heads"], v["image_head_dim"]
    p = "model.vision_backbone"
    vit = f"{p}.image_vit"
    out = [Tensor(f"{vit}.class_embedding", (d,), "vision"),
           Tensor(f"{vit}.positional_embedding", (v["image_num_pos"], d), "vision"),
           Tensor(f"{vit}.patch_embedding.weight", (d, patch * patch * 3), "vision")]  # a bias-free Linear
    _ln(out, f"{vit}.pre_ln", d)
    for i in range(v["image_num_layers"]):
        b = f"{vit}.transformer.resblocks.{i}"
        for name, rows in (("wq", heads * hd), ("wk", kv * hd), ("wv", kv * hd)):
            _lin(out, f"{b}.attention.{name}", rows, d)
        _lin(out, f"{b}.attention.wo", d, heads * hd)
        _lin(out, f"{b}.feed_forward.w1", mlp, d)
        _lin(out, f"{b}.feed_forward.w2", d, mlp)
        _ln(out, f"{b}.attention_norm", d)
        _ln(out, f"{b}.ffn_norm", d)
    # attention-meanq pooling: MultiHeadDotProductAttention(is_vit_layer=False) over len(vit_layers) x d features
    feat = len(vit_layers) * d
    for name, rows in (("wq", heads * hd), ("wk", kv * hd), ("wv", kv * hd)):
        _lin(out, f"{p}.image_pooling_2d.{name}", rows, feat)
    _lin(out, f"{p}.image_pooling_2d.wo", d, heads * hd)
    half = inner // 2
    out += [Tensor(f"{p}.image_projector.w1.weight", (half, d), "vision"),
            Tensor(f"{p}.image_projector.w3.weight", (half, d), "vision"),
            Tensor(f"{p}.image_projector.w2.weight", (text_hidden, half), "vision")]
    if pad == "pad_and_partial_pad":
        out.append(Tensor(f"{p}.pad_embed", (2, feat), "vision"))
    elif pad is not None:
        out.append(Tensor(f"{p}.pad_embed", (feat,), "vision"))
    return tuple(out)
