"""Kernels and arguments the tests tune, in Kernel Tuner's style."""

import numpy as np

VECTOR_ADD = """
__kernel void vector_add(__global float *c, __global const float *a, __global const float *b, int n) {
    int i = get_global_id(0);
    if (i < n) {
        c[i] = a[i] + b[i];
    }
}
"""

# Each work-item scales tile_x elements of a row, so the grid divides x by block_size_x * tile_x.
SCALE_2D = """
__kernel void scale(__global float *out, __global const float *in, int width, int height) {
    int x0 = get_global_id(0) * tile_x;
    int y = get_global_id(1);
    for (int t = 0; t < tile_x; t++) {
        int x = x0 + t;
        if (x < width && y < height) {
            out[y * width + x] = 2.0f * in[y * width + x];
        }
    }
}
"""


def vector_add_args(size=4096):
    rng = np.random.default_rng(1)
    a = rng.standard_normal(size).astype(np.float32)
    b = rng.standard_normal(size).astype(np.float32)
    return [np.zeros_like(a), a, b, np.int32(size)]


def scale_args(width=96, height=40):
    rng = np.random.default_rng(2)
    x = rng.standard_normal(width * height).astype(np.float32)
    return [np.zeros_like(x), x, np.int32(width), np.int32(height)]


SCALE_PARAMS = {"block_size_x": [8, 16, 32], "block_size_y": [1, 2, 4], "tile_x": [1, 2]}
SCALE_OPTIONS = dict(
    grid_div_x=["block_size_x", "tile_x"],
    grid_div_y=["block_size_y"],
    restrictions=["block_size_x * block_size_y <= 64"],
)
