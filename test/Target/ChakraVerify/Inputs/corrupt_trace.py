"""Writes a trace set with one defect of CHAKRA.md, for the verifier's
negative tests.

    corrupt_trace.py PB2_DIR SRC_DIR DST_DIR DEFECT

Copies the valid set SRC_DIR (ranks 0-3 of pp=2 x tp=2: ranks 0 and 1 are
stage 0, 2 and 3 stage 1) to DST_DIR and breaks it as DEFECT says, decoding
and re-encoding with protobuf's Python runtime. `deadlock` writes a new
two-rank set instead.
"""
import json
import os
import shutil
import sys

from google.protobuf.internal.decoder import _DecodeVarint32
from google.protobuf.internal.encoder import _VarintBytes

sys.path.insert(0, sys.argv[1])
import chakra_pb2 as pb  # noqa: E402

src, dst, defect = sys.argv[2], sys.argv[3], sys.argv[4]


def path(d, r):
    return os.path.join(d, f"workload.{r}.et")


def read(r):
    with open(path(src, r), "rb") as f:
        data = f.read()
    msgs, pos = [], 0
    while pos < len(data):
        size, pos = _DecodeVarint32(data, pos)
        msgs.append(data[pos:pos + size])
        pos += size
    meta = pb.GlobalMetadata()
    meta.ParseFromString(msgs[0])
    nodes = []
    for raw in msgs[1:]:
        n = pb.Node()
        n.ParseFromString(raw)
        nodes.append(n)
    return meta, nodes


def frame(messages):
    out = b""
    for m in messages:
        raw = m.SerializeToString()
        out += _VarintBytes(len(raw)) + raw
    return out


def write(r, meta, nodes):
    with open(path(dst, r), "wb") as f:
        f.write(frame(([meta] if meta is not None else []) + nodes))


def attr(node, name):
    for a in node.attr:
        if a.name == name:
            return a
    raise KeyError(name)


def first(nodes, type_):
    return next(n for n in nodes if n.type == type_)


def groups_edit(fn):
    p = os.path.join(dst, "workload.json")
    with open(p) as f:
        g = json.load(f)
    fn(g)
    with open(p, "w") as f:
        json.dump(g, f)


def deadlock():
    os.makedirs(dst, exist_ok=True)
    # Each rank receives first, then sends what the other waits for.
    for r in (0, 1):
        meta = pb.GlobalMetadata(version="0.0.4")
        recv = pb.Node(id=0, name="recv", type=pb.COMM_RECV_NODE)
        send = pb.Node(id=1, name="send", type=pb.COMM_SEND_NODE, data_deps=[0])
        for n, tag_from in ((recv, r), (send, 1 - r)):
            n.attr.add(name="is_cpu_op", bool_val=False)
            n.attr.add(name="comm_size", int64_val=1024)
            n.attr.add(name="comm_tag", int32_val=tag_from)
        recv.attr.add(name="comm_src", int32_val=1 - r)
        recv.attr.add(name="comm_dst", int32_val=r)
        send.attr.add(name="comm_src", int32_val=r)
        send.attr.add(name="comm_dst", int32_val=1 - r)
        write(r, meta, [recv, send])
    with open(os.path.join(dst, "workload.json"), "w") as f:
        f.write("{}")


if defect == "deadlock":
    deadlock()
    sys.exit(0)

shutil.rmtree(dst, ignore_errors=True)
shutil.copytree(src, dst)
# A hand-made set has no manifest (stage's would name the files' digests).
os.remove(os.path.join(dst, "workload.manifest.json"))
meta, nodes = read(0)
raw0 = open(path(src, 0), "rb").read()

if defect == "truncated":
    open(path(dst, 0), "wb").write(raw0[:-3])
elif defect == "zero-length":
    open(path(dst, 0), "wb").write(raw0 + b"\x00")
elif defect == "no-metadata":
    write(0, None, nodes)
