"""StepFun Step-3.5-Flash (``step3p5``) and the Step-3.7 image-text wrapper (``step3p7``), as transformers 5.24's
models/step3p7 builds them (``Step3p7TextModel`` plus an lm_head; ``Step3p7ForConditionalGeneration``), which read
the hub's own config.json (stepfun-ai/Step-3.5-Flash, ``Step3p5ForCausalLM``, served by vLLM's
vllm/model_executor/models/step3p5.py) through Step3p7TextConfig's legacy keys: ``num_attention_groups`` (KV heads),
``moe_num_experts`` / ``moe_top_k``, ``share_expert_dim``, ``moe_layers_enum``, ``attention_other_setting``, per-layer
``rope_theta`` / ``partial_rotary_factors`` and lists padded with the ``num_nextn_predict_layers`` MTP layers.

Every layer: a zero-centred RMSNorm (``x · (1 + w)``), attention, a residual, a second such norm, the FFN.
Attention per ``layer_types`` (absent: every layer full): ``q_proj`` to ``num_attention_heads`` heads on full layers
and ``num_sliding_attention_heads`` (the legacy ``attention_other_setting.num_attention_heads``) on sliding layers,
``num_key_value_heads`` K/V heads of ``head_dim`` on both, per-head zero-centred q/k RMSNorms, q/k/v/o biased by
``attention_bias``, and a bias-free ``g_proj`` (hidden -> heads) whose sigmoid scales each head's output before
``o_proj``. Sliding layers attend (and cache) ``sliding_window`` keys. RoPE per layer type: theta and
``int(head_dim · partial_rotary_factor)`` rotary channels of the first layer of each type (Step-3.5-Flash: 5e6 on half
of each full layer's head, scaled by ``rope_scaling`` (llama3); 1e4 over the whole sliding head, unscaled).

FFN per ``mlp_layer_types`` (legacy ``moe_layers_enum``; absent: layers 3 .. n-1 sparse): a SwiGLU MLP of
``intermediate_size`` (biased by ``mlp_bias``), or ``n_routed_experts`` experts of ``moe_intermediate_size``
(top ``num_experts_per_tok``) behind a bias-free sigmoid router whose choice adds ``e_score_correction_bias`` (a
buffer in transformers; vLLM's ``router_bias`` and the checkpoint's ``moe.router_bias``, 288 fp32 values a layer, are
not parameters here), the chosen scores renormalised and the routed sum scaled by ``moe_router_scaling_factor``, plus
one always-on shared expert of ``share_expert_dim``. The routed experts' and the shared expert's SwiGLU are clamped
where ``swiglu_limits`` / ``swiglu_limits_shared`` give a bound (``GLU.STEP``: verify refuses it). lm_head tied only
by ``tie_word_embeddings`` (Step-3.5-Flash: untied).

The checkpoint's ``num_nextn_predict_layers`` MTP layers (``model.layers.45..47``: a decoder layer of the padded
``layer_types`` entry with a dense MLP, ``enorm`` / ``hnorm``, ``eh_proj`` 2H -> H, ``shared_head.norm`` and its own
``shared_head.output`` vocab x H) are dropped by transformers on load: reported as MTP, not in the total.

Counts: Step-3.5-Flash (the config.json vendored verbatim in yevvonlim/Megatron-Bridge
tests/unit_tests/models/step3p5/_reference/config.json) is 196,956,118,272 parameters, equal to transformers'
Step3p7TextModel plus lm_head on the meta device (the card: "11B of its 196B parameters"; 11,987,311,872 active);
with the 42 x 288 router biases (12,096) and the three MTP layers (all sliding: 2,428,171,008) its checkpoint holds
199,384,301,376 values, the hub page's "199B" (llmrun.dev: 199.4B). transformers' default Step3p7Config is
197,824,847,872 (vision tower and projector 1,981,014,784).

The wrapper (``Step3p7ForConditionalGeneration``; vLLM's step3p7.py and step_vl.py ``PerceptionEncoder`` build the same
shapes) adds the vision tower: a bias-free Conv2d patch embedding, a learned position table of (image_size /
patch_size)² rows, ``pre_layernorm``, ``num_hidden_layers`` pre-LN blocks (biased q/k/v/out projections, biased fc1 /
fc2 of int(hidden · mlp_ratio), two LayerNorms, two layer-scale vectors ``lambda_1`` / ``lambda_2``), two biased 3x3
stride-2 convolutions (hidden -> 2 hidden -> 4 hidden) and ``multi_modal_projector`` (4 hidden -> text hidden, biased by
``projector_bias``). The hub's perception-encoder switches transformers does not build (``use_cls_token``,
``use_ln_post``, no ``use_abs_posemb`` / ``use_ln_pre`` / ``use_rope2d``, an ``output_dim`` projection, a pooling head,
no layer scales) are refused by name.
"""

