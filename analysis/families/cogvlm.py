"""THUDM / zai-org CogVLM (``cogvlm``: THUDM/cogvlm-chat-hf, CogVLM-17B) and CogVLM2 (``cogvlm2``:
THUDM/cogvlm2-llama3-chat-19B, cogvlm2-llama3-chinese-chat-19B; cogvlm2-video-llama3-chat reads the same way), remote
code transformers does not ship and vLLM does not serve, counted from the hub's modeling_cogvlm.py and visual.py
(CogVLMForCausalLM; the same modules as lmdeploy's pytorch/models/cogvlm.py). The hub configs are flat (the language
model's fields at the top level beside ``vision_config``) and name no ``model_type``: give the one of the family.

Language model: a Llama decoder (RMSNorms ``input_layernorm`` / ``post_attention_layernorm``, SiLU SwiGLU MLPs of
``intermediate_size``, an untied ``lm_head``, a final ``norm``) whose every layer is a visual expert
(``analysis.mixers.visual_expert``): a language expert (fused bias-free ``language_expert_query_key_value``,
``language_expert_dense``, ``mlp.language_mlp``) that text tokens run and a vision expert of the same shapes
(``vision_expert_query_key_value``, ``vision_expert_dense``, ``mlp.vision_mlp``) that image tokens run; both write one
K/V cache. CogVLM: MHA (head_dim hidden / heads), RoPE base 10000 (hard-coded), the vision qkv bias-free. CogVLM2:
GQA with ``num_multi_query_heads`` K/V heads (CogVLMConfig's default 8 when absent, as in the published config), RoPE
base 500000 (hard-coded), the vision expert's qkv biased.

The image encoder ``model.vision`` (EVA2CLIPModel, the EVA2-CLIP-E tower): a biased Conv2d patch embedding, a
``cls_embedding`` (1, width), a learned ``position_embedding`` of ``num_positions`` rows ((image_size / patch_size)²
+ 1), ``num_hidden_layers`` post-LN blocks (biased fused ``attention.query_key_value`` and ``attention.dense``,
LayerNorms ``input_layernorm`` / ``post_attention_layernorm`` applied to each sub-block's output, a biased GELU
``mlp.fc1`` / ``fc2``), then (CogVLM2 only) a biased 2x2 stride-2 ``conv`` (width -> width), and the GLU adapter
``linear_proj`` (a bias-free ``linear_proj`` width -> hidden, LayerNorm ``norm1``, bias-free ``gate_proj`` /
``dense_h_to_4h`` to the language model's ``intermediate_size`` and ``dense_4h_to_h`` back), and ``boi`` / ``eoi``
(1, 1, hidden).

Matched: cogvlm2-llama3-chat-19B's model.safetensors.index.json total_size 39,006,214,656 bytes = 2 x 19,503,105,280
parameters (bf16) + 4,096 bytes of the 32 layers' persisted ``rotary_emb.inv_freq`` buffers (64 bf16 each: buffers,
not parameters). cogvlm-chat-hf: 17,639,685,376 parameters, the card's "17B: 10 billion vision parameters and 7
billion language parameters" (6,738,415,616 language model; 10,901,269,760 tower, adapter and vision experts).
"""

from __future__ import annotations

from ..errors import ConfigError, UnsupportedModelError
from ..fields import MAX_LAYERS, Fields
from ..mixers.visual_expert import VisualExpertAttention
from ..spec import MLP, CheckpointLayout, Layer, ModelSpec, Norm, NormKind, Tensor
from ..vision import _lin, _ln, vision_config_dict
from .common import pre_norms, read_tie

#: the hub's names -> ours (the language expert is what a text token runs; the vision expert keeps its own names)
LAYOUT = CheckpointLayout(modules=((".self_attn.language_expert_query_key_value.", ".self_attn.qkv_proj."),
                                   (".self_attn.language_expert_dense.", ".self_attn.o_proj."),
                                   (".mlp.language_mlp.", ".mlp.")))

#: CogVLMConfig's defaults: CogVLM (configuration_cogvlm.py of cogvlm-chat-hf) and CogVLM2 (cogvlm2-llama3-chat-19B)
DEFAULTS = {
    "cogvlm": dict(vocab_size=32000, hidden_size=4096, intermediate_size=11008, num_hidden_layers=32,
                   num_attention_heads=32, max_position_embeddings=2048, rms_norm_eps=1e-6),
    "cogvlm2": dict(vocab_size=128256, hidden_size=4096, intermediate_size=14336, num_hidden_layers=32,
                    num_attention_heads=32, max_position_embeddings=8192, rms_norm_eps=1e-5),
}
#: the vision_config CogVLMConfig (CogVLM) sets when the config has none; CogVLM2's class has no default
VISION_DEFAULT = dict(hidden_size=1792, image_size=490, in_channels=3, intermediate_size=15360, num_heads=16,
                      num_hidden_layers=63, num_positions=1226, patch_size=14)
