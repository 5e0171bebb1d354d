//! One thread: its registers, its place in the program and its local memory, and the step that
//! runs its next instruction.

use super::access::{Access, Shared};
use super::cluster;
use super::fast::Code;
use super::{Fault, LOCAL_WINDOW, Launch, Output, SHARED_WINDOW, Thread, Trap, TrapKind};
use super::{arith, bits, fp8, half, matrix, mbarrier, printf, width};
use crate::ir::{
    Address, BarRedOp, BoolOp, Call, Cmp, Fragment, Function, IndirectCall, MBarrierOp, Op, Place, Reg, Space, Special,
    Src, Ty, function_at,
};

/// Where a thread is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum State {
    Running,
    /// Waiting at barrier `id` for `count` threads (0: every thread of the block that runs).
    Waiting {
        id: u32,
        count: u32,
    },
    /// Stopped at a warp-synchronous instruction (`pc` names it) until its lanes meet.
    Warp,
    /// Waiting for other threads to move (at an `mbarrier` phase that is not complete): it runs
    /// on once the rest of its block has run.
    Yield,
    /// Done: `ret`, `exit`, or the end of the program.
    Exited,
}

/// The most calls a thread may nest, and the most local memory its frames may hold (as a GPU's
/// 512 KiB per thread): past either, the launch stops with [`TrapKind::StackOverflow`].
pub(super) const MAX_CALL_DEPTH: usize = 1024;
pub(super) const MAX_LOCAL_BYTES: usize = 512 << 10;

/// A caller's frame, kept while its callee runs.
struct Frame {
    /// Where the caller goes on (just after its call).
    ret_pc: u32,
    base: usize,
    local_base: usize,
    /// Which of an indirect call's callees runs (0 for a direct call).
    callee: usize,
}

/// One thread's state.
pub(super) struct ThreadState {
    pub(super) who: Thread,
    /// The thread's index in its block, x fastest.
    pub(super) linear: u32,
    /// Every frame's registers, the current frame's from `base` on, each frame's just after a
    /// copy of the launch's pool of constants ([`Code::constants`]).
    pub(super) regs: Vec<u64>,
    pub(super) base: usize,
    /// How many constants the pool holds.
    pool: usize,
    pub(super) pc: u32,
    pub(super) state: State,
    /// A `bar.red` this thread waits in: what it reduces, into which register, and the
    /// predicate it brings.
    pub(super) red: Option<(BarRedOp, Reg, bool)>,
    /// Every frame's local memory, the current frame's from `local_base` on.
    pub(super) local: Vec<u8>,
    local_base: usize,
    frames: Vec<Frame>,
    /// The carry flag (`CC.CF`) of the carry chain.
    carry: bool,
    /// The phase of its cluster's barrier it last arrived in.
    cluster_phase: u32,
}

impl ThreadState {
    pub(super) fn new(kernel: &Function, code: &Code, launch: &Launch<'_>, who: Thread, linear: u32) -> ThreadState {
        let mut t = ThreadState {
            who,
            linear,
            regs: Vec::new(),
            base: 0,
            pool: 0,
            pc: 0,
            state: State::Running,
            red: None,
            local: Vec::new(),
            local_base: 0,
            frames: Vec::new(),
            carry: false,
            cluster_phase: 0,
        };
        t.reset(kernel, code, launch, who, linear);
        t
    }

    /// Makes this the state `new` gives, keeping what it has allocated.
    pub(super) fn reset(&mut self, kernel: &Function, code: &Code, launch: &Launch<'_>, who: Thread, linear: u32) {
        let pool = code.constants.len();
        self.regs.clear();
        self.regs.extend_from_slice(&code.constants);
        self.regs.resize(pool + kernel.registers as usize, 0);
        let shared = kernel.shared_bytes as usize + launch.shape.shared as usize;
        for &(k, s) in &code.specials {
            self.regs[k] = special(s, who, linear, launch, shared, 0);
        }
        self.local.clear();
        self.local.resize(kernel.local_bytes as usize, 0);
        self.frames.clear();
        (self.who, self.linear, self.base, self.pool, self.local_base) = (who, linear, pool, pool, 0);
        (self.pc, self.state, self.red, self.carry, self.cluster_phase) = (0, State::Running, None, false, 0);
    }

