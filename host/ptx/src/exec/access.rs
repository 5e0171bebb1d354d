//! A thread's accesses to memory: parameters, the block's shared memory and the thread's local
//! memory are the executor's own; global and constant memory, and generic addresses outside
//! the shared and local windows, go to the caller's [`Memory`]. Also what a block's threads
//! share ([`Shared`]): the launch, the caller's memory, the block's and its cluster's shared
//! memory, its clock and barrier counts.

use super::cluster::Cluster;
use super::{Fault, LOCAL_WINDOW, Launch, Memory, SHARED_WINDOW, Thread, Trap, TrapKind, arith, copy};
use crate::ir::{AtomOp, Space, Ty};

/// Whether `addr` is not a multiple of `len` (a mask for the widths of registers, no division).
fn misaligned(addr: u64, len: usize) -> bool {
    match len.is_power_of_two() {
        true => addr & (len as u64 - 1) != 0,
        false => !addr.is_multiple_of(len as u64),
    }
}

/// What a block's threads share, and what the launch gives them.
pub(super) struct Shared<'a, 'm> {
    pub(super) launch: &'a Launch<'a>,
    pub(super) memory: &'m mut dyn Memory,
    pub(super) bytes: Vec<u8>,
    /// Instructions run so far (what `%clock` reads).
    pub(super) clock: u64,
    /// `bar.arrive`s counted, by barrier.
    pub(super) arrived: [u32; 16],
    /// The block's cluster, and its rank there (whose shared memory is `bytes` for the turn).
    pub(super) cluster: &'m mut Cluster,
    pub(super) rank: usize,
}

/// What a thread's accesses need: its local memory, who it is, and what its block shares.
pub(super) struct Access<'s, 'a, 'm> {
    pub(super) local: &'s mut Vec<u8>,
    pub(super) who: Thread,
    pub(super) sh: &'s mut Shared<'a, 'm>,
}

impl Access<'_, '_, '_> {
    fn trap(&self, kind: TrapKind, line: u32, addr: u64) -> Trap {
        Trap { kind, line, who: self.who, addr }
    }

    /// The window and offset a generic address falls in.
    fn resolve(space: Space, addr: u64) -> (Space, u64) {
        match space {
            Space::Generic if addr >= LOCAL_WINDOW => (Space::Local, addr - LOCAL_WINDOW),
            Space::Generic if addr >= SHARED_WINDOW => (Space::Shared, addr - SHARED_WINDOW),
            Space::Generic => (Space::Global, addr),
            s => (s, addr),
        }
    }

    /// An access to the block's shared or the thread's local memory that falls outside it, at
    /// the generic address of `at` in its window: the caller's report can name the window.
    fn outside(&self, space: Space, at: u64, line: u32) -> Trap {
        let window = if space == Space::Shared { SHARED_WINDOW } else { LOCAL_WINDOW };
        self.trap(TrapKind::Fault(Fault::Illegal), line, window.wrapping_add(at))
    }

    /// The executor's own memory a space and offset name, if in range.
    fn own(&mut self, space: Space, at: u64, len: usize) -> Option<&mut [u8]> {
        let (rank, at) = match space {
            Space::Shared => super::cluster::split(at),
            _ => (None, at),
        };
        let at = usize::try_from(at).ok()?;
        let end = at.checked_add(len)?;
        match (space, rank) {
            // Another block of the cluster's shared memory, or its own by rank.
            (Space::Shared, Some(r)) if r != self.sh.rank => self.sh.cluster.bytes.get_mut(r)?.get_mut(at..end),
            (Space::Shared, _) => self.sh.bytes.get_mut(at..end),
            (Space::Local, _) => self.local.get_mut(at..end),
            _ => None,
        }
    }

    // `read` and `write` are always inlined: a group's accesses of shared and local memory go
    // through them lane by lane (`gather.rs`), and a call each costs reduce_shared ~5%.
    #[inline(always)]
    pub(super) fn read(&mut self, space: Space, addr: u64, out: &mut [u8], line: u32) -> Result<(), Trap> {
        if misaligned(addr, out.len()) {
            return Err(self.trap(TrapKind::Fault(Fault::Misaligned), line, addr));
        }
        let (space, at) = Self::resolve(space, addr);
        let who = self.who;
        match space {
            Space::Param => {
                let bytes = usize::try_from(at)
                    .ok()
                    .and_then(|a| self.sh.launch.shape.params.get(a..a.checked_add(out.len())?));
                copy(out, bytes.ok_or(self.trap(TrapKind::Fault(Fault::Illegal), line, addr))?);
                Ok(())
            }
            Space::Shared | Space::Local => {
                let trap = self.outside(space, at, line);
                copy(out, self.own(space, at, out.len()).ok_or(trap)?);
                Ok(())
            }
            _ => self.sh.memory.read(space, at, out, who).map_err(|f| self.trap(TrapKind::Fault(f), line, addr)),
        }
    }

    #[inline(always)]
    pub(super) fn write(&mut self, space: Space, addr: u64, data: &[u8], line: u32) -> Result<(), Trap> {
        if misaligned(addr, data.len()) {
            return Err(self.trap(TrapKind::Fault(Fault::Misaligned), line, addr));
        }
        let (space, at) = Self::resolve(space, addr);
        let who = self.who;
        match space {
            Space::Shared | Space::Local => {
                let trap = self.outside(space, at, line);
                copy(self.own(space, at, data.len()).ok_or(trap)?, data);
                Ok(())
            }
            Space::Global => self.sh.memory.write(at, data, who).map_err(|f| self.trap(TrapKind::Fault(f), line, addr)),
            // Parameters and constants are read-only.
            _ => Err(self.trap(TrapKind::Fault(Fault::Illegal), line, addr)),
        }
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn atomic(
        &mut self,
        space: Space,
        addr: u64,
        op: AtomOp,
        ty: Ty,
        b: u64,
        c: u64,
        line: u32,
    ) -> Result<u64, Trap> {
        let size = ty.bytes();
        if misaligned(addr, size) {
            return Err(self.trap(TrapKind::Fault(Fault::Misaligned), line, addr));
        }
        let mut old = 0u64;
        let mut update = |bytes: &mut [u8]| {
            old = super::word(bytes);
            let new = arith::atomic(op, ty, old, b, c).to_le_bytes();
            bytes.copy_from_slice(&new[..size]);
        };
        let (space, at) = Self::resolve(space, addr);
        let who = self.who;
        match space {
            Space::Shared => {
                let trap = self.outside(space, at, line);
                update(self.own(space, at, size).ok_or(trap)?);
            }
            Space::Global => {
                let trap = |f| Trap { kind: TrapKind::Fault(f), line, who, addr };
                self.sh.memory.atomic(at, size, who, &mut update).map_err(trap)?;
            }
            _ => return Err(self.trap(TrapKind::Fault(Fault::Illegal), line, addr)),
        }
        Ok(old)
    }
}
