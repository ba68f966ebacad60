//! The co-execution runtime: one NDRange of a spec's kernel run across several devices at once.
//!
//! Each device gets its own host thread, and in it its own context and command queue (contexts
//! cannot span platforms), its own build of the kernel with its own best configuration, and
//! device buffers of the full size: kernels index absolutely (`get_global_id` includes the
//! global offset), so a part is launched with its offset and only the elements it touches are
//! transferred. Along the split dimension a buffer declared in `[split.buffers]` moves only its
//! slice (plus halo, for inputs); every other input is copied whole; outputs are read back per
//! part and gathered into one host buffer. Transfers count in the time: a run is timed on the
//! host clock from the start of the first transfer to the last byte gathered.
//!
//! What a part never writes stays poisoned (all bits set: NaN for floats), so a `[split]`
//! declaration that does not match how the kernel indexes its buffers shows up as a mismatch.

use crate::Part;
use ndtune_bench::data::from_bytes;
use ndtune_bench::verify::{compare, Mismatch};
use ndtune_cl::{Arg, ClDevice, DeviceBuffer, Kernel, PinnedHost, Session};
use ndtune_core::Timing;
use ndtune_space::resolve::Node;
use ndtune_spec::{Access, ArgKind, ElemType, Measure, Spec};
use std::collections::BTreeMap;
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Barrier};
use std::thread::JoinHandle;
use std::time::Instant;

/// The byte every untouched element is filled with.
const POISON: u8 = 0xFF;

/// One device of a co-execution and the configuration (parameter values in declaration order)
/// it runs.
#[derive(Debug, Clone)]
pub struct Member {
    pub device: ClDevice,
    pub config: Vec<i64>,
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
    device: ClDevice,
    label: String,
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
    /// Run part `[offset, offset + size)` once the barrier opens. Its first `overlap` items
    /// are also an earlier part's: they come back for comparison; the rest of each written
    /// buffer's range is read straight into `dests` (one per written buffer, in order).
    Run {
        offset: usize,
        size: usize,
        overlap: usize,
        dests: Vec<HostSlice>,
        barrier: Arc<Barrier>,
    },
}

/// A region of a gathered host buffer that one device thread fills during one run.
struct HostSlice {
    ptr: *mut u8,
    len: usize,
}

// SAFETY: a HostSlice is only made by `CoExecutor::run_once`, whose slices of one run never
// overlap and point into buffers that are neither touched nor moved until every device thread
// has answered (see there).
unsafe impl Send for HostSlice {}

/// One device's run of its part.
struct PartDone {
    start: Instant,
    finish: Instant,
    kernel_ms: f64,
    /// For each written buffer (position in the layout), the bytes of the overlap items.
    overlaps: Vec<(usize, Vec<u8>)>,
}

struct Worker {
    label: String,
    orders: Sender<Order>,
    done: Receiver<Result<Option<PartDone>, String>>,
    thread: Option<JoinHandle<()>>,
    /// Work-group size along the split dimension.
    wg: u64,
}

/// One device's share of one measured run.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct PartTiming {
    pub device: usize,
    /// Host time from the start of the run to this device's last byte read back (median).
    pub finish_ms: f64,
    /// The kernel's own time on the device, from profiling events (median).
    pub kernel_ms: f64,
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
}

