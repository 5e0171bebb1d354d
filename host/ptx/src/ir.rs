//! A loaded module: its variables, its functions, and each function's instructions decoded into
//! [`Op`]s the executor runs without looking at text again.

/// A scalar type of PTX.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ty {
    B8,
    B16,
    B32,
    B64,
    U8,
    U16,
    U32,
    U64,
    S8,
    S16,
    S32,
    S64,
    F32,
    F64,
    /// IEEE half precision.
    F16,
    /// bfloat16: f32's exponent with 8 bits of precision.
    BF16,
    /// Two `f16`s in 32 bits, the first in the low half; each computed on its own.
    F16x2,
    /// Two `bf16`s, as `F16x2`.
    BF16x2,
    /// Two 8-bit floats of 4 exponent and 3 fraction bits in 16, the first in the low byte
    /// (`cvt` only).
    E4M3x2,
    /// Two 8-bit floats of 5 exponent and 2 fraction bits, as `E4M3x2`.
    E5M2x2,
    /// An f32 of which the tensor cores take f32's exponent and 10 fraction bits (`mma` and
    /// `cvt.rna.tf32.f32` only: no `.`-suffix names it elsewhere).
    TF32,
    Pred,
}

impl Ty {
    /// The type a `.`-suffix names (`u32` for `.u32`).
    pub(crate) fn named(name: &str) -> Option<Ty> {
        use Ty::*;
        Some(match name {
            "b8" => B8,
            "b16" => B16,
            "b32" => B32,
            "b64" => B64,
            "u8" => U8,
            "u16" => U16,
            "u32" => U32,
            "u64" => U64,
            "s8" => S8,
            "s16" => S16,
            "s32" => S32,
            "s64" => S64,
            "f32" => F32,
            "f64" => F64,
            "f16" => F16,
            "bf16" => BF16,
            "f16x2" => F16x2,
            "bf16x2" => BF16x2,
            "e4m3x2" => E4M3x2,
            "e5m2x2" => E5M2x2,
            "pred" => Pred,
            _ => return None,
        })
    }

    /// Its width in bits (a predicate counts as 1).
    pub fn bits(self) -> u32 {
        use Ty::*;
        match self {
            B8 | U8 | S8 => 8,
            B16 | U16 | S16 | F16 | BF16 | E4M3x2 | E5M2x2 => 16,
            B32 | U32 | S32 | F32 | F16x2 | BF16x2 | TF32 => 32,
            B64 | U64 | S64 | F64 => 64,
            Pred => 1,
        }
    }

    /// Its width in bytes (a predicate takes one).
    pub fn bytes(self) -> usize {
        (self.bits() as usize).div_ceil(8)
    }

    pub(crate) fn signed(self) -> bool {
        matches!(self, Ty::S8 | Ty::S16 | Ty::S32 | Ty::S64)
    }

    pub(crate) fn float(self) -> bool {
        matches!(self, Ty::F32 | Ty::F64) || self.half()
    }

    /// A 16-bit float, or two packed.
    pub(crate) fn half(self) -> bool {
        matches!(self, Ty::F16 | Ty::BF16 | Ty::F16x2 | Ty::BF16x2)
    }

    /// Two 8-bit floats.
    pub(crate) fn fp8(self) -> bool {
        matches!(self, Ty::E4M3x2 | Ty::E5M2x2)
    }
}

/// A state space.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Space {
    Global,
    Shared,
    Local,
    Param,
    Const,
    /// A generic address: global, or inside the block's shared or the thread's local window.
    Generic,
}

/// A register: its index in its function's register file.
pub type Reg = u32;

/// A value an instruction reads.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Src {
    Reg(Reg),
    /// Bits of an immediate, already in the instruction's type.
    Imm(u64),
    /// The address of a variable or parameter, as the instruction's space sees it.
    Addr(Place),
    /// A special register (`%tid.x`, ...).
    Special(Special),
}

/// Where a named thing lives.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Place {
    /// The module's variable with this index (global or constant memory, placed by the caller).
    Module(u32),
    /// A kernel parameter, at this byte offset of the parameter buffer.
    Param(u32),
    /// Shared memory of the block, at this byte offset (dynamic shared memory follows the
    /// static part).
    Shared(u32),
    /// The thread's local memory, at this byte offset.
    Local(u32),
}

