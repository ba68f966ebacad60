//! The co-execution runtime: one NDRange of a spec's kernel run across several devices at once.
//!
//! Each device gets its own host thread, and in it its own context and command queue (contexts
//! cannot span platforms), its own build of the kernel with its own best configuration, and
//! device buffers of the full size: kernels index absolutely (`get_global_id` includes the
//! global offset), so a part is launched with its offset and only the elements it touches are
//! transferred. Along the split dimension a buffer declared in `[split.buffers]` moves only its
//! slice (plus halo, for inputs); every other input is copied whole; outputs are read back per
//! part and gathered into one host buffer. Transfers count in the time: a run is timed on the
//! host clock from the start of the first transfer to the last byte gathered. A part runs in
//! slices of whole work-groups on two queues (transfers, kernels), pipelined: the next slice's
//! inputs go in and the last slice's outputs come back while a kernel runs.
//!
//! How the range is handed out is a [`Schedule`]: the static plan's parts, or chunks taken on
//! demand from a [`Dispenser`] (see [`crate::schedule`]). A device runs a chunk as the whole
//! work-groups of its own size that cover it and gathers only the chunk's items; inputs that
//! every item reads go to each device once per run, with its first chunk. A device that fails
//! mid-run gives its chunk back and the others run it; it takes no part in later runs.
//!
//! What a part never writes stays poisoned (all bits set: NaN for floats), so a `[split]`
//! declaration that does not match how the kernel indexes its buffers shows up as a mismatch.

use crate::schedule::{Chunk, Cut, Dispenser, Scheduler};
use crate::Part;
use ndtune_backend::{AnyDevice, Arg, Buffer as DeviceBuffer, Kernel, Pinned, Session};
use ndtune_bench::data::from_bytes;
use ndtune_bench::verify::{compare, Mismatch};
use ndtune_core::Timing;
use ndtune_device::DeviceType;
use ndtune_space::resolve::Node;
use ndtune_spec::{Access, ArgKind, ElemType, Measure, Spec};
use std::collections::BTreeMap;
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Barrier};
use std::thread::JoinHandle;
use std::time::Instant;

/// The byte every untouched element is filled with.
const POISON: u8 = 0xFF;

/// Bytes a slice of a chunk moves at least: below this its launch and synchronisation cost more
/// than the overlap of its transfers saves.
const SLICE_BYTES: usize = 8 << 20;

/// Slices a chunk is run in at most.
const MAX_SLICES: usize = 4;

/// One device of a co-execution and the configuration (parameter values in declaration order)
/// it runs.
#[derive(Debug, Clone)]
pub struct Member {
    pub device: AnyDevice,
    pub config: Vec<i64>,
    /// The kernel in this device's language where it is not the spec's: a twin spec of the same
    /// parameters, constants, launch and arguments ([`twin_mismatch`]) whose source this device
    /// builds; `None`: the spec's own.
    pub twin: Option<Arc<Spec>>,
}

/// What keeps `twin` from being the same kernel as `spec` in another language, if anything:
/// the same parameters (names and values), constants, launch and arguments (names, kinds,
/// types, lengths, access; the data are the spec's).
pub fn twin_mismatch(spec: &Spec, twin: &Spec) -> Option<String> {
    let params = |s: &Spec| format!("{:?}", s.problem.params);
    let shape = |s: &Spec| -> Vec<String> {
        s.args
            .iter()
            .map(|a| match &a.kind {
                ArgKind::Buffer {
                    ty, len, access, ..
                } => format!("{} buffer {ty:?} {len:?} {access:?}", a.name),
                ArgKind::Scalar { ty, value } => format!("{} scalar {ty:?} {value:?}", a.name),
                ArgKind::Local { bytes } => format!("{} local {bytes:?}", a.name),
            })
            .collect()
    };
    let differ = if params(spec) != params(twin) {
        "[params]"
    } else if spec.problem.constants != twin.problem.constants {
        "[constants]"
    } else if format!("{:?}", spec.problem.launch) != format!("{:?}", twin.problem.launch) {
        "[launch]"
    } else if shape(spec) != shape(twin) {
        "[[args]]"
    } else {
        return None;
    };
    Some(format!(
        "{} is no twin of {}: their {differ} differ (a twin is the same kernel in another language)",
        twin.path.display(),
        spec.path.display()
    ))
}

/// Why a co-execution cannot be set up or run.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ExecError {
    /// The spec, the chosen dimension or the inputs do not allow this co-execution.
    #[error("{0}")]
    Invalid(String),
    /// A device failed (build, limits, allocation, launch or transfer).
    #[error("{device}: {message}")]
    Device { device: String, message: String },
}

/// How a buffer's elements follow the split dimension: index `i` reads
/// `[i * stride - before, (i + 1) * stride + after)` and writes `[i * stride, (i + 1) * stride)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Slicing {
    stride: usize,
    before: usize,
    after: usize,
}

/// A buffer argument as every device sees it.
#[derive(Debug, Clone)]
struct BufferLayout {
    name: String,
    ty: ElemType,
    len: usize,
    access: Access,
    slicing: Option<Slicing>,
    /// Initial contents (also what non-split inputs are re-sent each run).
    data: Arc<Vec<u8>>,
}

impl BufferLayout {
    fn reads(&self) -> bool {
        matches!(self.access, Access::Read | Access::ReadWrite)
    }

    fn writes(&self) -> bool {
        matches!(self.access, Access::Write | Access::ReadWrite)
    }

    /// Element range a part `[offset, offset + size)` reads.
    fn read_range(&self, offset: usize, size: usize) -> (usize, usize) {
        match self.slicing {
            None => (0, self.len),
            Some(s) => (
                (offset * s.stride).saturating_sub(s.before).min(self.len),
                ((offset + size) * s.stride + s.after).min(self.len),
            ),
        }
    }

    /// Element range a part writes.
    fn write_range(&self, offset: usize, size: usize) -> (usize, usize) {
        match self.slicing {
            None => (0, self.len),
            Some(s) => (
                (offset * s.stride).min(self.len),
                ((offset + size) * s.stride).min(self.len),
            ),
        }
    }
}

