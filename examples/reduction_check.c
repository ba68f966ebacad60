/* Host check of both stages of reduction.cl: the sums the kernel wrote (its second buffer) add up
 * to the total of its input (its first buffer), within float rounding. A check, not a reference:
 * how the input is split into partial sums depends on the configuration, their total does not.
 * ndtune includes ndtune.h (the arguments' C ABI) for it; docs/spec.md, "Host functions". */
#include <math.h>
#include <stdio.h>

int partial_sums(const ndtune_args *args, char *message, size_t size)
{
    const ndtune_buffer *x = &args->buffers[0], *sums = &args->buffers[1];
    const float *in = x->initial, *out = sums->data;
    double total = 0.0, magnitude = 0.0, got = 0.0;
    for (size_t i = 0; i < x->len; ++i) {
        total += in[i];
        magnitude += fabs(in[i]);
    }
    for (size_t g = 0; g < sums->len; ++g)
        got += out[g];
    /* Each float addition may lose a relative 2^-24 of a partial sum: far less than this. */
    if (fabs(got - total) <= 1e-5 * magnitude + 1e-6)
        return 0;
    snprintf(message, size, "the %zu sums in `%s` add up to %.9g, the %zu inputs of `%s` to %.9g",
             sums->len, sums->name, got, x->len, x->name, total);
    return 1;
}