/// A special register.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Special {
    Tid(u8),
    Ntid(u8),
    Ctaid(u8),
    Nctaid(u8),
    LaneId,
    WarpId,
    NWarpId,
    SmId,
    NSmId,
    LaneMaskEq,
    LaneMaskLt,
    LaneMaskLe,
    LaneMaskGt,
    LaneMaskGe,
    Clock,
    Clock64,
    GlobalTimer,
    DynamicSharedSize,
    TotalSharedSize,
    /// `%cluster_ctarank`: the block's rank in its cluster.
    ClusterRank,
    /// `%cluster_nctarank`: the blocks of a cluster.
    ClusterBlocks,
    /// `%cluster_ctaid`: the block's place in its cluster, along an axis.
    ClusterCtaid(u8),
    /// `%cluster_nctaid`: the cluster's size along an axis.
    ClusterNctaid(u8),
    /// `%clusterid`: the cluster's place in the grid, along an axis.
    ClusterId(u8),
    /// `%nclusterid`: the grid's size in clusters, along an axis.
    NClusterId(u8),
    /// `%is_explicit_cluster`: whether the launch gave cluster dimensions.
    ExplicitCluster,
    /// `%envreg1` (`true`) and `%envreg2`: the high and low halves of a cooperative launch's
    /// grid workspace, where `grid.sync()` counts the blocks that arrived (0 in other launches).
    GridWorkspace(bool),
}

/// An address operand: a base and a byte offset.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Address {
    pub base: Src,
    pub offset: i64,
}

/// A comparison of `setp`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cmp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    /// Unordered forms and their float-only kin.
    Equ,
    Neu,
    Ltu,
    Leu,
    Gtu,
    Geu,
    Num,
    Nan,
}

/// How a predicate result combines with another (`setp.lt.and`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BoolOp {
    And,
    Or,
    Xor,
}

/// A one-operand operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnOp {
    Neg,
    Abs,
    Not,
    Cnot,
    Popc,
    Clz,
    Brev,
    Sqrt,
    Rcp,
    Rsqrt,
    Sin,
    Cos,
    Lg2,
    Ex2,
    Tanh,
    Bfind,
    /// `bfind.shiftamt`: the left shift that brings that bit to the top.
    BfindShift,
    /// `testp`: the result is whether the float is of this class.
    Test(FloatClass),
}

/// The classes `testp` asks about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FloatClass {
    Finite,
    Infinite,
    Number,
    NotANumber,
    Normal,
    Subnormal,
}

/// A two-operand operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinOp {
    Add,
    AddSat,
    Sub,
    SubSat,
    MulLo,
    MulHi,
    /// The full product into twice the width (`mul.wide`).
    MulWide,
    Div,
    Rem,
    Min,
    Max,
    /// `min.NaN`/`max.NaN`: a NaN operand makes the result NaN.
    MinNaN,
    MaxNaN,
    And,
    Or,
    Xor,
    Shl,
    Shr,
    /// `copysign`: the magnitude of the second operand with the sign of the first.
    CopySign,
    /// `mul24.lo`/`.hi`: the product of the low 24 bits (sign-extended when signed); its low
    /// 32 bits, or bits 16 to 47.
    Mul24Lo,
    Mul24Hi,
    /// `bmsk.clamp`/`.wrap`: a mask of `b` bits from bit `a`.
    Bmsk {
        clamp: bool,
    },
    /// `szext.clamp`/`.wrap`: the low `b` bits of `a`, sign-extended (signed) or zero-extended.
    Szext {
        clamp: bool,
    },
    /// `add`, `sub`, `min`, `max` of `.u16x2`/`.s16x2`: each 16-bit half on its own; `relu`
    /// (`max`/`min.relu.s16x2`) makes a negative half 0.
    Pair {
        op: PairOp,
        signed: bool,
        relu: bool,
    },
}

/// What [`BinOp::Pair`] computes of each half.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PairOp {
    Add,
    Sub,
    Min,
    Max,
}

