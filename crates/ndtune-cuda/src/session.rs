//! A working session on one CUDA device: the device's primary context and a stream, made when
//! first needed (a build worker, which only compiles, never makes them), modules built once per
//! set of options, buffers, kernel parameters and launches timed by CUDA events.
//!
//! Launches take OpenCL's sizes: `global` work-items and `local` threads per block, so a grid
//! has `ceil(global / local)` blocks per dimension. `__local` arguments become the launch's
//! dynamic shared memory (their bytes added up; CUDA has one such region per block). CUDA
//! launches have no global offset: a kernel built from [`OFFSET_PRELUDE`] plus its source sees
//! `blockIdx` shifted by the offset in blocks, which each launch writes into the module's
//! constant memory first (on the launch's stream, so in order).

use crate::nvcc;
use crate::nvrtc::Compiled;
use crate::{check, failed, CuDevice};
use cudarc::driver::sys::{self, CUfunction_attribute as FuncAttr};
use ndtune_device::backend::{
    self, Arg, Buffer, DeviceError, Kernel, KernelLimits, Pinned, PipelineTimes, Step,
};
use std::cell::{Cell, OnceCell, RefCell};
use std::collections::HashMap;
use std::ffi::{c_void, CString};
use std::rc::Rc;

/// The device's primary context, current on this thread, with the session's streams.
struct Context {
    device: sys::CUdevice,
    context: sys::CUcontext,
    stream: sys::CUstream,
    /// A second stream for a pipeline's transfers, made when first asked for.
    copies: OnceCell<sys::CUstream>,
    /// The events a launch is timed between.
    events: (sys::CUevent, sys::CUevent),
}

impl Context {
    fn open(ordinal: usize) -> Result<Rc<Context>, DeviceError> {
        let device = crate::handle(ordinal)?;
        let mut context = std::ptr::null_mut();
        // SAFETY: one context handle written; released in Drop.
        check("cuDevicePrimaryCtxRetain", unsafe {
            sys::cuDevicePrimaryCtxRetain(&mut context, device)
        })?;
        let mut made = Context {
            device,
            context,
            stream: std::ptr::null_mut(),
            copies: OnceCell::new(),
            events: (std::ptr::null_mut(), std::ptr::null_mut()),
        };
        made.current()?;
        // SAFETY: handles written into fields that Drop destroys.
        unsafe {
            check("cuStreamCreate", sys::cuStreamCreate(&mut made.stream, 1))?;
            check("cuEventCreate", sys::cuEventCreate(&mut made.events.0, 0))?;
            check("cuEventCreate", sys::cuEventCreate(&mut made.events.1, 0))?;
        }
        Ok(Rc::new(made))
    }

    /// Makes the context current on this thread (a no-op where it is).
    fn current(&self) -> Result<(), DeviceError> {
        // SAFETY: a live context.
        check("cuCtxSetCurrent", unsafe {
            sys::cuCtxSetCurrent(self.context)
        })
    }

    fn sync(&self, stream: sys::CUstream) -> Result<(), DeviceError> {
        // SAFETY: a live stream of this context.
        check("cuStreamSynchronize", unsafe {
            sys::cuStreamSynchronize(stream)
        })
    }

    fn copies(&self) -> Result<sys::CUstream, DeviceError> {
        if let Some(s) = self.copies.get() {
            return Ok(*s);
        }
        let mut stream = std::ptr::null_mut();
        // SAFETY: one stream written; destroyed in Drop.
        check("cuStreamCreate", unsafe {
            sys::cuStreamCreate(&mut stream, 1)
        })?;
        Ok(*self.copies.get_or_init(|| stream))
    }
}

impl Drop for Context {
    fn drop(&mut self) {
        // SAFETY: this context's own handles, destroyed once; errors at teardown have nowhere
        // to go (a lost context fails them all).
        unsafe {
            let _ = sys::cuCtxSetCurrent(self.context);
            for e in [self.events.0, self.events.1] {
                if !e.is_null() {
                    let _ = sys::cuEventDestroy_v2(e);
                }
            }
            for s in [Some(self.stream), self.copies.get().copied()]
                .into_iter()
                .flatten()
            {
                if !s.is_null() {
                    let _ = sys::cuStreamDestroy_v2(s);
                }
            }
            let _ = sys::cuDevicePrimaryCtxRelease_v2(self.device);
        }
    }
}

/// Device memory, freed when dropped (its context kept alive until then).
struct DeviceMemory {
    ptr: sys::CUdeviceptr,
    context: Rc<Context>,
}

