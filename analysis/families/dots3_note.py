"""dots3-note (dots-studio/dots3-note-prev; transformers' ``dots3_note_text``, Dots3NoteForCausalLM): DeepSeek-V3.2's
block with three kinds of attention layer (``layer_types``), each an MLA (transformers' DeepseekV3Attention) with a
per-head sigmoid output gate (``g_proj``: hidden -> heads, MLA's ``head_gate``) and an RMSNorm over the shared rope
key (``k_rope_only_layernorm``, MLA's ``k_rope_norm``):

- ``indexed_attention``: DeepSeek sparse attention (``analysis.mixers.dsa``: GLM-5's lightning indexer, which reads
  the layer's own q_lora_rank), every token cached;
- ``sliding_attention``: plain MLA over a window of ``sliding_window`` tokens (else ``sliding_window_size``, 512),
  its own geometry (``per_layer_config``; a legacy config's ``swa_*`` fields: 64 heads, q / kv LoRA 1024, nope
  192, rope head_dim - nope, v 128);
- ``full_attention``: plain MLA, every token cached (a legacy config with ``use_dsa`` false).

Dots3NoteTextConfig.__post_init__, as read here: ``layer_types`` (else full / indexed on layers 0, 1 and where
i % 4 == 1, sliding elsewhere; all full / indexed when ``use_sliding_window`` is false), its ``full_attention`` /
``indexed_attention`` entries swapped by ``use_dsa`` (true unless a ``per_layer_config`` is given); a
``per_layer_config`` (layer index -> overrides) replaces the ``swa_*`` fields; ``mlp_layer_types`` (else sparse
where i >= ``first_k_dense_replace`` (1) and ``moe_layer_freq`` (1) says so); shared experts of
``shared_experts_intermediate_size`` (legacy ``moe_shared_expert_intermediate_size``) x ``n_shared_experts``.
RoPE: interleaved pairs, theta per layer type (``rope_parameters``, else ``rope_theta`` 8e7 and ``swa_rope_theta``
5e4). The MoE is DeepSeek-V3's (sigmoid router with a choice-only correction bias, scaling 1, one group).

The wrapper (``dots3_note``, Dots3NoteForConditionalGeneration; its released configs flat, the text fields at the
top level) is counted whole: its MoE vision tower and audio encoder by ``dots3_towers``.
"""

from __future__ import annotations

from dataclasses import fields

from ..fields import MAX_LAYERS, Fields, as_int, short
from ..mixers import SparseMLA
from ..spec import MLA, MLP, GroupScore, Layer, ModelSpec, MoE, Norm, Numerics, RopeStyle, RouterKind, Tensor
from .common import Traits, mtp_extra, mtp_layers, per_layer_types, pre_norms, read_act, read_eps, read_routing, \
    read_tie, sparse_layers

TRAITS = Traits(moe="deepseek")

#: the attention fields a ``per_layer_config`` entry may set (Dots3NoteTextAttention builds from the layer's view)
_ATTN_KEYS = ("num_attention_heads", "num_key_value_heads", "q_lora_rank", "kv_lora_rank", "head_dim",
              "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim", "attention_bias")
#: a legacy config's sliding-layer geometry (the ``swa_`` fields) and their defaults
_SWA_DEFAULTS = {"num_attention_heads": 64, "num_key_value_heads": 64, "q_lora_rank": 1024, "kv_lora_rank": 1024,
                 "head_dim": 256, "qk_nope_head_dim": 192, "v_head_dim": 128}
_TYPES = ("indexed_attention", "sliding_attention", "full_attention")


