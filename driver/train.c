/* train.c - the pieces of `tdsl train` below the command line (driver/train.h). */
#include "driver/train.h"

#include <stdlib.h>
#include <string.h>

#include "runtime/mem.h"
#include "runtime/philox.h"

void td_train_shuffle(uint64_t seed, uint64_t epoch, int64_t n, int64_t *perm) {
  uint32_t key[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)};
  for (int64_t i = 0; i < n; i++)
    perm[i] = i;
  for (int64_t i = n - 1; i > 0; i--) {
    uint32_t ctr[4] = {(uint32_t)i, (uint32_t)((uint64_t)i >> 32), (uint32_t)epoch, (uint32_t)(epoch >> 32)}, r[4];
    td_philox4x32_10(ctr, key, r);
    uint64_t x = (uint64_t)r[1] << 32 | r[0];
    int64_t j = (int64_t)(x % (uint64_t)(i + 1)), t = perm[i];
    perm[i] = perm[j];
    perm[j] = t;
  }
}

td_tensor *td_train_rows(const td_tensor *data, const int64_t *rows, int64_t n, td_err *err) {
  int64_t shape[TD_MAX_RANK];
  memcpy(shape, data->shape, sizeof shape);
  shape[0] = n;
  td_tensor *t = td_tensor_new(data->dtype, data->rank, shape, err);
  if (!t)
    return NULL;
  size_t row = data->shape[0] ? (size_t)(data->numel / data->shape[0]) * td_dtype_size(data->dtype) : 0;
  for (int64_t i = 0; i < n; i++)
    memcpy((char *)t->data + (size_t)i * row, (const char *)data->data + (size_t)rows[i] * row, row);
  return t;
}

/* Movement ops and casts carry a label's value as it is. */
static int carries(td_op op) {
  return op == TD_IR_RESHAPE || op == TD_IR_BROADCAST || op == TD_IR_PERMUTE || op == TD_IR_CAST ||
         op == TD_IR_SLICE;
}

/* n is arange(C) of an integer dtype from 0 by 1: C, else -1. */
static int64_t arange_from_zero(const td_node *n) {
  if (n->op != TD_IR_ARANGE || n->rank != 1 || n->shape[0] < 0)
    return -1;
  int ints = !td_dtype_is_float(n->dtype);
  if (ints ? n->attr.i != 0 || n->attr.i2 != 1 : n->attr.f != 0 || n->attr.f2 != 1)
    return -1;
  return n->shape[0];
}

int64_t td_train_classes(const td_graph *g, int input) {
  char *lab = td_calloc((size_t)g->n_nodes + 1, 1);
  int64_t best = -1;
  if (!lab)
    return -1;
  if (input >= 0 && input < g->n_nodes)
    lab[input] = 1;
  for (int k = 0; k < g->n_nodes; k++) {
    const td_node *n = &g->nodes[k];
    int64_t c = -1;
    if (carries(n->op) && n->n_in == 1 && lab[n->in[0]]) {
      lab[k] = 1;
    } else if (n->op == TD_IR_EQ && n->n_in == 2 && (lab[n->in[0]] || lab[n->in[1]])) {
      c = arange_from_zero(&g->nodes[n->in[lab[n->in[0]] ? 1 : 0]]);
    } else if (n->op == TD_IR_GATHER && n->n_in == 2 && lab[n->in[1]]) {
      const td_node *x = &g->nodes[n->in[0]];
      if (n->attr.axis >= 0 && n->attr.axis < x->rank && x->shape[n->attr.axis] >= 0)
        c = x->shape[n->attr.axis];
    }
    if (c >= 0 && (best < 0 || c < best))
      best = c;
  }
  td_free(lab);
  return best;
}

static int by_name(const void *a, const void *b) {
  const td_node *x = *(const td_node *const *)a, *y = *(const td_node *const *)b;
  return strcmp(x->name, y->name);
}

void td_train_params_hash(const td_graph *g, char out[17]) {
  const td_node **p = td_malloc(((size_t)g->n_params + 1) * sizeof *p);
  uint64_t h = 0xcbf29ce484222325ull;
  for (int i = 0; p && i < g->n_params; i++)
    p[i] = &g->nodes[g->params[i]];
  if (p)
    qsort(p, (size_t)g->n_params, sizeof *p, by_name);
  for (int i = 0; p && i < g->n_params; i++) {
    if (i && !strcmp(p[i]->name, p[i - 1]->name))
      continue;
    char buf[512], t[256];
    int64_t shape[TD_MAX_RANK];
    for (int k = 0; k < p[i]->rank; k++)
      shape[k] = p[i]->shape[k];
    snprintf(buf, sizeof buf, "%s:%s;", p[i]->name, td_shape_str(p[i]->dtype, p[i]->rank, shape, t, sizeof t));
    for (const char *s = buf; *s; s++) {
      h ^= (unsigned char)*s;
      h *= 0x100000001b3ull;
    }
  }
  td_free(p);
  snprintf(out, 17, "%016llx", (unsigned long long)h);
}

int td_train_save(const char *path, const td_graph *g, td_tensor *const *params, const char *const *kv,
                  int n_kv, td_err *err) {
  td_tensor_map m;
  td_tensor_map_init(&m);
  int rc = 0;
  for (int i = 0; i < g->n_params && !rc; i++) {
    const char *name = g->nodes[g->params[i]].name;
    if (!td_tensor_map_get(&m, name))
      rc = td_tensor_map_put(&m, name, params[i], err);
  }
  if (!rc)
    rc = td_safetensors_write_meta(path, &m, kv, n_kv, err);
  td_tensor_map_free(&m);
  return rc;
}