impl Drop for DeviceMemory {
    fn drop(&mut self) {
        if self.ptr != 0 {
            let _ = self.context.current();
            // SAFETY: memory this value allocated, freed once.
            let _ = unsafe { sys::cuMemFree_v2(self.ptr) };
        }
    }
}

fn ptr(buffer: &Buffer) -> sys::CUdeviceptr {
    buffer.raw::<DeviceMemory>().ptr
}

/// A loaded module, unloaded when dropped.
struct Module {
    module: sys::CUmodule,
    context: Rc<Context>,
}

impl Drop for Module {
    fn drop(&mut self) {
        let _ = self.context.current();
        // SAFETY: the module this value loaded, unloaded once.
        let _ = unsafe { sys::cuModuleUnload(self.module) };
    }
}

/// What [`backend::Session::with_offsets`] puts before a CUDA source: `blockIdx` becomes the
/// block's index in the whole launch, the launch's own plus the offset in blocks (kept in
/// constant memory, as OpenCL's `get_global_id` includes its offset; `gridDim`, like OpenCL's
/// `get_num_groups`, stays the launch's own). `#line 1` keeps the source's line numbers in logs.
const OFFSET_PRELUDE: &str = "__constant__ unsigned int ndtune_block_offset[3];
static __device__ __forceinline__ uint3 ndtune_block_idx() {
    uint3 b;
    b.x = blockIdx.x + ndtune_block_offset[0];
    b.y = blockIdx.y + ndtune_block_offset[1];
    b.z = blockIdx.z + ndtune_block_offset[2];
    return b;
}
#define blockIdx (ndtune_block_idx())
#line 1
";

/// The constant memory array of [`OFFSET_PRELUDE`].
const OFFSET_SYMBOL: &str = "ndtune_block_offset";

/// A kernel: its function, the parameters set for it and the dynamic shared memory they ask.
struct CuKernel {
    function: sys::CUfunction,
    /// Each parameter's bytes, 8-aligned; the launch passes a pointer to each.
    params: RefCell<Vec<u64>>,
    shared: Cell<u32>,
    module: Rc<Module>,
    /// Where its module keeps [`OFFSET_SYMBOL`], if it was built with the prelude; looked up once.
    offsets: OnceCell<Option<sys::CUdeviceptr>>,
}

/// Pinned host memory (`cuMemHostAlloc`), freed when dropped.
struct PinnedHost {
    ptr: *mut u8,
    len: usize,
    context: Rc<Context>,
}

impl Pinned for PinnedHost {
    fn as_slice(&self) -> &[u8] {
        // SAFETY: `ptr` holds `len` bytes for the life of self.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
    fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: as above, and `&mut self` makes the access unique.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }
}

// SAFETY: plain host memory owned by this value; CUDA's host allocations are not tied to a thread.
unsafe impl Send for PinnedHost {}

impl Drop for PinnedHost {
    fn drop(&mut self) {
        let _ = self.context.current();
        // SAFETY: memory this value allocated, freed once.
        let _ = unsafe { sys::cuMemFreeHost(self.ptr.cast()) };
    }
}

/// A session on one CUDA device.
pub struct Session {
    device: CuDevice,
    context: OnceCell<Rc<Context>>,
    /// The session's one source (the first one given).
    source: Option<String>,
    /// Built programs by (options, kernel name), a failed build remembered with its error.
    built: HashMap<(String, String), Result<Rc<Loaded>, DeviceError>>,
    /// Binaries handed in by build workers, by options, loaded when their kernel is asked for.
    handed: HashMap<String, Compiled>,
}

/// A module with the lowered name of the kernel it was built for.
struct Loaded {
    module: Rc<Module>,
    lowered: String,
}

impl Session {
    pub fn new(device: CuDevice) -> Session {
        Session {
            device,
            context: OnceCell::new(),
            source: None,
            built: HashMap::new(),
            handed: HashMap::new(),
        }
    }

    /// The context, made current; opened the first time.
    fn context(&self) -> Result<&Rc<Context>, DeviceError> {
        let context = match self.context.get() {
            Some(c) => c,
            None => {
                let c = Context::open(self.device.ordinal())?;
                self.context.get_or_init(|| c)
            }
        };
        context.current()?;
        Ok(context)
    }

