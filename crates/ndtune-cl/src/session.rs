//! A working session on one device: its own context and profiling command queue, programs built
//! once per set of build options, raw byte buffers, kernel arguments and timed launches.

use crate::programs::Programs;
use crate::{api, ClDevice};
use ndtune_device::backend::{
    self, Arg, Buffer as DeviceBuffer, DeviceError, Kernel as Handle, KernelLimits, Pinned,
    PipelineTimes, Step,
};
use opencl3::command_queue::{CommandQueue, CL_QUEUE_PROFILING_ENABLE};
use opencl3::context::Context;
use opencl3::device::Device;
use opencl3::error_codes::CL_INVALID_KERNEL_NAME;
use opencl3::kernel::Kernel;
use opencl3::memory::{
    Buffer, ClMem, CL_MAP_READ, CL_MAP_WRITE, CL_MEM_ALLOC_HOST_PTR, CL_MEM_READ_WRITE,
};
use opencl3::program::Program;
use opencl3::types::{cl_device_id, CL_BLOCKING};
use std::ptr;

/// Host memory the driver pins for transfers (a `CL_MEM_ALLOC_HOST_PTR` buffer, mapped once):
/// on GPUs, writes from it and reads into it go by DMA instead of through the driver's pageable
/// staging copies. It stays mapped until dropped.
pub struct PinnedHost {
    buffer: Buffer<u8>,
    ptr: *mut u8,
    len: usize,
    /// The queue that mapped it (retained, so unmapping works whatever is dropped first).
    queue: opencl3::types::cl_command_queue,
}

// SAFETY: the mapping is plain host memory owned by this value; OpenCL handles are thread-safe.
unsafe impl Send for PinnedHost {}

impl Pinned for PinnedHost {
    fn as_slice(&self) -> &[u8] {
        // SAFETY: `ptr` maps `len` bytes for the life of self.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }

    fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: as above, and `&mut self` makes the access unique.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }
}

impl Drop for PinnedHost {
    fn drop(&mut self) {
        // SAFETY: unmapping this value's own mapping on the queue that made it, then letting go
        // of the retained queue; errors at teardown have nowhere to go.
        unsafe {
            if opencl3::command_queue::enqueue_unmap_mem_object(
                self.queue,
                self.buffer.get(),
                self.ptr.cast(),
                0,
                ptr::null(),
            )
            .is_ok()
            {
                let _ = opencl3::command_queue::finish(self.queue);
            }
            let _ = opencl3::command_queue::release_command_queue(self.queue);
        }
    }
}

/// Context, profiling queue and program cache for one device.
pub struct Session {
    id: cl_device_id,
    queue: CommandQueue,
    /// Programs by build options; a failed build is remembered too, with its error.
    programs: Programs,
    source: Option<String>,
    /// Commands enqueued without waiting (restoring copies, unmaps), with their API names: the
    /// queue is in order, so they are done by the time a later command that waits is, and their
    /// errors surface there ([`Session::settle`]); on a CPU device each wait is a round trip to
    /// the driver's threads that costs as much as the work.
    pending: std::cell::RefCell<Vec<(&'static str, opencl3::event::Event)>>,
    /// A second queue for a [`Pipeline`]'s transfers, made when the first one is asked for.
    copies: std::cell::OnceCell<CommandQueue>,
}

impl Session {
    /// Opens a context and a profiling command queue on `device`.
    pub fn new(device: &ClDevice) -> Result<Session, DeviceError> {
        let context = Context::from_device(device.device()).map_err(api("clCreateContext"))?;
        #[allow(deprecated)] // clCreateCommandQueue: every OpenCL version has it
        let queue = CommandQueue::create_default(&context, CL_QUEUE_PROFILING_ENABLE)
            .map_err(api("clCreateCommandQueue"))?;
        Ok(Session {
            id: device.id(),
            queue,
            programs: Programs::new(
                context,
                Device::new(device.id()),
                device.profile.name.clone(),
            ),
            source: None,
            pending: Default::default(),
            copies: Default::default(),
        })
    }

    /// Checks the commands enqueued without a wait, done once a later command was waited for.
    fn settle(&self) -> Result<(), DeviceError> {
        for (what, event) in self.pending.borrow_mut().drain(..) {
            event.wait().map_err(api(what))?;
        }
        Ok(())
    }

    /// The session builds one source: the first one given; no NUL bytes anywhere.
    fn check_source(&mut self, source: &str, options: &str) -> Result<(), DeviceError> {
        if self.source.get_or_insert_with(|| source.to_string()) != source {
            return Err(DeviceError::InvalidInput {
                what: "kernel source (a session builds one source)",
            });
        }
        if source.contains('\0') || options.contains('\0') {
            return Err(DeviceError::InvalidInput {
                what: "kernel source or options: they contain a NUL byte",
            });
        }
        Ok(())
    }

