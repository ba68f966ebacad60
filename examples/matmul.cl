// Tiled matrix multiplication C = A * B of N x N floats (Erdem et al. 2018, §3).
// The work-group is WG_X x WG_Y = TILE x TILE work-items; each work-group stages one tile of A and
// one of B in local memory per step: 2 * TILE * TILE floats (eq. 10).
// Defines: N, WG_X, WG_Y (passed as -D by ndtune).
#define TILE WG_X

__kernel void matmul(__global const float *A, __global const float *B, __global float *C)
{
    __local float As[TILE][TILE];
    __local float Bs[TILE][TILE];
    const int col = get_global_id(0);
    const int row = get_global_id(1);
    const int lc = get_local_id(0);
    const int lr = get_local_id(1);
    float acc = 0.0f;
    for (int t = 0; t < N / TILE; ++t) {
        As[lr][lc] = A[row * N + t * TILE + lc];
        Bs[lr][lc] = B[(t * TILE + lr) * N + col];
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int k = 0; k < TILE; ++k)
            acc += As[lr][k] * Bs[k][lc];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    C[row * N + col] = acc;
}