    fn compile(&self, source: &str, name: &str, options: &str) -> Result<Compiled, DeviceError> {
        nvcc::build(
            &self.device.profile.name,
            source,
            name,
            options,
            &self.device.arch(),
        )
    }

    fn load(&self, compiled: &Compiled) -> Result<Loaded, DeviceError> {
        let context = self.context()?;
        let mut module = std::ptr::null_mut();
        // SAFETY: a cubin NVRTC made; the driver copies it.
        check("cuModuleLoadData", unsafe {
            sys::cuModuleLoadData(&mut module, compiled.cubin.as_ptr().cast())
        })?;
        Ok(Loaded {
            module: Rc::new(Module {
                module,
                context: Rc::clone(context),
            }),
            lowered: compiled.lowered.clone(),
        })
    }

    fn function(loaded: &Loaded, name: &str) -> Result<Kernel, DeviceError> {
        let lowered =
            CString::new(loaded.lowered.as_str()).map_err(|_| DeviceError::InvalidInput {
                what: "kernel name: it contains a NUL byte",
            })?;
        let mut function = std::ptr::null_mut();
        // SAFETY: a live module and a NUL-terminated name.
        match unsafe {
            sys::cuModuleGetFunction(&mut function, loaded.module.module, lowered.as_ptr())
        } {
            sys::CUresult::CUDA_SUCCESS => Ok(Kernel::new(CuKernel {
                function,
                params: RefCell::new(Vec::new()),
                shared: Cell::new(0),
                module: Rc::clone(&loaded.module),
                offsets: OnceCell::new(),
            })),
            sys::CUresult::CUDA_ERROR_NOT_FOUND => Err(DeviceError::NoKernel {
                name: name.to_string(),
                available: format!("the module has no function `{}`", loaded.lowered),
            }),
            e => Err(failed("cuModuleGetFunction", e)),
        }
    }

    /// The address of the module's `__constant__` array `name` and its size in bytes, if the
    /// module has one of that name.
    fn global(
        module: &Module,
        name: &str,
    ) -> Result<Option<(sys::CUdeviceptr, usize)>, DeviceError> {
        let symbol = CString::new(name).map_err(|_| DeviceError::InvalidInput {
            what: "constant memory name (a NUL byte)",
        })?;
        let (mut at, mut bytes) = (0, 0);
        // SAFETY: a loaded module; two values written.
        match unsafe {
            sys::cuModuleGetGlobal_v2(&mut at, &mut bytes, module.module, symbol.as_ptr())
        } {
            sys::CUresult::CUDA_SUCCESS => Ok(Some((at, bytes))),
            sys::CUresult::CUDA_ERROR_NOT_FOUND => Ok(None),
            e => Err(failed("cuModuleGetGlobal", e)),
        }
    }

    /// Writes a launch's offset in blocks where its kernel was built with [`OFFSET_PRELUDE`]
    /// (zeros without an offset: an earlier launch may have left others); an offset that is no
    /// whole number of blocks, or one for a kernel built without the prelude, is an error.
    fn write_offset(
        &self,
        k: &CuKernel,
        offset: Option<&[usize]>,
        block: [u32; 3],
        stream: sys::CUstream,
    ) -> Result<(), DeviceError> {
        let symbol = match k.offsets.get() {
            Some(s) => *s,
            None => {
                let found = Session::global(&k.module, OFFSET_SYMBOL)?.map(|(at, _)| at);
                *k.offsets.get_or_init(|| found)
            }
        };
        let mut blocks = [0u32; 3];
        for (d, &o) in offset.unwrap_or(&[]).iter().enumerate().take(3) {
            let b = block[d].max(1) as usize;
            if o % b != 0 {
                return Err(DeviceError::InvalidInput {
                    what: "launch offset: a CUDA launch's offset must be whole blocks",
                });
            }
            blocks[d] = u32::try_from(o / b).map_err(|_| DeviceError::InvalidInput {
                what: "launch offset: more blocks than CUDA counts",
            })?;
        }
        match symbol {
            // SAFETY: 12 bytes into the module's array of three; pageable host memory is staged
            // before the call returns, so `blocks` may go.
            Some(at) => check("cuMemcpyHtoDAsync", unsafe {
                sys::cuMemcpyHtoDAsync_v2(at, blocks.as_ptr().cast(), 12, stream)
            }),
            None if blocks != [0; 3] => Err(DeviceError::InvalidInput {
                what: "launch offset: CUDA launches have none; build the kernel from Session::with_offsets",
            }),
            None => Ok(()),
        }
    }

