//! Tensor cores: `wmma`, `mma.sync`, `ldmatrix` and `stmatrix`.

use super::{Decoder, Mod, Mods};
use crate::LoadError;
use crate::ir::{Fragment, Matrix, MatrixRows, Mma, Op, Src, Ty, WarpOp};

/// `wmma.load.{a,b,c}`, `wmma.store.d` and `wmma.mma` of the shapes m16n16k16, m32n8k16 and
/// m8n32k16, with f16 or bf16 inputs and f16 or f32 accumulators.
pub(super) fn wmma(mods: &Mods, d: &Decoder<'_>) -> Result<Op, LoadError> {
    const SHAPES: [Mod; 3] = [Mod::M16n16k16, Mod::M32n8k16, Mod::M8n32k16];
    const KNOWN: [Mod; 13] = [
        Mod::Load,
        Mod::Store,
        Mod::Mma,
        Mod::A,
        Mod::B,
        Mod::C,
        Mod::D,
        Mod::Sync,
        Mod::Row,
        Mod::Col,
        Mod::Global,
        Mod::Shared,
        Mod::SharedCta,
    ];
    let shape = match mods.shape() {
        Some((Some(Mod::M16n16k16), _)) => [16, 16, 16],
        Some((Some(Mod::M32n8k16), _)) => [32, 8, 16],
        Some((Some(Mod::M8n32k16), _)) => [8, 32, 16],
        Some((_, other)) => return Err(d.unsupported(format!("the shape .{other}"))),
        None => return Err(d.unsupported("no shape")),
    };
    let mut known = KNOWN.to_vec();
    known.extend(SHAPES);
    mods.only(&known).map_err(|w| d.unsupported(w))?;
    if !mods.has(Mod::Sync) {
        return Err(d.unsupported("wmma without .sync"));
    }
    let types = mods.types(false);
    let regs = |i: usize, n: usize| d.all_regs(i, n);
    if mods.has(Mod::Mma) {
        // The layouts of A and B come first; this executor's fragments do not depend on them.
        let types = match types[..] {
            [dt, ct] => [dt, Ty::F16, Ty::F16, ct],
            [dt, a, b, ct] => [dt, a, b, ct],
            _ => return Err(d.unsupported("these types")),
        };
        return product((false, false), shape, types, d);
    }
    let store = mods.has(Mod::Store);
    let matrix = match () {
        _ if store && mods.has(Mod::D) => Matrix::C,
        _ if store => return Err(d.unsupported("a store of a fragment other than .d")),
        _ if mods.has(Mod::A) => Matrix::A,
        _ if mods.has(Mod::B) => Matrix::B,
        _ if mods.has(Mod::C) => Matrix::C,
        _ => return Err(d.unsupported("no fragment")),
    };
    let ty = match types[..] {
        [ty @ (Ty::F16 | Ty::BF16)] if matrix != Matrix::C => ty,
        [ty @ (Ty::F16 | Ty::F32)] if matrix == Matrix::C => ty,
        _ => return Err(d.unsupported("this type")),
    };
    let frag = Fragment { matrix, shape, ty, sync: false };
    let col = match (mods.has(Mod::Row), mods.has(Mod::Col)) {
        (true, false) => false,
        (false, true) => true,
        _ => return Err(d.unsupported("no layout")),
    };
    let (rows, cols) = frag.dims();
    let (at, regs_at) = if store { (d.addr(0)?, 1) } else { (d.addr(1)?, 0) };
    // Without a stride the matrix is packed: its leading dimension.
    let stride = match d.ops.get(2) {
        Some(_) => d.src(2, Ty::U32)?,
        None => Src::Imm(if col { rows } else { cols } as u64),
    };
    let regs = regs(regs_at, frag.regs())?;
    Ok(Op::Wmma { store, frag, col, space: mods.space(), at, stride, regs })
}

