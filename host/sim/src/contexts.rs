//! Contexts: each device's primary context, ordinary ones (`cuCtxCreate`), each thread's
//! context stack, and legacy peer access between devices.
//!
//! What a context makes (modules, streams, events, `cuMemAlloc` memory) is recorded with the
//! context's handle, so that destroying an ordinary context, resetting a primary one or
//! releasing its last retain takes exactly those things away (`State::tear_down`).

use crate::threads::{self, PerThread};
use peerpool::CudaCode;
use std::collections::{HashMap, HashSet};
use std::thread::ThreadId;

/// One device's primary context.
#[derive(Clone)]
struct Primary {
    handle: u64,
    retains: u32,
    flags: u32,
}

/// What makes `cuCtxCreate` contexts and every thread's stack.
#[derive(Clone, Default)]
pub(super) struct Contexts {
    primary: Vec<Primary>,
    /// Live ordinary contexts: handle to device.
    ordinary: HashMap<u64, usize>,
    /// Ordinary contexts destroyed while another thread still had them current.
    destroyed: HashSet<u64>,
    stacks: PerThread<Vec<u64>>,
    /// Legacy peer access enabled from one device's contexts to another's memory.
    peers: HashSet<(usize, usize)>,
}

impl Contexts {
    /// One primary context per device, with these handles; none retained.
    pub(super) fn new(primary_handles: Vec<u64>) -> Contexts {
        let primary = primary_handles.into_iter().map(|handle| Primary { handle, retains: 0, flags: 0 }).collect();
        Contexts { primary, ..Contexts::default() }
    }

    /// The device of a live context (primary whether retained or not, or ordinary).
    pub(super) fn device_of(&self, handle: u64) -> Option<usize> {
        self.primary.iter().position(|c| c.handle == handle).or_else(|| self.ordinary.get(&handle).copied())
    }

    /// `thread`'s current context (the caller's, its id read once per call).
    pub(super) fn current_of(&self, thread: ThreadId) -> Option<u64> {
        self.stacks.get(thread).and_then(|s| s.last()).copied()
    }

    /// `thread`'s current context's device (the caller's): `CUDA_ERROR_INVALID_CONTEXT` when
    /// there is none or it is a primary context nobody retains, `CUDA_ERROR_CONTEXT_IS_DESTROYED`
    /// when another thread destroyed it.
    pub(super) fn current_device_of(&self, thread: ThreadId) -> Result<usize, CudaCode> {
        let Some(handle) = self.current_of(thread) else { return Err(CudaCode::CUDA_ERROR_INVALID_CONTEXT) };
        if self.destroyed.contains(&handle) {
            return Err(CudaCode::CUDA_ERROR_CONTEXT_IS_DESTROYED);
        }
        match self.primary.iter().position(|c| c.handle == handle) {
            Some(d) if self.primary[d].retains > 0 => Ok(d),
            Some(_) => Err(CudaCode::CUDA_ERROR_INVALID_CONTEXT),
            None => self.ordinary.get(&handle).copied().ok_or(CudaCode::CUDA_ERROR_INVALID_CONTEXT),
        }
    }

    /// `cuCtxSetCurrent`: replaces the top of the stack; `None` pops it.
    pub(super) fn set_current(&mut self, handle: Option<u64>) -> Result<(), CudaCode> {
        let known = handle.is_some_and(|h| self.device_of(h).is_some());
        let stack = self.stacks.get_or_insert_with(threads::current(), Vec::new);
        match handle {
            None => {
                stack.pop();
            }
            Some(h) if known => {
                stack.pop();
                stack.push(h);
            }
            Some(_) => return Err(CudaCode::CUDA_ERROR_INVALID_CONTEXT),
        }
        Ok(())
    }

    /// `cuCtxPushCurrent`.
    pub(super) fn push(&mut self, handle: u64) -> Result<(), CudaCode> {
        if self.device_of(handle).is_none() {
            return Err(CudaCode::CUDA_ERROR_INVALID_CONTEXT);
        }
        self.stacks.get_or_insert_with(threads::current(), Vec::new).push(handle);
        Ok(())
    }

