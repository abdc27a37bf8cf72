"""``analyze``: the serving arithmetic of one model at one context and batch, as a frozen result.

Everything here is exact integer arithmetic over the ``ModelSpec``: parameters from its tensors,
FLOPs and bytes from ``trace.step_groups`` (the same function for decode and prefill; identical layers once), KV bytes from
``kv``. ``to_dict`` is the JSON contract (base units, integers, ``schema_version``).
"""

from __future__ import annotations

from dataclasses import replace

from .records import frozen
from .dtypes import DType, get_dtype
from .errors import OptionError
from .kv import KVCache, kv_cache
from .params import ParamCounts, count_params
from .spec import ModelSpec, MoE
from .trace import Op, Totals, expected_experts, step_groups
from .weights import WeightFormat, weight_format

SCHEMA_VERSION = 1


@frozen
class Options:
    context: int = 8192
    batch: int = 1
    dtype: str | None = None
    kv_dtype: str | None = None
    sliding_window: int | None = None  # what-if: a window on every full-attention layer

    def check(self) -> None:
        if self.context < 0:
            raise OptionError(f"--context must be >= 0, got {self.context}")
        if self.batch < 1:
            raise OptionError(f"--batch must be >= 1, got {self.batch}")
        if self.sliding_window is not None and self.sliding_window < 1:
            raise OptionError(f"--sliding-window must be >= 1, got {self.sliding_window}")


@frozen
class Analysis:
    spec: ModelSpec
    options: Options
    params: ParamCounts
    fmt: WeightFormat
    kv: KVCache
    weights_bytes: int
    decode_flops: int  # one decode step of one sequence at `context`
    prefill_flops: int  # a prompt of `context` tokens
    decode_totals: Totals  # the decode step at `batch`
    activation_bytes: int  # the largest activation buffer of a decode step at `batch`
    mtp_weights_bytes: int
    notes: tuple[str, ...]
    warnings: tuple[str, ...] = ()  # what the user should see on stderr whatever the output format

    @property
    def kv_bytes_per_sequence(self) -> int:
        return self.kv.bytes_per_sequence(self.options.context)

    @property
    def kv_bytes(self) -> int:
        return self.options.batch * self.kv_bytes_per_sequence

    @property
    def state_bytes(self) -> int:
        return self.options.batch * self.kv.state_bytes_per_sequence

    @property
    def total_bytes(self) -> int:
        """Weights + KV cache + recurrent state of `batch` sequences at `context`."""
        return self.weights_bytes + self.kv_bytes + self.state_bytes

    def seq_bytes(self, context: int) -> int:
        """Cache bytes one more sequence at `context` costs (KV + recurrent state)."""
        return self.kv.seq_bytes(context)


def with_sliding_window(spec: ModelSpec, window: int) -> tuple[ModelSpec, int, tuple[str, ...]]:
    """The spec with ``window`` applied to every full-attention layer (and windows wider than it);
    (spec, layers changed, the titles of mixers it would apply to but does not model: MLA)."""
    layers = []
    changed = 0
    skipped: dict[str, None] = {}
    for layer in spec.layers:
        m = layer.mixer
        w = m.with_window(window) if m is not None else None
        if m is None:
            pass
        elif w is None:
            skipped[m.title] = None
        elif w is not m:
            layer = replace(layer, mixer=w)
            changed += 1
        layers.append(layer)
    return replace(spec, layers=tuple(layers)), changed, tuple(skipped)


def without_sliding_windows(spec: ModelSpec) -> tuple[ModelSpec, tuple[int, ...]]:
    """The spec with every sliding-window attention layer made full attention (an engine that does
    not apply the config's window: it caches and attends to every token); chunked layers stay.
    (spec, the distinct windows removed, ascending; () and ``spec`` itself where there were none)."""
    layers = []
    removed: set[int] = set()
    for layer in spec.layers:
        m = layer.mixer
        w = getattr(m, "window", None)
        if w:
            removed.add(w)
            layer = replace(layer, mixer=replace(m, window=None))
        layers.append(layer)
    if not removed:
        return spec, ()
    return replace(spec, layers=tuple(layers)), tuple(sorted(removed))


def kv_dtype_for(fmt: WeightFormat, kv_dtype: str | None) -> DType:
    if kv_dtype is not None:
        return get_dtype(kv_dtype, what="--kv-dtype")
    return fmt.act