/// What one device thread needs to set itself up.
struct Setup {
    device: AnyDevice,
    label: String,
    /// What makes members alike ([`CoExecutor::alike`]): the device model and driver, the
    /// configuration's build options and its work-group.
    kind: String,
    source: String,
    kernel: String,
    options: String,
    global: Vec<usize>,
    local: Vec<usize>,
    dim: usize,
    buffers: Vec<BufferLayout>,
    /// Scalar bytes and local sizes by argument position (buffers take `None`).
    others: Vec<Option<Other>>,
}

#[derive(Clone)]
enum Other {
    Scalar(Vec<u8>),
    Local(usize),
}

enum Order {
    /// Fill every split buffer with poison.
    Poison,
    /// Once the barrier opens, run chunks from the dispenser until it has none: write each
    /// chunk's inputs, launch it, and read its own items of every written buffer straight into
    /// the gathered host buffers (`targets`, one per written buffer, in order); the items it
    /// shares with an earlier part come back for comparison.
    Run {
        me: usize,
        dispenser: Arc<Dispenser>,
        targets: Arc<Vec<HostBuffer>>,
        barrier: Arc<Barrier>,
    },
    /// Fault injection: after this many more chunks, launch with a work-group the driver must
    /// refuse, as a device that fails mid-run would.
    FailAfter(usize),
    /// Run every chunk in this many slices (at most one per work-group).
    Slices(usize),
}

/// A gathered host buffer that the device threads of one run fill, each only the items of the
/// chunks it took.
struct HostBuffer {
    ptr: *mut u8,
    len: usize,
}

// SAFETY: a HostBuffer is only made by `CoExecutor::run_once` for one run; the buffer is neither
// touched nor moved until every device thread has answered, and the dispenser hands every item
// to one chunk at a time, so no two threads write the same bytes at once (a chunk given back
// by a failed device is rewritten whole by the next, after the failed one let go of it).
unsafe impl Send for HostBuffer {}
unsafe impl Sync for HostBuffer {}

/// One chunk as a device ran it.
struct ChunkDone {
    chunk: Chunk,
    start: Instant,
    finish: Instant,
    kernel_ms: f64,
    transfer_ms: f64,
    /// For each written buffer (position in the layout), the bytes of the overlap items.
    overlaps: Vec<(usize, Vec<u8>)>,
}

/// What one device did in one run: its chunks, and why it stopped early if it did.
struct DeviceRun {
    chunks: Vec<ChunkDone>,
    failure: Option<String>,
}

enum Reply {
    Ready,
    Poisoned,
    Ran(DeviceRun),
}

struct Worker {
    label: String,
    orders: Sender<Order>,
    done: Receiver<Result<Reply, String>>,
    thread: Option<JoinHandle<()>>,
    /// Work-group size along the split dimension.
    wg: u64,
    /// See [`Setup::kind`].
    kind: String,
    /// Why it failed during a run; a failed device takes no part in later runs.
    failed: Option<String>,
}

/// One device's share of one measured run.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct PartTiming {
    pub device: usize,
    /// Host time from the start of the run to this device's last byte read back (median).
    pub finish_ms: f64,
    /// The kernel's own time on the device, from profiling events (median; the sum over its
    /// chunks).
    pub kernel_ms: f64,
    /// Chunks it ran (median).
    #[serde(default = "one")]
    pub chunks: usize,
    /// Items it computed (median).
    #[serde(default)]
    pub items: u64,
}

fn one() -> usize {
    1
}

/// One chunk of the timeline of a run: what a device computed when.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ChunkRun {
    pub device: usize,
    pub offset: u64,
    pub size: u64,
    /// From the start of the run, host clock: the chunk's first transfer to its last byte back.
    pub start_ms: f64,
    pub end_ms: f64,
    /// Device time of its kernels (its slices together), from profiling events.
    pub kernel_ms: f64,
    /// Device time of its transfers (inputs written, outputs read back), from profiling events;
    /// pipelined slices overlap them with the kernels.
    #[serde(default)]
    pub transfer_ms: f64,
}

/// A device that failed during a run; its chunks were run by the others.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct DeviceFailure {
    pub device: usize,
    pub label: String,
    pub message: String,
    /// The chunks it gave back, run elsewhere.
    pub given_back: Vec<Chunk>,
}

/// How one execution hands out the range.
#[derive(Debug, Clone, PartialEq)]
pub enum Schedule {
    /// The seed's plan: each part to its device.
    Static(Vec<Part>),
    /// Equal chunks of this many items (rounded to whole granules) on demand, to `devices`.
    Dynamic { chunk: u64, devices: Vec<usize> },
    /// Shrinking chunks sized by each device's speed (by device index), at least `least[i]`,
    /// to `devices`.
    Hguided {
        speeds: Vec<f64>,
        least: Vec<u64>,
        devices: Vec<usize>,
    },
}

impl Schedule {
    pub fn scheduler(&self) -> Scheduler {
        match self {
            Schedule::Static(_) => Scheduler::Static,
            Schedule::Dynamic { .. } => Scheduler::Dynamic,
            Schedule::Hguided { .. } => Scheduler::Hguided,
        }
    }
}

/// A measured execution of one split.
#[derive(Debug, Clone)]
pub struct Execution {
    /// Host-clock times of the whole (transfers, launches, gather), one per timed run.
    pub timing: Timing,
    pub parts: Vec<PartTiming>,
    /// First finish over last finish (median over the timed runs); 1 for a single part.
    pub balance: f64,
    /// The gathered outputs of the first run, by buffer name.
    pub outputs: BTreeMap<String, Vec<u8>>,
    /// Where two devices computed the same items differently.
    pub overlap_mismatch: Option<Mismatch>,
    /// What each device computed when, in the timed run of median time.
    pub timeline: Vec<ChunkRun>,
    /// Devices that failed during this execution (their chunks ran elsewhere).
    pub failures: Vec<DeviceFailure>,
}

