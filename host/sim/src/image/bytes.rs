//! Little-endian fields read at offsets that may lie past the end: `None` rather than a panic.

pub(super) fn u8_at(b: &[u8], at: usize) -> Option<u64> {
    b.get(at).map(|&v| v as u64)
}

pub(super) fn u16_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u16::from_le_bytes(b.get(at..at.checked_add(2)?)?.try_into().ok()?) as u64)
}

pub(super) fn u32_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u32::from_le_bytes(b.get(at..at.checked_add(4)?)?.try_into().ok()?) as u64)
}

pub(super) fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(at..at.checked_add(8)?)?.try_into().ok()?))
}

/// `len` bytes at `at`, if they lie within `b`.
pub(super) fn slice(b: &[u8], at: u64, len: u64) -> Option<&[u8]> {
    let start = usize::try_from(at).ok()?;
    let end = start.checked_add(usize::try_from(len).ok()?)?;
    b.get(start..end)
}

/// The NUL-terminated string at `at` (without its NUL), if it ends within `b`.
pub(super) fn c_str_at(b: &[u8], at: u64) -> Option<&[u8]> {
    let rest = b.get(usize::try_from(at).ok()?..)?;
    let end = rest.iter().position(|&c| c == 0)?;
    Some(&rest[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_past_the_end_are_none() {
        let b = [1u8, 2, 3, 4, 5];
        assert_eq!(u32_at(&b, 0), Some(0x0403_0201));
        assert_eq!(u32_at(&b, 2), None);
        assert_eq!(u64_at(&b, usize::MAX), None);
        assert_eq!(slice(&b, 3, 2), Some(&b[3..]));
        assert_eq!(slice(&b, 3, u64::MAX), None);
        assert_eq!(c_str_at(b"ab\0cd", 0), Some(&b"ab"[..]));
        assert_eq!(c_str_at(b"ab\0cd", 3), None, "no NUL before the end");
    }
}