/// A three-operand operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TerOp {
    MadLo,
    MadHi,
    MadWide,
    /// A fused multiply-add, rounded once (also `mad.f32`/`f64`, which PTX defines so on sm_20+).
    Fma,
    /// `fma.rn.relu` of 16-bit floats: a negative result clamped to +0.
    FmaRelu,
    Mad24Lo,
    Mad24Hi,
    /// `sad`: `c + |a - b|`.
    Sad,
    /// `bfe`: bits `b` (position) and `c` (length) of `a`, sign-extended when signed.
    Bfe,
    /// `fns`: the position of the `c`-th set bit of `a` from bit `b` (toward the top when `c`
    /// is positive, the bottom when negative).
    Fns,
    /// `prmt`: bytes of `b:a` chosen by the nibbles of `c` (default mode), or as a mode's table
    /// says for `c`'s low bits.
    Prmt(Option<PrmtMode>),
    /// `lop3` with its look-up table.
    Lop3(u8),
    /// `shf.l`/`shf.r` (`clamp`: shifts past 32 stay 32; else modulo 32).
    Shf {
        left: bool,
        clamp: bool,
    },
    /// `dp4a`/`dp2a.lo`/`dp2a.hi`: `c` plus the dot product of bytes (and halves).
    Dp {
        a_signed: bool,
        b_signed: bool,
        two: Option<bool>,
    },
    /// `slct`: `a` when `c >= 0`, else `b` (`c` a float when `float_c`, NaN choosing `b`; a
    /// subnormal `c` is a zero of its sign under `ftz`).
    Slct {
        float_c: bool,
        ftz: bool,
    },
}

/// `vop2`/`vop4`: `op` of each half (`halves`) or byte of `a` and `b`, then `then`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Video {
    pub op: VideoOp,
    pub halves: bool,
    /// Whether `d`, `a` and `b` are signed.
    pub signed: [bool; 3],
    pub then: VideoThen,
}

/// What a SIMD video instruction does with its elements' results and `c`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VideoThen {
    /// Each element's low bits into `d` (every element: the default mask).
    Merge,
    /// Each element clamped to the range of `d`'s elements (`.sat`).
    Saturate,
    /// `c` plus every element (`.add`).
    Add,
}

/// What a SIMD video instruction computes of each pair of elements.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VideoOp {
    Add,
    Sub,
    /// The mean, rounded half away from zero.
    Avrg,
    AbsDiff,
    Min,
    Max,
}

/// An operation of the carry chain: what it computes, whether it takes the carry flag in
/// (`addc`, `subc`, `madc`) and whether it writes it (`.cc`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CarryOp {
    pub kind: CarryKind,
    pub carry_in: bool,
    pub carry_out: bool,
}

/// `a + b`, `a - b` (the flag a borrow), or the low or high half of `a * b` plus `c`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CarryKind {
    Add,
    Sub,
    MadLo,
    MadHi,
}

/// `prmt`'s modes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PrmtMode {
    F4e,
    B4e,
    Rc8,
    Ecl,
    Ecr,
    Rc16,
}

/// An atomic operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AtomOp {
    Add,
    Min,
    Max,
    Inc,
    Dec,
    And,
    Or,
    Xor,
    Exch,
    Cas,
}

