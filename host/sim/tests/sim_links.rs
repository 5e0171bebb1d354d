//! Link faults and peer paths: bytes crossing a faulty direction arrive damaged where the
//! topology says (pp_check sees it), the other direction stays clean, and grants follow the
//! peer matrix, asymmetric and island topologies included.

mod sim_support;

use peerpool::PoolOptions;
use peerpool::driver::{Access, AccessDesc, PeerCopy, Stream};
use peerpool_sim::{LinkFault, Topology, catalog_topology};
use sim_support::{code, compare_pattern, fill_pattern, grant, granted_alloc, sim};

const WORDS: u64 = 1 << 14; // 64 KiB: 16 affected bytes at one per 4096
const BYTES: usize = (WORDS * 4) as usize;

#[test]
fn corrupt_link_damages_reads_flowing_0_to_1() {
    let (_, system) = sim(catalog_topology("corrupt_link_pair").unwrap());
    let (_pool, memory) = granted_alloc(&system, 0, 1, BYTES);
    fill_pattern(&system, 0, &memory, WORDS, 7).unwrap();
    assert!(compare_pattern(&system, 0, &memory, WORDS, 7).unwrap().is_clean(), "local reads are clean");
    let seen = compare_pattern(&system, 1, &memory, WORDS, 7).unwrap();
    assert_eq!((seen.mismatches, seen.first_mismatch), (BYTES as u64 / 4096, Some(0)));
    // The memory itself is intact: the damage happened on the wire.
    let words = memory.read_words(1).unwrap();
    assert_eq!(words[0], peerpool::kernels::pattern::pattern(0, 7));
}

#[test]
fn corrupt_link_damages_writes_flowing_0_to_1_only() {
    let (_, system) = sim(catalog_topology("corrupt_link_pair").unwrap());
    // gpu0 writes gpu1's memory: flows 0 -> 1, corrupt.
    let (_on1, remote) = granted_alloc(&system, 1, 0, BYTES);
    fill_pattern(&system, 0, &remote, WORDS, 8).unwrap();
    let seen = compare_pattern(&system, 1, &remote, WORDS, 8).unwrap();
    assert_eq!(seen.mismatches, BYTES as u64 / 4096);
    // gpu1 writes and reads gpu0's memory... reads flow 0 -> 1 (corrupt), writes 1 -> 0 (clean).
    let (_on0, other) = granted_alloc(&system, 0, 1, BYTES);
    fill_pattern(&system, 1, &other, WORDS, 9).unwrap();
    assert!(compare_pattern(&system, 0, &other, WORDS, 9).unwrap().is_clean());
}

#[test]
fn copies_across_a_faulty_direction_are_damaged() {
    let (sim, system) = sim(catalog_topology("corrupt_link_pair").unwrap());
    let d = &sim;
    let a = system.create_pool(0, PoolOptions::default()).unwrap();
    let b = system.create_pool(1, PoolOptions::default()).unwrap();
    let on0 = system.alloc(a.as_ref(), BYTES).unwrap();
    let on1 = system.alloc(b.as_ref(), BYTES).unwrap();
    on0.write(&vec![0x55; BYTES]).unwrap();
    let c0 = system.enter(0).unwrap().context();
    let c1 = system.enter(1).unwrap().context();
    let _ctx = system.enter(0).unwrap();
    let copy = PeerCopy { dst: on1.ptr(), dst_ctx: c1, src: on0.ptr(), src_ctx: c0, bytes: BYTES };
    d.memcpy_peer_async(copy, Stream::LEGACY).unwrap();
    let mut back = vec![0u8; BYTES];
    on1.read(&mut back).unwrap();
    let damaged: Vec<usize> = back.iter().enumerate().filter(|(_, b)| **b != 0x55).map(|(i, _)| i).collect();
    assert_eq!(damaged, (0..BYTES).step_by(4096).collect::<Vec<_>>());
    assert!(damaged.iter().all(|&i| back[i] == 0x54), "one bit flipped");
    // The way back is clean.
    let home = PeerCopy { dst: on0.ptr(), dst_ctx: c0, src: on1.ptr(), src_ctx: c1, bytes: BYTES };
    on1.write(&vec![0x66; BYTES]).unwrap();
    d.memcpy_peer_async(home, Stream::LEGACY).unwrap();
    on0.read(&mut back).unwrap();
    assert!(back.iter().all(|&b| b == 0x66));
}

#[test]
fn dropping_link_loses_bytes_of_writes() {
    let mut topology = Topology::two_h200();
    topology.set_fault(1, 0, Some(LinkFault { period: 1000, ..LinkFault::drop_bytes() }));
    let (_, system) = sim(topology);
    let (_pool, memory) = granted_alloc(&system, 0, 1, BYTES);
    memory.write(&vec![0xAA; BYTES]).unwrap();
    fill_pattern(&system, 1, &memory, WORDS, 3).unwrap();
    let mut bytes = vec![0u8; BYTES];
    memory.read(&mut bytes).unwrap();
    for (i, b) in bytes.iter().enumerate() {
        let word = peerpool::kernels::pattern::pattern(i as u64 / 4, 3).to_le_bytes();
        let want = if i % 1000 == 0 { 0xAA } else { word[i % 4] };
        assert_eq!(*b, want, "byte {i}");
    }
}

#[test]
fn one_way_pair_grants_only_the_capable_direction() {
    let (sim, system) = sim(catalog_topology("one_way_pair").unwrap());
    let d = &sim;
    assert!(d.device_can_access_peer(1, 0).unwrap());
    assert!(!d.device_can_access_peer(0, 1).unwrap());
    let on0 = system.create_pool(0, PoolOptions::default()).unwrap();
    let on1 = system.create_pool(1, PoolOptions::default()).unwrap();
    grant(&system, &on0, 1).unwrap();
    assert_eq!(code(grant(&system, &on1, 0)).as_deref(), Some("CUDA_ERROR_INVALID_DEVICE"));
    assert_eq!(system.pool_access(on1.as_ref(), 0).unwrap(), Access::None);
    // A refused entry refuses the whole call.
    let both =
        [AccessDesc { device: 1, access: Access::ReadWrite }, AccessDesc { device: 0, access: Access::ReadWrite }];
    let on1_access = d.mem_pool_set_access(on1.handle(), &both);
    assert_eq!(code(on1_access).as_deref(), Some("CUDA_ERROR_INVALID_DEVICE"));
    // Revoking where there is no path is fine.
    let none = [AccessDesc { device: 0, access: Access::None }];
    d.mem_pool_set_access(on1.handle(), &none).unwrap();
}

#[test]
fn islands_have_no_path_between_them() {
    let (sim, system) = sim(catalog_topology("four_gpu_islands").unwrap());
    for (from, to, path) in [(0, 1, true), (1, 0, true), (2, 3, true), (3, 2, true), (0, 2, false), (3, 1, false)] {
        assert_eq!(sim.device_can_access_peer(from, to).unwrap(), path, "{from} -> {to}");
    }
    let pool = system.create_pool(2, PoolOptions::default()).unwrap();
    grant(&system, &pool, 3).unwrap();
    assert_eq!(code(grant(&system, &pool, 0)).as_deref(), Some("CUDA_ERROR_INVALID_DEVICE"));
    assert_eq!(
        system.pool_access_table(pool.as_ref()).unwrap(),
        [Access::None, Access::None, Access::ReadWrite, Access::ReadWrite]
    );
}
