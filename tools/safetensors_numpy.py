"""safetensors files with numpy only, written from the format's specification
(https://github.com/huggingface/safetensors, "Format"): an 8-byte little-endian header size N,
N bytes of JSON ({name: {"dtype", "shape", "data_offsets": [begin, end]}, "__metadata__":
{str: str}}), then the tensors' bytes, little-endian, row-major, offsets relative to the end of
the header, packed without holes.

    tensors, metadata = load("model.safetensors")   # {name: ndarray}, {str: str}
    save("model.safetensors", {"dense.0.weight": array}, {"format": "pt"})

Not tested against the `safetensors` Python package (not available from Debian on the machines
hpctrain is developed on); the tests check this reader against files written by
`trainer --export` and against the specification's rules.
"""
import json
import struct

import numpy as np

DTYPES = {"F64": "<f8", "F32": "<f4", "F16": "<f2", "I64": "<i8", "I32": "<i4", "I16": "<i2", "I8": "i1",
          "U8": "u1", "BOOL": "?"}


def load(path):
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 8:
        raise ValueError("%s: shorter than a safetensors header" % path)
    (n,) = struct.unpack("<Q", data[:8])
    if 8 + n > len(data):
        raise ValueError("%s: header of %d bytes past the end of the file" % (path, n))
    header = json.loads(data[8:8 + n].decode("utf-8"))
    body = memoryview(data)[8 + n:]
    metadata = header.pop("__metadata__", {}) or {}
    tensors, spans = {}, []
    for name, t in header.items():
        if t["dtype"] not in DTYPES:
            raise ValueError("%s: %s has dtype %s, not read here" % (path, name, t["dtype"]))
        begin, end = t["data_offsets"]
        dt = np.dtype(DTYPES[t["dtype"]])
        if end - begin != int(np.prod(t["shape"], dtype=np.int64)) * dt.itemsize or end > len(body):
            raise ValueError("%s: %s's data_offsets %s do not fit shape %s" % (path, name, t["data_offsets"], t["shape"]))
        tensors[name] = np.frombuffer(body[begin:end], dtype=dt).reshape(t["shape"])
        spans.append((begin, end))
    at = 0
    for begin, end in sorted(spans):  # the specification: no holes, no overlaps, the whole buffer
        if begin != at:
            raise ValueError("%s: tensor data not packed (a gap or overlap at byte %d)" % (path, at))
        at = end
    if at != len(body):
        raise ValueError("%s: %d bytes after the last tensor" % (path, len(body) - at))
    return tensors, metadata


def save(path, tensors, metadata=None):
    names = {np.dtype(v): k for k, v in DTYPES.items()}
    header, at, blobs = {}, 0, []
    for name, a in tensors.items():
        a = np.ascontiguousarray(a)
        b = a.astype(a.dtype.newbyteorder("<")).tobytes()
        header[name] = {"dtype": names[a.dtype.newbyteorder("<") if a.dtype.itemsize > 1 else a.dtype],
                        "shape": list(a.shape), "data_offsets": [at, at + len(b)]}
        blobs.append(b)
        at += len(b)
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    text = json.dumps(header).encode("utf-8")
    text += b" " * (-len(text) % 8)  # the data start 8-byte aligned
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))
