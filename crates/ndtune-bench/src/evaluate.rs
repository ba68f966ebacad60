//! Evaluating configurations on one device, inside the worker process: build (cached per define
//! set, or loaded from a build worker's program binary), arguments filled deterministically, one
//! verification run checked against the reference (computed once per set of the values it
//! depends on) and by the host check, warm-up runs, then timed runs. Every
//! configuration ends as one [`Outcome`]; what is wrong with the spec or the reference itself is
//! a [`Fatal`] error that stops the campaign.
//!
//! What a configuration costs besides its build and its launches is kept small: each input is
//! uploaded once per campaign (per argument and size); a buffer the kernel only reads
//! (`access = "read"`) is used as it is, one it may write is restored on the device from the
//! pristine contents (allocated once per size, without an upload of its own); only the outputs named
//! in `[verify]` are compared: on a GPU by a kernel on the device ([`crate::device_check`]), on a
//! CPU device mapped where it lies, elsewhere read back into pinned host memory; on the host on
//! every core. The driver's `CL_KERNEL_WORK_GROUP_SIZE` is advice kept with the
//! timing: only a failed launch makes a configuration `refused`.

use crate::data::{fixed_len, from_bytes, initial_bytes};
use crate::device_check::{self, DeviceCheck};
use crate::host_c::{HostArgs, HostBuffer, HostScalar, HostValue};
use crate::race::Limits;
use crate::verify::{compare_bytes, Want};
use crate::worker::{Generated, OwnCheck};
use ndtune_backend::{
    AnyDevice, Arg, Buffer as DeviceBuffer, DeviceError, Fault, Kernel, Pinned, Session,
};
use ndtune_core::{Advice, Energy, Outcome, Raced, Timing};
use ndtune_device::DeviceType;
use ndtune_space::resolve::Node;
use ndtune_spec::{Access, ArgKind, ElemType, HostFunction, KernelSource, Reference, Spec};
use serde::{Deserialize, Serialize};
use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::rc::Rc;
use std::time::{Duration, Instant};

/// What stops a campaign: the spec, the kernel or the reference is wrong, whatever the
/// configuration.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{0}")]
pub struct Fatal(pub String);

/// A front end's own check of a configuration's outputs ([`OwnCheck`]): `verdict` gets the
/// files the outputs were written into, by argument name, and says why they are wrong, or
/// `None` where they are right.
pub struct FrontCheck<'a> {
    pub own: &'a OwnCheck,
    pub verdict: &'a mut dyn FnMut(BTreeMap<String, PathBuf>) -> Result<Option<String>, Fatal>,
}

/// What the front end that asks for an evaluation takes part in.
#[derive(Default)]
pub struct Front<'a> {
    /// Its own check of the outputs.
    pub check: Option<FrontCheck<'a>>,
    /// Its observers of the timed runs (Kernel Tuner's `BenchmarkObserver`s), told each
    /// [`Moment`]; an error stops the campaign.
    pub observe: Option<&'a mut Observe<'a>>,
}

/// How a front end's observers are told the moments of the timed runs.
pub type Observe<'a> = dyn FnMut(Moment) -> Result<(), Fatal> + 'a;

/// The moments of a configuration's timed runs at which a front end's observers are called,
/// as Kernel Tuner calls a `BenchmarkObserver`'s hooks around each of its iterations.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Moment {
    /// The timed runs of a configuration begin (`register_configuration`).
    Start,
    /// A run is about to be launched (`before_start`).
    BeforeStart,
    /// The run was launched and is running (`after_start`, then `during` until it finished).
    AfterStart,
    /// The run finished (`after_finish`).
    AfterFinish,
    /// The timed runs are over (`get_results`).
    End,
    /// The run is still running (`during`): told by the supervisor, not by the worker, as
    /// often as it can until the worker tells the next moment.
    During,
}

/// Host buffers by argument name, as f64.
type Buffers = BTreeMap<String, Vec<f64>>;

/// At most this many reference outputs are kept; a reference that depends on parameters is
/// computed again where the cache was emptied to keep memory bounded.
const KEPT_REFERENCES: usize = 16;

/// Everything a reference's outputs depend on besides the spec and the seed: its cache key.
/// Every reference depends on the buffers' lengths (the inputs are a function of them); a host
/// reference also on the scalar arguments it gets; a reference kernel also on its scalar and
/// `__local` arguments, its defines (the constants and parameters its source mentions) and its
/// global size. A reference that depends on none of a configuration's values is computed once.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
struct ReferenceKey {
    lens: Vec<usize>,
    scalars: Vec<Vec<u8>>,
    locals: Vec<usize>,
    options: String,
    global: Vec<usize>,
}

/// The outputs a reference computed; `id` tells them apart in the device's upload cache.
struct Expected {
    id: u64,
    outputs: BTreeMap<String, Want>,
}

/// Per argument, its buffer's bytes after one run ([`Bench::run_once`]); `None` for scalars and
/// local memory.
pub type RunBuffers = Vec<Option<Vec<u8>>>;

/// Where one evaluation's time went, in milliseconds of wall time inside the worker.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Cost {
    /// Building the program (0 when this define set was built before).
    pub build_ms: f64,
    /// Enqueueing and waiting for every launch (verification, warm-up and timed runs).
    pub launch_ms: f64,
    /// Computing the reference outputs (once per set of the values the reference depends on;
    /// 0 when cached).
    pub reference_ms: f64,
    /// Arguments on the device: buffers restored from the inputs, scalars.
    pub prepare_ms: f64,
    /// Reading the outputs back and comparing them with the reference.
    pub verify_ms: f64,
    /// The campaign's data put on the device, once per argument, size and reference (not part
    /// of `prepare_ms` and `verify_ms`): inputs generated and uploaded, expected outputs
    /// uploaded for the comparison on the device, its kernel built.
    #[serde(default)]
    pub data_ms: f64,
    /// The whole evaluation, including buffers, arguments, reference and verification.
    pub total_ms: f64,
}

/// The per-device evaluator.
pub struct Bench {
    spec: Spec,
    device: AnyDevice,
    /// The kernel's files and headers; only the constants and parameters they mention become
    /// defines, so configurations that differ in launch-only parameters share one build.
    source: KernelSource,
    session: Box<dyn Session>,
    seed: u64,
    global: Vec<Node>,
    local: Vec<Node>,
    /// Expected outputs, by what they depend on.
    references: HashMap<ReferenceKey, Rc<Expected>>,
    /// How many references were computed (the next one's id).
    computed_references: u64,
    /// A reference kernel's source, with the headers it includes.
    reference_source: Option<KernelSource>,
    /// Inputs as uploaded once, by (argument, bytes) (the host's, `host_data`, are by elements).
    pristine: RefCell<HashMap<(usize, usize), Rc<DeviceBuffer>>>,
    /// Device buffers of earlier configurations for arguments the kernel may write, by
    /// (argument, bytes): reused (the pristine contents copied in) instead of allocated again.
    spare: RefCell<HashMap<(usize, usize), Vec<DeviceBuffer>>>,
    /// Pinned host memory that outputs are read back into, by (argument, bytes) (not on a CPU
    /// device: there outputs are mapped).
    readback: RefCell<HashMap<(usize, usize), Box<dyn Pinned>>>,
    /// Where outputs are compared on the device (see [`Bench::check_on_device`]).
    device_check: RefCell<Option<DeviceCheck>>,
    /// What the driver's query said of the build of the configuration being evaluated.
    advice: Cell<Option<Advice>>,
    /// When the timing of the configuration being evaluated stops early (racing).
    race: Option<Limits>,
    build_ms: Cell<f64>,
    launch_ms: Cell<f64>,
    reference_ms: Cell<f64>,
    prepare_ms: Cell<f64>,
    verify_ms: Cell<f64>,
    data_ms: Cell<f64>,
    /// Initial buffer contents by (argument, length): generated once.
    host_data: RefCell<HashMap<(usize, usize), Rc<HostData>>>,
    /// The device's power source, where the energy is measured ([`Bench::measure_energy`]).
    meter: Option<ndtune_energy::Meter>,
    /// The code and global size the front end worked out for the configuration being
    /// evaluated, where it did ([`Bench::generate`]).
    generated: Generated,
    /// The program binary of `generated`'s code that a build worker made, for the evaluations
    /// of that code.
    own_binary: Option<Vec<u8>>,
    /// The kernel of `generated`'s code that [`Bench::build_into_driver_cache`] built, for the
    /// launch that primes it.
    own_kernel: Option<Kernel>,
    /// When the host functions of the configuration being evaluated must have ended
    /// ([`Bench::set_deadline`]).
    host_deadline: Cell<Option<Instant>>,
    /// Why the session can do nothing more, once a launch lost it ([`Bench::lost`]).
    lost: RefCell<Option<String>>,
}

