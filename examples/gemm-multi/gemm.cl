// The GEMM's second source file: C = A * B, a TILE x TILE tile of C per work-group, WPT rows
// of it per work-item, accumulated in registers.
#include "gemm_common.h"

__kernel void gemm_tiled(__global const float *A, __global const float *B, __global float *C)
{
    const int lx = get_local_id(0);
    const int ly = get_local_id(1);
    const int col0 = get_group_id(0) * TILE;
    const int row0 = get_group_id(1) * TILE;
    __local float As[TILE][TILE];
    __local float Bs[TILE][TILE];
    float acc[WPT];
    for (int w = 0; w < WPT; ++w)
        acc[w] = 0.0f;
    for (int t = 0; t < N; t += TILE) {
        load_tiles(A, B, As, Bs, row0, col0, t, lx, ly);
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int k = 0; k < TILE; ++k) {
            const float b = Bs[k][lx];
            for (int w = 0; w < WPT; ++w)
                acc[w] += As[ly + w * RTS][k] * b;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    for (int w = 0; w < WPT; ++w)
        AT(C, row0 + ly + w * RTS, col0 + lx) = acc[w];
}
