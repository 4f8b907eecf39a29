"""Checks a serving report against closed forms written from the HF config.

usage: serving_oracle.py CONFIG.json REPORT.json --batch B --seq S --tokens N
                         [--dp D] [--tp T] [--ep E] [--pp P] [--chunk C]

Per rank of each stage, the KV cache is
  GQA/MHA: 2 * L_stage * max(KV/tp, 1) * Dh * (S + N) * B_local * 2 bytes
  MLA:     L_stage * (kv_lora_rank + qk_rope_head_dim) * (S + N) * B_local * 2
with B_local = B / (dp * ep) (attention is data-parallel over ep; a
prefill's cache with cp holds (S + N) / cp positions per rank), and the
decode contraction FLOPs per generated token are 2 * (the parameters a token
uses in contractions) plus attention over the context, averaged over the N
steps (step i attends to S + i + 1 positions: S + (N + 1) / 2 on average):
  GQA/MHA: 4 * H * Dh per position and layer (scores and values),
  MLA (absorbed): 2 * H * (kv_lora_rank + qk_rope_head_dim) + 2 * H * kv_lora_rank.
The FLOPs are those the ranks execute: with tp above the KV heads every rank
projects its own copy of a head, as if there were tp of them.
With --chunk C (continuous batching, dense GQA models), the caches hold
B + 1 requests (the running ones and the arriving one), and the J = S/C
mixed iterations' contraction FLOPs are, in all,
  J (2 P (B + C) + 2 D V B) + L 4 H Dh (J B (T + 1) + C^2 J (J + 1) / 2)
with P the weights without the LM head (every token passes every layer; only
the B decode tokens are sampled) and T = S + N/2 the running requests'
context: decode tokens attend to T + 1 positions, chunk j to (j + 1) C.
Nothing here reads stage's code: only the config and the report.
"""
import argparse
import json
import sys
from fractions import Fraction


