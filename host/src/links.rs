//! How each pair of GPUs is joined, named as `nvidia-smi topo -m` names it (`NV18`: 18 NVLinks;
//! `PIX`, `PXB`, `PHB`, `NODE`, `SYS`: the PCIe path), read from NVML (`nvml-wrapper`, which
//! loads `libnvidia-ml.so.1` at run time: without a driver there is no NVML and no link name,
//! never an error). Devices are matched to CUDA ordinals by PCI address, so the names follow
//! CUDA's order (`CUDA_VISIBLE_DEVICES`, `CUDA_DEVICE_ORDER`) whatever NVML's own order is.
//!
//! NVML is asked only with the crate's `nvml` feature (the `peerpool` command has it on); without
//! it, [`nvml_available`] and [`nvml_links`] say so, and reports go without link names.

#[cfg(feature = "nvml")]
use nvml_wrapper::{Nvml, enum_wrappers::device::TopologyLevel, error::NvmlError};

/// A GPU's PCI address, `(domain, bus, device)`, as CUDA's attributes and NVML both give it.
pub type PciAddress = (u32, u32, u32);

/// Links a GPU may have (NVML's `NVML_NVLINK_MAX_LINKS` has been 18; more are looked at).
#[cfg(feature = "nvml")]
const MAX_LINKS: u32 = 32;

/// What NVML says of one GPU's NVLinks: active links to each other GPU of the list, and to
/// NVSwitches (a remote end that is no GPU).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NvLinks {
    /// Active links to each GPU of the list, by its index there.
    pub to_gpu: Vec<u32>,
    /// Active links to switches.
    pub to_switch: u32,
}

/// The name of the link between GPUs `a` and `b`: direct NVLinks (`NV<n>`), else NVLinks of
/// both through switches (`NV<n>`, the fewer of the two), else the PCIe path `level` gives.
pub fn name(a: &NvLinks, b: &NvLinks, ia: usize, ib: usize, level: Option<&str>) -> Option<String> {
    let direct = a.to_gpu.get(ib).copied().unwrap_or(0).max(b.to_gpu.get(ia).copied().unwrap_or(0));
    if direct > 0 {
        return Some(format!("NV{direct}"));
    }
    if a.to_switch > 0 && b.to_switch > 0 {
        return Some(format!("NV{}", a.to_switch.min(b.to_switch)));
    }
    level.map(str::to_string)
}

/// `nvidia-smi topo -m`'s name for a PCIe path.
#[cfg(feature = "nvml")]
fn level_name(level: TopologyLevel) -> &'static str {
    match level {
        TopologyLevel::Internal => "INT",
        TopologyLevel::Single => "PIX",
        TopologyLevel::Multiple => "PXB",
        TopologyLevel::HostBridge => "PHB",
        TopologyLevel::Node => "NODE",
        TopologyLevel::System => "SYS",
    }
}

/// `0000:18:00.0`, the form NVML looks devices up by.
#[cfg(feature = "nvml")]
fn bus_id((domain, bus, device): PciAddress) -> String {
    format!("{domain:08x}:{bus:02x}:{device:02x}.0")
}

/// Why NVML is never asked in a build without the `nvml` feature.
#[cfg(not(feature = "nvml"))]
const NO_NVML: &str = "NVML: peerpool was built without its `nvml` feature";

/// Whether NVML can be used here; `Err` says why not (no driver, no library, no permission, or
/// a build without the `nvml` feature).
pub fn nvml_available() -> Result<(), String> {
    #[cfg(feature = "nvml")]
    return Nvml::init().map(drop).map_err(|e| format!("NVML: {e}"));
    #[cfg(not(feature = "nvml"))]
    Err(NO_NVML.into())
}

/// The link names `[from][to]` of the GPUs at `addresses`: never, without the `nvml` feature.
#[cfg(not(feature = "nvml"))]
pub fn nvml_links(_addresses: &[PciAddress]) -> Result<Vec<Vec<Option<String>>>, String> {
    Err(NO_NVML.into())
}

