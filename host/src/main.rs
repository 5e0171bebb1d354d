//! `peerpool`: prints what the driver says about the GPUs, their peers and their pools.

use std::process::ExitCode;

fn main() -> ExitCode {
    match peerpool::System::open() {
        Err(e) => {
            println!("peerpool: {e}");
            println!("nothing to inspect on this machine: no GPU is visible to CUDA.");
            ExitCode::SUCCESS
        }
        Ok(system) if system.device_count() == 0 => {
            println!("peerpool: the CUDA driver is installed but reports no GPU.");
            ExitCode::SUCCESS
        }
        Ok(system) => match system.facts() {
            Ok(facts) => {
                print!("{}", facts.render());
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("peerpool: reading the driver's facts failed: {e}");
                ExitCode::FAILURE
            }
        },
    }
}
