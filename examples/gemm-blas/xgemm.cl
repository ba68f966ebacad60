// The fourth source file: the kernel, C = alpha * A * B + beta * C for N x N row-major
// matrices, a TS x TS tile of C per work-group, one element per work-item.
__kernel void xgemm(const real alpha, const real beta, __global const real *A,
                    __global const real *B, __global real *C)
{
    const int lx = get_local_id(0), ly = get_local_id(1);
    const int col0 = get_group_id(0) * TS, row0 = get_group_id(1) * TS;
    __local real As[TS][TS];
    __local real Bs[TS][TS];
    real acc = 0;
    for (int t = 0; t < N; t += TS) {
        load_tiles(A, B, As, Bs, row0, col0, t, lx, ly);
        barrier(CLK_LOCAL_MEM_FENCE);
        acc += tile_product(As, Bs, lx, ly);
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    const int row = row0 + ly, col = col0 + lx;
    AT(C, row, col) = alpha * acc + beta * AT(C, row, col);
}