/// An instruction, decoded.
#[derive(Clone, Debug, PartialEq)]
pub enum Op {
    Mov {
        ty: Ty,
        d: Reg,
        a: Src,
    },
    Unary {
        op: UnOp,
        ty: Ty,
        fm: FloatMode,
        d: Reg,
        a: Src,
    },
    Binary {
        op: BinOp,
        ty: Ty,
        fm: FloatMode,
        d: Reg,
        a: Src,
        b: Src,
    },
    Ternary {
        op: TerOp,
        ty: Ty,
        fm: FloatMode,
        d: Reg,
        a: Src,
        b: Src,
        c: Src,
    },
    /// A SIMD video instruction (`vadd4`, `vabsdiff2`, ...) with the default selectors and mask.
    Video {
        v: Video,
        d: Reg,
        a: Src,
        b: Src,
        c: Src,
    },
    /// A comparison into a predicate (`d2`: its complement); of two packed halves (`f16x2`),
    /// `d` takes the low halves' result and `d2` the high halves'.
    Setp {
        cmp: Cmp,
        ty: Ty,
        ftz: bool,
        d: Reg,
        d2: Option<Reg>,
        a: Src,
        b: Src,
        with: Option<(BoolOp, Src, bool)>,
    },
    Selp {
        ty: Ty,
        d: Reg,
        a: Src,
        b: Src,
        p: Src,
    },
    /// `set.cmp.f16.f16` and kin, of halves (one or two, `ty`): each result 1.0 where the
    /// comparison holds, else 0.0, in the destination's float type `to`; or, into a 32-bit
    /// integer `to`, all ones (of two halves: all ones in the half of each that holds).
    Set {
        cmp: Cmp,
        ty: Ty,
        to: Ty,
        ftz: bool,
        d: Reg,
        a: Src,
        b: Src,
    },
    Cvt {
        conv: Conversion,
        d: Reg,
        a: Src,
    },
    /// `cvt.rn.f16x2.f32 d, a, b`: two values converted to halves and packed, `a`'s in the
    /// high half.
    CvtPair {
        conv: Conversion,
        d: Reg,
        a: Src,
        b: Src,
    },
    /// `cvta` (`to: false`: shared/local/global offset to generic) and `cvta.to` (back).
    Cvta {
        to: bool,
        space: Space,
        d: Reg,
        a: Src,
    },
    /// `bfi`: `len` low bits of `a` inserted into `b` at `pos`.
    Bfi {
        ty: Ty,
        d: Reg,
        a: Src,
        b: Src,
        pos: Src,
        len: Src,
    },
    /// `mov.b64 d, {a, b}`: narrower values packed, the first lowest.
    Pack {
        ty: Ty,
        d: Reg,
        parts: Vec<Src>,
    },
    /// `mov.b64 {a, b}, s`: a value split into narrower parts, the first lowest.
    Unpack {
        ty: Ty,
        d: Vec<Option<Reg>>,
        a: Src,
    },
    Ld {
        space: Space,
        ty: Ty,
        d: Vec<Option<Reg>>,
        at: Address,
    },
    St {
        space: Space,
        ty: Ty,
        s: Vec<Src>,
        at: Address,
    },
    Atom {
        space: Space,
        op: AtomOp,
        ty: Ty,
        d: Option<Reg>,
        at: Address,
        b: Src,
        c: Option<Src>,
    },
    Bra {
        target: u32,
    },
    /// `brx.idx`: to `targets[index]`; an index past the list stops the launch
    /// ([`TrapKind::BadBranch`](crate::TrapKind::BadBranch)).
    Brx {
        index: Src,
        targets: Box<[u32]>,
    },
    /// `barrier.cluster.arrive` (counts the thread in the cluster's barrier) and
    /// `barrier.cluster.wait` (until every thread of the cluster has arrived since its own
    /// arrival).
    ClusterBarrier {
        wait: bool,
    },
    /// `mapa`: the address `a` names in the shared memory of the cluster's block `rank`, a
    /// generic address or (`shared`) a `.shared::cluster` one.
    Mapa {
        shared: bool,
        d: Reg,
        a: Src,
        rank: Src,
    },
    /// `bar.sync`/`barrier.sync` (`bar.arrive` does not wait), and `bar.red`, which also
    /// reduces a predicate over the threads that meet there.
    Bar {
        id: Src,
        threads: Option<Src>,
        wait: bool,
        red: Option<BarRed>,
    },
    /// A warp-synchronous instruction: the thread waits until every lane it names has come
    /// to one of the same kind, then all compute at once.
    Warp {
        op: WarpOp,
        /// The lanes that take part (`activemask`: none, it takes the lanes that are there).
        mask: Option<Src>,
    },
    /// `cp.async` from global to shared memory, done at once: `size` bytes at `dst`, the first
    /// `keep` of them read at `src` (all of them when `None`) and the rest zero, or all zero
    /// where the predicate `ignore` holds (`ignore-src`).
    CopyAsync {
        dst: Address,
        src: Address,
        size: u32,
        keep: Option<Src>,
        ignore: Option<(Src, bool)>,
    },
    /// Memory fences: every access here is seen at once, in program order (also `cp.async`'s
    /// groups, whose copies are done when issued).
    Fence,
    /// A call of a `.func`: a new frame of registers and local memory, the arguments copied in
    /// and, at its `ret`, the results copied back.
    Call(Box<Call>),
    /// A call through a function's address (a function pointer, a virtual function).
    CallIndirect(Box<IndirectCall>),
    Ret,
    Exit,
    /// A call of `vprintf(format, args)` (device `printf`): the caller's `.param`s holding the
    /// two pointers, and the result's, by their offsets in the frame's local memory.
    Printf {
        format: u32,
        args: u32,
        ret: Option<u32>,
    },
    /// A call of `__assertfail(message, file, line, function, char_size)` (a failed device
    /// `assert`): the caller's `.param`s holding the first four, by their offsets.
    AssertFail {
        message: u32,
        file: u32,
        line: u32,
        function: u32,
    },
    /// `trap` (`__trap()`): the launch stops.
    Trap,
    /// Extended-precision arithmetic through the thread's carry flag (`CC.CF`): `add.cc`,
    /// `addc`, `sub.cc`, `subc`, `mad.lo/.hi.cc`, `madc.lo/.hi`.
    Carry {
        op: CarryOp,
        ty: Ty,
        d: Reg,
        a: Src,
        b: Src,
        c: Option<Src>,
    },
    /// `isspacep`: whether the generic address `a` falls in `space` (global, shared, local).
    IsSpace {
        space: Space,
        d: Reg,
        a: Src,
    },
    /// `cp.async.bulk`: `size` bytes (a multiple of 16, both addresses 16-aligned) copied at
    /// once from global memory to the block's shared memory, completing as many transaction
    /// bytes of the barrier at `barrier`; or (`barrier` `None`) from shared memory to global.
    CopyBulk {
        dst: Address,
        src: Address,
        size: Src,
        barrier: Option<Address>,
    },
    /// An `mbarrier` operation on the 8-byte barrier object at `at` of `space` (shared, or a
    /// generic address in shared memory).
    MBarrier {
        space: Space,
        at: Address,
        op: MBarrierOp,
    },
    /// `wmma.load` (`regs`: the fragment's registers, written) or `wmma.store.d` (`regs`: read):
    /// this thread's elements of `frag` to or from the matrix at `at`, whose rows (columns
    /// when `col`) start `stride` elements apart.
    Wmma {
        store: bool,
        frag: Fragment,
        col: bool,
        space: Space,
        at: Address,
        stride: Src,
        regs: Vec<Reg>,
    },
}

