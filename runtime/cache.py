"""The static KV cache: preallocated once, its bytes exactly ``analysis.kv``'s.

Per attention layer, K (B, K, C, d) and V (B, K, C, e); per MLA layer the normalised latent and the
roped key of each token, (B, C, L + P). ``C`` is the capacity the cache was sized for, except in
sliding-window and chunked layers, which keep ``min(capacity, window or chunk)`` slots as a ring
buffer (position ``p`` lives in slot ``p mod C``). So the allocated bytes are
``kv_cache(spec, dtype, dtype).bytes_per_sequence(capacity) × batch``.

``update`` writes the step's keys and returns exactly the keys its queries may see:

- decode (T = 1): a slice of the buffer with exactly ``min(p+1, window)`` keys (``p mod chunk + 1``
  in a chunked layer, ``p+1`` in a full one), and no mask (every key in the slice is visible);
- prefill (T > 1): the keys with their positions, for the causal / window / chunk mask.

Shape suffixes as in ``runtime.model`` (B batch, K KV heads, C slots, S keys returned, T new tokens).
"""

from __future__ import annotations

import torch

from planner.analysis.errors import OptionError
from planner.analysis.spec import MLA, Attention, GatedDeltaNet, ModelSpec


class AttentionKV:
    def __init__(self, m: Attention, batch: int, capacity: int, dtype, device):
        cap = m.kv_cap()
        self.window, self.chunk, self.capacity = m.window, m.chunk, capacity
        self.slots = capacity if cap is None else min(capacity, cap)
        self.k_BKCd = torch.empty(batch, m.num_key_value_heads, self.slots, m.head_dim, dtype=dtype, device=device)
        self.v_BKCe = torch.empty(batch, m.num_key_value_heads, self.slots, m.v_head_dim, dtype=dtype, device=device)

    def tensors(self) -> list[torch.Tensor]:
        return [self.k_BKCd, self.v_BKCe]

    def update(self, k_BKTd: torch.Tensor, v_BKTe: torch.Tensor, pos0: int):
        T, C = k_BKTd.shape[2], self.slots
        end = pos0 + T
        _check(end, self.capacity)
        ring = C < self.capacity
        if not ring or end <= C:  # slot = position
            self.k_BKCd[:, :, pos0:end] = k_BKTd
            self.v_BKCe[:, :, pos0:end] = v_BKTe
            kpos_S = None if T == 1 else torch.arange(end, device=k_BKTd.device)
            return self.k_BKCd[:, :, :end], self.v_BKCe[:, :, :end], kpos_S
        if T == 1:  # the ring has wrapped: every slot is in the window; the chunk's slots start at 0
            slot = pos0 % C
            self.k_BKCd[:, :, slot:slot + 1] = k_BKTd
            self.v_BKCe[:, :, slot:slot + 1] = v_BKTe
            n = C if self.window else pos0 % C + 1
            return self.k_BKCd[:, :, :n], self.v_BKCe[:, :, :n], None
        # a prefill crossing the ring: old keys with their positions, then the new ones; the mask decides
        dev = k_BKTd.device
        n_old = min(pos0, C)
        s = torch.arange(n_old, device=dev)
        kpos_old = pos0 - 1 - torch.remainder(pos0 - 1 - s, C)
        keys_BKSd = torch.cat((self.k_BKCd[:, :, :n_old], k_BKTd), dim=2)
        vals_BKSe = torch.cat((self.v_BKCe[:, :, :n_old], v_BKTe), dim=2)
        kpos_S = torch.cat((kpos_old, torch.arange(pos0, end, device=dev)))
        keep = min(T, C)
        slots = torch.remainder(torch.arange(end - keep, end, device=dev), C)
        self.k_BKCd.index_copy_(2, slots, k_BKTd[:, :, T - keep:])
        self.v_BKCe.index_copy_(2, slots, v_BKTe[:, :, T - keep:])
        return keys_BKSd, vals_BKSe, kpos_S


