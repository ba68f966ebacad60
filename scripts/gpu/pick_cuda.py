"""scripts/test-gpu.sh: the C API's ndtune_pick_cuda on the GPU, called through ctypes.
Usage: python3 pick_cuda.py LIBNDTUNE_CAPI.so WISDOM.json EXPECTED_PARAMS
Picks saxpy's configuration for CUDA device 0 and checks it is the tuned one, exactly
(EXPECTED_PARAMS: "WG=64 ITEMS=2", in any order)."""
import ctypes
import sys


class Config(ctypes.Structure):
    _fields_ = [("how", ctypes.c_int), ("build_options", ctypes.c_char_p),
                ("params", ctypes.c_char_p), ("reason", ctypes.c_char_p),
                ("work_dim", ctypes.c_uint32), ("global_", ctypes.c_size_t * 3),
                ("local", ctypes.c_size_t * 3)]


lib = ctypes.CDLL(sys.argv[1])
lib.ndtune_wisdom_open.restype = ctypes.c_void_p
lib.ndtune_last_error.restype = ctypes.c_char_p
lib.ndtune_pick_cuda.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p,
                                 ctypes.c_char_p, ctypes.POINTER(Config)]
wisdom = lib.ndtune_wisdom_open(sys.argv[2].encode())
out = Config()
status = lib.ndtune_pick_cuda(wisdom, b"saxpy", 0, None, None, ctypes.byref(out))
if status != 0:
    sys.exit(f"ndtune_pick_cuda: {status}: {lib.ndtune_last_error().decode()}")
params = out.params.decode()
print(f"how {out.how}, params {params}, global {list(out.global_)[:out.work_dim]}, "
      f"local {list(out.local)[:out.work_dim]}, options {out.build_options.decode()!r}")
same = sorted(params.split()) == sorted(sys.argv[3].split())
sys.exit(0 if out.how == 0 and same else f"expected {sys.argv[3]}, exact")
