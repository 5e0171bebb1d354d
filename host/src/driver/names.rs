//! Driver calls by name: the names CUDA documents ([`DOCUMENTED_CALLS`], written from cudarc's
//! bindings) and how an exported symbol maps to one, for what names calls in text (fault rules).

pub use super::documented_calls::DOCUMENTED_CALLS;

/// The name CUDA documents for an exported symbol: `cuMemAlloc` for `cuMemAlloc_v2` (fault
/// rules and traces name the calls of a libcuda so).
pub fn documented_name(symbol: &str) -> &str {
    // Every entry point passes through here: a scan of the trailing digits, not a substring
    // search.
    let bytes = symbol.as_bytes();
    let digits = bytes.iter().rev().take_while(|b| b.is_ascii_digit()).count();
    let base = bytes.len() - digits;
    match digits > 0 && bytes[..base].ends_with(b"_v") {
        true => &symbol[..base - 2],
        false => symbol,
    }
}

/// Whether `name` is a documented driver call.
pub fn is_documented(name: &str) -> bool {
    DOCUMENTED_CALLS.binary_search(&name).is_ok()
}

/// The documented call `name` most likely meant: the nearest by edit distance, at most 3 edits
/// away (and fewer than half its length), if one is.
pub fn nearest_documented(name: &str) -> Option<&'static str> {
    let limit = 3.min(name.len() / 2);
    DOCUMENTED_CALLS
        .iter()
        .filter(|call| call.len().abs_diff(name.len()) <= limit)
        .map(|call| (edits(name, call), *call))
        .filter(|&(d, _)| d <= limit)
        .min()
        .map(|(_, call)| call)
}

/// Levenshtein distance between `a` and `b`, by bytes (call names are ASCII).
fn edits(a: &str, b: &str) -> usize {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, &x) in a.iter().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, &y) in b.iter().enumerate() {
            let substituted = diagonal + usize::from(x != y);
            diagonal = row[j + 1];
            row[j + 1] = substituted.min(row[j] + 1).min(row[j + 1] + 1);
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_near_miss_finds_the_call_meant() {
        assert_eq!(edits("kitten", "sitting"), 3);
        assert_eq!(edits("", "abc"), 3);
        assert_eq!(nearest_documented("cuMemPoolSetAcess"), Some("cuMemPoolSetAccess"));
        assert_eq!(nearest_documented("cuMemAllocc"), Some("cuMemAlloc"));
        assert_eq!(nearest_documented("cuFrobnicate"), None);
        assert_eq!(nearest_documented("cu"), None);
    }
}
