//! The virtual clock: lanes per thread, devices and locks busy over intervals, a machine part
//! shared by every simulated process and a part per process.

use super::{Latencies, Nanos, Serial, ns};
use crate::threads::{self, PerThread};
use std::collections::{BTreeSet, HashMap};
use std::thread::ThreadId;

/// The kind of lock an expensive piece of driver work takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Lock {
    Init,
    Context,
    Map,
    Fault,
}

/// What one call did, for the clock: set by the call (or the default: a base cost, no device).
#[derive(Clone, Debug, Default)]
pub(crate) struct Cost {
    /// Nanoseconds.
    pub(crate) time: Nanos,
    /// Devices whose engines the call occupies.
    pub(crate) devices: Vec<usize>,
    /// The lock it takes, and on which devices (per-device scope).
    pub(crate) lock: Option<(Lock, Vec<usize>)>,
    /// A PTX load for this compute capability: costs the JIT the first time on the machine.
    pub(crate) ptx: Option<(i32, i32)>,
    /// Work queued on the devices' streams (a launch, an asynchronous copy or memset): the
    /// calling thread goes on after this many nanoseconds, the call's own cost, while the
    /// devices work on to the end of [`Cost::time`]. `None`: the thread waits for the end.
    pub(crate) queued: Option<Nanos>,
    /// The call starts no earlier than this (an event synchronisation: the event's time).
    pub(crate) not_before: Nanos,
    /// A fault that kills its process: its dead context on this device is torn down for this
    /// long from the fault's end, and contexts made there meanwhile are slower.
    pub(crate) teardown: Option<(usize, Nanos)>,
}

impl Cost {
    pub(crate) fn on(time: Nanos, devices: Vec<usize>) -> Cost {
        Cost { time, devices, ..Cost::default() }
    }

    pub(crate) fn locked(mut self, lock: Lock, devices: Vec<usize>) -> Cost {
        self.lock = Some((lock, devices));
        self
    }

    /// The same work queued: the calling thread pays only `own` of it.
    pub(crate) fn queued(mut self, own: Nanos) -> Cost {
        self.queued = Some(own.min(self.time));
        self
    }
}

/// When one resource (a device's engines, a lock) is busy: sorted, disjoint intervals. Work
/// takes the earliest gap that fits it from the time it is ready, so work that the simulator
/// happens to run later in real time can still go first in virtual time, as it would on the
/// machine (two processes each creating a context on the other's device first, say).
///
/// At most [`Busy::KEPT`] intervals are kept: past that, the two earliest merge, the gap between
/// them counted busy. A long-running program's bookkeeping stays bounded; only work ready that
/// far back in virtual time, behind thousands of later bookings, could be placed later than
/// the gap would have allowed.
#[derive(Clone, Debug, Default)]
pub(super) struct Busy(pub(super) Vec<(Nanos, Nanos)>);

impl Busy {
    pub(super) const KEPT: usize = 4096;

    /// The end of the first busy interval that `[at, at + len)` overlaps, if any.
    pub(super) fn conflict(&self, at: Nanos, len: Nanos) -> Option<Nanos> {
        let i = self.0.partition_point(|&(_, end)| end <= at);
        match self.0.get(i) {
            Some(&(start, end)) if start < at.saturating_add(len) || (len == 0 && start <= at) => Some(end),
            _ => None,
        }
    }

    /// Marks `[at, at + len)` busy (merged with the intervals it touches).
    pub(super) fn take(&mut self, at: Nanos, len: Nanos) {
        if len == 0 {
            return;
        }
        let end = at.saturating_add(len);
        let first = self.0.partition_point(|&(_, e)| e < at);
        let last = self.0.partition_point(|&(s, _)| s <= end);
        let (mut start, mut stop) = (at, end);
        if first < last {
            start = start.min(self.0[first].0);
            stop = stop.max(self.0[last - 1].1);
        }
        self.0.splice(first..last, [(start, stop)]);
        if self.0.len() > Busy::KEPT {
            let (merged_start, merged_end) = (self.0[0].0, self.0[1].1);
            self.0.splice(0..2, [(merged_start, merged_end)]);
        }
    }
}

/// The earliest time from `ready` at which `len` fits in every one of `resources`.
pub(super) fn fit(ready: Nanos, len: Nanos, resources: &[&Busy]) -> Nanos {
    let mut at = ready;
    loop {
        let moved = resources.iter().filter_map(|r| r.conflict(at, len)).max();
        match moved {
            Some(end) if end > at => at = end,
            _ => return at,
        }
    }
}

