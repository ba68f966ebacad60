// A stand-in kernel over the CLBlast xgemm space (bench/spaces/xgemm-tune.toml): it takes every
// parameter as a define and scales a vector, so that `ndtune tune` can be timed on the 6.7 M
// configuration space itself (start-up and memory), not on xgemm's arithmetic.
__kernel void xgemm(__global const float *x, __global float *y)
{
    const size_t i = get_global_id(1) * get_global_size(0) + get_global_id(0);
    y[i] = 2.0f * x[i] + (float)(MWG + NWG + KWG + KWI + VWM + VWN + STRM + STRN + SA + SB
                                 + MDIMA + NDIMB) * 0.0f;
}
