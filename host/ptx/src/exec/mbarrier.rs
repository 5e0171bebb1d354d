//! `mbarrier` objects: 8 bytes of a block's shared memory that count a phase's arrivals. Their
//! layout is the executor's own, as a GPU's is opaque: the pending arrivals of the current
//! phase (bits 0-19), the arrivals a phase expects (bits 20-39), whether the object is a
//! barrier (bit 62) and the current phase's parity (bit 63). A state token that `arrive`
//! returns holds the parity of the phase it arrived at (bit 63) and the arrivals it left
//! pending (bits 0-19). `None` is what the PTX ISA leaves undefined: an object that is not a
//! barrier, a count outside 1 to 2^20 - 1, more arrivals than are pending.

const COUNT: u64 = (1 << 20) - 1;
const EXPECTED: u32 = 20;
const VALID: u64 = 1 << 62;
const PARITY: u64 = 1 << 63;

fn count(n: u64) -> Option<u64> {
    (1..=COUNT).contains(&n).then_some(n)
}

/// `init`: a barrier in its phase 0 expecting `n` arrivals.
pub(super) fn init(n: u64) -> Option<u64> {
    let n = count(n)?;
    Some(VALID | n << EXPECTED | n)
}

/// `arrive` of `n`: the barrier after it, and the state token. The last arrival completes the
/// phase: the next begins, expecting as many. `drop` leaves every later phase too.
pub(super) fn arrive(word: u64, n: u64, drop: bool) -> Option<(u64, u64)> {
    let (pending, expected) = (word & COUNT, (word >> EXPECTED) & COUNT);
    let n = count(n).filter(|&n| word & VALID != 0 && n <= pending)?;
    let expected = if drop { expected.checked_sub(n)? } else { expected };
    let token = (word & PARITY) | (pending - n);
    let next = match pending - n {
        0 => VALID | ((word & PARITY) ^ PARITY) | expected << EXPECTED | expected,
        left => VALID | (word & PARITY) | expected << EXPECTED | left,
    };
    Some((next, token))
}

/// `test_wait`/`try_wait`: whether the phase of `token` is complete (`parity`: the phase whose
/// parity is `token`'s lowest bit).
pub(super) fn complete(word: u64, token: u64, parity: bool) -> Option<bool> {
    let phase = if parity { token & 1 != 0 } else { token & PARITY != 0 };
    (word & VALID != 0).then_some((word & PARITY != 0) != phase)
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
    fn what_the_isa_leaves_undefined_is_refused() {
        assert_eq!(init(0), None);
        assert_eq!(init(1 << 20), None);
        assert_eq!(arrive(0, 1, false), None, "not a barrier");
        assert_eq!(complete(0, 0, false), None);
        let b = init(2).unwrap();
        assert_eq!(arrive(b, 3, false), None, "more arrivals than pending");
        assert_eq!(arrive(b, 0, false), None);
    }
}