    /// `cuCtxPopCurrent`: the popped context (`CUDA_ERROR_INVALID_CONTEXT` on an empty stack).
    pub(super) fn pop(&mut self) -> Result<u64, CudaCode> {
        self.stacks.get_mut(threads::current()).and_then(Vec::pop).ok_or(CudaCode::CUDA_ERROR_INVALID_CONTEXT)
    }

    /// One more retain of `device`'s primary context.
    pub(super) fn retain(&mut self, device: usize) -> u64 {
        let primary = &mut self.primary[device];
        primary.retains += 1;
        primary.handle
    }

    /// One retain fewer; `Ok(true)` when it was the last (the context is reset).
    pub(super) fn release(&mut self, device: usize) -> Result<bool, CudaCode> {
        let primary = &mut self.primary[device];
        if primary.retains == 0 {
            return Err(CudaCode::CUDA_ERROR_INVALID_CONTEXT);
        }
        primary.retains -= 1;
        Ok(primary.retains == 0)
    }

    /// `cuDevicePrimaryCtxReset`: every retain dropped; the context's handle.
    pub(super) fn reset(&mut self, device: usize) -> u64 {
        self.primary[device].retains = 0;
        self.primary[device].handle
    }

    pub(super) fn primary_handle(&self, device: usize) -> u64 {
        self.primary[device].handle
    }

    /// `(flags, active)` of `device`'s primary context.
    pub(super) fn primary_state(&self, device: usize) -> (u32, bool) {
        (self.primary[device].flags, self.primary[device].retains > 0)
    }

    pub(super) fn set_primary_flags(&mut self, device: usize, flags: u32) {
        self.primary[device].flags = flags;
    }

    /// A new ordinary context on `device`, pushed on the calling thread's stack.
    pub(super) fn create(&mut self, handle: u64, device: usize) {
        self.ordinary.insert(handle, device);
        self.stacks.get_or_insert_with(threads::current(), Vec::new).push(handle);
    }

    /// Ends an ordinary context: popped from the calling thread's stack; other threads that
    /// still have it current get `CUDA_ERROR_CONTEXT_IS_DESTROYED`.
    pub(super) fn destroy(&mut self, handle: u64) -> Result<(), CudaCode> {
        if self.ordinary.remove(&handle).is_none() {
            return Err(CudaCode::CUDA_ERROR_INVALID_CONTEXT);
        }
        if let Some(stack) = self.stacks.get_mut(threads::current()) {
            stack.retain(|&h| h != handle);
        }
        if self.stacks.values().any(|s| s.contains(&handle)) {
            self.destroyed.insert(handle);
        }
        Ok(())
    }

    pub(super) fn retained(&self) -> u32 {
        self.primary.iter().map(|c| c.retains).sum()
    }

    /// `cuCtxEnablePeerAccess` from `device` to `peer`'s memory.
    pub(super) fn enable_peer(&mut self, device: usize, peer: usize) -> Result<(), CudaCode> {
        match self.peers.insert((device, peer)) {
            true => Ok(()),
            false => Err(CudaCode::CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED),
        }
    }

    /// `cuCtxDisablePeerAccess`.
    pub(super) fn disable_peer(&mut self, device: usize, peer: usize) -> Result<(), CudaCode> {
        match self.peers.remove(&(device, peer)) {
            true => Ok(()),
            false => Err(CudaCode::CUDA_ERROR_PEER_ACCESS_NOT_ENABLED),
        }
    }

    /// Whether `device` may touch `peer`'s `cuMemAlloc` memory with kernels.
    pub(super) fn peer_enabled(&self, device: usize, peer: usize) -> bool {
        self.peers.contains(&(device, peer))
    }

    /// For a forked process: only the forking thread's stack survives.
    pub(super) fn keep_only_this_thread(&mut self) {
        let me = threads::current();
        self.stacks.retain(|t, _| *t == me);
    }
}