/// How long a host function may run where the evaluation has no deadline.
const HOST_LIMIT: Duration = Duration::from_secs(600);

/// A buffer argument as the backend takes it: a parameter, or a constant memory array by name.
fn buffer_arg<'a>(name: &'a str, access: Access, buffer: &'a DeviceBuffer) -> Arg<'a> {
    match access {
        Access::Constant => Arg::Constant { name, buffer },
        _ => Arg::Buffer(buffer),
    }
}

/// One buffer's initial contents, as bytes for the device and, once a built-in reference asks
/// for them, as values (most campaigns never need them: a 40 MB input is 80 MB more as values).
struct HostData {
    ty: ElemType,
    bytes: Vec<u8>,
    values: std::cell::OnceCell<Vec<f64>>,
    /// What the contents were made from ([`crate::data::input_identity`]), as it stood before
    /// and after they were read; `None` where it moved meanwhile or cannot be told.
    identity: Option<String>,
}

impl HostData {
    fn new(ty: ElemType, bytes: Vec<u8>, identity: Option<String>) -> HostData {
        HostData {
            ty,
            bytes,
            values: std::cell::OnceCell::new(),
            identity,
        }
    }

    fn values(&self) -> &[f64] {
        self.values.get_or_init(|| from_bytes(self.ty, &self.bytes))
    }
}

/// A buffer argument on the device: an input shared by every configuration (the kernel only
/// reads it) or this configuration's own copy.
enum Held {
    Input(Rc<DeviceBuffer>),
    Own(DeviceBuffer),
}

impl Held {
    fn buffer(&self) -> &DeviceBuffer {
        match self {
            Held::Input(b) => b,
            Held::Own(b) => b,
        }
    }
}

/// One configuration's arguments on the device.
struct Prepared {
    buffers: Vec<Option<Held>>,
    scalars: Vec<Vec<u8>>,
    locals: Vec<usize>,
    /// Initial contents of every buffer argument, as the device sees them (after the type's
    /// rounding), by argument name.
    inputs: Vec<(String, Rc<HostData>)>,
    lens: Vec<usize>,
}

/// How a single run of a configuration ended short of outputs.
enum RunError {
    /// Boxed: an outcome is large, and errors travel through every step of a run.
    Outcome(Box<Outcome>),
    Fatal(Fatal),
}

impl RunError {
    fn outcome(outcome: Outcome) -> RunError {
        RunError::Outcome(Box::new(outcome))
    }
}

impl From<Fatal> for RunError {
    fn from(f: Fatal) -> Self {
        RunError::Fatal(f)
    }
}

fn eval(node: &Node, config: &[i64], what: &str) -> Result<i64, Fatal> {
    node.eval(config).ok_or_else(|| {
        Fatal(format!(
            "{what} divides by zero or overflows for configuration {config:?}"
        ))
    })
}

/// A scalar argument's bytes for one configuration: its value in its type, or why it has none
/// (it divides by zero, or does not fit the type).
pub fn scalar_bytes(
    ty: ndtune_spec::ElemType,
    value: &ndtune_spec::ScalarValue,
    config: &[i64],
    what: &str,
) -> Result<Vec<u8>, Fatal> {
    value
        .bytes(ty, config)
        .ok_or_else(|| {
            Fatal(format!(
                "{what} value divides by zero or overflows for configuration {config:?}"
            ))
        })?
        .map_err(|e| Fatal(format!("{what} value for configuration {config:?}: {e}")))
}

/// Why a buffer of `len` elements of `ty` cannot be allocated on `device`, if it cannot: more
/// bytes than `CL_DEVICE_MAX_MEM_ALLOC_SIZE`, the largest single allocation the driver accepts
/// (`clCreateBuffer` refuses it with `CL_INVALID_BUFFER_SIZE`), or than a 64-bit size holds.
fn buffer_too_large(device: &AnyDevice, ty: ndtune_spec::ElemType, len: usize) -> Option<String> {
    let limit = device.profile().max_mem_alloc_size;
    match len.checked_mul(ty.size()).map(|b| b as u64) {
        Some(bytes) if bytes <= limit => None,
        Some(bytes) => Some(format!(
            "{len} elements of {} are {bytes} bytes, more than the device's CL_DEVICE_MAX_MEM_ALLOC_SIZE of {limit} bytes",
            ty.name()
        )),
        None => Some(format!("{len} elements of {} overflow a 64-bit size", ty.name())),
    }
}

/// Whether no build of `old` can be one of `new`, both of `source`: a constant whose value
/// differs is a define of every build where the source mentions it or a build option may read
/// it.
fn builds_differ(old: &Spec, new: &Spec, source: &KernelSource) -> bool {
    let options_read_constants = !new.kernel.build_options.is_empty();
    new.problem.constants.iter().any(|(name, value)| {
        old.problem.constants.get(name) != Some(value)
            && (options_read_constants || source.mentions(name))
    }) || old.problem.constants.len() != new.problem.constants.len()
}

/// A job's spec with its overrides, checked to make the setup the campaign started with.
fn job_spec(job: &crate::worker::Job) -> Result<Spec, Fatal> {
    let fatal = |e: ndtune_spec::SpecError| Fatal(e.to_string());
    let spec = Spec::load_with(&job.spec, &job.overrides).map_err(fatal)?;
    if let Some(source) = spec.kernel_source().map_err(fatal)? {
        let now = spec.setup(&source, job.seed).map_err(fatal)?.digest;
        if now != job.setup {
            return Err(Fatal(format!(
                "{}: the spec or a file it names changed since the campaign started (setup {}, now {now}): results measured now would not be the campaign's; start it again",
                spec.path.display(),
                job.setup
            )));
        }
    }
    Ok(spec)
}

fn size(node: &Node, config: &[i64], what: &str) -> Result<usize, Fatal> {
    let v = eval(node, config, what)?;
    usize::try_from(v).map_err(|_| Fatal(format!("{what} is {v} for configuration {config:?}")))
}

impl Bench {
    /// Opens a session on `device` for `spec`, which must have a kernel source and `[launch]`.
    pub fn new(spec: Spec, device: &AnyDevice, seed: u64) -> Result<Bench, Fatal> {
        Bench::with_session(spec, device, seed, None)
    }

