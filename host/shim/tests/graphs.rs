//! Programs that build, capture and launch CUDA graphs, run against the shim as their libcuda:
//! a C program of graphs (`clients/graphs.c`) must print what NVIDIA's driver printed on one
//! GPU; cuda.core's graph builder (`clients/graphs.py`) and graph definition
//! (`clients/graph_definition.py`) must build, capture, update and launch on every topology;
//! graph allocations (`clients/graph_peers.c`) must reach each peer their node names, on every
//! ordered pair, and fault on a peer it does not name; nodes' parameters read back, set in
//! graphs and in executable graphs, and executable graphs updated (`clients/graph_params.c`),
//! and `cuMemAlloc` during capture (`clients/capture_rules.c`), must do what NVIDIA's driver
//! documents. `graph_memory.c`, `graph_params.c` and `capture_rules.c` are to be recorded on a
//! GPU with NVIDIA's driver (`ci/graphs-bundle.sh`).
//!
//! The C programs need NVIDIA's `cuda.h` (`$PEERPOOL_CUDA_INCLUDE`) and the script a Python
//! with cuda-core (`$PEERPOOL_PYTHON`); without them those trials are skipped, with the reason.

mod support;

use libtest_mimic::{Arguments, Failed};
use peerpool_sim::catalog_topology;
use std::process::{Command, ExitCode};
use support::{CUDA_INCLUDE, PYTHON, c_program, clients, run, same_as_on_the_h200s, stderr, stdout, trial};

const TOPOLOGIES: [&str; 3] = ["two_h200_nvlink", "four_gpu_islands", "eight_gpu_nvswitch"];

/// cuda.core's graph builder (`clients/graphs.py`): three launches captured and nothing run at
/// capture, the graph completed (with the user object cuda.core keeps its kernel alive with),
/// uploaded and launched twice; a builder split over two streams and joined back.
fn cuda_core_builds_graphs(stem: &str) -> Result<(), Failed> {
    let mut script = Command::new(std::env::var(PYTHON)?);
    script.arg(clients().join("graphs.py"));
    let text = stdout(&run(&mut script, &[("PEERPOOL_TOPOLOGY", stem)])?);
    let want = "building: True\nafter three captured launches: (0, 0)\nlaunched once: (6, 6)\n\
                launched twice: (12, 12)\nsplit and joined, launched: (1122, 1112)\ndone\n";
    match text == want {
        true => Ok(()),
        false => Err(format!("expected:\n{want}printed:\n{text}").into()),
    }
}

/// cuda.core's `GraphDefinition` (`clients/graph_definition.py`): a graph of every node kind
/// with an allocation gpu1 may touch, launched twice; a graph updated; an allocation left to
/// the caller, added to by gpu1's kernel and freed; captures in the three modes. The same on
/// every topology, whose gpu1 has a peer link to gpu0.
fn cuda_core_defines_graphs(stem: &str) -> Result<(), Failed> {
    let mut script = Command::new(std::env::var(PYTHON)?);
    let out = run(script.arg(clients().join("graph_definition.py")), &[("PEERPOOL_TOPOLOGY", stem)])?;
    let want = "allocation: 1024 bytes on 0 peers (1,)\nlaunch 1: (16, 16) callbacks 1\nlaunch 2: (16, 16) callbacks 2\n\
                plain, launched: 6\nupdated, launched: 105\nthe kept allocation read back: CUDA_SUCCESS 10\n\
                freed: CUDA_SUCCESS\ncaptured global: 3\ncaptured thread_local: 3\ncaptured relaxed: 3\ndone\n";
    match (out.status.success(), stdout(&out)) {
        (true, text) if text == want => Ok(()),
        (_, text) => Err(format!("{}\nexpected:\n{want}printed:\n{text}stderr: {}", out.status, stderr(&out)).into()),
    }
}

