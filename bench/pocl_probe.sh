#!/bin/bash
# How much one configuration's score moves between processes on PoCL: three configurations of
# examples/conv2d.toml (Kernel Tuner's best, ndtune's best and another top one of the 16-core Xeon
# campaign), each tuned alone by ndtune (10 runs, mean of the best 5) with 1 and with 15 build
# jobs, and timed by plain PyOpenCL with event profiling as Kernel Tuner times (10 runs after 2).
#   OUT=DIR NDTUNE=.carry/ndtune bench/pocl_probe.sh      (on the GPU machine: device `Xeon`)
set -u
ndtune=$(realpath "${NDTUNE:-.carry/ndtune}")
mkdir -p $OUT/probe; cd $OUT/probe
cp $OLDPWD/examples/conv2d.cl .
for cfg in "16 2 2 1" "8 4 2 1" "64 2 2 1"; do
  set -- $cfg
  sed -e "s/^BX = .*/BX = [$1]/; s/^BY = .*/BY = [$2]/; s/^TX = .*/TX = [$3]/; s/^TY = .*/TY = [$4]/; s/^LOOP = .*/LOOP = [0]/" $OLDPWD/examples/conv2d.toml > c.toml
  for bj in 1 15; do
    rm -f c.db*
    "$ndtune" tune c.toml --device Xeon --race off --build-jobs $bj --db c.db --json 2>/dev/null | python3 -c "
import json,sys; d=json.load(sys.stdin)['devices'][0]; b=d['best']; print('ndtune bj=$bj $cfg', round(b['time_ms'],4), 'median', round(b['median_ms'],4), 'min', round(b['min_ms'],4), 'spread', round(b['rel_spread'],3))"
  done
  python3 - $cfg <<'PY'
import pyopencl as cl, numpy as np, sys
BX,BY,TX,TY=map(int,sys.argv[1:5]); W=H=512; FW=FH=7
plat=[p for p in cl.get_platforms() if 'Portable' in p.name][0]; dev=plat.get_devices()[0]
ctx=cl.Context([dev]); q=cl.CommandQueue(ctx, properties=cl.command_queue_properties.PROFILING_ENABLE)
src=open('conv2d.cl').read()
p=cl.Program(ctx,src).build(f"-DW={W} -DH={H} -DFW={FW} -DFH={FH} -DBX={BX} -DBY={BY} -DTX={TX} -DTY={TY} -DLOOP=0".split())
rng=np.random.default_rng(1)
a=cl.Buffer(ctx, cl.mem_flags.READ_WRITE|cl.mem_flags.COPY_HOST_PTR, hostbuf=rng.random((H+FH-1)*(W+FW-1)).astype(np.float32))
f=cl.Buffer(ctx, cl.mem_flags.READ_WRITE|cl.mem_flags.COPY_HOST_PTR, hostbuf=rng.random(FW*FH).astype(np.float32))
o=cl.Buffer(ctx, cl.mem_flags.READ_WRITE, W*H*4)
k=p.conv2d; t=[]
for i in range(12):
    e=k(q,(W//TX,H//TY),(BX,BY),a,f,o); e.wait(); t.append((e.profile.end-e.profile.start)*1e-6)
t=t[2:]; print('pyopencl', sys.argv[1:5], round(np.mean(sorted(t)[:5]),4), [round(x,3) for x in t])
PY
done