from __future__ import annotations

from ..errors import UnsupportedModelError
from ..fields import MAX_LAYERS, Fields, short
from ..mixers import GatedAttention
from ..spec import GLU, MLP, Layer, ModelSpec, MoE, Norm, NormKind, Numerics, RouterKind
from ..tensors import Tensor
from ..vision import vision_config_dict
from .common import pre_norms

FULL, SLIDING = "full_attention", "sliding_attention"
_LAYER_TYPES = (FULL, SLIDING)


def _key(f: Fields, key: str, *legacy: str) -> str:
    """The config's spelling of ``key``: itself, else the first legacy name (Step3p7TextConfig's attribute_map) the
    config has, else ``key`` (so the class default applies)."""
    for k in (key, *legacy):
        if k in f.cfg:
            return k
    return key


def _refuse(f: Fields, key: str, value, why: str) -> UnsupportedModelError:
    return UnsupportedModelError(f"{f.where}: field '{key}' is {short(value)}: {why}",
                                 "transformers' Step3p7 and the hub's Step3p5ForCausalLM would build different models")


def _padded(f: Fields, key: str, n: int, nextn: int) -> list | None:
    """A per-layer list over the n layers, or over n + nextn (the hub's lists pad the MTP layers; transformers cuts
    them off); None when absent."""
    raw = f.raw(key)
    if raw is None:
        return None
    if not isinstance(raw, list) or len(raw) not in (n, n + nextn):
        length = len(raw) if isinstance(raw, list) else short(raw)
        raise f.error(key, f"must be a list of {n} entries (num_hidden_layers) or {n + nextn} (with the "
                           f"num_nextn_predict_layers MTP layers), got {length}")
    return raw


def _types(f: Fields, n: int, nextn: int) -> list[str]:
    raw = _padded(f, "layer_types", n, nextn)
    if raw is None:
        return f.derived("layer_types", [FULL] * (n + nextn), "absent: every layer full attention (Step3p7TextConfig)")
    for i, t in enumerate(raw):
        if t not in _LAYER_TYPES:
            raise f.error("layer_types", f"entry {i} is {short(t)}; expected one of {', '.join(_LAYER_TYPES)}")
    if len(raw) == n:  # no MTP entries: transformers' MTP layers default to full attention
        raw = raw + [FULL] * nextn
    return list(raw)