/// One run's result before aggregation.
struct Once {
    wall_ms: f64,
    /// Per participating device: finish, kernel time, chunks, items.
    finishes: Vec<(usize, f64, f64, usize, u64)>,
    timeline: Vec<ChunkRun>,
    overlap_mismatch: Option<Mismatch>,
    failures: Vec<DeviceFailure>,
}

/// The devices of a co-execution, set up and waiting for parts to run.
pub struct CoExecutor {
    workers: Vec<Worker>,
    buffers: Vec<BufferLayout>,
    /// Gathered outputs, by position in `buffers` (empty for buffers the kernel only reads).
    gathered: Vec<Vec<u8>>,
    global: u64,
    rtol: f64,
    atol: f64,
}

fn eval(node: &Node, config: &[i64], what: &str) -> Result<usize, ExecError> {
    node.eval(config)
        .and_then(|v| usize::try_from(v).ok())
        .ok_or_else(|| {
            ExecError::Invalid(format!("{what} is not a size for configuration {config:?}"))
        })
}

impl CoExecutor {
    /// Sets up every member on its own thread for the spec's kernel, split along `dim`.
    /// `inputs` holds every buffer's initial bytes by argument name (see
    /// [`ndtune_bench::data::spec_inputs`]); `labels` name the devices in messages.
    pub fn new(
        spec: &Spec,
        members: &[Member],
        labels: &[String],
        dim: usize,
        inputs: &BTreeMap<String, Vec<u8>>,
    ) -> Result<CoExecutor, ExecError> {
        let invalid = |m: String| ExecError::Invalid(m);
        let path = spec.path.display();
        if members.is_empty() {
            return Err(invalid("no device to co-execute on".into()));
        }
        let launch = spec
            .problem
            .launch
            .as_ref()
            .ok_or_else(|| invalid(format!("{path}: [launch] is needed to co-execute")))?;
        if dim >= launch.global.len() {
            return Err(invalid(format!(
                "split dimension {dim}: the launch has {} dimension(s), 0 to {}",
                launch.global.len(),
                launch.global.len() - 1
            )));
        }
        let split = spec.split.as_ref().ok_or_else(|| {
            invalid(format!(
                "{path}: no [split] section: say which buffers follow the split (see docs/split.md)"
            ))
        })?;
        let source = spec
            .kernel_source()
            .map_err(|e| invalid(e.to_string()))?
            .ok_or_else(|| invalid(format!("{path}: [kernel] source is needed")))?;
        let parse = |src: &String| {
            spec.problem
                .int_expr(src)
                .map_err(|e| invalid(e.to_string()))
        };
        let global_nodes: Vec<Node> = launch.global.iter().map(parse).collect::<Result<_, _>>()?;
        let local_nodes: Vec<Node> = launch.local.iter().map(parse).collect::<Result<_, _>>()?;

        // One shared copy of each input for every device thread.
        let inputs: BTreeMap<&String, Arc<Vec<u8>>> = inputs
            .iter()
            .map(|(k, v)| (k, Arc::new(v.clone())))
            .collect();
        let mut buffers: Option<Vec<BufferLayout>> = None;
        let mut global: Option<Vec<usize>> = None;
        let mut setups = Vec::new();
        for (m, label) in members.iter().zip(labels) {
            let c = &m.config;
            // The kernel this device builds: the spec's, or its twin in the device's language.
            let (kernel_spec, kernel_source) = match &m.twin {
                None => (spec, source.clone()),
                Some(twin) => {
                    if let Some(why) = twin_mismatch(spec, twin) {
                        return Err(invalid(format!("{label}: {why}")));
                    }
                    let twin_source = twin
                        .kernel_source()
                        .map_err(|e| invalid(e.to_string()))?
                        .ok_or_else(|| {
                            invalid(format!(
                                "{}: [kernel] source is needed",
                                twin.path.display()
                            ))
                        })?;
                    (twin.as_ref(), twin_source)
                }
            };
            let g: Vec<usize> = global_nodes
                .iter()
                .map(|n| eval(n, c, "[launch] global"))
                .collect::<Result<_, _>>()?;
            let l: Vec<usize> = local_nodes
                .iter()
                .map(|n| eval(n, c, "[launch] local"))
                .collect::<Result<_, _>>()?;
            match &global {
                Some(first) if *first != g => {
                    return Err(invalid(format!(
                        "{label}: its configuration gives global size {g:?}, another device's {first:?}: the devices must run the same NDRange"
                    )))
                }
                _ => global = Some(g.clone()),
            }
            let mut layout = Vec::new();
            let mut others = Vec::new();
            for (i, a) in spec.args.iter().enumerate() {
                let what = format!("[[args]] {}", a.name);
                match &a.kind {
                    ArgKind::Buffer {
                        ty, len, access, ..
                    } => {
                        let len = eval(len, c, &format!("{what} len"))?;
                        let slicing = match split.buffer(i, dim) {
                            Some(b) => Some(Slicing {
                                stride: eval(
                                    &b.stride,
                                    c,
                                    &format!("[split.buffers] {} stride", a.name),
                                )?,
                                before: eval(
                                    &b.before,
                                    c,
                                    &format!("[split.buffers] {} before", a.name),
                                )?,
                                after: eval(
                                    &b.after,
                                    c,
                                    &format!("[split.buffers] {} after", a.name),
                                )?,
                            }),
                            None => None,
                        };
                        if slicing.is_none() && matches!(access, Access::Write | Access::ReadWrite)
                        {
                            return Err(invalid(format!(
                                "{path}: `{}` is written by the kernel (access = \"{}\") but [split.buffers] does not say how it follows dimension {dim}; declare it there, or mark it access = \"read\"",
                                a.name,
                                if *access == Access::Write { "write" } else { "read_write" }
                            )));
                        }
                        let data = inputs.get(&a.name).ok_or_else(|| {
                            invalid(format!("no input bytes for buffer `{}`", a.name))
                        })?;
                        if data.len() != len * ty.size() {
                            return Err(invalid(format!(
                                "input `{}` has {} bytes, the buffer {} ({len} elements of {} bytes)",
                                a.name,
                                data.len(),
                                len * ty.size(),
                                ty.size()
                            )));
                        }
                        layout.push(BufferLayout {
                            name: a.name.clone(),
                            ty: *ty,
                            len,
                            access: *access,
                            slicing,
                            data: Arc::clone(data),
                        });
                        others.push(None);
                    }
                    ArgKind::Scalar { ty, value } => {
                        let bytes = ndtune_bench::evaluate::scalar_bytes(*ty, value, c, &what)
                            .map_err(|e| invalid(e.0))?;
                        others.push(Some(Other::Scalar(bytes)));
                    }
                    ArgKind::Local { bytes } => others.push(Some(Other::Local(eval(
                        bytes,
                        c,
                        &format!("{what} bytes"),
                    )?))),
                }
            }
            match &buffers {
                Some(first) => {
                    for (a, b) in first.iter().zip(&layout) {
                        if (a.len, a.slicing) != (b.len, b.slicing) {
                            return Err(invalid(format!(
                                "{label}: buffer `{}` has another length or slicing with this device's configuration: the devices must share the data layout",
                                a.name
                            )));
                        }
                    }
                }
                None => buffers = Some(layout.clone()),
            }
            let p = &m.device.profile();
            setups.push(Setup {
                kind: format!(
                    "{}\0{}\0{}\0{}\0{}\0{l:?}",
                    p.name,
                    p.vendor,
                    p.driver_version,
                    p.compute_units,
                    kernel_spec.build_options(&kernel_source, c)
                ),
                device: m.device.clone(),
                label: label.clone(),
                source: kernel_source.text.clone(),
                kernel: kernel_spec.kernel.name.clone(),
                // A define of its own per member keeps the members' programs apart in driver
                // caches: PoCL 5.0 aborts (pocl_release_dlhandle_cache) when two sub-devices
                // launch one cached kernel binary at once.
                options: format!(
                    "{} -D NDTUNE_MEMBER={}",
                    kernel_spec.build_options(&kernel_source, c),
                    setups.len()
                ),
                global: g,
                local: l,
                dim,
                buffers: layout,
                others,
            });
        }
        let buffers = buffers.expect("at least one member");
        let global = global.expect("at least one member")[dim] as u64;
        let mut workers = Vec::new();
        for s in setups {
            workers.push(Worker::start(s)?);
        }
        let gathered = buffers
            .iter()
            .map(|b| {
                if b.writes() {
                    vec![POISON; b.len * b.ty.size()]
                } else {
                    Vec::new()
                }
            })
            .collect();
        let (rtol, atol) = spec
            .verify
            .as_ref()
            .map_or((0.0, 0.0), |v| (v.rtol, v.atol));
        Ok(CoExecutor {
            workers,
            buffers,
            gathered,
            global,
            rtol,
            atol,
        })
    }

