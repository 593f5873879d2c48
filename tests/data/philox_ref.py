#!/usr/bin/env python3
"""philox_ref.py - an independent Philox4x32-10 (Salmon et al., SC'11) for
the expected values of the random tests, written from the paper and checked
here against Random123's known-answer vectors (kat_vectors, philox4x32_10).

    python3 tests/data/philox_ref.py SEED STREAM N [normal]

prints element 0..N-1 of a random op with key SEED (an integer, negative
ones taken as 64-bit two's complement, as tdsl sign-extends a seed tensor)
and stream STREAM (integer, 0x... allowed): the uniform (r0 >> 8) * 2^-24,
or with `normal` sqrt(-2 ln u1) cos(2 pi u2), each as its exact float and
its f32 bits.  The counter of element i is {lo(i), hi(i), lo(s), hi(s)}, the
key {lo(seed), hi(seed)}; runtime/philox.h fixes this mapping.
"""
import math
import struct
import sys

M0, M1, W0, W1, MASK = 0xD2511F53, 0xCD9E8D57, 0x9E3779B9, 0xBB67AE85, 0xFFFFFFFF


def philox(ctr, key):
    c0, c1, c2, c3 = ctr
    k0, k1 = key
    for _ in range(10):
        p0, p1 = M0 * c0, M1 * c2
        c0, c1, c2, c3 = (p1 >> 32) ^ c1 ^ k0, p1 & MASK, (p0 >> 32) ^ c3 ^ k1, p0 & MASK
        k0, k1 = (k0 + W0) & MASK, (k1 + W1) & MASK
    return c0, c1, c2, c3


# Random123 kat_vectors: philox4x32 10 rounds
KAT = [((0, 0, 0, 0), (0, 0), (0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8)),
       ((MASK,) * 4, (MASK, MASK), (0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd)),
       ((0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344), (0xa4093822, 0x299f31d0),
        (0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1))]


def words(seed, stream, i):
    seed &= (1 << 64) - 1
    return philox((i & MASK, i >> 32, stream & MASK, stream >> 32), (seed & MASK, seed >> 32))


def uniform(seed, stream, i):
    return (words(seed, stream, i)[0] >> 8) * 2.0 ** -24


def normal(seed, stream, i):
    r = words(seed, stream, i)
    u1 = ((r[0] >> 8) + 1) * 2.0 ** -24
    u2 = (r[1] >> 8) * 2.0 ** -24
    return math.sqrt(-2.0 * math.log(u1)) * math.cos(2.0 * math.pi * u2)


def f32_bits(x):
    return struct.unpack('<I', struct.pack('<f', x))[0]


def main():
    for ctr, key, want in KAT:
        assert philox(ctr, key) == want, "Philox does not match Random123's known answers"
    seed, stream, n = int(sys.argv[1], 0), int(sys.argv[2], 0), int(sys.argv[3])
    f = normal if len(sys.argv) > 4 and sys.argv[4] == 'normal' else uniform
    for i in range(n):
        v = f(seed, stream, i)
        print('%d %.17g 0x%08x' % (i, v, f32_bits(v)))


if __name__ == '__main__':
    main()