    /// [`Bench::new`] in `session` (one of `device` for the same kernel source) where given.
    fn with_session(
        spec: Spec,
        device: &AnyDevice,
        seed: u64,
        session: Option<Box<dyn Session>>,
    ) -> Result<Bench, Fatal> {
        let source = spec
            .kernel_source()
            .map_err(|e| Fatal(e.to_string()))?
            .ok_or_else(|| {
                Fatal(format!(
                    "{}: [kernel] source is needed to tune",
                    spec.path.display()
                ))
            })?;
        let launch = spec.problem.launch.clone().ok_or_else(|| {
            Fatal(format!(
                "{}: [launch] is needed to tune",
                spec.path.display()
            ))
        })?;
        let parse = |src: &String| spec.problem.int_expr(src).map_err(|e| Fatal(e.to_string()));
        let global = launch.global.iter().map(parse).collect::<Result<_, _>>()?;
        let local = launch.local.iter().map(parse).collect::<Result<_, _>>()?;
        let reference_source = match spec.verify.as_ref().and_then(|v| v.reference.as_ref()) {
            Some(Reference::Kernel { source, name, .. }) => Some(
                KernelSource::read(std::slice::from_ref(source), &spec.kernel.search_dirs())
                    .map_err(|e| {
                        Fatal(format!(
                            "[verify] reference kernel `{name}` ({}): {}",
                            source.display(),
                            e.message
                        ))
                    })?,
            ),
            _ => None,
        };
        let halves = spec.args.iter().find(|a| {
            matches!(
                a.kind,
                ArgKind::Buffer {
                    ty: ElemType::Half,
                    ..
                } | ArgKind::Scalar {
                    ty: ElemType::Half,
                    ..
                }
            )
        });
        if let Some(a) = halves {
            if !device
                .profile()
                .extensions
                .iter()
                .any(|e| e == "cl_khr_fp16")
            {
                return Err(Fatal(format!(
                    "[[args]] {} is a half, and {} has no cl_khr_fp16",
                    a.name,
                    device.profile().name
                )));
            }
        }
        // A buffer whose size is the same for every configuration and that the device cannot
        // hold stops the campaign before any memory is taken for it.
        for a in &spec.args {
            if let ArgKind::Buffer { ty, len, .. } = &a.kind {
                let mut vars = Vec::new();
                len.vars(&mut vars);
                // Evaluated only where it reads no parameter.
                if let Some(n) = vars.is_empty().then(|| len.eval(&[])).flatten() {
                    if n < 0 {
                        return Err(Fatal(format!(
                            "{}: [[args]] {}: len is {n}; a buffer's length cannot be negative",
                            spec.path.display(),
                            a.name
                        )));
                    }
                    let n = usize::try_from(n).unwrap_or(usize::MAX);
                    if let Some(why) = buffer_too_large(device, *ty, n) {
                        return Err(Fatal(format!(
                            "{}: [[args]] {}: {why}; no configuration can run",
                            spec.path.display(),
                            a.name
                        )));
                    }
                }
            }
        }
        let session = match session {
            Some(session) => session,
            None => device.session().map_err(|e| Fatal(e.to_string()))?,
        };
        Ok(Bench {
            spec,
            device: device.clone(),
            source,
            session,
            seed,
            global,
            local,
            references: HashMap::new(),
            computed_references: 0,
            reference_source,
            pristine: RefCell::new(HashMap::new()),
            spare: RefCell::new(HashMap::new()),
            readback: RefCell::new(HashMap::new()),
            device_check: RefCell::new(device_check::suits(device).then(DeviceCheck::new)),
            advice: Cell::new(None),
            race: None,
            build_ms: Cell::new(0.0),
            launch_ms: Cell::new(0.0),
            reference_ms: Cell::new(0.0),
            prepare_ms: Cell::new(0.0),
            verify_ms: Cell::new(0.0),
            data_ms: Cell::new(0.0),
            host_data: RefCell::new(HashMap::new()),
            meter: None,
            generated: Generated::default(),
            own_binary: None,
            own_kernel: None,
            host_deadline: Cell::new(None),
            lost: RefCell::new(None),
        })
    }

    /// The evaluation that starts now must end within `deadline` (its worker is killed then):
    /// its host functions get nine tenths of it, so that a check that hangs is killed and
    /// reported as the check's failure before the evaluation is taken for the kernel's
    /// timeout.
    pub fn set_deadline(&self, deadline: Option<Duration>) {
        self.host_deadline
            .set(deadline.map(|d| Instant::now() + d.mul_f64(0.9)));
    }

    /// The time the next host function may run.
    fn host_limit(&self) -> Duration {
        match self.host_deadline.get() {
            Some(at) => at
                .saturating_duration_since(Instant::now())
                .max(Duration::from_millis(100)),
            None => HOST_LIMIT,
        }
    }

    /// Measures the energy from now on: each measured configuration's timing keeps the
    /// [`Energy`] the device drew over its timed runs. A device without a power source is an
    /// error saying why.
    pub fn measure_energy(&mut self) -> Result<(), Fatal> {
        let meter = crate::energy::meter(&self.device).map_err(|e| Fatal(e.to_string()))?;
        self.meter = Some(meter);
        Ok(())
    }

    /// Opens a [`crate::worker::Job`]: its spec (with the overrides) on its device, after
    /// checking that the spec and its files still make the campaign's setup.
    pub fn open(job: &crate::worker::Job) -> Result<Bench, Fatal> {
        let spec = job_spec(job)?;
        let mut bench = Bench::new(spec, &job.open_device()?, job.seed)?;
        if job.energy {
            bench.measure_energy()?;
        }
        Ok(bench)
    }

    /// Takes up `job` on the device this bench is open on (a sweep's next campaign): its
    /// device session is kept (its builds too) where the kernel's source is the same, every
    /// buffer and reference of the job before is let go first.
    pub fn switch(self, job: &crate::worker::Job) -> Result<Bench, Fatal> {
        let spec = job_spec(job)?;
        let same_source = spec
            .kernel_source()
            .ok()
            .flatten()
            .is_some_and(|source| source.builds_alike(&self.source));
        // No program built so far is built with the new job's options: none is kept.
        let forget = same_source && builds_differ(&self.spec, &spec, &self.source);
        // Buffers live in their session: inputs are kept with it.
        let inputs = if same_source {
            self.inputs_for(&spec, job.seed)
        } else {
            Vec::new()
        };
        let (device, mut session, meter) = self.into_kept();
        if forget {
            session.forget_all();
        }
        let session = same_source.then_some(session);
        let mut bench = Bench::with_session(spec, &device, job.seed, session)?;
        // The host's by (argument, elements), the device's by (argument, bytes).
        for ((i, len), host, on_device) in inputs {
            if let Some(buffer) = on_device {
                bench
                    .pristine
                    .get_mut()
                    .insert((i, host.bytes.len()), buffer);
            }
            bench.host_data.get_mut().insert((i, len), host);
        }
        match (job.energy, meter) {
            (true, Some(meter)) => bench.meter = Some(meter),
            (true, None) => bench.measure_energy()?,
            (false, _) => {}
        }
        Ok(bench)
    }

    /// The inputs of this bench, on the host and on the device, that the spec `next` (with
    /// `seed`) starts from too, by `next`'s (argument, elements): a session's next job on the
    /// same data (a Python session's next `tune_kernel` call over the same arrays) neither
    /// reads nor uploads them again.
    #[allow(clippy::type_complexity)]
    fn inputs_for(
        &self,
        next: &Spec,
        seed: u64,
    ) -> Vec<((usize, usize), Rc<HostData>, Option<Rc<DeviceBuffer>>)> {
        let held = self.host_data.borrow();
        let pristine = self.pristine.borrow();
        let mut kept = Vec::new();
        for i in 0..next.args.len() {
            let Some(len) = fixed_len(next, i) else {
                continue;
            };
            let Some(identity) = crate::data::input_identity(next, i, len, seed) else {
                continue;
            };
            let same = held
                .iter()
                .find(|(_, data)| data.identity.as_ref() == Some(&identity));
            if let Some((&(j, _), data)) = same {
                let on_device = pristine.get(&(j, data.bytes.len())).map(Rc::clone);
                kept.push(((i, len), Rc::clone(data), on_device));
            }
        }
        kept
    }

    /// What a switch keeps: the device, its session and the meter; the rest (buffers,
    /// references) is let go here, before the next job allocates.
    fn into_kept(self) -> (AnyDevice, Box<dyn Session>, Option<ndtune_energy::Meter>) {
        let Bench {
            device,
            session,
            meter,
            ..
        } = self;
        (device, session, meter)
    }

    /// Why a buffer of `len` elements of `ty` cannot be allocated on this device, if it cannot.
    fn too_large(&self, ty: ndtune_spec::ElemType, len: usize) -> Option<String> {
        buffer_too_large(&self.device, ty, len)
    }

