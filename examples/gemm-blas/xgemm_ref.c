/* Host reference of xgemm: C = alpha * A * B + beta * C in double precision, with alpha and
 * beta as the kernel gets them (their float values from the scalars' ABI) and N from the
 * buffers' lengths. ndtune includes ndtune.h (docs/spec.md, "Host functions"). */
#include <math.h>

void xgemm_ref(const ndtune_args *args)
{
    const double alpha = ndtune_scalar_named(args, "alpha")->value.f;
    const double beta = ndtune_scalar_named(args, "beta")->value.f;
    const ndtune_buffer *a = ndtune_buffer_named(args, "A"), *b = ndtune_buffer_named(args, "B"),
                        *c = ndtune_buffer_named(args, "C");
    const float *A = a->initial, *B = b->initial, *C0 = c->initial;
    float *C = c->data;
    const size_t n = (size_t)llround(sqrt((double)c->len));
    for (size_t i = 0; i < n; ++i)
        for (size_t j = 0; j < n; ++j) {
            double sum = 0.0;
            for (size_t k = 0; k < n; ++k)
                sum += (double)A[i * n + k] * B[k * n + j];
            C[i * n + j] = (float)(alpha * sum + beta * C0[i * n + j]);
        }
}