/// The part of the clock every process on the machine shares.
#[derive(Debug)]
pub(crate) struct Machine {
    pub(crate) model: Latencies,
    /// When each device's engines are busy.
    devices: Vec<Busy>,
    /// Per lock kind: per-device locks, and the machine-wide ones' slots ([`Serial::at_once`]).
    device_locks: HashMap<(Lock, usize), Busy>,
    machine_locks: HashMap<(Lock, u32), Busy>,
    /// Compute capabilities whose PTX was compiled by the JIT already.
    jitted: BTreeSet<(i32, i32)>,
    /// Per device: when faulted contexts are being torn down there.
    teardowns: Vec<Busy>,
}

impl Machine {
    pub(crate) fn new(model: Latencies, devices: usize) -> Machine {
        Machine {
            model,
            devices: vec![Busy::default(); devices],
            device_locks: HashMap::new(),
            machine_locks: HashMap::new(),
            jitted: BTreeSet::new(),
            teardowns: vec![Busy::default(); devices],
        }
    }

    /// Whether a context made on `device` over `[at, at + len)` overlaps a faulted context's
    /// teardown that slows it.
    fn beside_teardown(&self, device: usize, at: Nanos, len: Nanos) -> bool {
        match self.model.fault_exit_slows_every_gpu {
            true => self.teardowns.iter().any(|t| t.conflict(at, len).is_some()),
            false => self.teardowns.get(device).is_some_and(|t| t.conflict(at, len).is_some()),
        }
    }

    fn serial(&self, lock: Lock) -> Serial {
        match lock {
            Lock::Init => self.model.init_serial,
            Lock::Context => self.model.context_serial,
            Lock::Map => self.model.map_serial,
            Lock::Fault => self.model.fault_serial,
        }
    }
}

/// One simulated process's part of the clock: its threads' lanes and its own locks.
#[derive(Clone, Debug)]
pub(crate) struct ProcessTime {
    /// When the process started (its first lane's time).
    origin: Nanos,
    pub(super) lanes: PerThread<Nanos>,
    /// The end of the latest call, in the order calls were made: where a new lane starts.
    pub(super) last_end: Nanos,
    /// The latest time any lane reached.
    pub(super) latest: Nanos,
    process_locks: HashMap<Lock, Busy>,
    /// Per device: when the work this process queued on it ends (its streams are one queue
    /// here, an approximation that only makes work on one device wait longer).
    queues: Vec<Nanos>,
    /// Devices whose primary context this process has created.
    pub(crate) contexts: Vec<bool>,
}

/// A resource a call needs, named so that its busy intervals can be found and updated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Resource {
    Device(usize),
    DeviceLock(Lock, usize),
    ProcessLock(Lock),
    /// One slot of a machine-wide lock.
    MachineLock(Lock, u32),
}

impl ProcessTime {
    pub(crate) fn new(origin: Nanos, devices: usize) -> ProcessTime {
        ProcessTime {
            origin,
            lanes: PerThread::default(),
            last_end: origin,
            latest: origin,
            process_locks: HashMap::new(),
            queues: vec![origin; devices],
            contexts: vec![false; devices],
        }
    }

    /// A child process started by the calling thread now, after `start` nanoseconds of
    /// process start-up: no lane, lock or context of this one.
    pub(crate) fn child(&self, start: Nanos) -> ProcessTime {
        ProcessTime::new(self.now().saturating_add(start), self.contexts.len())
    }

    /// The calling thread's time.
    pub(crate) fn now(&self) -> Nanos {
        self.lanes.get(threads::current()).copied().unwrap_or(self.last_end)
    }

    pub(crate) fn set_now(&mut self, at: Nanos) {
        *self.lanes.get_or_insert_with(threads::current(), || at) = at;
        self.latest = self.latest.max(at);
    }

    /// When `device`'s queue reaches what the calling thread queues now (an event's time).
    pub(crate) fn reached(&self, device: usize) -> Nanos {
        self.now().max(self.queues.get(device).copied().unwrap_or(0))
    }

    /// Work queued on `device` from now on starts no earlier than `at` (a stream waiting
    /// for an event).
    pub(crate) fn wait_until(&mut self, device: usize, at: Nanos) {
        if let Some(queue) = self.queues.get_mut(device) {
            *queue = (*queue).max(at);
        }
    }

    /// The latest time anything in this process reached.
    pub(crate) fn latest(&self) -> Nanos {
        self.latest.max(self.origin)
    }

    fn busy<'a>(&'a self, machine: &'a Machine, r: Resource) -> Option<&'a Busy> {
        match r {
            Resource::Device(d) => machine.devices.get(d),
            Resource::DeviceLock(lock, d) => machine.device_locks.get(&(lock, d)),
            Resource::ProcessLock(lock) => self.process_locks.get(&lock),
            Resource::MachineLock(lock, slot) => machine.machine_locks.get(&(lock, slot)),
        }
    }

