"""Tencent Hunyuan-Large (``hunyuan``: tencent/Tencent-Hunyuan-Large, Hunyuan-A52B; 389B total / 52B active), the
remote-code model_type transformers does not ship (its ``hunyuan_v1_dense`` / ``hunyuan_v1_moe`` are the later
Hunyuan-7B / A13B and are read by their own rows). Counted as vLLM's vllm/model_executor/models/hunyuan_v1.py
builds it (it serves ``HunYuanForCausalLM``), with the hub's HunYuanConfig defaults:

- Llama blocks (``input_layernorm`` / ``post_attention_layernorm`` RMSNorms, rotate-half RoPE with Hunyuan's
  NTK-alpha "dynamic" scaling), GQA of ``num_key_value_heads``; head_dim ``head_dim``, else
  ``attention_head_dim``, else hidden / heads; q/k/v/o biased by ``attention_bias``; with ``use_qk_norm`` (default
  false) per-head RMSNorms ``query_layernorm`` / ``key_layernorm`` on the rotated q and k.
- Cross-layer attention (``use_cla``, default false, with ``cla_share_factor``): layer i with
  ``i % cla_share_factor != 0`` has no k/v projections and no cache; it attends over the previous layer's K/V
  (rotated, un-normed keys), with its own ``q_proj`` (hidden_size x hidden_size in vLLM: heads x head_dim must
  equal hidden_size), ``o_proj`` and, under use_qk_norm, its own query and key norms. vLLM passes K/V on only from
  layers i % factor == 0 to the next layer, so only factor 2 runs (Hunyuan-Large's); others are refused.
- ``num_experts`` > 1: every layer a MoE of ``num_experts`` SwiGLU experts of ``moe_intermediate_size`` (an int or
  one per layer; absent: intermediate_size), top ``moe_topk`` (an int or one per layer) by softmax, renormalised
  only when top-k > 1 (vLLM's ``renormalize=top_k > 1``), a bias-free ``gate.wg``; with ``use_mixed_mlp_moe`` a
  shared SwiGLU ``shared_mlp`` of ``intermediate_size x num_shared_expert`` (an int or one per layer) beside
  them. Otherwise a dense SwiGLU MLP of ``intermediate_size`` (biased by ``mlp_bias``).
- What later HunYuanConfig versions add and vLLM's hunyuan_v1.py does not build is refused: ``use_mla``,
  ``mamba``, ``moe_layer_num_skipped``; so is a per-layer ``num_experts`` list (vLLM builds one expert count).
"""

from __future__ import annotations

from dataclasses import replace

from ..fields import Fields
from ..spec import MoE, ModelSpec, RouterKind
from .common import Traits
from . import decoder

#: the hub's HunYuanConfig defaults beside the core geometry (which every config must give)
_DEFAULTS = dict(num_experts=1, moe_topk=1, num_shared_expert=1, use_mixed_mlp_moe=False, use_qk_norm=False,
                 use_cla=False, cla_share_factor=1, attention_bias=False, mlp_bias=False, tie_word_embeddings=False,
                 rms_norm_eps=1e-5, hidden_act="silu", rope_theta=10000.0, max_position_embeddings=2048)

_HUNYUAN_LARGE = Traits(o_bias="attention_bias", mlp_bias="mlp_bias", windows="none", qk_norm="head",
                        qk_norm_key="use_qk_norm", qk_norm_after_rope=True, rope_ntk_alpha=True,
                        modules=((".self_attn.query_layernorm.", ".self_attn.q_norm."),
                                 (".self_attn.key_layernorm.", ".self_attn.k_norm."),
                                 (".mlp.shared_mlp.", ".mlp.shared_expert."), (".mlp.gate.wg.", ".mlp.gate.")))


def remote_defaults(f: Fields, defaults: dict) -> None:
    """Class defaults of a remote-code config (no transformers class): ``f`` falls back to them like to
    transformers' (``Fields.defaults``); ``relabel_defaults`` then names their source."""
    for key, value in defaults.items():
        f.defaults.setdefault(key, value)