    pub(super) fn trap(&self, kind: TrapKind, line: u32, addr: u64) -> Trap {
        Trap { kind, line, who: self.who, addr }
    }

    #[inline(always)]
    pub(super) fn value(&self, s: Src, sh: &Shared<'_, '_>) -> u64 {
        match s {
            Src::Reg(r) => self.regs[self.base + r as usize],
            Src::Imm(v) => v,
            Src::Addr(place) => match place {
                Place::Module(i) => sh.launch.variables.get(i as usize).copied().unwrap_or(0),
                Place::Param(at) | Place::Shared(at) => at as u64,
                Place::Local(at) => (self.local_base + at as usize) as u64,
            },
            Src::Special(special) => self.special(special, sh),
        }
    }

    fn special(&self, s: Special, sh: &Shared<'_, '_>) -> u64 {
        special(s, self.who, self.linear, sh.launch, sh.bytes.len(), sh.clock)
    }

    pub(super) fn address(&self, at: &Address, sh: &Shared<'_, '_>) -> u64 {
        self.value(at.base, sh).wrapping_add(at.offset as u64)
    }

    /// A call's `.param` of `bytes` (4 or 8) at offset `off` of this frame's local memory.
    fn param(&mut self, sh: &mut Shared<'_, '_>, off: u32, bytes: usize, line: u32) -> Result<u64, Trap> {
        let mut word = [0u8; 8];
        let at = (self.local_base + off as usize) as u64;
        self.access(sh).read(Space::Local, at, &mut word[..bytes], line)?;
        Ok(u64::from_le_bytes(word))
    }

    /// The byte at a generic address (a string device printf or an assert reads).
    fn byte(&mut self, sh: &mut Shared<'_, '_>, addr: u64, line: u32) -> Result<u8, Trap> {
        let mut b = [0u8];
        self.access(sh).read(Space::Generic, addr, &mut b, line).map(|()| b[0])
    }

    /// What the thread's accesses to memory need.
    pub(super) fn access<'s, 'a, 'm>(&'s mut self, sh: &'s mut Shared<'a, 'm>) -> Access<'s, 'a, 'm> {
        Access { local: &mut self.local, who: self.who, sh }
    }

    pub(super) fn set(&mut self, r: u32, v: u64) {
        self.regs[self.base + r as usize] = v;
    }

