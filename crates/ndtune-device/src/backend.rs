//! The device backend boundary: what the engine, the measurement and build workers and split ask
//! of a device, whatever API drives it (OpenCL in `ndtune-cl`, CUDA in `ndtune-cuda`).
//!
//! A backend gives [`Device`]s (a profile, the platform model's inputs, and a way to open a
//! [`Session`]) and sessions (programs built from source and options into cacheable binaries,
//! buffers, arguments, launches with global and local sizes timed by device events, reads).
//! Handles the caller keeps ([`Buffer`], [`Kernel`]) carry the backend's own object, which only
//! the session that made them opens again. Every failure is a [`DeviceError`] whose variant (and,
//! for a failed call, its [`Fault`]) decides the configuration's outcome above this line: a
//! build error is `build_failed`, a launch error `refused`, a lost session `crashed`.

use crate::{DeviceProfile, PciAddress};
use serde::{Deserialize, Serialize};
use std::any::Any;
use std::fmt;
use std::sync::Arc;

/// Which API drives a device, and so which kernel language it compiles.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Api {
    OpenCl,
    Cuda,
}

impl Api {
    /// How users and errors name it.
    pub fn name(self) -> &'static str {
        match self {
            Api::OpenCl => "OpenCL",
            Api::Cuda => "CUDA",
        }
    }
}

impl fmt::Display for Api {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Where a device is in its own API's list: what a worker process opens, loading that API alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Address {
    pub api: Api,
    /// Its number among the API's devices (OpenCL's in platform order, CUDA's ordinal).
    pub number: usize,
}

/// What a failed call means for the work that made it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// The call failed; the session goes on (a launch refused, an allocation too large).
    Call,
    /// The kernel's arguments do not match its parameters: the spec is wrong, whatever the
    /// configuration.
    Arguments,
    /// The session can do nothing more (CUDA after an illegal address): the process that holds
    /// it must be replaced.
    Lost,
}

/// What can go wrong when talking to a device's API.
#[derive(Debug, Clone, thiserror::Error)]
pub enum DeviceError {
    /// The API's library is missing or reports no device; `hint` says how to install one.
    #[error("no {api} platform found ({reason}); {hint}")]
    Unavailable {
        api: Api,
        reason: String,
        hint: &'static str,
    },
    /// A device number beyond the list.
    #[error("there is no device {index} ({found} found; `ndtune devices` lists them)")]
    NoDevice { index: usize, found: usize },
    /// The compiler refused the program; `log` is its full log.
    #[error("{}", build_message(.device, .options, .name, *.code, .log))]
    Build {
        /// Name of the device the program was built for.
        device: String,
        options: String,
        /// The compiler's error code and its name, e.g. `CL_BUILD_PROGRAM_FAILURE`.
        code: i32,
        name: String,
        log: String,
    },
    /// The program built but defines no kernel of that name.
    #[error("the program defines no kernel `{name}` (it defines: {available})")]
    NoKernel { name: String, available: String },
    /// Input the API cannot take (an interior NUL byte, a range outside a buffer).
    #[error("invalid {what}")]
    InvalidInput { what: &'static str },
    /// The spec's argument list does not match the kernel's.
    #[error("the kernel takes {expected} arguments, but {given} are given")]
    ArgCount { expected: usize, given: usize },
    /// The API refused an argument (wrong size or kind for the kernel's parameter).
    #[error("argument {index} does not match the kernel's parameter: {name} ({code})")]
    Arg {
        index: usize,
        code: i32,
        name: String,
    },
    /// Any other call that failed, with its error's name and what it means for the session.
    #[error("{call} failed: {name} ({code})")]
    Failed {
        call: &'static str,
        code: i32,
        name: String,
        fault: Fault,
    },
}

fn build_message(device: &str, options: &str, name: &str, code: i32, log: &str) -> String {
    let log = log.trim_end();
    let log = if log.is_empty() {
        "(the compiler wrote no build log)"
    } else {
        log
    };
    format!(
        "building the program for {device} with options `{options}` failed: {name} ({code})\n{log}"
    )
}

impl DeviceError {
    /// What the failure means for the session that met it.
    pub fn fault(&self) -> Fault {
        match self {
            DeviceError::Failed { fault, .. } => *fault,
            DeviceError::ArgCount { .. } | DeviceError::Arg { .. } => Fault::Arguments,
            _ => Fault::Call,
        }
    }
}

/// What the compiler and the driver report of one built kernel on one device: advice (some
/// drivers launch larger work-groups than they advise; only a launch refuses).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KernelLimits {
    /// The largest work-group (thread block) the driver advises for this kernel.
    pub work_group_size: u64,
    /// Bytes of local (shared) memory the kernel uses statically.
    pub local_mem_size: u64,
    /// Bytes of private (thread-local) memory per work-item.
    pub private_mem_size: u64,
    /// The SIMD width (warp) work-groups should be a multiple of.
    pub preferred_work_group_size_multiple: u64,
}

