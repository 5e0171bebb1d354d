//! `mbarrier` objects: 8 bytes of a block's shared memory that count a phase's arrivals and its
//! transaction bytes. Their layout is the executor's own, as a GPU's is opaque: the pending
//! arrivals of the current phase (bits 0-19), the arrivals a phase expects (bits 20-39), the
//! pending transaction count (bits 40-61, signed: a copy may complete bytes before they are
//! expected), whether the object is a barrier (bit 62) and the current phase's parity (bit 63).
//! A phase completes when no arrival and no byte is pending; the next then begins. A state
//! token that `arrive` returns holds the parity of the phase it arrived at (bit 63) and the
//! arrivals it left pending (bits 0-19). `None` is what the PTX ISA leaves undefined: an object
//! that is not a barrier, a count outside 1 to 2^20 - 1, more arrivals than are pending, a
//! transaction count past +-(2^20 - 1).

const COUNT: u64 = (1 << 20) - 1;
const EXPECTED: u32 = 20;
const TX: u32 = 40;
const VALID: u64 = 1 << 62;
const PARITY: u64 = 1 << 63;

/// A barrier's fields.
struct Barrier {
    pending: u64,
    expected: u64,
    tx: i64,
    parity: bool,
}

impl Barrier {
    fn of(word: u64) -> Option<Barrier> {
        let tx = ((word << 2) as i64) >> (TX + 2);
        let parity = word & PARITY != 0;
        (word & VALID != 0).then_some(Barrier {
            pending: word & COUNT,
            expected: (word >> EXPECTED) & COUNT,
            tx,
            parity,
        })
    }

    /// The word, the phase completed if nothing is pending.
    fn word(mut self) -> u64 {
        if self.pending == 0 && self.tx == 0 {
            (self.pending, self.parity) = (self.expected, !self.parity);
        }
        let tx = (self.tx as u64) << TX & !(VALID | PARITY);
        (self.parity as u64) << 63 | VALID | tx | self.expected << EXPECTED | self.pending
    }
}

fn count(n: u64) -> Option<u64> {
    (1..=COUNT).contains(&n).then_some(n)
}

/// `init`: a barrier in its phase 0 expecting `n` arrivals.
pub(super) fn init(n: u64) -> Option<u64> {
    let n = count(n)?;
    Some(Barrier { pending: n, expected: n, tx: 0, parity: false }.word())
}

/// `arrive` of `n`: the barrier after it, and the state token. `drop` leaves every later phase
/// too.
pub(super) fn arrive(word: u64, n: u64, drop: bool) -> Option<(u64, u64)> {
    let mut b = Barrier::of(word)?;
    let n = count(n).filter(|&n| n <= b.pending)?;
    if drop {
        b.expected = b.expected.checked_sub(n)?;
    }
    b.pending -= n;
    let token = (b.parity as u64) << 63 | b.pending;
    Some((b.word(), token))
}

/// `expect_tx` of `bytes` (`complete_tx`: negative).
pub(super) fn transact(word: u64, bytes: i64) -> Option<u64> {
    let mut b = Barrier::of(word)?;
    b.tx = Some(b.tx + bytes).filter(|tx| tx.unsigned_abs() <= COUNT)?;
    Some(b.word())
}

/// `test_wait`/`try_wait`: whether the phase of `token` is complete (`parity`: the phase whose
/// parity is `token`'s lowest bit).
pub(super) fn complete(word: u64, token: u64, parity: bool) -> Option<bool> {
    let phase = if parity { token & 1 != 0 } else { token & PARITY != 0 };
    Barrier::of(word).map(|b| b.parity != phase)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_phase_completes_at_its_last_arrival_and_the_next_begins() {
        let b = init(3).unwrap();
        let (b, t0) = arrive(b, 1, false).unwrap();
        assert_eq!(complete(b, t0, false), Some(false));
        assert_eq!(complete(b, 0, true), Some(false), "phase 0 (parity 0) is not complete");
        let (b, t1) = arrive(b, 2, false).unwrap();
        assert_eq!((t0 & COUNT, t1 & COUNT), (2, 0));
        assert_eq!(complete(b, t0, false), Some(true));
        assert_eq!(complete(b, 0, true), Some(true));
        assert_eq!(complete(b, 1, true), Some(false), "phase 1 has begun");
        // Phase 1 expects three again; a dropped arrival leaves phase 2 expecting two.
        let (b, _) = arrive(b, 1, true).unwrap();
        let (b, t) = arrive(b, 2, false).unwrap();
        assert_eq!(complete(b, t, false), Some(true));
        let (b, t) = arrive(b, 2, false).unwrap();
        assert_eq!(t & COUNT, 0, "two arrivals complete phase 2");
        assert_eq!(
            (complete(b, t, false), complete(b, 0, true), complete(b, 1, true)),
            (Some(true), Some(true), Some(false))
        );
    }

    #[test]
    fn a_phase_waits_for_its_bytes_in_either_order() {
        // The bytes expected, then the arrival, then the copy's completion.
        let b = transact(init(1).unwrap(), 1024).unwrap();
        let (b, t) = arrive(b, 1, false).unwrap();
        assert_eq!(complete(b, t, false), Some(false), "1024 bytes pending");
        let b = transact(b, -1024).unwrap();
        assert_eq!(complete(b, t, false), Some(true));
        // The copy completes before its bytes are expected (as nvcc orders them): not done
        // until both, and the arrival.
        let b = transact(init(1).unwrap(), -64).unwrap();
        let (b, t) = arrive(b, 1, false).unwrap();
        assert_eq!(complete(b, t, false), Some(false));
        let b = transact(b, 64).unwrap();
        assert_eq!(complete(b, t, false), Some(true));
        let b = Barrier::of(b).unwrap();
        assert_eq!((b.pending, b.tx), (1, 0), "the next phase begins clean");
        assert_eq!(transact(init(1).unwrap(), 1 << 20), None);
    }

    #[test]
    fn what_the_isa_leaves_undefined_is_refused() {
        assert_eq!(init(0), None);
        assert_eq!(init(1 << 20), None);
        assert_eq!(arrive(0, 1, false), None, "not a barrier");
        assert_eq!(complete(0, 0, false), None);
        assert_eq!(transact(0, 16), None);
        let b = init(2).unwrap();
        assert_eq!(arrive(b, 3, false), None, "more arrivals than pending");
        assert_eq!(arrive(b, 0, false), None);
    }
}