#: the RoPE base each modeling file hard-codes (RotaryEmbedding(head_dim); FastRotaryEmbedding(..., base=500000))
ROPE_THETA = {"cogvlm": 10000.0, "cogvlm2": 500000.0}
#: CogAgent's fields: its cross-attention branch (refused by name: REFUSED["cogagent"])
COGAGENT_KEYS = ("cross_hidden_size", "cross_compute_hidden_size", "cross_image_size")


def _vision_fields(top: dict, where: str, model_type: str) -> Fields:
    vc = vision_config_dict(top.get("vision_config"), where)
    if not vc:
        if model_type == "cogvlm2":
            raise ConfigError(f"{where}: field 'vision_config' is missing: CogVLM2's config class has no default "
                              "vision tower (the published config lists it)")
        vc = dict(VISION_DEFAULT)
    return Fields(vc, f"{where} (vision_config)", nested=True, family=f"{model_type}_vision")


def cogvlm_vision(top: dict, text_hidden: int, text_inter: int, where: str, model_type: str) -> tuple[Tensor, ...]:
    """EVA2CLIPModel (``model.vision``): the tower, CogVLM2's 2x2 conv, the GLU adapter and boi / eoi (module doc)."""
    v = _vision_fields(top, where, model_type)
    w = v.int("hidden_size")
    n = v.int("num_hidden_layers", hi=MAX_LAYERS)
    heads = v.int("num_heads")
    if w % heads:
        raise v.error("num_heads", f"({heads}) must divide the vision hidden_size ({w})")
    inter = v.int("intermediate_size")
    ch = v.int("in_channels", hi=64)
    patch = v.int("patch_size", hi=1 << 16)
    image = v.int("image_size", hi=1 << 16)
    positions = v.int("num_positions", hi=1 << 24)
    grid = image // patch
    if grid * patch != image:
        raise v.error("patch_size", f"({patch}) must divide image_size ({image})")
    if positions != grid * grid + 1:  # PatchEmbedding adds the whole table to cls + patches
        raise v.error("num_positions", f"({positions}) must be (image_size / patch_size)² + 1 = {grid * grid + 1}: the "
                                       "patch embedding adds the whole position table to the class token and patches")
    if model_type == "cogvlm2" and grid % 2:
        raise v.error("image_size", f"gives a {grid}x{grid} patch grid: CogVLM2's 2x2 stride-2 conv needs an even one")
    p = "model.vision"
    out = [Tensor(f"{p}.patch_embedding.proj.weight", (w, ch, patch, patch), "vision"),
           Tensor(f"{p}.patch_embedding.proj.bias", (w,), "vision"),
           Tensor(f"{p}.patch_embedding.cls_embedding", (1, w), "vision"),
           Tensor(f"{p}.patch_embedding.position_embedding.weight", (positions, w), "vision")]
    for i in range(n):
        q = f"{p}.transformer.layers.{i}"
        _ln(out, f"{q}.input_layernorm", w)
        _lin(out, f"{q}.attention.query_key_value", 3 * w, w)
        _lin(out, f"{q}.attention.dense", w, w)
        _lin(out, f"{q}.mlp.fc1", inter, w)
        _lin(out, f"{q}.mlp.fc2", w, inter)
        _ln(out, f"{q}.post_attention_layernorm", w)
    if model_type == "cogvlm2":
        out += [Tensor(f"{p}.conv.weight", (w, w, 2, 2), "vision"), Tensor(f"{p}.conv.bias", (w,), "vision")]
    g = f"{p}.linear_proj"
    out.append(Tensor(f"{g}.linear_proj.weight", (text_hidden, w), "vision"))
    _ln(out, f"{g}.norm1", text_hidden)
    out += [Tensor(f"{g}.dense_h_to_4h.weight", (text_inter, text_hidden), "vision"),
            Tensor(f"{g}.gate_proj.weight", (text_inter, text_hidden), "vision"),
            Tensor(f"{g}.dense_4h_to_h.weight", (text_hidden, text_inter), "vision"),
            Tensor(f"{p}.boi", (1, 1, text_hidden), "vision"), Tensor(f"{p}.eoi", (1, 1, text_hidden), "vision")]
    return tuple(out)