    fn create_kernel(program: &Program, name: &str) -> Result<Handle, DeviceError> {
        match Kernel::create(program, name) {
            Ok(k) => Ok(Handle::new(k)),
            Err(e) if e.0 == CL_INVALID_KERNEL_NAME => Err(DeviceError::NoKernel {
                name: name.to_string(),
                available: program.kernel_names().to_string(),
            }),
            Err(e) => Err(api("clCreateKernel")(e)),
        }
    }
}

/// The `cl_mem` of a buffer of this backend.
fn mem(buffer: &DeviceBuffer) -> opencl3::types::cl_mem {
    buffer.raw::<Buffer<u8>>().get()
}

impl backend::Session for Session {
    fn kernel(&mut self, source: &str, name: &str, options: &str) -> Result<Handle, DeviceError> {
        self.check_source(source, options)?;
        if name.contains('\0') {
            return Err(DeviceError::InvalidInput {
                what: "kernel name: it contains a NUL byte",
            });
        }
        let built = self.programs.get(source, options);
        let program = built.as_ref().as_ref().map_err(Clone::clone)?;
        Session::create_kernel(program, name)
    }

    /// The driver's program binary (`CL_PROGRAM_BINARIES`).
    fn binary(&mut self, source: &str, _name: &str, options: &str) -> Result<Vec<u8>, DeviceError> {
        self.check_source(source, options)?;
        binary_of(&self.programs.build(source, options)?)
    }

    /// `clCreateProgramWithBinary` and a build, which for a binary is a link.
    fn add_binary(&mut self, source: &str, options: &str, binary: &[u8]) -> bool {
        self.check_source(source, options).is_ok() && self.programs.add_binary(options, binary)
    }

    fn own_kernel(&self, source: &str, name: &str, options: &str) -> Result<Handle, DeviceError> {
        let program = self.programs.build(source, options)?;
        Kernel::create(&program, name)
            .map(Handle::new)
            .map_err(api("clCreateKernel"))
    }

    fn own_kernel_from(
        &self,
        binary: &[u8],
        source: &str,
        name: &str,
        options: &str,
    ) -> Result<Handle, DeviceError> {
        match self.programs.load(options, binary) {
            Some(program) => Kernel::create(&program, name)
                .map(Handle::new)
                .map_err(api("clCreateKernel")),
            None => self.own_kernel(source, name, options),
        }
    }

    fn own_binary(&self, source: &str, _name: &str, options: &str) -> Result<Vec<u8>, DeviceError> {
        binary_of(&self.programs.build(source, options)?)
    }

    fn forget(&mut self, options: &str) {
        self.programs.forget(options);
    }

    fn forget_all(&mut self) {
        self.programs.forget_all();
    }

    fn builds(&self) -> usize {
        self.programs.len()
    }

    /// `clGetKernelWorkGroupInfo`.
    fn limits(&self, kernel: &Handle) -> Result<KernelLimits, DeviceError> {
        crate::limits_of(kernel.raw(), self.id)
    }

    fn alloc(&self, len: usize) -> Result<DeviceBuffer, DeviceError> {
        // SAFETY: no host pointer is passed; the size is at least 1 byte.
        let buffer = unsafe {
            Buffer::<u8>::create(
                self.programs.context(),
                CL_MEM_READ_WRITE,
                len.max(1),
                ptr::null_mut(),
            )
        }
        .map_err(api("clCreateBuffer"))?;
        Ok(DeviceBuffer::new(len, buffer))
    }

    /// On a CPU device the mapped bytes are the buffer itself.
    fn map_read(&self, buffer: &DeviceBuffer, f: &mut dyn FnMut(&[u8])) -> Result<(), DeviceError> {
        if buffer.is_empty() {
            f(&[]);
            return Ok(());
        }
        let mut mapped: opencl3::types::cl_mem = ptr::null_mut();
        // SAFETY: a blocking map of the whole buffer for reading; unmapped below.
        unsafe {
            self.queue.enqueue_map_buffer(
                buffer.raw::<Buffer<u8>>(),
                CL_BLOCKING,
                CL_MAP_READ,
                0,
                buffer.len(),
                &mut mapped,
                &[],
            )
        }
        .map_err(api("clEnqueueMapBuffer"))?;
        self.settle()?;
        // SAFETY: the map gives `len` readable bytes until it is unmapped.
        f(unsafe { std::slice::from_raw_parts(mapped.cast::<u8>(), buffer.len()) });
        // SAFETY: unmapping this call's own mapping; checked at the next wait.
        let unmapped = unsafe {
            self.queue
                .enqueue_unmap_mem_object(mem(buffer), mapped, &[])
        }
        .map_err(api("clEnqueueUnmapMemObject"))?;
        self.pending
            .borrow_mut()
            .push(("clEnqueueUnmapMemObject", unmapped));
        Ok(())
    }

