//! Sharing pool and virtual-memory allocations between processes.
