// The first of the GEMM's four source files, as BLAS libraries split their kernels: what the
// others share. N (the matrix size) and TS (the tile size) are defines ndtune passes.
#define AT(m, row, col) ((m)[(row) * N + (col)])
typedef float real;
