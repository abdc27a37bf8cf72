"""NVIDIA's NAS-pruned Llama models (``nemotron-nas``, DeciLMForCausalLM: Llama-3.3-Nemotron-Super-49B-v1 / v1.5,
Llama-3.1-Nemotron-Ultra-253B-v1, Llama-3.1-Nemotron-51B-Instruct) and Deci's DeciLM-7B (``deci``). Both are
remote-code families (transformers ships neither); read as vLLM's ``nemotron_nas.py`` and the checkpoints' own
``modeling_decilm.py`` / ``block_config.py`` build them.

``nemotron-nas``: a Llama decoder whose every layer has its own ``block_configs[i]``:

- ``attention``: ``no_op`` (no attention, no ``input_layernorm``: the layer starts at its FFN),
  ``replace_with_linear`` (``input_layernorm`` then one bias-free ``Linear(hidden, hidden)``,
  ``self_attn.linear_attn``), else Llama attention with ``num_attention_heads / n_heads_in_group`` KV heads
  (q/k/v/o biased by ``attention_bias``; head_dim = ``head_dim`` else hidden / heads, as vLLM's LlamaAttention);
  only these layers cache K and V (the remote VariableCache, vLLM's per-attention-layer cache);
- ``ffn``: ``no_op`` (no MLP, no ``post_attention_layernorm``), ``replace_with_linear`` (the norm then
  ``mlp.linear_mlp``, one bias-free ``Linear(hidden, hidden)``), else Llama's gated MLP of
  ``_ffn_mult_to_intermediate_size(ffn_mult, hidden)``: ``int(2 · ffn_mult · hidden / 3)`` rounded up to a multiple
  of 256, ``ffn_mult`` first rounded to 6 decimals (block_config.FFNConfig); vLLM also takes an explicit
  ``intermediate_size`` and ``hidden_act`` per block.

A layer whose attention and FFN are both no-ops is the identity (Ultra-253B has 81 of them): no parameters, no
FLOPs, no cache; it keeps its index, so checkpoint names stay ``model.layers.<i>``. Not modelled (refused by
field): sliding-window / sink attention (``window_length``, ``num_sink_tokens``), the newer block configs' MoE FFNs
and Llama-4 attention, and a linear FFN beside a kept attention (a layer holds one linear replacement; no
published checkpoint uses either).

``deci`` (Deci/DeciLM-7B): Llama with ``num_key_value_heads_per_layer`` (one KV-head count per layer), bias-free
attention of head_dim hidden / heads and Llama's bias-free gated MLP (``LlamaMLP``); the cache per layer is its
own KV heads.
"""

from __future__ import annotations

from ..errors import UnsupportedModelError
from ..fields import MAX_LAYERS, Fields, short
from ..mixers import Attention
from ..mixers.linear_replacement import LinearReplacement
from ..spec import MLP, Layer, ModelSpec, Norm, PlacedNorm
from .common import pre_norms, read_eps, read_head_dim, read_rotary, read_tie

#: the fields of block_config.AttentionConfig / FFNConfig (remote, v1), and what else vLLM reads per block
ATTENTION_KEYS = {"no_op", "replace_with_linear", "sparsify", "n_heads_in_group", "window_length", "num_sink_tokens",
                  "use_prefill_window_in_sink_attention", "unshifted_sink", "llama4", "num_key_value_heads"}
FFN_KEYS = {"no_op", "replace_with_linear", "sparsify", "ffn_mult", "intermediate_size", "hidden_act", "moe",
            "gated", "weights_precision"}


def ffn_mult_to_intermediate_size(ffn_mult: float, hidden: int) -> int:
    """modeling_decilm._ffn_mult_to_intermediate_size (and vLLM's copy), with FFNConfig's round(ffn_mult, 6)."""
    size = int(2 * round(ffn_mult, 6) * hidden / 3)
    return size if size % 256 == 0 else size + 256 - size % 256


def _flag(f: Fields, where: str, block: dict, key: str) -> bool:
    v = block.get(key, False)
    if v is None:
        return False
    if not isinstance(v, bool):
        raise f.error("block_configs", f"{where}.{key} must be true or false, got {short(v)}")
    return v


def _positive_int(f: Fields, where: str, v, what: str) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or v < 1:
        raise f.error("block_configs", f"{where} must be a positive integer ({what}), got {short(v)}")
    return v