/// Which matrix of `D = A B + C` a `wmma` fragment holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Matrix {
    A,
    B,
    /// `C`, or the result `D`: the accumulator.
    C,
}

/// A matrix fragment: its matrix, the operation's shape `[m, n, k]`, its elements' type
/// (`f16`, `bf16` or `f32`), and whose layout it has: `mma.sync`'s, which the PTX ISA sets
/// (`sync`), or `wmma`'s, which it leaves to the implementation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fragment {
    pub matrix: Matrix,
    pub shape: [u32; 3],
    pub ty: Ty,
    pub sync: bool,
}

impl Fragment {
    /// Rows and columns of its matrix: A is m by k, B k by n, C m by n.
    pub(crate) fn dims(self) -> (u32, u32) {
        let [m, n, k] = self.shape;
        match self.matrix {
            Matrix::A => (m, k),
            Matrix::B => (k, n),
            Matrix::C => (m, n),
        }
    }

    /// Elements a 32-bit register holds.
    pub(crate) fn per_reg(self) -> usize {
        32 / self.ty.bits() as usize
    }

    /// The registers each thread holds, as the PTX ISA sets them: for `wmma`, eight of f16
    /// pairs for A and B, four of f16 pairs or eight f32s for an accumulator, and bf16 pairs
    /// with each element held once in the warp; for `mma.sync`, each element held once.
    pub(crate) fn regs(self) -> usize {
        let (rows, cols) = self.dims();
        match (self.matrix, self.ty) {
            _ if self.sync => (rows * cols) as usize / 32 / self.per_reg(),
            (Matrix::C, Ty::F16) => 4,
            (_, Ty::F16) | (_, Ty::F32) => 8,
            _ => (rows * cols) as usize / 64,
        }
    }
}

