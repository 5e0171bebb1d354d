//! The shared pattern function, as the host compiles it (the kernels compile the same file).

use peerpool_kernels::pattern::pattern;

#[test]
fn neighbouring_words_differ() {
    for i in 0..100_000u64 {
        assert_ne!(pattern(i, 7), pattern(i + 1, 7), "words {i} and {} collide", i + 1);
    }
}

#[test]
fn seeds_give_different_buffers() {
    assert_ne!(pattern(0, 1), pattern(0, 2));
    assert_eq!(pattern(5, 1) ^ pattern(5, 2), 1 ^ 2, "the seed is folded in by xor");
}

#[test]
fn words_four_gib_apart_differ() {
    let stride = 1u64 << 32;
    assert_ne!(pattern(3, 9), pattern(3 + stride, 9));
}

#[test]
fn no_overflow_at_the_largest_index() {
    // Debug builds panic on overflow: this would fail if the arithmetic could overflow.
    let _ = pattern(u64::MAX, u32::MAX);
    let _ = pattern(u64::MAX - 1, 0);
}

#[test]
fn known_values_pin_the_definition() {
    // If these change, every recorded hardware run used another pattern: change deliberately.
    assert_eq!(pattern(0, 0), 0);
    assert_eq!(pattern(1, 0), 0x9E37_79B1);
    assert_eq!(pattern(2, 0), 0x3C6E_F362);
    assert_eq!(pattern(1u64 << 32, 0), 1);
}
