//! `CUDA_VISIBLE_DEVICES`: which of a machine's devices a process sees, and in which order.
//!
//! As the CUDA Programming Guide (its environment variables appendix) describes it: a
//! comma-separated list of device indices or UUIDs (`GPU-` and enough of the UUID's leading hex
//! digits to name one device), enumerated in the order listed; an entry that names no device
//! ends the list (`0,2,-1,1` shows devices 0 and 2); an empty value shows none. As NVIDIA's
//! driver answered on one H200 (`docs/hardware/2026-12-01-visible-devices/forms/`):
//! - an index is read as C's `strtol` with base 0 reads it: leading spaces, a sign, `0x` hex
//!   (`0x0`, `00`, `+0`, ` 0` all name device 0); a space after it is ignored;
//! - a UUID needs `GPU-` in capitals and no space before it; its hex digits match in either
//!   case, and a space after it is ignored;
//! - a device listed twice (`0,0`, or one UUID twice) makes `cuInit` fail with
//!   `CUDA_ERROR_INVALID_DEVICE`;
//! - `0,GPU-<device 0's UUID>` shows one device, not an error: read here as the first entry's
//!   kind (index or UUID) being the list's, an entry of the other kind ending it (one GPU could
//!   not tell this from a repeat across kinds being dropped).
//!
//! MIG identifiers (`MIG-...`) name nothing here: the simulator has no MIG.

use crate::Topology;
use peerpool::driver::uuid_text;

/// The environment variable.
pub const VISIBLE: &str = "CUDA_VISIBLE_DEVICES";

/// An entry of the list: an index, or a UUID prefix.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Index,
    Uuid,
}

impl Topology {
    /// What a process whose `CUDA_VISIBLE_DEVICES` is `list` sees of this machine; `None` when
    /// the list names a device twice (its `cuInit` fails with `CUDA_ERROR_INVALID_DEVICE`).
    pub fn visible(&self, list: &str) -> Option<Topology> {
        self.visible_ordinals(list).map(|ordinals| self.subset(&ordinals))
    }

    /// The ordinals `list` names, in its order, up to the first entry that names none; `None`
    /// when it names one twice.
    pub fn visible_ordinals(&self, list: &str) -> Option<Vec<usize>> {
        let mut seen: Vec<usize> = Vec::new();
        if list.is_empty() {
            return Some(seen);
        }
        let mut kind = None;
        for entry in list.split(',') {
            let named = match (self.by_index(entry), self.by_uuid(entry)) {
                (Some(d), _) => Some((Kind::Index, d)),
                (None, Some(d)) => Some((Kind::Uuid, d)),
                (None, None) => None,
            };
            match named {
                Some((k, d)) if *kind.get_or_insert(k) == k => match seen.contains(&d) {
                    true => return None,
                    false => seen.push(d),
                },
                _ => break,
            }
        }
        Some(seen)
    }

    /// `entry` as `strtol(entry, &end, 0)` reads it, only spaces after: a device's index.
    fn by_index(&self, entry: &str) -> Option<usize> {
        let text = entry.trim_start().trim_end_matches(' ');
        let (negative, digits) = match text.as_bytes().first()? {
            b'-' => (true, &text[1..]),
            b'+' => (false, &text[1..]),
            _ => (false, text),
        };
        let value = match digits.strip_prefix("0x").or_else(|| digits.strip_prefix("0X")) {
            Some(hex) => u64::from_str_radix(hex, 16).ok()?,
            None if digits.len() > 1 && digits.starts_with('0') => u64::from_str_radix(&digits[1..], 8).ok()?,
            None => digits.parse::<u64>().ok()?,
        };
        let index = usize::try_from(value).ok().filter(|&i| i < self.device_count())?;
        (!negative || index == 0).then_some(index)
    }

