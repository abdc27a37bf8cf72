"""Speed of ``planner serve``'s step-by-step loop (``hardware/serve.py run_steps``): closed loops of many
requests, each step built by the scheduler rules and priced by the step model. Prints one markdown row
per scenario: requests, engine steps, CPU seconds of the simulation (median of ``--rounds``; the model's
per-shape step costs are built once before timing) and microseconds per step.

    python bench/serve_loop.py [--rounds 3]

The scenarios are shaped like AccelMark's runs (bench/published.yaml): Llama-3.1-8B on one B200 or H100 with
vLLM, in-process, prompts of about 256 tokens, outputs that stop at end-of-sequence (mean 347 of at most 512),
8 clients, and one client at a time; and, like GPUStack's, a burst of 1,000 requests through the HTTP front
end (one after another, ``server_overhead`` each).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

SCENARIOS = (  # (label, hardware, input, output, clients, arrival, requests, mean output, through the server)
    ("8 clients, 4,000 requests, B200", "b200", 256, 512, 8, "closed-loop", 4000, 347.0, False),
    ("1 client, 450 requests, H100", "h100-sxm", 205, 512, 1, "closed-loop", 450, 347.0, False),
    ("1,000 at once through the front end, H100", "h100-sxm", 215, 194, 1000, "together", None, None, True),
)


def run(hw_name: str, I: int, O: int, C: int, arrival: str, requests, mean_o, server: bool, rounds: int):
    from planner.analysis.parallel import tp_plan
    from planner.cli.common import load_model
    from planner.hardware.profiles import load_profile
    from planner.hardware.serve import Scenario, StepModel, StepPricer, serve, simulate

    spec, hw = load_model("meta-llama/Llama-3.1-8B").spec, load_profile(hw_name)
    d = serve(spec, hw, engine="vllm", max_model_len=4096, input_len=I, output_len=O)  # the analysis and memory
    mem, scenario = d.memory, Scenario(I, O, C, arrival, requests=requests, mean_output_len=mean_o)
    model = StepModel(d.analysis, hw, tp_plan(spec, d.tp), d.factors, detail=False)
    simulate(model, mem, scenario, server=server)  # every step shape priced once: the rounds time the loop
    steps = []
    original, repeat = StepPricer.__call__, StepPricer.again

    def counting(self, pieces):
        steps[-1] += 1
        return original(self, pieces)

    def counting_again(self):  # a step that repeats the one before it (run_steps' decode stretches)
        steps[-1] += 1
        return repeat(self)

    StepPricer.__call__, StepPricer.again = counting, counting_again
    try:
        times = []
        for _ in range(rounds):
            steps.append(0)
            t = time.process_time()
            simulate(model, mem, scenario, server=server)
            times.append(time.process_time() - t)
    finally:
        StepPricer.__call__, StepPricer.again = original, repeat
    return steps[-1], statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    print("| scenario | requests | steps | CPU s (median) | µs per step |")
    print("|---|---|---|---|---|")
    for label, hw, I, O, C, arrival, requests, mean_o, server in SCENARIOS:
        n, sec = run(hw, I, O, C, arrival, requests, mean_o, server, args.rounds)
        print(f"| {label} | {requests or C:,} | {n:,} | {sec:.2f} | {sec / n * 1e6:.1f} |", flush=True)


if __name__ == "__main__":
    main()