/// One device of one backend, as discovery found it. Cheap to clone through [`AnyDevice`];
/// sessions are opened on the thread that uses them.
pub trait Device: fmt::Debug + Send + Sync {
    fn api(&self) -> Api;
    /// Its index in the one list of every backend's devices ([`Device::selector`]'s number).
    fn index(&self) -> usize;
    /// Where it is in its own API's list.
    fn address(&self) -> Address;
    /// Its platform's number in its API's own list (Kernel Tuner's `platform=` for OpenCL; 0
    /// where the API has one platform).
    fn platform_index(&self) -> usize {
        0
    }
    /// What it is and what it allows: the platform model's inputs.
    fn profile(&self) -> &DeviceProfile;
    /// For a sub-device, which part of how many of its parent (`D:K/N`).
    fn sub(&self) -> Option<(usize, usize)> {
        None
    }
    /// This device with `profile`, read whole by another process that opened it.
    fn with_profile(&self, profile: DeviceProfile) -> AnyDevice;
    /// This device with its whole profile, where reading it needs work that attaching skips.
    fn probed(&self) -> Result<AnyDevice, DeviceError>;
    /// Sub-device `k` of `n` equal partitions of this device.
    fn sub_device(&self, k: usize, n: usize) -> Result<AnyDevice, DeviceError>;
    /// The language version the device compiles and its platform's version, as the driver
    /// words them (Kernel Tuner's `env`: `opencl_c_version` / `platform_version`).
    fn versions(&self) -> Result<(String, String), DeviceError>;
    /// Whether building a program for the device holds a context on it (OpenCL's builds do,
    /// and NVIDIA's driver makes contexts one at a time, so a GPU gets few build workers;
    /// NVRTC builds hold none).
    fn builds_hold_context(&self) -> bool {
        true
    }
    /// Whether the driver keeps what it builds in a cache of its own, shared between processes.
    fn driver_caches_builds(&self) -> bool {
        false
    }
    /// Where the device sits on the PCI bus, where its driver tells it.
    fn pci_address(&self) -> Option<PciAddress>;
    /// How many devices of the same name come before this one in its backend's own list.
    fn same_name_before(&self) -> usize;
    /// Builds `source` with `options` for this device alone and reads `kernel`'s limits.
    fn kernel_limits(
        &self,
        source: &str,
        kernel: &str,
        options: &str,
    ) -> Result<KernelLimits, DeviceError>;
    /// Opens a working session (context, queue or stream, programs) on this device.
    fn session(&self) -> Result<Box<dyn Session>, DeviceError>;

    /// The selector that picks this device again: its index, with `:K/N` for a sub-device.
    fn selector(&self) -> String {
        match self.sub() {
            Some((k, n)) => format!("{}:{k}/{n}", self.index()),
            None => self.index().to_string(),
        }
    }
    /// How `ndtune devices` and reports name a device: `SELECTOR: NAME`.
    fn label(&self) -> String {
        format!("{}: {}", self.selector(), self.profile().name)
    }
}

/// A device of any backend.
pub type AnyDevice = Arc<dyn Device>;

/// A device buffer of a session: its size and the backend's own handle.
pub struct Buffer {
    len: usize,
    raw: Box<dyn Any>,
}

impl Buffer {
    /// Wraps a backend's buffer of `len` bytes.
    pub fn new(len: usize, raw: impl Any) -> Buffer {
        Buffer {
            len,
            raw: Box::new(raw),
        }
    }
    pub fn len(&self) -> usize {
        self.len
    }
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// The backend's handle; a buffer of another backend's session is a caller's bug.
    pub fn raw<T: 'static>(&self) -> &T {
        self.raw
            .downcast_ref()
            .expect("a buffer is used by the backend that made it")
    }
    /// Whether `len` bytes from byte `offset` lie inside the buffer (an error naming `what` if
    /// not); `false` for an empty range, which needs no command.
    pub fn holds(
        &self,
        offset: usize,
        len: usize,
        what: &'static str,
    ) -> Result<bool, DeviceError> {
        if offset + len > self.len {
            return Err(DeviceError::InvalidInput { what });
        }
        Ok(len > 0)
    }
}

/// A kernel of a session, ready to be given arguments and launched.
pub struct Kernel {
    raw: Box<dyn Any>,
}

impl fmt::Debug for Kernel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Kernel")
    }
}

impl fmt::Debug for Buffer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Buffer({} bytes)", self.len)
    }
}

impl Kernel {
    pub fn new(raw: impl Any) -> Kernel {
        Kernel { raw: Box::new(raw) }
    }
    /// The backend's handle; a kernel of another backend's session is a caller's bug.
    pub fn raw<T: 'static>(&self) -> &T {
        self.raw
            .downcast_ref()
            .expect("a kernel is used by the backend that made it")
    }
}

