"""The mixer protocol: what every token mixer answers for itself.

A layer's *mixer* is the part that moves information between tokens: softmax attention, MLA, a
Mamba scan, Gated DeltaNet, a short convolution, or Falcon-H1's attention and Mamba side by side. Each
is a frozen dataclass deriving from ``MixerSpec`` in its own module of ``analysis.mixers``, and that one
module says everything the arithmetic needs to know about it, so nothing else in ``analysis/`` or
``hardware/`` asks which class it holds:

- **identity**: ``kind`` (a ``MixerKind``, the key of the runtime's registry, ``runtime.model.MIXERS``),
  ``title`` (how messages name it), ``module`` (its tensors' sub-module, ``model.layers.N.<module>.*``),
  ``label()`` (the per-layer kind shown by ``analyze`` and the KV table) and ``summary()`` (one phrase
  for the model's description);
- **parameters**: ``tensors(prefix)``, each with its kind (``linear``, ``norm``, ``conv`` ...), from which
  parameter counts, weight bytes and quantized storage are derived;
- **trace**: ``trace(b, i, tensors)`` appends the ops of one forward step of layer ``i`` to the builder
  ``b`` (``analysis.trace``), with their FLOPs, bytes by source and tensor-parallel role
  (``analysis.opkinds.Parallel``); the step's shape (decode or prefill) is ``b.shape``;
- **cache**: ``kv_elements_per_token()`` (what one token adds to the layer's cache),
  ``expanded_kv_elements_per_token()`` (the naive per-head form, MLA), ``kv_cap()`` (tokens kept: a
  window or chunk; None: all), ``state_elements()`` (a fixed per-sequence ``(conv, recurrent)`` state;
  ``state_bytes(state_dtype)`` its bytes),
  ``latent_kv()`` (MLA's ``(latent, rope)`` widths, for engines with their own latent layout),
  ``kv_bytes_per_token(kv_dtype)`` and ``indexer_kv_bytes(kv_dtype)`` (DSA's indexer key cache, which
  engines keep in a format of their own);
- **tensor parallelism**: ``tp_kv_split(tp, layer)`` (how many ways the layer's cache splits over ``tp``
  ranks and how many copies each KV head has; ``OptionError`` when its heads do not split),
  ``tp_shard(tp)`` (the spec of one rank's share, which ``verify --tp`` builds),
  ``tp_replicated_modules`` (projections every rank holds whole), ``tp_kv_modules`` (projections whose
  output is the KV heads: split with the cache, not ``tp`` ways), ``tp_replicated_kv`` (a cache every
  rank holds whole, as MLA's latent) and ``tp_note`` (what ``TPPlan.notes`` says about it);
- **what-ifs and sundries**: ``with_window(window)`` (``analyze --sliding-window``), ``rope_tables()``
  (the ``(rotary dims, theta)`` an engine keeps cos/sin tables for) and ``attention_shape()`` (query
  heads per KV head and head_dim, for the calibrated decode-attention efficiency).

The defaults below are those of a mixer without a per-token cache, a window, RoPE or replicated parts.
"""

from __future__ import annotations

from enum import StrEnum

from ..dtypes import get_dtype
from ..tensors import Tensor