    /// Whether outputs are compared on the device (the default on a GPU with double precision)
    /// or read back and compared on the host; the verdicts and their details are the same.
    pub fn check_on_device(&mut self, on: bool) {
        *self.device_check.get_mut() = on.then(DeviceCheck::new);
    }

    /// Whether outputs are compared on the device now (a driver that cannot run the comparison
    /// turns it off).
    pub fn compares_on_device(&self) -> bool {
        self.device_check.borrow().is_some()
    }

    /// The next evaluations build `generated`'s code and launch its global size where it has
    /// them, in place of the spec's source and `[launch] global` (`None`: the spec's).
    /// Generated code is built for its evaluation and not kept: each configuration has its own.
    pub fn generate(&mut self, generated: Option<Generated>) {
        self.generated = generated.unwrap_or_default();
        self.own_binary = None;
        self.own_kernel = None;
    }

    /// Build options of a configuration of the tuned kernel.
    fn options(&self, config: &[i64]) -> String {
        self.spec.build_options(&self.source, config)
    }

    /// How many times a reference's outputs were computed so far (once per set of the values
    /// it depends on, while they are kept).
    pub fn references_computed(&self) -> u64 {
        self.computed_references
    }

    /// How many distinct programs were built so far.
    pub fn builds(&self) -> usize {
        self.session.builds()
    }

    /// Why the device's session is lost, once a launch lost it (CUDA after an illegal address):
    /// the configuration is `crashed` and the process must be replaced.
    pub fn lost(&self) -> Option<String> {
        self.lost.borrow().clone()
    }

    /// The device's name.
    pub fn device_name(&self) -> &str {
        &self.device.profile().name
    }

    /// Evaluates one configuration (values in parameter declaration order) and says where the
    /// time went. `binary`: a file with the program binary a build worker made for this
    /// configuration's build options, loaded instead of compiling (compiled from source where
    /// the file cannot be read or the driver rejects it). `race`: when its timing stops early.
    /// `front`: what the front end takes part in ([`Front`]).
    pub fn evaluate_costed(
        &mut self,
        config: &[i64],
        binary: Option<&std::path::Path>,
        race: Option<&Limits>,
        front: Front<'_>,
    ) -> Result<(Outcome, Cost), Fatal> {
        let started = Instant::now();
        self.race = race.cloned();
        self.build_ms.set(0.0);
        self.launch_ms.set(0.0);
        self.reference_ms.set(0.0);
        self.prepare_ms.set(0.0);
        self.verify_ms.set(0.0);
        self.data_ms.set(0.0);
        if let Some(path) = binary {
            if let Ok(bytes) = std::fs::read(path) {
                self.add_binary(config, bytes);
            }
            self.build_ms.set(started.elapsed().as_secs_f64() * 1e3);
        }
        let outcome = self.evaluate(config, front);
        self.race = None;
        let outcome = outcome?;
        let cost = Cost {
            build_ms: self.build_ms.get(),
            launch_ms: self.launch_ms.get(),
            reference_ms: self.reference_ms.get(),
            prepare_ms: self.prepare_ms.get(),
            verify_ms: self.verify_ms.get(),
            data_ms: self.data_ms.get(),
            total_ms: started.elapsed().as_secs_f64() * 1e3,
        };
        Ok((outcome, cost))
    }

    /// The driver's program binary for a configuration's build options (of the generated
    /// code, where there is any), built now and not kept (see [`Session::binary`]).
    pub fn binary(&mut self, config: &[i64]) -> Result<Vec<u8>, DeviceError> {
        let options = self.options(config);
        match &self.generated.source {
            Some(code) => self
                .session
                .own_binary(code, &self.spec.kernel.name, &options),
            None => self
                .session
                .binary(&self.source.text, &self.spec.kernel.name, &options),
        }
    }

    /// Whether a build worker's build reaches the measurement through the driver's own cache of
    /// builds ([`ndtune_backend::Device::driver_caches_builds`]) rather than as a program binary:
    /// on PoCL, asking for a binary compiles the kernel once more (75 ms of a 0.3 s build and
    /// prime of a small kernel on 2 cores), where a build from source that finds PoCL's cache
    /// takes 25 ms.
    pub fn driver_caches_builds(&self) -> bool {
        self.device.driver_caches_builds()
    }

    /// Builds a configuration's program (of the generated code, where there is any) into the
    /// driver's own cache of builds, for [`Bench::prime`] and for the measurement's build from
    /// source to find there.
    pub fn build_into_driver_cache(&mut self, config: &[i64]) -> Result<(), DeviceError> {
        let options = self.options(config);
        let name = &self.spec.kernel.name;
        match &self.generated.source {
            Some(code) => {
                self.own_kernel = Some(self.session.own_kernel(code, name, &options)?);
                Ok(())
            }
            None => self
                .session
                .kernel(&self.source.text, name, &options)
                .map(drop),
        }
    }

    /// Loads a build worker's `binary` of a configuration for its evaluations.
    fn add_binary(&mut self, config: &[i64], binary: Vec<u8>) {
        if self.generated.source.is_some() {
            self.own_binary = Some(binary);
        } else {
            let options = self.options(config);
            self.session
                .add_binary(&self.source.text, &options, &binary);
        }
    }

    /// The build options of a configuration (its build key on a GPU).
    pub fn build_options(&self, config: &[i64]) -> String {
        self.options(config)
    }

    /// Loads `binary` for a configuration and launches a little of it, untimed and unverified,
    /// then lets the program go: a driver that compiles at the first launch (PoCL specialises a
    /// kernel for each work-group size then, and caches the result on disk) does that work
    /// here, in a build worker, rather than in the measurement. What runs is one work-group, or
    /// as few as give the launch PoCL's grid class of the measured one ([`primed_global`]).
    /// Errors are left to the measurement.
    /// Without a `binary` the program is the one [`Bench::build_into_driver_cache`] built.
    pub fn prime(&mut self, config: &[i64], binary: Option<Vec<u8>>) {
        if let Some(binary) = binary {
            self.add_binary(config, binary);
        }
        if let Ok(p) = self.prepare(config) {
            if let Ok((kernel, global, local)) = self.ready(config, &p) {
                let _ = self.launch(&kernel, &primed_global(&global, &local), &local);
            }
            self.recycle(p);
        }
        self.own_binary = None;
        self.own_kernel = None;
        self.session.forget(&self.options(config));
    }

    /// Evaluates one configuration (values in parameter declaration order); `front`: what the
    /// front end takes part in ([`Front`]).
    pub fn evaluate(&mut self, config: &[i64], front: Front<'_>) -> Result<Outcome, Fatal> {
        let (started, data_ms) = (Instant::now(), self.data_ms.get());
        let prepared = self.prepare(config);
        self.prepare_ms
            .set(started.elapsed().as_secs_f64() * 1e3 - (self.data_ms.get() - data_ms));
        let prepared = match prepared {
            Ok(p) => p,
            Err(RunError::Outcome(o)) => return Ok(*o),
            Err(RunError::Fatal(f)) => return Err(f),
        };
        // The reference's own builds and launches count as such, the rest as reference time.
        let (started, device_ms) = (Instant::now(), self.build_ms.get() + self.launch_ms.get());
        let expected = self.reference(config, &prepared)?;
        let device_ms = self.build_ms.get() + self.launch_ms.get() - device_ms;
        self.reference_ms
            .set(started.elapsed().as_secs_f64() * 1e3 - device_ms);
        let measured = self.measure(config, &prepared, expected.as_deref(), front);
        self.recycle(prepared);
        match measured {
            Ok(o) => Ok(o),
            Err(RunError::Outcome(o)) => Ok(*o),
            Err(RunError::Fatal(f)) => Err(f),
        }
    }

    /// Counts the time since `started` as putting the campaign's data on the device.
    fn add_data_time(&self, started: Instant) {
        self.data_ms
            .set(self.data_ms.get() + started.elapsed().as_secs_f64() * 1e3);
    }

