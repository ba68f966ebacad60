//! A session's programs by build options: built from source when first asked for, or loaded from
//! program binaries, now ([`Programs::add_binary`]) or ahead on loader threads
//! ([`Programs::preload`]) while the session's queue runs kernels. Asking for a program that is
//! being loaded waits for it; a binary the driver rejects leaves the program to be built from
//! source.

use crate::{api, build_error, is_build_code, ClError};
use opencl3::context::Context;
use opencl3::device::Device;
use opencl3::program::Program;
use std::collections::HashMap;
use std::sync::mpsc::{self, Sender};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;

/// Threads that load program binaries ahead of use.
const LOADERS: usize = 4;

/// A built program, or the error of its build (remembered so that it is not tried again).
pub(crate) type Built = Arc<Result<Program, ClError>>;

enum Slot {
    Loading,
    Ready(Built),
}

struct Shared {
    slots: Mutex<HashMap<String, Slot>>,
    changed: Condvar,
    context: Context,
    device: Device,
    device_name: String,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, HashMap<String, Slot>> {
        self.slots.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Loads a binary now; `None` where the driver rejects it.
    fn load(&self, options: &str, binary: &[u8]) -> Option<Program> {
        // SAFETY: one binary for the context's one device, as clCreateProgramWithBinary needs.
        let mut program =
            unsafe { Program::create_from_binary(&self.context, &[self.device.id()], &[binary]) }
                .ok()?;
        program.build(&[self.device.id()], options).ok()?;
        Some(program)
    }
}

struct Loader {
    jobs: Sender<(String, Vec<u8>)>,
    threads: Vec<JoinHandle<()>>,
}

/// The programs of one session (one context, one device).
pub(crate) struct Programs {
    shared: Arc<Shared>,
    loader: Option<Loader>,
}

impl Programs {
    pub fn new(context: Context, device: Device, device_name: String) -> Programs {
        Programs {
            shared: Arc::new(Shared {
                slots: Mutex::new(HashMap::new()),
                changed: Condvar::new(),
                context,
                device,
                device_name,
            }),
            loader: None,
        }
    }

    pub fn context(&self) -> &Context {
        &self.shared.context
    }

    /// The program built with `options`: waited for where it is being loaded, built from
    /// `source` where nobody has it yet.
    pub fn get(&self, source: &str, options: &str) -> Built {
        let mut slots = self.shared.lock();
        loop {
            match slots.get(options) {
                Some(Slot::Ready(p)) => return Arc::clone(p),
                Some(Slot::Loading) => {
                    slots = self
                        .shared
                        .changed
                        .wait(slots)
                        .unwrap_or_else(|p| p.into_inner())
                }
                None => break,
            }
        }
        drop(slots);
        let built = Arc::new(self.build(source, options));
        self.shared
            .lock()
            .insert(options.to_string(), Slot::Ready(Arc::clone(&built)));
        built
    }

    /// Builds `source` with `options` now, keeping nothing.
    pub fn build(&self, source: &str, options: &str) -> Result<Program, ClError> {
        let s = &self.shared;
        let id = s.device.id();
        let mut program = Program::create_from_source(&s.context, source)
            .map_err(api("clCreateProgramWithSource"))?;
        match program.build(&[id], options) {
            Ok(()) => Ok(program),
            Err(e) if is_build_code(e.0) => {
                let log = program.get_build_log(id).unwrap_or_default();
                Err(build_error(&s.device_name, options, e.0, log))
            }
            Err(e) => Err(api("clBuildProgram")(e)),
        }
    }

    /// Loads `binary` for `options` now, unless the program is there or on its way; whether the
    /// driver took it.
    pub fn add_binary(&self, options: &str, binary: &[u8]) -> bool {
        if self.shared.lock().contains_key(options) {
            return false;
        }
        match self.shared.load(options, binary) {
            Some(p) => {
                self.shared
                    .lock()
                    .insert(options.to_string(), Slot::Ready(Arc::new(Ok(p))));
                true
            }
            None => false,
        }
    }

    /// Loads `binary` for `options` on a loader thread, unless the program is there or on its
    /// way.
    pub fn preload(&mut self, options: &str, binary: Vec<u8>) {
        {
            let mut slots = self.shared.lock();
            if slots.contains_key(options) {
                return;
            }
            slots.insert(options.to_string(), Slot::Loading);
        }
        let shared = &self.shared;
        let loader = self.loader.get_or_insert_with(|| {
            let (jobs, queue) = mpsc::channel::<(String, Vec<u8>)>();
            let queue = Arc::new(Mutex::new(queue));
            let threads = (0..LOADERS)
                .map(|_| {
                    let (shared, queue) = (Arc::clone(shared), Arc::clone(&queue));
                    std::thread::spawn(move || loop {
                        let job = queue.lock().unwrap_or_else(|p| p.into_inner()).recv();
                        let Ok((options, binary)) = job else { return };
                        let loaded = shared.load(&options, &binary);
                        let mut slots = shared.lock();
                        match loaded {
                            Some(p) => slots.insert(options, Slot::Ready(Arc::new(Ok(p)))),
                            // Rejected: whoever asks builds it from source.
                            None => slots.remove(&options),
                        };
                        shared.changed.notify_all();
                    })
                })
                .collect();
            Loader { jobs, threads }
        });
        if loader.jobs.send((options.to_string(), binary)).is_err() {
            self.shared.lock().remove(options);
        }
    }

    /// Lets go of the program built with `options` (one being loaded stays).
    pub fn forget(&self, options: &str) {
        let mut slots = self.shared.lock();
        if matches!(slots.get(options), Some(Slot::Ready(_))) {
            slots.remove(options);
        }
    }

    pub fn len(&self) -> usize {
        self.shared.lock().len()
    }
}

impl Drop for Programs {
    fn drop(&mut self) {
        if let Some(loader) = self.loader.take() {
            drop(loader.jobs);
            for t in loader.threads {
                let _ = t.join();
            }
        }
    }
}
