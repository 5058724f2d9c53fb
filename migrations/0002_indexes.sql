-- 0002_indexes.sql: indexes for the listing queries (benchmarks by model, by hardware and by
-- time; scans by time; profiles by kind).
--
-- Plain SQL only: server/store/store.c wraps this file in one BEGIN IMMEDIATE ... COMMIT with
-- `PRAGMA user_version = 2`, so it must NOT contain BEGIN, COMMIT, ROLLBACK, SAVEPOINT or
-- PRAGMA user_version. Append-only once released.

-- GET /api/benchmarks?model=...: newest first within a model.
CREATE INDEX benchmarks_by_model ON benchmarks (model, measured_at DESC, id DESC);

-- The speed estimator looks for measurements of this model on this machine
-- (basis "measured"), and GET /api/benchmarks?hardware=... lists a machine's runs.
CREATE INDEX benchmarks_by_hardware ON benchmarks (hardware_fingerprint, model, measured_at DESC);

-- GET /api/benchmarks with no filter: newest first.
CREATE INDEX benchmarks_by_time ON benchmarks (measured_at DESC, id DESC);

-- Scan history by wall-clock time (the id cursor covers paging; this covers "since T").
CREATE INDEX scans_by_time ON scans (scanned_at_ms DESC);

-- GET /api/profiles?kind=...
CREATE INDEX profiles_by_kind ON profiles (kind, id);
