"""The serving plan matrix: every combination of serving options on the
matrix's tiny Llama (GQA), Mistral (a sliding window shorter than the
prompt: ring caches of W positions), Mixtral (experts) and DeepSeek-V3
(MLA, a dense first layer, a shared expert); and for the experts, batches
of 1 and 3 requests over dp x ep attention ranks that do not divide them
(an average per rank), under uniform and skewed routing.

    serving_matrix.py BIN_DIR CONFIG_DIR WORK_DIR [--jobs N]

For each plan: stage-infer, the JSON report checked against the closed forms
of test/Target/Report/Inputs/serving_oracle.py (the KV cache per rank of
every stage; decode contraction FLOPs per generated token where no rank
repeats another's contractions; under uniform routing, the expert weights
a decode step reads against expert_reads.py's expected distinct experts),
the traces written and verified with
stage-trace (every receive has its send, the groups agree, the set runs to
completion). Disaggregated plans (a prefill group and a decode group with
their own plans) check the KV handoff instead: the bytes the traces move
and the report's `kv_handoff` against the decode ranks' caches over the
prompt. Prints one line per failure and `plans: N, failed F`.
"""
import argparse
import itertools
import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "Target", "Report", "Inputs"))
import expert_reads  # noqa: E402
import serving_oracle  # noqa: E402

BATCH, SEQ, TOKENS, CHUNK = 64, 32, 6, 8
SMALL_BATCHES = (1, 3)
MODELS = ("llama-tiny", "mistral-tiny", "mixtral-tiny", "deepseek-tiny")


def plans():
    """(model, options) pairs."""
    out = []
    for model in MODELS:
        moe = model not in ("llama-tiny", "mistral-tiny")
        for dp, tp, pp, ep in itertools.product((1, 2), (1, 2, 4), (1, 2), (1, 2)):
            if ep > 1 and not moe:
                continue
            if dp * tp * pp * ep > 16:
                continue
            for phase in ("prefill", "decode", "both"):
                for m in ((1, 2) if pp > 1 else (1,)):
                    o = dict(dp=dp, tp=tp, pp=pp, ep=ep, phase=phase, m=m, cp=1,
                             chunk=0)
                    out.append((model, o))
            # Context parallelism serves prompts.
            if pp == 1 and ep == 1:
                out.append((model, dict(dp=dp, tp=tp, pp=1, ep=1, phase="prefill",
                                        m=1, cp=2, chunk=0)))
            # Continuous batching models one replica.
            if not moe and dp == 1:
                out.append((model, dict(dp=1, tp=tp, pp=pp, ep=1, phase="",
                                        m=1, cp=1, chunk=CHUNK)))
        # Any batch: a fraction of a request per attention rank, routing
        # uniform or skewed.
        if moe:
            for batch in SMALL_BATCHES:
                for dp, tp, pp, ep in ((1, 1, 1, 2), (2, 1, 1, 2), (1, 2, 1, 2),
                                       (1, 1, 1, 4), (1, 1, 2, 2)):
                    for routing in ("uniform", "zipf:1.5"):
                        out.append((model, dict(dp=dp, tp=tp, pp=pp, ep=ep,
                                                phase="both", m=1, cp=1,
                                                chunk=0, batch=batch,
                                                routing=routing)))
        # MLA with chunked prefill is refused; the dense models do it.
        # Disaggregated: every prefill layout against every decode layout.
        for pre in (dict(tp=2), dict(tp=4), dict(tp=2, pp=2, m=2), dict(cp=2)):
            for dec in (dict(tp=1), dict(dp=2, tp=2), dict(pp=2, m=2, tp=4),
                        dict(ep=2) if moe else dict(dp=2)):
                out.append((model, dict(prefill=pre, decode=dec)))
    return out


def group_plan(g):
    return " ".join(f"{'micro-batches' if k == 'm' else k}={v}"
                    for k, v in g.items())


def options(o):
    if "prefill" in o:
        return (f"decode-tokens={TOKENS} prefill={{{group_plan(o['prefill'])}}} "
                f"decode={{{group_plan(o['decode'])}}}")
    words = [f"dp={o['dp']}", f"tp={o['tp']}", f"pp={o['pp']}", f"ep={o['ep']}",
             f"cp={o['cp']}"]
    if o["chunk"]:
        words += [f"chunked-prefill={o['chunk']}", f"decode-tokens={TOKENS}"]
    else:
        n = 0 if o["phase"] == "prefill" else TOKENS
        words += [f"decode-tokens={n}", f"phase={o['phase']}",
                  f"micro-batches={o['m']}"]
    if o.get("routing", "uniform") != "uniform":
        words.append(f"routing={o['routing']}")
    return " ".join(words)


def model_file(work, model, batch):
    return os.path.join(work, model + ("" if batch == BATCH else f"-b{batch}") +
                        ".mlir")


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


