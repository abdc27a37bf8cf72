"""Thinking Machines' Inkling (``inkling_text``) and Inkling-2 (``inkling2_text``), as transformers 5.24's
modeling_inkling.py / modeling_inkling2.py build them (``InklingForCausalLM`` / ``Inkling2ForCausalLM``).

Every layer is ``analysis.mixers.inkling.InklingAttention`` (relative-bias attention without RoPE, short
convs on K and V and on the attention and FFN outputs) then an FFN; ``layer_types`` "hybrid_sliding"
(window ``sliding_window_size``, with the ``swa_*`` head counts and head_dim) or "hybrid" (full, with
``num_attention_heads`` / ``num_key_value_heads`` / ``head_dim``). The token embedding is RMS-normed
(``embed_tokens.embed_norm``); lm_head is never tied (``_tied_weights_keys = {}``).

- Inkling: default layer_types from ``local_layer_ids``, else sliding except every 6th layer;
  ``mlp_layer_types`` (else the first ``dense_mlp_idx`` layers dense): dense layers a SwiGLU MLP of
  ``intermediate_size`` (times a learned ``global_scale``), sparse ones ``n_routed_experts`` experts of
  ``moe_intermediate_size`` (top ``num_experts_per_tok``) plus ``n_shared_experts`` shared experts of that
  width, which the router scores too (its weight has ``n_routed + n_shared`` rows). A checkpoint's
  ``dense_intermediate_size`` is the dense width and its ``intermediate_size`` the experts' (as
  InklingTextConfig.__post_init__). lm_head has ``vocab_size`` rows. MTP layers (``num_mtp_layers``) are
  not built by transformers (their weights are dropped on load): not counted.
- Inkling-2: default layer_types sliding except every 6th layer; every layer a MoE of ``n_routed_experts``
  experts (``intermediate_size`` is ``moe_intermediate_size``) without shared experts, with softcapped
  SwiGLU; block attention residuals (learned queries over the sums of ``n_layers_per_attn_res_block``
  layers: ``attention_input`` on every layer but the first, three queries on full layers, which also norm
  the K and V inputs apart; ``mlp_input`` on every layer; ``final_input`` before the final norm). lm_head
  has ``unpadded_vocab_size`` rows; logits soft-capped (``final_logit_softcapping``).

The wrappers (``inkling_mm_model``: InklingForConditionalGeneration, ``inkling2``) count their towers too
(``VISION_COUNTED``: ``inkling_towers``, ``inkling2_vision`` below). The torch decoder does not run these layers:
``verify`` refuses them (``RuntimeUnavailableError``).
"""

from __future__ import annotations

from dataclasses import replace

from ..fields import MAX_DIM, MAX_LAYERS, Fields
from ..mixers.inkling import InklingAttention
from ..spec import MLP, Layer, ModelSpec, MoE, Norm, Numerics, PlacedNorm, RouterKind, Tensor
from .common import Traits, per_layer_types, read_act, read_eps, sparse_layers

_TRAITS = Traits()
_TYPES = ("hybrid", "hybrid_sliding")


def _layer_types(f: Fields, n_layers: int, version: int) -> list[bool]:
    """Whether each layer is sliding."""
    if f.raw("layer_types") is not None:
        return [t == "hybrid_sliding" for t in per_layer_types(f, "layer_types", n_layers, _TYPES)]
    if version == 1 and f.raw("local_layer_ids") is not None:
        local = set(f.int_list("local_layer_ids", lo=0, hi=MAX_LAYERS) or ())
        return [i in local for i in range(n_layers)]
    return f.derived("layer_types", [(i + 1) % 6 != 0 for i in range(n_layers)],
                     "sliding except every 6th layer (the config class's default)")


def _attention(f: Fields, hidden: int, sliding: bool, **kw) -> InklingAttention:
    pre = "swa_" if sliding else ""
    heads = f.int(f"{pre}num_attention_heads")
    kv = f.int(f"{pre}num_key_value_heads")
    if kv > heads or heads % kv:
        raise f.error(f"{pre}num_key_value_heads", f"({kv}) must divide {pre}num_attention_heads ({heads})")
    hd = f.int(f"{pre}head_dim")
    # the config classes' attribute_map: sliding_window is sliding_window_size, sconv_kernel_size conv_kernel_size
    alias = f.raw("sliding_window") is not None and "sliding_window_size" not in f.cfg
    window = f.int("sliding_window") if alias else f.int("sliding_window_size")
    conv = f.int("conv_kernel_size") if f.raw("sconv_kernel_size") is None else f.int("sconv_kernel_size")
    return InklingAttention(hidden, heads, kv, hd, hd, window=window if sliding else None, d_rel=f.int("d_rel"),
                            rel_extent=window if sliding else f.int("rel_extent"), conv_kernel=conv, **kw)