/// One run's result before aggregation.
struct Once {
    wall_ms: f64,
    finishes: Vec<(usize, f64, f64)>,
    overlap_mismatch: Option<Mismatch>,
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
            setups.push(Setup {
                device: m.device.clone(),
                label: label.clone(),
                source: source.text.clone(),
                kernel: spec.kernel.name.clone(),
                // A define of its own per member keeps the members' programs apart in driver
                // caches: PoCL 5.0 aborts (pocl_release_dlhandle_cache) when two sub-devices
                // launch one cached kernel binary at once.
                options: format!(
                    "{} -D NDTUNE_MEMBER={}",
                    spec.build_options(&source, c),
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

    /// Runs `parts` with the measure protocol: poison, one run whose outputs are kept (for
    /// verification), `warmup` runs, then `runs` timed runs scored as the mean of the best
    /// `best_of`.
    pub fn execute(&mut self, parts: &[Part], measure: &Measure) -> Result<Execution, ExecError> {
        self.check_parts(parts)?;
        for &i in &self.participants(parts) {
            self.workers[i]
                .orders
                .send(Order::Poison)
                .map_err(|_| self.gone(i))?;
            self.receive(i)?;
        }
        for g in &mut self.gathered {
            g.fill(POISON);
        }
        let first = self.run_once(parts)?;
        let outputs = self
            .buffers
            .iter()
            .zip(&self.gathered)
            .filter(|(b, _)| b.writes())
            .map(|(b, bytes)| (b.name.clone(), bytes.clone()))
            .collect();
        for _ in 0..measure.warmup {
            self.run_once(parts)?;
        }
        let mut runs = Vec::new();
        for _ in 0..measure.runs {
            runs.push(self.run_once(parts)?);
        }
        let timing = Timing::new(
            runs.iter().map(|r| r.wall_ms).collect(),
            measure.best_of as usize,
        );
        let median = |mut v: Vec<f64>| {
            v.sort_by(f64::total_cmp);
            v[v.len() / 2]
        };
        let participants = self.participants(parts);
        let part_timings = participants
            .iter()
            .enumerate()
            .map(|(k, &device)| PartTiming {
                device,
                finish_ms: median(runs.iter().map(|r| r.finishes[k].1).collect()),
                kernel_ms: median(runs.iter().map(|r| r.finishes[k].2).collect()),
            })
            .collect();
        let balance = median(
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
        Ok(Execution {
            timing,
            parts: part_timings,
            balance,
            outputs,
            overlap_mismatch: first.overlap_mismatch,
        })
    }

    fn participants(&self, parts: &[Part]) -> Vec<usize> {
        parts.iter().map(|p| p.device).collect()
    }

    fn check_parts(&self, parts: &[Part]) -> Result<(), ExecError> {
        let mut seen = vec![false; self.workers.len()];
        for p in parts {
            let w = self.workers.get(p.device).ok_or_else(|| {
                ExecError::Invalid(format!(
                    "part for device {} of {}",
                    p.device,
                    self.workers.len()
                ))
            })?;
            if std::mem::replace(&mut seen[p.device], true) {
                return Err(ExecError::Invalid(format!(
                    "device {} has two parts",
                    p.device
                )));
            }
            if p.size == 0 || p.offset + p.size > self.global || p.size % w.wg != 0 {
                return Err(ExecError::Invalid(format!(
                    "{}: part [{}, {}) is not whole work-groups of {} inside [0, {})",
                    w.label,
                    p.offset,
                    p.offset + p.size,
                    w.wg,
                    self.global
                )));
            }
        }
        if parts.is_empty() {
            return Err(ExecError::Invalid("no part to run".into()));
        }
        Ok(())
    }

    fn gone(&self, i: usize) -> ExecError {
        ExecError::Device {
            device: self.workers[i].label.clone(),
            message: "its host thread ended".into(),
        }
    }

    fn receive(&self, i: usize) -> Result<Option<PartDone>, ExecError> {
        match self.workers[i].done.recv() {
            Ok(Ok(done)) => Ok(done),
            Ok(Err(message)) => Err(ExecError::Device {
                device: self.workers[i].label.clone(),
                message,
            }),
            Err(_) => Err(self.gone(i)),
        }
    }

    /// One run of every part at once, gathered.
    fn run_once(&mut self, parts: &[Part]) -> Result<Once, ExecError> {
        // Parts in offset order: each one's items already covered by earlier parts are its
        // overlap; the rest of its range in every gathered buffer is its own, disjoint from
        // every other part's own range.
        let mut order: Vec<&Part> = parts.iter().collect();
        order.sort_by_key(|p| p.offset);
        let mut overlaps = BTreeMap::new();
        let mut end_before = 0u64;
        for p in &order {
            let overlap = end_before.saturating_sub(p.offset).min(p.size);
            overlaps.insert(p.device, overlap as usize);
            end_before = end_before.max(p.offset + p.size);
        }
        let barrier = Arc::new(Barrier::new(parts.len() + 1));
        for p in parts {
            let (offset, size) = (p.offset as usize, p.size as usize);
            let overlap = overlaps[&p.device];
            let dests = self
                .buffers
                .iter()
                .zip(&mut self.gathered)
                .filter(|(b, _)| b.writes())
                .map(|(b, host)| {
                    let (lo, hi) = b.write_range(offset + overlap, size - overlap);
                    let s = b.ty.size();
                    let own = &mut host[lo * s..hi * s];
                    HostSlice {
                        ptr: own.as_mut_ptr(),
                        len: own.len(),
                    }
                })
                .collect();
            self.workers[p.device]
                .orders
                .send(Order::Run {
                    offset,
                    size,
                    overlap,
                    dests,
                    barrier: Arc::clone(&barrier),
                })
                .map_err(|_| self.gone(p.device))?;
        }
        barrier.wait();
        // Every thread answers before the gathered buffers are looked at (or an error returns):
        // until then they write into them.
        let mut done = Vec::new();
        let mut failure = None;
        for p in parts {
            match self.receive(p.device) {
                Ok(d) => done.push((p, d.expect("a run reports its part"))),
                Err(e) => failure = failure.or(Some(e)),
            }
        }
        if let Some(e) = failure {
            return Err(e);
        }
        let start = done.iter().map(|(_, d)| d.start).min().expect("parts");
        let wall_ms = start.elapsed().as_secs_f64() * 1e3;
        let mut overlap_mismatch = None;
        for (p, d) in &done {
            for (b, bytes) in &d.overlaps {
                let layout = &self.buffers[*b];
                let (lo, hi) = layout.write_range(p.offset as usize, overlaps[&p.device]);
                let s = layout.ty.size();
                let earlier = from_bytes(layout.ty, &self.gathered[*b][lo * s..hi * s]);
                let this = from_bytes(layout.ty, bytes);
                if let Err(m) = compare(
                    &format!(
                        "{} (items {}..{} computed by two devices)",
                        layout.name,
                        p.offset,
                        p.offset as usize + overlaps[&p.device]
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
        let finishes = done
            .iter()
            .map(|(p, d)| {
                (
                    p.device,
                    d.finish.duration_since(start).as_secs_f64() * 1e3,
                    d.kernel_ms,
                )
            })
            .collect();
        Ok(Once {
            wall_ms,
            finishes,
            overlap_mismatch,
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
    staged: Vec<Option<PinnedHost>>,
    buffers: Vec<DeviceBuffer>,
    kernel: Kernel,
    session: Session,
    setup: Setup,
}

fn device_thread(
    setup: Setup,
    orders: Receiver<Order>,
    done: Sender<Result<Option<PartDone>, String>>,
) {
    let mut state = match DeviceState::new(setup) {
        Ok(s) => {
            let _ = done.send(Ok(None));
            s
        }
        Err(e) => {
            let _ = done.send(Err(e));
            return;
        }
    };
    while let Ok(order) = orders.recv() {
        let reply = match order {
            Order::Poison => state.poison().map(|()| None),
            Order::Run {
                offset,
                size,
                overlap,
                mut dests,
                barrier,
            } => {
                barrier.wait();
                state.run(offset, size, overlap, &mut dests).map(Some)
            }
        };
        if done.send(reply).is_err() {
            return;
        }
    }
}

impl DeviceState {
    fn new(setup: Setup) -> Result<DeviceState, String> {
        let mut session = Session::new(&setup.device).map_err(|e| e.to_string())?;
        let kernel = session
            .kernel(&setup.source, &setup.kernel, &setup.options)
            .map_err(|e| format!("cannot build the kernel: {e}"))?;
        let limits = session.limits(&kernel).map_err(|e| e.to_string())?;
        let items: usize = setup.local.iter().product();
        if items as u64 > limits.work_group_size {
            return Err(format!(
                "cannot run the kernel: a work-group of {items} exceeds its CL_KERNEL_WORK_GROUP_SIZE {}",
                limits.work_group_size
            ));
        }
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

    fn run(
        &mut self,
        offset: usize,
        size: usize,
        overlap: usize,
        dests: &mut [HostSlice],
    ) -> Result<PartDone, String> {
        let start = Instant::now();
        for ((b, buf), staged) in self
            .setup
            .buffers
            .iter()
            .zip(&mut self.buffers)
            .zip(&self.staged)
        {
            if let Some(pinned) = staged {
                let (lo, hi) = b.read_range(offset, size);
                let s = b.ty.size();
                self.session
                    .write_at(buf, lo * s, &pinned.as_slice()[lo * s..hi * s])
                    .map_err(|e| e.to_string())?;
            }
        }
        let dim = self.setup.dim;
        let mut global = self.setup.global.clone();
        global[dim] = size;
        let mut offsets = vec![0; global.len()];
        offsets[dim] = offset;
        let kernel_ms = self
            .session
            .launch(
                &self.kernel,
                &global,
                Some(&self.setup.local),
                Some(&offsets),
            )
            .map_err(|e| e.to_string())?;
        let mut overlaps = Vec::new();
        let mut dests = dests.iter_mut();
        for (i, (b, buf)) in self.setup.buffers.iter().zip(&self.buffers).enumerate() {
            if !b.writes() {
                continue;
            }
            let s = b.ty.size();
            let (lo, hi) = b.write_range(offset, overlap);
            if hi > lo {
                let mut bytes = vec![0u8; (hi - lo) * s];
                self.session
                    .read_into(buf, lo * s, &mut bytes)
                    .map_err(|e| e.to_string())?;
                overlaps.push((i, bytes));
            }
            let (lo, hi) = b.write_range(offset + overlap, size - overlap);
            let dest = dests.next().expect("one destination per written buffer");
            debug_assert_eq!(dest.len, (hi - lo) * s);
            // SAFETY: see HostSlice: this region is this thread's alone for this run.
            let own = unsafe { std::slice::from_raw_parts_mut(dest.ptr, dest.len) };
            self.session
                .read_into(buf, lo * s, own)
                .map_err(|e| e.to_string())?;
        }
        Ok(PartDone {
            start,
            finish: Instant::now(),
            kernel_ms,
            overlaps,
        })
    }
}
