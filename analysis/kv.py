"""KV cache and recurrent state: bytes *stored* per token, per sequence, per batch.

- Attention layer: K and V of every KV head, ``num_key_value_heads · (head_dim + v_head_dim)``
  elements per token (GQA/MQA shrink it; ``head_dim`` is taken from the config when present).
- MLA layer: the compressed latent and the shared rope key, ``kv_lora_rank + qk_rope_head_dim``
  elements per token, as serving engines cache it (``naive_bytes_per_token`` shows what expanded
  per-head K/V would take).
- DeepSeek sparse attention (MLA with a lightning indexer): the latent and rope key plus the indexer's
  key, ``index_head_dim`` elements (at 8 bits and below with one fp32 scale per 128; ``mixers/dsa.py``).
- Sliding-window layers hold at most ``window`` tokens, chunked-attention layers at most one chunk.
- State-space, linear-attention and short-conv layers hold a fixed-size state per sequence,
  independent of context (``state_bytes_per_sequence``), in the activation dtype: the causal-conv
  window (``conv channels × (conv_kernel - 1)``: the current input is not kept, vLLM's convention;
  transformers' own cache keeps ``conv_kernel`` columns) plus the recurrent state (Mamba-2
  ``heads × head_dim × state_size``, Mamba-1 ``d_inner × state_size``, Gated DeltaNet
  ``v_heads × k_head_dim × v_head_dim``). Falcon-H1 layers have both K/V and a state. RecurrentGemma's
  RG-LRU keeps its recurrence (``lru_width``) in fp32 whatever the model dtype, as transformers does
  (``MixerSpec.state_bytes``).

- Cross-attention layers (Llama 3.2 Vision): K and V of the image tokens, once per image
  (``cross_bytes_per_image``: cross layers × 2 × KV heads × head_dim × image tokens), nothing per text
  token; not in ``bytes_per_token`` nor ``bytes_per_sequence``, which are the text tokens'.

- DeepSeek-V4 layers: the window's shared K = V per token (capped at the window) plus one compressed entry
  per ``ratio`` tokens, every entry kept (``LayerKV.compressed``; ``mixers/compressed.py``), and the
  compressor's buffer as a fixed state at its largest.

``bytes_per_token`` is what one token adds across all layers while the context is shorter than every
window; ``bytes_per_sequence(context)`` caps each windowed layer at its window.
"""

from __future__ import annotations

from functools import cached_property

from .records import frozen
from .dtypes import DType
from .spec import ModelSpec