    /// Runs one configuration once, untimed and unverified, and reads every buffer argument back
    /// (Python's `run_kernel`): per argument the bytes of its buffer after the run (`None` for
    /// scalars and local memory), or the outcome that stopped the run (a failed build, a refused
    /// launch).
    pub fn run_once(&mut self, config: &[i64]) -> Result<Result<RunBuffers, Outcome>, Fatal> {
        let p = match self.prepare(config) {
            Ok(p) => p,
            Err(RunError::Outcome(o)) => return Ok(Err(*o)),
            Err(RunError::Fatal(f)) => return Err(f),
        };
        let run = self
            .ready(config, &p)
            .and_then(|(kernel, global, local)| self.launch(&kernel, &global, &local))
            .and_then(|_| {
                held_buffers(&p)
                    .into_iter()
                    .map(|b| b.map(|b| self.session.read(b)).transpose())
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(|e| RunError::outcome(refused(&e)))
            });
        self.recycle(p);
        match run {
            Ok(buffers) => Ok(Ok(buffers)),
            Err(RunError::Outcome(o)) => Ok(Err(*o)),
            Err(RunError::Fatal(f)) => Err(f),
        }
    }

    /// Keeps a configuration's own device buffers for the next one.
    fn recycle(&self, p: Prepared) {
        let mut spare = self.spare.borrow_mut();
        for (i, b) in p.buffers.into_iter().enumerate() {
            if let Some(Held::Own(b)) = b {
                spare.entry((i, b.len())).or_default().push(b);
            }
        }
    }

    /// Argument `i`'s buffer for one configuration: the input uploaded once (kept for every
    /// configuration) where the kernel only reads it, else a buffer of this configuration's
    /// with the input copied in on the device. (A copy, not a fill where the input is one value
    /// repeated: PoCL fills 64 MiB in 80-120 ms where it copies them in 30-80 ms.)
    fn hold(&self, i: usize, access: Access, data: &HostData) -> Result<Held, DeviceError> {
        let key = (i, data.bytes.len());
        let input = self.pristine(key, data)?;
        if !access.writes() {
            return Ok(Held::Input(input));
        }
        let reused = self.spare.borrow_mut().get_mut(&key).and_then(Vec::pop);
        let mut own = match reused {
            Some(b) => b,
            None => self.session.alloc(data.bytes.len())?,
        };
        self.session.copy(&input, &mut own)?;
        Ok(Held::Own(own))
    }

    /// The input `data` of argument and size `key` on the device, uploaded the first time.
    fn pristine(
        &self,
        key: (usize, usize),
        data: &HostData,
    ) -> Result<Rc<DeviceBuffer>, DeviceError> {
        if let Some(b) = self.pristine.borrow().get(&key) {
            return Ok(Rc::clone(b));
        }
        let started = Instant::now();
        let input = Rc::new(self.session.buffer(&data.bytes)?);
        self.pristine.borrow_mut().insert(key, Rc::clone(&input));
        self.add_data_time(started);
        Ok(input)
    }

    /// Argument `i`'s input of `len` elements on the host: read or generated the first time.
    fn host_input(
        &self,
        i: usize,
        ty: ndtune_spec::ElemType,
        len: usize,
        config: &[i64],
    ) -> Result<Rc<HostData>, Fatal> {
        if let Some(data) = self.host_data.borrow().get(&(i, len)) {
            return Ok(Rc::clone(data));
        }
        let started = Instant::now();
        let identity = || crate::data::input_identity(&self.spec, i, len, self.seed);
        let before = identity();
        let bytes = initial_bytes(&self.spec, i, len, config, self.seed).map_err(Fatal)?;
        // A file written while it was read is no input to keep for the next job.
        let identity = before.filter(|b| identity().as_ref() == Some(b));
        let data = Rc::new(HostData::new(ty, bytes, identity));
        self.host_data
            .borrow_mut()
            .insert((i, len), Rc::clone(&data));
        self.add_data_time(started);
        Ok(data)
    }

    /// How many inputs are on the device, each uploaded once (or kept from the job before).
    pub fn inputs_on_device(&self) -> usize {
        self.pristine.borrow().len()
    }

    /// Reads (or generates) every input whose length no parameter changes and puts it on the
    /// device, as the first evaluation would: the measurement worker does it as it starts, while
    /// the campaign waits for its first build, rather than after that build. Whatever fails here
    /// is left to the evaluations, which say why. Returns how many inputs are on the device.
    pub fn load_inputs(&self) -> usize {
        let mut loaded = 0;
        for (i, arg) in self.spec.args.iter().enumerate() {
            let (ArgKind::Buffer { ty, .. }, Some(len)) = (&arg.kind, fixed_len(&self.spec, i))
            else {
                continue;
            };
            if self.too_large(*ty, len).is_some() {
                continue;
            }
            // No length here names a parameter: the configuration is never read.
            // Keyed as the evaluations hold it: by bytes.
            if let Ok(data) = self.host_input(i, *ty, len, &[]) {
                loaded += usize::from(self.pristine((i, data.bytes.len()), &data).is_ok());
            }
        }
        loaded
    }

    /// Allocates and fills the arguments of a configuration.
    fn prepare(&self, config: &[i64]) -> Result<Prepared, RunError> {
        let mut p = Prepared {
            buffers: vec![],
            scalars: vec![],
            locals: vec![],
            inputs: Vec::new(),
            lens: vec![],
        };
        for (i, arg) in self.spec.args.iter().enumerate() {
            let what = format!("[[args]] {}", arg.name);
            let (mut buffer, mut scalar, mut local) = (None, vec![], 0);
            match &arg.kind {
                ArgKind::Buffer {
                    ty, len, access, ..
                } => {
                    let len = size(len, config, &format!("{what} len"))?;
                    if let Some(why) = self.too_large(*ty, len) {
                        return Err(RunError::outcome(Outcome::Refused {
                            error: format!("{what}: {why}"),
                        }));
                    }
                    let data = self.host_input(i, *ty, len, config)?;
                    p.lens.push(len);
                    let held = self.hold(i, *access, &data);
                    buffer = Some(held.map_err(|e| RunError::outcome(refused(&e)))?);
                    p.inputs.push((arg.name.clone(), data));
                }
                ArgKind::Scalar { ty, value } => {
                    scalar = scalar_bytes(*ty, value, config, &what)?;
                }
                ArgKind::Local { bytes } => local = size(bytes, config, &format!("{what} bytes"))?,
            }
            p.buffers.push(buffer);
            p.scalars.push(scalar);
            p.locals.push(local);
        }
        Ok(p)
    }

    fn args<'a>(&'a self, p: &'a Prepared) -> Vec<Arg<'a>> {
        self.spec
            .args
            .iter()
            .enumerate()
            .map(|(i, a)| match a.kind {
                ArgKind::Buffer { access, .. } => buffer_arg(
                    &a.name,
                    access,
                    p.buffers[i]
                        .as_ref()
                        .expect("buffers are prepared")
                        .buffer(),
                ),
                ArgKind::Scalar { .. } => Arg::Scalar(&p.scalars[i]),
                ArgKind::Local { .. } => Arg::Local(p.locals[i]),
            })
            .collect()
    }