/// The link names `[from][to]` of the GPUs at `addresses` (CUDA's ordinals, in order); `None`
/// on the diagonal and where NVML could not say. `Err` when NVML cannot be used here (no
/// driver, no library, no permission).
#[cfg(feature = "nvml")]
pub fn nvml_links(addresses: &[PciAddress]) -> Result<Vec<Vec<Option<String>>>, String> {
    let nvml = Nvml::init().map_err(|e| format!("NVML: {e}"))?;
    let devices: Vec<_> = addresses.iter().map(|&a| nvml.device_by_pci_bus_id(bus_id(a)).ok()).collect();
    let n = addresses.len();
    let links: Vec<NvLinks> = devices
        .iter()
        .enumerate()
        .map(|(i, device)| {
            let mut links = NvLinks { to_gpu: vec![0; n], to_switch: 0 };
            let Some(device) = device else { return links };
            for index in 0..MAX_LINKS {
                let link = device.link_wrapper_for(index);
                match link.is_active() {
                    Ok(true) => {}
                    Ok(false) | Err(NvmlError::NotSupported) => continue,
                    Err(_) => break, // past the device's last link
                }
                let Ok(remote) = link.remote_pci_info() else { continue };
                let address = (remote.domain, remote.bus, remote.device);
                match addresses.iter().position(|&a| a == address) {
                    Some(j) if j != i => links.to_gpu[j] += 1,
                    Some(_) => {}
                    // A GPU CUDA does not show (CUDA_VISIBLE_DEVICES) is no switch.
                    None if nvml.device_by_pci_bus_id(remote.bus_id.as_str()).is_ok() => {}
                    None => links.to_switch += 1,
                }
            }
            links
        })
        .collect();
    Ok((0..n)
        .map(|a| {
            (0..n)
                .map(|b| {
                    if a == b {
                        return None;
                    }
                    // `Device` is not `Clone`: look the other one up again to hand it over.
                    let other = nvml.device_by_pci_bus_id(bus_id(addresses[b])).ok();
                    let level = match (&devices[a], other) {
                        (Some(x), Some(y)) => x.topology_common_ancestor(y).ok().map(level_name),
                        _ => None,
                    };
                    name(&links[a], &links[b], a, b, level)
                })
                .collect()
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn links(to_gpu: &[u32], to_switch: u32) -> NvLinks {
        NvLinks { to_gpu: to_gpu.to_vec(), to_switch }
    }

    #[test]
    fn names_follow_nvidia_smi() {
        // Two H200s joined by 18 links, seen from either end.
        let (a, b) = (links(&[0, 18], 0), links(&[18, 0], 0));
        assert_eq!(name(&a, &b, 0, 1, Some("SYS")).as_deref(), Some("NV18"));
        assert_eq!(name(&b, &a, 1, 0, Some("SYS")).as_deref(), Some("NV18"));
        // Eight GPUs on NVSwitches: every pair through the switches.
        let (s, t) = (links(&[0; 8], 18), links(&[0; 8], 18));
        assert_eq!(name(&s, &t, 2, 5, Some("SYS")).as_deref(), Some("NV18"));
        // No NVLink: the PCIe path, or nothing when NVML could not say.
        let (p, q) = (links(&[0, 0], 0), links(&[0, 0], 0));
        assert_eq!(name(&p, &q, 0, 1, Some("PIX")).as_deref(), Some("PIX"));
        assert_eq!(name(&p, &q, 0, 1, None), None);
        // One end on switches only: no shared fabric.
        assert_eq!(name(&s, &p, 0, 1, Some("NODE")).as_deref(), Some("NODE"));
    }

    #[test]
    #[cfg(feature = "nvml")]
    fn bus_ids_are_nvml_s_form() {
        assert_eq!(bus_id((0, 0x18, 0)), "00000000:18:00.0");
        assert_eq!(bus_id((1, 0xab, 0x1f)), "00000001:ab:1f.0");
    }

    #[test]
    #[cfg(not(feature = "nvml"))]
    fn without_the_feature_nvml_is_never_asked() {
        assert_eq!(nvml_available(), Err(NO_NVML.to_string()));
        assert_eq!(nvml_links(&[(0, 0x18, 0), (0, 0x2a, 0)]), Err(NO_NVML.to_string()));
    }
}
