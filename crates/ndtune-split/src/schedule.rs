//! Schedulers beside the static plan: how the range of the split dimension is handed out to
//! devices while a co-execution runs, and the prediction of whether co-executing pays at all.
//!
//! A [`Dispenser`] holds one run's work. Each device asks it for a [`Chunk`] when it is free
//! ([`Dispenser::take`]); asking again means the previous chunk is done. A device that fails
//! gives its chunk back ([`Dispenser::fail`]) and takes no more: the chunk goes to whichever
//! device asks next, so no item is lost. A device that finds nothing left waits while another
//! still computes (that chunk may yet come back) and ends once every chunk is done.
//!
//! - `static`: every device one pre-assigned part, the seed's plan (eq. 4-9, Algorithm 1).
//! - `dynamic`: equal chunks on demand (EngineCL's Dynamic): a fast device takes more of them.
//! - `hguided`: on-demand chunks that shrink as the work runs out, each sized by the asking
//!   device's measured speed: `remaining · speed_i / (k · Σ speed)`, never under the device's
//!   least chunk (EngineCL's HGuided, k = 2). Big chunks first keep the per-chunk costs low;
//!   small ones at the end keep devices finishing together. A device takes no chunk it would
//!   still compute after the others have finished everything left (a CPU beside GPUs).
//!
//! Every chunk is whole granules, the least common multiple of the devices' work-group sizes
//! along the dimension (which divides the global size, a multiple of each of them), so any
//! device can run any chunk with its own best work-group size.

use serde::{Deserialize, Serialize};
use std::collections::VecDeque;
use std::fmt;
use std::str::FromStr;
use std::sync::{Condvar, Mutex, PoisonError};

/// How a co-execution's range is handed out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Scheduler {
    Static,
    Dynamic,
    Hguided,
}

impl Scheduler {
    pub const ALL: [Scheduler; 3] = [Scheduler::Static, Scheduler::Dynamic, Scheduler::Hguided];
}

impl fmt::Display for Scheduler {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Scheduler::Static => "static",
            Scheduler::Dynamic => "dynamic",
            Scheduler::Hguided => "hguided",
        })
    }
}

impl FromStr for Scheduler {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.parse::<ScheduleChoice>()? {
            ScheduleChoice::Static => Ok(Scheduler::Static),
            ScheduleChoice::Dynamic => Ok(Scheduler::Dynamic),
            ScheduleChoice::Hguided => Ok(Scheduler::Hguided),
            ScheduleChoice::Auto => Err(
                "`auto` picks by measuring each scheduler (`ndtune split --schedule auto`): name one of `static`, `dynamic`, `hguided`".into(),
            ),
        }
    }
}

/// What `--schedule` asks for: one scheduler, or `auto`, every one measured and the fastest kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ScheduleChoice {
    #[default]
    Static,
    Dynamic,
    Hguided,
    Auto,
}

impl ScheduleChoice {
    /// The schedulers a study measures for this choice: static always (the plan every other is
    /// compared with), then the one asked for.
    pub fn measured(self) -> Vec<Scheduler> {
        match self {
            ScheduleChoice::Static => vec![Scheduler::Static],
            ScheduleChoice::Dynamic => vec![Scheduler::Static, Scheduler::Dynamic],
            ScheduleChoice::Hguided => vec![Scheduler::Static, Scheduler::Hguided],
            ScheduleChoice::Auto => Scheduler::ALL.to_vec(),
        }
    }
}

impl fmt::Display for ScheduleChoice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ScheduleChoice::Static => "static",
            ScheduleChoice::Dynamic => "dynamic",
            ScheduleChoice::Hguided => "hguided",
            ScheduleChoice::Auto => "auto",
        })
    }
}

impl FromStr for ScheduleChoice {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "static" => Ok(ScheduleChoice::Static),
            "dynamic" => Ok(ScheduleChoice::Dynamic),
            "hguided" => Ok(ScheduleChoice::Hguided),
            "auto" => Ok(ScheduleChoice::Auto),
            _ => Err(format!(
                "`{s}`: the scheduler is `static` (the seed's plan), `dynamic` (equal chunks on demand), `hguided` (shrinking chunks sized by speed) or `auto` (each measured, the fastest kept)"
            )),
        }
    }
}