def analyze(spec: ModelSpec, options: Options) -> Analysis:
    options.check()
    notes: list[str] = []
    if options.sliding_window is not None:
        spec, changed, skipped = with_sliding_window(spec, options.sliding_window)
        notes.append(f"--sliding-window {options.sliding_window}: applied to {changed} attention layer(s)")
        notes.extend(f"--sliding-window does not apply to {title} layers" for title in skipped)
    fmt, fmt_notes = weight_format(spec, options.dtype)
    notes.extend(fmt_notes)
    kvd = kv_dtype_for(fmt, options.kv_dtype)
    cache = kv_cache(spec, kvd, fmt.act)
    params = count_params(spec)
    weights = fmt.model_bytes(spec)
    mtp_bytes = 0
    if spec.mtp_layers:
        mtp_tensors = [t for i, layer in enumerate(spec.mtp_layers) for t in layer.tensors(f"model.mtp.{i}")]
        mtp_tensors += spec.mtp_extra_tensors
        mtp_bytes = fmt.bytes_of(mtp_tensors) + fmt.base.nbytes(spec.mtp_extra_params)
    ctx = options.context
    decode1 = step_groups(spec, fmt, kvd, batch=1, new_tokens=1, cached_tokens=ctx)
    prefill = step_groups(spec, fmt, kvd, batch=1, new_tokens=ctx, cached_tokens=0) if ctx > 0 else []
    decode_b = decode1 if options.batch == 1 else step_groups(spec, fmt, kvd, batch=options.batch, new_tokens=1,
                                                                cached_tokens=ctx)
    act_peak = max((g.op.act_read_bytes + g.op.act_write_bytes for g in decode_b), default=0)
    warnings: list[str] = []
    if spec.max_position_embeddings and ctx > spec.max_position_embeddings:
        warnings.append(f"--context {ctx} is beyond max_position_embeddings ({spec.max_position_embeddings}); "
                        "computed anyway")
    return Analysis(
        spec=spec, options=options, params=params, fmt=fmt, kv=cache, weights_bytes=weights,
        decode_flops=Totals.of_groups(decode1).flops, prefill_flops=Totals.of_groups(prefill).flops,
        decode_totals=Totals.of_groups(decode_b), activation_bytes=act_peak, mtp_weights_bytes=mtp_bytes,
        notes=tuple(notes + warnings), warnings=tuple(warnings),
    )


# ---- descriptions --------------------------------------------------------------------------------


def attention_summary(spec: ModelSpec) -> str:
    kinds = [layer.mixer.summary() for layer in spec.layers if layer.mixer is not None]
    seen = list(dict.fromkeys(kinds))
    return "; ".join(seen) if seen else "none"


def ffn_summary(spec: ModelSpec) -> str:
    moes = [layer.ffn for layer in spec.layers if isinstance(layer.ffn, MoE)]
    if not moes:
        return "dense"
    m = moes[0]
    shared = f" + shared ({m.shared_intermediate_size})" if m.shared_intermediate_size else ""
    zero = f" (+ {m.zero_experts} zero-computation)" if m.zero_experts else ""
    latent = f" in latent {m.latent_size}" if m.latent_size else ""  # Nemotron 3 Super / Ultra
    return (f"MoE: {m.num_experts} experts{zero}{latent}, top-{m.num_experts_per_tok}{shared}, "
            f"{len(moes)} of {len(spec.layers)} layers")


def layer_kinds(spec: ModelSpec) -> dict[str, int]:
    out: dict[str, int] = {}
    for layer in spec.layers:
        out[layer.kind] = out.get(layer.kind, 0) + 1
    return out


def moe_step(spec: ModelSpec, batch: int) -> dict | None:
    moes = [layer.ffn for layer in spec.layers if isinstance(layer.ffn, MoE)]
    if not moes:
        return None
    m = moes[0]
    touched = expected_experts(m.num_experts, m.num_experts_per_tok, batch)
    return {"num_experts": m.num_experts, "num_experts_per_tok": m.num_experts_per_tok,
            "moe_layers": len(moes), "batch": batch, "expected_experts_touched_per_layer": touched}


def op_dict(o: Op) -> dict:
    return {
        "name": o.name, "kind": o.kind, "category": o.category, "layer": o.layer, "flops": o.flops,
        "weight_bytes": o.weight_bytes, "act_read_bytes": o.act_read_bytes, "act_write_bytes": o.act_write_bytes,
        "kv_read_bytes": o.kv_read_bytes, "kv_write_bytes": o.kv_write_bytes,
        "state_read_bytes": o.state_read_bytes, "state_write_bytes": o.state_write_bytes,
        "bytes": o.bytes, "kernels": o.kernels, "launches": o.launches,
    }


