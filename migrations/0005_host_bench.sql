-- NNNN_host_bench.sql: this host's own measurement (server/hostbench.h: memory read
-- bandwidth, int8 and f32 dot-product throughput per thread, the instruction set the kernels
-- ran with), one row per hardware fingerprint, so that a restart on the same machine does not
-- measure it again. Independent of llama.cpp: the figures are the machine's.
--
-- Independent of every other table: it references none and none references it.
--
-- Plain SQL only: server/store/store.c wraps this file in one BEGIN IMMEDIATE ... COMMIT with
-- its PRAGMA user_version. Append-only once released.

CREATE TABLE host_bench (
	fingerprint TEXT PRIMARY KEY CHECK (length(fingerprint) BETWEEN 1 AND 63),
	threads INTEGER NOT NULL CHECK (threads BETWEEN 1 AND 1024),
	memory_bandwidth_gbs REAL NOT NULL CHECK (memory_bandwidth_gbs > 0),
	int8_gops_per_thread REAL NOT NULL CHECK (int8_gops_per_thread > 0),
	f32_gflops_per_thread REAL NOT NULL CHECK (f32_gflops_per_thread > 0),
	kernel_isa TEXT NOT NULL CHECK (length(kernel_isa) BETWEEN 1 AND 15),
	duration_ms REAL NOT NULL CHECK (duration_ms >= 0),
	measured_at_ms INTEGER NOT NULL CHECK (measured_at_ms >= 0)
) STRICT;
