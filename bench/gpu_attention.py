"""The written-out decode attention of the torch decoder (soft-capped logits, sinks) in several forms, timed.

``runtime.model.SelfAttention.attend`` writes attention out where ``scaled_dot_product_attention`` cannot
express it (Gemma 2's soft-capped logits, gpt-oss's sinks): scores = q·Kᵀ, capped, softmax in fp32, then
p·V. At decode a KV head's query rows are its G query heads (2 for Gemma 2), so both products are
skinny with a long reduction, and on an H200 cuBLAS ran p·V at 1,063 µs a layer for 32k keys (a few
percent of the bandwidth). This prints each form's time per call, its read rate of K and V, and its
largest difference from the first form, for a few (batch, keys) shapes.

    python bench/gpu_attention.py                 # on CUDA
    python bench/gpu_attention.py --device cpu --keys 513 --batches 1
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def forms(chunk: int):
    import torch

    def softmax_capped(s, cap):
        s = torch.tanh(s / cap) * cap
        return torch.softmax(s.float(), dim=-1)

    def v0(q, k, v, scale, cap):  # today: (Q x d)(d x S), then (Q x S)(S x e)
        s = torch.matmul(q, k.transpose(-1, -2)) * scale
        p = softmax_capped(s, cap).to(q.dtype)
        return torch.matmul(p, v)

    def v1(q, k, v, scale, cap):  # tall products: (S x d)(d x Q), then (e x S)(S x Q)
        s = torch.matmul(k, q.transpose(-1, -2)).transpose(-1, -2) * scale
        p = softmax_capped(s, cap).to(q.dtype)
        return torch.matmul(v.transpose(-1, -2), p.transpose(-1, -2)).transpose(-1, -2)

    def chunked_pv(p, v):  # p·V split over the keys in chunks of ``chunk``, summed in fp32 (and the tail)
        B, K, Q, S = p.shape
        e = v.shape[-1]
        n = S // chunk * chunk
        out = torch.matmul(p[..., :n].reshape(B, K, Q, S // chunk, chunk).transpose(2, 3),
                           v[:, :, :n].reshape(B, K, S // chunk, chunk, e)).float().sum(dim=2)
        if n < S:
            out = out + torch.matmul(p[..., n:], v[:, :, n:]).float()
        return out.to(p.dtype)

    def v2(q, k, v, scale, cap):  # v1's scores, the chunked p·V
        s = torch.matmul(k, q.transpose(-1, -2)).transpose(-1, -2) * scale
        return chunked_pv(softmax_capped(s, cap).to(q.dtype), v)

    def v3(q, k, v, scale, cap):  # v0's scores, the chunked p·V
        s = torch.matmul(q, k.transpose(-1, -2)) * scale
        return chunked_pv(softmax_capped(s, cap).to(q.dtype), v)

    return {"v0 today": v0, "v1 tall": v1, f"v2 tall + chunked pV ({chunk})": v2, f"v3 chunked pV ({chunk})": v3}


def all_forms(chunks):
    out = {}
    for i, c in enumerate(chunks):
        for name, fn in forms(c).items():
            if i == 0 or "chunk" in name:
                out[name] = fn
    return out


def main(argv=None) -> int:
    import torch

    from planner.runtime.timing import timed_samples

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    ap.add_argument("--batches", nargs="+", type=int, default=[1, 16])
    ap.add_argument("--keys", nargs="+", type=int, default=[32769, 2049])
    ap.add_argument("--kv-heads", type=int, default=8)
    ap.add_argument("--group", type=int, default=2)
    ap.add_argument("--head-dim", type=int, default=256)
    ap.add_argument("--chunks", nargs="+", type=int, default=[512, 2048])
    ap.add_argument("--reps", type=int, default=10)
    args = ap.parse_args(argv)
    dev = torch.device(args.device)
    dtype = torch.bfloat16 if dev.type == "cuda" else torch.float32
    d, K, G = args.head_dim, args.kv_heads, args.group
    print("| batch | keys | form | µs/call | K+V GB/s | max abs diff vs v0 |")
    print("|---|---|---|---|---|---|")
    for B in args.batches:
        for S in args.keys:
            g = torch.Generator(device="cpu").manual_seed(0)
            q = torch.randn(B, K, G, d, generator=g).to(dev, dtype)
            # a cache buffer one slot longer than the keys, sliced, as runtime/cache.py returns it
            kb = torch.randn(B, K, S + 1, d, generator=g).to(dev, dtype)
            vb = torch.randn(B, K, S + 1, d, generator=g).to(dev, dtype)
            k, v = kb[:, :, :S], vb[:, :, :S]
            ref = None
            for name, fn in all_forms(args.chunks).items():
                with torch.inference_mode():
                    out = fn(q, k, v, d ** -0.5, 50.0)
                    if ref is None:
                        ref = out.float()
                    diff = (out.float() - ref).abs().max().item()
                    for _ in range(3):
                        fn(q, k, v, d ** -0.5, 50.0)
                    t = statistics.median(timed_samples(lambda: fn(q, k, v, d ** -0.5, 50.0), dev, args.reps))
                gbs = 2 * B * K * S * d * kb.element_size() / t / 1e9
                print(f"| {B} | {S} | {name} | {t * 1e6:.1f} | {gbs:.0f} | {diff:.3g} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