    /// Runs `op`, the thread's instruction at `pc - 1` (its guard holds): what computes a
    /// register from registers here, the rest in a method of its own.
    pub(super) fn step(&mut self, kernel: &Function, op: &Op, line: u32, sh: &mut Shared<'_, '_>) -> Result<(), Trap> {
        match op {
            Op::Mov { ty, d, a } => {
                let v = self.value(*a, sh);
                self.set(*d, width::mask(*ty, v));
            }
            Op::Unary { op, ty, fm, d, a } => {
                let v = arith::unary(*op, *ty, *fm, self.value(*a, sh));
                self.set(*d, v);
            }
            Op::Binary { op, ty, fm, d, a, b } => {
                let v = arith::binary(*op, *ty, *fm, self.value(*a, sh), self.value(*b, sh));
                self.set(*d, v);
            }
            Op::Ternary { op, ty, fm, d, a, b, c } => {
                let v = arith::ternary(*op, *ty, *fm, self.value(*a, sh), self.value(*b, sh), self.value(*c, sh));
                self.set(*d, v);
            }
            Op::Video { v, d, a, b, c } => {
                let v = bits::video(*v, self.value(*a, sh), self.value(*b, sh), self.value(*c, sh));
                self.set(*d, v);
            }
            Op::Setp { cmp, ty, ftz, d, d2, a, b, with } => {
                self.setp((*cmp, *ty, *ftz), (*d, *d2), (*a, *b), *with, sh)
            }
            Op::Selp { ty, d, a, b, p } => {
                let v = if self.value(*p, sh) & 1 != 0 { self.value(*a, sh) } else { self.value(*b, sh) };
                self.set(*d, width::mask(*ty, v));
            }
            Op::Set { cmp, ty, to, ftz, d, a, b } => {
                let v = half::set(*cmp, *ty, *to, *ftz, self.value(*a, sh), self.value(*b, sh));
                self.set(*d, v);
            }
            Op::Cvt { conv, d, a } => self.set(*d, arith::convert(*conv, self.value(*a, sh))),
            Op::CvtPair { conv, d, a, b } => {
                let (a, b) = (self.value(*a, sh), self.value(*b, sh));
                let v = match conv.to.fp8() {
                    true => fp8::convert_pair(*conv, a, b),
                    false if conv.relu => half::relu(conv.to, half::convert_pair(conv.to, conv.fm, a, b)),
                    false => half::convert_pair(conv.to, conv.fm, a, b),
                };
                self.set(*d, v);
            }
            Op::Bfi { ty, d, a, b, pos, len } => {
                let (a, b) = (self.value(*a, sh), self.value(*b, sh));
                let v = bits::bfi(*ty, a, b, self.value(*pos, sh), self.value(*len, sh));
                self.set(*d, v);
            }
            Op::Pack { ty, d, parts } => {
                let bits = ty.bits();
                let v = parts.iter().rev().fold(0u64, |v, p| (v << bits) | width::mask(*ty, self.value(*p, sh)));
                self.set(*d, v);
            }
            Op::Unpack { ty, d, a } => {
                let v = self.value(*a, sh);
                for (i, r) in d.iter().enumerate() {
                    if let Some(r) = r {
                        self.set(*r, width::mask(*ty, v >> (i as u32 * ty.bits())));
                    }
                }
            }
            Op::Carry { op, ty, d, a, b, c } => {
                let c = c.map_or(0, |c| self.value(c, sh));
                let (v, carry) = arith::carry(*op, *ty, self.value(*a, sh), self.value(*b, sh), c, self.carry);
                self.set(*d, v);
                self.carry = carry;
            }
            Op::Cvta { to, space, d, a } => {
                let v = self.value(*a, sh);
                let window = match space {
                    Space::Shared => SHARED_WINDOW,
                    Space::Local => LOCAL_WINDOW,
                    _ => 0,
                };
                self.set(*d, if *to { v.wrapping_sub(window) } else { v.wrapping_add(window) });
            }
            Op::IsSpace { space, d, a } => self.is_space(*space, *d, *a, sh),
            Op::Mapa { shared, d, a, rank } => {
                let (a, rank) = (self.value(*a, sh), self.value(*rank, sh) as u32);
                let window = if *shared { 0 } else { SHARED_WINDOW };
                self.set(*d, window.wrapping_add(cluster::map(a.wrapping_sub(window), rank)));
            }
            Op::Ld { space, ty, d, at } => self.load(*space, *ty, d, at, line, sh)?,
            Op::St { space, ty, s, at } => self.store(*space, *ty, s, at, line, sh)?,
            Op::Atom { space, op, ty, d, at, b, c } => {
                let addr = self.address(at, sh);
                let (b, c) = (self.value(*b, sh), c.map_or(0, |c| self.value(c, sh)));
                let old = self.access(sh).atomic(*space, addr, *op, *ty, b, c, line)?;
                if let Some(d) = d {
                    self.set(*d, old);
                }
            }
            Op::Wmma { store, frag, col, space, at, stride, regs } => {
                self.wmma((*store, *frag, *col), (*space, at, *stride), regs, line, sh)?
            }
            Op::CopyAsync { dst, src, size, keep, ignore } => {
                self.copy_async((dst, src), *size, (*keep, *ignore), line, sh)?
            }
            Op::CopyBulk { dst, src, size, barrier } => {
                self.copy_bulk((dst, src), *size, barrier.as_ref(), line, sh)?
            }
            Op::MBarrier { space, at, op } => self.mbarrier(*space, at, *op, line, sh)?,
            Op::Fence => {}
            Op::Bra { target } => self.pc = *target,
            Op::Brx { index, targets } => {
                let index = self.value(*index, sh) as u32;
                match targets.get(index as usize) {
                    Some(&target) => self.pc = target,
                    None => return Err(self.trap(TrapKind::BadBranch, line, u64::from(index))),
                }
            }
            Op::Bar { id, threads, wait, red } => {
                let id = (self.value(*id, sh) & 0xf) as u32;
                let count = threads.map_or(0, |t| self.value(t, sh) as u32);
                self.red = red.map(|r| (r.op, r.d, (self.value(r.p, sh) & 1 != 0) != r.negated));
                match wait {
                    true => self.state = State::Waiting { id, count },
                    false => sh.arrived[id as usize] += 1,
                }
            }
            Op::ClusterBarrier { wait: false } => self.cluster_phase = sh.cluster.arrive(),
            Op::ClusterBarrier { wait: true } => {
                if !sh.cluster.passed(self.cluster_phase) {
                    // Again once the rest of the cluster has run.
                    (self.pc, self.state) = (self.pc - 1, State::Yield);
                }
            }
            Op::Warp { .. } => {
                // The block computes it once every lane it names is there; the pc stays on it.
                self.state = State::Warp;
                self.pc -= 1;
            }
            Op::Call(call) => self.call(call, 0, line)?,
            Op::CallIndirect(call) => self.call_indirect(call, line, sh)?,
            Op::Ret => self.ret(kernel, line)?,
            Op::Exit => self.state = State::Exited,
            Op::Trap => return Err(self.trap(TrapKind::Trap, line, 0)),
            Op::Printf { format, args, ret } => self.printf(*format, *args, *ret, line, sh)?,
            Op::AssertFail { message, file, line: at_line, function } => {
                return self.assert_fail([*message, *file, *function], *at_line, line, sh);
            }
        }
        Ok(())
    }