/// `wmma.mma` or `mma.sync` (`sync`): `D = A B + C` of one warp's fragments, each lane
/// bringing its registers.
#[derive(Clone, Debug, PartialEq)]
pub struct Mma {
    pub sync: bool,
    /// `.satfinite` (integers): D clamped to s32's range, not wrapped.
    pub saturate: bool,
    pub shape: [u32; 3],
    /// The types of A's and of B's elements.
    pub input: Ty,
    pub input_b: Ty,
    /// C's and D's element types.
    pub c: Ty,
    pub d: Ty,
    pub a_regs: Vec<Reg>,
    pub b_regs: Vec<Reg>,
    pub c_regs: Vec<Reg>,
    pub d_regs: Vec<Reg>,
}

impl Mma {
    pub(crate) fn fragment(&self, matrix: Matrix) -> Fragment {
        let ty = match matrix {
            Matrix::A => self.input,
            Matrix::B => self.input_b,
            Matrix::C => self.c,
        };
        Fragment { matrix, shape: self.shape, ty, sync: self.sync }
    }
}

/// `ldmatrix` (or `stmatrix` when `store`): `count` 8x8 matrices of 16-bit elements, each row
/// at the address one lane gives (lane `8 m + r`: row `r` of matrix `m`), into (or from) every
/// lane's `regs[m]` as `mma.sync`'s fragments hold them (transposed with `trans`).
#[derive(Clone, Debug, PartialEq)]
pub struct MatrixRows {
    pub store: bool,
    pub count: u32,
    pub trans: bool,
    pub space: Space,
    pub at: Address,
    pub regs: Vec<Reg>,
}

/// What an `mbarrier` instruction does.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum MBarrierOp {
    /// `init`: a barrier expecting `count` arrivals a phase, in its phase 0.
    Init { count: Src },
    /// `arrive` (`drop`: `arrive_drop`, which also leaves every later phase): `count`
    /// arrivals, the state before them into `d` (a token of the phase arrived at);
    /// `arrive.expect_tx` expects `tx` bytes first.
    Arrive { d: Option<Reg>, count: Src, drop: bool, tx: Option<Src> },
    /// `expect_tx` (`complete`: `complete_tx`): the phase's transaction count grows (shrinks)
    /// by `bytes`.
    Transact { bytes: Src, complete: bool },
    /// `test_wait`/`try_wait`: whether the phase `token` names (`.parity`: the phase of that
    /// parity) is complete, into the predicate `d`.
    Wait { d: Reg, token: Src, parity: bool },
    /// `inval`: the object is no longer a barrier.
    Inval,
}

/// A direct call, linked: where the callee's code starts in the kernel's body, what its frame
/// holds, and which bytes of the caller's frame go to which of the callee's.
#[derive(Clone, Debug, PartialEq)]
pub struct Call {
    /// The callee, by its index among the module's function names (until linked).
    pub callee: u32,
    pub target: u32,
    pub registers: u32,
    pub local_bytes: u32,
    /// Arguments: (caller's offset, callee's offset, bytes), both in local memory of the frame.
    pub args: Vec<(u32, u32, u32)>,
    /// Results, copied back at `ret`: (caller's offset, callee's offset, bytes).
    pub rets: Vec<(u32, u32, u32)>,
}

/// `call (results), at, (arguments), prototype`: the function whose address `at` holds.
#[derive(Clone, Debug, PartialEq)]
pub struct IndirectCall {
    pub at: Src,
    /// The caller's arguments and results, as [`Call`]'s before it is linked.
    pub args: Vec<(u32, u32, u32)>,
    pub rets: Vec<(u32, u32, u32)>,
    /// A linked call of each function of the module whose parameters the arguments and results
    /// fit: those an address may name here.
    pub callees: Vec<Call>,
}