def _blocks(f: Fields, n_layers: int) -> list[tuple[dict, dict]]:
    raw = f.raw("block_configs")
    if raw is None:
        raise f.error("block_configs", "is missing: nemotron-nas gives every layer its attention and FFN in "
                                       "block_configs")
    if not isinstance(raw, list):
        raise f.error("block_configs", f"must be a list of per-layer blocks, got {short(raw)}")
    if len(raw) != n_layers:
        raise f.error("block_configs", f"has {len(raw)} blocks but num_hidden_layers is {n_layers}")
    out = []
    for i, b in enumerate(raw):
        if not isinstance(b, dict) or not isinstance(b.get("attention"), dict) or not isinstance(b.get("ffn"), dict):
            raise f.error("block_configs", f"entry {i} must be an object with 'attention' and 'ffn' objects, "
                                           f"got {short(b)}")
        if b.get("parallel_blocks"):
            raise f.error("block_configs", f"entry {i} has parallel_blocks: parallel sub-blocks are not modelled")
        for part, keys in (("attention", ATTENTION_KEYS), ("ffn", FFN_KEYS)):
            unknown = sorted(set(b[part]) - keys)
            if unknown:
                raise f.error("block_configs", f"entry {i}.{part} has fields {', '.join(unknown)} that are not "
                                               "modelled")
        out.append((b["attention"], b["ffn"]))
    f.derived("block_configs", f"list[{n_layers}]", "one attention and one FFN block per layer")
    return out


def build(f: Fields, model_type: str) -> ModelSpec:
    hidden = f.int("hidden_size")
    n_layers = f.int("num_hidden_layers", hi=MAX_LAYERS)
    heads = f.int("num_attention_heads")
    vocab = f.int("vocab_size", hi=1 << 26)
    hd = read_head_dim(f, hidden, heads)
    if f.str("position_embedding_type", "rope") != "rope":
        raise f.error("position_embedding_type", f"is {short(f.raw('position_embedding_type'))}: only 'rope' "
                                                 "(Llama 3's) is modelled")
    if f.bool("o_proj_bias", False):
        raise f.error("o_proj_bias", "is true: an o_proj bias apart from attention_bias is not modelled")
    bias = f.bool("attention_bias", False)
    mlp_bias = f.bool("mlp_bias", False)
    act = f.str("hidden_act", "silu")
    theta, rotary_dim, scaling = read_rotary(f, hd)
    norm = lambda: Norm(hidden)  # noqa: E731  (DeciLMRMSNorm, rms_norm_eps)
    layers = []
    for i, (a, m) in enumerate(_blocks(f, n_layers)):
        at, ft = f"entry {i}.attention", f"entry {i}.ffn"
        a_noop, a_lin = _flag(f, at, a, "no_op"), _flag(f, at, a, "replace_with_linear")
        m_noop, m_lin = _flag(f, ft, m, "no_op"), _flag(f, ft, m, "replace_with_linear")
        for where, noop, lin in ((at, a_noop, a_lin), (ft, m_noop, m_lin)):
            if noop and lin:
                raise f.error("block_configs", f"{where} is both no_op and replace_with_linear")
        norms: list[PlacedNorm] = []
        mixer = None
        if a_lin:
            mixer = LinearReplacement(hidden, "self_attn", "linear_attn")
            norms.append(PlacedNorm("input_layernorm", "pre_mixer", norm()))
        elif not a_noop:
            for key in ("window_length", "num_sink_tokens"):
                if a.get(key) is not None:
                    raise f.error("block_configs", f"{at}.{key} is {short(a[key])}: sliding-window / sink attention "
                                                   "is not modelled")
            if a.get("llama4") is not None:
                raise f.error("block_configs", f"{at}.llama4 is set: Llama-4 attention blocks are not modelled")
            if a.get("n_heads_in_group") is None:
                raise f.error("block_configs", f"{at}.n_heads_in_group is missing for a kept attention block")
            group = _positive_int(f, f"{at}.n_heads_in_group", a["n_heads_in_group"], "query heads per KV head")
            if heads % group:
                raise f.error("block_configs", f"{at}.n_heads_in_group ({group}) must divide num_attention_heads "
                                               f"({heads})")
            mixer = Attention(hidden, heads, heads // group, hd, hd, bias, bias, bias, bias, rotary_dim=rotary_dim,
                              rope_theta=theta)
            norms.append(PlacedNorm("input_layernorm", "pre_mixer", norm()))
        ffn = None
        if m_lin:
            if mixer is not None:
                raise UnsupportedModelError(
                    f"{f.where}: field 'block_configs' {ft}.replace_with_linear beside a kept attention block "
                    f"(layer {i}) is not modelled", "no published nemotron-nas checkpoint has one; vLLM does not "
                    "load it either")
            # the FFN's linear in the layer's one linear-replacement slot: post_attention_layernorm, linear_mlp
            mixer = LinearReplacement(hidden, "mlp", "linear_mlp")
            norms.append(PlacedNorm("post_attention_layernorm", "pre_mixer", norm()))
        elif not m_noop:
            if m.get("moe") is not None:
                raise f.error("block_configs", f"{ft}.moe is set: mixture-of-experts blocks are not modelled")
            if m.get("gated") is False:
                raise f.error("block_configs", f"{ft}.gated is false: an ungated MLP block is not modelled")
            if m.get("ffn_mult") is not None:
                mult = m["ffn_mult"]
                if isinstance(mult, bool) or not isinstance(mult, (int, float)) or not 0 < mult < 1e4:
                    raise f.error("block_configs", f"{ft}.ffn_mult must be a positive number, got {short(mult)}")
                inter = ffn_mult_to_intermediate_size(mult, hidden)
            elif m.get("intermediate_size") is not None:  # vLLM: an explicit width when there is no ffn_mult
                inter = _positive_int(f, f"{ft}.intermediate_size", m["intermediate_size"], "the MLP width")
            else:
                raise f.error("block_configs", f"{ft} has neither ffn_mult nor intermediate_size for a kept FFN")
            block_act = m.get("hidden_act") or act
            if not isinstance(block_act, str):
                raise f.error("block_configs", f"{ft}.hidden_act must be an activation name, got {short(block_act)}")
            ffn = MLP(hidden, inter, bias=mlp_bias, act=block_act)
            norms.append(PlacedNorm("post_attention_layernorm", "pre_ffn", norm()))
        layers.append(Layer(mixer, ffn, tuple(norms)))
    acts = {layer.ffn.act for layer in layers if layer.ffn is not None}
    if len(acts) > 1:
        raise f.error("block_configs", f"mixes MLP activations ({', '.join(sorted(acts))}): one per model is modelled")
    return ModelSpec(
        model_type=model_type, hidden_size=hidden, vocab_size=vocab, layers=tuple(layers),
        tie_word_embeddings=read_tie(f, False), final_norm=norm(), hidden_act=acts.pop() if acts else act,
        norm_eps=read_eps(f) if f.has("rms_norm_eps") else f.defaulted("rms_norm_eps", 1e-6),
        rope_scaling=scaling,
    )


