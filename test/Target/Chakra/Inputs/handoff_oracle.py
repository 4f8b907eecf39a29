"""Checks the KV handoff of a disaggregated trace set against closed forms
written from the HF config, independently of stage's planner.

    handoff_oracle.py STAGE_TRANSLATE CONFIG STEP.mlir --batch B --seq S
        --prefill "tp=2 pp=2" --decode "dp=2 tp=2" [--prefill-layers 2,2]

Ranks are numbered pp, dp, cp, ep, tp (tp fastest), the prefill group's
first. Each decode rank must receive its KV cache over the prompt, 2 caches
x L_stage x KV_local x Dh x S x B/dp x 2 bytes (KV_local = max(KV/tp, 1)),
from prefill ranks that hold those layers, requests and heads; when no
prefill rank holds copies (tp <= KV), every pair's bytes are the overlap of
what the one holds and the other needs, and each prefill rank sends its
whole cache when no decode rank holds copies either.
"""
import argparse
import collections
import json
import subprocess

AXES = ["pp", "dp", "cp", "ep", "tp"]


def plan(text):
    d = {a: 1 for a in AXES}
    for kv in text.split():
        k, v = kv.split("=")
        d[k] = int(v)
    return d


def coords(rank, p):
    c = {}
    for a in reversed(AXES):
        c[a] = rank % p[a]
        rank //= p[a]
    return c


def layers_of(p, total, given):
    per = given or [total // p["pp"]] * p["pp"]
    starts = [sum(per[:i]) for i in range(len(per))]
    return [(s, s + n) for s, n in zip(starts, per)]


def overlap(a, b):
    return max(0, min(a[1], b[1]) - max(a[0], b[0]))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("translate")
    ap.add_argument("config")
    ap.add_argument("step")
    ap.add_argument("--batch", type=int, required=True)
    ap.add_argument("--seq", type=int, required=True)
    ap.add_argument("--prefill", required=True)
    ap.add_argument("--decode", required=True)
    ap.add_argument("--prefill-layers", default="")
    ap.add_argument("--decode-layers", default="")
    a = ap.parse_args()
    cfg = json.load(open(a.config))
    L = cfg["num_hidden_layers"]
    H = cfg["num_attention_heads"]
    KV = cfg.get("num_key_value_heads", H)
    Dh = cfg.get("head_dim", cfg["hidden_size"] // H)
    B, S = a.batch, a.seq
    P, D = plan(a.prefill), plan(a.decode)
    nP = P["pp"] * P["dp"] * P["cp"] * P["ep"] * P["tp"]
    nD = D["pp"] * D["dp"] * D["cp"] * D["ep"] * D["tp"]

    def listed(text):
        return [int(x) for x in text.split(",")] if text else None

    lp = layers_of(P, L, listed(a.prefill_layers))
    ld = layers_of(D, L, listed(a.decode_layers))

    def holds(c, p, layer_ranges, positions):
        """Layers, requests, positions and distinct heads of a rank."""
        reqs = B // (p["dp"] * p["ep"])
        r0 = (c["dp"] * p["ep"] + c["ep"]) * reqs
        if p["tp"] <= KV:
            h = KV // p["tp"]
            heads = (c["tp"] * h, c["tp"] * h + h)
        else:
            first = c["tp"] * KV // p["tp"]
            heads = (first, first + 1)
        pos = positions // p["cp"]
        return (layer_ranges[c["pp"]], (r0, r0 + reqs),
                (c["cp"] * pos, c["cp"] * pos + pos), heads)

    sent = collections.Counter()
    got = collections.Counter()
    for rank in range(nP + nD):
        out = subprocess.run([a.translate, a.step, "--stage-to-chakra",
                              "--rank=%d" % rank], check=True,
                             capture_output=True, text=True).stdout
        for line in out.splitlines():
            node = json.loads(line)
            if node.get("name", "").split(":")[-1] not in ("kv_send",
                                                            "kv_recv"):
                continue
            at = {x["name"]: x for x in node["attr"]}
            key = (int(at["comm_src"]["int32_val"]),
                   int(at["comm_dst"]["int32_val"]))
            size = int(at["comm_size"]["int64_val"])
            (sent if node["name"].endswith("kv_send") else got)[key] += size
    assert sent == got, "sends and receives differ: %s %s" % (sent, got)

    entry = 2 * Dh * 2  # keys and values, bf16
    prefill_boxes = {r: holds(coords(r, P), P, lp, S) for r in range(nP)}
    for d in range(nD):
        need = holds(coords(d, D), D, ld, S)
        want = 1
        for iv in need:
            want *= iv[1] - iv[0]
        received = sum(n for (s, t), n in got.items() if t == nP + d)
        assert received == want * entry, (
            "decode rank %d receives %d bytes, not %d" %
            (nP + d, received, want * entry))
        for (s, t), n in got.items():
            if t != nP + d:
                continue
            box = prefill_boxes[s]
            vol = 1
            for x, y in zip(box, need):
                vol *= overlap(x, y)
            assert vol > 0, "rank %d sends to %d what it does not hold" % (
                s, t)
            if P["tp"] <= KV:
                assert n == vol * entry, (
                    "%d -> %d: %d bytes, the overlap is %d" %
                    (s, t, n, vol * entry))
    if P["tp"] <= KV and D["tp"] <= KV:
        for s, box in prefill_boxes.items():
            vol = 1
            for iv in box:
                vol *= iv[1] - iv[0]
            total = sum(n for (x, _), n in sent.items() if x == s)
            assert total == vol * entry, (
                "prefill rank %d sends %d bytes, not its cache's %d" %
                (s, total, vol * entry))
    print("handoff ok: %d messages' pairs, %d bytes" %
          (len(got), sum(got.values())))


main()
