#!/usr/bin/env python3
"""What a trace write leaves behind under every fault, and what readers say.

    bench/faults.py [WORK_DIR]     (default: bench/out/faults; run as root)

Each case starts from a directory holding a published 1024-rank trace set
(the "old" set: a Llama-shaped step at dp=512 tp=2) and writes another
("new": the same step with recompute=full) into it under one fault. It
prints a Markdown table: the fault, how the run ended, what the directory
holds after it (rank files of each set, the manifest, staging
directories), what `stage-trace verify` says, and what the next plain run
into the directory does. docs/Safety.md keeps the table.

Faults are made, not simulated, where the machine allows: SIGKILL at each
phase of the write (strace's syscall fault injection kills the process on
entering its k-th rename or unlink, so the phase is exact; a poll of the
staging directory for the phase of writing traces), SIGTERM, a full disk
and a file system without free inodes (small tmpfs mounts), a file-size
limit (ulimit -f), a read-only file system (a tmpfs remounted read-only),
the directory a file or a link, two runs at once, and names planted where
the writer keeps its staging directories. Mounts need root; strace is
Debian's package of that name (installed when missing).
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.join(os.environ.get("STAGE_BUILD_DIR", os.path.join(ROOT, "build")), "bin")
WORK = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "bench", "out", "faults"))
TRANSLATE = os.path.join(BIN, "stage-translate")
TRACE = os.path.join(BIN, "stage-trace")
RANKS = 1024
rows = []


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def ensure_strace():
    if shutil.which("strace"):
        return
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    subprocess.run(["apt-get", "install", "-y", "-qq", "--no-install-recommends",
                    "strace"], check=True, env=env)


def write_cmd(step, out, *extra):
    return [TRANSLATE, step, "--stage-to-chakra", f"--output-dir={out}",
            "--threads=1", *extra]


def manifest_set(d):
    try:
        with open(os.path.join(d, "workload.manifest.json")) as f:
            return json.load(f)["set"]
    except (OSError, ValueError, KeyError):
        return None


def set_of_file(path, ids):
    """Which set a rank file belongs to, by the identity in its metadata."""
    try:
        with open(path, "rb") as f:
            head = f.read(200)
    except OSError:
        return "unreadable"
    for name, sid in ids.items():
        if sid.encode() in head:
            return name
    return "other"


def describe(d, ids):
    if not os.path.isdir(d):
        return "no directory"
    entries = os.listdir(d)
    counts = {}
    for r in range(RANKS):
        p = os.path.join(d, f"workload.{r}.et")
        if os.path.lexists(p):
            k = set_of_file(p, ids)
            counts[k] = counts.get(k, 0) + 1
    ms = manifest_set(d)
    manifest = next((n for n, s in ids.items() if s == ms), "none" if ms is None else "other")
    staging = sum(e.startswith(".stage-partial-") for e in entries)
    files = ", ".join(f"{v} {k}" for k, v in sorted(counts.items())) or "no"
    return (f"{files} rank files; manifest: {manifest}"
            + (f"; {staging} staging dir" if staging else ""))


def verify(d):
    p = run([TRACE, "verify", d])
    if p.returncode == 0:
        return "verified"
    first = p.stderr.strip().splitlines()[0] if p.stderr.strip() else "?"
    first = first.replace(d, "D").replace("error: ", "")
    return first if len(first) < 120 else first[:117] + "..."


def ended(p):
    if p.returncode < 0:
        return f"killed ({signal.Signals(-p.returncode).name})"
    msg = (p.stderr or "").strip().splitlines()
    msg = [m for m in msg if "error:" in m]
    text = msg[0].split("error: ", 1)[1] if msg else ""
    text = text.replace(WORK, "W")
    if len(text) > 110:
        text = text[:107] + "..."
    return f"exit {p.returncode}" + (f": {text}" if text else "")


def next_run(step, d, ids):
    p = run(write_cmd(step, d))
    return f"{ended(p)}; {describe(d, ids)}; {verify(d)}"


def record(fault, p, d, ids, step_new):
    rows.append((fault, ended(p), describe(d, ids), verify(d),
                 next_run(step_new, d, ids)))


def fresh(d, step_old):
    subprocess.run(["rm", "-rf", d], check=True)
    run(write_cmd(step_old, d)).check_returncode()


def poll_staging(proc, d, want):
    """Until the run's staging directory holds `want` traces."""
    deadline = time.monotonic() + 120
    while proc.poll() is None and time.monotonic() < deadline:
        n = 0
        for e in os.listdir(d):
            if e.startswith(".stage-partial-"):
                for _, _, files in os.walk(os.path.join(d, e)):
                    n += sum(f.endswith(".et") for f in files)
        if n >= want:
            return True
        time.sleep(0.0005)
    return False