/// Host memory the device transfers from and to without a staging copy.
pub trait Pinned: Send {
    fn as_slice(&self) -> &[u8];
    fn as_mut_slice(&mut self) -> &mut [u8];
}

/// One kernel argument.
pub enum Arg<'a> {
    Buffer(&'a Buffer),
    /// A scalar's bytes in host order (1, 2, 4 or 8 of them).
    Scalar(&'a [u8]),
    /// Local (shared) memory of this many bytes.
    Local(usize),
    /// A buffer the kernel reads from the constant memory array `name` of its module (CUDA's
    /// `__constant__`): no parameter; the buffer is copied there before the launch.
    Constant {
        name: &'a str,
        buffer: &'a Buffer,
    },
}

/// A kernel launched by [`Session::start`], running or done.
pub trait Running {
    /// Waits for the kernel; its own time from the device's events, in milliseconds.
    fn finish(self: Box<Self>) -> Result<f64, DeviceError>;
}

/// A command of a [`Pipeline`] that later ones can wait for.
#[derive(Debug, Clone, Copy)]
pub enum Step {
    Transfer(usize),
    Kernel(usize),
}

/// Device time of what a [`Pipeline`] ran, in milliseconds: they may overlap each other.
#[derive(Debug, Clone, Copy, Default)]
pub struct PipelineTimes {
    pub kernel_ms: f64,
    pub transfer_ms: f64,
}

/// Transfers and kernels on two streams of one session, each command waiting only for the
/// [`Step`]s it names: the next slice's inputs and the last slice's outputs move while a kernel
/// runs. Host memory that writes read from must outlive the pipeline (its lifetime `'a`);
/// dropping it waits for every command it enqueued.
pub trait Pipeline<'a> {
    /// Writes `bytes` into `buffer` from byte `offset` on, without waiting.
    fn write(
        &mut self,
        buffer: &Buffer,
        offset: usize,
        bytes: &'a [u8],
    ) -> Result<Step, DeviceError>;
    /// Launches `kernel` (arguments set) once the steps `after` are done, without waiting.
    fn launch(
        &mut self,
        kernel: &Kernel,
        global: &[usize],
        local: Option<&[usize]>,
        offset: Option<&[usize]>,
        after: &[Step],
    ) -> Result<Step, DeviceError>;
    /// Fills `out` from `buffer` (from byte `offset` on) once the steps `after` are done, and
    /// waits for it: kernels enqueued before go on meanwhile.
    fn read_into(
        &mut self,
        buffer: &Buffer,
        offset: usize,
        out: &mut [u8],
        after: &[Step],
    ) -> Result<(), DeviceError>;
    /// Waits for everything enqueued; the device time of its kernels and of its transfers.
    fn finish(self: Box<Self>) -> Result<PipelineTimes, DeviceError>;
}

/// A working session on one device: programs built once per set of build options from the one
/// source it is given, raw byte buffers, kernel arguments and timed launches.
pub trait Session {
    /// Builds `source` with `options` (once per distinct options; the source must stay the same
    /// for the life of the session) and creates kernel `name`.
    fn kernel(&mut self, source: &str, name: &str, options: &str) -> Result<Kernel, DeviceError>;
    /// The source to build a kernel from that [`Session::start`] or a [`Pipeline`] launches
    /// with a global offset (split's parts): as written where the API's launches take one
    /// (OpenCL's `get_global_id` includes it); a backend whose launches have none adds what the
    /// kernel needs to see it as if they had.
    fn with_offsets(&self, source: &str) -> String {
        source.to_string()
    }
    /// Builds `source` with `options` and returns the binary another session on the same kind
    /// of device loads with [`Session::add_binary`] instead of compiling; nothing is kept.
    /// `name` is the kernel it will be asked for (CUDA looks a C++ kernel's symbol up by it).
    fn binary(&mut self, source: &str, name: &str, options: &str) -> Result<Vec<u8>, DeviceError>;
    /// Loads a binary made by [`Session::binary`] for `options` of this session's source, so that
    /// [`Session::kernel`] with those options uses it. Returns whether the driver took it; one it
    /// rejects (another driver version, say) leaves `kernel` to compile from source.
    fn add_binary(&mut self, source: &str, options: &str, binary: &[u8]) -> bool;
    /// Builds a kernel of the caller's own (not of the session's source, not among its builds),
    /// such as a comparison kernel.
    fn own_kernel(&self, source: &str, name: &str, options: &str) -> Result<Kernel, DeviceError>;
    /// [`Session::own_kernel`] from a binary made by [`Session::own_binary`]; where the driver
    /// does not take it, compiled from `source`.
    fn own_kernel_from(
        &self,
        binary: &[u8],
        source: &str,
        name: &str,
        options: &str,
    ) -> Result<Kernel, DeviceError>;
    /// The binary of a source of the caller's own (see [`Session::own_kernel`]).
    fn own_binary(&self, source: &str, name: &str, options: &str) -> Result<Vec<u8>, DeviceError>;
    /// Lets go of the program built with `options`, if any.
    fn forget(&mut self, options: &str);
    /// Lets go of every program built so far (none of them will be asked for again).
    fn forget_all(&mut self);
    /// How many distinct builds the session has made (successful or not).
    fn builds(&self) -> usize;
    /// The driver's advice on a kernel of this session.
    fn limits(&self, kernel: &Kernel) -> Result<KernelLimits, DeviceError>;