    /// `setp`: the comparison `cmp` of `a` and `b` as `ty` (two of them for a pair of halves),
    /// each combined with a predicate where `with` says, into `d` (and its negation, or the
    /// high halves', into `d2`).
    fn setp(
        &mut self,
        (cmp, ty, ftz): (Cmp, Ty, bool),
        (d, d2): (Reg, Option<Reg>),
        (a, b): (Src, Src),
        with: Option<(BoolOp, Src, bool)>,
        sh: &Shared<'_, '_>,
    ) {
        let (a, b) = (self.value(a, sh), self.value(b, sh));
        let (mut r, mut r2) = match ty {
            Ty::F16x2 | Ty::BF16x2 => half::compare(cmp, ty, ftz, a, b).into(),
            _ => {
                let r = arith::compare(cmp, ty, ftz, a, b);
                (r, !r)
            }
        };
        if let Some((op, p, negated)) = with {
            let q = (self.value(p, sh) & 1 != 0) != negated;
            r = arith::combine(op, r, q);
            r2 = arith::combine(op, r2, q);
        }
        self.set(d, r as u64);
        if let Some(d2) = d2 {
            self.set(d2, r2 as u64);
        }
    }

    /// `isspacep`: whether the generic address `a` falls in `space`'s window.
    fn is_space(&mut self, space: Space, d: Reg, a: Src, sh: &Shared<'_, '_>) {
        let v = self.value(a, sh);
        let window = |w: u64, size: u64| v.wrapping_sub(w) < size;
        let shared = window(SHARED_WINDOW, LOCAL_WINDOW - SHARED_WINDOW);
        let local = window(LOCAL_WINDOW, u64::MAX - LOCAL_WINDOW);
        let r = match space {
            Space::Shared => shared,
            Space::Local => local,
            _ => !shared && !local,
        };
        self.set(d, r as u64);
    }

