// Every way a CUDA configuration can fail, one per value of MODE and WG, for
// scripts/test-gpu.sh: MODE 2 does not build, MODE 1 writes to an illegal address (which
// poisons the CUDA context: the worker is replaced and the campaign goes on), WG 512 exceeds
// the kernel's launch bounds (the driver refuses the launch). MODE 0 with WG 128 is right.
__global__ void __launch_bounds__(256) faulty(float *y) {
#if MODE == 2
#error "MODE 2 does not build"
#endif
    int i = blockIdx.x * blockDim.x + threadIdx.x;
#if MODE == 1
    volatile float *bad = (float *)0x10;
    bad[i] = 1.0f;
#endif
    y[i] = 2.0f * i;
}