def _sparse(f: Fields, n: int, nextn: int) -> list[bool]:
    """Per layer (the MTP layers included): a MoE, from mlp_layer_types, else moe_layers_enum, else layers 3 .. n-1."""
    raw = _padded(f, "mlp_layer_types", n, nextn)
    if raw is not None:
        for i, t in enumerate(raw):
            if t not in ("dense", "sparse"):
                raise f.error("mlp_layer_types", f"entry {i} is {short(t)}; expected dense or sparse")
        out = [t == "sparse" for t in raw]
        return out + [False] * (n + nextn - len(out))
    raw = f.raw("moe_layers_enum")
    if raw is None:
        return f.derived("moe_layers_enum", [3 <= i < n for i in range(n + nextn)],
                         "absent: layers 3 .. num_hidden_layers - 1 sparse (Step3p7TextConfig)")
    items = raw.split(",") if isinstance(raw, str) else raw
    if not isinstance(items, list):
        raise f.error("moe_layers_enum", f"must be comma-separated layer indices, got {short(raw)}")
    idx = set()
    for x in items:
        s = str(x).strip()
        if not s:
            continue
        if isinstance(x, bool) or not s.isascii() or not s.isdigit() or int(s) >= n + nextn:
            raise f.error("moe_layers_enum", f"names {short(x)}, not a layer index below {n + nextn} "
                                             "(num_hidden_layers + num_nextn_predict_layers)")
        idx.add(int(s))
    f._record("moe_layers_enum", "read", raw, f"{len(idx)} MoE layers, the rest dense")
    return [i in idx for i in range(n + nextn)]


def _rope(f: Fields, types: list[str], n: int, nextn: int, head_dim: int) -> tuple[dict, tuple]:
    """{layer type: (theta, rotary_dim)} of the main layers, and the full layers' scaling items, as
    Step3p7TextConfig.__post_init__ builds rope_parameters (each type from its first layer)."""
    kinds = sorted(set(types[:n]))
    params = f.raw("rope_parameters")
    out: dict[str, tuple[float, int]] = {}
    scaling: tuple = ()
    if isinstance(params, dict) and all(isinstance(params.get(k), dict) for k in kinds):  # a transformers-saved config
        for k in kinds:
            block = params[k]
            theta, factor = block.get("rope_theta", 10000.0), block.get("partial_rotary_factor", 1.0)
            out[k] = (theta, factor)
        full = params.get(FULL) or {}
        if full.get("rope_type", "default") != "default":
            scaling = tuple(sorted((str(a), b) for a, b in full.items()
                                   if a not in ("rope_theta", "partial_rotary_factor")
                                   and isinstance(b, (int, float, str, bool))))
    else:
        theta = f.raw("rope_theta", 10000.0)
        thetas = _padded(f, "rope_theta", n, nextn) if isinstance(theta, list) else [theta] * n
        factors = _padded(f, "partial_rotary_factors", n, nextn) or [1.0] * n
        for k in kinds:
            i = types.index(k)
            for name, values in (("rope_theta", thetas), ("partial_rotary_factors", factors)):
                other = next((j for j in range(n) if types[j] == k and values[j] != values[i]), None)
                if other is not None:
                    raise _refuse(f, name, values, f"layers {i} and {other} are both {k} but differ ({values[i]} vs "
                                                   f"{values[other]}); transformers keeps one value per layer type")
            out[k] = (thetas[i], factors[i])
        rs = f.raw("rope_scaling")
        if isinstance(rs, dict) and FULL in kinds and rs.get("rope_type", rs.get("type", "default")) != "default":
            scaling = tuple(sorted((str(a), b) for a, b in rs.items() if isinstance(b, (int, float, str, bool))))
    result = {}
    for k, (theta, factor) in out.items():
        for name, v in (("rope_theta", theta), ("partial_rotary_factor", factor)):
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not v > 0:
                raise f.error("rope_theta" if name == "rope_theta" else "partial_rotary_factors",
                              f"gives {k} layers {name} {short(v)}; expected a positive number")
        if factor > 1:
            raise f.error("partial_rotary_factors", f"gives {k} layers {factor}; expected at most 1")
        result[k] = (float(theta), f.derived(f"rotary_dim.{k}", int(head_dim * factor),
                                             f"int(head_dim x partial_rotary_factor {factor})"))
    return result, scaling