def handoff_bytes(c, dec):
    """Every decode rank's cache over the S prompt positions (the last W of
    them under a sliding window; bf16)."""
    L = c["num_hidden_layers"]
    tp, dp, ep = dec.get("tp", 1), dec.get("dp", 1), dec.get("ep", 1)
    positions = serving_oracle.window(c, SEQ) or SEQ
    per_rank = (L * serving_oracle.cache_per_token_and_layer(c, tp) *
                positions * (BATCH // (dp * ep)) * 2)
    return per_rank * dp * ep * tp


def check_disaggregated(bin_dir, configs, d, serve, name, model, o):
    c = json.load(open(os.path.join(configs, model + ".json")))
    expect = handoff_bytes(c, o["decode"])
    failures = []
    rc, out, err = run([os.path.join(bin_dir, "stage-translate"), serve,
                        "--stage-to-report", "--format=json"])
    if rc:
        return [f"report: {err.strip()}"]
    groups = json.loads(out)["groups"]
    got = groups[1]["report"]["job"]["kv_handoff"]["bytes"]["value"]
    if got != expect:
        failures.append(f"report kv_handoff {got}, expected {expect}")
    traces = os.path.join(d, "traces")
    rc, out, err = run([os.path.join(bin_dir, "stage-translate"), serve,
                        "--stage-to-chakra", f"--output-dir={traces}"])
    if rc:
        return failures + [f"traces: {err.strip()}"]
    if f" messages, {expect} bytes" not in out:
        failures.append(f"traces move {out.strip().splitlines()[-1]}, "
                        f"expected {expect} bytes")
    rc, out, err = run([os.path.join(bin_dir, "stage-trace"), "verify", traces])
    if rc or "runs to completion" not in out:
        failures.append(f"verify: {(out + err).strip()}")
    return failures


def check(bin_dir, configs, work, index, model, o):
    name = f"{model} {options(o)}"
    d = os.path.join(work, str(index))
    os.makedirs(d, exist_ok=True)
    serve = os.path.join(d, "serve.mlir")
    batch = o.get("batch", BATCH)
    rc, _, err = run([os.path.join(bin_dir, "stage-opt"),
                      model_file(work, model, batch),
                      f"--stage-infer={options(o)}", "-o", serve])
    if rc:
        return [f"{name}: stage-infer: {err.strip()}"]
    if "prefill" in o:
        failures = check_disaggregated(bin_dir, configs, d, serve, name, model, o)
        if not failures:
            subprocess.run(["rm", "-rf", d])
        return [f"{name}: {f}" for f in failures]
    report = os.path.join(d, "report.json")
    rc, _, err = run([os.path.join(bin_dir, "stage-translate"), serve,
                      "--stage-to-report", "--format=json", "-o", report])
    if rc:
        return [f"{name}: report: {err.strip()}"]
    c = json.load(open(os.path.join(configs, model + ".json")))
    r = json.load(open(report))
    decoded = 0 if o["phase"] == "prefill" else TOKENS
    # Tensor parallelism repeats the router and the latent projections on
    # every rank of an MoE or MLA model: FLOPs are checked without it.
    flops = o["tp"] == 1 or model == "llama-tiny"
    failures = serving_oracle.check(c, r, batch, SEQ, decoded, o["dp"], o["tp"],
                                    o["ep"], o["pp"], o["chunk"], flops,
                                    o["cp"])
    if "batch" in o and o["routing"] == "uniform":
        failures += expert_reads.check(c, r, batch, o["dp"], o["m"])
    traces = os.path.join(d, "traces")
    rc, _, err = run([os.path.join(bin_dir, "stage-translate"), serve,
                      "--stage-to-chakra", f"--output-dir={traces}"])
    if rc:
        failures.append(f"traces: {err.strip()}")
    else:
        rc, out, err = run([os.path.join(bin_dir, "stage-trace"), "verify", traces])
        if rc or "runs to completion" not in out:
            failures.append(f"verify: {(out + err).strip()}")
    if not failures:
        subprocess.run(["rm", "-rf", d])
    return [f"{name}: {f}" for f in failures]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("bin")
    ap.add_argument("configs")
    ap.add_argument("work")
    ap.add_argument("--jobs", type=int, default=2)
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    for model in MODELS:
        for batch in (BATCH,) + SMALL_BATCHES:
            rc, _, err = run([os.path.join(a.bin, "stage-translate"),
                              "--import-hf-config",
                              os.path.join(a.configs, model + ".json"),
                              f"--batch={batch}", f"--seq={SEQ}",
                              "-o", model_file(a.work, model, batch)])
            if rc:
                print(f"import {model}: {err}")
                sys.exit(1)
    todo = plans()
    with ThreadPoolExecutor(a.jobs) as pool:
        results = list(pool.map(lambda x: check(a.bin, a.configs, a.work, x[0], *x[1]),
                                enumerate(todo)))
    failed = 0
    for r in results:
        for line in r:
            print("FAIL " + line)
        failed += bool(r)
    print(f"plans: {len(todo)}, failed {failed}")


if __name__ == "__main__":
    main()