/// Items `[offset, offset + size)` of the split dimension. The first `overlap` items were also
/// computed by an earlier part (a static plan whose work-group sizes are not multiples of each
/// other): they are compared, not gathered.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Chunk {
    pub offset: u64,
    pub size: u64,
    #[serde(default)]
    pub overlap: u64,
}

/// How chunks are cut from the shared range once the pre-assigned parts are gone.
#[derive(Debug, Clone, PartialEq)]
pub enum Cut {
    /// Nothing is shared: every item is in a pre-assigned part.
    None,
    /// Chunks of this many items (the last may be smaller).
    Equal(u64),
    /// `remaining · speed_i / (k · Σ speed of the devices still running)`, at least `least[i]`.
    Guided {
        speeds: Vec<f64>,
        least: Vec<u64>,
        k: f64,
    },
}

/// The divisor of HGuided's chunk size: 2 halves each device's fair share of what is left.
pub const HGUIDED_K: f64 = 2.0;

/// What one request gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Take {
    Chunk(Chunk),
    /// Nothing now, but another device still computes a chunk that may come back.
    Wait,
    Done,
}

struct Pool {
    assigned: Vec<VecDeque<Chunk>>,
    /// Chunks given back by a device that failed.
    orphans: VecDeque<Chunk>,
    next: u64,
    end: u64,
    granule: u64,
    cut: Cut,
    in_flight: Vec<Option<Chunk>>,
    retired: Vec<bool>,
    /// What each failed device gave back.
    given_back: Vec<Vec<Chunk>>,
}

/// One run's work, handed out on demand to `n` devices (safe to share between their threads).
pub struct Dispenser {
    pool: Mutex<Pool>,
    changed: Condvar,
}

impl Dispenser {
    /// A run of `global` items: device `i` first runs `assigned[i]` in order, then everyone
    /// shares `[shared_from, global)` cut by `cut` in whole `granule`s.
    pub fn new(
        assigned: Vec<Vec<Chunk>>,
        shared_from: u64,
        global: u64,
        granule: u64,
        cut: Cut,
    ) -> Dispenser {
        let n = assigned.len();
        Dispenser {
            pool: Mutex::new(Pool {
                assigned: assigned.into_iter().map(VecDeque::from).collect(),
                orphans: VecDeque::new(),
                next: shared_from,
                end: global,
                granule: granule.max(1),
                cut,
                in_flight: vec![None; n],
                retired: vec![false; n],
                given_back: vec![Vec::new(); n],
            }),
            changed: Condvar::new(),
        }
    }

    /// The static plan: each device its part (in offset order, overlaps marked), nothing shared.
    pub fn parts(n: usize, parts: &[crate::Part], global: u64) -> Dispenser {
        let mut assigned = vec![Vec::new(); n];
        let mut ordered: Vec<&crate::Part> = parts.iter().collect();
        ordered.sort_by_key(|p| p.offset);
        let mut end_before = 0u64;
        for p in ordered {
            let overlap = end_before.saturating_sub(p.offset).min(p.size);
            end_before = end_before.max(p.offset + p.size);
            assigned[p.device].push(Chunk {
                offset: p.offset,
                size: p.size,
                overlap,
            });
        }
        Dispenser::new(assigned, global, global, 1, Cut::None)
    }

    /// How many devices it hands out to.
    pub fn devices(&self) -> usize {
        self.pool
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .retired
            .len()
    }

    /// Device `device`'s next chunk, its previous one done; `Wait` or `Done` when there is none.
    pub fn try_take(&self, device: usize) -> Take {
        let mut p = self.pool.lock().unwrap_or_else(PoisonError::into_inner);
        if p.in_flight[device].take().is_some() {
            self.changed.notify_all();
        }
        if p.retired[device] {
            return Take::Done;
        }
        let chunk = match p.orphans.pop_front() {
            Some(c) => Some(c),
            None => match p.assigned[device].pop_front() {
                Some(c) => Some(c),
                None => match p.cut_shared(device) {
                    Ok(c) => c,
                    Err(Declined) => return Take::Wait,
                },
            },
        };
        match chunk {
            Some(c) => {
                p.in_flight[device] = Some(c);
                Take::Chunk(c)
            }
            None if p.in_flight.iter().any(Option::is_some) => Take::Wait,
            None => Take::Done,
        }
    }