    /// The global size along the split dimension.
    pub fn global(&self) -> u64 {
        self.global
    }

    /// Each member's work-group size along the split dimension.
    pub fn work_groups(&self) -> Vec<u64> {
        self.workers.iter().map(|w| w.wg).collect()
    }

    /// For each member, the first member alike to it (itself where none comes before): the same
    /// device model on the same driver running the same configuration, so one speed.
    pub fn alike(&self) -> Vec<usize> {
        self.workers
            .iter()
            .map(|w| {
                self.workers
                    .iter()
                    .position(|o| o.kind == w.kind)
                    .expect("a member is alike to itself")
            })
            .collect()
    }

    /// The members that have not failed, by index.
    pub fn alive(&self) -> Vec<usize> {
        (0..self.workers.len())
            .filter(|&i| self.workers[i].failed.is_none())
            .collect()
    }

    /// Why each member failed, if it did.
    pub fn failures(&self) -> Vec<Option<String>> {
        self.workers.iter().map(|w| w.failed.clone()).collect()
    }

    /// The least common multiple of the live members' work-group sizes: every on-demand chunk
    /// is whole granules, so each device runs it with its own work-group size.
    pub fn granule(&self) -> Result<u64, ExecError> {
        self.granule_of(&self.alive())
    }

    fn granule_of(&self, members: &[usize]) -> Result<u64, ExecError> {
        let wgs: Vec<u64> = members.iter().map(|&i| self.workers[i].wg).collect();
        crate::schedule::granule(&wgs).ok_or_else(|| {
            ExecError::Invalid(format!(
                "the work-group sizes {wgs:?} have no common multiple in 64 bits"
            ))
        })
    }

    /// Fault injection: member `device` runs `chunks` more chunks, then launches with a
    /// work-group its driver must refuse (as a device failing mid-run) and takes no part in
    /// later runs. For testing that its work is re-run elsewhere.
    pub fn fail_after(&mut self, device: usize, chunks: usize) -> Result<(), ExecError> {
        self.workers
            .get(device)
            .ok_or_else(|| ExecError::Invalid(format!("no member {device}")))?
            .orders
            .send(Order::FailAfter(chunks))
            .map_err(|_| self.gone(device))
    }

    /// Every device runs each chunk in `slices` pipelined slices (at most one per work-group)
    /// instead of as many as the bytes it moves call for.
    pub fn slices(&mut self, slices: usize) -> Result<(), ExecError> {
        for (i, w) in self.workers.iter().enumerate() {
            w.orders
                .send(Order::Slices(slices))
                .map_err(|_| self.gone(i))?;
        }
        Ok(())
    }

    /// Runs `parts` (the static plan) with the measure protocol; see [`CoExecutor::run`].
    pub fn execute(&mut self, parts: &[Part], measure: &Measure) -> Result<Execution, ExecError> {
        self.run(&Schedule::Static(parts.to_vec()), measure)
    }