    fn check_source(&mut self, source: &str) -> Result<(), DeviceError> {
        if self.source.get_or_insert_with(|| source.to_string()) != source {
            return Err(DeviceError::InvalidInput {
                what: "kernel source (a session builds one source)",
            });
        }
        Ok(())
    }

    fn attribute(kernel: &CuKernel, attr: FuncAttr) -> Result<u64, DeviceError> {
        let mut v = 0;
        // SAFETY: one int written for a live function.
        check("cuFuncGetAttribute", unsafe {
            sys::cuFuncGetAttribute(&mut v, attr, kernel.function)
        })?;
        Ok(v.max(0) as u64)
    }

    /// Copies `buffer` into the kernel's module's `__constant__` array `name` on the session's
    /// stream (the launch after it sees it). An array the module lacks, or one smaller than the
    /// buffer, is an argument that does not match (argument `index`).
    fn fill_constant(
        &self,
        k: &CuKernel,
        index: usize,
        name: &str,
        buffer: &Buffer,
    ) -> Result<(), DeviceError> {
        let context = self.context()?;
        let mismatch = |code: sys::CUresult, what: String| DeviceError::Arg {
            index,
            code: code as i32,
            name: what,
        };
        let Some((at, bytes)) = Session::global(&k.module, name)? else {
            return Err(mismatch(
                sys::CUresult::CUDA_ERROR_NOT_FOUND,
                format!("the module has no `__constant__` array `{name}`"),
            ));
        };
        if bytes < buffer.len() {
            return Err(mismatch(
                sys::CUresult::CUDA_ERROR_INVALID_VALUE,
                format!(
                    "the `__constant__` array `{name}` holds {bytes} bytes, the argument {}",
                    buffer.len()
                ),
            ));
        }
        if buffer.is_empty() {
            return Ok(());
        }
        // SAFETY: both ranges lie inside their allocations (checked above).
        check("cuMemcpyDtoDAsync", unsafe {
            sys::cuMemcpyDtoDAsync_v2(at, ptr(buffer), buffer.len(), context.stream)
        })
    }

    /// The size of each of the function's parameters (`cuFuncGetParamInfo`, CUDA 12.4).
    fn parameter_sizes(kernel: &CuKernel) -> Result<Vec<usize>, DeviceError> {
        let mut sizes = Vec::new();
        loop {
            let (mut offset, mut size) = (0usize, 0usize);
            // SAFETY: two sizes written for a live function.
            match unsafe {
                sys::cuFuncGetParamInfo(kernel.function, sizes.len(), &mut offset, &mut size)
            } {
                sys::CUresult::CUDA_SUCCESS => sizes.push(size),
                sys::CUresult::CUDA_ERROR_INVALID_VALUE => return Ok(sizes),
                e => return Err(failed("cuFuncGetParamInfo", e)),
            }
        }
    }

    /// Enqueues `kernel` on `stream` between `events` (where given), without waiting.
    fn enqueue(
        &self,
        kernel: &Kernel,
        global: &[usize],
        local: Option<&[usize]>,
        offset: Option<&[usize]>,
        stream: sys::CUstream,
        events: Option<(sys::CUevent, sys::CUevent)>,
    ) -> Result<(), DeviceError> {
        let k: &CuKernel = kernel.raw();
        let block = match local {
            Some(l) => dims(l)?,
            None => default_block(global),
        };
        self.write_offset(k, offset, block, stream)?;
        let wanted = dims(global)?;
        let grid = [0, 1, 2].map(|d| wanted[d].div_ceil(block[d].max(1)).max(1));
        let mut values = k.params.borrow_mut();
        let mut pointers: Vec<*mut c_void> =
            values.iter_mut().map(|v| (v as *mut u64).cast()).collect();
        // SAFETY: the parameter pointers live across the call (the driver copies the values);
        // events and stream belong to this session's context.
        unsafe {
            if let Some((start, _)) = events {
                check("cuEventRecord", sys::cuEventRecord(start, stream))?;
            }
            check(
                "cuLaunchKernel",
                sys::cuLaunchKernel(
                    k.function,
                    grid[0],
                    grid[1],
                    grid[2],
                    block[0],
                    block[1],
                    block[2],
                    k.shared.get(),
                    stream,
                    pointers.as_mut_ptr(),
                    std::ptr::null_mut(),
                ),
            )?;
            if let Some((_, end)) = events {
                check("cuEventRecord", sys::cuEventRecord(end, stream))?;
            }
        }
        Ok(())
    }
}

