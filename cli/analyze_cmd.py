"""``planner analyze``: parameters, FLOPs, KV cache and memory of one model."""

from __future__ import annotations

from dataclasses import replace
from typing import Annotated, Optional

import typer

from planner.analysis.errors import short
from planner.analysis.records import frozen

from .options import DEFAULT_BATCH, DEFAULT_CONTEXT, DEFAULT_GPUS
from .options import BatchOpt, ContextOpt, DtypeOpt, FormatOpt, GpusOpt, HardwareOpt, JsonOpt, KvDtypeOpt, RefreshOpt
from .options import TOKENS_HELP, DpOpt, EpOpt, PpOpt, TpOpt, tokens
from .render import OutputFormat, fmt_bytes, fmt_count, fmt_gib, fmt_int, fmt_si, print_csv, print_json, resolve_format
from .sections import Section, emit

ModelArg = Annotated[str, typer.Argument(help="A bundled name (planner models list), a config.json or folder, or a Hugging Face id.", show_default=False)]
RevisionOpt = Annotated[Optional[str], typer.Option("--revision", help="Hugging Face revision (branch, tag or commit) to pin.")]
SlidingOpt = Annotated[Optional[int], typer.Option("--sliding-window", click_type=tokens(1, 1 << 30), help=f"What-if: a sliding window on every full-attention layer, in tokens ({TOKENS_HELP}).")]
RequireFitOpt = Annotated[bool, typer.Option("--require-fit", help="Exit with code 3 when the model does not fit.")]