    /// Like [`Dispenser::try_take`], waiting while another device's chunk may still come back.
    pub fn take(&self, device: usize) -> Option<Chunk> {
        loop {
            match self.try_take(device) {
                Take::Chunk(c) => return Some(c),
                Take::Done => return None,
                Take::Wait => {
                    let p = self.pool.lock().unwrap_or_else(PoisonError::into_inner);
                    if p.in_flight.iter().any(Option::is_some) && p.orphans.is_empty() {
                        drop(self.changed.wait(p).unwrap_or_else(PoisonError::into_inner));
                    } else {
                        // Declined with nothing in flight: a faster device is about to ask.
                        drop(p);
                        std::thread::yield_now();
                    }
                }
            }
        }
    }

    /// Device `device` failed: its chunk in flight and everything still assigned to it go to
    /// the others, and it takes nothing more. Returns what it gave back.
    pub fn fail(&self, device: usize) -> Vec<Chunk> {
        let mut p = self.pool.lock().unwrap_or_else(PoisonError::into_inner);
        p.retired[device] = true;
        let mut back: Vec<Chunk> = p.in_flight[device].take().into_iter().collect();
        back.extend(p.assigned[device].drain(..));
        p.orphans.extend(back.iter().copied());
        p.given_back[device].extend(back.iter().copied());
        self.changed.notify_all();
        back
    }

    /// What device `device` gave back when it failed (nothing if it did not).
    pub fn given_back(&self, device: usize) -> Vec<Chunk> {
        let p = self.pool.lock().unwrap_or_else(PoisonError::into_inner);
        p.given_back[device].clone()
    }

    /// Work no device is left to do (every device that could has failed).
    pub fn unfinished(&self) -> Vec<Chunk> {
        let p = self.pool.lock().unwrap_or_else(PoisonError::into_inner);
        let mut left: Vec<Chunk> = p.orphans.iter().copied().collect();
        left.extend(p.assigned.iter().flatten().copied());
        if p.next < p.end {
            left.push(Chunk {
                offset: p.next,
                size: p.end - p.next,
                overlap: 0,
            });
        }
        left
    }
}

impl Pool {
    /// The next chunk of the shared range for `device`: `Ok(None)` when there is none.
    fn cut_shared(&mut self, device: usize) -> Result<Option<Chunk>, Declined> {
        let remaining = self.end.saturating_sub(self.next);
        if remaining == 0 {
            return Ok(None);
        }
        let g = self.granule;
        let size = match &self.cut {
            Cut::None => return Ok(None),
            Cut::Equal(size) => *size,
            Cut::Guided { speeds, least, k } => {
                let total: f64 = speeds
                    .iter()
                    .zip(&self.retired)
                    .filter(|(_, &r)| !r)
                    .map(|(s, _)| s)
                    .sum();
                let share = remaining as f64 * speeds[device] / (k * total);
                (share.floor() as u64).max(least[device])
            }
        };
        let size = (size / g * g).max(g).min(remaining);
        if let Cut::Guided { speeds, .. } = &self.cut {
            // A slow device takes no chunk it would still compute after the others have done
            // everything that is left: the run would wait for it. It waits instead (a chunk may
            // still come back); the fastest device never declines, so the work always ends.
            let others = (0..speeds.len()).filter(|&j| j != device && !self.retired[j]);
            let fastest = others.clone().all(|j| speeds[j] <= speeds[device]);
            let others: f64 = others.map(|j| speeds[j]).sum();
            if !fastest && size as f64 / speeds[device] > remaining as f64 / others {
                return Err(Declined);
            }
        }
        let c = Chunk {
            offset: self.next,
            size,
            overlap: 0,
        };
        self.next += size;
        Ok(Some(c))
    }
}

/// A device that should leave what is left to faster ones.
struct Declined;

