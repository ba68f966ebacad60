// Shared by the GEMM's source files: element (row, col) of an N x N row-major matrix, and how
// many work-items stand in one column of a TILE x TILE tile (each computes WPT of its rows).
// TILE comes from the build options (-DTILE={TS}), N and WPT are defines ndtune passes.
#ifndef GEMM_COMMON_H
#define GEMM_COMMON_H
#define AT(m, row, col) ((m)[(row) * N + (col)])
#define RTS (TILE / WPT)
#endif
