"""The mixer protocol (``analysis.mixers``): a mixer defined in one place runs through the whole
arithmetic, and nothing outside ``analysis/mixers/`` tells mixer classes apart with ``isinstance``.

The toy mixer below lives only in this file: a per-channel scale ``y = w ⊙ x`` followed by a projection
``out_proj`` (h -> h), with a fixed state of ``state`` elements per sequence and a head count that refuses
some tensor-parallel widths. If ``analyze``, ``trace``, the KV arithmetic or ``tp_plan`` dispatched on
the classes they know, it would be dropped, or refused, or crash; here its own answers must come back,
exactly."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from planner.analysis.analyze import Options, analyze
from planner.analysis.dtypes import get_dtype
from planner.analysis.errors import OptionError
from planner.analysis.kv import kv_cache
from planner.analysis.mixers import MIXER_TYPES, MixerKind, MixerSpec
from planner.analysis.opkinds import OpKind, Parallel
from planner.analysis.parallel import shard_params, tp_plan
from planner.analysis.params import count_params
from planner.analysis.records import frozen
from planner.analysis.spec import MLP, Layer, ModelSpec, Norm, PlacedNorm, Tensor
from planner.analysis.trace import step_ops
from planner.analysis.weights import weight_format

ROOT = Path(__file__).resolve().parent.parent
H, V, STATE, HEADS = 64, 128, 40, 4


@frozen
class Toy(MixerSpec):
    """w ⊙ x, then out_proj; ``state`` elements kept per sequence; ``heads`` must split over tp."""

    hidden_size: int
    state: int
    heads: int

    kind = MixerKind.SHORT_CONV  # (a kind the runtime does not run either; the label is its own)
    title = "toy"

    def label(self) -> str:
        return "toy"

    def summary(self) -> str:
        return f"toy ({self.heads} heads)"

    def tensors(self, prefix: str) -> list[Tensor]:
        return [Tensor(f"{prefix}.scale", (self.hidden_size,), "other"),
                Tensor(f"{prefix}.out_proj.weight", (self.hidden_size, self.hidden_size), "linear")]

    def trace(self, b, i: int, tensors: dict[str, list[Tensor]]) -> None:
        n = b.shape.tokens
        rd, wr = b.state_io(self.state)
        b.add(name="toy_scale", kind=OpKind.SCAN, category="ssm", layer=i, flops=7 * n,
              weight_bytes=b.fmt.bytes_of(tensors["scale"]), state_read_bytes=rd, state_write_bytes=wr)
        b.matmul("out_proj", tensors["out_proj"], i, "ssm", parallel=Parallel.ROW)

    def state_elements(self) -> tuple[int, int]:
        return 0, self.state

    def tp_kv_split(self, tp: int, layer: int) -> tuple[int, int]:
        if self.heads % tp:
            raise OptionError(f"toy: {self.heads} heads do not split {tp} ways (layer {layer})")
        return tp, 1


def toy_spec() -> ModelSpec:
    norm = (PlacedNorm("input_layernorm", "pre_mixer", Norm(H)),)
    layers = tuple(Layer(Toy(H, STATE, HEADS), MLP(H, 96), norms=norm) for _ in range(3))
    return ModelSpec(model_type="toy", hidden_size=H, vocab_size=V, layers=layers, tie_word_embeddings=False,
                     final_norm=Norm(H), torch_dtype="bf16")


def test_a_mixer_defined_alone_runs_through_the_arithmetic():
    spec = toy_spec()
    bf16 = get_dtype("bf16")
    # parameters: embedding, lm_head, final norm, and per layer its norm, the mixer's scale and out_proj, the MLP
    per_layer = H + (H + H * H) + 3 * H * 96
    assert count_params(spec).total == 2 * V * H + H + 3 * per_layer
    # the step: the mixer's own rows, with the FLOPs and state traffic it declared (batch 2, decode)
    fmt, _ = weight_format(spec)
    ops = step_ops(spec, fmt, bf16, batch=2, new_tokens=1, cached_tokens=10)
    mine = [o for o in ops if o.name == "toy_scale"]
    assert [o.layer for o in mine] == [0, 1, 2]
    assert all(o.flops == 7 * 2 and o.state_read_bytes == o.state_write_bytes == 2 * STATE * 2 for o in mine)
    assert [o.parallel for o in ops if o.name == "out_proj"] == [Parallel.ROW] * 3
    # the cache: no KV per token, its state per sequence; its label and summary in the analysis
    kv = kv_cache(spec, bf16, bf16)
    assert kv.bytes_per_token == 0 and kv.state_bytes_per_sequence == 3 * STATE * 2
    a = analyze(spec, Options(context=32))
    assert {lk.kind for lk in a.kv.layers} == {"toy"}
    # tensor parallelism: its split is accepted, its limit refused, in its own words
    plan = tp_plan(spec, 2)
    assert shard_params(spec, plan) > 0
    with pytest.raises(OptionError, match="toy: 4 heads do not split 8 ways"):
        tp_plan(spec, 8)


def test_every_registered_mixer_answers_the_protocol():
    for cls in MIXER_TYPES:
        assert isinstance(cls.kind, MixerKind) and cls.title, cls.__name__
        assert cls.trace is not MixerSpec.trace and cls.tensors is not MixerSpec.tensors, cls.__name__


MIXER_NAMES = ("Attention", "GatedAttention", "MLA", "Mamba", "GatedDeltaNet", "ShortConv", "ParallelHybrid",
               "STATEFUL")


def test_no_isinstance_dispatch_on_mixers_outside_their_modules():
    """Consumers of the spec ask the mixer (family builders, which construct one class or another, may
    check what they built)."""
    pattern = re.compile(r"isinstance\([^)]*\b(" + "|".join(MIXER_NAMES) + r")\b")
    found = []
    for folder in ("analysis", "hardware", "runtime", "cli"):
        for path in (ROOT / folder).rglob("*.py"):
            if "mixers" in path.parts or "families" in path.parts:  # (builders make concrete mixers)
                continue
            for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                if pattern.search(line):
                    found.append(f"{path.relative_to(ROOT)}:{n}: {line.strip()}")
    assert not found, "\n".join(found)


def test_tensor_and_op_kinds_are_enums_and_unknown_ones_are_refused():
    from planner.analysis.opkinds import OpCategory, OpKind, Parallel
    from planner.analysis.tensors import Tensor, TensorKind
    from planner.analysis.trace import Op, step_ops
    from planner.analysis.weights import weight_format
    from planner.cli.common import load_model

    spec = load_model("google/gemma-4-E2B-it", None).spec
    assert {type(t.kind) for t in spec.tensors()} == {TensorKind}
    fmt, _ = weight_format(spec, "bf16")
    ops = step_ops(spec, fmt, fmt.act, batch=2, new_tokens=1, cached_tokens=16)
    assert {(type(o.kind), type(o.category), type(o.parallel)) for o in ops} == {(OpKind, OpCategory, Parallel)}
    assert Op("x", "matmul", "ffn", 0).category is OpCategory.FFN  # strings are taken and checked
    with pytest.raises(ValueError):
        Tensor("x.weight", (2, 2), "lineer")
    with pytest.raises(ValueError):
        Op("x", "matmul", "mlp", 0)