/// A dispenser for a host program that drives its own devices (the C API and Python): `global`
/// items, device `i` launching work-groups of `wgs[i]` items and taking `times_ms[i]` for the
/// whole range alone. `static` hands out the plan of eq. 4-9; `dynamic` at most `chunks` equal
/// chunks (0: 8 per device); `hguided` chunks sized by the devices' speeds, at least a granule.
pub fn for_program(
    scheduler: Scheduler,
    global: u64,
    wgs: &[u64],
    times_ms: &[f64],
    chunks: u64,
) -> Result<Dispenser, String> {
    let devices: Vec<crate::Device> = wgs
        .iter()
        .zip(times_ms)
        .map(|(&wg, &time_ms)| crate::Device { wg, time_ms })
        .collect();
    // The planner checks the sizes and times (and says which is wrong).
    let plan = crate::plan(global, &devices).map_err(|e| e.to_string())?;
    let n = wgs.len();
    if scheduler == Scheduler::Static {
        return Ok(Dispenser::parts(n, &plan.parts, global));
    }
    // The global size is a multiple of every work-group size (the planner checked), so of
    // their least common multiple too.
    let g = granule(wgs).ok_or("the work-group sizes have no common multiple in 64 bits")?;
    let cut = match scheduler {
        Scheduler::Dynamic => Cut::Equal(equal_chunk(global, g, (chunks > 0).then_some(chunks), n)),
        _ => Cut::Guided {
            speeds: times_ms.iter().map(|t| 1.0 / t).collect(),
            least: vec![g; n],
            k: HGUIDED_K,
        },
    };
    Ok(Dispenser::new(vec![Vec::new(); n], 0, global, g, cut))
}

/// The size of `dynamic`'s equal chunks: at most `chunks` of them (default 8 per device) in
/// whole granules, all but the last of one size.
pub fn equal_chunk(global: u64, granule: u64, chunks: Option<u64>, devices: usize) -> u64 {
    let chunks = chunks.unwrap_or(8 * devices as u64).max(1);
    (global / granule).div_ceil(chunks).max(1) * granule
}

/// Least common multiple of work-group sizes, or None if it overflows.
pub fn granule(wgs: &[u64]) -> Option<u64> {
    fn gcd(a: u64, b: u64) -> u64 {
        if b == 0 {
            a
        } else {
            gcd(b, a % b)
        }
    }
    wgs.iter()
        .try_fold(1u64, |l, &w| (l / gcd(l, w.max(1))).checked_mul(w.max(1)))
}

/// The least chunk of a device under `hguided`: enough whole granules that its fixed cost per
/// chunk (`chunk_cost_ms`, a launch and its synchronisation) is at most a tenth of the chunk's
/// work, given it computes all `global` items in `whole_ms`; never more than a fair share of
/// the `devices` running.
pub fn least_chunk(
    global: u64,
    granule: u64,
    whole_ms: f64,
    chunk_cost_ms: f64,
    devices: usize,
) -> u64 {
    let per_item = whole_ms / global as f64;
    let items = if per_item > 0.0 {
        (10.0 * chunk_cost_ms / per_item).ceil()
    } else {
        0.0
    };
    let granules = (items / granule as f64).ceil().max(1.0);
    // Not more than a device's fair share of the whole: beyond, the first device to ask would
    // take everything.
    let fair = (global / devices.max(1) as u64 / granule).max(1) * granule;
    (granules as u64 * granule).min(fair)
}

/// What a co-execution is expected to take before it runs, from each device's measured time
/// for the whole range alone, its fixed cost per run, and the cost of running together.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Prediction {
    /// The predicted time of the co-execution.
    pub ms: f64,
    /// The devices worth using: those whose fixed cost is less than that time.
    pub devices: Vec<usize>,
    /// The best single device's time over the predicted time.
    pub speedup: f64,
    /// Co-executing is expected to beat the best device alone.
    pub pays: bool,
    pub reason: String,
}