def active_contraction_params(c, tp):
    """Weights a token multiplies with, per the architectures' definitions."""
    D, V, L = c["hidden_size"], c["vocab_size"], c["num_hidden_layers"]
    H = c["num_attention_heads"]
    head = D * V  # the LM head (the embedding lookup is no contraction)
    if "kv_lora_rank" in c:  # DeepSeek MLA + MoE
        Qr, Kr = c["q_lora_rank"], c["kv_lora_rank"]
        Dn, Dr, Dv = c["qk_nope_head_dim"], c["qk_rope_head_dim"], c["v_head_dim"]
        attn = D * Qr + Qr * H * (Dn + Dr) + D * (Kr + Dr) + Kr * H * (Dn + Dv) + H * Dv * D
        dense = c.get("first_k_dense_replace", 0)
        Fe, E, K = c["moe_intermediate_size"], c["n_routed_experts"], c["num_experts_per_tok"]
        shared = c.get("n_shared_experts", 0) * Fe
        moe = D * E + K * 3 * D * Fe + 3 * D * shared
        return L * attn + dense * 3 * D * c["intermediate_size"] + (L - dense) * moe + head
    KV = max(c.get("num_key_value_heads", H), tp)
    Dh = c.get("head_dim", D // H)
    attn = 2 * D * H * Dh + 2 * D * KV * Dh
    F = c["intermediate_size"]
    if "num_local_experts" in c:  # Mixtral
        E, K = c["num_local_experts"], c["num_experts_per_tok"]
        mlp = D * E + K * 3 * D * F
    else:
        mlp = 3 * D * F
    return L * (attn + mlp) + head


def attention_per_position(c):
    H = c["num_attention_heads"]
    if "kv_lora_rank" in c:
        Kr, Dr = c["kv_lora_rank"], c["qk_rope_head_dim"]
        return 2 * H * (Kr + Dr) + 2 * H * Kr
    Dh = c.get("head_dim", c["hidden_size"] // H)
    return 4 * H * Dh


def cache_per_token_and_layer(c, tp):
    if "kv_lora_rank" in c:
        return c["kv_lora_rank"] + c["qk_rope_head_dim"]
    H = c["num_attention_heads"]
    KV = c.get("num_key_value_heads", H)
    Dh = c.get("head_dim", c["hidden_size"] // H)
    return 2 * max(KV // tp, 1) * Dh


def window(c, S):
    """A sliding window shorter than the prompt, else None: such a layer
    caches a ring of its last W positions and a decode step reads W."""
    W = c.get("sliding_window")
    return W if W and W < S else None


def check(c, r, B, S, N, dp=1, tp=1, ep=1, pp=1, chunk=0, flops=True, cp=1):
    """The failures of report `r` (JSON) of config `c` (a list of strings)."""
    L = c["num_hidden_layers"]
    failures = []

    # KV cache per rank, stage by stage (layers from the report's ranges).
    b_local = Fraction(B, dp * ep) + (1 if chunk else 0)
    layers_seen = 0
    for s in r["stages"]:
        if s["layers"]:
            n = sum(int(e) - int(b) + 1 for b, e in
                    (part.split("-") for part in s["layers"].split(", ")))
        else:
            n = L
        layers_seen += n
        positions = S + N if (N or chunk) else S
        # Context parallelism (prefill only) splits the prompt's positions;
        # a sliding window's ring is whole.
        end, begin = Fraction(positions, cp), Fraction(S, cp)
        if window(c, S):
            end = begin = window(c, S)
        expect = n * cache_per_token_and_layer(c, tp) * end * b_local * 2
        start = n * cache_per_token_and_layer(c, tp) * begin * b_local * 2
        got = s["memory"]["kv_cache"]["value"]
        if got != expect or s["memory"]["kv_cache_start"]["value"] != start:
            failures.append(f"stage {s['stage']}: kv_cache {got}, expected {expect} "
                            f"(start {s['memory']['kv_cache_start']['value']}, expected {start})")
    if layers_seen != L:
        failures.append(f"stages hold {layers_seen} layers, the model {L}")
    if not flops or (not N and not chunk):
        return failures

    # Decode contraction FLOPs per generated token, over the whole job.
    if chunk:
        C = chunk
        J, T = S // C, S + N // 2
        head = c["hidden_size"] * c["vocab_size"]
        P = active_contraction_params(c, tp) - head
        H = c["num_attention_heads"]
        Dh = c.get("head_dim", c["hidden_size"] // H)
        # A running request reads its cache (its ring of W under a window),
        # a prompt chunk its whole prefix.
        decoded = window(c, S) or T + 1
        total = J * (2 * P * (B + C) + 2 * head * B) + \
            L * 4 * H * Dh * (J * B * decoded + C * C * J * (J + 1) // 2)
        per_token = Fraction(total, B * J)
    else:
        context = window(c, S) or S + Fraction(N + 1, 2)
        per_token = 2 * active_contraction_params(c, tp) + \
            L * attention_per_position(c) * context
    got = Fraction(r["job"]["job_flops"]["decode_contraction_per_token"]["value"])
    if got != per_token:
        failures.append(f"decode contraction FLOPs per token {got}, expected {per_token}")
    return failures


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("config")
    ap.add_argument("report")
    for k in ("batch", "seq", "tokens"):
        ap.add_argument("--" + k, type=int, required=True)
    for k in ("dp", "tp", "ep", "pp"):
        ap.add_argument("--" + k, type=int, default=1)
    ap.add_argument("--chunk", type=int, default=0)
    a = ap.parse_args()
    c = json.load(open(a.config))
    r = json.load(open(a.report))
    failures = check(c, r, a.batch, a.seq, a.tokens, a.dp, a.tp, a.ep, a.pp,
                     a.chunk)
    for f in failures:
        print("FAIL: " + f)
    if failures:
        sys.exit(1)
    print("ok: kv cache and contraction FLOPs per decoded token")


if __name__ == "__main__":
    main()
