-- NNNN_host_bench_kernel.sql: the host measurement per quant class (server/hostbench.h,
-- core/hw/hw.h enum hw_kernel): each class's block dot product, one thread, with the
-- instructions llama.cpp's CPU backend runs it with on this host (isa) and with AVX2's (the
-- instructions the fitted kernel efficiencies were measured with; 0 where not measured).
-- Rows of a fingerprint are written with its host_bench row (method 3 on); a host_bench row
-- of an older method has none and still reads as before.
--
-- Plain SQL only: server/store/store.c wraps this file in one BEGIN IMMEDIATE ... COMMIT with
-- its PRAGMA user_version. Append-only once released.

CREATE TABLE host_bench_kernel (
	fingerprint TEXT NOT NULL CHECK (length(fingerprint) BETWEEN 1 AND 63),
	kernel TEXT NOT NULL CHECK (length(kernel) BETWEEN 1 AND 15),
	isa TEXT NOT NULL CHECK (length(isa) BETWEEN 1 AND 15),
	gops_per_thread REAL NOT NULL CHECK (gops_per_thread > 0),
	avx2_gops_per_thread REAL NOT NULL CHECK (avx2_gops_per_thread >= 0),
	PRIMARY KEY (fingerprint, kernel)
) STRICT;