/// Where function `id` (its index among the functions the module names, in order) lies: above
/// every window of memory, so that reading or writing there faults.
pub(crate) fn function_address(id: u32) -> u64 {
    FUNCTIONS + 16 * u64::from(id)
}

/// The function whose address is `addr`, if it is one.
pub(crate) fn function_at(addr: u64) -> Option<u32> {
    let offset = addr.checked_sub(FUNCTIONS)?;
    u32::try_from(offset / 16).ok().filter(|_| offset % 16 == 0)
}

const FUNCTIONS: u64 = 0xffff_0000_0000_0000;

/// A barrier's reduction: `bar.red.popc.u32 d, id, p` or `bar.red.{and,or}.pred d, id, p`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BarRed {
    pub op: BarRedOp,
    pub d: Reg,
    pub p: Src,
    pub negated: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BarRedOp {
    Popc,
    And,
    Or,
}

/// `shfl.sync`'s ways of naming the source lane.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ShflMode {
    Up,
    Down,
    Bfly,
    Idx,
}

/// `vote.sync`'s modes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VoteMode {
    All,
    Any,
    Uni,
    Ballot,
}

/// `redux.sync`'s operations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReduxOp {
    Add,
    Min,
    Max,
    And,
    Or,
    Xor,
}

/// What a warp-synchronous instruction computes once its lanes have met.
#[derive(Clone, Debug, PartialEq)]
pub enum WarpOp {
    Shfl {
        mode: ShflMode,
        d: Reg,
        p: Option<Reg>,
        a: Src,
        b: Src,
        c: Src,
    },
    Vote {
        mode: VoteMode,
        d: Reg,
        a: Src,
        negated: bool,
    },
    /// `match.any` (`all: false`) or `match.all` of a 32- or 64-bit value.
    Match {
        all: bool,
        wide: bool,
        d: Reg,
        p: Option<Reg>,
        a: Src,
    },
    Redux {
        op: ReduxOp,
        signed: bool,
        d: Reg,
        a: Src,
    },
    /// `bar.warp.sync`: only the meeting.
    Sync,
    /// `elect.sync`: the lowest lane of the meeting leads; `d` gets its lane, `p` whether this
    /// lane is it (`_` for either is `None`).
    Elect {
        d: Option<Reg>,
        p: Option<Reg>,
    },
    /// `activemask`: the lanes that reach it together (not a wait for named lanes).
    ActiveMask {
        d: Reg,
    },
    /// `wmma.mma` or `mma.sync` of the whole warp.
    Mma(Box<Mma>),
    /// `ldmatrix` or `stmatrix` of the whole warp.
    Rows(Box<MatrixRows>),
}

impl WarpOp {
    /// Lanes meet only at instructions of the same kind and qualifiers.
    pub(crate) fn same_kind(&self, other: &WarpOp) -> bool {
        use WarpOp::*;
        match (self, other) {
            (Shfl { mode: a, .. }, Shfl { mode: b, .. }) => a == b,
            (Vote { mode: a, .. }, Vote { mode: b, .. }) => a == b,
            (Match { all: a, wide: w, .. }, Match { all: b, wide: v, .. }) => a == b && w == v,
            (Redux { op: a, signed: s, .. }, Redux { op: b, signed: t, .. }) => a == b && s == t,
            (Sync, Sync) | (Elect { .. }, Elect { .. }) => true,
            (ActiveMask { .. }, ActiveMask { .. }) => true,
            (Mma(a), Mma(b)) => {
                (a.sync, a.shape, a.input, a.input_b, a.c, a.d) == (b.sync, b.shape, b.input, b.input_b, b.c, b.d)
            }
            (Rows(a), Rows(b)) => (a.store, a.count, a.trans) == (b.store, b.count, b.trans),
            _ => false,
        }
    }
}

/// How a float operation rounds and treats subnormals and its range.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FloatMode {
    pub round: Round,
    /// `.ftz`: f32 subnormal inputs and results flushed to zero.
    pub ftz: bool,
    /// `.sat`: the result clamped to [0, 1], NaN to 0.
    pub sat: bool,
}