/// A size list as CUDA's three dimensions (1 beyond those given).
fn dims(sizes: &[usize]) -> Result<[u32; 3], DeviceError> {
    if sizes.is_empty() || sizes.len() > 3 {
        return Err(DeviceError::InvalidInput {
            what: "launch sizes: CUDA launches have 1 to 3 dimensions",
        });
    }
    let mut out = [1u32; 3];
    for (d, &s) in sizes.iter().enumerate() {
        out[d] = u32::try_from(s).map_err(|_| DeviceError::InvalidInput {
            what: "launch size: more than 2^32 - 1 in one dimension",
        })?;
    }
    Ok(out)
}

/// A block for a launch that names none (a reference kernel's): per dimension the largest
/// power of two that divides the global size, 256 threads at most, so no thread falls outside.
fn default_block(global: &[usize]) -> [u32; 3] {
    let mut block = [1u32; 3];
    let mut budget = 256usize;
    for (d, &g) in global.iter().enumerate().take(3) {
        let mut b = 1;
        while b * 2 <= budget && g % (b * 2) == 0 {
            b *= 2;
        }
        block[d] = b as u32;
        budget /= b;
    }
    block
}

impl backend::Session for Session {
    fn kernel(&mut self, source: &str, name: &str, options: &str) -> Result<Kernel, DeviceError> {
        self.check_source(source)?;
        let key = (options.to_string(), name.to_string());
        if !self.built.contains_key(&key) {
            // A binary handed in for these options is taken only if it was built for this kernel.
            let loaded = match self.handed.remove(options).filter(|c| c.name == name) {
                Some(compiled) => self.load(&compiled),
                None => self
                    .compile(source, name, options)
                    .and_then(|c| self.load(&c)),
            };
            self.built.insert(key.clone(), loaded.map(Rc::new));
        }
        let loaded = self.built[&key].as_ref().map_err(Clone::clone)?;
        Session::function(loaded, name)
    }

    /// The cubin with its kernel's lowered name ([`Compiled::to_bytes`]).
    fn with_offsets(&self, source: &str) -> String {
        format!("{OFFSET_PRELUDE}{source}")
    }

    fn binary(&mut self, source: &str, name: &str, options: &str) -> Result<Vec<u8>, DeviceError> {
        self.check_source(source)?;
        self.compile(source, name, options).map(|c| c.to_bytes())
    }

    fn add_binary(&mut self, source: &str, options: &str, binary: &[u8]) -> bool {
        match (self.check_source(source), Compiled::from_bytes(binary)) {
            (Ok(()), Some(compiled)) => {
                self.handed.insert(options.to_string(), compiled);
                true
            }
            _ => false,
        }
    }

    fn own_kernel(&self, source: &str, name: &str, options: &str) -> Result<Kernel, DeviceError> {
        let compiled = self.compile(source, name, options)?;
        Session::function(&self.load(&compiled)?, name)
    }

    fn own_kernel_from(
        &self,
        binary: &[u8],
        source: &str,
        name: &str,
        options: &str,
    ) -> Result<Kernel, DeviceError> {
        match Compiled::from_bytes(binary).filter(|c| c.name == name) {
            Some(compiled) => Session::function(&self.load(&compiled)?, name),
            None => self.own_kernel(source, name, options),
        }
    }

    fn own_binary(&self, source: &str, name: &str, options: &str) -> Result<Vec<u8>, DeviceError> {
        self.compile(source, name, options).map(|c| c.to_bytes())
    }

    fn forget(&mut self, options: &str) {
        self.built.retain(|(o, _), _| o != options);
        self.handed.remove(options);
    }

    fn forget_all(&mut self) {
        self.built.clear();
        self.handed.clear();
    }

    fn builds(&self) -> usize {
        self.built.len()
    }

    /// `cuFuncGetAttribute`: threads per block, static shared and local memory.
    fn limits(&self, kernel: &Kernel) -> Result<KernelLimits, DeviceError> {
        let k: &CuKernel = kernel.raw();
        Ok(KernelLimits {
            work_group_size: Session::attribute(
                k,
                FuncAttr::CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK,
            )?,
            local_mem_size: Session::attribute(k, FuncAttr::CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES)?,
            private_mem_size: Session::attribute(k, FuncAttr::CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES)?,
            preferred_work_group_size_multiple: self
                .device
                .profile
                .preferred_work_group_size_multiple,
        })
    }