def to_dict(a: Analysis, *, model_id: str = "", source: str = "") -> dict:
    spec, o = a.spec, a.options
    moe = moe_step(spec, o.batch)
    d = {
        "schema_version": SCHEMA_VERSION,
        "model": {
            "id": model_id or spec.name,
            "source": source or spec.source,
            "model_type": spec.model_type,
            "num_layers": spec.num_layers,
            "hidden_size": spec.hidden_size,
            "vocab_size": spec.vocab_size,
            "tie_word_embeddings": spec.tie_word_embeddings,
            "max_position_embeddings": spec.max_position_embeddings,
            "torch_dtype": spec.torch_dtype,
            "attention": attention_summary(spec),
            "ffn": ffn_summary(spec),
            "layer_kinds": layer_kinds(spec),
            "quantization": None if spec.quant is None else {
                "method": spec.quant.method, "quant_method": spec.quant.raw_method, "bits": spec.quant.bits,
                "group_size": spec.quant.group_size or None,
                "block_size": list(spec.quant.block_size) if spec.quant.block_size[0] else None,
                "modules_to_not_convert": list(spec.quant.modules_to_not_convert),
                **({"groups": _quant_groups(spec)} if spec.quant.groups else {}),
            },
        },
        "params": a.params.to_dict(),
        "flops_per_token": {
            "decode": a.decode_flops,
            "prefill": a.prefill_flops,
            "context": o.context,
            "convention": "2 FLOPs per multiply-add of every matmul (weights, q·k, p·v); decode attends "
                          "context+1 keys; prefill is the exact causal triangle with logits for the last token"
                          + ("; a text-only step: the cross-attention layers are skipped (no image), as transformers "
                             "does" if spec.cross_attention is not None else ""),
        },
        "kv_cache": {
            "bytes_per_token": a.kv.bytes_per_token,
            "bytes_per_sequence": a.kv_bytes_per_sequence,
            "bytes": a.kv_bytes,
            "context": o.context,
            "batch": o.batch,
            "dtype": a.kv.dtype.name,
            "naive_bytes_per_token": a.kv.naive_bytes_per_token,
            "state_bytes_per_sequence": a.kv.state_bytes_per_sequence,
            "state_dtype": a.kv.state_dtype.name,  # the conv windows' (and any recurrent state not fixed apart)
            "recurrent_state_dtype": a.kv.recurrent_state_dtype,
            "per_layer": a.kv.per_layer(),
            "cross_attention": cross_attention_dict(a),
        },
        "memory": {
            "weights_bytes": a.weights_bytes,
            "weights_dtype": a.fmt.describe(),
            "weights_dtype_source": a.fmt.source,
            "kv_bytes": a.kv_bytes,
            "state_bytes": a.state_bytes,
            "total_bytes": a.total_bytes,
            "activation_bytes": a.activation_bytes,
            "mtp_weights_bytes": a.mtp_weights_bytes,
        },
        "decode_step": {
            "batch": o.batch,
            "flops": a.decode_totals.flops,
            "bytes": a.decode_totals.bytes,
            "weight_bytes": a.decode_totals.weight_bytes,
            "kv_bytes": a.decode_totals.kv_bytes,
            "act_bytes": a.decode_totals.act_bytes,
            "state_bytes": a.decode_totals.state_bytes,
        },
        "provenance": [{"field": p.field, "status": p.status, "value": p.value, "note": p.note}
                       for p in spec.provenance],
        "caveats": list(spec.caveats),
        "notes": list(a.notes),
    }
    if moe is not None:
        moe["weight_bytes_read_per_step"] = a.decode_totals.weight_bytes
        d["moe"] = moe
    return d


def cross_attention_dict(a: Analysis) -> dict | None:
    """The cross-attention layers' KV cache (mllama), per image; None for a model without them."""
    x = a.spec.cross_attention
    if x is None:
        return None
    return {
        "layers": list(x.layers),
        "image_tokens_per_image": x.image_tokens or None,
        "bytes_per_image": a.kv.cross_bytes_per_image,
        "convention": ("IDEFICS: transformers caches none of the gated cross-attention blocks' K/V (recomputed from "
                       "the image features every step); bytes_per_token is the self-attention layers'"
                       if x.style == "idefics" else
                       "K and V of every cross-attention layer over one image's tokens (max_num_tiles x "
                       "(patches + 1)), cached once per image; not in bytes_per_token, bytes_per_sequence or "
                       "memory.kv_bytes, which count text tokens"),
    }


# ---- capacity ------------------------------------------------------------------------------------


def activation_bytes_per_sequence(a: Analysis) -> int:
    """The largest activation buffer of a decode step, per sequence (it grows linearly with batch)."""
    return -(-a.activation_bytes // a.options.batch)


def _quant_groups(spec) -> list[dict]:
    """A mixed-precision checkpoint's groups as the JSON shows them: each one's format, targets and parameters."""
    from .quant import group_params

    q = spec.quant
    return [{"name": n, "method": sub.method, "quant_method": sub.raw_method, "bits": sub.bits,
             "group_size": sub.group_size or None, "targets": list(targets), "params": p}
            for n, (targets, sub), p in zip(q.group_names, q.groups, group_params(spec, q))]
