-- 0003_history_index.sql: indexes that give the benchmark listings their order, so that a
-- machine's history is read newest first from the index instead of being read whole and
-- sorted (a history query cost grew with every stored run: 37 ms at 30k runs).
--
-- Plain SQL only: server/store/store.c wraps this file in one BEGIN IMMEDIATE ... COMMIT with
-- `PRAGMA user_version = 3`, so it must NOT contain BEGIN, COMMIT, ROLLBACK, SAVEPOINT or
-- PRAGMA user_version. Append-only once released.

-- GET /api/benchmarks?hardware=... and the estimator's history of this machine
-- (WHERE hardware_fingerprint = ? ORDER BY measured_at DESC, id DESC LIMIT n).
CREATE INDEX benchmarks_by_hardware_time
	ON benchmarks (hardware_fingerprint, measured_at DESC, id DESC);

-- GET /api/benchmarks?hardware=...&model=...: the same order within one model. It replaces
-- 0002's index on the same columns, which lacked the id tie-breaker and so left SQLite a sort.
DROP INDEX IF EXISTS benchmarks_by_hardware;
CREATE INDEX benchmarks_by_hardware_model
	ON benchmarks (hardware_fingerprint, model, measured_at DESC, id DESC);
