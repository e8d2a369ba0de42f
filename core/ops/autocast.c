/*
** autocast.c — torch.autocast's state and its casts: which dtype the ops
** of autocast's lists compute in while tt_set_autocast holds one. The
** lists themselves are where the ops start (matmul.c, pattern.c, sdpa.c,
** elementwise.c, reduce.c, softmax.c, loss.c): each calls tt__autocast_enter before anything else.
*/
#include <string.h>

#include "tt_internal.h"

static tt_dtype autocast = TT_FLOAT32;  /* TT_FLOAT32: off */

tt_status tt_set_autocast(tt_dtype dt, tt_dtype *was)
{
    if (dt != TT_FLOAT32 && !tt__is_half(dt))
        return tt__err(TT_EARG, "autocast: dtype must be bfloat16 or float16 (float32 turns it off), got %s",
                       tt_dtype_name(dt));
    if (was) *was = autocast;
    autocast = dt;
    return TT_OK;
}

tt_dtype tt_autocast_dtype(void) { return autocast; }

int tt__autocast_enter(tt__autocast *ac, tt__ackind kind, int n, const tt_tensor *const *in)
{
    if (autocast == TT_FLOAT32 || tt_op_running()) return 0;
    tt_dtype want = kind == TT__AC_LOW ? autocast : TT_FLOAT32;
    int any = 0;
    for (int i = 0; i < n; i++) {
        const tt_tensor *t = in[i];
        any |= t && tt_dtype_is_float(t->dtype) && t->dtype != want && (kind == TT__AC_LOW || tt__is_half(t->dtype));
    }
    if (!any && kind == TT__AC_FP32) return 0;
    ac->paused = autocast;
    ac->st = TT_OK;
    ac->n = n;
    for (int i = 0; i < n; i++) {
        const tt_tensor *t = in[i];
        memset(&ac->cast[i], 0, sizeof ac->cast[i]);
        ac->in[i] = t;
        if (ac->st == TT_OK && t && tt_dtype_is_float(t->dtype) && t->dtype != want
            && (kind == TT__AC_LOW || tt__is_half(t->dtype))) {
            ac->st = tt_autocast_to(&ac->cast[i], t, want);
            ac->in[i] = &ac->cast[i];
        }
    }
    autocast = TT_FLOAT32;                  /* the op runs once more, on ac->in[], paused */
    return 1;
}

tt_status tt__autocast_leave(tt__autocast *ac, tt_status st)
{
    autocast = ac->paused;
    for (int i = 0; i < ac->n; i++) tt_tensor_release(&ac->cast[i]);
    return st;
}