    /// Builds, asks the driver's advice on the build, sets the arguments; returns the kernel and
    /// sizes.
    fn ready(
        &mut self,
        config: &[i64],
        p: &Prepared,
    ) -> Result<(Kernel, Vec<usize>, Vec<usize>), RunError> {
        let global = match &self.generated.global {
            Some(global) => global.clone(),
            None => self
                .global
                .iter()
                .map(|n| size(n, config, "[launch] global"))
                .collect::<Result<Vec<_>, _>>()?,
        };
        let local = self
            .local
            .iter()
            .map(|n| size(n, config, "[launch] local"))
            .collect::<Result<Vec<_>, _>>()?;
        let options = self.options(config);
        let started = Instant::now();
        let name = &self.spec.kernel.name;
        let built = match (&self.generated.source, self.own_kernel.take()) {
            (Some(_), Some(kernel)) => Ok(kernel),
            (Some(code), None) => match &self.own_binary {
                Some(binary) => self.session.own_kernel_from(binary, code, name, &options),
                None => self.session.own_kernel(code, name, &options),
            },
            (None, _) => self.session.kernel(&self.source.text, name, &options),
        };
        self.build_ms
            .set(self.build_ms.get() + started.elapsed().as_secs_f64() * 1e3);
        let kernel = match built {
            Ok(k) => k,
            Err(DeviceError::Build { log, .. }) => {
                return Err(RunError::outcome(Outcome::BuildFailed { log }))
            }
            Err(e) => return Err(RunError::Fatal(Fatal(e.to_string()))),
        };
        // Advice only: the launch decides (NVIDIA launches work-groups above its answer).
        self.advice
            .set(self.session.limits(&kernel).ok().map(|limits| Advice {
                work_group_size: limits.work_group_size,
                local_mem_bytes: limits.local_mem_size,
                launched_work_group: local.iter().product::<usize>() as u64,
            }));
        self.session.set_args(&kernel, &self.args(p)).map_err(|e| {
            RunError::Fatal(Fatal(format!(
                "{}: the [[args]] do not match kernel `{}`: {e}",
                self.spec.path.display(),
                self.spec.kernel.name
            )))
        })?;
        Ok((kernel, global, local))
    }

    fn launch(&self, kernel: &Kernel, global: &[usize], local: &[usize]) -> Result<f64, RunError> {
        self.observed_launch(kernel, global, local, None)
    }

    /// A launch, with the front end's observers told where it has any: before the kernel
    /// starts, while it runs and once it finished.
    fn observed_launch(
        &self,
        kernel: &Kernel,
        global: &[usize],
        local: &[usize],
        mut observe: Option<&mut Observe<'_>>,
    ) -> Result<f64, RunError> {
        if let Some(observe) = observe.as_mut() {
            observe(Moment::BeforeStart)?;
        }
        let started = Instant::now();
        let launched = match self.session.start(kernel, global, Some(local), None) {
            Ok(running) => match observe.as_mut().map(|o| o(Moment::AfterStart)) {
                Some(Err(f)) => {
                    let _ = running.finish();
                    return Err(f.into());
                }
                _ => running.finish(),
            },
            Err(e) => Err(e),
        };
        self.launch_ms
            .set(self.launch_ms.get() + started.elapsed().as_secs_f64() * 1e3);
        if let (Ok(_), Some(observe)) = (&launched, observe) {
            observe(Moment::AfterFinish)?;
        }
        launched.map_err(|e| match e.fault() {
            Fault::Arguments => RunError::Fatal(Fatal(format!(
                "{}: the [[args]] do not match kernel `{}`: {e}",
                self.spec.path.display(),
                self.spec.kernel.name
            ))),
            Fault::Lost => {
                let detail = format!("the device's session is lost: {e}");
                self.lost.replace(Some(detail.clone()));
                RunError::outcome(Outcome::Crashed { detail })
            }
            Fault::Call => RunError::outcome(Outcome::Refused {
                error: match self.advice.get() {
                    Some(a) => a.refusal(&e.to_string()),
                    None => e.to_string(),
                },
            }),
        })
    }

    /// The outputs named in `[verify]` after one run.
    fn outputs(&self, p: &Prepared) -> Result<Buffers, RunError> {
        read_outputs(&self.spec, &*self.session, &held_buffers(p))
            .map_err(|e| RunError::outcome(refused(&e)))
    }

    /// Compares each output named in `[verify]` with `expected`, on the device where it can;
    /// an output it finds different (or cannot compare) is read back into pinned host memory and
    /// compared there, which describes the first mismatch.
    fn verify(
        &self,
        p: &Prepared,
        expected: &Expected,
        verify: &ndtune_spec::Verify,
    ) -> Result<Option<crate::verify::Mismatch>, RunError> {
        let failed = |e: DeviceError| RunError::outcome(refused(&e));
        let outputs = expected.outputs.iter();
        for (name, want) in outputs.filter(|(n, _)| verify.outputs.contains(n)) {
            let (i, ty) = output(&self.spec, name);
            let buffer = p.buffers[i].as_ref().expect("a buffer argument").buffer();
            let mut device_check = self.device_check.borrow_mut();
            if let Some(check) = device_check.as_mut() {
                let started = Instant::now();
                let loaded = check.load(&*self.session, (i, expected.id), ty, buffer, &want.values);
                self.add_data_time(started);
                if loaded.is_err() {
                    // A driver that cannot build the comparison: the host compares from now on.
                    *device_check = None;
                } else {
                    let key = (i, expected.id);
                    match check.matches(&*self.session, key, ty, buffer, &want.values, verify) {
                        Ok(Some(true)) => continue,
                        Ok(_) => {}
                        // A driver that cannot run the comparison: the host compares from now on.
                        Err(_) => *device_check = None,
                    }
                }
            }
            drop(device_check);
            let compare = |got: &[u8]| compare_bytes(name, want, ty, got, verify.rtol, verify.atol);
            // A CPU device's buffer is host memory: compared where it lies, nothing copied.
            let compared = if self.device.profile().device_type == DeviceType::Cpu {
                self.session.map(buffer, compare).map_err(failed)?
            } else {
                let mut readback = self.readback.borrow_mut();
                let host = match readback.entry((i, buffer.len())) {
                    std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
                    std::collections::hash_map::Entry::Vacant(e) => {
                        e.insert(self.session.pinned(buffer.len()).map_err(failed)?)
                    }
                };
                self.session
                    .read_into(buffer, 0, host.as_mut_slice())
                    .map_err(failed)?;
                compare(host.as_slice())
            };
            if let Err(m) = compared {
                return Ok(Some(m));
            }
        }
        Ok(None)
    }

    /// What the reference's outputs for this configuration depend on ([`ReferenceKey`]).
    fn reference_key(
        &self,
        reference: &Reference,
        config: &[i64],
        p: &Prepared,
    ) -> Result<ReferenceKey, Fatal> {
        let mut key = ReferenceKey {
            lens: p.lens.clone(),
            ..ReferenceKey::default()
        };
        match reference {
            Reference::Builtin(_) | Reference::Config(_) => {}
            Reference::Host(_) => key.scalars = p.scalars.clone(),
            Reference::Kernel { global, .. } => {
                let source = self.reference_source.as_ref().expect("read in new");
                key.scalars = p.scalars.clone();
                key.locals = p.locals.clone();
                key.options = self.spec.build_options(source, config);
                key.global = global
                    .as_deref()
                    .unwrap_or(&self.global)
                    .iter()
                    .map(|n| size(n, config, "[verify] reference global"))
                    .collect::<Result<Vec<_>, _>>()?;
            }
        }
        Ok(key)
    }