    fn pinned(&self, len: usize) -> Result<Box<dyn Pinned>, DeviceError> {
        let size = len.max(1);
        // SAFETY: no host pointer is passed; the driver allocates `size` bytes.
        let buffer = unsafe {
            Buffer::<u8>::create(
                self.programs.context(),
                CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR,
                size,
                ptr::null_mut(),
            )
        }
        .map_err(api("clCreateBuffer"))?;
        let mut mapped: opencl3::types::cl_mem = ptr::null_mut();
        // SAFETY: a blocking map of the whole buffer; the pointer lives until unmapped in Drop.
        unsafe {
            self.queue.enqueue_map_buffer(
                &buffer,
                CL_BLOCKING,
                CL_MAP_READ | CL_MAP_WRITE,
                0,
                size,
                &mut mapped,
                &[],
            )
        }
        .map_err(api("clEnqueueMapBuffer"))?;
        // SAFETY: retaining a live queue; released in PinnedHost's Drop.
        unsafe { opencl3::command_queue::retain_command_queue(self.queue.get()) }
            .map_err(|e| api("clRetainCommandQueue")(e.into()))?;
        let mut pinned = PinnedHost {
            buffer,
            ptr: mapped.cast(),
            len,
            queue: self.queue.get(),
        };
        pinned.as_mut_slice().fill(0);
        Ok(Box::new(pinned))
    }

    fn write_at(
        &self,
        buffer: &mut DeviceBuffer,
        offset: usize,
        bytes: &[u8],
    ) -> Result<(), DeviceError> {
        if !buffer.holds(offset, bytes.len(), "write past the end of a buffer")? {
            return Ok(());
        }
        // SAFETY: a blocking write from a live slice into a range inside the buffer.
        unsafe {
            opencl3::command_queue::enqueue_write_buffer(
                self.queue.get(),
                mem(buffer),
                CL_BLOCKING,
                offset,
                bytes.len(),
                bytes.as_ptr().cast(),
                0,
                ptr::null(),
            )
        }
        .map(|event| drop(opencl3::event::Event::new(event)))
        .map_err(|e| api("clEnqueueWriteBuffer")(e.into()))
    }

    /// How a tuner restores a buffer a kernel may have written, without a host transfer.
    fn copy(&self, src: &DeviceBuffer, dst: &mut DeviceBuffer) -> Result<(), DeviceError> {
        let n = src.len().min(dst.len());
        if n == 0 {
            return Ok(());
        }
        // SAFETY: both ranges lie inside their buffers; the copy is checked at the next wait.
        let event = unsafe {
            opencl3::command_queue::enqueue_copy_buffer(
                self.queue.get(),
                mem(src),
                mem(dst),
                0,
                0,
                n,
                0,
                ptr::null(),
            )
        }
        .map_err(|e| api("clEnqueueCopyBuffer")(e.into()))?;
        self.pending
            .borrow_mut()
            .push(("clEnqueueCopyBuffer", opencl3::event::Event::new(event)));
        Ok(())
    }

    fn read_into(
        &self,
        buffer: &DeviceBuffer,
        offset: usize,
        out: &mut [u8],
    ) -> Result<(), DeviceError> {
        if !buffer.holds(offset, out.len(), "read past the end of a buffer")? {
            return Ok(());
        }
        // SAFETY: blocking read of a range inside the buffer into a slice of that size.
        unsafe {
            self.queue.enqueue_read_buffer(
                buffer.raw::<Buffer<u8>>(),
                CL_BLOCKING,
                offset,
                out,
                &[],
            )
        }
        .map_err(api("clEnqueueReadBuffer"))?;
        self.settle()
    }

    fn pipeline(&self) -> Result<Box<dyn backend::Pipeline<'_> + '_>, DeviceError> {
        let copies = match self.copies.get() {
            Some(q) => q,
            None => {
                #[allow(deprecated)] // clCreateCommandQueue: every OpenCL version has it
                let q = CommandQueue::create_default(
                    self.programs.context(),
                    CL_QUEUE_PROFILING_ENABLE,
                )
                .map_err(api("clCreateCommandQueue"))?;
                self.copies.get_or_init(|| q)
            }
        };
        self.settle()?;
        Ok(Box::new(Pipeline {
            session: self,
            copies,
            transfers: Vec::new(),
            kernels: Vec::new(),
        }))
    }

