/* philox.c - Philox4x32-10 counter-based random numbers, and string hashes.
 *
 * Philox (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3",
 * SC'11) with 10 rounds; each round multiplies two counter words by M0/M1
 * and mixes the high/low halves with the other words and the key, and the
 * key is bumped by the Weyl constants W0/W1 between rounds.  The mapping of
 * (seed, stream, index) to counter/key and to floats is fixed in philox.h;
 * every backend must reproduce it bit for bit.
 */
#include "runtime/philox.h"

#include <math.h>

#define PHILOX_M0 0xD2511F53u
#define PHILOX_M1 0xCD9E8D57u
#define PHILOX_W0 0x9E3779B9u
#define PHILOX_W1 0xBB67AE85u

static void philox_round(uint32_t c[4], const uint32_t k[2]) {
  uint64_t p0 = (uint64_t)PHILOX_M0 * c[0];
  uint64_t p1 = (uint64_t)PHILOX_M1 * c[2];
  uint32_t hi0 = (uint32_t)(p0 >> 32), lo0 = (uint32_t)p0;
  uint32_t hi1 = (uint32_t)(p1 >> 32), lo1 = (uint32_t)p1;
  uint32_t n0 = hi1 ^ c[1] ^ k[0];
  uint32_t n2 = hi0 ^ c[3] ^ k[1];
  c[0] = n0;
  c[1] = lo1;
  c[2] = n2;
  c[3] = lo0;
}

void td_philox4x32_10(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4]) {
  uint32_t c[4] = {ctr[0], ctr[1], ctr[2], ctr[3]};
  uint32_t k[2] = {key[0], key[1]};
  for (int r = 0; r < 10; r++) {
    if (r > 0) {
      k[0] += PHILOX_W0;
      k[1] += PHILOX_W1;
    }
    philox_round(c, k);
  }
  for (int i = 0; i < 4; i++)
    out[i] = c[i];
}

/* The four words for element i of stream `stream` under `seed`. */
static void rand_words(uint64_t seed, uint64_t stream, uint64_t i, uint32_t r[4]) {
  uint32_t ctr[4] = {(uint32_t)i, (uint32_t)(i >> 32), (uint32_t)stream,
                     (uint32_t)(stream >> 32)};
  uint32_t key[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)};
  td_philox4x32_10(ctr, key, r);
}

#define TWO_M24 (1.0 / 16777216.0) /* 2^-24 */

double td_rand_uniform(uint64_t seed, uint64_t stream, uint64_t i) {
  uint32_t r[4];
  rand_words(seed, stream, i, r);
  return (double)(r[0] >> 8) * TWO_M24;
}

double td_rand_normal(uint64_t seed, uint64_t stream, uint64_t i) {
  uint32_t r[4];
  rand_words(seed, stream, i, r);
  double u1 = ((double)(r[0] >> 8) + 1.0) * TWO_M24; /* (0, 1] */
  double u2 = (double)(r[1] >> 8) * TWO_M24;         /* [0, 1) */
  const double two_pi = 6.283185307179586476925286766559;
  return sqrt(-2.0 * log(u1)) * cos(two_pi * u2);
}

uint64_t td_hash_str(const char *s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (; *s; s++) {
    h ^= (unsigned char)*s;
    h *= 0x100000001b3ull;
  }
  return h;
}

/* splitmix64's finaliser applied to a ^ rotl(b, 32). */
uint64_t td_hash_mix(uint64_t a, uint64_t b) {
  uint64_t z = a ^ ((b << 32) | (b >> 32));
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
