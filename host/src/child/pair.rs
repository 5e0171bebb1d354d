//! A child that sees only one ordered pair of GPUs, by UUID: its `cuInit` then sets up two
//! GPUs, not the machine's every one, and it finds the pair again by UUID in its own numbering.

use super::role::{Call, PAIR_ARG, RoleCommand};
use crate::{Error, System};

/// Makes `command`'s child see only `owner` and `accessor` of `system`, by UUID
/// (`CUDA_VISIBLE_DEVICES`), and tells it which is which (its [`PAIR_ARG`] argument, read by
/// [`pair_here`]). Without both UUIDs the child sees what this process sees, and goes by
/// ordinals.
pub fn see_only_pair(command: &mut RoleCommand, system: &System, (owner, accessor): (usize, usize)) {
    if let (Ok(o), Ok(a)) = (system.uuid(owner), system.uuid(accessor)) {
        let pair = format!("{o},{a}");
        command.env("CUDA_VISIBLE_DEVICES", &pair).arg(PAIR_ARG, &pair);
    }
}

/// In a child started by [`see_only_pair`]: the owner's and the accessor's UUIDs, or `None`
/// in a process no parent told of a pair; an error when its role call cannot be read.
pub fn pair_uuids() -> crate::Result<Option<(String, String)>> {
    let call = Call::current().map_err(Error::InvalidArgument)?;
    Ok(call.as_ref().and_then(|call| call.optional(PAIR_ARG)).and_then(|pair| {
        let (owner, accessor) = pair.split_once(',')?;
        Some((owner.to_string(), accessor.to_string()))
    }))
}

/// In a child: the pair its parent named `(owner, accessor)` in the parent's numbering, in
/// this process's numbering (found by [`pair_uuids`] where the parent gave them).
pub fn pair_here(system: &System, (owner, accessor): (usize, usize)) -> crate::Result<(usize, usize)> {
    let Some((o, a)) = pair_uuids()? else { return Ok((owner, accessor)) };
    let find = |uuid: &str, parent: usize| {
        let missing = || Error::InvalidArgument(format!("gpu{parent} ({uuid}) is not a GPU this child sees"));
        system.ordinal_of_uuid(uuid)?.ok_or_else(missing)
    };
    Ok((find(&o, owner)?, find(&a, accessor)?))
}