/// `cuMemAlloc` while a stream captures (`clients/capture_rules.c`), the call
/// `cuThreadExchangeStreamCaptureMode` documents as potentially unsafe: refused with
/// `CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED`, the forbidding capture invalidated, exactly where
/// the documented modes forbid it (the capturing thread in global or thread-local mode, another
/// thread of the default mode during a global capture), allowed elsewhere.
fn cu_mem_alloc_follows_the_capture_modes() -> Result<(), Failed> {
    let out = run(&mut Command::new(c_program("capture_rules")?), &[("PEERPOOL_TOPOLOGY", "two_h200_nvlink")])?;
    let refused = "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED; status then CUDA_SUCCESS 2; end \
                   CUDA_ERROR_STREAM_CAPTURE_INVALIDATED; other capture 1, end CUDA_SUCCESS";
    let allowed = "CUDA_SUCCESS; status then CUDA_SUCCESS 1; end CUDA_SUCCESS; other capture 1, end CUDA_SUCCESS";
    let cells = [
        ("global, capturing thread", refused),
        ("global, second thread", refused),
        ("global, second thread, relaxed", allowed),
        ("thread-local, capturing thread", refused),
        ("thread-local, second thread", allowed),
        ("thread-local, second thread, relaxed", allowed),
        ("relaxed, capturing thread", allowed),
        ("relaxed, second thread", allowed),
        ("relaxed, second thread, relaxed", allowed),
    ];
    let want: String = cells.iter().map(|(cell, answer)| format!("cuMemAlloc [{cell}]: {answer}\n")).collect();
    let text = stdout(&out);
    let got: String = text.lines().filter(|l| l.starts_with("cuMemAlloc [")).map(|l| format!("{l}\n")).collect();
    match out.status.success() && got == want {
        true => Ok(()),
        false => Err(format!("{}\nexpected:\n{want}printed:\n{got}stderr: {}", out.status, stderr(&out)).into()),
    }
}

/// Graph allocations on every ordered pair of `stem`: a node naming the peer, and a capture
/// from a pool that granted it, each reach the peer's kernel where the two GPUs have a peer
/// link, and are refused at the node with `CUDA_ERROR_INVALID_DEVICE` where they have none.
fn graph_allocations_reach_named_peers(stem: &str) -> Result<(), Failed> {
    let out = run(&mut Command::new(c_program("graph_peers")?), &[("PEERPOOL_TOPOLOGY", stem)])?;
    let topology = catalog_topology(stem)?;
    let n = topology.device_count();
    let mut want = String::new();
    for owner in 0..n {
        for peer in (0..n).filter(|&p| p != owner) {
            let capable = topology.link(peer, owner).access;
            let (code, value) = match capable {
                true => ("CUDA_SUCCESS", 42),
                false => ("CUDA_ERROR_INVALID_DEVICE", 0),
            };
            want += &format!(
                "GPU {owner}'s graph allocation, GPU {peer} (peer capable {}): node {code} {value}, captured {code} \
                 {value}\n",
                capable as u8
            );
        }
    }
    want += "done\n";
    match (out.status.success(), stdout(&out)) {
        (true, text) if text == want => Ok(()),
        (_, text) => Err(format!("{}\nexpected:\n{want}printed:\n{text}stderr: {}", out.status, stderr(&out)).into()),
    }
}

/// A kernel on GPU 1 over GPU 0's graph allocation that does not name GPU 1 (`how`: the node
/// names no peer, or the pool granted GPU 1 after the capture) faults as on an ungranted pool:
/// `CUDA_ERROR_ILLEGAL_ADDRESS`, and the line naming kernel, thread, allocation and GPU.
fn graph_allocation_faults_an_unnamed_peer(how: &str) -> Result<(), Failed> {
    let mut program = Command::new(c_program("graph_peers")?);
    let out = run(program.arg(how), &[("PEERPOOL_TOPOLOGY", "two_h200_nvlink")])?;
    let text = stdout(&out);
    let want = format!("GPU 1 over GPU 0's graph allocation ({how}): CUDA_ERROR_ILLEGAL_ADDRESS");
    let said = stderr(&out);
    let named = said.lines().any(|l| {
        l.starts_with(
            "peerpool-sim: kernel add_one on GPU 1: block (0,0,0) thread (0,0,0) PTX line 10: illegal address",
        ) && l.contains("in an allocation of GPU 0 at")
            && l.ends_with("to which GPU 1 has no access: CUDA_ERROR_ILLEGAL_ADDRESS")
    });
    match out.status.success() && text.lines().any(|l| l == want) && named {
        true => Ok(()),
        false => Err(format!("{}\nstdout:\n{text}stderr: {said}", out.status).into()),
    }
}