    fn set_args(&self, kernel: &Handle, args: &[Arg<'_>]) -> Result<(), DeviceError> {
        let kernel: &Kernel = kernel.raw();
        let expected = kernel.num_args().map_err(api("clGetKernelInfo"))? as usize;
        if expected != args.len() {
            return Err(DeviceError::ArgCount {
                expected,
                given: args.len(),
            });
        }
        for (i, arg) in args.iter().enumerate() {
            let i = i as u32;
            // SAFETY: each value lives across the call; OpenCL copies it.
            let res = unsafe {
                match arg {
                    Arg::Buffer(b) => kernel.set_arg(i, &mem(b)),
                    Arg::Local(bytes) => kernel.set_arg_local_buffer(i, *bytes),
                    Arg::Constant { .. } => {
                        return Err(DeviceError::InvalidInput {
                            what: "constant memory argument (CUDA's; OpenCL takes a buffer)",
                        })
                    }
                    Arg::Scalar(bytes) => match bytes.len() {
                        1 => kernel.set_arg(i, &bytes[0]),
                        2 => kernel.set_arg(i, &u16::from_ne_bytes([bytes[0], bytes[1]])),
                        4 => kernel.set_arg(
                            i,
                            &u32::from_ne_bytes(bytes[..4].try_into().expect("4 bytes")),
                        ),
                        8 => kernel.set_arg(
                            i,
                            &u64::from_ne_bytes(bytes[..8].try_into().expect("8 bytes")),
                        ),
                        _ => {
                            return Err(DeviceError::InvalidInput {
                                what: "scalar argument (1, 2, 4 or 8 bytes)",
                            })
                        }
                    },
                }
            };
            res.map_err(|e| DeviceError::Arg {
                index: i as usize,
                code: e.0,
                name: crate::error_name(e.0).to_string(),
            })?;
        }
        Ok(())
    }

    /// Enqueues the kernel and hands it to the device at once (`clFlush`).
    fn start(
        &self,
        kernel: &Handle,
        global: &[usize],
        local: Option<&[usize]>,
        offset: Option<&[usize]>,
    ) -> Result<Box<dyn backend::Running + '_>, DeviceError> {
        let event = enqueue_kernel(&self.queue, kernel.raw(), global, local, offset, &[])?;
        self.queue.flush().map_err(api("clFlush"))?;
        Ok(Box::new(Running {
            session: self,
            event,
        }))
    }
}

/// A kernel launched by [`backend::Session::start`], running or done.
struct Running<'a> {
    session: &'a Session,
    event: opencl3::event::Event,
}

impl backend::Running for Running<'_> {
    fn finish(self: Box<Self>) -> Result<f64, DeviceError> {
        self.event.wait().map_err(api("clWaitForEvents"))?;
        self.session.settle()?;
        device_ns(&self.event).map(|ns| ns as f64 / 1e6)
    }
}

/// Enqueues `kernel` (arguments set) on `queue` after the events `wait`, without waiting for it.
fn enqueue_kernel(
    queue: &CommandQueue,
    kernel: &Kernel,
    global: &[usize],
    local: Option<&[usize]>,
    offset: Option<&[usize]>,
    wait: &[opencl3::types::cl_event],
) -> Result<opencl3::event::Event, DeviceError> {
    // SAFETY: the size arrays have `global.len()` entries and outlive the call.
    unsafe {
        queue.enqueue_nd_range_kernel(
            kernel.get(),
            global.len() as u32,
            offset.map_or(ptr::null(), <[usize]>::as_ptr),
            global.as_ptr(),
            local.map_or(ptr::null(), <[usize]>::as_ptr),
            wait,
        )
    }
    .map_err(api("clEnqueueNDRangeKernel"))
}

/// A finished command's time on the device (END - START of its profiling), in nanoseconds.
fn device_ns(event: &opencl3::event::Event) -> Result<u64, DeviceError> {
    let start = event
        .profiling_command_start()
        .map_err(api("clGetEventProfilingInfo"))?;
    let end = event
        .profiling_command_end()
        .map_err(api("clGetEventProfilingInfo"))?;
    Ok(end.saturating_sub(start))
}

