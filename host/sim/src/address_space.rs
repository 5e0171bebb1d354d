//! One range of addresses handed out and given back: an allocation takes the smallest free
//! range it fits (the lowest of equal ones), so a freed range is the next allocation's of its
//! size, as the driver reuses addresses; a freed range joins its free neighbours, and one at
//! the top gives the space back to it. Every operation is logarithmic in the free ranges.

use std::collections::{BTreeMap, BTreeSet};

/// Offsets from the range's start.
#[derive(Clone, Debug, Default)]
pub(super) struct AddressSpace {
    /// Where space never handed out (or all given back) starts.
    top: u64,
    /// The free ranges below `top`, by start: their length.
    by_start: BTreeMap<u64, u64>,
    /// The same ranges by `(length, start)`: the smallest that fits, found first.
    by_len: BTreeSet<(u64, u64)>,
}

impl AddressSpace {
    /// The offset of `len > 0` bytes aligned to `align` (a power of two), ending at `limit` at
    /// most; `None` when no such range is left.
    pub(super) fn take(&mut self, len: u64, align: u64, limit: u64) -> Option<u64> {
        let fits = self.by_len.range((len, 0)..).find(|&&(free, start)| {
            let at = start.next_multiple_of(align);
            at.checked_add(len).is_some_and(|end| end <= start + free)
        });
        if let Some(&(free, start)) = fits {
            self.unlist(start, free);
            let at = start.next_multiple_of(align);
            if at > start {
                self.list(start, at - start);
            }
            if start + free > at + len {
                self.list(at + len, start + free - at - len);
            }
            return Some(at);
        }
        let at = self.top.next_multiple_of(align);
        let end = at.checked_add(len).filter(|&end| end <= limit)?;
        if at > self.top {
            self.list(self.top, at - self.top);
        }
        self.top = end;
        Some(at)
    }

    /// Gives back `[at, at + len)`, which [`AddressSpace::take`] handed out.
    pub(super) fn give(&mut self, at: u64, len: u64) {
        let (mut start, mut len) = (at, len);
        if let Some((&before, &before_len)) = self.by_start.range(..start).next_back()
            && before + before_len == start
        {
            self.unlist(before, before_len);
            (start, len) = (before, len + before_len);
        }
        if let Some(&after_len) = self.by_start.get(&(start + len)) {
            self.unlist(start + len, after_len);
            len += after_len;
        }
        match start + len == self.top {
            true => self.top = start,
            false => self.list(start, len),
        }
    }

    /// How many free ranges lie below the top (for tests: a churn leaves few).
    #[cfg(test)]
    pub(super) fn free_ranges(&self) -> usize {
        self.by_start.len()
    }

    fn list(&mut self, start: u64, len: u64) {
        self.by_start.insert(start, len);
        self.by_len.insert((len, start));
    }

    fn unlist(&mut self, start: u64, len: u64) {
        self.by_start.remove(&start);
        self.by_len.remove(&(len, start));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_freed_range_is_the_next_allocation_of_its_size() {
        let mut space = AddressSpace::default();
        let a = space.take(512, 256, 1 << 20).unwrap();
        let b = space.take(1024, 256, 1 << 20).unwrap();
        let c = space.take(512, 256, 1 << 20).unwrap();
        space.give(b, 1024);
        assert_eq!(space.take(1024, 256, 1 << 20), Some(b), "the same address again");
        space.give(a, 512);
        space.give(c, 512);
        assert_eq!(space.take(256, 256, 1 << 20), Some(a), "the smallest range that fits, the lowest first");
        assert_eq!(space.take(1 << 20, 256, 1 << 20), None, "past the limit");
    }

    #[test]
    fn aligned_takes_leave_their_gaps_free() {
        let mut space = AddressSpace::default();
        let a = space.take(256, 256, 1 << 30).unwrap();
        let big = space.take(4096, 1 << 20, 1 << 30).unwrap();
        assert_eq!(big % (1 << 20), 0);
        assert_eq!(space.take(256, 256, 1 << 30), Some(a + 256), "the gap before the aligned range is used");
    }

    #[derive(Clone, Debug)]
    enum Step {
        Take(u64),
        Give(usize),
    }

    proptest! {
        /// Any churn of takes and gives hands out ranges that never overlap a live one, and
        /// giving everything back leaves the space empty.
        #[test]
        fn ranges_never_overlap_and_all_come_back(steps in proptest::collection::vec(
            prop_oneof![(1u64..64).prop_map(|n| Step::Take(n * 256)), any::<usize>().prop_map(Step::Give)],
            1..200,
        )) {
            let mut space = AddressSpace::default();
            let mut live: Vec<(u64, u64)> = Vec::new();
            for step in steps {
                match step {
                    Step::Take(len) => {
                        let align = if len % 1024 == 0 { 1024 } else { 256 };
                        let at = space.take(len, align, 1 << 24).expect("space enough");
                        prop_assert_eq!(at % align, 0);
                        prop_assert!(live.iter().all(|&(s, l)| at + len <= s || s + l <= at), "overlaps a live range");
                        live.push((at, len));
                    }
                    Step::Give(i) if !live.is_empty() => {
                        let (at, len) = live.swap_remove(i % live.len());
                        space.give(at, len);
                    }
                    Step::Give(_) => {}
                }
            }
            for (at, len) in live.drain(..) {
                space.give(at, len);
            }
            prop_assert_eq!(space.top, 0);
            prop_assert_eq!(space.free_ranges(), 0);
        }
    }
}