def build(f: Fields, model_type: str) -> ModelSpec:
    hidden = f.int("hidden_size")
    n_layers = f.int("num_hidden_layers", hi=MAX_LAYERS)
    vocab = f.int("vocab_size", hi=1 << 26)
    types = _layer_types(f, n_layers)
    overrides = _per_layer(f, n_layers, types)
    # a null sliding_window: the legacy sliding_window_size (Dots3NoteTextConfig)
    window = f.int("sliding_window", lo=1, hi=1 << 30) if f.raw("sliding_window") is not None else \
        f.int("sliding_window_size", 512, lo=1, hi=1 << 30)
    topk, idx_heads, idx_dim = f.int("index_topk"), f.int("index_n_heads"), f.int("index_head_dim")
    thetas = _thetas(f, types)
    glob = {"num_attention_heads": f.int("num_attention_heads"), "q_lora_rank": f.int("q_lora_rank"),
            "kv_lora_rank": f.int("kv_lora_rank"), "head_dim": f.int("head_dim"),
            "qk_nope_head_dim": f.int("qk_nope_head_dim"), "qk_rope_head_dim": f.int("qk_rope_head_dim"),
            "v_head_dim": f.int("v_head_dim"), "attention_bias": f.bool("attention_bias", False)}
    # an explicit null means as many as the attention heads (Dots3NoteTextConfig); absent, the class default
    null_kv = "num_key_value_heads" in f.cfg and f.cfg["num_key_value_heads"] is None
    glob["num_key_value_heads"] = glob["num_attention_heads"] if null_kv else f.int("num_key_value_heads")
    mixers = []
    first: dict[str, tuple[int, dict]] = {}
    for i, t in enumerate(types):
        g = dict(glob, **overrides.get(i, {}))
        where = f"per_layer_config entry {i}" if i in overrides else "the config"
        j, seen = first.setdefault(t, (i, g))
        if seen != g:  # transformers reads one view per layer type (its RoPE, its validation)
            raise f.error("per_layer_config", f"gives layer {i} ({t}) another attention geometry than layer {j}; "
                                              "transformers needs the layers of one type alike")
        if g["num_key_value_heads"] != g["num_attention_heads"]:
            raise f.error("num_key_value_heads" if i not in overrides else "per_layer_config",
                          f"layer {i}: {where} gives {g['num_key_value_heads']} KV heads for "
                          f"{g['num_attention_heads']} attention heads; dots3-note's MLA needs them equal")
        if t == "sliding_attention" and g["head_dim"] != g["qk_nope_head_dim"] + g["qk_rope_head_dim"]:
            raise f.error("per_layer_config" if i in overrides else "head_dim",
                          f"layer {i} (sliding): head_dim ({g['head_dim']}) is not qk_nope_head_dim + "
                          f"qk_rope_head_dim ({g['qk_nope_head_dim']} + {g['qk_rope_head_dim']})")
        if t == "indexed_attention" and g["qk_rope_head_dim"] > idx_dim:
            raise f.error("index_head_dim", f"({idx_dim}) is smaller than layer {i}'s qk_rope_head_dim "
                                            f"({g['qk_rope_head_dim']}), the indexer's roped dims")
        mla = MLA(hidden, g["num_attention_heads"], g["q_lora_rank"], g["kv_lora_rank"], g["qk_nope_head_dim"],
                  g["qk_rope_head_dim"], g["v_head_dim"], bias=bool(g["attention_bias"]), rope_theta=thetas[t],
                  head_gate=True, k_rope_norm=True, window=window if t == "sliding_attention" else None)
        if t == "indexed_attention":
            mla = SparseMLA(**{fl.name: getattr(mla, fl.name) for fl in fields(MLA)}, index_topk=topk,
                            index_n_heads=idx_heads, index_head_dim=idx_dim)
        mixers.append(mla)
    moe_at = _moe_layers(f, n_layers)
    act = read_act(f, TRAITS)
    dense = MLP(hidden, f.int("intermediate_size"), act=act)
    n_exp, k, size = f.int("n_routed_experts"), f.int("num_experts_per_tok"), f.int("moe_intermediate_size")
    if k > n_exp:
        raise f.error("num_experts_per_tok", f"({k}) exceeds the number of experts ({n_exp})")
    n_shared = f.int("n_shared_experts")  # Dots3NoteTextConfig requires at least one
    shared = f.int("moe_shared_expert_intermediate_size") if f.raw("moe_shared_expert_intermediate_size") is not None \
        else f.int("shared_experts_intermediate_size", size)
    moe = MoE(hidden, n_exp, k, size, shared_intermediate_size=n_shared * shared, act=act)
    norms = pre_norms(lambda: Norm(hidden))
    layers = tuple(Layer(mixers[i], moe if i in moe_at else dense, norms) for i in range(n_layers))
    routing = read_routing(f, RouterKind.SIGMOID, scale_default=1.0, n_group_default=1, topk_group_default=1,
                           group_score=GroupScore.TOP2)
    if n_exp % routing["n_group"] or n_exp // routing["n_group"] < 2 or \
            not 1 <= routing["topk_group"] <= routing["n_group"]:  # Dots3NoteTextConfig.validate_architecture
        raise f.error("n_group", f"({routing['n_group']}) must divide n_routed_experts ({n_exp}) into groups of two or "
                                 f"more and hold topk_group ({routing['topk_group']})")
    return ModelSpec(
        model_type=model_type, hidden_size=hidden, vocab_size=vocab, layers=layers,
        tie_word_embeddings=read_tie(f, False), final_norm=Norm(hidden), hidden_act=act, norm_eps=read_eps(f),
        rope_scaling=_scaling(f, types), mtp_layers=mtp_layers(f, list(layers)), mtp_extra_params=mtp_extra(f, hidden),
        numerics=Numerics(rope_style=RopeStyle.PAIRS, score_correction_bias=True, **routing),
        caveats=("dots3-note keeps its MoE router weights in fp32 (counted here at the model's dtype); its query / "
                 "KV latents are rescaled by sqrt(hidden / rank), which the numerics do not model",),
    )