class MixerKind(StrEnum):
    """What a layer's mixer is (a ``StrEnum``: its value is the label the trace and JSON show)."""

    ATTENTION = "attention"
    MLA = "mla"
    SPARSE_MLA = "dsa"  # MLA with DeepSeek sparse attention (a lightning indexer picks the keys)
    MAMBA = "mamba"
    GATED_DELTANET = "gated_deltanet"
    SHORT_CONV = "short_conv"
    ATTENTION_MAMBA = "attention+mamba"
    SHARED_BLOCK_MAMBA = "shared-block+mamba"  # Zamba2: a shared attention block, then Mamba-2
    LIGHTNING = "lightning"  # MiniMax lightning attention (linear attention, a d x d state per head)
    COMPRESSED_MQA = "compressed_mqa"  # DeepSeek-V4: shared-KV MQA, sliding window + compressed entries
    KDA = "kda"  # Ling 3: Kimi Delta Attention (the gated delta rule with a per-channel decay)
    INKLING = "inkling"  # Inkling / Inkling-2: relative-bias attention with short convs on K, V and outputs
    HYPER_BLOCK = "hyper_block"  # Qwen4-Exp: Gated DeltaNet or QSA attention inside gated hyper-connections
    BLOCK_SPARSE = "block_sparse"  # MiniMax-M3: GQA attention over the key blocks a lightning indexer selects
    INDEXED = "indexed_attention"  # Kolibri 1.1: NoPE GQA attention over the keys a weightless indexer selects
    DOGE = "doge"  # SmallDoge: GQA attention with a dynamic mask (a per-key bias from the cached values)
    MLSTM = "mlstm"  # xLSTM: the mLSTM matrix memory (linear attention with exponential input gates)
    MOA = "moa"  # JetMoE: mixture of attention heads (routed query / output experts, shared K/V)
    DIFF_ATTENTION = "diff_attention"  # DiffLlama: differential attention (head pairs subtracted by λ)
    RG_LRU = "rg_lru"  # RecurrentGemma / Griffin: a gated linear recurrence behind a temporal conv
    RWKV = "rwkv"  # RWKV-4: time-mix (WKV, a per-channel decay) and channel-mix behind a one-token time shift
    RWKV5 = "rwkv5"  # RWKV-5 Eagle: a matrix-valued WKV state per head, static token shift and decay
    RWKV6 = "rwkv6"  # RWKV-6 Finch: a matrix-valued WKV state per head, data-dependent shift and decay (LoRAs)
    RWKV7 = "rwkv7"  # RWKV-7 Goose: the generalized delta rule over a matrix-valued state per head
    MFA = "mfa"  # StepFun Step-3: multi-matrix factorization attention (low-rank query, one shared KV head)
    LINEAR_REPLACEMENT = "linear"  # Nemotron-NAS: a sub-block replaced by one hidden x hidden Linear
    LOCAL_STRIDED = "local_strided"  # Phi-3-small: block-sparse attention, local blocks + vertical strides
    CCA = "cca"  # Zyphra ZAYA: compressed convolutional attention (q/k convs, half-delayed V)
    NGPT_ATTENTION = "ngpt_attention"  # NVIDIA Dory: AFMoE's gated attention on nGPT's unit sphere (sqk, s_gate)
    HRM_ATTENTION = "hrm_attention"  # HRM: MHA with a (biased) sigmoid gate per output feature, weightless norms
    VISUAL_EXPERT = "visual_expert"  # CogVLM / CogVLM2: attention + MLP beside a vision expert's run on image tokens
    JET_BLOCK = "jet_block"  # Jet-Nemotron: the gated delta rule with a dynamic (generated per token) conv on V
    GMU = "gmu"  # SambaY (Phi-4-mini-flash): a gated memory unit reading an earlier Mamba layer's scan output
    DUAL_FFN = "dual_ffn"  # Higgs Audio v2: attention + an audio path (norms, MLP) beside the text one
    CONV_KV_ATTENTION = "conv_kv_attention"  # Baichuan-M1: attention whose K and V pass a causal 2-tap conv over time