def _check_agrees(f: Fields, kv: int, head_dim: int) -> None:
    """Hub fields transformers does not read but vLLM does: they must describe what transformers builds."""
    other = f.raw("attention_other_setting")
    if isinstance(other, dict):
        for key, built in (("num_attention_groups", kv), ("num_key_value_heads", kv), ("head_dim", head_dim),
                           ("attention_type", SLIDING)):
            if key in other and other[key] != built:
                raise _refuse(f, f"attention_other_setting.{key}", other[key],
                              f"transformers' Step3p7 builds {built!r} there (it reads only num_attention_heads)")
    elif other is not None:
        raise f.error("attention_other_setting", f"must be an object, got {short(other)}")
    for key, built in (("use_head_wise_attn_gate", True), ("use_moe_router_bias", True), ("norm_expert_weight", True),
                       ("moe_router_activation", "sigmoid"), ("att_impl_type", "GQA"),
                       ("use_bidirectional_attention", False)):
        if key in f.cfg and f.cfg[key] != built:
            raise _refuse(f, key, f.cfg[key], f"transformers' Step3p7 always builds {built!r} (a per-head sigmoid "
                                              "gate, the router's correction bias, renormalised sigmoid scores, "
                                              "causal GQA)")
    rope_layers = f.raw("use_rope_layers")
    if isinstance(rope_layers, list) and rope_layers and not all(rope_layers):
        raise _refuse(f, "use_rope_layers", rope_layers, "vLLM skips RoPE on those layers, transformers ropes every "
                                                         "layer")


def _limits(f: Fields, key: str, n: int, nextn: int) -> list[float]:
    raw = _padded(f, key, n, nextn)
    if raw is None:
        return [0.0] * n
    for i, v in enumerate(raw):
        if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0):
            raise f.error(key, f"entry {i} is {short(v)}; expected a non-negative bound or 0 / null (no clamp)")
    return [float(v or 0) for v in raw[:n]]


