"""Time of a collective on the link it travels: the alpha-beta model with the node's figures.

``time = steps × latency + bytes_on_the_wire_per_gpu / bandwidth`` (bandwidth per GPU per direction):

=================  ===========  ===============================
collective          steps        bytes each GPU sends
=================  ===========  ===============================
all-reduce (ring)   2(n-1)       2(n-1)/n × buffer
all-gather          n-1          (n-1)/n × gathered buffer
reduce-scatter      n-1          (n-1)/n × full buffer
all-to-all          n-1          (n-1)/n × what the GPU sends
send (p2p)          1            message
=================  ===========  ===============================

Inside a node an all-reduce costs the engine model's fixed per-call latency instead of its steps
(``hardware.expected``: fitted; ``_device.yaml``'s 30 µs, or the engine profile's own), so the one step model prices it the same way
whether a step is planned or served. The link is the scale-up fabric (NVLink, xGMI) when every GPU of the group is in one node, else the
network between nodes, whose per-step latency then bounds each of the ring's steps. A ring collective
(all-reduce, all-gather, reduce-scatter) that spans nodes runs as NCCL runs it: one ring per channel,
the channels spread over every NIC of the node, so its bytes cross the network at the node's NICs
together -- the profile's per-GPU ``inter_node_bandwidth`` × the group's GPUs in a node, at most the
scale-up fabric's rate (``ring_bytes_per_s``). NCCL's maintainers on the figure to expect: "On an Nvidia
DGX-A100 system we have 8x200Gbit/s IB cards and we measure 192GB/s AllReduce BusBW" (NVIDIA/nccl#812,
ring, 8 × 24 GB/s), "For NDR @ 400Gbps you should see 46-48GB/s per NIC" (NVIDIA/nccl-tests#290), "the 80
GB/s is probably reflecting the total NIC bandwidth, hence 20GB/s per NIC" (NVIDIA/nccl-tests#160). A
send between two GPUs and the flat all-to-all use one GPU's NIC. Figures come from the profile's
``node`` block (``hardware/profiles.py``); a profile without one is a single node of its
``interconnect`` with no latency figure, and cannot span nodes.

The MoE all-to-all of an expert-parallel layout is priced by ``ep_exchange`` where the engine profile
says how its EP library moves it (``expert_parallel``: element sizes of dispatch and combine, a token
sent once per destination node and forwarded on NVLink, direct writes to every peer); engines without
that block keep the flat ring all-to-all above.
"""

from __future__ import annotations

from dataclasses import dataclass

from planner.analysis.errors import OptionError
from planner.analysis.parallel import Collective


@dataclass(frozen=True)
class Links:
    gpus_per_node: int
    intra_bytes_per_s: float | None
    intra_latency_s: float
    inter_bytes_per_s: float | None
    inter_latency_s: float
    source: str  # "node" (the profile's node block) or "interconnect" (no node block)


def links(hw) -> Links:
    node = getattr(hw, "node", None)
    if node is not None:
        return Links(node.gpus_per_node, node.intra_node_bytes_per_s, node.intra_node_latency_s,
                     node.inter_node_bytes_per_s, node.inter_node_latency_s or 0.0, "node")
    n = 8 if hw.interconnect_bytes_per_s else 1
    return Links(n, hw.interconnect_bytes_per_s, 0.0, None, 0.0, "interconnect")