    /// `ld` of one register or a vector, each `ty` wide, from `at` in `space`.
    fn load(
        &mut self,
        space: Space,
        ty: Ty,
        d: &[Option<Reg>],
        at: &Address,
        line: u32,
        sh: &mut Shared<'_, '_>,
    ) -> Result<(), Trap> {
        let base = self.address(at, sh);
        let size = ty.bytes();
        for (i, reg) in d.iter().enumerate() {
            let addr = base.wrapping_add((i * size) as u64);
            let mut buf = [0u8; 8];
            self.access(sh).read(space, addr, &mut buf[..size], line)?;
            let raw = super::word(&buf[..size]);
            if let Some(r) = reg {
                // A narrow signed load sign-extends into its register.
                let v = if ty.signed() { width::extend(ty, raw) as u64 } else { raw };
                self.set(*r, v);
            }
        }
        Ok(())
    }

    /// `st` of one value or a vector, each `ty` wide, at `at` in `space`.
    fn store(
        &mut self,
        space: Space,
        ty: Ty,
        s: &[Src],
        at: &Address,
        line: u32,
        sh: &mut Shared<'_, '_>,
    ) -> Result<(), Trap> {
        let base = self.address(at, sh);
        let size = ty.bytes();
        for (i, src) in s.iter().enumerate() {
            let addr = base.wrapping_add((i * size) as u64);
            let bytes = self.value(*src, sh).to_le_bytes();
            self.access(sh).write(space, addr, &bytes[..size], line)?;
        }
        Ok(())
    }

    /// `wmma.load` (into `regs`) or `wmma.store` (from them) of this lane's elements of a
    /// fragment, the matrix at `at` in `space` with `stride` elements a row (a column if `col`).
    fn wmma(
        &mut self,
        (store, frag, col): (bool, Fragment, bool),
        (space, at, stride): (Space, &Address, Src),
        regs: &[Reg],
        line: u32,
        sh: &mut Shared<'_, '_>,
    ) -> Result<(), Trap> {
        let (base, stride) = (self.address(at, sh), self.value(stride, sh) as u32 as u64);
        let (ty, lane) = (frag.ty, self.linear % 32);
        let mut values: Vec<u64> = regs.iter().map(|&r| self.value(Src::Reg(r), sh)).collect();
        for e in 0..matrix::per_thread(frag) {
            let addr = base.wrapping_add(matrix::offset(ty, col, stride, matrix::place(frag, lane, e)));
            let mut buf = [0u8; 4];
            if store {
                let bytes = matrix::element(ty, &values, e).to_le_bytes();
                self.access(sh).write(space, addr, &bytes[..ty.bytes()], line)?;
            } else {
                self.access(sh).read(space, addr, &mut buf[..ty.bytes()], line)?;
                matrix::set_element(ty, &mut values, e, super::word(&buf[..ty.bytes()]));
            }
        }
        if !store {
            regs.iter().zip(values).for_each(|(&r, v)| self.set(r, v));
        }
        Ok(())
    }