def _experts(f: Fields) -> int:
    return f.int("n_routed_experts") if f.raw("num_local_experts") is None else f.int("num_local_experts")


def build_v1(f: Fields, model_type: str) -> ModelSpec:
    hidden = f.int("hidden_size")
    n_layers = f.int("num_hidden_layers", hi=MAX_LAYERS)
    vocab = f.int("vocab_size", hi=1 << 26)
    sliding = _layer_types(f, n_layers, 1)
    if f.raw("mlp_layer_types") is not None:
        sparse = sparse_layers(f, n_layers)
    else:
        dense_idx = f.int("dense_mlp_idx", 0, lo=0, hi=MAX_LAYERS)
        sparse = {i for i in range(n_layers) if i >= dense_idx}
    inter, moe_inter = f.int("intermediate_size"), f.int("moe_intermediate_size")
    if f.raw("dense_intermediate_size") is not None:  # then intermediate_size is the experts' width
        inter, moe_inter = f.int("dense_intermediate_size"), f.int("intermediate_size")
    act = read_act(f, _TRAITS)
    shared = f.int("n_shared_experts", lo=0)
    eps = read_eps(f)
    norms = (PlacedNorm("input_layernorm", "pre_mixer", Norm(hidden)),
             PlacedNorm("post_attention_layernorm", "pre_ffn", Norm(hidden)))
    layers = []
    for i in range(n_layers):
        if i in sparse:
            ffn = MoE(hidden, _experts(f), f.int("num_experts_per_tok"), moe_inter,
                      shared_intermediate_size=shared * moe_inter, act=act)
            mixer = _attention(f, hidden, sliding[i], router_shared_rows=shared)
        else:
            ffn = MLP(hidden, inter, act=act)
            mixer = _attention(f, hidden, sliding[i], mlp_scale=True)
        layers.append(Layer(mixer, ffn, norms))
    return ModelSpec(
        model_type=model_type, hidden_size=hidden, vocab_size=vocab, layers=tuple(layers), tie_word_embeddings=False,
        final_norm=Norm(hidden), embedding_norm=Norm(hidden), hidden_act=act, norm_eps=eps,
        max_position_embeddings=f.int("max_position_embeddings", hi=1 << 40),
        numerics=Numerics(router=RouterKind.SIGMOID, score_correction_bias=True,
                          routed_scaling_factor=f.float("route_scale")),
        caveats=("Inkling's router weighs the top-k routed and the shared experts by one softmax over their "
                 "log-sigmoid scores (modelled as sigmoid routing for the numerics; counts, cache and FLOPs are "
                 "exact); its MTP layers are not built by transformers and not counted",),
    )


