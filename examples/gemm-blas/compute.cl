// The third source file: one tile's contribution to a work-item's element of C, its inner loop
// unrolled KU times (KU divides TS).
real tile_product(__local real As[TS][TS], __local real Bs[TS][TS], int lx, int ly)
{
    real acc = 0;
    for (int k = 0; k < TS; k += KU) {
        for (int u = 0; u < KU; ++u)
            acc += As[ly][k + u] * Bs[k + u][lx];
    }
    return acc;
}