    /// Runs `schedule` with the measure protocol: poison, one run whose outputs are kept (for
    /// verification), `warmup` runs, then `runs` timed runs scored as the mean of the best
    /// `best_of`. A device that fails is reported in [`Execution::failures`] and its chunks are
    /// run by the others; the execution fails only when no device is left for some item.
    pub fn run(&mut self, schedule: &Schedule, measure: &Measure) -> Result<Execution, ExecError> {
        self.check(schedule)?;
        for i in self.participants(schedule) {
            self.workers[i]
                .orders
                .send(Order::Poison)
                .map_err(|_| self.gone(i))?;
            self.receive(i)?;
        }
        for g in &mut self.gathered {
            g.fill(POISON);
        }
        let first = self.run_once(schedule)?;
        let outputs = self
            .buffers
            .iter()
            .zip(&self.gathered)
            .filter(|(b, _)| b.writes())
            .map(|(b, bytes)| (b.name.clone(), bytes.clone()))
            .collect();
        let mut failures = first.failures.clone();
        for _ in 0..measure.warmup {
            failures.extend(self.run_once(schedule)?.failures);
        }
        let mut runs = Vec::new();
        for _ in 0..measure.runs {
            let once = self.run_once(schedule)?;
            failures.extend(once.failures.iter().cloned());
            runs.push(once);
        }
        let timing = Timing::new(
            runs.iter().map(|r| r.wall_ms).collect(),
            measure.best_of as usize,
        );
        let median_of = |mut v: Vec<f64>| {
            v.sort_by(f64::total_cmp);
            v[v.len() / 2]
        };
        // Devices that took part in the timed runs, each with its medians over the runs it ran.
        let mut devices: Vec<usize> = runs
            .iter()
            .flat_map(|r| r.finishes.iter().map(|f| f.0))
            .collect();
        devices.sort_unstable();
        devices.dedup();
        let part_timings = devices
            .iter()
            .map(|&device| {
                let mine: Vec<&(usize, f64, f64, usize, u64)> = runs
                    .iter()
                    .filter_map(|r| r.finishes.iter().find(|f| f.0 == device))
                    .collect();
                let mut chunks: Vec<usize> = mine.iter().map(|f| f.3).collect();
                let mut items: Vec<u64> = mine.iter().map(|f| f.4).collect();
                chunks.sort_unstable();
                items.sort_unstable();
                PartTiming {
                    device,
                    finish_ms: median_of(mine.iter().map(|f| f.1).collect()),
                    kernel_ms: median_of(mine.iter().map(|f| f.2).collect()),
                    chunks: chunks[chunks.len() / 2],
                    items: items[items.len() / 2],
                }
            })
            .collect();
        let balance = median_of(
            runs.iter()
                .map(|r| {
                    let f = r.finishes.iter().map(|x| x.1);
                    let (lo, hi) =
                        f.fold((f64::INFINITY, 0f64), |(lo, hi), x| (lo.min(x), hi.max(x)));
                    if hi > 0.0 {
                        lo / hi
                    } else {
                        1.0
                    }
                })
                .collect(),
        );
        let mut by_wall: Vec<&Once> = runs.iter().collect();
        by_wall.sort_by(|a, b| a.wall_ms.total_cmp(&b.wall_ms));
        Ok(Execution {
            timing,
            parts: part_timings,
            balance,
            outputs,
            overlap_mismatch: first.overlap_mismatch,
            timeline: by_wall[by_wall.len() / 2].timeline.clone(),
            failures,
        })
    }

    /// The live members a schedule runs on: those its parts or its device list name.
    fn participants(&self, schedule: &Schedule) -> Vec<usize> {
        let named: Vec<usize> = match schedule {
            Schedule::Static(parts) => parts.iter().map(|p| p.device).collect(),
            Schedule::Dynamic { devices, .. } | Schedule::Hguided { devices, .. } => {
                devices.clone()
            }
        };
        let mut live: Vec<usize> = named
            .into_iter()
            .filter(|&d| self.workers.get(d).is_some_and(|w| w.failed.is_none()))
            .collect();
        live.sort_unstable();
        live.dedup();
        live
    }

    fn check(&self, schedule: &Schedule) -> Result<(), ExecError> {
        let invalid = |m: String| Err(ExecError::Invalid(m));
        let n = self.workers.len();
        match schedule {
            Schedule::Static(parts) => {
                let mut seen = vec![false; n];
                for p in parts {
                    let w = self.workers.get(p.device).ok_or_else(|| {
                        ExecError::Invalid(format!("part for device {} of {n}", p.device))
                    })?;
                    if std::mem::replace(&mut seen[p.device], true) {
                        return invalid(format!("device {} has two parts", p.device));
                    }
                    if p.size == 0 || p.offset + p.size > self.global || p.size % w.wg != 0 {
                        return invalid(format!(
                            "{}: part [{}, {}) is not whole work-groups of {} inside [0, {})",
                            w.label,
                            p.offset,
                            p.offset + p.size,
                            w.wg,
                            self.global
                        ));
                    }
                }
                if parts.is_empty() {
                    return invalid("no part to run".into());
                }
            }
            Schedule::Dynamic { chunk, .. } if *chunk == 0 => {
                return invalid("a dynamic chunk of 0 items".into())
            }
            Schedule::Dynamic { devices, .. } | Schedule::Hguided { devices, .. }
                if devices.iter().any(|&d| d >= n) =>
            {
                return invalid(format!("a schedule names a device beyond the {n} members"))
            }
            Schedule::Hguided { speeds, least, .. }
                if speeds.len() != n
                    || least.len() != n
                    || speeds.iter().any(|s| !(*s > 0.0 && s.is_finite())) =>
            {
                return invalid(format!(
                    "hguided needs a positive speed and a least chunk for each of the {n} devices"
                ))
            }
            _ => {}
        }
        if self.participants(schedule).is_empty() {
            return invalid("every device of this schedule has failed".into());
        }
        Ok(())
    }

