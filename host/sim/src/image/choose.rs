//! Which code of an image runs on a device, as NVIDIA's driver chooses it, and which PTX the
//! simulator runs in its place.
//!
//! The driver runs machine code built for the device's family: `sm_XY` on compute `X.Z` with
//! `Z >= Y`, family-specific `sm_XYf` likewise, architecture-specific `sm_XYa` only on `X.Y`
//! exactly; the newest such code wins. Without any, it JIT-compiles the newest PTX the device
//! may run: `compute_XY` on any compute capability from `X.Y` up, `compute_XYf` within the
//! family, `compute_XYa` on `X.Y` only. The simulator always runs PTX, so it takes that newest
//! PTX whichever the driver takes; an image whose machine code the driver would run and that
//! holds no PTX for the device loads, and its kernels cannot be launched.

use super::ComputeCapability;

/// What a `-gencode` code names: plain, architecture-specific (`a`) or family-specific (`f`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Variant {
    Plain,
    Arch,
    Family,
}

/// A target of machine code or PTX: `sm_90a` is `((9, 0), Arch)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Arch {
    pub cc: ComputeCapability,
    pub variant: Variant,
}

impl Arch {
    /// Machine code for this target runs on `device`.
    pub fn machine_runs_on(self, device: ComputeCapability) -> bool {
        match self.variant {
            Variant::Arch => self.cc == device,
            Variant::Plain | Variant::Family => self.cc.0 == device.0 && self.cc.1 <= device.1,
        }
    }

    /// PTX for this target compiles for `device`.
    pub fn ptx_runs_on(self, device: ComputeCapability) -> bool {
        match self.variant {
            Variant::Arch => self.cc == device,
            Variant::Family => self.cc.0 == device.0 && self.cc.1 <= device.1,
            Variant::Plain => self.cc <= device,
        }
    }

    /// Its name as nvcc writes it, with `prefix` (`sm` or `compute`).
    pub fn name(self, prefix: &str) -> String {
        let suffix = match self.variant {
            Variant::Plain => "",
            Variant::Arch => "a",
            Variant::Family => "f",
        };
        format!("{prefix}_{}{}{suffix}", self.cc.0, self.cc.1)
    }
}

/// What an image offers: machine code or PTX for a target.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Offer {
    pub ptx: bool,
    pub arch: Arch,
}

/// The driver's choice among an image's offers for one device, and the simulator's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Choice {
    /// The offer the driver runs: its index, and whether it is machine code. `None`: the driver
    /// has nothing for this device (`CUDA_ERROR_NO_BINARY_FOR_GPU`).
    pub driver: Option<usize>,
    /// The PTX offer the simulator runs, if the image holds one the device may run.
    pub simulator: Option<usize>,
}

