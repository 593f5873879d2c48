/* philox.h - counter-based random numbers (Philox4x32-10).
 *
 * Every backend produces the same stream: element i of a random op with key
 * (seed) and stream id s uses counter {lo(i), hi(i), lo(s), hi(s)} and key
 * {lo(seed), hi(seed)}.  From the four 32-bit outputs r0..r3:
 *   uniform u = (r0 >> 8) * 2^-24                       in [0, 1)
 *   normal  z = sqrt(-2 ln u1) * cos(2 pi u2), computed in double and then
 *           rounded, with u1 = ((r0 >> 8) + 1) * 2^-24 in (0, 1] and
 *           u2 = (r1 >> 8) * 2^-24.
 */
#ifndef TD_PHILOX_H
#define TD_PHILOX_H

#include <stdint.h>

void td_philox4x32_10(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4]);
double td_rand_uniform(uint64_t seed, uint64_t stream, uint64_t i);
double td_rand_normal(uint64_t seed, uint64_t stream, uint64_t i);

/* 64-bit FNV-1a of a string: used to derive stream ids from names. */
uint64_t td_hash_str(const char *s);
/* Mixes two 64-bit values (splitmix64 finaliser of a ^ rotl(b)). */
uint64_t td_hash_mix(uint64_t a, uint64_t b);

#endif
