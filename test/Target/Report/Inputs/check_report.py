"""Checks a JSON report of stage-translate --stage-to-report against the
closed forms of the literature, computed here from the report's bindings.

    check_report.py CHECK REPORT.json [ARGS...]

zero N Z        model states of stage 0 = the ZeRO paper's accounting for
                mixed-precision Adam with N data-parallel ranks and stage Z
                (Rajbhandari et al. 2020), exactly
activations V   kept activations per layer = Korthikanti et al. 2022 (sec. 4)
                for variant V: none, tp, sp, tp-selective, sp-selective,
                fused, full; within 1%
dp-allreduce    the data-parallel gradient all-reduce moves 2 bytes per local
                parameter (bf16 gradients), exactly
tp-sp           tensor + sequence parallelism: Megatron's per-layer
                gathers and reduce-scatters of b*s*h, and the all-reduces
                of the norms' gradients and of the vocabulary-parallel
                cross-entropy's statistics, exactly
in-flight S     stage 0 keeps the activations of pp (S=1f1b) or M
                (S=gpipe) micro-batches at its peak, exactly
ep-alltoall     expert parallelism: 4 all-to-alls of tokens * top-k * hidden
                per MoE layer and micro-batch, exactly
"""
import json
import sys

check, path, args = sys.argv[1], sys.argv[2], sys.argv[3:]
with open(path) as f:
    report = json.load(f)
b = report["bindings"]
stage = report["stages"][0]


def value(section, key):
    return stage[section][key]["value"]


def params():
    """The parameters one rank of stage 0 holds (local shapes)."""
    return value("memory", "parameters")


def expect(name, got, want, tolerance=0.0):
    ok = abs(got - want) <= tolerance * abs(want)
    rel = (got - want) / want if want else 0.0
    print(f"{name}: {got} vs {want} ({rel:+.4%})" + ("" if ok else "  MISMATCH"))
    if not ok:
        sys.exit(1)


def micro_batch():
    return b["B"] // (b.get("M", 1) * b["dp"] * b.get("ep", 1) * b.get("cp", 1))


if check == "zero":
    n, z = int(args[0]), int(args[1])
    psi = params()  # the local parameters: partitioned already under ZeRO-3
    if z == 3:
        psi *= n
    want = {0: 16 * psi, 1: 4 * psi + 12 * psi // n,
            2: 2 * psi + 14 * psi // n, 3: 16 * psi // n}[z]
    expect(f"ZeRO-{z} model states", value("memory", "model_states"), want)
elif check == "activations":
    s, bb, h, a = b["S"], micro_batch(), b["D"], b["H"]
    t = b.get("tp", 1)
    sbh = s * bb * h
    want = {
        "none": sbh * (34 + 5 * a * s / h),
        "tp": sbh * (10 + 24 / t + 5 * a * s / (h * t)),
        "sp": sbh / t * (34 + 5 * a * s / h),
        "tp-selective": sbh * (10 + 24 / t),
        "sp-selective": 34 * sbh / t,
        "fused": 34 * sbh / t,
        "full": 2 * sbh,
    }[args[0]]
    expect(f"activations per layer ({args[0]})",
           value("memory", "activations_per_layer"), want, 0.01)
elif check == "dp-allreduce":
    expect("dp gradient all-reduce bytes",
           value("communication", "all_reduce_dp"), 2 * params())
elif check == "tp-sp":
    L, M, t = b["L"], b.get("M", 1), b["tp"]
    act = 2 * micro_batch() * b["S"] * b["D"]  # b*s*h bf16 elements, bytes
    # Per layer: forward 2 gathers + 2 scatters, backward 4 gathers
    # (2 re-gathers for the weight gradients) + 2 scatters; the embedding
    # scatters, the LM head gathers forward, scatters and re-gathers backward,
    # and the embedding's gradient is gathered: (4L + 2) scatters of the
    # full activation, (6L + 3) gathers of a rank's share, per micro-batch.
    expect("tp reduce-scatter bytes", value("communication", "reduce_scatter_tp"),
           M * (4 * L + 2) * act)
    expect("tp all-gather bytes", value("communication", "all_gather_tp"),
           M * (6 * L + 3) * act // t)
    # The norms' weight gradients, replicated over tp under SP: one
    # all-reduce of 2 bytes per weight and iteration; and the vocabulary-
    # parallel cross-entropy's three all-reduces of a 4-byte statistic per
    # token (max, target logit, sum of exponentials) per micro-batch.
    expect("tp all-reduce bytes", value("communication", "all_reduce_tp"),
           2 * (2 * L * b["D"] + b["D"]) + M * 3 * 4 * micro_batch() * b["S"])
elif check == "ep-alltoall":
    L, M = b["L"], b.get("M", 1)
    tokens = micro_batch() * b["S"] // b.get("tp", 1)
    expect("ep all-to-all bytes", value("communication", "all_to_all_ep"),
           4 * L * M * tokens * b["K"] * b["D"] * 2)
elif check == "in-flight":
    n = {"1f1b": b["pp"], "gpipe": b.get("M", 1)}[args[0]]
    expect(f"stage 0 kept activations at most ({args[0]})",
           value("memory", "peak_activations"),
           n * value("memory", "activations_per_microbatch"))
else:
    sys.exit("check_report: unknown check " + check)