    /// `cp.async` of `size` bytes from global memory at `src` to shared memory at `dst`, done
    /// now: only the first `keep` bytes of the source (none where `ignore` holds), the rest zero.
    fn copy_async(
        &mut self,
        (dst, src): (&Address, &Address),
        size: u32,
        (keep, ignore): (Option<Src>, Option<(Src, bool)>),
        line: u32,
        sh: &mut Shared<'_, '_>,
    ) -> Result<(), Trap> {
        let (to, from) = (self.address(dst, sh), self.address(src, sh));
        let ignored = ignore.is_some_and(|(p, negated)| (self.value(p, sh) & 1 != 0) != negated);
        let keep = match keep {
            _ if ignored => 0,
            Some(k) => (self.value(k, sh) as u32).min(size),
            None => size,
        } as usize;
        let mut buf = [0u8; 16];
        if keep == size as usize {
            self.access(sh).read(Space::Global, from, &mut buf[..keep], line)?;
        } else {
            // A part: byte by byte, as no wider access need be aligned to it.
            for (i, b) in buf[..keep].iter_mut().enumerate() {
                let at = from.wrapping_add(i as u64);
                self.access(sh).read(Space::Global, at, std::slice::from_mut(b), line)?;
            }
        }
        self.access(sh).write(Space::Shared, to, &buf[..size as usize], line)
    }

    /// `cp.async.bulk` of `size` bytes from `src` to `dst`, done now: from global to shared
    /// memory, completing that many bytes of `barrier`'s transaction count, or without a
    /// barrier from shared memory to global.
    fn copy_bulk(
        &mut self,
        (dst, src): (&Address, &Address),
        size: Src,
        barrier: Option<&Address>,
        line: u32,
        sh: &mut Shared<'_, '_>,
    ) -> Result<(), Trap> {
        let (to, from, size) = (self.address(dst, sh), self.address(src, sh), self.value(size, sh) as u32);
        if size % 16 != 0 {
            return Err(self.trap(TrapKind::Fault(Fault::Misaligned), line, to));
        }
        // To shared memory with a barrier to complete, else to global memory.
        let (read, write) = match barrier {
            Some(_) => (Space::Global, Space::Shared),
            None => (Space::Shared, Space::Global),
        };
        // 16 bytes at a time: each access is checked, and aligned to 16 as the copy must be.
        let mut chunk = [0u8; 16];
        for at in (0..size as u64).step_by(16) {
            self.access(sh).read(read, from.wrapping_add(at), &mut chunk, line)?;
            self.access(sh).write(write, to.wrapping_add(at), &chunk, line)?;
        }
        if let Some(b) = barrier {
            let op = MBarrierOp::Transact { bytes: Src::Imm(size as u64), complete: true };
            self.mbarrier(Space::Shared, b, op, line, sh)?;
        }
        Ok(())
    }

    /// A call through the address `call.at`: of the callee it names among those the call may
    /// reach.
    fn call_indirect(&mut self, call: &IndirectCall, line: u32, sh: &Shared<'_, '_>) -> Result<(), Trap> {
        let addr = self.value(call.at, sh);
        // An address that names no function this call may reach, as a GPU's jump to
        // it would be: the launch stops.
        let callee = function_at(addr).and_then(|id| call.callees.iter().position(|c| c.callee == id));
        let Some(callee) = callee else {
            return Err(self.trap(TrapKind::Fault(Fault::Illegal), line, addr));
        };
        self.call(&call.callees[callee], callee, line)
    }

    /// Device `printf`: the format and the argument buffer read from the `.param`s at `format`
    /// and `args`, the text handed to the caller's memory, its length into `ret`'s if any.
    fn printf(
        &mut self,
        format: u32,
        args: u32,
        ret: Option<u32>,
        line: u32,
        sh: &mut Shared<'_, '_>,
    ) -> Result<(), Trap> {
        let (fmt, args) = (self.param(sh, format, 8, line)?, self.param(sh, args, 8, line)?);
        let mut read = |addr: u64| self.byte(sh, addr, line);
        let (text, taken) = printf::format(&mut read, fmt, args)?;
        sh.memory.output(self.who, Output::Printf, &text);
        if let Some(r) = ret {
            let at = (self.local_base + r as usize) as u64;
            self.access(sh).write(Space::Local, at, &taken.to_le_bytes(), line)?;
        }
        Ok(())
    }