    /// One run's dispenser of `schedule` over its `members` (its participants).
    fn dispenser(&self, schedule: &Schedule, members: &[usize]) -> Result<Dispenser, ExecError> {
        let n = self.workers.len();
        let granule = self.granule_of(members)?;
        let cut = match schedule {
            Schedule::Static(parts) => return Ok(Dispenser::parts(n, parts, self.global)),
            Schedule::Dynamic { chunk, .. } => Cut::Equal(*chunk),
            Schedule::Hguided { speeds, least, .. } => Cut::Guided {
                // A device outside the schedule counts for nothing in the shares.
                speeds: (0..n)
                    .map(|i| if members.contains(&i) { speeds[i] } else { 0.0 })
                    .collect(),
                least: least.clone(),
                k: crate::schedule::HGUIDED_K,
            },
        };
        Ok(Dispenser::new(
            vec![Vec::new(); n],
            0,
            self.global,
            granule,
            cut,
        ))
    }

    fn gone(&self, i: usize) -> ExecError {
        ExecError::Device {
            device: self.workers[i].label.clone(),
            message: "its host thread ended".into(),
        }
    }

    fn receive(&self, i: usize) -> Result<Reply, ExecError> {
        match self.workers[i].done.recv() {
            Ok(Ok(reply)) => Ok(reply),
            Ok(Err(message)) => Err(ExecError::Device {
                device: self.workers[i].label.clone(),
                message,
            }),
            Err(_) => Err(self.gone(i)),
        }
    }