/// Chooses among `offers` for `device`, as the driver does and as the simulator does.
pub fn choose(offers: &[Offer], device: ComputeCapability) -> Choice {
    // The newest target wins; among equal ones, the most specific (`a`, then `f`).
    let rank = |o: &Offer| (o.arch.cc, o.arch.variant == Variant::Arch, o.arch.variant == Variant::Family);
    let best = |machine: bool| {
        let fits = |o: &Offer| match machine {
            true => !o.ptx && o.arch.machine_runs_on(device),
            false => o.ptx && o.arch.ptx_runs_on(device),
        };
        offers.iter().enumerate().filter(|(_, o)| fits(o)).max_by_key(|(_, o)| rank(o)).map(|(i, _)| i)
    };
    let ptx = best(false);
    Choice { driver: best(true).or(ptx), simulator: ptx }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `sm_90`, `compute_80a`, `sm_100f`, ... as an offer.
    fn offer(name: &str) -> Offer {
        let (prefix, rest) = name.split_once('_').unwrap();
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        let n: i32 = digits.parse().unwrap();
        let variant = match &rest[digits.len()..] {
            "a" => Variant::Arch,
            "f" => Variant::Family,
            _ => Variant::Plain,
        };
        Offer { ptx: prefix == "compute", arch: Arch { cc: (n / 10, n % 10), variant } }
    }

    /// What the driver runs and what the simulator runs, by name ("-" for nothing).
    fn chosen(image: &[&str], device: ComputeCapability) -> (String, String) {
        let offers: Vec<Offer> = image.iter().map(|n| offer(n)).collect();
        let c = choose(&offers, device);
        let name = |i: Option<usize>| i.map_or("-".to_owned(), |i| image[i].to_owned());
        (name(c.driver), name(c.simulator))
    }

    /// The driver's rules, case by case: an image's offers, a device, what the driver runs
    /// and what the simulator runs.
    #[test]
    fn the_drivers_choice_and_the_simulators_case_by_case() {
        let cases: &[(&[&str], ComputeCapability, &str, &str)] = &[
            // nvcc's usual form: machine code for the device, its PTX beside it.
            (&["sm_90", "compute_90"], (9, 0), "sm_90", "compute_90"),
            (&["sm_80", "compute_80"], (8, 0), "sm_80", "compute_80"),
            (&["sm_80", "compute_80"], (8, 6), "sm_80", "compute_80"),
            // Machine code of another major runs nowhere else: the PTX is compiled.
            (&["sm_80", "compute_80"], (9, 0), "compute_80", "compute_80"),
            (&["sm_80", "compute_80"], (10, 0), "compute_80", "compute_80"),
            (&["sm_90", "compute_90"], (8, 0), "-", "-"),
            (&["sm_90", "compute_90"], (10, 0), "compute_90", "compute_90"),
            // Both architectures: each device its own machine code, the newest PTX it compiles.
            (&["sm_80", "compute_80", "sm_90", "compute_90"], (8, 0), "sm_80", "compute_80"),
            (&["sm_80", "compute_80", "sm_90", "compute_90"], (9, 0), "sm_90", "compute_90"),
            (&["sm_80", "compute_80", "sm_90", "compute_90"], (12, 0), "compute_90", "compute_90"),
            // PTX alone, machine code alone.
            (&["compute_80"], (9, 0), "compute_80", "compute_80"),
            (&["compute_90"], (8, 0), "-", "-"),
            (&["sm_90"], (9, 0), "sm_90", "-"),
            (&["sm_80"], (9, 0), "-", "-"),
            (&["sm_86"], (8, 0), "-", "-"),
            (&["sm_80", "sm_86"], (8, 9), "sm_86", "-"),
            // The newest machine code the device runs, before older code or any PTX.
            (&["sm_80", "sm_86", "compute_86"], (8, 6), "sm_86", "compute_86"),
            (&["sm_80", "compute_86"], (8, 6), "sm_80", "compute_86"),
            // Architecture-specific: that compute capability only.
            (&["sm_90a", "compute_90a"], (9, 0), "sm_90a", "compute_90a"),
            (&["sm_90a", "compute_90a"], (10, 0), "-", "-"),
            (&["sm_100a", "compute_100a"], (10, 3), "-", "-"),
            (&["sm_90", "sm_90a", "compute_90"], (9, 0), "sm_90a", "compute_90"),
            // Family-specific: the major version's later minors too.
            (&["sm_100f", "compute_100f"], (10, 3), "sm_100f", "compute_100f"),
            (&["sm_100f", "compute_100f"], (12, 0), "-", "-"),
            (&["sm_103f"], (10, 0), "-", "-"),
            (&["compute_100f"], (10, 0), "compute_100f", "compute_100f"),
            // Nothing at all.
            (&[], (9, 0), "-", "-"),
        ];
        for &(image, device, driver, simulator) in cases {
            let want = (driver.to_owned(), simulator.to_owned());
            assert_eq!(chosen(image, device), want, "{image:?} on {}.{}", device.0, device.1);
        }
    }

    #[test]
    fn names_as_nvcc_writes_them() {
        assert_eq!(offer("sm_90a").arch.name("sm"), "sm_90a");
        assert_eq!(offer("compute_100f").arch.name("compute"), "compute_100f");
        assert_eq!(offer("sm_86").arch.name("sm"), "sm_86");
    }
}
