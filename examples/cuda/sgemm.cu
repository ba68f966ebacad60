// Register-blocked SGEMM in CUDA, C = A * B for N x N row-major floats: examples/sgemm.cl
// written as CUDA users write it. A block computes a TS x TS tile of C with TS x RTS threads;
// each thread keeps WPT = TS / RTS results of one column in registers. Tiles of A and B are
// staged in shared memory, rows padded by PAD floats against bank conflicts; the loop over a
// tile is unrolled UNROLL times. Defines: N, TS, RTS, PAD, UNROLL (passed as -D by ndtune).
#define WPT (TS / RTS)
#define DO_PRAGMA(x) _Pragma(#x)
#define UNROLL_BY(n) DO_PRAGMA(unroll n)

__global__ void sgemm(const float *A, const float *B, float *C)
{
    const int lx = threadIdx.x;
    const int ly = threadIdx.y;
    const int col = blockIdx.x * TS + lx;
    const int tile_row = blockIdx.y * TS;
    __shared__ float As[TS][TS + PAD];
    __shared__ float Bs[TS][TS + PAD];
    float acc[WPT];
    for (int w = 0; w < WPT; ++w)
        acc[w] = 0.0f;
    for (int t = 0; t < N; t += TS) {
        for (int w = 0; w < WPT; ++w) {
            const int r = ly + w * RTS;
            As[r][lx] = A[(tile_row + r) * N + t + lx];
            Bs[r][lx] = B[(t + r) * N + col];
        }
        __syncthreads();
        UNROLL_BY(UNROLL)
        for (int k = 0; k < TS; ++k) {
            const float b = Bs[k][lx];
            for (int w = 0; w < WPT; ++w)
                acc[w] += As[ly + w * RTS][k] * b;
        }
        __syncthreads();
    }
    for (int w = 0; w < WPT; ++w)
        C[(tile_row + ly + w * RTS) * N + col] = acc[w];
}
