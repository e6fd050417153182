#!/usr/bin/python3
"""read_events.py [--purge] FILE_OR_DIR...: prints the scalars of TensorBoard event files as
`tag step value` lines, checking every record's two masked CRC32Cs (exit 1 naming the record
that fails). --purge applies TensorBoard's rule for resumed runs (its EventAccumulator): a SessionLog
START at step S drops the points of earlier records with step >= S. Needs python3-protobuf and the classes
protoc makes from event.proto beside this file (PYTHONPATH, or --proto-out DIR to make them).
Used by the tests; handy to inspect a run without TensorBoard."""
import argparse
import os
import pathlib
import struct
import subprocess
import sys

_TABLE = []
for i in range(256):
    c = i
    for _ in range(8):
        c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
    _TABLE.append(c)


def crc32c(data):
    c = 0xFFFFFFFF
    for b in data:
        c = _TABLE[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def masked(data):
    c = crc32c(data)
    return (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def records(path):
    """The serialized events of one file, CRCs checked."""
    data = pathlib.Path(path).read_bytes()
    at, n = 0, 0
    while at < len(data):
        if at + 12 > len(data):
            raise ValueError(f"{path}: record {n}: truncated header")
        head = data[at:at + 8]
        (length,) = struct.unpack("<Q", head)
        (len_crc,) = struct.unpack("<I", data[at + 8:at + 12])
        if masked(head) != len_crc:
            raise ValueError(f"{path}: record {n}: length CRC mismatch")
        body = data[at + 12:at + 12 + length]
        (data_crc,) = struct.unpack("<I", data[at + 12 + length:at + 16 + length])
        if masked(body) != data_crc:
            raise ValueError(f"{path}: record {n}: data CRC mismatch")
        yield body
        at += 16 + length
        n += 1


def load_pb2(proto_out):
    here = pathlib.Path(__file__).resolve().parent
    if proto_out:
        os.makedirs(proto_out, exist_ok=True)
        subprocess.run(["protoc", f"--proto_path={here}", f"--python_out={proto_out}", str(here / "event.proto")],
                       check=True)
        sys.path.insert(0, proto_out)
    import event_pb2  # noqa: E402
    return event_pb2


def events(paths, pb2):
    """(file, Event) in file-name order (the writer's time stamp first), then record order."""
    files = []
    for p in paths:
        p = pathlib.Path(p)
        files += sorted(p.glob("events.out.tfevents.*")) if p.is_dir() else [p]
    for f in files:
        for body in records(f):
            e = pb2.Event()
            e.ParseFromString(body)
            yield f, e


def scalars(paths, pb2, purge):
    points = []  # (tag, step, value)
    for _, e in events(paths, pb2):
        if purge and e.WhichOneof("what") == "session_log" and e.session_log.status == pb2.SessionLog.START:
            points = [p for p in points if p[1] < e.step]
        if e.WhichOneof("what") == "summary":
            for v in e.summary.value:
                if not v.HasField("tensor"):  # (text summaries carry a tensor)
                    points.append((v.tag, e.step, v.simple_value))
    return points


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("paths", nargs="+")
    ap.add_argument("--purge", action="store_true")
    ap.add_argument("--proto-out", default=None)
    a = ap.parse_args()
    pb2 = load_pb2(a.proto_out)
    try:
        for tag, step, value in scalars(a.paths, pb2, a.purge):
            print(tag, step, repr(value))
    except ValueError as e:
        print(e, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
