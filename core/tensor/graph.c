/*
** graph.c — the autograd graph's memory: records (tt_tensor.ag) and nodes
** are allocated, refcounted and freed here, below the ops, so
** tt_tensor_release can drop them. Recording and the backward pass are
** core/ops/autograd.c. Every op recorded for backward makes a node, so a
** node is one block sized to its op (a view's has no saved slots) that
** holds its result's record too, and its bytes count against the memory
** cap and in tt_graph_memory_in_use: Lua's collector sees only the small
** userdata of a result, and the interpreter collects when tensors and
** graphs together grow.
*/
#include <stdlib.h>
#include <string.h>

#include "tt_internal.h"

static int64_t graph_bytes;

int64_t tt_graph_memory_in_use(void) { return graph_bytes; }

/* Freed blocks are kept for reuse, by size in steps of 64 bytes, outside
   the cap's count as malloc's own free memory is: Lua frees a collection
   cycle's dead results at once, and malloc sorting them back into its bins
   (unlink_chunk, _int_malloc) took a third of a recorded view's time
   (perf). The last block freed is the first reused, still in cache. A size
   keeps up to the most of it that was ever in use at once (at least 512
   KiB, at most 32 MiB), so the process never holds more than it once used,
   and a loop's blocks never crowd out those of the next: one shared
   budget made a recorded softmax run after a recorded matmul loop 4x
   slower than alone, and a fixed 512 KiB a size kept a fifth of a recorded
   softmax loop's nodes (a collection cycle frees about 3 MB of them), the
   rest going back to malloc cold: 0.9 us an op against 0.5. Under
   AddressSanitizer none is kept, so it sees every use after free. */
#define KEEP_CLASSES 32                 /* blocks up to 2 KiB */
#define KEEP_MIN_BYTES ((int64_t)512 << 10)
#define KEEP_MAX_BYTES ((int64_t)32 << 20)

typedef struct kept_block { struct kept_block *next; } kept_block;
static kept_block *kept[KEEP_CLASSES];
static int64_t kept_bytes[KEEP_CLASSES];
static int64_t live_bytes[KEEP_CLASSES], peak_bytes[KEEP_CLASSES];   /* in use, and its most */

#if defined(__SANITIZE_ADDRESS__)
#define KEEPING 0
#else
#define KEEPING 1
#endif

static size_t block_size(size_t bytes) { return (bytes + 63) & ~(size_t)63; }

/* A block of at least bytes (block_size of them, as graph_free is told). */
static void *graph_alloc(size_t bytes)
{
    size_t sz = block_size(bytes), idx = sz / 64 - 1;
    if (tt__mem_reserve((int64_t)sz)) return NULL;
    void *p = NULL;
    if (idx < KEEP_CLASSES && kept[idx]) {
        p = kept[idx];
        kept[idx] = kept[idx]->next;
        kept_bytes[idx] -= (int64_t)sz;
    } else if ((p = malloc(sz)) == NULL) {
        tt__mem_release((int64_t)sz);
        tt__err(TT_ENOMEM, "out of memory");
        return NULL;
    }
    graph_bytes += (int64_t)sz;
    if (idx < KEEP_CLASSES && (live_bytes[idx] += (int64_t)sz) > peak_bytes[idx]) peak_bytes[idx] = live_bytes[idx];
    return p;
}

static int64_t keep_budget(size_t idx)
{
    int64_t b = peak_bytes[idx];
    return b < KEEP_MIN_BYTES ? KEEP_MIN_BYTES : b > KEEP_MAX_BYTES ? KEEP_MAX_BYTES : b;
}

static void graph_free(void *p, size_t bytes)
{
    size_t sz = block_size(bytes), idx = sz / 64 - 1;
    tt__mem_release((int64_t)sz);
    graph_bytes -= (int64_t)sz;
    if (idx < KEEP_CLASSES) live_bytes[idx] -= (int64_t)sz;
    if (KEEPING && idx < KEEP_CLASSES && kept_bytes[idx] + (int64_t)sz <= keep_budget(idx)) {
        kept_block *b = p;
        b->next = kept[idx];
        kept[idx] = b;
        kept_bytes[idx] += (int64_t)sz;
    } else {
        free(p);
    }
}

