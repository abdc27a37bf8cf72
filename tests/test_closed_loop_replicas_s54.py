"""A closed loop of fewer clients than replicas: the clients split over the replicas (the larger share simulated), and
replicas no client reaches add no tokens. Before session 54 both closed-loop paths (``_closed_loop`` in-process,
``_clocked`` through the HTTP front end) counted every replica's tokens at the simulated share, so one client on eight
one-GPU replicas came out at eight clients' throughput (natoscott's aiconfigurator report, Qwen3-8B on 8x H200 at one
client: 69 tokens/s published, 520 priced)."""

from __future__ import annotations

import pytest

from tests.clirun import run
from tests.test_published_fit import pub


def _point(client: str, gpus: int, clients: int) -> float:
    entry = {"id": "x", "quantity": "output_tokens_per_s", "value": 1.0, "engine": "vllm", "engine_version": "0.10.2",
             "model": "Qwen/Qwen3-8B", "model_config": "Qwen/Qwen3-8B", "gpu": "h200-sxm", "gpus": gpus, "tp": 1,
             "settings": {"arrival": "closed-loop", "client": client, "input_len": 2000, "output_len": 64,
                          "concurrency": clients}}
    return pub.Point(entry).predict()


@pytest.mark.parametrize("client", ["in-process", "server"])
def test_one_client_on_eight_replicas_makes_one_clients_tokens(client):
    assert _point(client, 8, 1) == pytest.approx(_point(client, 1, 1))


@pytest.mark.parametrize("client", ["in-process", "server"])
def test_two_clients_a_replica_make_each_replicas_tokens(client):
    # 8 clients on 4 replicas: each replica runs the one-GPU run's 2 clients; four times its tokens
    assert _point(client, 4, 8) == pytest.approx(4 * _point(client, 1, 2))


@pytest.mark.parametrize("client", ["in-process", "server"])
def test_an_uneven_split_counts_the_clients_at_the_larger_shares_rate(client):
    # 3 clients on 2 replicas: the replica simulated holds 2 (the larger share); 3 clients at its rate per client
    assert _point(client, 2, 3) == pytest.approx(1.5 * _point(client, 1, 2))


def test_serve_says_the_same():
    def tput(gpus: str) -> float:
        r = run("serve", "Qwen/Qwen3-8B", "--hardware", "h200-sxm", "--gpus", gpus, "--tp", "1", "--input-len", "2000",
                "--output-len", "64", "--concurrency", "1", "--arrival", "closed-loop", "--json")
        assert r.code == 0, r.err
        return r.json["throughput"]["output_tokens_per_s"]

    assert tput("8") == pytest.approx(tput("1"))