/// What `cvt` makes of a value of type `from`: a value of type `to`, a float made an integer
/// as `round_int` says (`.rni/.rzi/.rmi/.rpi`), a float result rounded as `fm` says
/// (`.rn/.rz/.rm/.rp`; to nearest when not written), flushed (`.ftz`) and saturated (`.sat`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Conversion {
    pub to: Ty,
    pub from: Ty,
    pub round_int: Option<Round>,
    pub fm: FloatMode,
    /// `.relu` (into 16-bit floats): a negative result clamped to +0.
    pub relu: bool,
}

/// How `cvt` rounds a float to an integer, or to a float of another width; how float
/// arithmetic rounds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Round {
    #[default]
    Nearest,
    Zero,
    Down,
    Up,
}

/// One instruction: its guard, the operation and the line it came from.
#[derive(Clone, Debug, PartialEq)]
pub struct Inst {
    pub line: u32,
    /// Runs only where this predicate register is true (or false, when negated).
    pub guard: Option<(Reg, bool)>,
    pub op: Op,
}

/// A variable of the module (`.global`, `.const`), with its initial bytes.
#[derive(Clone, Debug, PartialEq)]
pub struct Variable {
    pub name: String,
    pub space: Space,
    pub align: u32,
    pub size: u64,
    pub init: Vec<u8>,
    /// Declared `.extern`: defined elsewhere (dynamic shared memory is one).
    pub external: bool,
    /// Where `init` holds another variable's address (`generic(x)+4`), zero until the caller
    /// says where that variable lies ([`Variable::initial_bytes`]).
    pub pointers: Vec<Pointer>,
}

/// Bytes `at..at + 8` of a variable's initial bytes: the address of the module's variable
/// `variable` (its index in [`Module::variables`]) plus `plus`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pointer {
    pub at: u32,
    pub variable: u32,
    pub plus: u64,
}

impl Variable {
    /// Its initial bytes with the addresses it holds filled in: `addresses[i]` is where the
    /// module's variable `i` lies (as [`crate::Launch::variables`] says).
    pub fn initial_bytes(&self, addresses: &[u64]) -> Vec<u8> {
        let mut bytes = self.init.clone();
        for p in &self.pointers {
            let value = addresses.get(p.variable as usize).map_or(0, |a| a.wrapping_add(p.plus));
            if let Some(slot) = bytes.get_mut(p.at as usize..p.at as usize + 8) {
                slot.copy_from_slice(&value.to_le_bytes());
            }
        }
        bytes
    }
}

/// A kernel parameter.
#[derive(Clone, Debug, PartialEq)]
pub struct Param {
    pub name: String,
    pub offset: u32,
    pub size: u32,
    pub align: u32,
}

/// A function or kernel. A kernel's body holds, after its own code, the code of every `.func`
/// it calls (linked at load); a `.func`'s parameters and results live in its frame's local
/// memory, at their offsets.
#[derive(Clone, Debug, PartialEq)]
pub struct Function {
    pub name: String,
    pub entry: bool,
    pub params: Vec<Param>,
    /// A `.func`'s results (`.func (.param .b32 r) f(...)`); none for a kernel.
    pub returns: Vec<Param>,
    /// How many registers the body uses (their kinds are in the instructions' types).
    pub registers: u32,
    /// Bytes of static shared memory it declares.
    pub shared_bytes: u32,
    /// Bytes of local memory a thread needs.
    pub local_bytes: u32,
    pub body: Vec<Inst>,
    /// The cluster dimensions a kernel requires (`.reqnctapercluster`), if it does.
    pub cluster: Option<[u32; 3]>,
    /// Whether its code, with the functions it calls, reads the grid workspace (`%envreg1`,
    /// `%envreg2`), as `grid.sync()` does: a driver gives such a kernel a workspace in every
    /// launch, cooperative or not.
    pub reads_grid_workspace: bool,
}

/// A module: what its text declares, decoded and checked.
#[derive(Clone, Debug, PartialEq)]
pub struct Module {
    pub version: (u32, u32),
    pub target: String,
    pub variables: Vec<Variable>,
    pub functions: Vec<Function>,
}