def build(f: Fields, model_type: str) -> ModelSpec:
    hidden = f.int("hidden_size", 4096)
    n = f.int("num_hidden_layers", 45, hi=MAX_LAYERS)
    nextn = f.int(_key(f, "num_nextn_predict_layers", "num_mtp_layers"), 0, lo=0, hi=64)
    heads = f.int("num_attention_heads", 64)
    kv = f.int(_key(f, "num_key_value_heads", "num_attention_groups"), 8)
    head_dim = f.int("head_dim", 128)
    vocab = f.int("vocab_size", 128815, hi=1 << 26)
    inter = f.int("intermediate_size", 11264)
    types = _types(f, n, nextn)
    sparse = _sparse(f, n, nextn)
    other = f.raw("attention_other_setting")
    if f.raw("num_sliding_attention_heads") is not None:
        swa_heads = f.int("num_sliding_attention_heads")
    elif isinstance(other, dict) and "num_attention_heads" in other:
        swa_heads = f.derived("num_sliding_attention_heads", other["num_attention_heads"],
                              "attention_other_setting.num_attention_heads")
        if isinstance(swa_heads, bool) or not isinstance(swa_heads, int) or swa_heads < 1:
            raise f.error("attention_other_setting", f"num_attention_heads is {short(swa_heads)}; expected a "
                                                     "positive integer")
    else:
        swa_heads = heads
    _check_agrees(f, kv, head_dim)
    for h, where in ((heads, "num_attention_heads"), (swa_heads, "num_sliding_attention_heads")):
        if h % kv:
            raise f.error(_key(f, "num_key_value_heads", "num_attention_groups"),
                          f"({kv}) must divide {where} ({h})")
    window = f.int("sliding_window", hi=1 << 30) if SLIDING in types else None
    rope, scaling = _rope(f, types, n, nextn, head_dim)
    gating = f.cfg.get("gating", True)
    per_head = gating is True or gating == "per-head"
    bias = f.bool("attention_bias", False)
    mlp_bias = f.bool("mlp_bias", False)
    if f.cfg.get("hidden_act") not in (None, "silu", "swigluoai"):
        raise _refuse(f, "hidden_act", f.cfg["hidden_act"], "transformers' Step3p7 and vLLM run SiLU (a clamped "
                                                             "SwiGLU) whatever it says")
    f.derived("hidden_act", "silu", "Step3p7TextConfig sets it (the gate's SiLU, clamped by swiglu_limits)")
    eps = f.float("rms_norm_eps", 1e-5)

    n_exp = f.int(_key(f, "n_routed_experts", "moe_num_experts", "num_local_experts"), 288)
    k = f.int(_key(f, "num_experts_per_tok", "moe_top_k"), 8)
    if k > n_exp:
        raise f.error(_key(f, "num_experts_per_tok", "moe_top_k"), f"({k}) exceeds the {n_exp} routed experts")
    moe = MoE(hidden, n_exp, k, f.int("moe_intermediate_size", 1280),
              shared_intermediate_size=f.int(_key(f, "share_expert_dim", "share_expert_dims"), 1280),
              shared_bias=mlp_bias, act="silu")
    mlp = MLP(hidden, inter, bias=mlp_bias, act="silu")
    limits = _limits(f, "swiglu_limits", n, nextn), _limits(f, "swiglu_limits_shared", n, nextn)
    scale = f.float("moe_router_scaling_factor", 1.0)

    norm = lambda: Norm(hidden, NormKind.RMS)  # noqa: E731  (zero-centred: ModelSpec.norm_offset)

    def layer(i: int) -> Layer:
        sliding = types[i] == SLIDING
        theta, rotary_dim = rope[types[i]] if i < n else rope.get(types[i], next(iter(rope.values())))
        h = swa_heads if sliding else heads
        attn = GatedAttention(hidden, h, kv, head_dim, head_dim, q_bias=bias, k_bias=bias, v_bias=bias, o_bias=bias,
                              q_norm_dim=head_dim, k_norm_dim=head_dim, window=window if sliding else None,
                              rotary_dim=rotary_dim, rope_theta=theta, head_gate=True, gate_per_element=not per_head)
        return Layer(attn, moe if sparse[i] else mlp, pre_norms(norm))

    layers = tuple(layer(i) for i in range(n))
    # MTP layers (dropped by transformers): reported apart, with their enorm / hnorm / eh_proj / shared_head
    mtp = tuple(layer(i) for i in range(n, n + nextn))
    mtp_extra = nextn * (3 * hidden + 2 * hidden * hidden + vocab * hidden)
    caveats = []
    if nextn:
        caveats.append(f"the checkpoint's {nextn} MTP layers (model.layers.{n}..{n + nextn - 1}) are dropped by "
                       "transformers on load and reported apart from the total")
    caveats.append("the checkpoint's router biases (moe.router_bias, fp32) are transformers' e_score_correction_bias "
                   "buffer: not counted as parameters")
    clamped = [i for i in range(n) if (limits[0][i] and sparse[i]) or limits[1][i]]
    return ModelSpec(
        model_type=model_type, hidden_size=hidden, vocab_size=vocab, layers=layers,
        tie_word_embeddings=f.bool("tie_word_embeddings", False), final_norm=norm(), hidden_act="silu", norm_eps=eps,
        norm_offset=1.0, max_position_embeddings=f.int("max_position_embeddings", 128000, hi=1 << 40),
        rope_scaling=scaling, query_pre_attn_scalar=f.float("query_pre_attn_scalar", float(head_dim)),
        mtp_layers=mtp, mtp_extra_params=mtp_extra,
        numerics=Numerics(router=RouterKind.SIGMOID, norm_topk_prob=True, routed_scaling_factor=scale,
                          score_correction_bias=True, rope_plain_on_windows=True, glu=GLU.STEP),
        caveats=tuple(caveats) + ((f"SwiGLU clamped on layers {clamped} (swiglu_limits / swiglu_limits_shared)",)
                                  if clamped else ()),
    )


# ---- the Step-3.7 wrapper's vision tower and projector ------------------------------------------------------------


