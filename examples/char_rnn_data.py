#!/usr/bin/env python3
"""char_rnn_data.py - the data of examples/char_rnn.td, with Python's standard
library only.

  python3 examples/char_rnn_data.py windows [TEXT] [OUTDIR] [--window T] [--stride S] [--test-frac F]
      cuts TEXT (default /usr/share/common-licenses/GPL-3) into windows of T
      character ids (default 64) every S characters (default T / 2) and writes
      OUTDIR/{train,test}_x.npy and {train,test}_y.npy (i64 [N, T]; y is x
      shifted by one character: the next character at every position).  The
      last F of the text (default 0.1) is the test set; windows never cross
      the split.
  python3 examples/char_rnn_data.py encode TEXT OUT.npy
      the ids of the string TEXT as i64 [len(TEXT)] (a prime for `sample`)
  python3 examples/char_rnn_data.py count K OUT.npy
      K zeros as i64 [K]: `sample` generates as many characters as `n` holds
  python3 examples/char_rnn_data.py temp X OUT.npy
      the temperature X as an f32 [] (0: greedy)
  python3 examples/char_rnn_data.py decode IDS.npy
      prints the characters of an integer .npy of ids

The vocabulary is fixed, so that the model knows its size (96): id 0 is a
newline, ids 1 to 95 are the printable ASCII characters 32 (space) to 126;
any other character (a tab, non-ASCII) becomes a space.
"""
import os
import struct
import sys

VOCAB = 96
DEFAULT_TEXT = "/usr/share/common-licenses/GPL-3"


def char_id(c):
    if c == "\n":
        return 0
    o = ord(c)
    return o - 31 if 32 <= o <= 126 else 1


def id_char(i):
    return "\n" if i == 0 else chr(i + 31)


def write_npy(path, rows, shape, descr="<i8"):
    """Writes values (a flat list) of the given shape as .npy version 1.0:
    int64 (descr <i8) or float32 (<f4)."""
    dims = ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "")
    header = "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }" % (descr, dims)
    pad = 64 - (10 + len(header) + 1) % 64
    header = header + " " * (pad % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode("latin1"))
        f.write(struct.pack("<%d%s" % (len(rows), "q" if descr == "<i8" else "f"), *rows))


def read_npy(path):
    """Reads a little-endian integer .npy (i8/i4/i2/u1): the flat values."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:6] != b"\x93NUMPY":
        sys.exit(f"{path}: not a .npy file")
    if data[6] == 1:
        hlen, start = struct.unpack("<H", data[8:10])[0], 10
    else:
        hlen, start = struct.unpack("<I", data[8:12])[0], 12
    header = data[start:start + hlen].decode("latin1")
    body = data[start + hlen:]
    for code, fmt in (("<i8", "q"), ("<i4", "i"), ("<i2", "h"), ("|u1", "B")):
        if f"'{code}'" in header:
            n = len(body) // struct.calcsize(fmt)
            return list(struct.unpack("<%d%s" % (n, fmt), body[:n * struct.calcsize(fmt)]))
    sys.exit(f"{path}: not an integer .npy ({header.strip()})")


def windows(ids, t, stride):
    xs, ys, n = [], [], 0
    for s in range(0, len(ids) - t, stride):
        xs += ids[s:s + t]
        ys += ids[s + 1:s + t + 1]
        n += 1
    return xs, ys, n


def main(argv):
    if len(argv) < 1 or argv[0] not in ("windows", "encode", "decode", "count", "temp"):
        sys.exit(__doc__)
    cmd, rest = argv[0], argv[1:]
    if cmd == "encode" and len(rest) == 2:
        ids = [char_id(c) for c in rest[0]]
        write_npy(rest[1], ids, [len(ids)])
        return
    if cmd == "count" and len(rest) == 2:
        write_npy(rest[1], [0] * int(rest[0]), [int(rest[0])])
        return
    if cmd == "temp" and len(rest) == 2:
        write_npy(rest[1], [float(rest[0])], [], "<f4")
        return
    if cmd == "decode" and len(rest) == 1:
        sys.stdout.write("".join(id_char(i) if 0 <= i < VOCAB else "?" for i in read_npy(rest[0])) + "\n")
        return
    if cmd != "windows":
        sys.exit(__doc__)
    opts = {"--window": 64, "--stride": 0, "--test-frac": 0.1}
    pos = []
    i = 0
    while i < len(rest):
        if rest[i] in opts and i + 1 < len(rest):
            opts[rest[i]] = type(opts[rest[i]])(rest[i + 1])
            i += 2
        else:
            pos.append(rest[i])
            i += 1
    text_path = pos[0] if pos else DEFAULT_TEXT
    out = pos[1] if len(pos) > 1 else "."
    t = opts["--window"]
    stride = opts["--stride"] or max(1, t // 2)
    with open(text_path, encoding="utf-8", errors="replace") as f:
        ids = [char_id(c) for c in f.read()]
    os.makedirs(out, exist_ok=True)
    cut = int(len(ids) * (1 - opts["--test-frac"]))
    for name, part in (("train", ids[:cut]), ("test", ids[cut:])):
        xs, ys, n = windows(part, t, stride)
        if n == 0:
            sys.exit(f"{text_path}: the {name} part has {len(part)} characters, too few for a window of {t}")
        write_npy(f"{out}/{name}_x.npy", xs, [n, t])
        write_npy(f"{out}/{name}_y.npy", ys, [n, t])
        print(f"{out}/{name}_x.npy, {out}/{name}_y.npy: {n} windows of {t} characters")


if __name__ == "__main__":
    main(sys.argv[1:])
