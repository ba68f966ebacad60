// y = a * x + y, each work-item updating ITEMS elements WG apart (coalesced on a GPU, one
// cache line after another on a CPU). The work-group size is compiled in.
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void saxpy(const float a, __global const float *x, __global float *y) {
    size_t base = get_group_id(0) * (WG * ITEMS) + get_local_id(0);
    for (int k = 0; k < ITEMS; ++k) {
        size_t i = base + (size_t)k * WG;
        y[i] = a * x[i] + y[i];
    }
}
