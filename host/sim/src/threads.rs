//! Per-thread state keyed by the calling thread: the context stacks and the clock's lanes are
//! read on every call, so the key is cached per thread, hashed cheaply (a thread's id is a
//! counter the process hands out, not input anyone chooses), and the thread that last changed
//! its entry finds it without a lookup.

use rustc_hash::FxHashMap;
use std::cell::Cell;
use std::thread::ThreadId;

/// Each thread's `V`. The latest thread to change its entry keeps it apart from the map: while
/// one thread makes the calls, as most programs' hot loops do, finding it is one comparison.
#[derive(Clone, Debug)]
pub(crate) struct PerThread<V> {
    /// That thread's entry (then absent from `others`).
    latest: Option<(ThreadId, V)>,
    others: FxHashMap<ThreadId, V>,
}

impl<V> Default for PerThread<V> {
    fn default() -> Self {
        PerThread { latest: None, others: FxHashMap::default() }
    }
}

impl<V> PerThread<V> {
    /// `thread`'s entry.
    #[inline]
    pub(crate) fn get(&self, thread: ThreadId) -> Option<&V> {
        match &self.latest {
            Some((t, v)) if *t == thread => Some(v),
            _ => self.other(thread),
        }
    }

    /// `thread`'s entry when it is not the latest: out of line, so that the callers, inlined
    /// into every call, carry only the comparison.
    #[inline(never)]
    fn other(&self, thread: ThreadId) -> Option<&V> {
        self.others.get(&thread)
    }

    /// `thread`'s entry, to change.
    #[inline]
    pub(crate) fn get_mut(&mut self, thread: ThreadId) -> Option<&mut V> {
        match &mut self.latest {
            Some((t, v)) if *t == thread => Some(v),
            _ => Self::other_mut(&mut self.others, thread),
        }
    }

    /// [`PerThread::other`] in `others`, to change.
    #[inline(never)]
    fn other_mut(others: &mut FxHashMap<ThreadId, V>, thread: ThreadId) -> Option<&mut V> {
        others.get_mut(&thread)
    }

    /// `thread`'s entry, made by `fresh` when it has none; it becomes the latest.
    #[inline]
    pub(crate) fn get_or_insert_with(&mut self, thread: ThreadId, fresh: impl FnOnce() -> V) -> &mut V {
        let entry = match self.latest.take() {
            Some((t, v)) if t == thread => (t, v),
            before => self.swap(thread, before, fresh),
        };
        &mut self.latest.insert(entry).1
    }

    /// `thread`'s entry taken out of the map (made by `fresh` when it has none), `before`, the
    /// latest until now, put in its place: out of line, as [`PerThread::other`].
    #[inline(never)]
    fn swap(&mut self, thread: ThreadId, before: Option<(ThreadId, V)>, fresh: impl FnOnce() -> V) -> (ThreadId, V) {
        let mine = self.others.remove(&thread).unwrap_or_else(fresh);
        if let Some((t, v)) = before {
            self.others.insert(t, v);
        }
        (thread, mine)
    }

    /// Every thread's entry.
    pub(crate) fn values(&self) -> impl Iterator<Item = &V> {
        self.latest.iter().map(|(_, v)| v).chain(self.others.values())
    }

    /// Keeps only the entries `keep` says to.
    pub(crate) fn retain(&mut self, mut keep: impl FnMut(&ThreadId, &mut V) -> bool) {
        if let Some((t, v)) = &mut self.latest
            && !keep(t, v)
        {
            self.latest = None;
        }
        self.others.retain(keep);
    }

    /// Every entry, by thread.
    #[cfg(test)]
    pub(crate) fn to_map(&self) -> std::collections::HashMap<ThreadId, V>
    where
        V: Clone,
    {
        self.latest.iter().cloned().chain(self.others.iter().map(|(t, v)| (*t, v.clone()))).collect()
    }
}

/// The calling thread's id.
#[inline]
pub(crate) fn current() -> ThreadId {
    // Const-initialised and without a destructor: reading it is one load from the thread's
    // storage, with no lazy-initialisation state to check.
    thread_local! {
        static ID: Cell<Option<ThreadId>> = const { Cell::new(None) };
    }
    ID.with(|id| match id.get() {
        Some(known) => known,
        None => first(id),
    })
}

/// The calling thread's id, read the first time and kept in `id`: out of line, so that
/// [`current`] is the load.
#[cold]
#[inline(never)]
fn first(id: &Cell<Option<ThreadId>>) -> ThreadId {
    let first = std::thread::current().id();
    id.set(Some(first));
    first
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_thread_finds_its_own_entry_whichever_changed_last() {
        let mut map = PerThread::<Vec<u64>>::default();
        let me = current();
        map.get_or_insert_with(me, Vec::new).push(1);
        let other = std::thread::spawn(current).join().unwrap();
        map.get_or_insert_with(other, Vec::new).push(2);
        assert_eq!(map.get(me), Some(&vec![1]));
        map.get_mut(me).unwrap().push(3);
        assert_eq!(map.get_or_insert_with(other, || vec![9]), &vec![2], "kept, not made afresh");
        map.get_or_insert_with(me, Vec::new).push(4);
        assert_eq!(map.to_map(), [(me, vec![1, 3, 4]), (other, vec![2])].into());
        assert_eq!(map.values().map(Vec::len).sum::<usize>(), 4);
        map.retain(|t, _| *t == other);
        assert_eq!((map.get(me), map.get(other)), (None, Some(&vec![2])));
        map.retain(|t, _| *t == me);
        assert_eq!(map.values().count(), 0);
        assert_eq!(current(), me, "cached");
    }
}