    fn take(&mut self, machine: &mut Machine, r: Resource, at: Nanos, len: Nanos) {
        let busy = match r {
            Resource::Device(d) => match machine.devices.get_mut(d) {
                Some(busy) => busy,
                None => return,
            },
            Resource::DeviceLock(lock, d) => machine.device_locks.entry((lock, d)).or_default(),
            Resource::ProcessLock(lock) => self.process_locks.entry(lock).or_default(),
            Resource::MachineLock(lock, slot) => machine.machine_locks.entry((lock, slot)).or_default(),
        };
        busy.take(at, len);
    }

    /// Runs one call of `cost` on the calling thread: it takes the earliest time from the
    /// lane's (and from the end of the work queued on its devices, and `not_before`) at
    /// which its devices and its locks are all free; all of them are busy until its end, where
    /// the lane moves, unless the work is queued: then the lane moves by the call's own cost.
    pub(crate) fn advance(&mut self, machine: &mut Machine, cost: &Cost) {
        let mut time = cost.time;
        if let Some(cc) = cost.ptx
            && machine.jitted.insert(cc)
        {
            time = ns(machine.model.module_ptx_jit_us);
        }
        // Most calls occupy no device and take no lock: only the lane moves.
        if cost.devices.is_empty() && cost.lock.is_none() {
            let now = self.now();
            return self.finish(now, now.max(cost.not_before).saturating_add(time), cost.queued);
        }
        let mut needs: Vec<Resource> = cost.devices.iter().map(|&d| Resource::Device(d)).collect();
        let mut slots = None;
        if let Some((lock, devices)) = &cost.lock {
            let serial = machine.serial(*lock);
            if serial.device {
                needs.extend(devices.iter().map(|&d| Resource::DeviceLock(*lock, d)));
            }
            if serial.process {
                needs.push(Resource::ProcessLock(*lock));
            }
            if serial.machine {
                slots = Some((*lock, serial.at_once.max(1)));
            }
        }
        let now = self.now();
        let queue = |d: &usize| self.queues.get(*d).copied().unwrap_or(0);
        let ready = cost.devices.iter().map(queue).fold(now.max(cost.not_before), Nanos::max);
        let start_with = |extra: Option<Resource>| {
            let sets: Vec<&Busy> = needs.iter().chain(&extra).filter_map(|&r| self.busy(machine, r)).collect();
            fit(ready, time, &sets)
        };
        // A machine-wide lock: the slot free soonest (the lowest of equals).
        let (start, slot) = match slots {
            None => (start_with(None), None),
            Some((lock, n)) => (0..n)
                .map(|i| (start_with(Some(Resource::MachineLock(lock, i))), Some(Resource::MachineLock(lock, i))))
                .min_by_key(|&(at, _)| at)
                .unwrap_or((ready, None)),
        };
        // A context made beside a faulted context's teardown is slower: priced again, and
        // placed again at the longer length (never earlier than the first fit).
        let mut start = start;
        if let Some((Lock::Context, devices)) = &cost.lock {
            let slower = ns(machine.model.context_beside_fault_exit_us);
            if slower > time && devices.iter().any(|&d| machine.beside_teardown(d, start, time)) {
                time = slower;
                let sets: Vec<&Busy> = needs.iter().chain(&slot).filter_map(|&r| self.busy(machine, r)).collect();
                start = fit(start, time, &sets);
            }
        }
        needs.extend(slot);
        for &r in &needs {
            self.take(machine, r, start, time);
        }
        let end = start.saturating_add(time);
        if let Some((device, len)) = cost.teardown
            && let Some(t) = machine.teardowns.get_mut(device)
        {
            t.take(end, len);
        }
        for &d in &cost.devices {
            if let Some(queue) = self.queues.get_mut(d) {
                *queue = (*queue).max(end);
            }
        }
        self.finish(now, end, cost.queued);
    }

    /// [`ProcessTime::advance`] for a call `time` long that occupies no device, takes no lock and
    /// waits for nothing ([`super::LaneCosts`]): only the calling thread's lane moves, found once.
    /// `thread` is the caller, its id read once per call.
    pub(crate) fn pass_on(&mut self, thread: ThreadId, time: Nanos) {
        let fresh = self.last_end;
        let lane = self.lanes.get_or_insert_with(thread, || fresh);
        let end = lane.saturating_add(time);
        *lane = end;
        self.latest = self.latest.max(end);
        self.last_end = end;
    }

    /// A call that began at `now` on the calling thread's lane ends at `end`; its lane moves
    /// there, or only by `queued`, the call's own cost, when its work is queued.
    fn finish(&mut self, now: Nanos, end: Nanos, queued: Option<Nanos>) {
        self.latest = self.latest.max(end);
        let lane = queued.map_or(end, |own| now.saturating_add(own));
        self.set_now(lane);
        self.last_end = lane;
    }
}
