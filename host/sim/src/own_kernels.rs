//! Which of a module's kernels are peerpool's own (they run natively, not on the PTX executor),
//! and their parameters as the driver lays them out. Kept apart from the kernels' execution so
//! that loading a module need not import the simulator's state.

use crate::image;
use peerpool_kernels::Kernel;

/// peerpool's kernel that `k` is: one of its entry points by name, with the parameter sizes
/// peerpool declares.
pub(super) fn peerpools(k: &image::Kernel) -> Option<Kernel> {
    Kernel::ALL.into_iter().find(|p| {
        let sizes = (0..).map_while(|i| param_info(*p, i)).map(|(_, size)| size);
        p.entry() == k.name && sizes.eq(k.params.iter().map(|q| q.size))
    })
}

/// `(offset, size)` of `kernel`'s parameter `index`, as `cuFuncGetParamInfo` reports it: each
/// parameter aligned to its own size.
pub(super) fn param_info(kernel: Kernel, index: usize) -> Option<(usize, usize)> {
    let mut offset = 0usize;
    for (i, param) in kernel.params().iter().enumerate() {
        let width = param.kind.width();
        offset = offset.next_multiple_of(width);
        if i == index {
            return Some((offset, width));
        }
        offset += width;
    }
    None
}