/// Transfers on one in-order queue and kernels on another, each command waiting only for the
/// [`Step`]s it names: a part cut into slices is written, run and read back in a pipeline, the
/// next slice's inputs and the last slice's outputs moving while a kernel runs (on devices with
/// copy engines; elsewhere it runs as one queue would). Host memory that writes read from must
/// outlive the pipeline (its lifetime `'a`); dropping it waits for every command it enqueued.
struct Pipeline<'a> {
    session: &'a Session,
    copies: &'a CommandQueue,
    transfers: Vec<opencl3::event::Event>,
    kernels: Vec<opencl3::event::Event>,
}

impl Pipeline<'_> {
    fn wait_list(&self, after: &[Step]) -> Vec<opencl3::types::cl_event> {
        after
            .iter()
            .map(|s| match *s {
                Step::Transfer(i) => self.transfers[i].get(),
                Step::Kernel(i) => self.kernels[i].get(),
            })
            .collect()
    }

    fn wait(&mut self) -> Result<(), DeviceError> {
        let kernels = self.session.queue.finish().map_err(api("clFinish"));
        let copies = self.copies.finish().map_err(api("clFinish"));
        kernels?;
        copies?;
        for e in self.kernels.iter().chain(&self.transfers) {
            // A command that failed reports it through its event's status.
            e.wait().map_err(api("clWaitForEvents"))?;
        }
        Ok(())
    }
}

impl<'a> backend::Pipeline<'a> for Pipeline<'a> {
    fn write(
        &mut self,
        buffer: &DeviceBuffer,
        offset: usize,
        bytes: &'a [u8],
    ) -> Result<Step, DeviceError> {
        buffer.holds(offset, bytes.len(), "write past the end of a buffer")?;
        // SAFETY: a range inside the buffer from host memory that outlives the pipeline, whose
        // drop waits for this command.
        let event = unsafe {
            opencl3::command_queue::enqueue_write_buffer(
                self.copies.get(),
                mem(buffer),
                opencl3::types::CL_NON_BLOCKING,
                offset,
                bytes.len(),
                bytes.as_ptr().cast(),
                0,
                ptr::null(),
            )
        }
        .map_err(|e| api("clEnqueueWriteBuffer")(e.into()))?;
        self.transfers.push(opencl3::event::Event::new(event));
        Ok(Step::Transfer(self.transfers.len() - 1))
    }

    fn launch(
        &mut self,
        kernel: &Handle,
        global: &[usize],
        local: Option<&[usize]>,
        offset: Option<&[usize]>,
        after: &[Step],
    ) -> Result<Step, DeviceError> {
        let wait = self.wait_list(after);
        let event = enqueue_kernel(
            &self.session.queue,
            kernel.raw(),
            global,
            local,
            offset,
            &wait,
        )?;
        self.kernels.push(event);
        Ok(Step::Kernel(self.kernels.len() - 1))
    }

    fn read_into(
        &mut self,
        buffer: &DeviceBuffer,
        offset: usize,
        out: &mut [u8],
        after: &[Step],
    ) -> Result<(), DeviceError> {
        if !buffer.holds(offset, out.len(), "read past the end of a buffer")? {
            return Ok(());
        }
        let wait = self.wait_list(after);
        // SAFETY: blocking read of a range inside the buffer into a slice of that size.
        let event = unsafe {
            self.copies.enqueue_read_buffer(
                buffer.raw::<Buffer<u8>>(),
                CL_BLOCKING,
                offset,
                out,
                &wait,
            )
        }
        .map_err(api("clEnqueueReadBuffer"))?;
        self.transfers.push(event);
        Ok(())
    }

    fn finish(mut self: Box<Self>) -> Result<PipelineTimes, DeviceError> {
        self.wait()?;
        let total = |events: &[opencl3::event::Event]| -> Result<f64, DeviceError> {
            let mut ns = 0;
            for e in events {
                ns += device_ns(e)?;
            }
            Ok(ns as f64 / 1e6)
        };
        Ok(PipelineTimes {
            kernel_ms: total(&self.kernels)?,
            transfer_ms: total(&self.transfers)?,
        })
    }
}

impl Drop for Pipeline<'_> {
    fn drop(&mut self) {
        // Nothing may still read from host memory the borrow lets go of; errors were (or are
        // now, by `finish`) reported.
        let _ = self.session.queue.finish();
        let _ = self.copies.finish();
    }
}

/// The driver's binary of a built program (`CL_PROGRAM_BINARIES`, its one device's).
fn binary_of(program: &Program) -> Result<Vec<u8>, DeviceError> {
    program
        .get_binaries()
        .map_err(api("clGetProgramInfo(CL_PROGRAM_BINARIES)"))?
        .into_iter()
        .next()
        .ok_or(DeviceError::InvalidInput {
            what: "program binary (the driver returned none)",
        })
}
