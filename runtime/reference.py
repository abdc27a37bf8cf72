"""``planner verify MODEL --weights DIR --reference transformers``: a user's checkpoint through the
built-in decoder and through ``transformers``, side by side.

1. The prompt is tokenized with the folder's own tokenizer (``AutoTokenizer``, local files only, never
   remote code).
2. The checkpoint is loaded into the decoder (``load_checkpoint``) and into ``transformers``'
   ``AutoModelForCausalLM`` (``trust_remote_code=False``, local files only), both in the same dtype.
3. Both run the whole prompt at once; the logits of every position are compared: max |Δlogit| with a
   pass/fail tolerance (``tolerance``), and top-1 agreement (the share of positions whose argmax is
   the same).
4. Both continue the prompt greedily for ``new_tokens`` tokens: the decoder through its KV cache (one
   prefill, then decode steps, as ``verify`` times them), ``transformers`` by recomputing the whole
   sequence each step (its plainest path), so the comparison also covers our cache.

Tolerances: fp32 passes at max |Δlogit| <= 1e-3 (two fp32 implementations of the same arithmetic differ
by summation order only: ~1e-6 relative per op, far below 1e-3 on logits of magnitude ~10). bf16 and fp16
keep 8 and 11 significant bits; the two implementations round intermediate results to that precision at
different points (fused vs separate ops, where the fp32 upcasts sit), and such differences compound
over the layers, so the tolerance there is 8 units in the last place at the largest reference logit
(``8 × 2^-8 × max|logit|`` for bf16, ``8 × 2^-11 × max|logit|`` for fp16), and top-1 agreement matters
more than the exact figure.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

from planner.analysis.errors import OptionError, RuntimeUnavailableError
from planner.analysis.spec import ModelSpec

DEFAULT_PROMPT = "The capital of France is Paris. The capital of Germany is"
#: the prompt tokens the check takes: both models prefill it whole (masks and scores of tokens × tokens)
MAX_PROMPT_TOKENS = 4096
FP32_TOLERANCE = 1e-3
SIGNIFICAND_BITS = {"bf16": 8, "fp16": 11}  # including the implicit bit
ULPS = 8


@dataclass(frozen=True)
class ReferenceResult:
    dtype: str
    prompt: str
    prompt_tokens: int
    max_abs_diff: float
    max_abs_logit: float
    tolerance: float
    tolerance_rule: str
    top1_agree: int  # positions whose argmax agrees
    ours_tokens: tuple[int, ...]
    ref_tokens: tuple[int, ...]
    ours_text: tuple[str, ...]
    ref_text: tuple[str, ...]
    loaded_tensors: int
    seconds: float
    reference: str  # "transformers <version>"

    @property
    def passed(self) -> bool:
        return self.max_abs_diff <= self.tolerance

    @property
    def top1_fraction(self) -> float:
        return self.top1_agree / self.prompt_tokens if self.prompt_tokens else 0.0

    @property
    def first_divergence(self) -> int | None:
        """Index of the first greedy token that differs, None when all agree."""
        return next((i for i, (a, b) in enumerate(zip(self.ours_tokens, self.ref_tokens)) if a != b), None)

    def to_dict(self) -> dict:
        return {"reference": self.reference, "dtype": self.dtype, "prompt": self.prompt,
                "prompt_tokens": self.prompt_tokens,
                "max_abs_logit_diff": self.max_abs_diff if math.isfinite(self.max_abs_diff) else None,
                "max_abs_logit": self.max_abs_logit, "tolerance": self.tolerance, "tolerance_rule": self.tolerance_rule,
                "passed": self.passed, "top1_agree": self.top1_agree, "top1_fraction": self.top1_fraction,
                "greedy": {"ours": list(self.ours_tokens), "reference": list(self.ref_tokens),
                           "ours_text": list(self.ours_text), "reference_text": list(self.ref_text),
                           "first_divergence": self.first_divergence},
                "loaded_tensors": self.loaded_tensors, "seconds": self.seconds}


def tolerance(dtype: str, max_abs_logit: float) -> tuple[float, str]:
    """(max |Δlogit| allowed, the rule in words) for a comparison in ``dtype`` (see the module doc)."""
    if dtype == "fp32":
        return FP32_TOLERANCE, "fp32: 1e-3 absolute"
    bits = SIGNIFICAND_BITS[dtype]
    tol = max(FP32_TOLERANCE, ULPS * 2.0 ** -bits * max_abs_logit)
    return tol, f"{dtype}: {ULPS} units in the last place at the largest logit ({ULPS} × 2^-{bits} × {max_abs_logit:.3g})"


def _memory_guard(spec: ModelSpec, dtype: str, device, tokens: int) -> None:
    """``runtime.verify.memory_guard`` before either model is built: two copies of the weights (ours and
    transformers'), our KV cache of ``tokens`` and the prefill's workspace; a config larger than the checkpoint is
    refused here, before its shapes are compared with the checkpoint's."""
    from planner.analysis.kv import kv_cache
    from planner.analysis.trace import step_ops
    from planner.analysis.weights import weight_format

    from .calibrate import free_memory_bytes
    from .verify import memory_guard, workspace_bytes

    fmt, _ = weight_format(spec, dtype)
    kvc = kv_cache(spec, fmt.act, fmt.act)
    ops = step_ops(spec, fmt, fmt.act, batch=1, new_tokens=tokens, cached_tokens=0)
    # verify --reference has no --batch or --context: name what can change (the checkpoint is the model)
    other = "cpu" if device.type == "cuda" else "cuda"
    hint = (f"the checkpoint is held twice (planner's model and transformers'): free {device.type} memory, or run "
            f"where more is free (--device {other})"
            + (", or compare in --dtype bf16 (half of fp32's bytes)" if dtype == "fp32" else ""))
    memory_guard(weights_bytes=2 * fmt.bytes_of(spec.tensors()),
                 kv_bytes_at=kvc.seq_bytes, batch=1,
                 context=tokens, workspace=workspace_bytes(ops, tokens, spec.vocab_size, fmt.act.bits // 8),
                 free_bytes=free_memory_bytes(device), device=device.type, hint=hint)


def run_reference(spec: ModelSpec, weights: str, *, config: dict | None, dtype: str = "fp32", device: str = "cpu",
                  prompt: str = DEFAULT_PROMPT, new_tokens: int = 20, progress=None) -> ReferenceResult:
    """Compare the decoder with ``transformers`` on the checkpoint in ``weights`` (see the module doc)."""
    from . import require_torch

    torch = require_torch()
    t_start = time.perf_counter()
    progress = progress or (lambda *a: None)
    if new_tokens < 1:
        raise OptionError(f"--new-tokens must be >= 1, got {new_tokens}")
    if spec.quant is not None:
        raise RuntimeUnavailableError(
            f"the reference check loads full-precision weights; this checkpoint is quantized "
            f"({spec.quant.raw_method or spec.quant.method})", "omit --reference, or use an unquantized checkpoint")
    try:
        import transformers
        from transformers import AutoModelForCausalLM, AutoTokenizer
    except ImportError:
        raise RuntimeUnavailableError("--reference transformers needs the transformers package",
                                      "pip install transformers") from None
    from .cache import KVCache
    from .load import checkpoint_files, load_checkpoint
    from .model import build_decoder

    checkpoint_files(weights)  # a clear error for a folder without safetensors, before anything loads
    tdtype = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[dtype]
    dev = torch.device(device)
    transformers.logging.set_verbosity_error()
    transformers.utils.logging.disable_progress_bar()  # stderr carries only our progress and errors
    progress("reference", 0, 4)
    try:
        tok = AutoTokenizer.from_pretrained(weights, local_files_only=True, trust_remote_code=False)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise RuntimeUnavailableError(f"cannot load the tokenizer in {weights}: {str(exc).splitlines()[0][:200]}",
                                      "the folder needs tokenizer.json (or the tokenizer files of its model)") from None
    ids = tok(prompt, return_tensors="pt")["input_ids"].to(dev)
    if ids.shape[1] < 1:
        raise OptionError("the prompt tokenizes to no tokens", "give a longer --prompt")
    if ids.shape[1] > MAX_PROMPT_TOKENS:
        raise OptionError(f"the prompt tokenizes to {ids.shape[1]:,} tokens; the reference check takes at most "
                          f"{MAX_PROMPT_TOKENS:,}", "give a shorter --prompt")
    if int(ids.max()) >= spec.vocab_size:
        raise RuntimeUnavailableError(f"the tokenizer produced token id {int(ids.max())}, beyond the model's vocabulary "
                                      f"({spec.vocab_size})", "the tokenizer does not belong to this checkpoint")
    T = int(ids.shape[1])
    _memory_guard(spec, dtype, dev, int(ids.shape[1]) + new_tokens)
    progress("reference", 1, 4)
    ours = build_decoder(spec, dtype=tdtype, device=dev, seed=None)
    report = load_checkpoint(ours, weights)
    try:
        ref = AutoModelForCausalLM.from_pretrained(weights, dtype=tdtype, local_files_only=True, trust_remote_code=False)
    except (OSError, ValueError, KeyError, TypeError, RuntimeError) as exc:
        raise RuntimeUnavailableError(f"transformers cannot load {weights}: {str(exc).splitlines()[0][:200]}",
                                      "the reference needs a model class built into transformers (no remote code)") from None
    ref = ref.to(dev).eval()
    progress("reference", 2, 4)
    with torch.inference_mode():
        ours_logits = ours(ids, 0, None, all_logits=True).float()[0]  # (T, V)
        ref_logits = ref(input_ids=ids).logits.float()[0]
        V = min(ours_logits.shape[-1], ref_logits.shape[-1])  # some checkpoints pad the head beyond the tokenizer
        diff = (ours_logits[:, :V] - ref_logits[:, :V]).abs()
        max_diff = float(diff.max())
        max_logit = float(ref_logits.abs().max())
        agree = int((ours_logits[:, :V].argmax(-1) == ref_logits[:, :V].argmax(-1)).sum())
        progress("reference", 3, 4)
        # greedy: ours through the KV cache (prefill, then decode steps); transformers recomputing the prefix
        cache = KVCache(spec, 1, T + new_tokens, tdtype, dev)
        nxt = ours(ids, 0, cache).argmax(-1)  # (1,)
        ours_tokens = [int(nxt)]
        for p in range(T, T + new_tokens - 1):
            nxt = ours.decode(nxt[:, None], p, cache)
            ours_tokens.append(int(nxt))
        seq = ids
        ref_tokens = []
        for _ in range(new_tokens):
            t_next = ref(input_ids=seq).logits[0, -1].argmax(-1)
            ref_tokens.append(int(t_next))
            seq = torch.cat((seq, t_next.view(1, 1)), dim=1)
    progress("reference", 4, 4)
    if not math.isfinite(max_diff):
        max_diff = float("inf")
    tol, rule = tolerance(dtype, max_logit)

    def text(t: int) -> str:
        return tok.decode([t])

    return ReferenceResult(dtype, prompt, T, max_diff, max_logit, tol, rule,
                           agree, tuple(ours_tokens), tuple(ref_tokens), tuple(map(text, ours_tokens)),
                           tuple(map(text, ref_tokens)), report.loaded, time.perf_counter() - t_start,
                           f"transformers {transformers.__version__}")