class MixerSpec:
    """Base of every mixer spec (see the module doc). Subclasses are ``@frozen`` dataclasses; these class
    attributes and methods are the protocol's defaults."""

    kind: MixerKind
    title: str
    module = "mixer"  # the layer's sub-module that holds the mixer's tensors
    window: int | None = None  # keys a query sees (sliding window); None: all
    chunk: int | None = None  # chunked attention's chunk; None: not chunked
    tp_replicated_modules: tuple[str, ...] = ()
    tp_kv_modules: tuple[str, ...] = ()
    tp_replicated_kv = False
    tp_note: str | None = None
    #: the mixer holds the block's feed-forward too (RWKV's channel-mix shares the time shift): the layer has no
    #: ``ffn`` and is not "mixer-only"
    includes_ffn = False
    #: all-reduces the mixer's outputs take under tensor parallelism (one per row-parallel output projection;
    #: RWKV-4: the time mix's and the channel mix's)
    tp_allreduces = 1
    #: the fp8 layout of a latent cache the mixer's serving kernels dictate whatever the engine (DSA: FlashMLA's
    #: sparse kernels), as the engine profiles' ``mla_fp8``; None: the engine profile's
    fp8_latent_layout: dict | None = None

    # ---- identity --------------------------------------------------------------------------------

    def label(self) -> str:
        """The layer kind this mixer gives (``Layer.kind`` adds the FFN's suffix)."""
        return self.kind.value

    def summary(self) -> str:
        return self.title

    # ---- parameters and trace --------------------------------------------------------------------

    def tensors(self, prefix: str) -> list[Tensor]:
        raise NotImplementedError

    def trace(self, b, i: int, tensors: dict[str, list[Tensor]]) -> None:
        """Append the ops of layer ``i``'s mixer for the step ``b.shape`` to the trace builder ``b``;
        ``tensors``: the layer's tensors keyed by their module's short name (``trace.group_tensors``)."""
        raise NotImplementedError

    # ---- cache -----------------------------------------------------------------------------------

    def kv_elements_per_token(self) -> int:
        """Elements one token adds to this layer's cache (0: none per token)."""
        return 0

    def expanded_kv_elements_per_token(self) -> int:
        """What a naive cache of expanded per-head K and V would hold per token (MLA); else the cache's."""
        return self.kv_elements_per_token()

    def kv_bytes_per_token(self, kv_dtype) -> int:
        """Bytes one token adds to this layer's cache in ``kv_dtype`` (what ``analysis.kv`` counts): its
        elements in that dtype, unless part of the cache carries scales of its own (DSA's indexer keys)."""
        return kv_dtype.nbytes(self.kv_elements_per_token())

    def indexer_kv_bytes(self, kv_dtype=None) -> int:
        """Bytes per token of a separate key cache that selects what attention reads (DeepSeek sparse
        attention's indexer), included in ``kv_bytes_per_token``: in ``kv_dtype``, or (``None``) as serving
        engines lay it out whatever their KV dtype; 0: none."""
        return 0

    def kv_cap(self) -> int | None:
        """Tokens the per-token cache keeps (a window or a chunk); None: every token."""
        return None

    def compressed_kv(self) -> tuple[tuple[int, int], ...]:
        """(ratio, elements per entry) of caches that grow by one entry per ``ratio`` tokens and keep every
        entry (DeepSeek-V4's compressed layers); none elsewhere."""
        return ()

    def state_elements(self) -> tuple[int, int]:
        """(conv window, recurrent state) elements kept per sequence, whatever the context."""
        return 0, 0

    def state_bytes(self, state_dtype) -> int:
        """Bytes of that fixed state in ``state_dtype`` (what ``analysis.kv`` counts): both parts in that dtype,
        unless the mixer keeps part of it in a dtype of its own (RG-LRU: its recurrence in fp32; a recurrent
        state whose dtype the engine fixes, ``recurrent_dtype``)."""
        conv, rec = self.state_elements()
        return state_dtype.nbytes(conv) + self.recurrent_dtype(state_dtype).nbytes(rec)

    def recurrent_dtype(self, state_dtype):
        """The dtype of the recurrent (temporal) part of the state: ``state_dtype``, unless the mixer carries an
        ``ssm_state_dtype`` that serving engines fix whatever the model dtype (vLLM's ``MambaStateDtypeCalculator``:
        KDA's state always fp32; ``mamba_ssm_cache_dtype``, which NemotronH's and Qwen3.5's config hooks set
        from the checkpoint's config)."""
        fixed = getattr(self, "ssm_state_dtype", None)
        return get_dtype(fixed) if fixed else state_dtype

    def latent_kv(self) -> tuple[int, int] | None:
        """(latent, rope key) widths of a latent cache (MLA); None for any other cache."""
        return None

    # ---- tensor parallelism ----------------------------------------------------------------------

    def tp_kv_split(self, tp: int, layer: int) -> tuple[int, int]:
        """(ways the per-token cache splits, copies of each KV head) over ``tp`` ranks; raises
        ``OptionError`` when the mixer's heads do not split ``tp`` ways."""
        return tp, 1

    def tp_shard(self, tp: int) -> "MixerSpec":
        """The spec of one rank's share over ``tp`` ranks (the torch runtime's shard; ``tp_kv_split``
        has accepted ``tp``)."""
        raise NotImplementedError(f"no tensor-parallel shard of {self.title} layers is modelled")

    # ---- what-ifs and sundries -------------------------------------------------------------------

    def with_window(self, window: int) -> "MixerSpec | None":
        """This mixer with a sliding window of ``window`` keys (``analyze --sliding-window``): itself
        where there is nothing to window; None where a window would apply but is not modelled."""
        return self

    def rope_tables(self) -> tuple[tuple[int, float], ...]:
        """(rotary dims, theta) of the RoPE this mixer applies, one per cos/sin table an engine keeps."""
        return ()

    def inactive_params(self) -> int:
        """Parameters of the mixer one token does not use (JetMoE's unrouted attention experts); 0: all used."""
        return 0

    def attention_shape(self) -> tuple[int, int] | None:
        """(query heads per KV head, head_dim) of softmax attention; None for other mixers."""
        return None
