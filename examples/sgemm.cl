// Register-blocked SGEMM, C = A * B for N x N row-major floats (the GPU benchmark's kernel).
// A work-group computes a TS x TS tile of C with TS x RTS work-items; each work-item keeps
// WPT = TS / RTS results of one column in registers (rows ly, ly + RTS, ...). Tiles of A and B
// are staged in local memory, rows padded by PAD floats against bank conflicts; the loop over a
// tile is unrolled UNROLL times. Defines: N, TS, RTS, PAD, UNROLL (passed as -D by ndtune).
#define WPT (TS / RTS)
#define DO_PRAGMA(x) _Pragma(#x)
#define UNROLL_BY(n) DO_PRAGMA(unroll n)

__kernel void sgemm(__global const float *A, __global const float *B, __global float *C)
{
    const int lx = get_local_id(0);
    const int ly = get_local_id(1);
    const int col = get_group_id(0) * TS + lx;
    const int tile_row = get_group_id(1) * TS;
    __local float As[TS][TS + PAD];
    __local float Bs[TS][TS + PAD];
    float acc[WPT];
    for (int w = 0; w < WPT; ++w)
        acc[w] = 0.0f;
    for (int t = 0; t < N; t += TS) {
        for (int w = 0; w < WPT; ++w) {
            const int r = ly + w * RTS;
            As[r][lx] = A[(tile_row + r) * N + t + lx];
            Bs[r][lx] = B[(t + r) * N + col];
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        UNROLL_BY(UNROLL)
        for (int k = 0; k < TS; ++k) {
            const float b = Bs[k][lx];
            for (int w = 0; w < WPT; ++w)
                acc[w] += As[ly + w * RTS][k] * b;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    for (int w = 0; w < WPT; ++w)
        C[(tile_row + ly + w * RTS) * N + col] = acc[w];
}
