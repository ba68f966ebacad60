// 2D convolution of an (H + FH - 1) x (W + FW - 1) image with an FH x FW filter into H x W
// outputs, row-major. Each work-item computes a TX x TY tile of outputs; the work-groups (BX x BY
// work-items) are launch parameters only, so configurations that differ only there share a build.
// LOOP = 0 runs the filter in the outer loops (each filter tap loaded once per tile), LOOP = 1
// the tile (each output accumulated in turn). Defines: W, H, FW, FH, TX, TY, LOOP.
#define IW (W + FW - 1)

__kernel void conv2d(__global const float *in, __global const float *filter, __global float *out)
{
    const int x0 = get_global_id(0) * TX;
    const int y0 = get_global_id(1) * TY;
    float acc[TY][TX];
#if LOOP == 0
    for (int j = 0; j < TY; ++j)
        for (int i = 0; i < TX; ++i)
            acc[j][i] = 0.0f;
    for (int fy = 0; fy < FH; ++fy)
        for (int fx = 0; fx < FW; ++fx) {
            const float f = filter[fy * FW + fx];
            for (int j = 0; j < TY; ++j)
                for (int i = 0; i < TX; ++i)
                    acc[j][i] += in[(y0 + j + fy) * IW + x0 + i + fx] * f;
        }
#else
    for (int j = 0; j < TY; ++j)
        for (int i = 0; i < TX; ++i) {
            float sum = 0.0f;
            for (int fy = 0; fy < FH; ++fy)
                for (int fx = 0; fx < FW; ++fx)
                    sum += in[(y0 + j + fy) * IW + x0 + i + fx] * filter[fy * FW + fx];
            acc[j][i] = sum;
        }
#endif
    for (int j = 0; j < TY; ++j)
        for (int i = 0; i < TX; ++i)
            out[(y0 + j) * W + x0 + i] = acc[j][i];
}
