"""Host time of vLLM V0's per-step sampler token copies, measured on this machine: the figure behind
``timing.sampler_token_cost`` in profiles/engines/vllm-v0-early.yaml.

``python bench/sampler_copy.py [--repeats 5]`` (needs torch: the ``runtime`` extra) prints one row per batch shape
and the median cost per token the batch holds.

What it times, per step and batch (``seqs`` sequences of ``prompt`` + ``output`` tokens):

- **list** -- vLLM 0.2.6-0.4.x (``vllm/model_executor/sampling_metadata.py``, ``SamplingTensors.from_lists``; the
  sampler calls it every step, penalties or not, until PR #5289 "Avoid copying prompt/output tokens if no penalties
  are used" (v0.5.0) put it behind the penalties): each sequence's prompt and output token lists padded to the
  longest with ``tokens + [vocab_size] * (max_len - len(tokens))``, then ``torch.tensor(..., dtype=torch.long)``
  for the prompts and again for the outputs.
- **array** -- vLLM 0.5.5-0.7.x, which copies only with penalties: ``array('l')`` rows into ``np.full`` then
  ``torch.from_numpy`` (``vllm/utils.py`` ``make_tensor_with_pad``); shown for the contrast, not priced.

Both leave out what needs a GPU: the copy into pinned memory (``pin_memory=True``) and the transfer, which add to
the list path's cost, so the figure is a floor. Timings are the best of ``--repeats`` runs of each shape.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from array import array

SHAPES = ((1, 1024, 512), (1, 4096, 512), (10, 1024, 512), (10, 4096, 512), (38, 1024, 512), (38, 4096, 512),
          (64, 512, 256), (256, 512, 256))
VOCAB = 128_256  # Llama 3's (the pad id)


def list_path(prompts: list, outputs: list):
    import torch

    pm = max(len(t) for t in prompts)
    pp = [t + [VOCAB] * (pm - len(t)) for t in prompts]
    om = max(len(t) for t in outputs)
    po = [t + [VOCAB] * (om - len(t)) for t in outputs]
    return torch.tensor(pp, dtype=torch.long), torch.tensor(po, dtype=torch.long)


def array_path(prompts: list, outputs: list):
    import numpy as np
    import torch

    out = []
    for rows in (prompts, outputs):
        m = max(len(r) for r in rows)
        padded = np.full((len(rows), m), VOCAB, dtype=np.int64)
        for i, r in enumerate(rows):
            padded[i, :len(r)] = r
        out.append(torch.from_numpy(padded))
    return out


def best_s(fn, *args, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn(*args)
        best = min(best, time.perf_counter() - t0)
    return best


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args(argv)
    if args.repeats < 1:
        print("Error: --repeats must be >= 1", file=sys.stderr)
        return 2
    import importlib.util

    if importlib.util.find_spec("torch") is None:
        print("Error: bench/sampler_copy.py needs torch (pip install -e '.[runtime]')", file=sys.stderr)
        return 2
    rng = random.Random(0)
    print("| seqs | prompt | output | tokens held | list path (0.2.6-0.4.x) | ns per token | array path (0.5.5-0.7.x) "
          "| ns per token |")
    print("|---|---|---|---|---|---|---|---|")
    per_token = []
    for seqs, prompt, output in SHAPES:
        prompts = [[rng.randrange(VOCAB) for _ in range(prompt)] for _ in range(seqs)]
        outputs = [[rng.randrange(VOCAB) for _ in range(output)] for _ in range(seqs)]
        held = seqs * (prompt + output)
        t_list = best_s(list_path, prompts, outputs, repeats=args.repeats)
        t_arr = best_s(array_path, [array("l", p) for p in prompts], [array("l", o) for o in outputs],
                       repeats=args.repeats)
        per_token.append(t_list / held)
        print(f"| {seqs} | {prompt:,} | {output:,} | {held:,} | {t_list * 1e3:.2f} ms | {t_list / held * 1e9:.0f} "
              f"| {t_arr * 1e3:.3f} ms | {t_arr / held * 1e9:.1f} |")
    print(f"\nmedian, list path: {statistics.median(per_token) * 1e9:.0f} ns per token held "
          "(without the pinned copy and the transfer: a floor)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