    /// `entry` as a UUID prefix naming one device: `GPU-` and hex digits, spaces only after.
    fn by_uuid(&self, entry: &str) -> Option<usize> {
        let prefix = entry.trim_end_matches(' ').strip_prefix("GPU-")?.to_ascii_lowercase();
        if prefix.is_empty() {
            return None;
        }
        let named = |d: usize| self.uuid(d).is_some_and(|u| uuid_text(&u)[4..].starts_with(&prefix));
        let mut matching = (0..self.device_count()).filter(|&d| named(d));
        match (matching.next(), matching.next()) {
            (Some(d), None) => Some(d),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::{Link, Topology, catalog_topology};
    use peerpool::driver::uuid_text;

    fn islands() -> Topology {
        catalog_topology("four_gpu_islands").unwrap()
    }

    fn uuid(t: &Topology, d: usize) -> String {
        uuid_text(&t.uuid(d).unwrap())
    }

    fn seen(t: &Topology, list: &str) -> Option<Vec<usize>> {
        t.visible_ordinals(list)
    }

    #[test]
    fn indices_in_the_order_listed_up_to_the_first_that_names_nothing() {
        let t = islands();
        assert_eq!(seen(&t, "2,1"), Some(vec![2, 1]));
        assert_eq!(seen(&t, "0,2,-1,1"), Some(vec![0, 2]), "the guide's example");
        assert_eq!(seen(&t, "3,4,0"), Some(vec![3]), "4 is out of range");
        assert_eq!(seen(&t, ""), Some(vec![]));
        assert_eq!(seen(&t, "x,0"), Some(vec![]));
        assert_eq!(seen(&t, "MIG-1234,0"), Some(vec![]));
    }

    #[test]
    fn indices_read_as_strtol_reads_them() {
        let t = islands();
        for one in ["1", " 1", "1 ", "+1", "01", "0x1", "0X1"] {
            assert_eq!(seen(&t, one), Some(vec![1]), "{one:?}");
        }
        assert_eq!(seen(&t, "-0"), Some(vec![0]));
        assert_eq!(seen(&t, "010"), Some(vec![]), "octal 8: no such device");
        assert_eq!(seen(&t, "03"), Some(vec![3]));
        assert_eq!(seen(&t, "1x"), Some(vec![]));
    }

    #[test]
    fn uuids_whole_or_a_unique_prefix_with_gpu_in_capitals() {
        let t = islands();
        let (u3, u0) = (uuid(&t, 3), uuid(&t, 0));
        assert_eq!(seen(&t, &format!("{u3},{u0}")), Some(vec![3, 0]));
        let upper = format!("GPU-{}", u3[4..12].to_ascii_uppercase());
        assert_eq!(seen(&t, &format!("{upper},{u0} ")), Some(vec![3, 0]), "hex in capitals, a space after");
        assert_eq!(seen(&t, &format!("gpu-{}", &u3[4..12])), Some(vec![]), "gpu- in lower case");
        assert_eq!(seen(&t, &format!(" {u3}")), Some(vec![]), "a space before");
        assert_eq!(seen(&t, "GPU-,0"), Some(vec![]), "no digits name nothing");
        assert_eq!(seen(&t, "GPU-zzzz,0"), Some(vec![]));
    }

    #[test]
    fn a_device_twice_refuses_and_the_first_entry_sets_the_kind() {
        let t = islands();
        let u1 = uuid(&t, 1);
        assert_eq!(seen(&t, "1,0,1"), None);
        assert_eq!(seen(&t, &format!("{u1},{u1}")), None);
        assert!(t.visible("0,0").is_none());
        assert_eq!(seen(&t, &format!("0,{u1},2")), Some(vec![0]), "a UUID after an index ends the list");
        assert_eq!(seen(&t, &format!("{u1},0")), Some(vec![1]), "an index after a UUID ends it");
    }

    #[test]
    fn a_view_renumbers_the_devices_and_keeps_their_identity_links_and_faults() {
        let t = islands();
        let view = t.visible("3,2,0").unwrap();
        assert_eq!(view.device_count(), 3);
        assert_eq!((0..3).map(|d| view.physical(d).unwrap()).collect::<Vec<_>>(), [3, 2, 0]);
        assert_eq!(view.uuid(0), t.uuid(3), "a device's UUID is the same in every view");
        assert_eq!(view.devices[1].pci_bus_id, t.devices[2].pci_bus_id);
        assert_eq!(view.ordinal_of(0), Some(2));
        assert_eq!(view.ordinal_of(1), None);
        for (a, b) in [(0, 1), (1, 0), (0, 2), (2, 1)] {
            assert_eq!(view.link(a, b), t.link(view.physical(a).unwrap(), view.physical(b).unwrap()));
        }
        assert_eq!(view.link(0, 1), Link::NVLINK, "3 and 2 are one island");
        assert_eq!(view.link(1, 2), Link::NONE, "2 and 0 are not");

        let faulty = catalog_topology("corrupt_link_pair").unwrap();
        let ((from, to), fault) = faulty.faults().next().unwrap();
        let swapped = faulty.visible(&format!("{to},{from}")).unwrap();
        assert_eq!(swapped.fault(1, 0), Some(fault), "the fault follows its devices");
        assert_eq!(faulty.visible(&from.to_string()).unwrap().faults().count(), 0);
    }
}