def image_tokens(top: dict, where: str, model_type: str) -> int:
    """Tokens one image puts in the decoder's sequence (and cache): boi, the patches (CogVLM2: after the 2x2 conv), eoi."""
    v = _vision_fields(top, where, model_type)
    grid = v.int("image_size", hi=1 << 16) // v.int("patch_size", hi=1 << 16)
    if model_type == "cogvlm2":
        grid //= 2
    return grid * grid + 2


def build(f: Fields, model_type: str) -> ModelSpec:
    cross = [k for k in COGAGENT_KEYS if k in f.cfg]
    if cross:
        raise UnsupportedModelError(f"{f.where}: {', '.join(cross)} set: this is a CogAgent config (its cross-attention "
                                    "branch over a second, high-resolution tower), not CogVLM's",
                                    "CogAgent is refused by name (model_type cogagent): its cross-attention layers "
                                    "are not modelled")
    d = DEFAULTS[model_type]
    hidden = f.int("hidden_size", d["hidden_size"])
    n_layers = f.int("num_hidden_layers", d["num_hidden_layers"], hi=MAX_LAYERS)
    heads = f.int("num_attention_heads", d["num_attention_heads"])
    if hidden % heads:
        raise f.error("num_attention_heads", f"({heads}) must divide hidden_size ({hidden}): CogVLM's heads are "
                                             "hidden_size / num_attention_heads wide")
    hd = hidden // heads
    for key in ("num_key_value_heads", "head_dim"):
        if key in f.cfg:
            raise f.error(key, "is not a field of CogVLM's config (CogVLMConfig): its heads are hidden_size / "
                               "num_attention_heads wide, CogVLM2's K/V heads num_multi_query_heads")
    if model_type == "cogvlm2":
        kv = f.int("num_multi_query_heads", 8, note="absent: CogVLMConfig's default (CogVLM2)")
        if heads % kv:
            raise f.error("num_multi_query_heads", f"({kv}) must divide num_attention_heads ({heads})")
    else:
        if "num_multi_query_heads" in f.cfg:
            raise f.error("num_multi_query_heads", "is CogVLM2's field (grouped K/V heads): CogVLM's attention is MHA; "
                                                   "give model_type cogvlm2 for a CogVLM2 config")
        kv = heads
    vocab = f.int("vocab_size", d["vocab_size"], hi=1 << 26)
    inter = f.int("intermediate_size", d["intermediate_size"])
    act = f.str("hidden_act", "silu")
    eps = f.float("rms_norm_eps", d["rms_norm_eps"])
    max_pos = f.int("max_position_embeddings", d["max_position_embeddings"], hi=1 << 30)
    theta = f.derived("rope_theta", ROPE_THETA[model_type], "hard-coded in the modeling file's rotary embedding "
                                                            "(the config's RoPE fields are not read)")
    attn = VisualExpertAttention(hidden, heads, kv, hd, hd, fused_qkv=True, rotary_dim=hd, rope_theta=theta,
                                 vision_qkv_bias=model_type == "cogvlm2", vision_intermediate_size=inter)
    norm = lambda: Norm(hidden, NormKind.RMS)  # noqa: E731
    layer = Layer(attn, MLP(hidden, inter, act=act), pre_norms(norm))
    tokens = image_tokens(f.cfg, f.where, model_type)
    return ModelSpec(
        model_type=model_type, hidden_size=hidden, vocab_size=vocab, layers=(layer,) * n_layers,
        tie_word_embeddings=read_tie(f, False), final_norm=norm(), max_position_embeddings=max_pos, hidden_act=act,
        norm_eps=eps, vision=cogvlm_vision(f.cfg, hidden, inter, f.where, model_type), checkpoint=LAYOUT,
        caveats=(f"{'CogVLM2' if model_type == 'cogvlm2' else 'CogVLM'}: every layer's vision expert (its qkv, dense "
                 "and MLP: image tokens only) and the EVA2-CLIP tower with its GLU adapter count in the parameters and "
                 "the weights memory but take no part in the text decode trace (a text token runs the language "
                 "expert; the vision expert's weights are not in the active count, the tower's are, as for every "
                 f"wrapper); one image puts {tokens} tokens (boi, patches, eoi) in the cache, both experts writing "
                 "one K/V set per layer: count them in --context",),
    )