    /// A failed device `assert` (`__assertfail`): its line, from the message, file and function
    /// the `.param`s at `strings` point to and the line number at `at_line`, goes to the caller's
    /// memory, and the launch stops: never `Ok`.
    fn assert_fail(&mut self, strings: [u32; 3], at_line: u32, line: u32, sh: &mut Shared<'_, '_>) -> Result<(), Trap> {
        let mut pointers = [0u64; 3];
        for (p, off) in pointers.iter_mut().zip(strings) {
            *p = self.param(sh, off, 8, line)?;
        }
        let number = self.param(sh, at_line, 4, line)? as u32;
        let who = self.who;
        let mut read = |addr: u64| self.byte(sh, addr, line);
        let text = printf::assertion(&mut read, pointers, number, who)?;
        sh.memory.output(self.who, Output::Assertion, &text);
        Err(self.trap(TrapKind::Assert, line, 0))
    }

    /// An `mbarrier` operation; a wait for a phase that is not complete yields to the block.
    fn mbarrier(
        &mut self,
        space: Space,
        at: &Address,
        op: MBarrierOp,
        line: u32,
        sh: &mut Shared<'_, '_>,
    ) -> Result<(), Trap> {
        let addr = self.address(at, sh);
        let illegal = self.trap(TrapKind::Fault(Fault::Illegal), line, addr);
        // The object lies in shared memory, however it is addressed.
        let space = match space {
            Space::Shared => Space::Shared,
            _ if (SHARED_WINDOW..LOCAL_WINDOW).contains(&addr) => Space::Generic,
            _ => return Err(illegal),
        };
        let mut word = [0u8; 8];
        self.access(sh).read(space, addr, &mut word, line)?;
        let word = u64::from_le_bytes(word);
        let next = match op {
            MBarrierOp::Init { count } => mbarrier::init(self.value(count, sh)),
            MBarrierOp::Transact { bytes, complete } => {
                let bytes = self.value(bytes, sh) as u32 as i64;
                mbarrier::transact(word, if complete { -bytes } else { bytes })
            }
            MBarrierOp::Arrive { d, count, drop, tx } => {
                let word = match tx {
                    Some(tx) => mbarrier::transact(word, self.value(tx, sh) as u32 as i64).ok_or(illegal)?,
                    None => word,
                };
                let (next, token) = mbarrier::arrive(word, self.value(count, sh), drop).ok_or(illegal)?;
                if let Some(d) = d {
                    self.set(d, token);
                }
                Some(next)
            }
            MBarrierOp::Wait { d, token, parity } => {
                let done = mbarrier::complete(word, self.value(token, sh), parity).ok_or(illegal)?;
                self.set(d, done as u64);
                if !done {
                    self.state = State::Yield;
                }
                return Ok(());
            }
            MBarrierOp::Inval => Some(0),
        };
        self.access(sh).write(space, addr, &next.ok_or(illegal)?.to_le_bytes(), line)
    }

    /// Opens the callee's frame: its registers and local memory after the caller's, its
    /// arguments copied in.
    fn call(&mut self, call: &Call, callee: usize, line: u32) -> Result<(), Trap> {
        // Frames start 16-aligned, as their parameters and locals are laid out from there.
        let (base, local_base) = (self.regs.len() + self.pool, self.local.len().next_multiple_of(16));
        let local_end = local_base + call.local_bytes as usize;
        if self.frames.len() >= MAX_CALL_DEPTH || local_end > MAX_LOCAL_BYTES {
            return Err(self.trap(TrapKind::StackOverflow, line, 0));
        }
        self.regs.extend_from_within(..self.pool);
        self.regs.resize(base + call.registers as usize, 0);
        self.local.resize(local_end, 0);
        for &(from, to, n) in &call.args {
            self.copy(self.local_base + from as usize, local_base + to as usize, n as usize, line)?;
        }
        self.frames.push(Frame { ret_pc: self.pc, base: self.base, local_base: self.local_base, callee });
        (self.base, self.local_base, self.pc) = (base, local_base, call.target);
        Ok(())
    }