def build_v2(f: Fields, model_type: str) -> ModelSpec:
    hidden = f.int("hidden_size")
    n_layers = f.int("num_hidden_layers", hi=MAX_LAYERS)
    vocab = f.int("vocab_size", hi=1 << 26)
    out_vocab = f.int("unpadded_vocab_size", hi=1 << 26)
    sliding = _layer_types(f, n_layers, 2)
    # Inkling2TextConfig.attribute_map: an intermediate_size in the config is its moe_intermediate_size
    inter = f.int("intermediate_size") if f.raw("intermediate_size") is not None else f.int("moe_intermediate_size")
    act = read_act(f, _TRAITS)
    moe = MoE(hidden, _experts(f), f.int("num_experts_per_tok"), inter, act=act)
    per = f.int("n_layers_per_attn_res_block", hi=MAX_LAYERS)
    layers = []
    for i in range(n_layers):
        full = not sliding[i]
        mixer = _attention(f, hidden, sliding[i], version=2, dynamic_conv=full, kv_input_norms=full,
                           residual_queries=0 if i == 0 else 3 if full else 1, block_states=-(-i // per),
                           block_boundary=i % per == 0)
        first = "q_input_layernorm" if full else "input_layernorm"
        norms = (PlacedNorm(first, "pre_mixer", Norm(hidden)),
                 PlacedNorm("post_attention_layernorm", "pre_ffn", Norm(hidden)))
        layers.append(Layer(mixer, moe, norms))
    routed_scale = f.float("route_scale") if f.raw("routed_scaling_factor") is None \
        else f.float("routed_scaling_factor")
    return ModelSpec(
        model_type=model_type, hidden_size=hidden, vocab_size=out_vocab, embedding_rows=vocab, layers=tuple(layers),
        tie_word_embeddings=False, final_norm=Norm(hidden), embedding_norm=Norm(hidden), hidden_act=act,
        norm_eps=read_eps(f), max_position_embeddings=f.int("max_position_embeddings", hi=1 << 40),
        head_hc=(Tensor("model.final_input.query", (hidden,), "other"),), final_input_states=-(-n_layers // per) + 1,
        final_logit_softcapping=f.float("final_logit_softcapping", positive=False) or None,
        numerics=Numerics(router=RouterKind.SIGMOID, score_correction_bias=True, routed_scaling_factor=routed_scale),
        caveats=("Inkling-2's experts use a soft-capped SwiGLU and its block attention residuals mix the "
                 "outputs of earlier blocks (learned queries attending over the block states)",),
    )


def build_v2_loop(f: Fields, model_type: str) -> ModelSpec:
    """Inkling-2 Loop (``inkling2_loop_text``, transformers' Inkling2LoopTextModel): Inkling-2's layers, of which
    ``loop_layer_index_start`` .. ``loop_layer_index_end - 1`` (the core) run ``loop_num_passes`` times on their
    weights. The core's layers hold four message gates each (``loop_gate_rank``) and the model a
    ``message_input`` of (core layers, 4, hidden) learned queries; passes after the first restart from the
    pre-core state and gate in messages from the previous pass. ``layers`` lists the layers as they run (pre-core,
    the core ``loop_num_passes`` times, post-core: transformers' ``total_num_hidden_layers``), the later passes
    not ``stored``: each pass has its own cache layers (transformers appends a copy of the core's cache layers per
    extra pass), FLOPs and weight reads; parameters and weight memory count the core once."""
    spec = build_v2(f, model_type)
    n_layers, per = spec.num_layers, f.int("n_layers_per_attn_res_block", hi=MAX_LAYERS)
    loop = f.raw("loop_config")
    if loop is not None and not isinstance(loop, dict):
        raise f.error("loop_config", f"must be an object (core_start, core_end, num_passes, gate_rank), got {loop!r}")
    lf = Fields(loop or {}, f"{f.where}.loop_config")
    start = lf.int("core_start", lo=0, hi=MAX_LAYERS) if lf.has("core_start") \
        else f.int("loop_layer_index_start", lo=0, hi=MAX_LAYERS)
    end = lf.int("core_end", lo=0, hi=MAX_LAYERS) if lf.has("core_end") \
        else f.int("loop_layer_index_end", lo=0, hi=MAX_LAYERS)
    passes = lf.int("num_passes", hi=1024) if lf.has("num_passes") else f.int("loop_num_passes", hi=1024)
    rank = lf.int("gate_rank") if lf.has("gate_rank") else f.int("loop_gate_rank")
    if not 0 < start < end <= n_layers:
        raise f.error("loop_layer_index_end", f"({end}): the looped core (layers {start} to {end - 1}) must lie "
                      f"after layer 0 within the {n_layers} layers")
    if start % per or end % per:
        raise f.error("loop_layer_index_start", f"({start}) and loop_layer_index_end ({end}) must be multiples of "
                      f"n_layers_per_attn_res_block ({per})")
    if (n_layers + (passes - 1) * (end - start)) > MAX_LAYERS:
        raise f.error("loop_num_passes", f"({passes}) runs more than {MAX_LAYERS} layers")
    core = [replace(layer, mixer=replace(layer.mixer, loop_gate_rank=rank)) for layer in spec.layers[start:end]]
    # the later passes: message_input's queries over the previous pass's core blocks; the block states of each
    # layer as on the first pass (each pass restarts from the pre-core ones), final_input's too
    again = [replace(layer, stored=False, mixer=replace(layer.mixer, messages=(end - start) // per))
             for layer in core]
    layers = (*spec.layers[:start], *core, *again * (passes - 1), *spec.layers[end:])
    hidden = spec.hidden_size
    return replace(
        spec, layers=layers,
        head_hc=(*spec.head_hc, Tensor("model.message_input.query", (end - start, 4, hidden), "other")),
        caveats=(*spec.caveats, f"Inkling-2 Loop: layers {start}..{end - 1} run {passes} times on shared weights "
                 f"({len(layers)} layers run per token, as listed; parameters and weight memory count them once, "
                 "FLOPs, weight reads and the cache once per pass); message_input's queries are read with the "
                 "final input's; the post-core layers' tensors are named by the run (model.layers.N), not the "
                 "checkpoint"),
    )


# ---- the wrappers' towers (VISION_COUNTED) ---------------------------------------------------------


def _prime_factors(n: int) -> list[int]:
    out, p = [], 2
    while n % 2 == 0:
        out.append(2)
        n //= 2
    p = 3
    while p * p <= n:
        while n % p == 0:
            out.append(p)
            n //= p
        p += 2
    return out + ([n] if n > 1 else [])


def _cumprod(xs: list[int]) -> list[int]:
    out, acc = [], 1
    for x in xs:
        acc *= x
        out.append(acc)
    return out


def _hmlp_scales(f: Fields, tps: int, patch: int, n_layers: int, channels: int) -> list[tuple[int, int, int, int]]:
    """transformers' ``plan_out_scales``: the (t, h, w, channels) grid after each HMLP layer (n_layers + 1 rows)."""
    import math

    h = _cumprod(_prime_factors(patch)[::-1])
    t = _cumprod(_prime_factors(tps)[::-1])
    if not h:
        raise f.error("patch_size", f"({patch}) must be at least 2: the HMLP folds patches by its prime factors")
    scales = [(1, 1, 1, channels)] + [(1, s, s, math.ceil(s * s * channels / 64) * 64) for s in h]
    scales += [(s, h[-1], h[-1], h[-1] ** 2 * channels * s * 64) for s in t]  # (as transformers: no / 64 here)
    if n_layers < len(scales):  # transformers' optimal assignment (scipy's linear_sum_assignment)
        raise f.error("num_hidden_layers", f"({n_layers}) is under the {len(scales)} scales of its patch plan: "
                      "that layer plan (an optimal assignment) is not modelled")
    # float32, as transformers' torch.linspace / log
    import struct

    def f32(x: float) -> float:
        return struct.unpack("f", struct.pack("f", x))[0]

    total = f32(math.log(f32(patch * patch * tps * channels)))
    logs = [f32(math.log(f32(s[0] * s[1] * s[2]))) for s in scales]
    rows = []
    for i in range(n_layers + 1):
        ideal = f32(total * i / n_layers)
        costs = [abs(f32(ideal - x)) for x in logs]
        rows.append(costs.index(min(costs)))
    rows[0], rows[-1] = 0, len(scales) - 1
    return [scales[j] for j in rows]


def inkling_towers(top: dict, text_hidden: int, where: str) -> tuple[Tensor, ...]:
    """InklingForConditionalGeneration's vision tower (kind ``vision``): an HMLP of ``num_hidden_layers`` bias-free
    projections that fold the patch's (t, h, w) grid into channels by its prime factors (transformers'
    ``plan_out_scales``), each but the last RMS-normed, the last to the text hidden size, then ``final_norm``; and
    its audio tower (kind ``audio``): one table of ``n_mel_bins × mel_vocab_size`` dMel-bin embeddings (summed
    per frame) and an RMSNorm. Both are built whatever the config gives (class defaults)."""
    from ..vision import _mm_fields

    out: list[Tensor] = []
    vf = _mm_fields(top.get("vision_config") or {}, where, "vision_config", "inkling_vision")
    layers = vf.int("num_hidden_layers", hi=MAX_LAYERS) if vf.raw("n_layers") is None else vf.int("n_layers")
    scales = _hmlp_scales(vf, vf.int("temporal_patch_size", hi=64), vf.int("patch_size", hi=4096), layers,
                          vf.int("num_channels", hi=64))
    p = "model.vision_tower"
    for i, (s, e) in enumerate(zip(scales[:-1], scales[1:])):
        fold = (e[0] // s[0]) * (e[1] // s[1]) * (e[2] // s[2])
        last = i == layers - 1
        width = text_hidden if last else e[3]
        out.append(Tensor(f"{p}.encoder_layers.{i}.projection.weight", (width, s[3] * fold), "vision"))
        if not last:
            out.append(Tensor(f"{p}.encoder_layers.{i}.layer_norm.weight", (width,), "vision"))
    out.append(Tensor(f"{p}.final_norm.weight", (text_hidden,), "vision"))
    af = _mm_fields(top.get("audio_config") or {}, where, "audio_config", "inkling_audio")
    rows = af.int("n_mel_bins") * af.int("mel_vocab_size")
    out.append(Tensor("model.audio_tower.embed_audio_tokens.embed_audio_tokens.weight", (rows, text_hidden), "audio"))
    out.append(Tensor("model.audio_tower.norm.weight", (text_hidden,), "audio"))
    return tuple(out)


def inkling2_vision(top: dict, text_hidden: int, where: str) -> tuple[Tensor, ...]:
    """Inkling2ForConditionalGeneration's vision tower: a bias-free patch embedding (channels × patch² ->
    hidden), learned positions on a ``posemb_grid_size``² grid (interpolated), a class token and its position,
    ``pre_layernorm``, ViT blocks (LayerNorms, biased q/k/v/out and fc1/fc2 of ``intermediate_size``, else
    hidden × ``mlp_ratio``; layer scales ``lambda_1`` / ``lambda_2``; axial RoPE, no parameters) and the merger:
    ``linear_1`` (spatial_merge_size² × hidden -> projection_hidden_dim), ``linear_2`` (-> the text hidden size),
    biased when ``projector_bias``."""
    from ..vision import _mm_fields

    f = _mm_fields(top.get("vision_config") or {}, where, "vision_config", "inkling2_vision")
    h = f.int("hidden_size")
    heads = f.int("num_attention_heads")
    if h % heads:
        raise f.error("num_attention_heads", f"({heads}) must divide hidden_size ({h})")
    ratio = f.float("mlp_ratio") if f.raw("intermediate_size") is None else 0.0
    inter = f.int("intermediate_size") if f.raw("intermediate_size") is not None \
        else int(min(h * ratio, MAX_DIM + 1))
    if not 1 <= inter <= MAX_DIM:
        raise f.error("mlp_ratio", f"gives an MLP width of {inter} (hidden_size x mlp_ratio)")
    # Inkling2VisionConfig.attribute_map: native_patch_size and adapter_merge_size are their checkpoints' names
    patch = f.int("patch_size", hi=4096) if f.raw("native_patch_size") is None else f.int("native_patch_size", hi=4096)
    merge = f.int("spatial_merge_size", hi=64) if f.raw("adapter_merge_size") is None \
        else f.int("adapter_merge_size", hi=64)
    grid = f.int("posemb_grid_size")
    proj, bias = f.int("projection_hidden_dim"), f.bool("projector_bias")
    p = "model.vision_tower"
    channels = f.int("num_channels", hi=64)
    out = [Tensor(f"{p}.embeddings.patch_embedding.weight", (h, channels * patch * patch), "vision"),
           Tensor(f"{p}.embeddings.position_embedding.weight", (grid * grid, h), "vision"),
           Tensor(f"{p}.embeddings.class_embedding", (h,), "vision"),
           Tensor(f"{p}.embeddings.cls_position_embedding", (h,), "vision")]

    def lin(name: str, n_out: int, n_in: int, biased: bool = True) -> None:
        out.append(Tensor(f"{name}.weight", (n_out, n_in), "vision"))
        if biased:
            out.append(Tensor(f"{name}.bias", (n_out,), "vision"))

    def ln(name: str) -> None:
        out.extend((Tensor(f"{name}.weight", (h,), "vision"), Tensor(f"{name}.bias", (h,), "vision")))

    ln(f"{p}.pre_layernorm")
    for i in range(f.int("num_hidden_layers", hi=MAX_LAYERS)):
        b = f"{p}.layers.{i}"
        for name in ("q_proj", "k_proj", "v_proj", "out_proj"):
            lin(f"{b}.self_attn.{name}", h, h)
        lin(f"{b}.mlp.fc1", inter, h)
        lin(f"{b}.mlp.fc2", h, inter)
        ln(f"{b}.layernorm_before")
        ln(f"{b}.layernorm_after")
        out.extend((Tensor(f"{b}.lambda_1", (h,), "vision"), Tensor(f"{b}.lambda_2", (h,), "vision")))
    lin(f"{p}.merger.linear_1", proj, merge * merge * h, bias)
    lin(f"{p}.merger.linear_2", text_hidden, proj, bias)
    return tuple(out)