def _layer_types(f: Fields, n_layers: int) -> list[str]:
    use_dsa = f.raw("use_dsa")
    if use_dsa is None and f.raw("per_layer_config") is None:
        use_dsa = True  # Dots3NoteTextConfig: legacy configs call DSA layers "full_attention"
    elif use_dsa is not None:
        use_dsa = f.bool("use_dsa")
    if f.raw("layer_types") is not None:
        types = per_layer_types(f, "layer_types", n_layers, _TYPES)
    else:
        full = "full_attention" if use_dsa is False else "indexed_attention"
        sliding = f.bool("use_sliding_window", True)
        types = f.derived("layer_types", [full if not sliding or i < 2 or i % 4 == 1 else "sliding_attention"
                                          for i in range(n_layers)],
                          f"{full} on layers 0, 1 and where i % 4 == 1, sliding elsewhere" if sliding else
                          f"{full} everywhere (use_sliding_window false)")
    if use_dsa is not None:
        old, new = ("full_attention", "indexed_attention") if use_dsa else ("indexed_attention", "full_attention")
        types = [new if t == old else t for t in types]
    return types


def _per_layer(f: Fields, n_layers: int, types: list[str]) -> dict[int, dict]:
    """Each layer's attention overrides: the ``per_layer_config`` given (keys layer indices, as ints or the
    zero-padded strings transformers saves), else the legacy ``swa_*`` geometry on every sliding layer."""
    plc = f.raw("per_layer_config")
    if plc is None:
        swa = {k: f.int(f"swa_{k}", v) for k, v in _SWA_DEFAULTS.items()}
        swa["qk_rope_head_dim"] = f.int("swa_qk_rope_head_dim", swa["head_dim"] - swa["qk_nope_head_dim"])
        if swa["qk_rope_head_dim"] < 1:  # derived: swa_head_dim - swa_qk_nope_head_dim (192 when absent)
            raise f.error("swa_head_dim", f"({swa['head_dim']}) leaves no rotary dims after swa_qk_nope_head_dim "
                                          f"({swa['qk_nope_head_dim']})")
        return {i: swa for i, t in enumerate(types) if t == "sliding_attention"}
    if not isinstance(plc, dict):
        raise f.error("per_layer_config", f"must be an object of layer index -> overrides, got {short(plc)}")
    out: dict[int, dict] = {}
    for key, entry in plc.items():
        i = as_int(key) if not isinstance(key, str) else int(key) if key.strip().isdigit() else None
        if i is None or not 0 <= i < n_layers:
            raise f.error("per_layer_config", f"has the key {short(key)}; keys are layer indices below "
                                              f"num_hidden_layers ({n_layers})")
        if not isinstance(entry, dict):
            raise f.error("per_layer_config", f"entry {i} is {short(entry)}; expected an object of overrides")
        bad = sorted(k for k in entry if k not in _ATTN_KEYS)
        if bad:
            raise f.error("per_layer_config", f"entry {i} overrides {', '.join(bad)}; dots3-note varies only its "
                                              f"attention geometry per layer ({', '.join(_ATTN_KEYS)})")
        vals = {}
        for k, v in entry.items():
            if k == "attention_bias":
                if not isinstance(v, bool):
                    raise f.error("per_layer_config", f"entry {i}: attention_bias must be true or false, got {short(v)}")
            elif k != "num_key_value_heads" or v is not None:
                if as_int(v) is None or isinstance(v, bool) or as_int(v) < 1:
                    raise f.error("per_layer_config", f"entry {i}: {k} must be a positive integer, got {short(v)}")
                v = as_int(v)
            vals[k] = v
        out[i] = vals
    return out