    /// The expected outputs for this configuration, computed once per set of the values the
    /// reference depends on ([`ReferenceKey`]); none without a reference.
    fn reference(&mut self, config: &[i64], p: &Prepared) -> Result<Option<Rc<Expected>>, Fatal> {
        let Some(reference) = self.spec.verify.as_ref().and_then(|v| v.reference.clone()) else {
            return Ok(None);
        };
        let key = self.reference_key(&reference, config, p)?;
        if let Some(r) = self.references.get(&key) {
            return Ok(Some(Rc::clone(r)));
        }
        let outputs = match &reference {
            Reference::Builtin(name) => {
                let f = ndtune_kernels::builtin(name).ok_or_else(|| {
                    Fatal(format!(
                        "{}: [verify] reference `builtin:{name}` does not exist; the built-in references are: {}",
                        self.spec.path.display(),
                        ndtune_kernels::builtin_names().join(", ")
                    ))
                })?;
                let inputs: Buffers = p
                    .inputs
                    .iter()
                    .map(|(n, d)| (n.clone(), d.values().to_vec()))
                    .collect();
                f(&inputs, &self.spec.problem.constants).map_err(Fatal)?
            }
            Reference::Config(values) => {
                let reference = self
                    .spec
                    .codec
                    .point(values)
                    .map_err(|e| Fatal(format!("[verify] reference.config {values:?}: {e}")))?;
                let fail = |why: String| {
                    Fatal(format!("the reference configuration {values:?} failed ({why}); nothing was measured"))
                };
                let rp = match self.prepare(&reference) {
                    Ok(rp) => rp,
                    Err(RunError::Outcome(o)) => return Err(fail(describe(&o))),
                    Err(RunError::Fatal(f)) => return Err(f),
                };
                if rp.lens != p.lens {
                    return Err(Fatal(format!(
                        "the reference configuration {values:?} has other buffer sizes than {config:?}: a reference configuration must not change them"
                    )));
                }
                let run = self
                    .ready(&reference, &rp)
                    .and_then(|(k, g, l)| self.launch(&k, &g, &l))
                    .and_then(|_| self.outputs(&rp));
                self.recycle(rp);
                match run {
                    Ok(out) => out,
                    Err(RunError::Outcome(o)) => return Err(fail(describe(&o))),
                    Err(RunError::Fatal(f)) => return Err(f),
                }
            }
            Reference::Kernel { source, name, .. } => {
                self.reference_kernel(p, source, name, &key)?
            }
            Reference::Host(host) => self.reference_host(p, host)?,
        };
        if self.references.len() >= KEPT_REFERENCES {
            self.references.clear();
        }
        self.computed_references += 1;
        let outputs = outputs
            .into_iter()
            .map(|(name, values)| {
                let want = Want::new(values, output(&self.spec, &name).1);
                (name, want)
            })
            .collect();
        let expected = Rc::new(Expected {
            id: self.computed_references,
            outputs,
        });
        self.references.insert(key, Rc::clone(&expected));
        Ok(Some(expected))
    }

    /// What host functions get of a configuration: every buffer (with `outputs`' bytes as the
    /// data of the buffers named there, else the initial contents), every scalar, the constants
    /// and, where `config` is given, the parameters.
    fn host_args<'a>(
        &'a self,
        p: &'a Prepared,
        outputs: &'a BTreeMap<String, Vec<u8>>,
        config: Option<&[i64]>,
    ) -> HostArgs<'a> {
        let buffer_types = self.spec.args.iter().filter_map(|a| match a.kind {
            ArgKind::Buffer { ty, .. } => Some(ty),
            _ => None,
        });
        HostArgs {
            buffers: p
                .inputs
                .iter()
                .zip(buffer_types)
                .map(|((name, data), ty)| HostBuffer {
                    name,
                    ty,
                    initial: &data.bytes,
                    data: outputs.get(name).unwrap_or(&data.bytes),
                })
                .collect(),
            scalars: self
                .spec
                .args
                .iter()
                .zip(&p.scalars)
                .filter_map(|(a, bytes)| match a.kind {
                    ArgKind::Scalar { ty, .. } => Some(HostScalar {
                        name: &a.name,
                        ty,
                        bytes,
                    }),
                    _ => None,
                })
                .collect(),
            params: config.map_or_else(Vec::new, |config| {
                let names = self.spec.problem.params.iter().map(|q| q.name.as_str());
                names
                    .zip(config)
                    .enumerate()
                    .map(|(i, (name, &v))| HostValue::new(name, &self.spec.codec.value(i, v)))
                    .collect()
            }),
            constants: self
                .spec
                .problem
                .constants
                .iter()
                .map(|(name, v)| HostValue::new(name, v))
                .collect(),
        }
    }

    /// Runs a C host reference on copies of this configuration's inputs.
    fn reference_host(&self, p: &Prepared, host: &HostFunction) -> Result<Buffers, Fatal> {
        let none = BTreeMap::new();
        let out = crate::host_c::reference(
            &host.source,
            &host.function,
            &self.host_args(p, &none, None),
            self.host_limit(),
        )
        .map_err(Fatal)?;
        let verify = self
            .spec
            .verify
            .as_ref()
            .expect("a reference comes from [verify]");
        let mut expected = Buffers::new();
        for ((name, _), bytes) in p.inputs.iter().zip(out) {
            if verify.outputs.contains(name) {
                let ty = self
                    .spec
                    .args
                    .iter()
                    .find_map(|a| match &a.kind {
                        ArgKind::Buffer { ty, .. } if &a.name == name => Some(*ty),
                        _ => None,
                    })
                    .expect("inputs are buffer arguments");
                expected.insert(name.clone(), from_bytes(ty, &bytes));
            }
        }
        Ok(expected)
    }

    /// Runs the host check of `[verify]` on this configuration's outputs: `Some(why)` where it
    /// found them wrong.
    fn host_check(
        &self,
        config: &[i64],
        p: &Prepared,
        check: &HostFunction,
        verify: &ndtune_spec::Verify,
    ) -> Result<Option<String>, RunError> {
        let mut outputs = BTreeMap::new();
        for name in &verify.outputs {
            let (i, _) = output(&self.spec, name);
            let buffer = p.buffers[i].as_ref().expect("a buffer argument").buffer();
            let bytes = self
                .session
                .read(buffer)
                .map_err(|e| RunError::outcome(refused(&e)))?;
            outputs.insert(name.clone(), bytes);
        }
        let args = self.host_args(p, &outputs, Some(config));
        let verdict =
            crate::host_c::check(&check.source, &check.function, &args, self.host_limit())
                .map_err(Fatal)?;
        Ok(verdict.err())
    }

    /// Runs a reference kernel, in a session of its own, on copies of this configuration's inputs.
    /// Its defines and global size are `key`'s.
    fn reference_kernel(
        &self,
        p: &Prepared,
        path: &std::path::Path,
        name: &str,
        key: &ReferenceKey,
    ) -> Result<Buffers, Fatal> {
        let what = format!("[verify] reference kernel `{name}` ({})", path.display());
        let source = self.reference_source.as_ref().expect("read in new");
        let fail = |e: DeviceError| Fatal(format!("{what}: {e}"));
        let mut session = self.device.session().map_err(fail)?;
        let kernel = session
            .kernel(&source.text, name, &key.options)
            .map_err(fail)?;
        let data: BTreeMap<&str, &HostData> = p
            .inputs
            .iter()
            .map(|(n, d)| (n.as_str(), d.as_ref()))
            .collect();
        let buffers = self
            .spec
            .args
            .iter()
            .map(|arg| match arg.kind {
                ArgKind::Buffer { .. } => session.buffer(&data[arg.name.as_str()].bytes).map(Some),
                _ => Ok(None),
            })
            .collect::<Result<Vec<_>, _>>()
            .map_err(fail)?;
        let args: Vec<Arg> = self
            .spec
            .args
            .iter()
            .enumerate()
            .map(|(i, a)| match a.kind {
                ArgKind::Buffer { access, .. } => {
                    buffer_arg(&a.name, access, buffers[i].as_ref().expect("created above"))
                }
                ArgKind::Scalar { .. } => Arg::Scalar(&p.scalars[i]),
                ArgKind::Local { .. } => Arg::Local(p.locals[i]),
            })
            .collect();
        session.set_args(&kernel, &args).map_err(fail)?;
        session
            .launch(&kernel, &key.global, None, None)
            .map_err(fail)?;
        let buffers: Vec<Option<&DeviceBuffer>> = buffers.iter().map(Option::as_ref).collect();
        read_outputs(&self.spec, &*session, &buffers).map_err(fail)
    }

    /// Writes the outputs `check` names into its files and asks the front end about them.
    fn front_check(&self, p: &Prepared, check: FrontCheck<'_>) -> Result<Option<String>, RunError> {
        let mut files = BTreeMap::new();
        for name in &check.own.outputs {
            let buffer = self
                .spec
                .args
                .iter()
                .position(|a| &a.name == name)
                .and_then(|i| p.buffers[i].as_ref())
                .ok_or_else(|| {
                    Fatal(format!("the front end checks `{name}`, no buffer argument"))
                })?;
            let bytes = self
                .session
                .read(buffer.buffer())
                .map_err(|e| RunError::outcome(refused(&e)))?;
            let file = check.own.dir.join(format!("{name}.bin"));
            std::fs::write(&file, bytes)
                .map_err(|e| Fatal(format!("cannot write {}: {e}", file.display())))?;
            files.insert(name.clone(), file);
        }
        Ok((check.verdict)(files)?)
    }

    /// Verification run (which counts as the first warm-up run), warm-up runs, timed runs.
    fn measure(
        &mut self,
        config: &[i64],
        p: &Prepared,
        expected: Option<&Expected>,
        front: Front<'_>,
    ) -> Result<Outcome, RunError> {
        let Front { check, mut observe } = front;
        let (kernel, global, local) = self.ready(config, p)?;
        let cold_ms = self.launch(&kernel, &global, &local)?;
        let mut warmup = self.spec.measure.warmup;
        if self.spec.verify.is_some() || check.is_some() {
            // The verified run is a run like the others before timing: the first warm-up.
            warmup = warmup.saturating_sub(1);
            let (started, data_ms) = (Instant::now(), self.data_ms.get());
            let mut wrong = None;
            if let Some(verify) = &self.spec.verify {
                if let Some(expected) = expected {
                    wrong = self.verify(p, expected, verify)?.map(|m| m.to_string());
                }
                if let (None, Some(host)) = (&wrong, &verify.check) {
                    wrong = self.host_check(config, p, host, verify)?;
                }
            }
            if let (None, Some(check)) = (&wrong, check) {
                wrong = self.front_check(p, check)?;
            }
            self.verify_ms
                .set(started.elapsed().as_secs_f64() * 1e3 - (self.data_ms.get() - data_ms));
            if let Some(detail) = wrong {
                return Ok(Outcome::WrongResult { detail });
            }
        }
        let (runs, best_of) = (self.spec.measure.runs, self.spec.measure.best_of);
        let timing = |times: Vec<f64>, raced: Option<Raced>| {
            let mut timing = Timing::new(times, best_of as usize);
            timing.advice = self.advice.get();
            timing.cold_ms = Some(cold_ms);
            timing.raced = raced;
            timing
        };
        // Its first run alone may show it cannot be the best (where no observer or meter waits
        // for timed runs): its one time is that run.
        let stopped_cold = match (&observe, &self.meter, &self.race) {
            (None, None, Some(race)) => race.stop_cold(cold_ms, runs),
            _ => None,
        };
        if let Some(raced) = stopped_cold {
            return Ok(Outcome::Measured(timing(vec![cold_ms], Some(raced))));
        }
        for _ in 0..warmup {
            self.launch(&kernel, &global, &local)?;
        }
        // The timed runs, observed where the front end observes; racing may stop them early
        // (`raced`).
        let mut timed = || {
            let mut times = Vec::with_capacity(runs as usize);
            let mut raced = None;
            if let Some(observe) = observe.as_mut() {
                observe(Moment::Start)?;
            }
            while times.len() < runs as usize && raced.is_none() {
                let observe = observe.as_deref_mut();
                times.push(self.observed_launch(&kernel, &global, &local, observe)?);
                raced = self.race.as_ref().and_then(|r| r.stop(&times, runs));
            }
            if let Some(observe) = observe.as_mut() {
                observe(Moment::End)?;
            }
            Ok::<_, RunError>((times, raced))
        };
        let (times, raced) = timed()?;
        // The energy: a window of more of the same runs after the timed ones, where the
        // campaign measures it.
        let energy = match &self.meter {
            None => None,
            Some(meter) => {
                let window = std::time::Duration::from_secs_f64(self.spec.measure.energy_ms / 1e3);
                let (runs, drawn) = meter
                    .measure_runs(window, || self.launch(&kernel, &global, &local).map(drop))?;
                let drawn =
                    drawn.map_err(|why| Fatal(format!("the energy of {config:?}: {why}")))?;
                Some(Box::new(Energy {
                    joules: drawn.joules / f64::from(runs),
                    watts: drawn.watts(),
                    runs,
                    window_ms: drawn.window_ms,
                    samples: drawn.samples,
                    source: drawn.source.to_string(),
                    lead_in_ms: Some(drawn.lead_in_ms),
                    temperature_c: drawn.sensors.temperature_c,
                    core_clock_mhz: drawn.sensors.core_clock_mhz,
                    mem_clock_mhz: drawn.sensors.mem_clock_mhz,
                }))
            }
        };
        let mut timing = timing(times, raced);
        timing.energy = energy;
        Ok(Outcome::Measured(timing))
    }
}

