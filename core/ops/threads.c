/*
** threads.c — the public thread-count and kernel-path API (tt.h),
** forwarding to the kernels' pool (core/kernel/threads.c) and dispatch
** (core/kernel/dispatch.c), which know nothing of tt.h.
*/
#include "kernel/kernels.h"
#include "tt.h"

void tt_set_num_threads(int n) { tk_set_num_threads(n); }
int tt_get_num_threads(void) { return tk_get_num_threads(); }
void tt_threads_stop(void) { tk_threads_stop(); }
const char *tt_kernel_path(void) { return tk_simd_path(); }