    fn alloc(&self, len: usize) -> Result<Buffer, DeviceError> {
        let context = self.context()?;
        let mut ptr = 0;
        // SAFETY: one device pointer written; freed by DeviceMemory's Drop.
        check("cuMemAlloc", unsafe {
            sys::cuMemAlloc_v2(&mut ptr, len.max(1))
        })?;
        Ok(Buffer::new(
            len,
            DeviceMemory {
                ptr,
                context: Rc::clone(context),
            },
        ))
    }

    fn write_at(
        &self,
        buffer: &mut Buffer,
        offset: usize,
        bytes: &[u8],
    ) -> Result<(), DeviceError> {
        if !buffer.holds(offset, bytes.len(), "write past the end of a buffer")? {
            return Ok(());
        }
        let context = self.context()?;
        // SAFETY: a range inside the buffer from a slice that lives until the stream is synced.
        check("cuMemcpyHtoDAsync", unsafe {
            sys::cuMemcpyHtoDAsync_v2(
                ptr(buffer) + offset as u64,
                bytes.as_ptr().cast(),
                bytes.len(),
                context.stream,
            )
        })?;
        context.sync(context.stream)
    }

    /// Enqueued on the session's stream: later commands see it done.
    fn copy(&self, src: &Buffer, dst: &mut Buffer) -> Result<(), DeviceError> {
        let n = src.len().min(dst.len());
        if n == 0 {
            return Ok(());
        }
        let context = self.context()?;
        // SAFETY: both ranges lie inside their buffers.
        check("cuMemcpyDtoDAsync", unsafe {
            sys::cuMemcpyDtoDAsync_v2(ptr(dst), ptr(src), n, context.stream)
        })
    }

    fn read_into(&self, buffer: &Buffer, offset: usize, out: &mut [u8]) -> Result<(), DeviceError> {
        if !buffer.holds(offset, out.len(), "read past the end of a buffer")? {
            return Ok(());
        }
        let context = self.context()?;
        // SAFETY: a range inside the buffer into a slice of that size, synced before return.
        check("cuMemcpyDtoHAsync", unsafe {
            sys::cuMemcpyDtoHAsync_v2(
                out.as_mut_ptr().cast(),
                ptr(buffer) + offset as u64,
                out.len(),
                context.stream,
            )
        })?;
        context.sync(context.stream)
    }

    /// A copy: the GPU's memory is not the host's.
    fn map_read(&self, buffer: &Buffer, f: &mut dyn FnMut(&[u8])) -> Result<(), DeviceError> {
        let mut bytes = vec![0u8; buffer.len()];
        self.read_into(buffer, 0, &mut bytes)?;
        f(&bytes);
        Ok(())
    }

    fn pinned(&self, len: usize) -> Result<Box<dyn Pinned>, DeviceError> {
        let context = self.context()?;
        let mut host = std::ptr::null_mut();
        // SAFETY: `len.max(1)` bytes allocated; freed by PinnedHost's Drop.
        check("cuMemHostAlloc", unsafe {
            sys::cuMemHostAlloc(&mut host, len.max(1), 0)
        })?;
        let mut pinned = PinnedHost {
            ptr: host.cast(),
            len,
            context: Rc::clone(context),
        };
        pinned.as_mut_slice().fill(0);
        Ok(Box::new(pinned))
    }

    fn pipeline(&self) -> Result<Box<dyn backend::Pipeline<'_> + '_>, DeviceError> {
        let context = self.context()?;
        let copies = context.copies()?;
        context.sync(context.stream)?;
        Ok(Box::new(Pipeline {
            session: self,
            context: Rc::clone(context),
            copies,
            transfers: Vec::new(),
            kernels: Vec::new(),
        }))
    }

