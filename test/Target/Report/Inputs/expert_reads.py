"""Checks the expert weights a decode step reads against the expected
number of distinct experts under uniform routing, from the HF config.

usage: expert_reads.py CONFIG.json REPORT.json --batch B [--dp D] [--micro-batches M]

T tokens of one decode step (one per request of a replica's group: T =
B / (dp M)) each choose K of E experts; an expert is reached by none of
them with probability (1 - K/E)^T, so a step reads on average
  E (1 - (1 - K/E)^T) experts
of each MoE layer, each 3 x D x F_expert weights of 2 bytes (gate, up and
down projections, bf16). Over the job's ranks (each holding E/ep experts,
each split over tp) the reads add up to that, times the MoE layers.
Nothing here reads stage's code.
"""
import argparse
import json
import sys

p = argparse.ArgumentParser()
p.add_argument("config")
p.add_argument("report")
p.add_argument("--batch", type=int, required=True)
p.add_argument("--dp", type=int, default=1)
p.add_argument("--micro-batches", type=int, default=1)
a = p.parse_args()
c = json.load(open(a.config))
r = json.load(open(a.report))

E = c.get("num_local_experts", c.get("n_routed_experts"))
K = c["num_experts_per_tok"]
D = c["hidden_size"]
F = c.get("moe_intermediate_size", c["intermediate_size"])
L = c["num_hidden_layers"] - c.get("first_k_dense_replace", 0)
T = a.batch / (a.dp * a.micro_batches)
experts = E * (1 - (1 - K / E) ** T)
want = experts * 3 * D * F * 2 * L * a.dp
got = r["job"]["job_flops"]["decode_expert_weights_reached_per_step"]["value"]
# Each rank's number is rounded to a byte.
if abs(got - want) > 1e-9 * want + 64:
    print("FAIL: %d bytes of expert weights per decode step, expected %.0f "
          "(%.4f experts of %d per layer)" % (got, want, experts, E))
    sys.exit(1)
print("ok: %.4f of %d experts per layer, %d bytes" % (experts, E, got))
