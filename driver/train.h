/* train.h - what `tdsl train` needs below the command line (driver/train.c).
 *
 * The host loop of training lives in the command (cli/train.c): a step is
 * one ordinary graph, run with td_prepare once and td_prepared_run per
 * batch.  These are its pieces that print nothing and choose no exit
 * code: the shuffle, the rows of a batch, the number of classes a graph
 * reveals, the fingerprint of a model's parameters, and checkpoints.
 */
#ifndef TD_TRAIN_H
#define TD_TRAIN_H

#include <stdint.h>

#include "lang/ir.h"
#include "runtime/io.h"

/* The checkpoint format written in "__metadata__"'s "format". */
#define TD_TRAIN_FORMAT "tdsl-train-1"

/* The order of the n training examples in epoch `epoch` (0-based) under
 * `seed`: perm[i] = i, then Fisher-Yates from the end, for i = n-1 down to
 * 1: swap perm[i] and perm[j], j = X mod (i + 1), X the 64-bit number
 * r1 * 2^32 + r0 of Philox4x32-10 (runtime/philox.h) with counter
 * {lo(i), hi(i), lo(epoch), hi(epoch)} and key {lo(seed), hi(seed)}.
 * (The modulo's bias is below (i + 1) / 2^64.) */
void td_train_shuffle(uint64_t seed, uint64_t epoch, int64_t n, int64_t *perm);

/* A tensor of the rows rows[0..n) of data (axis 0), with data's dtype and
 * its other dimensions; NULL with err filled when memory runs out. */
td_tensor *td_train_rows(const td_tensor *data, const int64_t *rows, int64_t n, td_err *err);

/* The number of classes that graph g reveals for its integer input
 * `input` (an INPUT node id): the smallest C over the one_hot(labels, C)
 * it contains (labels, through reshapes, broadcasts and casts, compared
 * with arange(C)) and the take(x, labels, axis) (C = x's literal size on
 * that axis).  -1 when g shows none. */
int64_t td_train_classes(const td_graph *g, int input);

/* A fingerprint of g's parameters, their names, dtypes and shapes (each
 * name once, in name order; FNV-1a of "name:f32[2, 3];..."), as 16 hex
 * digits into out[17]: two models whose parameters differ get different
 * fingerprints, so a checkpoint cannot be resumed into the wrong one. */
void td_train_params_hash(const td_graph *g, char out[17]);

/* Writes the tensors params[] (one per PARAM node of g, in g->params
 * order; a name reached twice is written once) to the safetensors file
 * path with the metadata kv[0..2 n_kv) (pairs of strings), atomically:
 * a temporary file in path's directory, fsync, rename, fsync of the
 * directory (runtime/fileio.h), so a kill at any moment leaves the old
 * file or the new one.  0, or -1 with err filled. */
int td_train_save(const char *path, const td_graph *g, td_tensor *const *params, const char *const *kv,
                  int n_kv, td_err *err);

#endif