def _moe_layers(f: Fields, n_layers: int) -> set[int]:
    if f.raw("mlp_layer_types") is not None:
        return sparse_layers(f, n_layers)
    first = f.int("first_k_dense_replace", 1, lo=0, hi=MAX_LAYERS)
    freq = f.raw("moe_layer_freq", 1)
    if isinstance(freq, list):
        if len(freq) < n_layers:
            raise f.error("moe_layer_freq", f"has {len(freq)} entries but num_hidden_layers is {n_layers}")
        on = [bool(v) for v in freq[:n_layers]]
    else:
        step = f.int("moe_layer_freq", 1)
        on = [i % step == 0 for i in range(n_layers)]
    return {i for i in range(n_layers) if i >= first and on[i]}


def _rope_block(f: Fields, t: str) -> dict | None:
    for key in ("rope_parameters", "rope_scaling"):
        block = f.raw(key)
        if isinstance(block, dict) and block:
            if all(isinstance(v, dict) for v in block.values()):
                return block.get(t) if isinstance(block.get(t), dict) else None
            return block
    return None


def _thetas(f: Fields, types: list[str]) -> dict[str, float]:
    out = {}
    for t in dict.fromkeys(types):  # in order of first use: the fields report in a fixed order
        block = _rope_block(f, t) or {}
        v = block.get("rope_theta")
        if isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0:
            out[t] = float(v)
        elif t == "sliding_attention":
            out[t] = f.float("swa_rope_theta", 50000.0)
        else:
            out[t] = f.float("rope_theta")
    return out


def _scaling(f: Fields, types: list[str]) -> tuple:
    """The RoPE scaling of the indexed (else full) layers, as ``read_rope`` gives it."""
    t = "indexed_attention" if "indexed_attention" in types else "full_attention"
    block = _rope_block(f, t) or {}
    return tuple(sorted((str(k), v) for k, v in block.items()
                        if k not in ("rope_theta", "partial_rotary_factor")
                        and (isinstance(v, (int, float, str, bool)) or v is None)))


# ---- the wrapper's towers (dots3_note: Dots3NoteForConditionalGeneration) ------------------------------------------

#: Dots3NoteVisionConfig's released MoE schedule (``pyramid_num_routed``: experts per block, -1 dense)
_PYRAMID = [-1] * 25 + list(range(4, 65, 4)) + [64]


