//! `CUDA_VISIBLE_DEVICES`: which of a machine's devices a process sees, and in which order, as
//! the CUDA Programming Guide (its environment variables appendix) describes the variable:
//! a comma-separated list of device indices or UUIDs (`GPU-` and enough of the UUID's leading
//! hex digits to name one device), enumerated in the order listed. An entry that names no
//! device ends the list: `0,2,-1,1` shows devices 0 and 2. An empty value shows none.
//!
//! Not documented, and chosen here: an entry naming a device already listed, or a UUID prefix
//! that two devices share, also ends the list; spaces around an entry are ignored; UUIDs match
//! without regard to case. MIG identifiers (`MIG-...`) name nothing: the simulator has no MIG.

use crate::Topology;
use peerpool::driver::uuid_text;

/// The environment variable.
pub const VISIBLE: &str = "CUDA_VISIBLE_DEVICES";

impl Topology {
    /// What a process whose `CUDA_VISIBLE_DEVICES` is `list` sees of this machine.
    pub fn visible(&self, list: &str) -> Topology {
        self.subset(&self.visible_ordinals(list))
    }

    /// The ordinals `list` names, in its order, up to the first entry that names none.
    pub fn visible_ordinals(&self, list: &str) -> Vec<usize> {
        let uuids: Vec<String> =
            (0..self.device_count()).map(|d| self.uuid(d).map(|u| uuid_text(&u)).unwrap_or_default()).collect();
        let mut seen: Vec<usize> = Vec::new();
        if list.is_empty() {
            return seen;
        }
        for entry in list.split(',').map(str::trim) {
            let named = match entry.parse::<i64>() {
                Ok(index) => usize::try_from(index).ok().filter(|&i| i < self.device_count()),
                Err(_) if entry.len() > 4 && entry[..4].eq_ignore_ascii_case("GPU-") => {
                    let prefix = entry.to_ascii_lowercase();
                    let mut matching = (0..uuids.len()).filter(|&d| uuids[d].to_ascii_lowercase().starts_with(&prefix));
                    match (matching.next(), matching.next()) {
                        (Some(d), None) => Some(d),
                        _ => None,
                    }
                }
                Err(_) => None,
            };
            match named {
                Some(d) if !seen.contains(&d) => seen.push(d),
                _ => break,
            }
        }
        seen
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

    #[test]
    fn indices_in_the_order_listed_up_to_the_first_that_names_nothing() {
        let t = islands();
        assert_eq!(t.visible_ordinals("2,1"), [2, 1]);
        assert_eq!(t.visible_ordinals("0,2,-1,1"), [0, 2], "the guide's example");
        assert_eq!(t.visible_ordinals("3,4,0"), [3], "4 is out of range");
        assert_eq!(t.visible_ordinals(" 1 , 0 "), [1, 0]);
        assert_eq!(t.visible_ordinals("1,1,0"), [1], "a repeat ends the list");
        assert_eq!(t.visible_ordinals(""), Vec::<usize>::new());
        assert_eq!(t.visible_ordinals("x,0"), Vec::<usize>::new());
        assert_eq!(t.visible_ordinals("MIG-1234,0"), Vec::<usize>::new());
    }

    #[test]
    fn uuids_whole_or_a_unique_prefix_in_any_case() {
        let t = islands();
        let (u3, u0) = (uuid(&t, 3), uuid(&t, 0));
        assert_eq!(t.visible_ordinals(&format!("{u3},{u0}")), [3, 0]);
        assert_eq!(t.visible_ordinals(&format!("{},1", &u3[..12].to_ascii_uppercase())), [3, 1]);
        assert_eq!(t.visible_ordinals("GPU-,0"), Vec::<usize>::new(), "no digits name nothing");
        assert_eq!(t.visible_ordinals("GPU-zzzz,0"), Vec::<usize>::new());
    }

    #[test]
    fn a_view_renumbers_the_devices_and_keeps_their_identity_links_and_faults() {
        let t = islands();
        let view = t.visible("3,2,0");
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
        let swapped = faulty.visible(&format!("{to},{from}"));
        assert_eq!(swapped.fault(1, 0), Some(fault), "the fault follows its devices");
        assert_eq!(faulty.visible(&from.to_string()).faults().count(), 0);
    }
}
