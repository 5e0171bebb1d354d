//! A cluster of blocks: their shared memories, which each block reaches through `mapa` and
//! `.shared::cluster` addresses, and the cluster's barrier (`barrier.cluster`). A launch
//! without clusters has clusters of one block.
//!
//! A `.shared::cluster` address of another block holds that block's rank plus one above bit 24
//! (the block's own addresses, below it, are its `::cta` ones); a generic address is the same
//! number in the shared window.

/// Where a `.shared::cluster` address keeps the rank (plus one) of the block it names.
const RANK_SHIFT: u32 = 24;
const OFFSET: u64 = (1 << RANK_SHIFT) - 1;

/// What the blocks of a cluster share, kept between their turns.
pub(super) struct Cluster {
    /// Each block's shared memory, by rank; the running block borrows its own for its turn.
    pub(super) bytes: Vec<Vec<u8>>,
    /// Threads that arrived at the barrier in this phase, of `threads`.
    arrived: u32,
    phase: u32,
    threads: u32,
}

impl Cluster {
    /// A cluster of `blocks` blocks of `threads` threads and `shared` bytes of shared memory.
    pub(super) fn new(blocks: usize, shared: usize, threads: u32) -> Cluster {
        Cluster { bytes: vec![vec![0; shared]; blocks], arrived: 0, phase: 0, threads: threads * blocks as u32 }
    }

    /// A thread arrives at the barrier: the phase it arrived in. The last to arrive completes it.
    pub(super) fn arrive(&mut self) -> u32 {
        let phase = self.phase;
        self.arrived += 1;
        if self.arrived == self.threads {
            (self.arrived, self.phase) = (0, self.phase.wrapping_add(1));
        }
        phase
    }

    /// Whether the barrier's phase `phase` has completed.
    pub(super) fn passed(&self, phase: u32) -> bool {
        self.phase != phase
    }
}

/// The block `index` of a grid in clusters of `dims`: which cluster (in order, x fastest) and
/// its rank there.
pub(super) fn place(index: [u32; 3], dims: [u32; 3], grid: [u32; 3]) -> (usize, usize) {
    let at = |v: [u32; 3], n: [u32; 3]| (v[0] + n[0] * (v[1] + n[1] * v[2])) as usize;
    let clusters = [0, 1, 2].map(|a| grid[a] / dims[a]);
    (at([0, 1, 2].map(|a| index[a] / dims[a]), clusters), at([0, 1, 2].map(|a| index[a] % dims[a]), dims))
}

/// The blocks of cluster `c` (in [`place`]'s order) of a grid in clusters of `dims`, with their
/// ranks.
pub(super) fn members(c: usize, dims: [u32; 3], grid: [u32; 3]) -> impl Iterator<Item = ([u32; 3], usize)> {
    let n = [0, 1, 2].map(|a| grid[a] / dims[a]);
    let c = c as u32;
    let at = [c % n[0], (c / n[0]) % n[1], c / (n[0] * n[1])];
    (0..dims.iter().product::<u32>()).map(move |r| {
        let within = [r % dims[0], (r / dims[0]) % dims[1], r / (dims[0] * dims[1])];
        ([0, 1, 2].map(|a| at[a] * dims[a] + within[a]), r as usize)
    })
}

/// `mapa`: the `.shared::cluster` address of `offset` (an address in any block's shared memory)
/// in the block of rank `rank`.
pub(super) fn map(offset: u64, rank: u32) -> u64 {
    ((rank as u64 + 1) << RANK_SHIFT) | (offset & OFFSET)
}

/// The rank a `.shared::cluster` address names (`None`: the accessing block's own) and the
/// offset in that block's shared memory.
pub(super) fn split(addr: u64) -> (Option<usize>, u64) {
    match addr >> RANK_SHIFT {
        0 => (None, addr),
        r => (usize::try_from(r - 1).ok(), addr & OFFSET),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn members_are_the_blocks_place_puts_in_a_cluster() {
        let (dims, grid) = ([2, 3, 1], [4, 6, 2]);
        let clusters = (grid.iter().product::<u32>() / dims.iter().product::<u32>()) as usize;
        let mut seen = std::collections::HashSet::new();
        for c in 0..clusters {
            for (index, rank) in members(c, dims, grid) {
                assert_eq!(place(index, dims, grid), (c, rank), "{index:?}");
                assert!(seen.insert(index));
            }
        }
        assert_eq!(seen.len(), 48);
    }
}