def dots3_towers(top: dict, text_hidden: int, where: str) -> tuple[Tensor, ...]:
    """Dots3NoteForConditionalGeneration's towers, built whatever the config gives (class defaults).

    Vision (kind ``vision``): a biased Conv2d patch embedding (channels -> hidden, patch²) and its RMSNorm; blocks of
    RMSNorms, ``qkv`` / ``proj`` (biased when ``attention_bias``, legacy ``use_bias``), per-head q / k RMSNorms, and a
    Llama MLP (``mlp_bias``) or, on ``sparse`` blocks, stacked experts of ``moe_intermediate_size`` with a router
    (E x hidden), E from ``per_layer_config`` (else the legacy ``pyramid_num_routed``, else the released schedule:
    25 dense blocks, then 4, 8 .. 64 experts); the final RMSNorm and Qwen2-VL's merger (LayerNorm over
    ``adapter_in_dim``, merge² x adapter_in_dim -> itself -> ``adapter_out_dim``).

    Audio (kind ``audio``): three biased 3x3 Conv2d (1 -> downsample_hidden_size -> itself -> itself), ``conv_out``
    (downsample x ceil(feature_size / 8) -> hidden, no bias); layers of q / v / o projections (biased when
    ``attention_bias``), a bias-free k, RMSNorms and a biased fused gate_up / down MLP; an RMSNorm and the adapter
    (LayerNorm, fc1 -> ``adapter_out_dim``, fc2, biased). A legacy ``whisper_config`` names the encoder's sizes."""
    from ..vision import _mm_fields

    out: list[Tensor] = []
    towers = ((_dots3_vision, "vision_config", "dots3_note_vision_encoder"),
              (_dots3_audio, "audio_config", "dots3_note_audio_encoder"))
    for read, key, family in towers:  # absent: transformers builds the class defaults
        cfg = top.get(key)
        read(_mm_fields({} if cfg is None else cfg, where, key, family), text_hidden, out)
    return tuple(out)


def _t(out: list[Tensor], name: str, shape: tuple[int, ...], kind: str) -> None:
    out.append(Tensor(name, shape, kind))


def _aliased(f: Fields, key: str, alias: str, kind: str = "int"):
    """A field Dots3NoteVisionConfig also takes under a legacy name (which wins)."""
    return getattr(f, kind)(alias) if f.raw(alias) is not None else getattr(f, kind)(key)