@frozen
class LayerKV:
    layer: int
    kind: str
    window: int | None  # tokens this layer keeps (window or chunk); None: all of them
    bytes_per_token: int
    state_bytes: int  # fixed per-sequence state (recurrent layers)
    # (ratio, bytes per entry): one entry per ``ratio`` tokens, every entry kept (DeepSeek-V4's compressed layers)
    compressed: tuple[tuple[int, int], ...] = ()
    # the dtype of the recurrent part of the state (``MixerSpec.recurrent_dtype``: fp32 where the engine fixes it,
    # KDA, RWKV, RG-LRU, a mamba_ssm_cache_dtype; else the state dtype); None: no recurrent state
    recurrent_dtype: str | None = None

    def tokens_cached(self, context: int) -> int:
        return context if self.window is None else min(context, self.window)

    def compressed_bytes(self, context: int) -> int:
        return sum(per_entry * (context // ratio) for ratio, per_entry in self.compressed)

    def bytes_at(self, context: int) -> int:
        return self.bytes_per_token * self.tokens_cached(context) + self.compressed_bytes(context)

    @property
    def pool_bytes_per_token(self) -> int:
        """What a token costs a paged pool that counts every token alike: ``bytes_per_token`` plus each
        compressed entry's bytes spread over its ``ratio`` tokens (rounded up)."""
        return self.bytes_per_token + sum(-(-per_entry // ratio) for ratio, per_entry in self.compressed)


def layer_kv(spec: ModelSpec, kv_dtype: DType, state_dtype: DType) -> list[LayerKV]:
    """Per layer: K/V bytes per token of its attention (Falcon-H1's parallel attention included) and
    the fixed state of its recurrent part: conv window ``channels × (kernel - 1)`` plus the SSM /
    delta-rule state, each in ``state_dtype`` (vLLM's ``MambaStateShapeCalculator`` shapes)."""
    out: list[LayerKV | None] = [None] * spec.num_layers
    for group in spec.layer_groups:  # identical layers computed once
        layer = spec.layers[group[0]]
        m = layer.mixer  # each mixer says what it caches (analysis.mixers)
        per_token = state = 0
        cap = None
        packed: tuple[tuple[int, int], ...] = ()
        rec_dtype = None
        if m is not None:
            per_token = m.kv_bytes_per_token(kv_dtype)
            state = m.state_bytes(state_dtype)
            cap = m.kv_cap()
            packed = tuple((ratio, kv_dtype.nbytes(elems)) for ratio, elems in m.compressed_kv())
            if m.state_elements()[1]:
                rec_dtype = m.recurrent_dtype(state_dtype).name
        kind = layer.kind
        for i in group:
            out[i] = LayerKV(i, kind, cap, per_token, state, packed, rec_dtype)
    return out  # type: ignore[return-value]


@frozen
class KVCache:
    dtype: DType
    state_dtype: DType
    layers: tuple[LayerKV, ...]
    naive_bytes_per_token: int  # MLA only: expanded per-head K/V; else equal to bytes_per_token
    cross_bytes_per_image: int | None = None  # mllama: K/V of the cross-attention layers for one image

    @property
    def bytes_per_token(self) -> int:
        """Per token while the context is shorter than every window; compressed entries spread over their
        ratio (``LayerKV.pool_bytes_per_token``)."""
        return sum(lk.pool_bytes_per_token for lk in self.layers)

    @cached_property
    def _by_cap(self) -> tuple[tuple[int | None, int], ...]:
        """(window, bytes per token of all layers with that window): one term per distinct cap."""
        out: dict[int | None, int] = {}
        for lk in self.layers:
            out[lk.window] = out.get(lk.window, 0) + lk.bytes_per_token
        return tuple(out.items())

    def bytes_per_sequence(self, context: int) -> int:
        return (sum(per_token * (context if cap is None else min(context, cap)) for cap, per_token in self._by_cap)
                + sum(lk.compressed_bytes(context) for lk in self.layers if lk.compressed))

    @property
    def state_bytes_per_sequence(self) -> int:
        return sum(lk.state_bytes for lk in self.layers)

    def seq_bytes(self, context: int) -> int:
        """Cache bytes one sequence at ``context`` holds: its K/V and the recurrent layers' fixed state."""
        return self.bytes_per_sequence(context) + self.state_bytes_per_sequence

    @property
    def recurrent_state_dtype(self) -> str | None:
        """The dtype the layers keep their recurrent states in (``state_dtype`` holds the conv windows and, unless
        the engine fixes it, these): one name, or the names joined by ``+`` where layers differ; None without any."""
        names = dict.fromkeys(lk.recurrent_dtype for lk in self.layers if lk.recurrent_dtype)
        return "+".join(names) if names else None

    def per_layer(self) -> list[dict]:
        return [
            {"layer": lk.layer, "kind": lk.kind, "window": lk.window, "bytes_per_token": lk.bytes_per_token,
             "state_bytes": lk.state_bytes,
             **({"recurrent_dtype": lk.recurrent_dtype} if lk.recurrent_dtype else {}),
             **({"compressed": [{"ratio": r, "bytes_per_entry": b} for r, b in lk.compressed]} if lk.compressed else {})}
            for lk in self.layers
        ]


def kv_cache(spec: ModelSpec, kv_dtype: DType, state_dtype: DType) -> KVCache:
    layers = tuple(layer_kv(spec, kv_dtype, state_dtype))
    naive = 0
    for group in spec.layer_groups:
        m = spec.layers[group[0]].mixer
        naive += len(group) * (kv_dtype.nbytes(m.expanded_kv_elements_per_token()) if m is not None else 0)
    x = spec.cross_attention
    cross = kv_dtype.nbytes(x.kv_elements_per_image()) if x is not None and x.image_tokens else None
    return KVCache(kv_dtype, state_dtype, layers, naive, cross)
