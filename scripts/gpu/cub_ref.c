/* The host reference of cub.cu: y = 2 x. */
void twice_ref(const ndtune_args *args) {
    const ndtune_buffer *y = ndtune_buffer_named(args, "y");
    const ndtune_buffer *x = ndtune_buffer_named(args, "x");
    const float *in = x->data;
    float *out = y->data;
    for (size_t i = 0; i < y->len; i++)
        out[i] = 2.0f * in[i];
}