elif defect == "missing-rank":
    os.remove(path(dst, 1))
elif defect == "duplicate-id":
    nodes[2].id = 1
    write(0, meta, nodes)
elif defect == "dangling-dep":
    nodes[1].data_deps.append(999999)
    write(0, meta, nodes)
elif defect == "cycle":
    nodes[0].data_deps.append(nodes[5].id)
    write(0, meta, nodes)
elif defect == "invalid-node":
    nodes[3].type = pb.INVALID_NODE
    write(0, meta, nodes)
elif defect == "metadata-node":
    nodes[3].type = pb.METADATA_NODE
    write(0, meta, nodes)
elif defect == "missing-attr":
    n = first(nodes, pb.COMP_NODE)
    keep = [a for a in n.attr if a.name != "num_ops"]
    del n.attr[:]
    n.attr.extend(keep)
    write(0, meta, nodes)
elif defect == "wrong-member":
    a = attr(first(nodes, pb.COMP_NODE), "num_ops")
    a.uint64_val = a.int64_val
    write(0, meta, nodes)
elif defect == "zero-tensor-size":
    attr(first(nodes, pb.COMP_NODE), "tensor_size").uint64_val = 0
    write(0, meta, nodes)
elif defect == "cpu-comm":
    attr(first(nodes, pb.COMM_COLL_NODE), "is_cpu_op").bool_val = True
    write(0, meta, nodes)
elif defect == "unsimulated-type":
    attr(first(nodes, pb.COMM_COLL_NODE), "comm_type").int64_val = pb.GATHER
    write(0, meta, nodes)
elif defect == "unknown-group":
    attr(first(nodes, pb.COMM_COLL_NODE), "pg_name").string_val = "99"
    write(0, meta, nodes)
elif defect == "not-a-member":
    groups_edit(lambda g: g.update({"1": [1, 2]}))
elif defect == "group-zero":
    groups_edit(lambda g: g.update({"0": g.pop("1")}))
elif defect == "collective-size":
    n = first(nodes, pb.COMM_COLL_NODE)
    attr(n, "comm_size").int64_val += 2
    write(0, meta, nodes)
elif defect == "recv-without-send":
    m2, n2 = read(2)
    attr(first(n2, pb.COMM_RECV_NODE), "comm_tag").int32_val = 12345
    write(2, m2, n2)
elif defect == "send-to-self":
    attr(first(nodes, pb.COMM_SEND_NODE), "comm_dst").int32_val = 0
    write(0, meta, nodes)
elif defect == "peer-out-of-range":
    attr(first(nodes, pb.COMM_SEND_NODE), "comm_dst").int32_val = 64
    write(0, meta, nodes)
elif defect == "collective-tag":
    # The first collective's comm_tag differs from its peer's (rank 1).
    attr(first(nodes, pb.COMM_COLL_NODE), "comm_tag").int32_val = 77
    write(0, meta, nodes)
elif defect == "repeated-tag":
    colls = [n for n in nodes if n.type == pb.COMM_COLL_NODE]
    group = attr(colls[0], "pg_name").string_val
    same = [n for n in colls if attr(n, "pg_name").string_val == group]
    attr(same[1], "comm_tag").int32_val = attr(same[0], "comm_tag").int32_val
    write(0, meta, nodes)
elif defect == "empty-group":
    groups_edit(lambda g: g.update({"1": []}))
elif defect == "extra-empty-group":
    groups_edit(lambda g: g.update({str(max(map(int, g)) + 1): []}))
elif defect == "empty-file":
    open(path(dst, 3), "wb").close()
elif defect == "metadata-only":
    m3, _ = read(3)
    write(3, m3, [])
elif defect == "negative-tag":
    attr(first(nodes, pb.COMM_SEND_NODE), "comm_tag").int32_val = -5
    write(0, meta, nodes)
else:
    sys.exit("corrupt_trace: unknown defect " + defect)
