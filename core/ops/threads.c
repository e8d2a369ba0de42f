/*
** threads.c — the public thread-count and kernel-path API (tt.h),
** forwarding to the kernels' pool (core/kernel/threads.c) and dispatch
** (core/kernel/dispatch.c), which know nothing of tt.h.
*/
#include <string.h>

#include "kernel/kernels.h"
#include "tt.h"

void tt_set_num_threads(int n) { tk_set_num_threads(n); }
int tt_get_num_threads(void) { return tk_get_num_threads(); }
void tt_threads_stop(void) { tk_threads_stop(); }
const char *tt_kernel_path(void) { return tk_simd_path(); }

int tt_set_kernel_path(const char *path)
{
    if (path && strcmp(path, "auto") == 0) path = NULL;
    return tk_simd_force(path);
}