def _dots3_vision(f: Fields, text_hidden: int, out: list[Tensor]) -> None:
    h = _aliased(f, "hidden_size", "embed_dim")
    heads = _aliased(f, "num_attention_heads", "num_heads")
    bias = _aliased(f, "attention_bias", "use_bias", "bool")
    n = f.int("num_hidden_layers", hi=MAX_LAYERS)
    if h % heads:
        raise f.error("num_attention_heads", f"({heads}) does not divide hidden_size ({h})")
    if f.int("adapter_in_dim") != h:
        raise f.error("adapter_in_dim", f"({f.int('adapter_in_dim')}) must match hidden_size ({h})")
    merge = f.int("spatial_merge_size", hi=64)
    if f.int("adapter_merge_size", hi=64) != merge:
        raise f.error("adapter_merge_size", f"must match spatial_merge_size ({merge})")
    if f.int("adapter_out_dim") != text_hidden:
        raise f.error("adapter_out_dim", f"({f.int('adapter_out_dim')}) must match the text hidden size ({text_hidden})")
    experts = _vision_experts(f, n)
    mlp_bias = f.bool("mlp_bias", False)
    if mlp_bias and any(experts):
        raise f.error("mlp_bias", "is true, but dots3-note's stacked vision experts have no biases")
    patch, channels = f.int("patch_size", hi=4096), f.int("num_channels", hi=64)
    inter, moe_inter = f.int("intermediate_size"), f.int("moe_intermediate_size")
    p = "model.vision_tower"
    _t(out, f"{p}.patch_embed.proj.weight", (h, channels, patch, patch), "vision")
    _t(out, f"{p}.patch_embed.proj.bias", (h,), "vision")
    _t(out, f"{p}.patch_embed.norm.weight", (h,), "vision")
    for i in range(n):
        b = f"{p}.blocks.{i}"
        _t(out, f"{b}.norm1.weight", (h,), "vision")
        _t(out, f"{b}.attn.qkv.weight", (3 * h, h), "vision")
        _t(out, f"{b}.attn.proj.weight", (h, h), "vision")
        if bias:
            _t(out, f"{b}.attn.qkv.bias", (3 * h,), "vision")
            _t(out, f"{b}.attn.proj.bias", (h,), "vision")
        _t(out, f"{b}.attn.q_norm.weight", (h // heads,), "vision")
        _t(out, f"{b}.attn.k_norm.weight", (h // heads,), "vision")
        _t(out, f"{b}.norm2.weight", (h,), "vision")
        if experts[i]:
            e = experts[i]
            _t(out, f"{b}.mlp.experts.gate_up_proj", (e, 2 * moe_inter, h), "vision")
            _t(out, f"{b}.mlp.experts.down_proj", (e, h, moe_inter), "vision")
            _t(out, f"{b}.mlp.gate.weight", (e, h), "vision")
        else:
            for name, shape in (("gate_proj", (inter, h)), ("up_proj", (inter, h)), ("down_proj", (h, inter))):
                _t(out, f"{b}.mlp.{name}.weight", shape, "vision")
                if mlp_bias:
                    _t(out, f"{b}.mlp.{name}.bias", shape[:1], "vision")
    _t(out, f"{p}.norm.weight", (h,), "vision")
    wide = h * merge * merge
    for name, shape in (("ln_q.weight", (h,)), ("ln_q.bias", (h,)), ("mlp.0.weight", (wide, wide)),
                        ("mlp.0.bias", (wide,)), ("mlp.2.weight", (text_hidden, wide)), ("mlp.2.bias", (text_hidden,))):
        _t(out, f"{p}.merger.{name}", shape, "vision")


def _vision_experts(f: Fields, n: int) -> list[int]:
    """Experts per vision block (0: a dense MLP), as Dots3NoteVisionConfig.__post_init__ derives them."""
    pyramid = f.raw("pyramid_num_routed")
    if pyramid is None and f.raw("mlp_layer_types") is None:
        pyramid = _PYRAMID
    plc = f.raw("per_layer_config")
    if pyramid is not None:
        if not isinstance(pyramid, list) or any(as_int(c) is None or isinstance(c, bool) for c in pyramid):
            raise f.error("pyramid_num_routed", "must be a list of expert counts (-1: a dense block)")
        if len(pyramid) != n:
            raise f.error("pyramid_num_routed" if f.raw("pyramid_num_routed") is not None else "num_hidden_layers",
                          f"the MoE schedule has {len(pyramid)} entries but num_hidden_layers is {n}")
        types = ["sparse" if as_int(c) > 0 else "dense" for c in pyramid]
        if plc is None:
            return [max(as_int(c), 0) for c in pyramid]
    else:
        types = per_layer_types(f, "mlp_layer_types", n, ("dense", "sparse"))
    overrides: dict[int, int] = {}
    if plc is not None:
        if not isinstance(plc, dict):
            raise f.error("per_layer_config", f"must be an object of layer index -> overrides, got {short(plc)}")
        for key, entry in plc.items():
            i = as_int(key) if not isinstance(key, str) else int(key) if key.strip().isdigit() else None
            if i is None or not 0 <= i < n or not isinstance(entry, dict):
                raise f.error("per_layer_config", f"has {short(key)}: {short(entry)}; expected layer indices below "
                                                  f"num_hidden_layers ({n}) -> objects of overrides")
            bad = sorted(k for k in entry if k not in ("num_local_experts", "num_experts_per_tok"))
            if bad:
                raise f.error("per_layer_config", f"entry {i} overrides {', '.join(bad)}; dots3-note's vision tower "
                                                  "varies only its experts per block")
            if "num_local_experts" in entry:
                e = as_int(entry["num_local_experts"])
                if e is None or isinstance(entry["num_local_experts"], bool) or e < 1:
                    raise f.error("per_layer_config", f"entry {i}: num_local_experts must be a positive integer")
                overrides[i] = e
    glob = f.int("num_local_experts")
    return [overrides.get(i, glob) if t == "sparse" else 0 for i, t in enumerate(types)]


def _dots3_audio(f: Fields, text_hidden: int, out: list[Tensor]) -> None:
    w = f.raw("whisper_config")
    if w is not None and not isinstance(w, dict):
        raise f.error("whisper_config", f"must be an object, got {short(w)}")
    wf = Fields(w or {}, f"{f.where} (whisper_config)", family="dots3_note_audio_encoder")

    def sized(key: str, legacy: str) -> int:
        return wf.int(legacy) if wf.raw(legacy) is not None else f.int(key)

    h = sized("hidden_size", "d_model")
    heads = sized("num_attention_heads", "encoder_attention_heads")
    n = sized("num_hidden_layers", "encoder_layers") if wf.raw("encoder_layers") is not None else \
        f.int("num_hidden_layers", hi=MAX_LAYERS)
    inter = sized("intermediate_size", "encoder_ffn_dim")
    mels = sized("feature_size", "num_mel_bins")
    if h % heads:
        raise f.error("num_attention_heads", f"({heads}) does not divide the audio hidden_size ({h})")
    adapter_in = f.int("whisper_adapter_in_dim") if f.raw("whisper_adapter_in_dim") is not None else \
        f.int("adapter_input_size")
    if adapter_in != h:
        raise f.error("adapter_input_size", f"({adapter_in}) must match the audio hidden_size ({h})")
    key = next((k for k in ("whisper_adapter_out_dim", "adapter_output_size") if f.raw(k) is not None), "adapter_out_dim")
    if f.int(key) != text_hidden:
        raise f.error(key, f"({f.int(key)}) must match the text hidden size ({text_hidden})")
    ds = f.int("downsample_hidden_size")
    bias = f.bool("attention_bias", True)
    p = "model.audio_tower"
    for i, c_in in enumerate((1, ds, ds)):
        _t(out, f"{p}.conv_stem.convs.{i}.weight", (ds, c_in, 3, 3), "audio")
        _t(out, f"{p}.conv_stem.convs.{i}.bias", (ds,), "audio")
    _t(out, f"{p}.conv_stem.conv_out.weight", (h, ds * ((mels + 7) // 8)), "audio")
    for i in range(n):
        q = f"{p}.layers.{i}"
        for proj in ("q_proj", "k_proj", "v_proj", "o_proj"):
            _t(out, f"{q}.self_attn.{proj}.weight", (h, h), "audio")
            if bias and proj != "k_proj":
                _t(out, f"{q}.self_attn.{proj}.bias", (h,), "audio")
        _t(out, f"{q}.input_layernorm.weight", (h,), "audio")
        _t(out, f"{q}.mlp.gate_up_proj.weight", (2 * inter, h), "audio")
        _t(out, f"{q}.mlp.gate_up_proj.bias", (2 * inter,), "audio")
        _t(out, f"{q}.mlp.down_proj.weight", (h, inter), "audio")
        _t(out, f"{q}.mlp.down_proj.bias", (h,), "audio")
        _t(out, f"{q}.post_attention_layernorm.weight", (h,), "audio")
    _t(out, f"{p}.layer_norm.weight", (h,), "audio")
    for name, shape in (("norm.weight", (h,)), ("norm.bias", (h,)), ("fc1.weight", (text_hidden, h)),
                        ("fc1.bias", (text_hidden,)), ("fc2.weight", (text_hidden, text_hidden)),
                        ("fc2.bias", (text_hidden,))):
        _t(out, f"{p}.adapter.{name}", shape, "audio")
