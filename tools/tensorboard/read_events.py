#!/usr/bin/python3
"""read_events.py [--purge] FILE_OR_DIR...: prints the scalars of TensorBoard event files as
`tag step value` lines, checking every record's two masked CRC32Cs (exit 1 naming the record
that fails). A directory means its events.out.tfevents.* files, oldest first (a run's
<out_dir>/tensorboard). --purge applies TensorBoard's rule for resumed and restarted runs (its
EventAccumulator): a SessionLog START at step S drops the points of earlier records with step >= S,
so a run's folder reads as the one curve TensorBoard shows.

Needs python3-protobuf and protoc (protobuf-compiler; tools/setup.sh installs both): the classes
protoc makes from event.proto beside this file are made once into ~/.cache/hpctrain (or
$XDG_CACHE_HOME/hpctrain; --proto-out DIR to choose). Used by the tests; handy to inspect a run
without TensorBoard."""
import argparse
import hashlib
import os
import shutil
import tempfile
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


def proto_cache():
    """The folder for the classes of this event.proto: the user's cache, named by the file's hash."""
    here = pathlib.Path(__file__).resolve().parent
    digest = hashlib.sha256((here / "event.proto").read_bytes()).hexdigest()[:12]
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "hpctrain", "tensorboard-proto-" + digest)


def load_pb2(proto_out=None):
    """The module protoc makes from event.proto: made into proto_out (default: proto_cache())
    unless it is there already."""
    here = pathlib.Path(__file__).resolve().parent
    out = proto_out or proto_cache()
    if not os.path.exists(os.path.join(out, "event_pb2.py")):
        if shutil.which("protoc") is None:
            sys.exit("read_events.py: protoc not found: install protobuf-compiler and python3-protobuf "
                     "(tools/setup.sh installs them)")
        os.makedirs(os.path.dirname(out) or ".", exist_ok=True)
        work = tempfile.mkdtemp(dir=os.path.dirname(out) or ".")  # then renamed: no half-written module
        subprocess.run(["protoc", f"--proto_path={here}", f"--python_out={work}", str(here / "event.proto")],
                       check=True)
        if os.path.exists(os.path.join(out, "event_pb2.py")):  # (another reader made it meanwhile)
            shutil.rmtree(work)
        else:
            shutil.rmtree(out, ignore_errors=True)
            os.rename(work, out)
    sys.path.insert(0, out)
    try:
        import event_pb2  # noqa: E402
    except ImportError as e:
        sys.exit(f"read_events.py: {e}: install python3-protobuf (tools/setup.sh installs it)")
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
    ap.add_argument("--proto-out", default=None, help="where to make event_pb2.py (default: the user's cache)")
    a = ap.parse_args()
    pb2 = load_pb2(a.proto_out)
    try:
        for p in a.paths:
            if not os.path.exists(p):
                raise ValueError(f"{p}: no such file or directory")
        for tag, step, value in scalars(a.paths, pb2, a.purge):
            print(tag, step, repr(value))
    except ValueError as e:
        print(e, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