def ring_bytes_per_s(lk: Links, group: int) -> float | None:
    """Bytes per second, per GPU per direction, of a ring collective over ``group`` GPUs that span nodes:
    NCCL splits the buffer over its channels, one ring each, and spreads the channels over the node's NICs
    (one per GPU in the profile's ``node`` block, whose ``inter_node_bandwidth`` is per GPU), so the ring's
    crossing between nodes moves at the group's NICs in one node together; the hops inside a node at the
    scale-up fabric's rate, whichever is slower. None where the profile describes no network."""
    if not lk.inter_bytes_per_s:
        return None
    nodes = -(-group // lk.gpus_per_node)
    per_node = -(-group // nodes)
    bw = lk.inter_bytes_per_s * per_node
    return min(bw, lk.intra_bytes_per_s) if lk.intra_bytes_per_s else bw


def collective_s(c: Collective, lk: Links, hw_name: str = "", *, efficiency: float = 1.0,
                 allreduce_call_s: float | None = None) -> float:
    """Seconds of ``c.count`` collectives ``c`` on its link. ``efficiency``: the achieved fraction of the
    link's bandwidth (the engine model's ``interconnect`` factor); ``allreduce_call_s``: the fixed cost
    of one all-reduce inside a node (the engine model's fitted ``allreduce_latency``, which covers
    vLLM's custom all-reduce and NCCL LL), used instead of ``2(n-1)`` steps of link latency."""
    n = c.group
    if n <= 1 or c.count == 0:
        return 0.0
    if c.inter_node:
        bw, lat = lk.inter_bytes_per_s, lk.inter_latency_s
        if not bw:
            raise OptionError(f"hardware profile '{hw_name}' describes no network between nodes "
                              f"({lk.gpus_per_node} GPUs per node)",
                              "add node.inter_node_bandwidth and node.inter_node_latency to the profile, "
                              "or use a layout that fits in one node")
    else:
        bw, lat = lk.intra_bytes_per_s, lk.intra_latency_s
        if not bw:
            raise OptionError(f"hardware profile '{hw_name}' has no interconnect bandwidth for a {n}-GPU group",
                              "add 'interconnect: 450 GB/s' (or a node block) to the profile, or use one GPU")
    m = c.bytes_per_gpu
    if c.inter_node and c.kind in ("all_reduce", "all_gather", "reduce_scatter"):
        bw = ring_bytes_per_s(lk, n)
    bw = bw * efficiency
    if c.kind == "all_reduce":
        steps, wire = 2 * (n - 1), 2 * (n - 1) / n * m
        if allreduce_call_s is not None and not c.inter_node:
            return c.count * (allreduce_call_s + wire / bw)
    elif c.kind in ("all_gather", "reduce_scatter", "all_to_all"):
        steps, wire = n - 1, (n - 1) / n * m
    elif c.kind == "send":
        steps, wire = 1, m
    else:
        raise ValueError(f"unknown collective kind {c.kind!r}")
    return c.count * (steps * lat + wire / bw)


# ---- the MoE all-to-all as an expert-parallel library moves it ------------------------------------


def touched_fraction(num_experts: int, topk: int, parts: int) -> float:
    """Probability that a token's ``topk`` distinct experts, drawn uniformly from ``num_experts`` spread
    evenly over ``parts`` GPUs or nodes, touch a given part: ``1 - C(E - E/parts, k) / C(E, k)``
    (hypergeometric; balanced routing, as EPLB aims for; DeepSeek's group-limited routing, at most
    ``topk_group`` groups per token, is not applied: it binds only beyond 4 nodes)."""
    from math import comb

    per = num_experts // parts
    return 1.0 - comb(num_experts - per, topk) / comb(num_experts, topk)


@dataclass(frozen=True)
class EPExchange:
    """One MoE dispatch or combine of one GPU: bytes it puts on each link and the seconds it takes."""

    network_bytes: float  # between nodes (RDMA)
    nvlink_bytes: float  # inside the node (NVLink forwarding, or a group that fits one node)
    seconds: float


def ep_exchange(tokens_per_gpu: int, hidden: int, topk: int, num_experts: int, group: int, copy_bytes: float,
                lk: Links, *, hierarchical: bool, direct: bool, efficiency: float = 1.0) -> EPExchange:
    """One dispatch (or combine) of ``tokens_per_gpu`` tokens by one GPU of an EP group of ``group`` GPUs,
    ``copy_bytes`` per routed token copy (the engine's dispatch or combine element size times hidden).

    - flat (``hierarchical=False``; DeepEP's low-latency kernels, and every engine without an EP profile):
      each of a token's ``topk`` expert copies goes to its expert's GPU, ``(group - 1) / group`` of them
      leave the GPU, all on the network when the group spans nodes;
    - hierarchical (DeepEP's normal kernels): a token crosses the network once per other node it touches
      (``(nodes - 1) · touched_fraction(E, k, nodes)`` copies) and is forwarded on NVLink inside the node
      to each GPU it touches (``group · touched_fraction(E, k, group) · (g - 1) / g`` copies); the two
      links run at once (the slower one bounds it).
    Latency: ``direct`` (every peer written at once) one link latency per call, else ``group - 1`` ring steps."""
    g = min(lk.gpus_per_node, group)
    cross = group > lk.gpus_per_node
    bw_net, bw_nvl = (lk.inter_bytes_per_s or 0.0) * efficiency, (lk.intra_bytes_per_s or 0.0) * efficiency
    if hierarchical and cross:
        nodes = -(-group // lk.gpus_per_node)
        net = tokens_per_gpu * (nodes - 1) * touched_fraction(num_experts, topk, nodes) * copy_bytes
        nvl = tokens_per_gpu * group * touched_fraction(num_experts, topk, group) * (g - 1) / g * copy_bytes
        wire_s = max(net / bw_net, nvl / bw_nvl)
    else:
        wire = tokens_per_gpu * topk * (group - 1) / group * copy_bytes
        net, nvl = (wire, 0.0) if cross else (0.0, wire)
        wire_s = wire / (bw_net if cross else bw_nvl)
    lat = lk.inter_latency_s if cross else lk.intra_latency_s
    return EPExchange(net, nvl, (1 if direct else group - 1) * lat + wire_s)