    /// Checks each argument against the function's parameters (`cuFuncGetParamInfo`): their
    /// number, a buffer where a pointer goes, a scalar of the parameter's size.
    fn set_args(&self, kernel: &Kernel, args: &[Arg<'_>]) -> Result<(), DeviceError> {
        let k: &CuKernel = kernel.raw();
        let passed: Vec<&Arg<'_>> = args
            .iter()
            .filter(|a| !matches!(a, Arg::Local(_) | Arg::Constant { .. }))
            .collect();
        let sizes = Session::parameter_sizes(k)?;
        if sizes.len() != passed.len() {
            return Err(DeviceError::ArgCount {
                expected: sizes.len(),
                given: passed.len(),
            });
        }
        let mut values = Vec::with_capacity(passed.len());
        for (index, (arg, &size)) in passed.iter().zip(&sizes).enumerate() {
            let mismatch = |what: &str| DeviceError::Arg {
                index,
                code: sys::CUresult::CUDA_ERROR_INVALID_VALUE as i32,
                name: format!("{what}, the parameter has {size} bytes"),
            };
            let value = match arg {
                Arg::Buffer(b) if size == 8 => ptr(b),
                Arg::Buffer(_) => return Err(mismatch("a buffer (an 8-byte pointer) is given")),
                Arg::Scalar(bytes) if bytes.len() == size && size <= 8 => {
                    let mut word = [0u8; 8];
                    word[..size].copy_from_slice(bytes);
                    u64::from_ne_bytes(word)
                }
                Arg::Scalar(bytes) => {
                    return Err(mismatch(&format!("a {}-byte scalar is given", bytes.len())))
                }
                Arg::Local(_) | Arg::Constant { .. } => unreachable!("no parameters"),
            };
            values.push(value);
        }
        let shared: usize = args
            .iter()
            .map(|a| match a {
                Arg::Local(n) => *n,
                _ => 0,
            })
            .sum();
        let shared = u32::try_from(shared).map_err(|_| DeviceError::InvalidInput {
            what: "local memory: more than 4 GiB",
        })?;
        if shared > 48 * 1024 {
            // Above 48 KiB a block must opt in; the launch refuses what the device cannot give.
            // SAFETY: a live function.
            check("cuFuncSetAttribute", unsafe {
                sys::cuFuncSetAttribute(
                    k.function,
                    FuncAttr::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                    shared as i32,
                )
            })?;
        }
        for (index, arg) in args.iter().enumerate() {
            if let Arg::Constant { name, buffer } = arg {
                self.fill_constant(k, index, name, buffer)?;
            }
        }
        *k.params.borrow_mut() = values;
        k.shared.set(shared);
        Ok(())
    }

    fn start(
        &self,
        kernel: &Kernel,
        global: &[usize],
        local: Option<&[usize]>,
        offset: Option<&[usize]>,
    ) -> Result<Box<dyn backend::Running + '_>, DeviceError> {
        let context = self.context()?;
        self.enqueue(
            kernel,
            global,
            local,
            offset,
            context.stream,
            Some(context.events),
        )?;
        Ok(Box::new(Running { context }))
    }
}

/// A launch between the context's two events.
struct Running<'a> {
    context: &'a Rc<Context>,
}

fn elapsed_ms(start: sys::CUevent, end: sys::CUevent) -> Result<f64, DeviceError> {
    let mut ms = 0f32;
    // SAFETY: two recorded events of the current context.
    check("cuEventElapsedTime", unsafe {
        sys::cuEventElapsedTime_v2(&mut ms, start, end)
    })?;
    Ok(f64::from(ms))
}

impl backend::Running for Running<'_> {
    fn finish(self: Box<Self>) -> Result<f64, DeviceError> {
        let (start, end) = self.context.events;
        // SAFETY: an event recorded on this context's stream.
        check("cuEventSynchronize", unsafe {
            sys::cuEventSynchronize(end)
        })?;
        elapsed_ms(start, end)
    }
}

/// Transfers on one stream and kernels on another, ordered by events.
struct Pipeline<'a> {
    session: &'a Session,
    context: Rc<Context>,
    copies: sys::CUstream,
    /// Each command's start and end events.
    transfers: Vec<(sys::CUevent, sys::CUevent)>,
    kernels: Vec<(sys::CUevent, sys::CUevent)>,
}

impl Pipeline<'_> {
    fn events() -> Result<(sys::CUevent, sys::CUevent), DeviceError> {
        let (mut a, mut b) = (std::ptr::null_mut(), std::ptr::null_mut());
        // SAFETY: two events written; destroyed in Drop.
        unsafe {
            check("cuEventCreate", sys::cuEventCreate(&mut a, 0))?;
            check("cuEventCreate", sys::cuEventCreate(&mut b, 0))?;
        }
        Ok((a, b))
    }

    /// Makes `stream` wait for the end of each step in `after`.
    fn wait(&self, stream: sys::CUstream, after: &[Step]) -> Result<(), DeviceError> {
        for step in after {
            let (_, end) = match *step {
                Step::Transfer(i) => self.transfers[i],
                Step::Kernel(i) => self.kernels[i],
            };
            // SAFETY: a recorded event of this context.
            check("cuStreamWaitEvent", unsafe {
                sys::cuStreamWaitEvent(stream, end, 0)
            })?;
        }
        Ok(())
    }

    fn settle(&self) -> Result<(), DeviceError> {
        let kernels = self.context.sync(self.context.stream);
        let copies = self.context.sync(self.copies);
        kernels.and(copies)
    }
}