class LatentKV:
    def __init__(self, m: MLA, batch: int, capacity: int, dtype, device):
        self.capacity = capacity
        self.lat_BCX = torch.empty(batch, capacity, m.kv_lora_rank + m.qk_rope_head_dim, dtype=dtype, device=device)

    def tensors(self) -> list[torch.Tensor]:
        return [self.lat_BCX]

    def update(self, lat_BTX: torch.Tensor, pos0: int):
        T = lat_BTX.shape[1]
        end = pos0 + T
        _check(end, self.capacity)
        self.lat_BCX[:, pos0:end] = lat_BTX
        kpos_S = None if T == 1 else torch.arange(end, device=lat_BTX.device)
        return self.lat_BCX[:, :end], kpos_S


class DeltaNetState:
    """A Gated DeltaNet layer's per-sequence state: the conv window, the last ``kernel - 1`` inputs of
    every conv channel (B, X, W-1), and the recurrent state (B, Hv, dk, dv): ``analysis.kv``'s
    ``state_bytes``. The mixer updates both in place; a step at position 0 starts from zeros."""

    def __init__(self, m: GatedDeltaNet, batch: int, capacity: int, dtype, device):
        self.capacity = capacity
        self.conv_BXW = torch.zeros(batch, m.conv_dim, m.conv_kernel - 1, dtype=dtype, device=device)
        # the recurrent state in the dtype the spec fixes (Qwen3.5: mamba_ssm_dtype), as analysis.kv counts it
        fixed = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}.get(m.ssm_state_dtype, dtype)
        self.state_BHde = torch.zeros(batch, m.num_v_heads, m.head_k_dim, m.head_v_dim, dtype=fixed, device=device)

    def tensors(self) -> list[torch.Tensor]:
        return [self.conv_BXW, self.state_BHde]

    def check(self, pos0: int, tokens: int) -> None:
        _check(pos0 + tokens, self.capacity)


def _check(end: int, capacity: int) -> None:
    if end > capacity:
        raise OptionError(f"position {end - 1} is beyond the KV cache's capacity of {capacity} tokens",
                          "size the cache for the context plus the tokens to decode")


class KVCache:
    """One ``AttentionKV`` / ``LatentKV`` / ``DeltaNetState`` per layer (None for layers without a cache).
    ``only``: the layers this cache holds (a pipeline stage's, ``runtime.pipeline``); the others are None."""

    def __init__(self, spec: ModelSpec, batch: int, capacity: int, dtype=torch.float32, device="cpu",
                 only: range | None = None):
        if batch < 1 or capacity < 1:
            raise OptionError(f"a KV cache needs batch >= 1 and capacity >= 1, got {batch} and {capacity}")
        self.batch, self.capacity, self.dtype = batch, capacity, dtype
        from .model import MIXERS  # (the registry of mixer kinds; runtime.model imports this module)

        self.layers: list = []
        for i, layer in enumerate(spec.layers):
            m = layer.mixer
            if only is not None and i not in only:
                self.layers.append(None)
            elif m is None or m.kind not in MIXERS or (not m.kv_elements_per_token() and not any(m.state_elements())):
                self.layers.append(None)  # nothing to keep (a Gemma 4 shared-KV layer reads another's cache)
            else:
                self.layers.append(MIXERS[m.kind].cache(m, batch, capacity, dtype, device))

    def tensors(self) -> list[torch.Tensor]:
        return [t for lc in self.layers if lc is not None for t in lc.tensors()]

    @property
    def nbytes(self) -> int:
        """Bytes allocated for the cache (every tensor's ``numel × element size``)."""
        return sum(t.numel() * t.element_size() for t in self.tensors())

    @torch.no_grad()
    def fill_random_(self, seed: int = 0, std: float = 1.0) -> None:
        """Stand-in contents for a context that was never prefilled: decode timing does not depend on the
        values, and random keys keep the softmax (and MoE routing downstream) away from degenerate cases."""
        for i, t in enumerate(self.tensors()):
            g = torch.Generator(device=t.device).manual_seed((seed + i) % 2**64)  # --seed reaches 2**64 - 1
            t.normal_(0.0, std, generator=g)
