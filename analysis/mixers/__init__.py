"""Token mixers, one module each: the spec of the mixer and everything the arithmetic derives from it
(tensors, trace ops, KV cache and recurrent state, tensor-parallel split), behind the protocol of
``base.MixerSpec``. Adding a mixer is one module here and one line in ``MIXER_TYPES`` (and, for the
torch runtime, one entry of ``runtime.model.MIXERS``); README, "Contributing: adding a mixer"."""

from __future__ import annotations

from typing import Union

from .attention import Attention, GatedAttention, attended_keys, distinct_keys
from .base import MixerKind, MixerSpec
from .block_sparse import BlockSparseAttention
from .doge import DogeAttention
from .compressed import CompressedMQA
from .deltanet import GatedDeltaNet
from .dsa import SparseMLA
from .hyper_block import HyperBlock
from .hybrid import ParallelHybrid
from .inkling import InklingAttention
from .kda import KimiDeltaAttention
from .lightning import LightningAttention
from .bailing_linear import BailingLinearAttention
from .mlstm import MLSTM
from .mamba import Mamba
from .mla import MLA
from .short_conv import ShortConv
from .zamba import SharedBlockMamba
from .moa import MixtureOfAttention
from .diff_attention import DiffAttention
from .rglru import RGLRU
from .rwkv import RWKV4
from .rwkv6 import RWKV5, RWKV6
from .rwkv7 import RWKV7
from .mfa import MFAttention
from .linear_replacement import LinearReplacement
from .local_strided import LocalStridedAttention
from .plamo2 import Plamo2Mamba
from .lfa import LFAttention
from .cca import CCAttention
from .visual_expert import VisualExpertAttention
from .jetblock import JetBlock
from .loop_gated import LoopGatedAttention
from .sambay import GatedMemoryUnit, SambaYDiffAttention
from .dual_ffn import DualFFNAttention
from .conv_kv import ConvKVAttention
from .indexed import IndexedAttention

#: Every mixer spec class: what tensor-parallel tables collect over (``analysis.parallel``).
MIXER_TYPES: tuple[type[MixerSpec], ...] = (Attention, GatedAttention, MLA, SparseMLA, Mamba, GatedDeltaNet,
                                            ShortConv, ParallelHybrid, SharedBlockMamba, LightningAttention,
                                            BailingLinearAttention,
                                            CompressedMQA, InklingAttention, HyperBlock, KimiDeltaAttention,
                                            BlockSparseAttention, DogeAttention, MLSTM, RGLRU,
                                            MixtureOfAttention, DiffAttention, MFAttention, RWKV4, RWKV5, RWKV6, RWKV7,
                                            LinearReplacement, LocalStridedAttention, Plamo2Mamba, LFAttention,
                                            CCAttention, VisualExpertAttention, JetBlock, LoopGatedAttention,
                                            DualFFNAttention, GatedMemoryUnit, SambaYDiffAttention,
                                            ConvKVAttention, IndexedAttention)

Mixer = Union[Attention, MLA, SparseMLA, Mamba, GatedDeltaNet, ShortConv, ParallelHybrid, SharedBlockMamba,
              LightningAttention, CompressedMQA, InklingAttention, HyperBlock, KimiDeltaAttention,
              BlockSparseAttention, DogeAttention, MLSTM, RGLRU, MixtureOfAttention, DiffAttention, MFAttention, RWKV4,
              RWKV5, RWKV6, RWKV7, LinearReplacement, LocalStridedAttention, Plamo2Mamba, LFAttention, CCAttention,
              VisualExpertAttention, JetBlock, DualFFNAttention]

__all__ = ["MIXER_TYPES", "CCAttention", "ConvKVAttention", "MLA", "MLSTM", "Attention", "BlockSparseAttention", "DiffAttention", "DogeAttention", "DualFFNAttention", "CompressedMQA", "GatedAttention", "GatedDeltaNet", "HyperBlock", "IndexedAttention", "JetBlock", "InklingAttention", "KimiDeltaAttention", "LFAttention", "LightningAttention", "LinearReplacement", "LocalStridedAttention", "MFAttention", "Mamba", "Mixer", "MixtureOfAttention",
           "MixerKind", "MixerSpec", "ParallelHybrid", "Plamo2Mamba", "RGLRU", "RWKV4", "RWKV5", "RWKV6", "RWKV7", "SharedBlockMamba", "ShortConv", "SparseMLA", "VisualExpertAttention", "attended_keys",
           "distinct_keys"]