/// What `clients/graph_params.c` prints: each value follows from the driver's documented
/// semantics (the kernel adds its last argument to each value; the host functions add 1 or 10).
const GRAPH_PARAMS: &str = "\
kernel node: same function 1, grid 4 block 64, arguments p 1 n 256 v 2, no extra 1
kernel node set: v 3
memset node: dst p 1, value 1, element 4, width 256, height 1
memset node set: value 4
memset parameters of the kernel node: CUDA_ERROR_INVALID_VALUE
memcpy node: from device p 1, to host 1, width 1024, height 1, depth 1
memcpy node set: width 512
host node: bump 1, data 1
host node set: bump_ten 1
child node's graph: a copy 1, 1 node
event nodes: record 1 then 1, wait 1 then 1
exec record node set: CUDA_SUCCESS
exec wait node set: CUDA_SUCCESS
event graph launched: CUDA_SUCCESS
launch 1: host[0] 57 host[255] 57, calls 10
launch 2: host2[0] 230 host2[255] 230, host[0] 57, calls 11
the graph's nodes unchanged: memset 4, kernel 3
exec memset parameters on the kernel node: CUDA_ERROR_INVALID_VALUE
exec child graph of another shape: CUDA_ERROR_INVALID_VALUE
launch 3, memset set generically: host2[0] 250
kernel disabled: enabled 0, host2[0] 230
kernel enabled: enabled 1, host2[0] 250
update, same shape: CUDA_SUCCESS, result 0
launch 4, updated: host[0] 18 host[255] 18, calls 15
update, fewer nodes: CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE, result 2, error node null 1
update, a kernel node now empty: CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE, result 3, error node the empty node 1
launch 5, after the refusals: host[0] 18, calls 16
flags: 0, auto-free and node priority 9, upload 0
dependency removed: 1 edge, 2 roots, 0 before the node
removed again: CUDA_ERROR_INVALID_VALUE
found in the clone: another node 1, type 0, v 3
a node of another graph: CUDA_ERROR_INVALID_VALUE
attributes: priority -1, cooperative 1
copied: priority -1, cooperative 1
attribute 1000: CUDA_ERROR_INVALID_VALUE
added: types 5 2 0 10 11, allocation address set 1
memset node: added with 9, set to 11
kernel parameters on the memset node: CUDA_ERROR_INVALID_VALUE
child graph moved: the node holds it 1
added graph launched: p[0] 13
captured into a graph: the same graph 1, 2 nodes, 1 edges
done
";

/// `clients/graph_params.c` on the H200 pair prints [`GRAPH_PARAMS`] and exits 0.
fn graph_params_as_documented() -> Result<(), Failed> {
    let out = run(&mut Command::new(c_program("graph_params")?), &[("PEERPOOL_TOPOLOGY", "two_h200_nvlink")])?;
    match (out.status.success(), stdout(&out)) {
        (true, text) if text == GRAPH_PARAMS => Ok(()),
        (_, text) => {
            Err(format!("{}\nexpected:\n{GRAPH_PARAMS}printed:\n{text}stderr: {}", out.status, stderr(&out)).into())
        }
    }
}

fn main() -> ExitCode {
    let mut trials = Vec::new();
    for stem in TOPOLOGIES {
        trials.push(trial(format!("cuda_core_builds_graphs::{stem}"), PYTHON, move || cuda_core_builds_graphs(stem)));
        trials.push(trial(format!("cuda_core_defines_graphs::{stem}"), PYTHON, move || cuda_core_defines_graphs(stem)));
        trials.push(trial(format!("graph_allocations_reach_named_peers::{stem}"), CUDA_INCLUDE, move || {
            graph_allocations_reach_named_peers(stem)
        }));
    }
    for how in ["no-descriptor", "after-capture"] {
        trials.push(trial(format!("graph_allocation_faults_an_unnamed_peer::{how}"), CUDA_INCLUDE, move || {
            graph_allocation_faults_an_unnamed_peer(how)
        }));
    }
    // Graphs built node by node and captured (forks joined and left unjoined, dependencies set
    // by hand, calls forbidden in capture), each launched and read back, to the graph launch a
    // capture refuses, where the client stops.
    trials.push(trial("c_client_runs_graphs".into(), CUDA_INCLUDE, || {
        same_as_on_the_h200s(&mut Command::new(c_program("graphs")?), "one-h100/clients-graphs.txt")
    }));
    // Node parameters read back and set, in graphs and executable graphs; updates.
    trials.push(trial("c_client_sets_graph_params".into(), CUDA_INCLUDE, graph_params_as_documented));
    trials.push(trial(
        "cu_mem_alloc_follows_the_capture_modes".into(),
        CUDA_INCLUDE,
        cu_mem_alloc_follows_the_capture_modes,
    ));
    let conclusion = libtest_mimic::run(&Arguments::from_args(), trials);
    support::clean_up();
    conclusion.exit_code()
}