def step3p7_vision(top: dict, text_hidden: int, where: str) -> tuple[Tensor, ...]:
    """Step3p7ForConditionalGeneration's vision_model and multi_modal_projector (module doc)."""
    vc = vision_config_dict(top.get("vision_config"), where)
    v = Fields(vc, f"{where} (vision_config)", nested=True, family="step3p5_vision")
    w = Fields(top, where, family="step3p7")
    h = v.int(_key(v, "hidden_size", "width"), 1536)
    n = v.int(_key(v, "num_hidden_layers", "layers"), 47, hi=MAX_LAYERS)
    heads = v.int(_key(v, "num_attention_heads", "heads"), 16)
    if h % heads:
        raise v.error(_key(v, "num_attention_heads", "heads"), f"({heads}) must divide hidden_size ({h})")
    ratio = v.float("mlp_ratio", 8960 / 1536)
    inter = v.derived("intermediate_size", int(h * ratio), f"int(hidden_size x mlp_ratio {ratio:g})")
    if inter < 1:
        raise v.error("mlp_ratio", f"({ratio}) gives an MLP of {inter} features")
    ch = v.int("num_channels", 3, hi=64)
    image = v.int("image_size", 728, hi=1 << 16)
    patch = v.int("patch_size", 14, hi=1 << 16)
    if patch > image:
        raise v.error("patch_size", f"({patch}) exceeds image_size ({image})")
    for key, built in (("use_cls_token", False), ("use_ln_post", False), ("use_abs_posemb", True),
                       ("use_ln_pre", True), ("use_rope2d", True), ("output_dim", None)):
        if key in vc and vc[key] != built:
            raise _refuse(v, key, vc[key], f"transformers' Step3p7VisionModel builds the tower as {key} = {built!r}")
    if vc.get("pool_type") not in (None, "none"):
        raise _refuse(v, "pool_type", vc["pool_type"], "transformers' Step3p7VisionModel has no pooling head")
    if "ls_init_value" in vc and vc["ls_init_value"] is None:
        raise _refuse(v, "ls_init_value", None, "transformers' Step3p7VisionModel always has its layer scales "
                                                "(lambda_1 / lambda_2)")
    bias = w.bool("projector_bias", False)
    p = "model.vision_model"
    out = [Tensor(f"{p}.embeddings.patch_embedding.weight", (h, ch, patch, patch), "vision"),
           Tensor(f"{p}.embeddings.position_embedding.weight", ((image // patch) ** 2, h), "vision"),
           Tensor(f"{p}.pre_layernorm.weight", (h,), "vision"), Tensor(f"{p}.pre_layernorm.bias", (h,), "vision")]
    for i in range(n):
        q = f"{p}.layers.{i}"
        for name in ("q_proj", "k_proj", "v_proj", "out_proj"):
            out += [Tensor(f"{q}.self_attn.{name}.weight", (h, h), "vision"),
                    Tensor(f"{q}.self_attn.{name}.bias", (h,), "vision")]
        out += [Tensor(f"{q}.mlp.fc1.weight", (inter, h), "vision"), Tensor(f"{q}.mlp.fc1.bias", (inter,), "vision"),
                Tensor(f"{q}.mlp.fc2.weight", (h, inter), "vision"), Tensor(f"{q}.mlp.fc2.bias", (h,), "vision")]
        for name in ("layernorm_before", "layernorm_after"):
            out += [Tensor(f"{q}.{name}.weight", (h,), "vision"), Tensor(f"{q}.{name}.bias", (h,), "vision")]
        out += [Tensor(f"{q}.lambda_1", (h,), "vision"), Tensor(f"{q}.lambda_2", (h,), "vision")]
    out += [Tensor(f"{p}.downsampler1.weight", (2 * h, h, 3, 3), "vision"),
            Tensor(f"{p}.downsampler1.bias", (2 * h,), "vision"),
            Tensor(f"{p}.downsampler2.weight", (4 * h, 2 * h, 3, 3), "vision"),
            Tensor(f"{p}.downsampler2.bias", (4 * h,), "vision"),
            Tensor("model.multi_modal_projector.weight", (text_hidden, 4 * h), "vision")]
    if bias:
        out.append(Tensor("model.multi_modal_projector.bias", (text_hidden,), "vision"))
    return tuple(out)