impl<'a> backend::Pipeline<'a> for Pipeline<'a> {
    fn write(
        &mut self,
        buffer: &Buffer,
        offset: usize,
        bytes: &'a [u8],
    ) -> Result<Step, DeviceError> {
        buffer.holds(offset, bytes.len(), "write past the end of a buffer")?;
        let events = Pipeline::events()?;
        // SAFETY: host memory that outlives the pipeline, whose drop waits for this copy.
        unsafe {
            check("cuEventRecord", sys::cuEventRecord(events.0, self.copies))?;
            check(
                "cuMemcpyHtoDAsync",
                sys::cuMemcpyHtoDAsync_v2(
                    ptr(buffer) + offset as u64,
                    bytes.as_ptr().cast(),
                    bytes.len(),
                    self.copies,
                ),
            )?;
            check("cuEventRecord", sys::cuEventRecord(events.1, self.copies))?;
        }
        self.transfers.push(events);
        Ok(Step::Transfer(self.transfers.len() - 1))
    }

    fn launch(
        &mut self,
        kernel: &Kernel,
        global: &[usize],
        local: Option<&[usize]>,
        offset: Option<&[usize]>,
        after: &[Step],
    ) -> Result<Step, DeviceError> {
        self.wait(self.context.stream, after)?;
        let events = Pipeline::events()?;
        self.session.enqueue(
            kernel,
            global,
            local,
            offset,
            self.context.stream,
            Some(events),
        )?;
        self.kernels.push(events);
        Ok(Step::Kernel(self.kernels.len() - 1))
    }

    fn read_into(
        &mut self,
        buffer: &Buffer,
        offset: usize,
        out: &mut [u8],
        after: &[Step],
    ) -> Result<(), DeviceError> {
        if !buffer.holds(offset, out.len(), "read past the end of a buffer")? {
            return Ok(());
        }
        self.wait(self.copies, after)?;
        let events = Pipeline::events()?;
        // SAFETY: a range inside the buffer into a slice of that size, synced before return.
        unsafe {
            check("cuEventRecord", sys::cuEventRecord(events.0, self.copies))?;
            check(
                "cuMemcpyDtoHAsync",
                sys::cuMemcpyDtoHAsync_v2(
                    out.as_mut_ptr().cast(),
                    ptr(buffer) + offset as u64,
                    out.len(),
                    self.copies,
                ),
            )?;
            check("cuEventRecord", sys::cuEventRecord(events.1, self.copies))?;
        }
        self.transfers.push(events);
        self.context.sync(self.copies)
    }

    fn finish(self: Box<Self>) -> Result<PipelineTimes, DeviceError> {
        self.settle()?;
        let total = |events: &[(sys::CUevent, sys::CUevent)]| -> Result<f64, DeviceError> {
            events.iter().map(|&(a, b)| elapsed_ms(a, b)).sum()
        };
        Ok(PipelineTimes {
            kernel_ms: total(&self.kernels)?,
            transfer_ms: total(&self.transfers)?,
        })
    }
}

impl Drop for Pipeline<'_> {
    fn drop(&mut self) {
        // Nothing may still read from host memory the borrow lets go of.
        let _ = self.settle();
        for (a, b) in self.kernels.iter().chain(&self.transfers) {
            // SAFETY: this pipeline's own events, destroyed once.
            unsafe {
                let _ = sys::cuEventDestroy_v2(*a);
                let _ = sys::cuEventDestroy_v2(*b);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_default_block_divides_the_global_size() {
        assert_eq!(default_block(&[1024]), [256, 1, 1]);
        assert_eq!(default_block(&[96]), [32, 1, 1]);
        assert_eq!(default_block(&[7]), [1, 1, 1]);
        assert_eq!(default_block(&[64, 64]), [64, 4, 1]);
    }

    #[test]
    fn launch_dimensions_are_checked() {
        assert_eq!(dims(&[4, 2]).unwrap(), [4, 2, 1]);
        assert!(dims(&[]).is_err());
        assert!(dims(&[1, 1, 1, 1]).is_err());
        assert!(dims(&[1 << 33]).is_err());
    }
}
