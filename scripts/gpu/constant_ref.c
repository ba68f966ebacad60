/* The host reference of constant.cu: y[i] = sum over k of taps[k] * x[i + k]. */
void filter_ref(const ndtune_args *args) {
    const ndtune_buffer *y = ndtune_buffer_named(args, "y");
    const ndtune_buffer *x = ndtune_buffer_named(args, "x");
    const ndtune_buffer *taps = ndtune_buffer_named(args, "taps");
    const float *in = x->data, *t = taps->data;
    float *out = y->data;
    for (size_t i = 0; i < y->len; i++) {
        float sum = 0.0f;
        for (size_t k = 0; k < taps->len; k++)
            sum += t[k] * in[i + k];
        out[i] = sum;
    }
}
