-- NNNN_host_bench_method.sql: which way of measuring the host a row holds. The first
-- measurements (method 1) read memory with 64-bit loads and reported the mean over the
-- slowest thread's time, about three quarters of what llama.cpp's vector kernels stream;
-- method 2 reads with the CPU's vector loads and takes the median pass, and the kernel rates
-- the fastest of several rounds. The daemon measures a host again when its stored row is of
-- an older method than its own (server/hostbench.h: RF_HOSTBENCH_METHOD).
--
-- Plain SQL only: server/store/store.c wraps this file in one BEGIN IMMEDIATE ... COMMIT with
-- its PRAGMA user_version. Append-only once released.

ALTER TABLE host_bench ADD COLUMN method INTEGER NOT NULL DEFAULT 1 CHECK (method >= 1);
