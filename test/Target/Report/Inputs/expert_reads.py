"""Checks the expert weights a decode step reads against the expected
number of distinct experts under uniform routing, from the HF config.

usage: expert_reads.py CONFIG.json REPORT.json --batch B [--dp D] [--micro-batches M]

T tokens of one decode step (one per request of a replica's group: T =
B / (dp M)) each choose K of E experts; an expert is reached by none of
them with probability (1 - K/E)^T, so a step reads on average
  E (1 - (1 - K/E)^T)
experts of each MoE layer, each 3 x D x F_expert weights of 2 bytes (gate,
up and down projections, bf16). Over the job's ranks (each holding E/ep
experts, each split over tp) the reads add up to that, times the MoE
layers and the replicas. Nothing here reads stage's code.
"""
import argparse
import json
import sys


def expected(c, batch, dp=1, micro_batches=1):
    """(experts reached per MoE layer, bytes a decode step of one group
    reads over the job)."""
    E = c.get("num_local_experts", c.get("n_routed_experts"))
    K = c["num_experts_per_tok"]
    D = c["hidden_size"]
    F = c.get("moe_intermediate_size") or c["intermediate_size"]
    L = c["num_hidden_layers"] - c.get("first_k_dense_replace", 0)
    T = batch / (dp * micro_batches)
    experts = E * (1 - (1 - K / E) ** T)
    return experts, experts * 3 * D * F * 2 * L * dp


def check(c, r, batch, dp=1, micro_batches=1):
    """The failures of report `r` (a list of strings)."""
    experts, want = expected(c, batch, dp, micro_batches)
    got = r["job"]["job_flops"].get(
        "decode_expert_weights_reached_per_step", {}).get("value")
    # Each rank's number is rounded to a byte.
    if got is None or abs(got - want) > 1e-9 * want + 64:
        return ["%s bytes of expert weights per decode step, expected %.0f "
                "(%.4f experts per layer)" % (got, want, experts)]
    return []


def main():
    p = argparse.ArgumentParser()
    p.add_argument("config")
    p.add_argument("report")
    p.add_argument("--batch", type=int, required=True)
    p.add_argument("--dp", type=int, default=1)
    p.add_argument("--micro-batches", type=int, default=1)
    a = p.parse_args()
    c = json.load(open(a.config))
    r = json.load(open(a.report))
    failures = check(c, r, a.batch, a.dp, a.micro_batches)
    for f in failures:
        print("FAIL: " + f)
    if failures:
        sys.exit(1)
    experts, _ = expected(c, a.batch, a.dp, a.micro_batches)
    print("ok: %.4f experts per layer" % experts)


if __name__ == "__main__":
    main()