void tt__graph_drop_cache(void)
{
    for (int i = 0; i < KEEP_CLASSES; i++) {
        while (kept[i]) {
            kept_block *b = kept[i];
            kept[i] = b->next;
            free(b);
        }
        kept_bytes[i] = 0;
    }
}

tt_autograd *tt__ag_new(void)
{
    tt_autograd *r = graph_alloc(sizeof *r);
    if (r) {
        memset(r, 0, sizeof *r);
        r->refs = 1;
    }
    return r;
}

tt_tensor *tt__ag_grad_slot(tt_autograd *r)
{
    if (r->grad == NULL && (r->grad = graph_alloc(sizeof *r->grad)) != NULL) memset(r->grad, 0, sizeof *r->grad);
    return r->grad;
}

tt__node *tt__node_new(tt_op op, const tt_tensor *const *in, int nin, int nsaved, const tt_tensor *out)
{
    size_t dims = (size_t)out->ndim;
    for (int i = 0; i < nin; i++) dims += (size_t)in[i]->ndim;
    size_t head = sizeof(tt__node) + (size_t)nin * sizeof(tt__edge);
    size_t bytes = block_size(head + (size_t)nsaved * (sizeof(tt_tensor) + sizeof(int64_t))
                              + dims * (sizeof(int64_t) + sizeof(char *)));
    tt__node *n = graph_alloc(bytes);
    if (n == NULL) return NULL;
    memset(n, 0, head);
    n->refs = 1;                        /* the result record's */
    n->result.refs = 1;
    n->result.requires_grad = 1;
    n->result.in_node = 1;
    n->result.fn = n;
    n->op = op;
    n->nin = nin;
    n->nsaved = nsaved;
    n->bytes = bytes;
    n->saved = (tt_tensor *)((char *)n + head);
    memset(n->saved, 0, (size_t)nsaved * sizeof(tt_tensor));
    n->saved_version = (int64_t *)(n->saved + nsaved);
    int64_t *shapes = n->saved_version + nsaved;
    const char **names = (const char **)(shapes + dims);
    for (int i = 0; i < nin; i++) {
        tt__edge *e = &n->in[i];
        int nd = in[i]->ndim;
        e->ndim = nd;
        e->dtype = in[i]->dtype;
        e->shape = memcpy(shapes, in[i]->shape, (size_t)nd * sizeof *shapes);
        e->names = memcpy(names, in[i]->names, (size_t)nd * sizeof *names);
        e->label = in[i]->label;
        shapes += nd;
        names += nd;
    }
    n->out_names = memcpy(names, out->names, (size_t)out->ndim * sizeof *names);
    return n;
}

void tt__node_free_saved(tt__node *n)
{
    int held = n->operands != NULL;     /* a node that saved nothing can run again, as in PyTorch */
    for (int i = 0; i < n->nsaved; i++)
        if (n->filled >> i & 1) {
            held |= n->saved[i].storage != NULL;
            tt_tensor_release(&n->saved[i]);
        }
    if (n->operands) {
        for (int i = 0; i < n->nin; i++) tt_tensor_release(&n->operands[i]);
        free(n->operands);
        n->operands = NULL;
    }
    n->freed |= held;
}

/* Without recursion: a training loop's graph is a chain as long as the
   loop, and the last reference to its end frees it all. A node joins the
   list when its count reaches zero, so it is on it at most once. */
void tt__node_release(tt__node *n)
{
    if (n == NULL || --n->refs > 0) return;
    n->link = NULL;
    for (tt__node *todo = n; todo;) {
        tt__node *x = todo;
        todo = x->link;
        tt__node_free_saved(x);
        for (int i = 0; i < x->nin; i++) {
            tt__ag_release(x->in[i].leaf);  /* a leaf's record has no node: no recursion */
            tt__node *m = x->in[i].next;
            if (m && --m->refs == 0) {
                m->link = todo;
                todo = m;
            }
        }
        graph_free(x, x->bytes);
    }
}

void tt__ag_release(tt_autograd *r)
{
    if (r == NULL || --r->refs > 0) return;
    if (r->grad) {
        tt_tensor_release(r->grad);
        graph_free(r->grad, sizeof *r->grad);
    }
    if (r->in_node) {
        tt__node_release(r->fn);        /* frees r with the node when none else holds it */
        return;
    }
    tt__node_release(r->fn);
    graph_free(r, sizeof *r);
}