fn refused(e: &DeviceError) -> Outcome {
    Outcome::Refused {
        error: e.to_string(),
    }
}

fn describe(o: &Outcome) -> String {
    match o {
        Outcome::BuildFailed { log } => format!("build failed: {log}"),
        Outcome::Refused { error } => format!("refused: {error}"),
        other => format!("{}", other.kind()),
    }
}

/// The position in `[[args]]` of an output named in `[verify]` (or computed by a reference),
/// and its element type.
fn output(spec: &Spec, name: &str) -> (usize, ElemType) {
    let i = spec
        .args
        .iter()
        .position(|a| a.name == name)
        .expect("validated: outputs are args");
    let ArgKind::Buffer { ty, .. } = spec.args[i].kind else {
        unreachable!("validated: outputs are buffers")
    };
    (i, ty)
}

/// A configuration's device buffers, per argument.
fn held_buffers(p: &Prepared) -> Vec<Option<&DeviceBuffer>> {
    p.buffers
        .iter()
        .map(|b| b.as_ref().map(Held::buffer))
        .collect()
}

/// Reads back the buffers named in `[verify]` (none without it); `buffers` are per argument.
fn read_outputs(
    spec: &Spec,
    session: &dyn Session,
    buffers: &[Option<&DeviceBuffer>],
) -> Result<Buffers, DeviceError> {
    let mut out = Buffers::new();
    let Some(verify) = &spec.verify else {
        return Ok(out);
    };
    for name in &verify.outputs {
        let (i, ty) = output(spec, name);
        let bytes = session.read(buffers[i].expect("a buffer argument has a buffer"))?;
        out.insert(name.clone(), from_bytes(ty, &bytes));
    }
    Ok(out)
}

/// PoCL compiles a kernel's work-group function for its local size, whether the global offset
/// is zero, and whether the grid is "small": its widest dimension, as PoCL measures it (x, y,
/// and the local z size squared), under the device's limit (65,535 on its CPU devices); each
/// class is a separate compile and cache entry. Priming with one work-group compiles the small
/// class, so for a measured launch of a wide grid a primed launch covers just enough whole
/// work-groups of the widest dimension to be wide too (a few tens of thousands of work-items,
/// against a compile of a quarter of a second), and one work-group otherwise.
fn primed_global(global: &[usize], local: &[usize]) -> Vec<usize> {
    const SMALL_GRID: usize = u16::MAX as usize;
    let extent = |d: usize| match d {
        2 => local[2] * local[2],
        _ => global[d],
    };
    let widest = (0..global.len()).max_by_key(|&d| extent(d));
    let mut primed = local.to_vec();
    if let Some(d) = widest.filter(|&d| extent(d) >= SMALL_GRID && d < 2) {
        primed[d] = (SMALL_GRID.div_ceil(local[d]) * local[d]).min(global[d]);
    }
    primed
}

#[cfg(test)]
mod tests {
    use super::primed_global;

    #[test]
    fn a_primed_launch_is_one_work_group_unless_the_measured_grid_is_wide() {
        assert_eq!(primed_global(&[4096, 4096], &[16, 16]), [16, 16]);
        assert_eq!(primed_global(&[1 << 20], &[128]), [65536]);
        assert_eq!(primed_global(&[1_000_064], &[832]), [65728]);
        assert_eq!(primed_global(&[65535], &[5]), [65535]);
        assert_eq!(primed_global(&[65534], &[2]), [2]);
        assert_eq!(primed_global(&[64, 100_000], &[8, 4]), [8, 65536]);
        // PoCL's z extent is the local z size squared: it never makes a grid wide by itself here.
        assert_eq!(primed_global(&[4, 4, 1 << 20], &[1, 1, 64]), [1, 1, 64]);
    }
}