def analyze(
    model: ModelArg,
    dtype: DtypeOpt = None,
    kv_dtype: KvDtypeOpt = None,
    context: ContextOpt = DEFAULT_CONTEXT,
    batch: BatchOpt = DEFAULT_BATCH,
    hardware: HardwareOpt = None,
    gpus: GpusOpt = DEFAULT_GPUS,
    tp: TpOpt = None,
    pp: PpOpt = None,
    ep: EpOpt = None,
    dp: DpOpt = None,
    sliding_window: SlidingOpt = None,
    revision: RevisionOpt = None,
    refresh: RefreshOpt = False,
    require_fit: RequireFitOpt = False,
    fmt: FormatOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Exact parameters, FLOPs per token, KV cache and memory of MODEL, and whether it fits.

    Example: planner analyze llama-3.1-8b --context 32768 --batch 8 --hardware h100-sxm
    """
    from planner.analysis.analyze import Options, analyze as run_analyze
    from planner.hardware.replicas import RULE_FEWEST, candidates, deployment, fallback, fewest_gpus_note
    from planner.hardware.serving import per_gpu_memory

    from .common import load_hardware, load_model, resolve_layout, warn_all

    out_fmt = resolve_format(fmt, as_json)
    layout = resolve_layout(gpus, tp, pp, ep, dp)
    hw = load_hardware(hardware)
    loaded = load_model(model, revision, refresh)
    opts = Options(context=context, batch=batch, dtype=dtype, kv_dtype=kv_dtype, sliding_window=sliding_window)
    a = run_analyze(loaded.spec, opts)
    if layout is None:  # --gpus N alone: the most replicas whose share fits
        deps = candidates(a, hw, gpus)
        fitting = [d for d in deps if d.fits]
        dep = replace(fitting[0], chosen=RULE_FEWEST) if fitting else fallback(deps)
    else:
        dep = deployment(a, hw, layout)
    plan = dep.plan
    need = fewest_gpus_note(a, hw, dep)
    fit = Fit(dep=dep, max_context=_none_if_negative(dep.max_context(a)),
              notes=plan.notes + ((need,) if need else ()))
    what_if = None
    if sliding_window is not None:
        base = run_analyze(loaded.spec, Options(context=context, batch=batch, dtype=dtype, kv_dtype=kv_dtype))
        base_mb = (deployment(base, hw, dep.layout).max_batch if dep.layout_plan is not None
                   else dep.layout.dp * per_gpu_memory(base, plan, hw).max_batch())
        what_if = {
            "sliding_window": sliding_window,
            "kv_bytes_per_sequence_without": base.kv_bytes_per_sequence,
            "kv_bytes_per_sequence_with": a.kv_bytes_per_sequence,
            "max_batch_without": base_mb,
            "max_batch_with": fit.max_batch,
            "concurrency_gain": fit.max_batch / base_mb if base_mb else None,
        }
    rec = None
    if loaded.source != "bundled":
        from pathlib import Path

        from planner.analysis.checkpoint import reconcile

        rec = reconcile(Path(loaded.resolved.path).parent, a.weights_bytes + a.mtp_weights_bytes)
        check_generic_count(loaded.spec, a.params.total, rec)
    warn_all(a.warnings)
    if out_fmt in (OutputFormat.json, OutputFormat.csv):
        d = analysis_json(a, loaded, hw, fit)
        if rec is not None:
            d["checkpoint"] = {"source": rec.checkpoint.source, "bytes": rec.checkpoint.total_bytes,
                               "tensors": rec.checkpoint.tensors, "dtypes": rec.checkpoint.dtypes,
                               "computed_bytes": rec.computed_bytes, "difference": rec.difference}
            if rec.caveat:
                d["caveats"].append(rec.caveat)
        if what_if:
            d["what_if"] = what_if
        print_json(d) if out_fmt == OutputFormat.json else print_csv([d])
    else:
        secs, lines = analysis_sections(a, loaded, hw, fit)
        if rec is not None:
            ck = Section("Checkpoint on disk", ["", "bytes", "exact"], right=(1, 2))
            ck.add(f"stored ({rec.checkpoint.tensors:,} tensors)", fmt_gib(rec.checkpoint.total_bytes),
                   fmt_int(rec.checkpoint.total_bytes))
            ck.add("computed (weights + MTP)", fmt_gib(rec.computed_bytes), fmt_int(rec.computed_bytes))
            ck.add("difference", f"{100 * rec.difference:+.2f}%", "")
            if rec.checkpoint.dtypes:
                ck.caption = "dtypes: " + ", ".join(f"{k} {fmt_gib(v)}" for k, v in sorted(rec.checkpoint.dtypes.items()))
            secs.append(ck)
            if rec.caveat:
                lines.append(f"caveat: {rec.caveat}")
        if what_if:
            w = Section(f"What if every full-attention layer had a {sliding_window:,}-token window", ["", "without", "with"],
                        right=(1, 2))
            w.add(f"KV per sequence at {context:,} tokens", fmt_bytes(what_if["kv_bytes_per_sequence_without"]),
                  fmt_bytes(what_if["kv_bytes_per_sequence_with"]))
            w.add(f"max concurrent sequences at {context:,} tokens", fmt_int(what_if["max_batch_without"]),
                  fmt_int(what_if["max_batch_with"]))
            if what_if["concurrency_gain"]:
                w.caption = (f"{what_if['concurrency_gain']:.2f}× the concurrent requests "
                             f"({what_if['max_batch_with'] - what_if['max_batch_without']:+,})")
            secs.append(w)
        emit(secs, out_fmt, lines=lines)
    if require_fit and not fit.fits:
        raise typer.Exit(3)


def _none_if_negative(n: int) -> int | None:
    return None if n < 0 else n


@frozen
class Fit:
    dep: object  # hardware.replicas.Deployment: the layout, its replicas and their shares of the batch
    max_context: int | None  # None: not even an empty context fits (at the busiest replica's batch)
    notes: tuple[str, ...]

    @property
    def mem(self):  # hardware.serving.Memory: one GPU of a replica
        return self.dep.memory

    @property
    def gpus(self) -> int:
        return self.dep.layout.gpus

    @property
    def tp(self) -> int:
        return self.dep.layout.tp

    @property
    def batch(self) -> int:
        """Sequences on the busiest replica."""
        return self.dep.share

    @property
    def max_batch(self) -> int:
        return self.dep.max_batch

    @property
    def needed_bytes(self) -> int:
        """On one GPU of the busiest replica."""
        return self.mem.needed_bytes(self.batch)

    @property
    def fits(self) -> bool:
        return self.dep.fits


def analysis_json(a, loaded, hw, fit: Fit) -> dict:
    from planner.analysis.analyze import to_dict

    d = to_dict(a, model_id=loaded.id, source=loaded.source)
    d["model"]["path"] = loaded.resolved.path
    m = fit.mem
    d["memory"].update({
        "hardware": hw.name,
        "gpus": fit.gpus,
        "tp": fit.tp,
        "replicas": fit.dep.layout.dp,
        "layout": fit.dep.to_dict(),
        "layout_text": fit.dep.describe(),
        "capacity_bytes": fit.dep.capacity_bytes,
        "runtime_reserve_bytes": fit.gpus * m.reserve_bytes,
        "usable_bytes": fit.dep.usable_bytes,
        "per_gpu": {"weights_bytes": m.weights_bytes, "kv_bytes": fit.batch * m.kv_bytes_per_sequence,
                    "state_bytes": fit.batch * m.state_bytes_per_sequence,
                    "activation_bytes": fit.batch * m.activation_bytes_per_sequence,
                    "needed_bytes": fit.needed_bytes, "usable_bytes": m.usable_bytes,
                    "capacity_bytes": m.capacity_bytes, "runtime_reserve_bytes": m.reserve_bytes},
        # every GPU as loaded as the busiest replica's: fits == (needed <= usable) == (batch <= max_batch)
        "needed_bytes": fit.dep.needed_bytes,
        "fits": fit.fits,
        "headroom_bytes": fit.dep.usable_bytes - fit.dep.needed_bytes,
        "max_batch": fit.max_batch,
        "max_context": fit.max_context,
    })
    d["notes"] = d["notes"] + list(fit.notes)
    d["hardware"] = hw.to_dict()
    return d


def _pct(part: int, whole: int) -> str:
    return f"{100 * part / whole:.1f}%" if whole else "-"


def analysis_sections(a, loaded, hw, fit: Fit) -> tuple[list[Section], list[str]]:
    from planner.analysis.analyze import attention_summary, ffn_summary, layer_kinds, moe_step

    spec, o, p = a.spec, a.options, a.params
    model = Section(f"{loaded.id}", ["", ""])
    model.add("source", f"{loaded.source}: {loaded.resolved.path}")
    model.add("architecture", f"{spec.model_type}, {spec.num_layers} layers, hidden {spec.hidden_size}, vocab {spec.vocab_size:,}")
    model.add("layers", ", ".join(f"{n}× {k}" for k, n in layer_kinds(spec).items())
              + (f", {len(spec.cross_attention.layers)}× cross-attention (image)" if spec.cross_attention else ""))
    model.add("attention", attention_summary(spec))
    model.add("ffn", ffn_summary(spec))
    assumed = (f" (torch_dtype {short(spec.torch_dtype, 40)} not understood)"
               if spec.torch_dtype else " (torch_dtype absent)")
    model.add("weights", a.fmt.describe() + ("" if a.fmt.source != "default" else assumed))
    model.add("kv cache dtype", a.kv.dtype.name)
    if a.kv.state_bytes_per_sequence:  # the conv windows in the state dtype; a recurrent state may be kept apart
        rec, state = a.kv.recurrent_state_dtype, a.kv.state_dtype.name
        model.add("state dtype", state + (f", recurrent state {rec}" if rec and rec != state else ""))

    params = Section("Parameters", ["", "count", "exact", "share"], right=(1, 2, 3))
    params.add("total", fmt_count(p.total), fmt_int(p.total), "100%")
    if p.active != p.total:
        params.add("active per token", fmt_count(p.active), fmt_int(p.active), _pct(p.active, p.total))
    if p.embedding + p.lm_head > p.non_embedding_active:  # the tables outweigh the rest (Gemma 3n's per-layer
        # embeddings, LongCat-Flash-Lite's n-gram tables): a token reads one row of each, so say what it computes with
        ne = p.non_embedding_active
        params.add("active without embedding / lm_head", fmt_count(ne), fmt_int(ne), _pct(ne, p.total))
    params.add("embedding", fmt_count(p.embedding), fmt_int(p.embedding), _pct(p.embedding, p.total))
    params.add("lm_head" + (" (tied)" if spec.tie_word_embeddings else ""), fmt_count(p.lm_head), fmt_int(p.lm_head), _pct(p.lm_head, p.total))
    params.add("attention / mixers", fmt_count(p.attention + p.ssm), fmt_int(p.attention + p.ssm), _pct(p.attention + p.ssm, p.total))
    if p.mlp:
        params.add("dense MLP", fmt_count(p.mlp), fmt_int(p.mlp), _pct(p.mlp, p.total))
    if p.experts:
        params.add("routed experts", fmt_count(p.experts), fmt_int(p.experts), _pct(p.experts, p.total))
    if p.shared_experts:
        params.add("shared experts", fmt_count(p.shared_experts), fmt_int(p.shared_experts), _pct(p.shared_experts, p.total))
    if p.router:
        params.add("routers", fmt_count(p.router), fmt_int(p.router), _pct(p.router, p.total))
    params.add("norms", fmt_count(p.norm), fmt_int(p.norm), _pct(p.norm, p.total))
    if p.cross_attention:
        params.add("  of which cross-attention layers", fmt_count(p.cross_attention), fmt_int(p.cross_attention),
                   _pct(p.cross_attention, p.total))
    if p.vision:
        params.add("vision encoder + projector", fmt_count(p.vision), fmt_int(p.vision), _pct(p.vision, p.total))
    if p.audio:
        params.add("audio encoder + projector", fmt_count(p.audio), fmt_int(p.audio), _pct(p.audio, p.total))
    if p.mtp:
        params.add("MTP layers (not in total)", fmt_count(p.mtp), fmt_int(p.mtp), "")

    per_layer = Section("Per layer", ["layer kind", "layers", "attention", "MLP / MoE", "norms", "total", "active"],
                        right=(1, 2, 3, 4, 5, 6))
    # one row per kind and figures: layers that differ only where no column shows it (Kimi K3's attention-residual
    # block boundaries) are summed into one row, in order of first appearance
    rows: dict[tuple, int] = {}
    for lp in p.per_layer:
        key = (lp.kind, lp.attention, lp.mlp, lp.norm, lp.total, lp.active)
        rows[key] = rows.get(key, 0) + lp.count
    for (kind, attention, mlp, norm, total, active), count in rows.items():
        per_layer.add(kind, count, fmt_int(attention), fmt_int(mlp), fmt_int(norm), fmt_int(total), fmt_int(active))

    flops = Section("FLOPs", ["", "FLOPs", "exact"], right=(1, 2))
    flops.add(f"decode, per token at context {o.context:,}", fmt_si(a.decode_flops, "FLOP"), fmt_int(a.decode_flops))
    if o.context:
        flops.add(f"prefill of {o.context:,} tokens", fmt_si(a.prefill_flops, "FLOP"), fmt_int(a.prefill_flops))
        flops.add("prefill, per prompt token", fmt_si(a.prefill_flops / o.context, "FLOP"), "")

    kv = Section("KV cache", ["", "bytes", "exact"], right=(1, 2))
    kv.add("per token (all layers)", fmt_bytes(a.kv.bytes_per_token), fmt_int(a.kv.bytes_per_token))
    kv.add(f"per sequence at {o.context:,} tokens", fmt_bytes(a.kv_bytes_per_sequence), fmt_int(a.kv_bytes_per_sequence))
    kv.add(f"{o.batch} sequence(s)", fmt_bytes(a.kv_bytes), fmt_int(a.kv_bytes))
    if a.kv.naive_bytes_per_token != a.kv.bytes_per_token:
        kv.add("per token if MLA were expanded", fmt_bytes(a.kv.naive_bytes_per_token), fmt_int(a.kv.naive_bytes_per_token))
    if a.kv.state_bytes_per_sequence:
        kv.add("recurrent state per sequence", fmt_bytes(a.kv.state_bytes_per_sequence), fmt_int(a.kv.state_bytes_per_sequence))
    x = spec.cross_attention
    if x is not None and x.style == "idefics":  # IDEFICS: transformers caches none of the gated blocks' K/V
        kv.add(f"cross-attention ({len(x.layers)} gated blocks)", "not cached", "K/V recomputed every step")
    elif x is not None:  # mllama: image K/V of the cross-attention layers, per image, not per text token
        per_image = a.kv.cross_bytes_per_image
        kv.add(f"cross-attention, per image ({len(x.layers)} layers × {x.image_tokens:,} image tokens)",
               fmt_bytes(per_image) if per_image is not None else "unknown",
               fmt_int(per_image) if per_image is not None else "")
    windows = sorted({lk.window for lk in a.kv.layers if lk.window})
    if windows:
        kv.caption = f"windowed layers keep at most {', '.join(f'{w:,}' for w in windows)} tokens"

    m = fit.mem
    where = f"{fit.gpus}× {hw.display_name}, {fit.dep.describe()}"
    mem = Section(f"Memory on {where}", ["", "GiB", "bytes"], right=(1, 2))
    mem.add(f"weights ({a.fmt.describe()})", fmt_gib(a.weights_bytes), fmt_int(a.weights_bytes))
    mem.add(f"KV cache ({o.batch} × {o.context:,} tokens)", fmt_gib(a.kv_bytes), fmt_int(a.kv_bytes))
    if a.state_bytes:
        mem.add("recurrent state", fmt_gib(a.state_bytes), fmt_int(a.state_bytes))
    mem.add("total (weights + KV + state)", fmt_gib(a.total_bytes), fmt_int(a.total_bytes))
    mem.add("largest decode activation", fmt_bytes(a.activation_bytes), fmt_int(a.activation_bytes))
    if fit.dep.layout.dp > 1:
        mem.add("sequences on the busiest replica", fmt_int(fit.batch), f"of {o.batch} over {fit.dep.layout.dp} replicas")
    if fit.dep.layout.gpus_per_replica > 1 or fit.dep.layout.dp > 1:
        mem.add("per GPU: weights" + (f" (stage {fit.dep.tightest_stage})" if fit.dep.stages else ""), fmt_gib(m.weights_bytes), fmt_int(m.weights_bytes))
        mem.add("per GPU: KV + state + activations", fmt_gib(fit.needed_bytes - m.weights_bytes), fmt_int(fit.needed_bytes - m.weights_bytes))
    mem.add("GPU memory (each)", fmt_gib(m.capacity_bytes), fmt_int(m.capacity_bytes))
    mem.add("engine's own memory (each)", fmt_gib(m.reserve_bytes), "vLLM: above its 0.9 cap, activation peak, non-torch")
    mem.add("fits", "yes" if fit.fits else "NO", f"headroom {fmt_gib(m.usable_bytes - fit.needed_bytes)} per GPU")
    mem.add(f"max batch at {o.context:,} tokens", fmt_int(fit.max_batch),
            f"{fit.dep.layout.dp} replicas" if fit.dep.layout.dp > 1 else "")
    mem.add(f"max context at batch {fit.batch}" + (" per replica" if fit.dep.layout.dp > 1 else ""), fmt_int(fit.max_context) if fit.max_context is not None else "none", "")

    sections = [model, params, per_layer if len(p.per_layer) > 1 else Section("", []), flops, kv, mem]
    if fit.dep.stages:
        st = Section(f"Memory per GPU of each stage ({fit.dep.layout.label}, vLLM's accounting)",
                     ["stage", "layers", "weights GiB", f"KV + state GiB ({fit.batch} seq)", "usable GiB", "max batch"],
                     right=(0, 2, 3, 4, 5))
        for s, (sm, (lo_, hi_)) in enumerate(zip(fit.dep.stages, fit.dep.layout_plan.stages)):
            st.add(str(s) + (" (tightest)" if s == fit.dep.tightest_stage else ""), f"{lo_}-{hi_ - 1}",
                   fmt_gib(sm.weights_bytes), fmt_gib(sm.needed_bytes(fit.batch) - sm.weights_bytes),
                   fmt_gib(sm.usable_bytes), fmt_int(sm.max_batch()))
        sections.append(st)
    moe = moe_step(spec, o.batch)
    if moe:
        ms = Section("MoE decode step", ["", "value"], right=(1,))
        ms.add(f"experts touched per MoE layer at batch {o.batch}",
               f"{moe['expected_experts_touched_per_layer']:.2f} of {moe['num_experts']}")
        ms.add("weight bytes read per decode step", f"{fmt_gib(a.decode_totals.weight_bytes)}")
        sections.append(ms)

    prov = Section("Config fields", ["field", "status", "value / note"])
    read = [r.field for r in spec.provenance if r.status == "read"]
    for r in spec.provenance:
        if r.status != "read":
            prov.add(r.field, r.status, f"{r.value}" + (f" ({r.note})" if r.note else ""))
    if read:
        prov.caption = "read from the config: " + ", ".join(read)
    sections.append(prov)
    lines = [f"caveat: {c}" for c in spec.caveats] + [f"note: {n}" for n in a.notes + fit.notes]
    return sections, lines


def check_generic_count(spec, total_params: int, rec) -> None:
    """An unknown family analysed as a generic decoder must count what its checkpoint holds: where the
    safetensors headers say otherwise, the generic assumptions are wrong, and that is an error."""
    if not spec.generic or rec is None or rec.checkpoint.elements is None or spec.quant is not None:
        return
    stored = rec.checkpoint.elements
    if stored != total_params:
        from planner.analysis.errors import UnsupportedModelError

        raise UnsupportedModelError(
            f"model_type '{spec.model_type}' is not a known family, and the generic decoder counts "
            f"{total_params:,} parameters where the checkpoint ({rec.checkpoint.source}) holds {stored:,} "
            f"({stored - total_params:+,})",
            "the architecture differs from a Llama-style decoder; see the caveats of the bundled families")
