"""Hugging Face checkpoints into the decoder: Hugging Face names (and layouts) to ours.

Our parameter names are the spec's (``analysis.spec``), which follow ``transformers`` 5 module names.
What differs, and is translated here:

- on-disk MoE checkpoints keep one tensor per expert (``experts.3.gate_proj``; Mixtral's
  ``block_sparse_moe.experts.3.w1/w3/w2``): copied into rows of our stacked ``experts.gate_up_proj``
  (gate rows first, then up) and ``experts.down_proj``; the router is ``gate`` there, ``router`` here;
- DeepSeek's ``shared_experts`` is our ``shared_expert``; DBRX keeps each expert projection as one
  (E·I, D) matrix (``w1``, ``v1``, ``w2``, the last transposed); Llama 4's ``feed_forward`` is our ``mlp`` and
  its experts are stored (E, in, out); gpt-oss interleaves gate and up columns and stores (E, in, out);
- GPT-NeoX and Falcon name their modules differently and interleave the fused QKV rows per head
  (per KV group for Falcon); CodeGen's are 4 blocks of ``[q | v | k]``; ours are ``[q; k; v]``;
- what differs per family is in the spec's ``CheckpointLayout`` (prefix renames, grouped QKV rows,
  the experts' storage), filled by the family's builder: nothing here looks at the family;
- multimodal wrappers prefix the language model (``model.language_model.``, ``language_model.``,
  ``model.text_model.``).

Safetensors files are read one tensor at a time straight onto the model's device and copied into the
allocated parameters (``build_decoder(..., seed=None)``), so loading never holds two copies.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Iterator

import torch

from planner.analysis.errors import ConfigError, PlannerError, RuntimeUnavailableError
from planner.analysis.spec import Attention, ExpertLayout, MixerKind, ModelSpec, MoE

IGNORED = re.compile(r"(rotary_emb\.inv_freq|\.attention\.bias|\.attention\.masked_bias|\.rotary\.inv_freq|"
                     r"\.attn\.bias|\.attn\.masked_bias)$")


@dataclass
class LoadReport:
    loaded: int = 0  # tensors copied
    ignored: list[str] = field(default_factory=list)  # checkpoint tensors with no place in the model
    missing: list[str] = field(default_factory=list)  # model tensors the checkpoint did not fill


# ---- name translation ----------------------------------------------------------------------------


def _strip_prefix(name: str) -> str:
    for old, new in (("model.language_model.", "model."), ("language_model.model.", "model."),
                     ("language_model.lm_head.", "lm_head."), ("language_model.", ""),
                     ("model.text_model.", "model.")):  # Idefics2 / Idefics3 / SmolVLM / Granite-Docling
        if name.startswith(old):
            return new + name[len(old):]
    return name


_MODULES = [(".attention.query_key_value.", ".self_attn.qkv_proj."), (".self_attention.query_key_value.", ".self_attn.qkv_proj."),
            (".attention.dense.", ".self_attn.o_proj."), (".self_attention.dense.", ".self_attn.o_proj."),
            (".mlp.dense_h_to_4h.", ".mlp.up_proj."), (".mlp.dense_4h_to_h.", ".mlp.down_proj."),
            (".mlp.c_fc.", ".mlp.up_proj."), (".mlp.c_proj.", ".mlp.down_proj."),
            (".feed_forward.", ".mlp."), (".block_sparse_moe.", ".mlp."), (".mlp.shared_experts.", ".mlp.shared_expert.")]

_LAYER = re.compile(r"^model\.layers\.(\d+)\.(.*)$")
#: StableLM's per-head q/k LayerNorms, one module per head: rows of our (heads, head_dim) q_norm / k_norm
_HEAD_NORM = re.compile(r"^self_attn\.(q|k)_layernorm\.norms\.(\d+)\.weight$")
_EXPERT = re.compile(r"^mlp\.experts\.(\d+)\.(gate_proj|up_proj|down_proj|w1|w2|w3)\.weight$")


def translate(spec: ModelSpec, hf_name: str, t: torch.Tensor) -> Iterator[tuple[str, tuple | None, torch.Tensor]]:
    """(our parameter or buffer name, index into it or None, tensor in our layout) for one checkpoint
    tensor; nothing for tensors the model has no place for."""
    name = _strip_prefix(hf_name)
    if IGNORED.search(name):
        return
    for old, new in spec.checkpoint.renames:
        if name.startswith(old):
            name = new + name[len(old):]
    for old, new in spec.checkpoint.modules:
        name = name.replace(old, new)
    for old, new in _MODULES:
        name = name.replace(old, new)
    m = _LAYER.match(name)
    if not m:
        if name == "lm_head.weight" and spec.tie_word_embeddings:
            return
        if name == "lm_head.weight" and spec.numerics.lm_head_l2_norm:  # Bailing's norm_head, as vLLM loads it
            t = torch.nn.functional.normalize(t.float(), dim=0, p=2, eps=1e-7).to(t.dtype)
        if name == "lm_head.weight" and spec.checkpoint.head_normalized:  # Baichuan 2's NormHead: each row
            t = torch.nn.functional.normalize(t.float(), dim=-1).to(t.dtype)
        yield name, None, t
        return
    i, rest = int(m.group(1)), m.group(2)
    if i >= spec.num_layers:  # e.g. DeepSeek's multi-token-prediction layer: not part of the decoder
        return
    if spec.checkpoint.transposed and t.dim() == 2:  # GPT-2's Conv1D: (in, out) -> nn.Linear's (out, in)
        t = t.t()
    layer = spec.layers[i]
    pre = f"model.layers.{i}."
    ffn, mixer = layer.ffn, layer.mixer
    attention = mixer is not None and mixer.kind is MixerKind.ATTENTION  # softmax attention's checkpoint layouts
    if attention and not mixer.fused_qkv and rest.startswith("self_attn.qkv_proj.") and not mixer.kv_shared \
            and not mixer.k_eq_v and not getattr(mixer, "output_gate", False) \
            and t.shape[0] == mixer.q_dim + mixer.k_dim + mixer.v_dim:
        # a fused [q | k | v] (sarvam-30b's query_key_value) where transformers splits it by each target's size
        for part, rows in zip(("q_proj", "k_proj", "v_proj"), t.split((mixer.q_dim, mixer.k_dim, mixer.v_dim))):
            yield pre + "self_attn." + part + rest[len("self_attn.qkv_proj"):], None, rows
        return
    if attention and mixer.fused_qkv and rest.startswith("self_attn.qkv_proj.") and spec.checkpoint.qkv_grouped:
        yield pre + rest, None, _qkv_from_groups(t, mixer)
        return
    if attention and mixer.fused_qkv and rest.startswith("self_attn.qkv_proj.") and spec.checkpoint.qkv_mp:
        yield pre + rest, None, _qkv_from_mp_blocks(t, mixer, spec.checkpoint.qkv_mp)
        return
    hm = _HEAD_NORM.match(rest)
    if hm and attention and mixer.qk_norm_per_head:
        yield f"{pre}self_attn.{hm.group(1)}_norm.weight", (int(hm.group(2)),), t
        return
    if rest == "mixer.in_proj.weight" and getattr(mixer, "kind", None) is MixerKind.GATED_DELTANET \
            and mixer.split_in_proj:  # one fused in_proj, rows [q | k | v | z | b | a] (Lara-4-Mini's checkpoints)
        kd, vd, hv = mixer.num_k_heads * mixer.head_k_dim, mixer.num_v_heads * mixer.head_v_dim, mixer.num_v_heads
        if t.shape[0] != 2 * kd + 2 * vd + 2 * hv:
            raise ConfigError(f"checkpoint tensor {hf_name} has {t.shape[0]} rows, not q, k, v, z, b and a's "
                              f"{2 * kd + 2 * vd + 2 * hv}", "the checkpoint does not match its config.json")
        for part, rows in zip(("qkv", "z", "b", "a"), t.split((2 * kd + vd, vd, hv, hv), dim=0)):
            yield f"{pre}mixer.in_proj_{part}.weight", None, rows
        return
    if isinstance(ffn, MoE):
        if rest in ("mlp.gate.weight", "mlp.gate.bias"):
            yield pre + rest.replace("mlp.gate.", "mlp.router."), None, t
            return
        if rest in ("mlp.gate.e_score_correction_bias", "mlp.e_score_correction_bias",  # DeepSeek V3; MiniMax-M2
                    "mlp.gate.moe_statics.e_score_correction_bias",  # ERNIE 4.5 MoE
                    "mlp.expert_bias"):  # AFMoE: an (E,) parameter, ours (1, E) as ERNIE's
            yield pre + "mlp.router.e_score_correction_bias", None, t.reshape(1, -1) if ffn.correction_bias_param else t
            return
        em = _EXPERT.match(rest)
        if em:
            e, kind = int(em.group(1)), em.group(2)
            I = ffn.moe_intermediate_size
            if kind in ("gate_proj", "w1"):
                yield pre + "mlp.experts.gate_up_proj", (e, slice(0, I)), t
            elif kind in ("up_proj", "w3"):
                rows = slice(I, 2 * I) if ffn.gated else slice(0, I)
                yield pre + "mlp.experts.gate_up_proj", (e, rows), t
            else:
                yield pre + "mlp.experts.down_proj", (e,), t
            return
        if spec.checkpoint.experts == ExpertLayout.DBRX and rest in ("mlp.experts.w1", "mlp.experts.v1", "mlp.experts.w2"):
            yield from _dbrx_experts(pre, rest[len("mlp.experts."):], t, ffn, hf_name)
            return
        if spec.checkpoint.experts == ExpertLayout.GPT_OSS and rest.startswith("mlp.experts."):
            yield pre + rest, None, _gpt_oss_expert(rest, t)
            return
        if spec.checkpoint.experts == ExpertLayout.STACKED_IN_OUT and rest in ("mlp.experts.gate_up_proj", "mlp.experts.down_proj"):
            yield pre + rest, None, t.transpose(1, 2)
            return
    yield pre + rest, None, t


def _qkv_from_groups(t: torch.Tensor, m: Attention) -> torch.Tensor:
    """GPT-NeoX (H, 3, d) and Falcon (K, G+2, d) fused rows -> ours: [q (H·d); k (K·d); v (K·d)]."""
    K, d = m.num_key_value_heads, m.head_dim
    G = m.num_attention_heads // K
    if t.shape[0] != K * (G + 2) * d:
        raise ConfigError(f"fused QKV tensor has {t.shape[0]} rows, but {m.num_attention_heads} query and {K} KV heads "
                          f"of {d} need {K * (G + 2) * d}", "the checkpoint does not match its config.json")
    rows = t.reshape(K, G + 2, d, *t.shape[1:])
    q = rows[:, :G].reshape(K * G * d, *t.shape[1:])
    k = rows[:, G].reshape(K * d, *t.shape[1:])
    v = rows[:, G + 1].reshape(K * d, *t.shape[1:])
    return torch.cat((q, k, v), dim=0)


def _qkv_from_mp_blocks(t: torch.Tensor, m: Attention, mp: int) -> torch.Tensor:
    """CodeGen's fused rows, ``mp`` blocks of [q | v | k] (hidden / mp rows each) -> ours: [q; k; v]."""
    n = m.num_attention_heads * m.head_dim
    if m.num_key_value_heads != m.num_attention_heads or n % mp or t.shape[0] != 3 * n:
        raise ConfigError(f"fused QKV tensor has {t.shape[0]} rows, not {mp} blocks of q, v and k ({3 * n} rows)",
                          "the checkpoint does not match its config.json")
    rows = t.reshape(mp, 3, n // mp, *t.shape[1:])
    q, v, k = (rows[:, j].reshape(n, *t.shape[1:]) for j in range(3))
    return torch.cat((q, k, v), dim=0)


def _dbrx_experts(pre: str, which: str, t: torch.Tensor, m: MoE, hf_name: str):
    """DBRX stores each expert projection as one (E·I, D) matrix: ``w1`` the gate rows, ``v1`` the up rows,
    ``w2`` the down projection transposed (its forward is ``h @ w2[e]``)."""
    I = m.moe_intermediate_size
    if t.dim() != 2 or t.shape[0] % I:
        raise ConfigError(f"checkpoint tensor {hf_name} has shape {tuple(t.shape)}, not (experts x {I}, hidden)",
                          "the checkpoint does not match its config.json")
    per_expert = t.view(t.shape[0] // I, I, t.shape[1])  # (E, I, D)
    for e in range(per_expert.shape[0]):
        if which == "w1":
            yield pre + "mlp.experts.gate_up_proj", (e, slice(0, I)), per_expert[e]
        elif which == "v1":
            yield pre + "mlp.experts.gate_up_proj", (e, slice(I, 2 * I)), per_expert[e]
        else:
            yield pre + "mlp.experts.down_proj", (e,), per_expert[e].t()


def _gpt_oss_expert(rest: str, t: torch.Tensor) -> torch.Tensor:
    """gpt-oss stores (E, in, out) with gate and up interleaved column by column."""
    if rest.endswith("gate_up_proj"):
        return torch.cat((t[..., 0::2], t[..., 1::2]), dim=-1).transpose(1, 2)
    if rest.endswith("gate_up_proj_bias"):
        return torch.cat((t[..., 0::2], t[..., 1::2]), dim=-1)
    if rest.endswith("down_proj"):
        return t.transpose(1, 2)
    return t


# ---- copying -------------------------------------------------------------------------------------


@torch.no_grad()
def load_tensors(model, items: Iterable[tuple[str, torch.Tensor]], *, strict: bool = True) -> LoadReport:
    """Copy Hugging Face-named tensors (a ``state_dict()`` or a checkpoint's tensors) into ``model``.

    ``strict``: raise ``ConfigError`` when a tensor's shape does not match, or when a model tensor
    is left unfilled."""
    spec = model.spec
    targets: dict[str, torch.Tensor] = dict(model.named_parameters())
    targets.update({n: b for n, b in model.named_buffers()
                    if n.endswith("e_score_correction_bias") or n.endswith(".layer_scalar")
                    or n.endswith(".act_fn.beta") or n.endswith(".act_fn.eps")})  # xIELU's (Apertus) buffers
    filled: dict[str, int] = {}
    report = LoadReport()
    for hf_name, t in items:
        placed = False
        for ours, index, value in translate(spec, hf_name, t):
            placed = True
            dst = targets.get(ours)
            if dst is None:
                report.ignored.append(hf_name)
                continue
            if index is not None and not 0 <= index[0] < dst.shape[0]:  # an expert (a head) the config does not have
                what = "expert" if ".experts." in ours else "head"
                raise ConfigError(f"checkpoint tensor {hf_name} names {what} {index[0]}, but {ours} holds "
                                  f"{dst.shape[0]} {what}s", "the checkpoint does not match its config.json")
            view = dst if index is None else dst[index]
            if tuple(view.shape) != tuple(value.shape):
                raise ConfigError(f"checkpoint tensor {hf_name} has shape {tuple(value.shape)}, but the model's "
                                  f"{ours}{'' if index is None else str(list(index))} has {tuple(view.shape)}",
                                  "the checkpoint does not match its config.json")
            view.copy_(value.to(device=view.device, dtype=view.dtype))
            filled[ours] = filled.get(ours, 0) + view.numel()
            report.loaded += 1
        if not placed:
            report.ignored.append(hf_name)
    for name, p in targets.items():
        optional = name.endswith(("e_score_correction_bias", ".act_fn.beta", ".act_fn.eps"))  # defaults kept
        if filled.get(name, 0) < p.numel() and not optional:
            report.missing.append(name)
    if strict and report.missing:
        more = f" and {len(report.missing) - 5} more" if len(report.missing) > 5 else ""
        raise ConfigError(f"the checkpoint does not fill {', '.join(report.missing[:5])}{more}",
                          "check that the weights belong to this config (a different model or a quantized export?)")
    return report


def checkpoint_files(folder: str | Path) -> list[Path]:
    """The safetensors files of a local Hugging Face model folder (index first, else every file)."""
    p = Path(folder).expanduser()
    if p.is_file() and p.suffix == ".safetensors":
        return [p]
    if not p.is_dir():
        raise ConfigError(f"{p}: no such folder", "pass the local folder of a Hugging Face model (with *.safetensors)")
    index = p / "model.safetensors.index.json"
    if index.is_file():
        from planner.analysis.checkpoint import MAX_HEADER_BYTES
        from planner.analysis.errors import short
        from planner.analysis.files import read_bounded

        try:
            weight_map = json.loads(read_bounded(index, MAX_HEADER_BYTES, what="safetensors index").decode("utf-8"))["weight_map"]
        except (OSError, ValueError, KeyError, TypeError, RecursionError) as exc:
            raise ConfigError(f"{index}: not a safetensors index ({short(str(exc), 80)})") from None
        if not isinstance(weight_map, dict):
            raise ConfigError(f"{index}: 'weight_map' is a {type(weight_map).__name__}, not an object of tensor name to file",
                              "re-download the checkpoint's index")
        bad = [f for f in weight_map.values() if not isinstance(f, str) or not f or "/" in f or "\\" in f or f in (".", "..")]
        if bad:
            raise ConfigError(f"{index}: 'weight_map' names {short(bad[0])}, not a file of this folder",
                              "re-download the checkpoint's index")
        files = sorted({p / f for f in weight_map.values()})
    else:
        files = sorted(p.glob("*.safetensors"))
    if not files:
        hint = "only PyTorch .bin files found: convert them to safetensors" if list(p.glob("*.bin")) else \
            "download the model's *.safetensors files into the folder"
        raise ConfigError(f"{p}: no *.safetensors files", hint)
    from planner.analysis.files import regular_file_or_error

    for f in files:  # a FIFO or a device named *.safetensors: refused before safetensors opens it
        regular_file_or_error(f, what="safetensors file")
    missing = [f for f in files if not f.is_file()]
    if missing:
        raise ConfigError(f"{p}: missing shard {missing[0].name}", "download every file the index names")
    return files


def load_checkpoint(model, folder: str | Path) -> LoadReport:
    """Load a local safetensors checkpoint into ``model`` (tensor by tensor, straight to its device)."""
    if model.spec.quant is not None:
        q = model.spec.quant
        raise RuntimeUnavailableError(f"loading a quantized checkpoint ({q.raw_method or q.method}, {q.bits}-bit) is not supported",
                                      "verify with random weights (omit --weights)")
    try:
        from safetensors import safe_open
    except ImportError:
        raise RuntimeUnavailableError("loading checkpoints needs safetensors", "pip install 'planner[runtime]'") from None
    device = next(model.parameters()).device
    files = checkpoint_files(folder)

    def items():
        for f in files:
            try:
                with safe_open(str(f), framework="pt", device=str(device)) as fh:
                    for key in fh.keys():
                        yield key, fh.get_tensor(key)
            except Exception as exc:  # SafetensorError, OSError: a broken or truncated file
                if isinstance(exc, PlannerError):
                    raise
                first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
                raise ConfigError(f"{f}: not a readable safetensors file: {first}",
                                  "re-download the checkpoint, or verify with random weights (omit --weights)") from None

    return load_tensors(model, items())