/// Each device computes at its own rate once its fixed cost is paid: device `i` finishes its
/// share `s_i` of the work at `f_i + s_i · (t_i − f_i)`, with `t_i` its whole-range time and
/// `f_i` its fixed cost. Every device finishing together at `T` with `Σ s_i = 1` gives
/// `T = (1 + Σ f_i / w_i) / Σ 1 / w_i` over `w_i = t_i − f_i`; a device whose fixed cost is not
/// below `T` only slows the others and is left out, as is one that cannot finish even the least
/// chunk (`granule_share` of the work) by then. Running together costs `together_ms` more (the
/// threads' synchronisation, the gather, devices contending for the host's memory), paid once
/// the work is split at all.
pub fn predict(
    whole_ms: &[f64],
    fixed_ms: &[f64],
    together_ms: f64,
    granule_share: f64,
) -> Prediction {
    let best = whole_ms
        .iter()
        .copied()
        .enumerate()
        .min_by(|a, b| a.1.total_cmp(&b.1))
        .expect("at least one device");
    let work: Vec<f64> = whole_ms
        .iter()
        .zip(fixed_ms)
        .map(|(t, f)| (t - f).max(t * 1e-3))
        .collect();
    let fixed: Vec<f64> = fixed_ms
        .iter()
        .zip(whole_ms)
        .map(|(f, t)| f.min(*t))
        .collect();
    // Devices in order of fixed cost: the best set is a prefix of it.
    let mut order: Vec<usize> = (0..whole_ms.len()).collect();
    order.sort_by(|&a, &b| fixed[a].total_cmp(&fixed[b]));
    let mut chosen = (f64::INFINITY, Vec::new());
    for k in 1..=order.len() {
        let set = &order[..k];
        let rate: f64 = set.iter().map(|&i| 1.0 / work[i]).sum();
        let t = (1.0 + set.iter().map(|&i| fixed[i] / work[i]).sum::<f64>()) / rate;
        let useful = |i: usize| fixed[i] + granule_share * work[i] < t;
        if set.iter().all(|&i| useful(i)) && t + together_ms < chosen.0 {
            chosen = (t + together_ms, set.to_vec());
        }
    }
    let (mut ms, mut devices) = chosen;
    if devices.len() < 2 || ms >= best.1 {
        ms = best.1;
        devices = vec![best.0];
    }
    devices.sort_unstable();
    let pays = devices.len() > 1;
    let speedup = best.1 / ms;
    let reason = if pays {
        format!(
            "devices {:?} together are expected to take {ms:.4} ms, {speedup:.2}x device {} alone ({:.4} ms)",
            devices, best.0, best.1
        )
    } else {
        format!(
            "device {} alone ({:.4} ms) is expected to be fastest: what the others would take off it is less than their fixed costs ({}) and the {together_ms:.4} ms of running together",
            best.0,
            best.1,
            fixed
                .iter()
                .enumerate()
                .filter(|&(i, _)| i != best.0)
                .map(|(i, f)| format!("device {i} {f:.4} ms"))
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    Prediction {
        ms,
        devices,
        speedup,
        pays,
        reason,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    /// Every chunk one device takes, until it is done.
    fn drain(d: &Dispenser, device: usize) -> Vec<Chunk> {
        let mut got = Vec::new();
        while let Some(c) = d.take(device) {
            got.push(c);
        }
        got
    }

    fn covered_once(chunks: &[Chunk], global: u64) {
        let mut v: Vec<&Chunk> = chunks.iter().collect();
        v.sort_by_key(|c| c.offset);
        let mut at = 0;
        for c in v {
            assert_eq!(c.offset, at, "{chunks:?}");
            at += c.size;
        }
        assert_eq!(at, global);
    }

    #[test]
    fn equal_chunks_are_whole_granules_and_cover_the_range_once() {
        let d = Dispenser::new(vec![vec![], vec![]], 0, 1000, 8, Cut::Equal(300));
        let mut all = drain(&d, 0);
        assert_eq!(
            all.iter().map(|c| c.size).collect::<Vec<_>>(),
            [296, 296, 296, 112]
        );
        all.extend(drain(&d, 1));
        covered_once(&all, 1000);
        assert!(d.unfinished().is_empty());
    }

    #[test]
    fn guided_chunks_shrink_and_follow_each_devices_speed() {
        // Device 0 three times as fast as device 1.
        let cut = Cut::Guided {
            speeds: vec![3.0, 1.0],
            least: vec![16, 16],
            k: HGUIDED_K,
        };
        let d = Dispenser::new(vec![vec![], vec![]], 0, 4096, 16, cut);
        let first = d.try_take(0);
        let second = d.try_take(1);
        // 4096 · 3/8 = 1536 for the fast one; then (4096 − 1536) · 1/8 = 320 for the slow one.
        assert_eq!(
            first,
            Take::Chunk(Chunk {
                offset: 0,
                size: 1536,
                overlap: 0
            })
        );
        assert_eq!(
            second,
            Take::Chunk(Chunk {
                offset: 1536,
                size: 320,
                overlap: 0
            })
        );
        let mut sizes = vec![];
        let mut all = vec![];
        while let Take::Chunk(c) = d.try_take(0) {
            sizes.push(c.size);
            all.push(c);
        }
        assert!(sizes.windows(2).all(|w| w[0] >= w[1]), "{sizes:?}");
        assert_eq!(*sizes.last().unwrap(), 16);
        all.push(Chunk {
            offset: 0,
            size: 1536,
            overlap: 0,
        });
        all.push(Chunk {
            offset: 1536,
            size: 320,
            overlap: 0,
        });
        assert_eq!(d.try_take(1), Take::Done);
        covered_once(&all, 4096);
    }

    #[test]
    fn a_slow_device_leaves_the_tail_to_the_fast_ones() {
        // A device 100x slower than two others takes a chunk only while the two others would
        // need longer for everything left than it needs for that chunk.
        let global = 1u64 << 16;
        let cut = Cut::Guided {
            speeds: vec![1.0, 1.0, 0.01],
            least: vec![64, 64, 64],
            k: HGUIDED_K,
        };
        let d = Dispenser::new(vec![vec![]; 3], 0, global, 64, cut);
        let (mut slow, mut all) = (vec![], vec![]);
        while let Take::Chunk(c) = d.try_take(0) {
            all.push(c);
            if let Take::Chunk(c) = d.try_take(2) {
                slow.push(c);
                all.push(c);
            }
        }
        assert!(!slow.is_empty());
        for c in &slow {
            let left = global - c.offset;
            assert!(
                c.size as f64 / 0.01 <= left as f64 / 2.0,
                "took {c:?} with {left} left"
            );
        }
        // Most of the range, and all of its tail, went to the fast devices.
        assert!(slow.iter().map(|c| c.size).sum::<u64>() < global / 100);
        assert_eq!(d.try_take(1), Take::Done);
        assert_eq!(d.try_take(2), Take::Done);
        covered_once(&all, global);
        // Alone with the slow device, a fast one that fails leaves everything to it.
        let cut = Cut::Guided {
            speeds: vec![1.0, 0.01],
            least: vec![64, 64],
            k: HGUIDED_K,
        };
        let d = Dispenser::new(vec![vec![]; 2], 0, 1024, 64, cut);
        let first = d.take(0).unwrap();
        assert_eq!(d.try_take(1), Take::Wait);
        assert_eq!(d.fail(0), vec![first]);
        let mut rest = vec![];
        while let Some(c) = d.take(1) {
            rest.push(c);
        }
        covered_once(&rest, 1024);
    }

    #[test]
    fn a_failed_devices_chunks_go_to_the_others_and_nothing_is_lost() {
        let parts = [
            crate::Part {
                device: 0,
                offset: 0,
                size: 64,
                work_groups: 4,
                factor: 0.5,
                optimal_factor: 0.5,
            },
            crate::Part {
                device: 1,
                offset: 64,
                size: 64,
                work_groups: 4,
                factor: 0.5,
                optimal_factor: 0.5,
            },
        ];
        let d = Arc::new(Dispenser::parts(2, &parts, 128));
        let mine = d.take(1).unwrap();
        // Device 0 waits while device 1's part may still come back ...
        assert_eq!(
            d.try_take(0),
            Take::Chunk(Chunk {
                offset: 0,
                size: 64,
                overlap: 0
            })
        );
        assert_eq!(d.try_take(0), Take::Wait);
        let waiter = {
            let d = Arc::clone(&d);
            std::thread::spawn(move || drain(&d, 0))
        };
        std::thread::sleep(std::time::Duration::from_millis(50));
        // ... and it does: device 1 fails.
        assert_eq!(d.fail(1), vec![mine]);
        assert_eq!(waiter.join().unwrap(), vec![mine]);
        assert_eq!(d.try_take(1), Take::Done);
        assert!(d.unfinished().is_empty());
    }

    #[test]
    fn when_every_device_failed_the_unfinished_work_is_named() {
        let d = Dispenser::new(vec![vec![]], 0, 100, 10, Cut::Equal(40));
        let c = d.take(0).unwrap();
        d.fail(0);
        let left = d.unfinished();
        assert_eq!(
            left,
            vec![
                c,
                Chunk {
                    offset: 40,
                    size: 60,
                    overlap: 0
                }
            ]
        );
    }

    #[test]
    fn static_parts_mark_what_an_earlier_part_also_computes() {
        let parts = [
            crate::Part {
                device: 1,
                offset: 96,
                size: 32,
                work_groups: 1,
                factor: 0.25,
                optimal_factor: 0.25,
            },
            crate::Part {
                device: 0,
                offset: 0,
                size: 100,
                work_groups: 25,
                factor: 0.75,
                optimal_factor: 0.75,
            },
        ];
        let d = Dispenser::parts(2, &parts, 128);
        assert_eq!(
            d.take(1),
            Some(Chunk {
                offset: 96,
                size: 32,
                overlap: 4
            })
        );
        assert_eq!(
            d.take(0),
            Some(Chunk {
                offset: 0,
                size: 100,
                overlap: 0
            })
        );
    }

    #[test]
    fn a_program_gets_each_scheduler_by_name_and_bad_input_is_named() {
        let take_all = |d: &Dispenser| {
            let mut v = Vec::new();
            loop {
                match (d.try_take(0), d.try_take(1)) {
                    (Take::Done, Take::Done) => return v,
                    (a, b) => v.extend([a, b].into_iter().filter_map(|t| match t {
                        Take::Chunk(c) => Some(c),
                        _ => None,
                    })),
                }
            }
        };
        for name in ["static", "dynamic", "hguided"] {
            let d = for_program(name.parse().unwrap(), 1024, &[16, 32], &[2.0, 1.0], 4).unwrap();
            let chunks = take_all(&d);
            covered_once(&chunks, 1024);
            if name == "dynamic" {
                assert_eq!(chunks.len(), 4);
            }
        }
        assert!("auto"
            .parse::<Scheduler>()
            .unwrap_err()
            .contains("name one of"));
        let err = for_program(Scheduler::Dynamic, 1000, &[16, 24], &[1.0, 1.0], 0)
            .err()
            .unwrap();
        assert!(
            err.contains("does not divide the global size 1000"),
            "{err}"
        );
        assert!(for_program(Scheduler::Hguided, 1024, &[16], &[-1.0], 0).is_err());
    }

    #[test]
    fn granule_is_the_least_common_multiple() {
        assert_eq!(granule(&[64, 96, 128]), Some(384));
        assert_eq!(granule(&[32]), Some(32));
        assert_eq!(granule(&[u64::MAX, u64::MAX - 1]), None);
    }

    #[test]
    fn the_least_chunk_keeps_per_chunk_costs_small() {
        // 1M items in 10 ms: 1e-5 ms per item; a 0.02 ms chunk cost wants 20,000 items.
        assert_eq!(least_chunk(1 << 20, 256, 10.0, 0.02, 2), 20992);
        // A chunk cost as large as the work: a fair share, not the whole range.
        assert_eq!(least_chunk(1024, 256, 10.0, 100.0, 2), 512);
        assert_eq!(least_chunk(1024, 256, 10.0, 100.0, 1), 1024);
        assert_eq!(least_chunk(1024, 256, 10.0, 0.0, 2), 256);
    }

    #[test]
    fn prediction_leaves_out_devices_whose_fixed_cost_exceeds_their_gain() {
        // Two equal devices of 10 ms with 1 ms of fixed cost: (1 + 2·1/9) / (2/9) = 5.5 ms.
        let p = predict(&[10.0, 10.0], &[1.0, 1.0], 0.0, 0.01);
        assert!((p.ms - 5.5).abs() < 1e-9, "{p:?}");
        assert_eq!(p.devices, [0, 1]);
        assert!(p.pays);
        // A slow device whose fixed cost is most of the run is not worth adding.
        let p = predict(&[10.0, 12.0], &[0.1, 11.0], 0.0, 0.01);
        assert_eq!(p.devices, [0]);
        assert!(!p.pays);
        assert_eq!(p.ms, 10.0);
        assert!(p.reason.contains("device 0 alone"), "{}", p.reason);
        // A small problem: halving 0.4 ms of work saves less than the 0.3 ms of running together.
        let p = predict(&[1.0, 1.0], &[0.6, 0.6], 0.3, 0.01);
        assert!(!p.pays, "{p:?}");
        let p = predict(&[1.0, 1.0], &[0.6, 0.6], 0.1, 0.01);
        assert!(p.pays && (p.ms - 0.9).abs() < 1e-9, "{p:?}");
        // Two GPUs of 10 ms and a CPU of 1000 ms whose least chunk (1%) takes 10 ms: no help.
        let p = predict(&[10.0, 10.0, 1000.0], &[0.5, 0.5, 0.5], 0.0, 0.01);
        assert_eq!(p.devices, [0, 1]);
    }
}
