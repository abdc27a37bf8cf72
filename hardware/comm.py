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
(``hardware.expected``: fitted, 20 µs by default), so the one step model prices it the same way
whether a step is planned or served. The link is the scale-up fabric (NVLink, xGMI) when every GPU of the group is in one node, else the
network between nodes, whose bandwidth and latency then bound the whole collective (a conservative
reading: hierarchical algorithms do part of the work on NVLink). Figures come from the profile's
``node`` block (``hardware/profiles.py``); a profile without one is a single node of its
``interconnect`` with no latency figure, and cannot span nodes.
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