    /// A read-write device buffer of `len` bytes whose contents are undefined until written.
    fn alloc(&self, len: usize) -> Result<Buffer, DeviceError>;
    /// Writes `bytes` into a buffer from byte `offset` on (blocking).
    fn write_at(&self, buffer: &mut Buffer, offset: usize, bytes: &[u8])
        -> Result<(), DeviceError>;
    /// Copies the whole of `src` over the start of `dst` on the device. Not waited for: commands
    /// after it see the copy done, and its error surfaces at the next one that waits.
    fn copy(&self, src: &Buffer, dst: &mut Buffer) -> Result<(), DeviceError>;
    /// Fills `out` from a buffer, from byte `offset` on (blocking).
    fn read_into(&self, buffer: &Buffer, offset: usize, out: &mut [u8]) -> Result<(), DeviceError>;
    /// Calls `f` with a whole buffer's bytes: on a device that works in the host's memory (a
    /// CPU device) the buffer itself, with nothing copied; elsewhere a copy.
    fn map_read(&self, buffer: &Buffer, f: &mut dyn FnMut(&[u8])) -> Result<(), DeviceError>;
    /// `len` bytes of pinned host memory (at least 1), zeroed.
    fn pinned(&self, len: usize) -> Result<Box<dyn Pinned>, DeviceError>;
    /// A pipeline of transfers and launches on two streams (see [`Pipeline`]).
    fn pipeline(&self) -> Result<Box<dyn Pipeline<'_> + '_>, DeviceError>;

    /// Sets every argument of `kernel`; their number must be the kernel's where the API knows it.
    fn set_args(&self, kernel: &Kernel, args: &[Arg<'_>]) -> Result<(), DeviceError>;
    /// Launches `kernel` (arguments set) and hands it to the device without waiting:
    /// [`Running::finish`] waits and gives its time. `local` None lets the driver choose.
    fn start(
        &self,
        kernel: &Kernel,
        global: &[usize],
        local: Option<&[usize]>,
        offset: Option<&[usize]>,
    ) -> Result<Box<dyn Running + '_>, DeviceError>;
}

impl dyn Session + '_ {
    /// A read-write device buffer holding a copy of `bytes`.
    pub fn buffer(&self, bytes: &[u8]) -> Result<Buffer, DeviceError> {
        let mut out = self.alloc(bytes.len())?;
        self.write_at(&mut out, 0, bytes)?;
        Ok(out)
    }
    /// Overwrites the start of a buffer with `bytes` (blocking).
    pub fn write(&self, buffer: &mut Buffer, bytes: &[u8]) -> Result<(), DeviceError> {
        let n = bytes.len().min(buffer.len());
        self.write_at(buffer, 0, &bytes[..n])
    }
    /// Reads a whole buffer back (blocking).
    pub fn read(&self, buffer: &Buffer) -> Result<Vec<u8>, DeviceError> {
        self.read_at(buffer, 0, buffer.len())
    }
    /// Reads `len` bytes of a buffer from byte `offset` on (blocking).
    pub fn read_at(
        &self,
        buffer: &Buffer,
        offset: usize,
        len: usize,
    ) -> Result<Vec<u8>, DeviceError> {
        let mut out = vec![0u8; len];
        self.read_into(buffer, offset, &mut out)?;
        Ok(out)
    }
    /// [`Session::map_read`] giving back what `f` returns.
    pub fn map<T>(&self, buffer: &Buffer, f: impl FnOnce(&[u8]) -> T) -> Result<T, DeviceError> {
        let mut f = Some(f);
        let mut out = None;
        self.map_read(buffer, &mut |bytes| {
            if let Some(f) = f.take() {
                out = Some(f(bytes));
            }
        })?;
        Ok(out.expect("map_read calls its function once"))
    }
    /// Launches `kernel` and waits; the kernel's own time in milliseconds.
    pub fn launch(
        &self,
        kernel: &Kernel,
        global: &[usize],
        local: Option<&[usize]>,
        offset: Option<&[usize]>,
    ) -> Result<f64, DeviceError> {
        self.start(kernel, global, local, offset)?.finish()
    }
}