def relabel_defaults(f: Fields, defaults: dict, source: str) -> None:
    for key, p in list(f.records.items()):
        if key in defaults and p.status == "default":
            f.records[key] = replace(p, note=f"absent: {source} default")


def _per_layer(f: Fields, key: str, n_layers: int, default) -> list[int]:
    """An int field or one int per layer (vLLM indexes the list by layer id)."""
    if isinstance(f.raw(key), list):
        return f.int_list(key, n_layers, lo=1)
    return [f.int(key, default)] * n_layers


def build(f: Fields, model_type: str) -> ModelSpec:
    remote_defaults(f, _DEFAULTS)
    f.aliases.setdefault("head_dim", ("attention_head_dim",))  # vLLM: head_dim, else attention_head_dim
    for key, what in (("use_mla", "multi-head latent attention"), ("mamba", "Mamba hybrid layers")):
        if f.bool(key, False):
            raise f.error(key, f"is true: this HunYuanConfig option ({what}) is not built by vLLM's hunyuan_v1.py and "
                               "is not modelled")
    if f.int("moe_layer_num_skipped", 0, lo=0):
        raise f.error("moe_layer_num_skipped", "is not 0: dense layers before the MoE ones are not built by vLLM's "
                                               "hunyuan_v1.py and are not modelled")
    if isinstance(f.raw("num_experts"), list):
        raise f.error("num_experts", "is a list: vLLM's Hunyuan MoE builds one expert count for every layer")
    spec = decoder.build(f, model_type, _HUNYUAN_LARGE)
    hidden, n_layers = spec.hidden_size, spec.num_layers
    attn0 = spec.layers[0].mixer
    heads, hd = attn0.num_attention_heads, attn0.head_dim
    intermediate = f.int("intermediate_size")
    act = spec.hidden_act

    factor = f.int("cla_share_factor") if f.bool("use_cla") else 1
    if factor > 2:
        raise f.error("cla_share_factor", f"({factor}) is over 2: vLLM's HunYuanModel hands a layer's K/V only to the "
                                          "next layer, so a third layer of a group would have none")
    if factor == 2 and heads * hd != hidden:
        raise f.error("num_attention_heads", f"x head_dim ({heads} x {hd}) must equal hidden_size ({hidden}) with "
                                             "cross-layer attention: its layers' q_proj is hidden_size x hidden_size")

    n_exp = f.int("num_experts", lo=1)
    moes: list[MoE | None] = [None] * n_layers
    norm_topk = True
    if n_exp > 1:
        ks = _per_layer(f, "moe_topk", n_layers, 1)
        sizes = _per_layer(f, "moe_intermediate_size", n_layers, intermediate) if f.has("moe_intermediate_size") \
            else [f.derived("moe_intermediate_size", intermediate, "absent: intermediate_size")] * n_layers
        mixed = f.bool("use_mixed_mlp_moe")
        shared = _per_layer(f, "num_shared_expert", n_layers, 1) if mixed else [0] * n_layers
        for i in range(n_layers):
            if ks[i] > n_exp:
                raise f.error("moe_topk", f"({ks[i]}) exceeds num_experts ({n_exp})")
            moes[i] = MoE(hidden, n_exp, ks[i], sizes[i], shared_intermediate_size=intermediate * shared[i], act=act)
        if len({k > 1 for k in ks}) > 1:
            raise f.error("moe_topk", "mixes top-1 layers (weights not renormalised) with top-k > 1 layers "
                                      "(renormalised): one routing rule per model is modelled")
        norm_topk = ks[0] > 1
    layers = []
    for i, layer in enumerate(spec.layers):
        mixer = layer.mixer
        if i % factor:
            mixer = replace(mixer, kv_shared=True, cla=True)
        layers.append(replace(layer, mixer=mixer, ffn=moes[i] if moes[i] is not None else layer.ffn))
    numerics = replace(spec.numerics, router=RouterKind.SOFTMAX, norm_topk_prob=norm_topk)
    relabel_defaults(f, _DEFAULTS, "the hub's HunYuanConfig")
    return replace(spec, layers=tuple(layers), numerics=numerics)
