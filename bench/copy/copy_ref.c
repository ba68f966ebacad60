/* Host reference of copy.cl (ndtune's host function ABI, docs/spec.md "Host functions"). */
#include <string.h>
void copy_ref(const ndtune_args *args)
{
    const ndtune_buffer *in = ndtune_buffer_named(args, "in");
    memcpy(ndtune_buffer_named(args, "out")->data, in->data, in->len * sizeof(float));
}
