// The second source file: staging a TS x TS tile of A (rows from row0, columns from t) and of
// B (rows from t, columns from col0) in local memory, one element of each per work-item.
void load_tiles(__global const real *A, __global const real *B,
                __local real As[TS][TS], __local real Bs[TS][TS],
                int row0, int col0, int t, int lx, int ly)
{
    As[ly][lx] = AT(A, row0 + ly, t + lx);
    Bs[ly][lx] = AT(B, t + ly, col0 + lx);
}