/// `D = A B + C` of `[d, a, b, c]` types, `d, a, b, c` as the operands: f16 or bf16 inputs
/// (bf16 only into f32) into f16 or f32 accumulators, or (`mma.sync` only) tf32 into f32 and
/// 8-bit integers into s32, clamped with `saturate`.
fn product(
    (sync, saturate): (bool, bool),
    shape: [u32; 3],
    [dt, input, input_b, ct]: [Ty; 4],
    d: &Decoder<'_>,
) -> Result<Op, LoadError> {
    let accumulators = matches!((dt, ct), (Ty::F16 | Ty::F32, Ty::F16 | Ty::F32));
    let valid = match input {
        Ty::F16 => accumulators && input_b == input && !saturate,
        Ty::BF16 => (dt, ct) == (Ty::F32, Ty::F32) && input_b == input && !saturate,
        Ty::S8 | Ty::U8 => sync && (dt, ct) == (Ty::S32, Ty::S32) && matches!(input_b, Ty::S8 | Ty::U8),
        Ty::TF32 => sync && (dt, ct) == (Ty::F32, Ty::F32) && input_b == input && !saturate,
        _ => false,
    };
    if !valid {
        return Err(d.unsupported("these types"));
    }
    let mut mma = Mma {
        sync,
        saturate,
        shape,
        input,
        input_b,
        c: ct,
        d: dt,
        a_regs: vec![],
        b_regs: vec![],
        c_regs: vec![],
        d_regs: vec![],
    };
    let regs = |i: usize, n: usize| d.all_regs(i, n);
    mma.d_regs = regs(0, Fragment { ty: dt, ..mma.fragment(Matrix::C) }.regs())?;
    mma.a_regs = regs(1, mma.fragment(Matrix::A).regs())?;
    mma.b_regs = regs(2, mma.fragment(Matrix::B).regs())?;
    mma.c_regs = regs(3, mma.fragment(Matrix::C).regs())?;
    Ok(Op::Warp { op: WarpOp::Mma(Box::new(mma)), mask: Some(Src::Imm(u32::MAX as u64)) })
}

/// `mma.sync.aligned.row.col`: m16n8k16 and m16n8k8 of f16 or bf16 into f16 or f32, m16n8k8
/// and m16n8k4 of tf32 into f32, and m16n8k16 and m16n8k32 of 8-bit integers into s32
/// (`.satfinite` too).
pub(super) fn mma_sync(mods: &Mods, d: &Decoder<'_>) -> Result<Op, LoadError> {
    mods.only(&[
        Mod::Sync,
        Mod::Row,
        Mod::Col,
        Mod::M16n8k16,
        Mod::M16n8k8,
        Mod::M16n8k4,
        Mod::M16n8k32,
        Mod::Satfinite,
        Mod::Tf32,
    ])
    .map_err(|w| d.unsupported(w))?;
    let types = mods.types(true);
    let (int, tf32) = (types.get(1).is_some_and(|t| matches!(t, Ty::S8 | Ty::U8)), types.get(1) == Some(&Ty::TF32));
    let shape = match () {
        _ if mods.has(Mod::M16n8k16) && !tf32 => [16, 8, 16],
        _ if mods.has(Mod::M16n8k8) && !int => [16, 8, 8],
        _ if mods.has(Mod::M16n8k4) && tf32 => [16, 8, 4],
        _ if mods.has(Mod::M16n8k32) && int => [16, 8, 32],
        _ => return Err(d.unsupported("this shape for these types")),
    };
    if !(mods.has(Mod::Sync) && mods.has(Mod::Row) && mods.has(Mod::Col)) {
        return Err(d.unsupported("this form"));
    }
    match types[..] {
        [dt, a, b, ct] => product((true, mods.has(Mod::Satfinite)), shape, [dt, a, b, ct], d),
        _ => Err(d.unsupported("these types")),
    }
}

/// `ldmatrix.sync.aligned.m8n8.x1/.x2/.x4[.trans][.shared].b16`.
/// `ldmatrix` (`store`: `stmatrix`, whose address comes first).
pub(super) fn matrix_rows(store: bool, mods: &Mods, d: &Decoder<'_>) -> Result<Op, LoadError> {
    mods.only(&[Mod::Sync, Mod::M8n8, Mod::X1, Mod::X2, Mod::X4, Mod::Trans, Mod::Shared, Mod::SharedCta])
        .map_err(|w| d.unsupported(w))?;
    let count = mods.pick(&[(Mod::X1, 1), (Mod::X2, 2), (Mod::X4, 4)]).ok_or_else(|| d.unsupported("no count"))?;
    if !(mods.has(Mod::Sync) && mods.has(Mod::M8n8) && mods.ty() == Some(Ty::B16)) {
        return Err(d.unsupported("this form"));
    }
    let (at, regs) = if store { (0, 1) } else { (1, 0) };
    let op = MatrixRows {
        store,
        count,
        trans: mods.has(Mod::Trans),
        space: mods.space(),
        at: d.addr(at)?,
        regs: d.all_regs(regs, count as usize)?,
    };
    Ok(Op::Warp { op: WarpOp::Rows(Box::new(op)), mask: Some(Src::Imm(u32::MAX as u64)) })
}
