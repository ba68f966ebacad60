// The GEMM's first source file: staging tiles of A and B in local memory.
#include "gemm_common.h"

// Loads the TILE x TILE tiles of A (rows from row0, columns from t) and of B (rows from t,
// columns from col0); the work-item (lx, ly) loads rows ly, ly + RTS, ... of each.
void load_tiles(__global const float *A, __global const float *B,
                __local float As[TILE][TILE], __local float Bs[TILE][TILE],
                int row0, int col0, int t, int lx, int ly)
{
    for (int w = 0; w < WPT; ++w) {
        const int r = ly + w * RTS;
        As[r][lx] = AT(A, row0 + r, t + lx);
        Bs[r][lx] = AT(B, t + r, col0 + lx);
    }
}