    /// Closes the frame, its results copied back to the caller's; in the kernel, an exit.
    fn ret(&mut self, kernel: &Function, line: u32) -> Result<(), Trap> {
        let Some(frame) = self.frames.pop() else {
            self.state = State::Exited;
            return Ok(());
        };
        let rets = match kernel.body.get(frame.ret_pc as usize - 1).map(|i| &i.op) {
            Some(Op::Call(call)) => &call.rets[..],
            Some(Op::CallIndirect(call)) => &call.callees[frame.callee].rets[..],
            _ => &[],
        };
        for &(to, from, n) in rets {
            self.copy(self.local_base + from as usize, frame.local_base + to as usize, n as usize, line)?;
        }
        self.regs.truncate(self.base - self.pool);
        self.local.truncate(self.local_base);
        (self.base, self.local_base, self.pc) = (frame.base, frame.local_base, frame.ret_pc);
        Ok(())
    }

    /// Copies `n` bytes of local memory, within what the frames hold.
    fn copy(&mut self, from: usize, to: usize, n: usize, line: u32) -> Result<(), Trap> {
        if from.max(to) + n > self.local.len() {
            return Err(self.trap(TrapKind::Fault(Fault::Illegal), line, (LOCAL_WINDOW as usize + from) as u64));
        }
        self.local.copy_within(from..from + n, to);
        Ok(())
    }
}

/// A special register's value for thread `who` (`linear` in its block) of a block with
/// `shared` bytes of shared memory, at `clock`.
fn special(s: Special, who: Thread, linear: u32, launch: &Launch<'_>, shared: usize, clock: u64) -> u64 {
    let lane = linear % 32;
    let threads: u32 = launch.shape.block.iter().product();
    let dims = launch.cluster.unwrap_or([1; 3]);
    match s {
        Special::Tid(a) => who.thread[a as usize] as u64,
        Special::Ntid(a) => launch.shape.block[a as usize] as u64,
        Special::Ctaid(a) => who.block[a as usize] as u64,
        Special::Nctaid(a) => launch.shape.grid[a as usize] as u64,
        Special::LaneId => lane as u64,
        Special::WarpId => (linear / 32) as u64,
        Special::NWarpId => threads.div_ceil(32) as u64,
        Special::SmId => 0,
        Special::NSmId => 1,
        Special::LaneMaskEq => 1 << lane,
        Special::LaneMaskLt => (1u64 << lane) - 1,
        Special::LaneMaskLe => (1u64 << (lane + 1)) - 1,
        Special::LaneMaskGt => !((1u64 << (lane + 1)) - 1) & 0xffff_ffff,
        Special::LaneMaskGe => !((1u64 << lane) - 1) & 0xffff_ffff,
        Special::Clock | Special::Clock64 | Special::GlobalTimer => clock,
        Special::DynamicSharedSize => launch.shape.shared as u64,
        Special::TotalSharedSize => shared as u64,
        Special::ClusterRank => cluster::place(who.block, dims, launch.shape.grid).1 as u64,
        Special::ClusterBlocks => dims.iter().product::<u32>() as u64,
        Special::ClusterCtaid(a) => (who.block[a as usize] % dims[a as usize]) as u64,
        Special::ClusterNctaid(a) => dims[a as usize] as u64,
        Special::ClusterId(a) => (who.block[a as usize] / dims[a as usize]) as u64,
        Special::NClusterId(a) => (launch.shape.grid[a as usize] / dims[a as usize]) as u64,
        Special::ExplicitCluster => launch.cluster.is_some() as u64,
        Special::GridWorkspace(high) => {
            launch.grid_sync.map_or(0, |g| if high { g.workspace >> 32 } else { g.workspace & 0xffff_ffff })
        }
    }
}