def strace_kill(cmd, syscalls, when):
    return run(["strace", "-f", "-qq", "-o", "/dev/null", "-e", f"trace={syscalls}",
                "-e", f"inject={syscalls}:signal=SIGKILL:when={when}", *cmd])


class Mount:
    def __init__(self, path, options):
        self.path, self.options = path, options

    def __enter__(self):
        os.makedirs(self.path, exist_ok=True)
        p = run(["mount", "-t", "tmpfs", "-o", self.options, "tmpfs", self.path])
        self.ok = p.returncode == 0
        return self

    def __exit__(self, *a):
        if self.ok:
            run(["umount", self.path])


def main():
    ensure_strace()
    os.makedirs(WORK, exist_ok=True)
    llama = os.path.join(ROOT, "test/Transforms/stage-pipeline/Inputs/llama-8layers.json")
    model = os.path.join(WORK, "model.mlir")
    run([TRANSLATE, "--import-hf-config", llama, "--batch=1024", "--seq=128",
         "-o", model]).check_returncode()
    old, new = os.path.join(WORK, "old.mlir"), os.path.join(WORK, "new.mlir")
    opt = os.path.join(BIN, "stage-opt")
    run([opt, model, "--stage-train=dp=512 tp=2", "-o", old]).check_returncode()
    run([opt, model, "--stage-train=dp=512 tp=2 recompute=full", "-o", new]).check_returncode()
    ids = {}
    for name, step in (("old", old), ("new", new)):
        ref = os.path.join(WORK, f"ref-{name}")
        fresh(ref, step)
        ids[name] = manifest_set(ref)
    d = os.path.join(WORK, "D")

    # SIGKILL before the staging directory exists (building, sizing).
    fresh(d, old)
    record("SIGKILL before the staging directory is made (building, sizing)",
           strace_kill(write_cmd(new, d), "mkdir,mkdirat", 1), d, ids, new)
    # SIGKILL while the traces are written into the staging directory.
    fresh(d, old)
    proc = subprocess.Popen(write_cmd(new, d), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    poll_staging(proc, d, RANKS // 2)
    proc.send_signal(signal.SIGKILL)
    out, err = proc.communicate()
    record("SIGKILL while writing the traces (half in staging)",
           subprocess.CompletedProcess(proc.args, proc.returncode, out, err), d, ids, new)
    # SIGKILL at each step of the publication (renames: N traces, the
    # groups file, then the manifest; unlinks: the old manifest first).
    for label, syscalls, when in (
            ("SIGKILL after the old manifest is withdrawn, before the first move", "renameat,renameat2", 1),
            (f"SIGKILL halfway through the moves ({RANKS // 2} of {RANKS} traces in)", "renameat,renameat2", RANKS // 2 + 1),
            ("SIGKILL with every file moved, before the new manifest", "renameat,renameat2", RANKS + 2),
            ("SIGKILL after publication, removing the staging directory", "unlinkat", 2)):
        fresh(d, old)
        record(label, strace_kill(write_cmd(new, d), syscalls, when), d, ids, new)
    # SIGTERM (and SIGINT alike) while writing.
    fresh(d, old)
    proc = subprocess.Popen(write_cmd(new, d), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    poll_staging(proc, d, RANKS // 2)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate()
    record("SIGTERM while writing the traces", subprocess.CompletedProcess(proc.args, proc.returncode, out, err), d, ids, new)

    # A file-size limit.
    fresh(d, old)
    record("file-size limit (ulimit -f 64)",
           run(["sh", "-c", "ulimit -f 64; exec \"$@\"", "sh", *write_cmd(new, d)]), d, ids, new)
    # A full disk: the set does not fit (refused before writing), and a
    # disk that fills while the traces are written (ENOSPC injected).
    size = sum(os.path.getsize(os.path.join(WORK, "ref-old", f))
               for f in os.listdir(os.path.join(WORK, "ref-old")))
    m = os.path.join(WORK, "mnt")
    with Mount(m, f"size={int(size * 1.5) // 1024 + 64}k") as mount:
        if mount.ok:
            dm = os.path.join(m, "D")
            fresh(dm, old)
            record("full disk: the new set does not fit the free space", run(write_cmd(new, dm)), dm, ids, old)
        else:
            rows.append(("full disk", "(needs root: tmpfs mount)", "", "", ""))
    fresh(d, old)
    p = run(["strace", "-f", "-qq", "-o", "/dev/null", "-e", "trace=write",
             "-e", f"inject=write:error=ENOSPC:when={RANKS // 2}", *write_cmd(new, d)])
    record("disk full while writing (ENOSPC on a write, injected)", p, d, ids, new)
    with Mount(m, f"size=512m,nr_inodes={RANKS + 40}") as mount:
        if mount.ok:
            dm = os.path.join(m, "D")
            fresh(dm, old)
            record(f"no free inodes ({RANKS + 40} in all)", run(write_cmd(new, dm)), dm, ids, old)
    with Mount(m, "size=512m") as mount:
        if mount.ok:
            dm = os.path.join(m, "D")
            fresh(dm, old)
            run(["mount", "-o", "remount,ro", m])
            p = run(write_cmd(new, dm))
            rows.append(("read-only file system", ended(p), describe(dm, ids), verify(dm), "(read-only)"))
            run(["mount", "-o", "remount,rw", m])

    # The directory a file, a link to a file, a link to a directory.
    f = os.path.join(WORK, "afile")
    open(f, "w").close()
    rows.append(("D is a file", ended(run(write_cmd(new, f))), "the file unchanged" if os.path.getsize(f) == 0 else "CHANGED", "", ""))
    link = os.path.join(WORK, "filelink")
    if os.path.lexists(link):
        os.remove(link)
    os.symlink(f, link)
    rows.append(("D is a link to a file", ended(run(write_cmd(new, link))), "the file unchanged" if os.path.getsize(f) == 0 else "CHANGED", "", ""))
    fresh(d, old)
    dlink = os.path.join(WORK, "dirlink")
    if os.path.lexists(dlink):
        os.remove(dlink)
    os.symlink(d, dlink)
    p = run(write_cmd(new, dlink))
    rows.append(("D is a link to a directory (written through)", ended(p), describe(d, ids), verify(d), ""))

    # Two runs at once: different sets, the same set, two slices of one.
    fresh(d, old)
    a = subprocess.Popen(write_cmd(new, d), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    poll_staging(a, d, 1)
    a.send_signal(signal.SIGSTOP)
    b = run(write_cmd(old, d, "--grad-bucket=0"))
    a.send_signal(signal.SIGCONT)
    out, err = a.communicate()
    rows.append(("two runs of different sets at once (A stopped while B publishes)",
                 f"B {ended(b)}; A {ended(subprocess.CompletedProcess(a.args, a.returncode, out, err))}",
                 describe(d, ids) + " (B's set: old step, --grad-bucket=0)", verify(d), ""))
    fresh(d, old)
    a = subprocess.Popen(write_cmd(new, d), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    b = subprocess.Popen(write_cmd(new, d), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    ra, rb = a.wait(), b.wait()
    rows.append(("two runs of the same set at once", f"exit {ra} and {rb}", describe(d, ids), verify(d), ""))
    subprocess.run(["rm", "-rf", d], check=True)
    a = subprocess.Popen(write_cmd(new, d, f"--ranks=0:{RANKS // 2}"), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    b = subprocess.Popen(write_cmd(new, d, f"--ranks={RANKS // 2}:{RANKS}"), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    ra, rb = a.wait(), b.wait()
    rows.append(("two slices of one set at once (--ranks)", f"exit {ra} and {rb}", describe(d, ids), verify(d), ""))

    # Names planted where staging directories are kept.
    fresh(d, old)
    victim = os.path.join(WORK, "victim")
    shutil.rmtree(victim, ignore_errors=True)
    os.makedirs(os.path.join(victim, "sub"))
    open(os.path.join(victim, "precious"), "w").close()
    open(os.path.join(victim, "sub", "also"), "w").close()
    os.symlink(victim, os.path.join(d, ".stage-partial-999999999"))
    open(os.path.join(d, ".stage-partial-1"), "w").close()
    os.makedirs(os.path.join(d, ".stage-partial-dir"))
    forged = os.path.join(d, ".stage-partial-forged")
    os.makedirs(forged)
    with open(os.path.join(forged, "owner"), "w") as fh:
        fh.write("stage staging directory\n")
    chowned = run(["chown", "-R", "nobody", forged]).returncode == 0
    p = run(write_cmd(new, d))
    left = sorted(e for e in os.listdir(d) if e.startswith(".stage-partial-"))
    intact = all(os.path.exists(os.path.join(victim, x)) for x in ("precious", "sub/also"))
    rows.append(("planted: a link to a victim's directory, a file, a directory without the marker, "
                 + ("a forged marker of another user" if chowned else "a forged marker (not chowned)"),
                 ended(p), f"{describe(d, ids)}; left: {', '.join(left)}; victim "
                 + ("intact" if intact else "DAMAGED"), verify(d), ""))

    print("| fault | the run | the directory after it | `stage-trace verify` | the next run |")
    print("|---|---|---|---|---|")
    for r in rows:
        print("| " + " | ".join(c.replace("|", "\\|") for c in r) + " |")


if __name__ == "__main__":
    main()
