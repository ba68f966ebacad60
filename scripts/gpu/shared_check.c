/* The check of shared.cu: y[b + t] == 2 x[b + WG - 1 - t] in each block b of WG threads. */
#include <stdio.h>

int reversed_twice(const ndtune_args *args, char *message, size_t size) {
    const ndtune_buffer *y = ndtune_buffer_named(args, "y");
    const ndtune_buffer *x = ndtune_buffer_named(args, "x");
    const ndtune_value *wg = ndtune_value_named(args, "WG");
    const float *out = y->data, *in = x->initial;
    size_t n = (size_t)wg->i;
    for (size_t i = 0; i < y->len; i++) {
        size_t b = i / n * n, t = i % n;
        if (out[i] != 2.0f * in[b + n - 1 - t]) {
            snprintf(message, size, "y[%zu] = %g, not %g", i, out[i], 2.0f * in[b + n - 1 - t]);
            return 1;
        }
    }
    return 0;
}