    /// One run of a schedule on its devices at once, gathered.
    fn run_once(&mut self, schedule: &Schedule) -> Result<Once, ExecError> {
        let participants = self.participants(schedule);
        let dispenser = Arc::new(self.dispenser(schedule, &participants)?);
        // A static part of a device that already failed goes to the others from the start.
        if let Schedule::Static(parts) = schedule {
            for p in parts {
                if self.workers[p.device].failed.is_some() {
                    dispenser.fail(p.device);
                }
            }
        }
        let targets: Arc<Vec<HostBuffer>> = Arc::new(
            self.buffers
                .iter()
                .zip(&mut self.gathered)
                .filter(|(b, _)| b.writes())
                .map(|(_, host)| HostBuffer {
                    ptr: host.as_mut_ptr(),
                    len: host.len(),
                })
                .collect(),
        );
        let barrier = Arc::new(Barrier::new(participants.len() + 1));
        for &i in &participants {
            self.workers[i]
                .orders
                .send(Order::Run {
                    me: i,
                    dispenser: Arc::clone(&dispenser),
                    targets: Arc::clone(&targets),
                    barrier: Arc::clone(&barrier),
                })
                .map_err(|_| self.gone(i))?;
        }
        barrier.wait();
        // Every thread answers before the gathered buffers are looked at (or an error returns):
        // until then they write into them.
        let mut runs = Vec::new();
        let mut lost = None;
        for &i in &participants {
            match self.receive(i) {
                Ok(Reply::Ran(run)) => runs.push((i, run)),
                Ok(_) => unreachable!("a run is answered with what ran"),
                Err(e) => lost = lost.or(Some(e)),
            }
        }
        drop(targets);
        if let Some(e) = lost {
            return Err(e);
        }
        let mut failures = Vec::new();
        for (i, run) in &runs {
            if let Some(message) = &run.failure {
                self.workers[*i].failed = Some(message.clone());
                failures.push(DeviceFailure {
                    device: *i,
                    label: self.workers[*i].label.clone(),
                    message: message.clone(),
                    given_back: Vec::new(),
                });
            }
        }
        let unfinished = dispenser.unfinished();
        if !unfinished.is_empty() {
            let why = failures
                .iter()
                .map(|f| format!("{}: {}", f.label, f.message))
                .collect::<Vec<_>>()
                .join("; ");
            return Err(ExecError::Invalid(format!(
                "no device is left to run items {}: every device that could failed ({why})",
                unfinished
                    .iter()
                    .map(|c| format!("{}..{}", c.offset, c.offset + c.size))
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        }
        for f in &mut failures {
            f.given_back = dispenser.given_back(f.device);
        }
        let Some(start) = runs
            .iter()
            .flat_map(|(_, r)| r.chunks.iter().map(|c| c.start))
            .min()
        else {
            return Err(ExecError::Invalid("no device ran any chunk".into()));
        };
        let wall_ms = start.elapsed().as_secs_f64() * 1e3;
        let since = |t: Instant| t.duration_since(start).as_secs_f64() * 1e3;
        let mut overlap_mismatch = None;
        let mut timeline = Vec::new();
        let mut finishes = Vec::new();
        for (i, run) in &runs {
            for d in &run.chunks {
                timeline.push(ChunkRun {
                    device: *i,
                    offset: d.chunk.offset,
                    size: d.chunk.size,
                    start_ms: since(d.start),
                    end_ms: since(d.finish),
                    kernel_ms: d.kernel_ms,
                    transfer_ms: d.transfer_ms,
                });
                for (b, bytes) in &d.overlaps {
                    let layout = &self.buffers[*b];
                    let c = &d.chunk;
                    let (lo, hi) = layout.write_range(c.offset as usize, c.overlap as usize);
                    let s = layout.ty.size();
                    let earlier = from_bytes(layout.ty, &self.gathered[*b][lo * s..hi * s]);
                    let this = from_bytes(layout.ty, bytes);
                    if let Err(m) = compare(
                        &format!(
                            "{} (items {}..{} computed by two devices)",
                            layout.name,
                            c.offset,
                            c.offset + c.overlap
                        ),
                        &earlier,
                        &this,
                        self.rtol,
                        self.atol,
                    ) {
                        overlap_mismatch.get_or_insert(m);
                    }
                }
            }
            if let Some(last) = run.chunks.iter().map(|c| c.finish).max() {
                finishes.push((
                    *i,
                    since(last),
                    run.chunks.iter().map(|c| c.kernel_ms).sum(),
                    run.chunks.len(),
                    run.chunks.iter().map(|c| c.chunk.size).sum(),
                ));
            }
        }
        timeline.sort_by_key(|c| (c.device, c.offset));
        Ok(Once {
            wall_ms,
            finishes,
            timeline,
            overlap_mismatch,
            failures,
        })
    }
}

impl Drop for CoExecutor {
    fn drop(&mut self) {
        for w in &mut self.workers {
            // Closing the order channel ends the thread's loop.
            let (dead, _) = channel();
            drop(std::mem::replace(&mut w.orders, dead));
            if let Some(t) = w.thread.take() {
                let _ = t.join();
            }
        }
    }
}

impl Worker {
    fn start(setup: Setup) -> Result<Worker, ExecError> {
        let (orders, order_rx) = channel();
        let (done_tx, done) = channel();
        let label = setup.label.clone();
        let wg = setup.local[setup.dim] as u64;
        let kind = setup.kind.clone();
        let thread = std::thread::Builder::new()
            .name(format!("ndtune-split {label}"))
            .spawn(move || device_thread(setup, order_rx, done_tx))
            .map_err(|e| ExecError::Device {
                device: label.clone(),
                message: format!("cannot start its host thread: {e}"),
            })?;
        let w = Worker {
            label,
            orders,
            done,
            thread: Some(thread),
            wg,
            kind,
            failed: None,
        };
        // The thread reports once it is ready (or why it cannot be).
        match w.done.recv() {
            Ok(Ok(_)) => Ok(w),
            Ok(Err(message)) => Err(ExecError::Device {
                device: w.label.clone(),
                message,
            }),
            Err(_) => Err(ExecError::Device {
                device: w.label.clone(),
                message: "its host thread ended during set-up".into(),
            }),
        }
    }
}

/// A device's state inside its thread.
struct DeviceState {
    /// Each input's bytes in pinned host memory of this device's context (None for buffers the
    /// kernel only writes), so that every run's writes go by DMA.
    staged: Vec<Option<Box<dyn Pinned>>>,
    buffers: Vec<DeviceBuffer>,
    kernel: Kernel,
    session: Box<dyn Session>,
    setup: Setup,
    /// Fault injection: chunks left before a launch the driver refuses.
    fail_after: Option<usize>,
    /// Slices per chunk, when set (else by the bytes moved).
    slices: Option<usize>,
}

fn device_thread(setup: Setup, orders: Receiver<Order>, done: Sender<Result<Reply, String>>) {
    let mut state = match DeviceState::new(setup) {
        Ok(s) => {
            let _ = done.send(Ok(Reply::Ready));
            s
        }
        Err(e) => {
            let _ = done.send(Err(e));
            return;
        }
    };
    while let Ok(order) = orders.recv() {
        let reply = match order {
            Order::Poison => state.poison().map(|()| Reply::Poisoned),
            Order::FailAfter(n) => {
                state.fail_after = Some(n);
                continue;
            }
            Order::Slices(n) => {
                state.slices = Some(n);
                continue;
            }
            Order::Run {
                me,
                dispenser,
                targets,
                barrier,
            } => {
                barrier.wait();
                let mut run = DeviceRun {
                    chunks: Vec::new(),
                    failure: None,
                };
                while let Some(chunk) = dispenser.take(me) {
                    // Inputs every item reads go once per run, with the first chunk.
                    let whole_inputs = run.chunks.is_empty();
                    match state.run_chunk(chunk, whole_inputs, &targets) {
                        Ok(d) => run.chunks.push(d),
                        Err(e) => {
                            dispenser.fail(me);
                            run.failure = Some(e);
                            break;
                        }
                    }
                }
                Ok(Reply::Ran(run))
            }
        };
        if done.send(reply).is_err() {
            return;
        }
    }
}

impl DeviceState {
    fn new(setup: Setup) -> Result<DeviceState, String> {
        let mut session = setup.device.session().map_err(|e| e.to_string())?;
        // Parts are launched with their offsets: built so that the kernel sees them.
        let source = session.with_offsets(&setup.source);
        let kernel = session
            .kernel(&source, &setup.kernel, &setup.options)
            .map_err(|e| format!("cannot build the kernel: {e}"))?;
        // No check of CL_KERNEL_WORK_GROUP_SIZE here: the query is advice (NVIDIA's says 256
        // for work-groups of 1024 it runs), the launch is the truth and its refusal is reported.
        let mut buffers = Vec::new();
        let mut staged = Vec::new();
        for b in &setup.buffers {
            staged.push(if b.reads() {
                let mut pinned = session.pinned(b.data.len()).map_err(|e| e.to_string())?;
                pinned.as_mut_slice().copy_from_slice(&b.data);
                Some(pinned)
            } else {
                None
            });
            let initial = if b.slicing.is_some() {
                vec![POISON; b.data.len()]
            } else {
                b.data.as_ref().clone()
            };
            buffers.push(session.buffer(&initial).map_err(|e| e.to_string())?);
        }
        let mut next_buffer = buffers.iter();
        let args: Vec<Arg> = setup
            .others
            .iter()
            .map(|o| match o {
                None => Arg::Buffer(next_buffer.next().expect("one buffer per buffer argument")),
                Some(Other::Scalar(bytes)) => Arg::Scalar(bytes),
                Some(Other::Local(n)) => Arg::Local(*n),
            })
            .collect();
        session
            .set_args(&kernel, &args)
            .map_err(|e| format!("the [[args]] do not match kernel `{}`: {e}", setup.kernel))?;
        Ok(DeviceState {
            staged,
            buffers,
            kernel,
            session,
            setup,
            fail_after: None,
            slices: None,
        })
    }

    fn poison(&mut self) -> Result<(), String> {
        for (b, buf) in self.setup.buffers.iter().zip(&mut self.buffers) {
            if b.slicing.is_some() {
                self.session
                    .write(buf, &vec![POISON; b.data.len()])
                    .map_err(|e| e.to_string())?;
            }
        }
        Ok(())
    }

    /// How many slices a chunk covering `groups` work-groups is run in: by the bytes it moves
    /// (at least [`SLICE_BYTES`] a slice, at most [`MAX_SLICES`]) on devices with their own
    /// memory, one on a CPU (its transfers are copies by the cores that compute); never more
    /// than its work-groups.
    fn slices(&self, groups: usize, cover: (usize, usize)) -> usize {
        let wanted = self.slices.unwrap_or_else(|| {
            if self.setup.device.profile().device_type == DeviceType::Cpu {
                return 1;
            }
            let moved: usize = self
                .setup
                .buffers
                .iter()
                .filter(|b| b.slicing.is_some())
                .map(|b| {
                    let (lo, hi) = if b.reads() {
                        b.read_range(cover.0, cover.1 - cover.0)
                    } else {
                        b.write_range(cover.0, cover.1 - cover.0)
                    };
                    (hi - lo) * b.ty.size()
                })
                .sum();
            (moved / SLICE_BYTES).clamp(1, MAX_SLICES)
        });
        wanted.clamp(1, groups.max(1))
    }

    /// Runs one chunk: launched as the whole work-groups of this device's own size that cover
    /// it (a chunk cut for another device's groups may start or end inside one of ours), its
    /// inputs written for that cover, its own items read back into the gathered buffers. The
    /// cover runs in slices of whole work-groups, pipelined: while a slice's kernel runs, the
    /// next slice's inputs go in and the last slice's outputs come back.
    fn run_chunk(
        &mut self,
        chunk: Chunk,
        whole_inputs: bool,
        targets: &[HostBuffer],
    ) -> Result<ChunkDone, String> {
        let start = Instant::now();
        let dim = self.setup.dim;
        let wg = self.setup.local[dim];
        let (offset, size, overlap) = (
            chunk.offset as usize,
            chunk.size as usize,
            chunk.overlap as usize,
        );
        let cover_lo = offset / wg * wg;
        let cover_hi = (offset + size).div_ceil(wg) * wg;
        let groups = (cover_hi - cover_lo) / wg;
        let slices = self.slices(groups, (cover_lo, cover_hi));
        let bounds: Vec<usize> = (0..=slices)
            .map(|k| cover_lo + groups * k / slices * wg)
            .collect();
        let mut local = self.setup.local.clone();
        if let Some(left) = self.fail_after.as_mut() {
            if *left == 0 {
                // More work-items than any device allows: the driver refuses the launch.
                local[dim] = 1 << 30;
            } else {
                *left -= 1;
            }
        }
        let failed =
            |e: ndtune_backend::DeviceError| format!("items {}..{}: {e}", offset, offset + size);
        let mut pipe = self.session.pipeline().map_err(failed)?;
        // What the items [lo, hi) of a launch read of the inputs split or not (`sliced`):
        // (buffer, byte offset, staged bytes).
        let reads = |sliced: bool, lo: usize, hi: usize| {
            self.setup
                .buffers
                .iter()
                .zip(&self.buffers)
                .zip(&self.staged)
                .filter(move |((b, _), _)| b.slicing.is_some() == sliced)
                .filter_map(move |((b, buf), staged)| {
                    let pinned = staged.as_ref()?;
                    let (lo, hi) = b.read_range(lo, hi - lo);
                    let s = b.ty.size();
                    (hi > lo).then(|| (buf, lo * s, &pinned.as_slice()[lo * s..hi * s]))
                })
        };
        // Inputs every item reads: once per run, before every slice.
        let mut whole = Vec::new();
        if whole_inputs {
            for (buf, at, bytes) in reads(false, cover_lo, cover_hi) {
                whole.push(pipe.write(buf, at, bytes).map_err(failed)?);
            }
        }
        let mut kernels = Vec::new();
        for w in bounds.windows(2) {
            let (lo_item, hi_item) = (w[0], w[1]);
            let mut after = whole.clone();
            for (buf, at, bytes) in reads(true, lo_item, hi_item) {
                after.push(pipe.write(buf, at, bytes).map_err(failed)?);
            }
            let mut global = self.setup.global.clone();
            global[dim] = hi_item - lo_item;
            let mut offsets = vec![0; global.len()];
            offsets[dim] = lo_item;
            kernels.push(
                pipe.launch(&self.kernel, &global, Some(&local), Some(&offsets), &after)
                    .map_err(failed)?,
            );
        }
        // Each slice's own items, as soon as its kernel is done; then the overlap items.
        let own_lo = offset + overlap;
        let own_hi = offset + size;
        let written: Vec<(usize, &BufferLayout, &DeviceBuffer)> = self
            .setup
            .buffers
            .iter()
            .zip(&self.buffers)
            .enumerate()
            .filter(|(_, (b, _))| b.writes())
            .map(|(i, (b, buf))| (i, b, buf))
            .collect();
        for (w, &kernel) in bounds.windows(2).zip(&kernels) {
            let (lo_item, hi_item) = (w[0].max(own_lo), w[1].min(own_hi));
            if hi_item <= lo_item {
                continue;
            }
            for ((_, b, buf), target) in written.iter().zip(targets) {
                let s = b.ty.size();
                let (lo, hi) = b.write_range(lo_item, hi_item - lo_item);
                debug_assert!(hi * s <= target.len);
                // SAFETY: see HostBuffer: these items are this chunk's alone, inside the buffer.
                let own = unsafe {
                    std::slice::from_raw_parts_mut(target.ptr.add(lo * s), (hi - lo) * s)
                };
                pipe.read_into(buf, lo * s, own, &[kernel])
                    .map_err(failed)?;
            }
        }
        let mut overlaps = Vec::new();
        for &(i, b, buf) in &written {
            let s = b.ty.size();
            let (lo, hi) = b.write_range(offset, overlap);
            if hi > lo {
                let mut bytes = vec![0u8; (hi - lo) * s];
                pipe.read_into(buf, lo * s, &mut bytes, &kernels)
                    .map_err(failed)?;
                overlaps.push((i, bytes));
            }
        }
        let times = pipe.finish().map_err(failed)?;
        Ok(ChunkDone {
            chunk,
            start,
            finish: Instant::now(),
            kernel_ms: times.kernel_ms,
            transfer_ms: times.transfer_ms,
            overlaps,
        })
    }
}