def build_deci(f: Fields, model_type: str) -> ModelSpec:
    """Deci/DeciLM-7B: Llama with one KV-head count per layer (``num_key_value_heads_per_layer``)."""
    hidden = f.int("hidden_size")
    n_layers = f.int("num_hidden_layers", hi=MAX_LAYERS)
    heads = f.int("num_attention_heads")
    vocab = f.int("vocab_size", hi=1 << 26)
    if hidden % heads:
        raise f.error("num_attention_heads", f"({heads}) must divide hidden_size ({hidden}): DeciLM's head_dim is "
                                             "hidden_size / num_attention_heads")
    hd = f.derived("head_dim", hidden // heads, "hidden_size / num_attention_heads (DeciLMAttention)")
    if f.raw("num_key_value_heads_per_layer") is None:
        raise f.error("num_key_value_heads_per_layer", "is missing: DeciLM gives each layer its KV-head count")
    kvs = f.int_list("num_key_value_heads_per_layer", n_layers, lo=1, hi=heads)
    for i, kv in enumerate(kvs):
        if heads % kv:
            raise f.error("num_key_value_heads_per_layer", f"entry {i} ({kv}) must divide num_attention_heads "
                                                           f"({heads})")
    inter = f.int("intermediate_size")
    act = f.str("hidden_act", "silu")
    theta, rotary_dim, scaling = read_rotary(f, hd)
    norm = lambda: Norm(hidden)  # noqa: E731
    mlp = MLP(hidden, inter, act=act)  # LlamaMLP of the remote code's transformers: bias-free
    layers = tuple(Layer(Attention(hidden, heads, kv, hd, hd, rotary_dim=rotary_dim, rope_theta=theta), mlp,
                         pre_norms(norm)) for kv in kvs)
    return ModelSpec(
        model_type=model_type, hidden_size=hidden, vocab_size=vocab, layers=layers,
        tie_word_embeddings=read_tie(f, False), final_norm=norm(), hidden_act=act,
        norm_eps=read_eps(f) if f.has("rms_norm_eps") else f.defaulted("rms_norm_eps", 1e-6),
        rope_scaling=scaling,
    )
