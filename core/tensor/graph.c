/*
** graph.c — the autograd graph's memory: records (tt_tensor.ag) and nodes
** are refcounted and freed here, below the ops, so tt_tensor_release can
** drop them. Recording and the backward pass are core/ops/autograd.c.
*/
#include <stdlib.h>

#include "tt_internal.h"

void tt__node_free_saved(tt__node *n)
{
    for (int i = 0; i < TT__AG_SAVED; i++) tt_tensor_release(&n->saved[i]);
    if (n->operands) {
        for (int i = 0; i < n->nin; i++) tt_tensor_release(&n->operands[i]);
        free(n->operands);
        n->operands = NULL;
    }
    tt_tensor_release(&n->acc);
    n->freed = 1;
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
        free(x);
    }
}

void tt__ag_release(tt_autograd *r)
{
    if (r == NULL || --r->refs > 0) return;
    tt_tensor_release(&r->grad);
    tt__node_release(r->fn);
    free(r);
}
