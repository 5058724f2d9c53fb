-- 0001_init.sql: the first schema of the rigfit store (profiles, benchmark results, scan
-- history).
--
-- Migrations are plain SQL text embedded in the binary. server/store/store.c runs each file
-- inside its own BEGIN IMMEDIATE ... COMMIT together with `PRAGMA user_version = N`, so a
-- migration must NOT contain BEGIN, COMMIT, ROLLBACK, SAVEPOINT or PRAGMA user_version: it
-- either applies entirely or not at all. Files are append-only once released: change the
-- schema with a new NNNN_name.sql, never by editing an old one.
--
-- Conventions:
--  * Tables are STRICT: a column holds the type it declares, or the insert fails.
--  * JSON columns are TEXT checked with json_valid(); objects are required where the API
--    always sends an object.
--  * Timestamps named *_at are TEXT in one canonical UTC form, 'YYYY-MM-DDTHH:MM:SS.sssZ'
--    (what strftime('%Y-%m-%dT%H:%M:%fZ') writes), so that ordering by text is ordering by
--    time; callers normalise before inserting. Timestamps named *_ms are integer
--    milliseconds since the Unix epoch.
--  * Free-text identifiers carry a length cap so that a bad client cannot store megabytes in
--    a key.

-- Hardware, model and tier profiles: the shipped JSON files seeded at start, and the custom
-- ones clients PUT. `body` is the profile object as the API returns it.
CREATE TABLE profiles (
	id TEXT PRIMARY KEY NOT NULL
		CHECK (length(id) BETWEEN 1 AND 128 AND id NOT GLOB '*[^A-Za-z0-9._-]*'),
	kind TEXT NOT NULL CHECK (kind IN ('device', 'model', 'tier')),
	source TEXT NOT NULL CHECK (source IN ('shipped', 'custom')),
	body TEXT NOT NULL CHECK (json_valid(body) AND json_type(body) = 'object'),
	created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
		CHECK (length(created_at) = 24 AND created_at GLOB
		       '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9].[0-9][0-9][0-9]Z'),
	updated_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
		CHECK (length(updated_at) = 24 AND updated_at GLOB
		       '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9].[0-9][0-9][0-9]Z'),
	CHECK (updated_at >= created_at)
) STRICT;

-- Measured speeds (POST /api/benchmarks, `rigfit bench record`). run_id is chosen by the
-- client and unique, so that recording the same run twice is idempotent. At least one of the
-- two speeds must be known; a speed that was measured is positive.
CREATE TABLE benchmarks (
	id INTEGER PRIMARY KEY,
	run_id TEXT NOT NULL UNIQUE CHECK (length(run_id) BETWEEN 1 AND 128),
	hardware_fingerprint TEXT NOT NULL CHECK (length(hardware_fingerprint) BETWEEN 1 AND 128),
	model TEXT NOT NULL CHECK (length(model) BETWEEN 1 AND 256),
	precision TEXT NOT NULL CHECK (length(precision) BETWEEN 1 AND 32),
	backend TEXT NOT NULL CHECK (length(backend) BETWEEN 1 AND 32),
	runtime TEXT NOT NULL CHECK (length(runtime) BETWEEN 1 AND 64),
	runtime_version TEXT CHECK (runtime_version IS NULL OR length(runtime_version) BETWEEN 1 AND 64),
	settings TEXT NOT NULL DEFAULT '{}'
		CHECK (json_valid(settings) AND json_type(settings) = 'object'),
	prompt_tokens INTEGER NOT NULL CHECK (prompt_tokens >= 0),
	generated_tokens INTEGER NOT NULL CHECK (generated_tokens >= 0),
	prefill_tokens_per_s REAL CHECK (prefill_tokens_per_s IS NULL OR prefill_tokens_per_s > 0),
	decode_tokens_per_s REAL CHECK (decode_tokens_per_s IS NULL OR decode_tokens_per_s > 0),
	peak_memory TEXT
		CHECK (peak_memory IS NULL OR (json_valid(peak_memory) AND json_type(peak_memory) = 'object')),
	source TEXT NOT NULL DEFAULT 'api' CHECK (length(source) BETWEEN 1 AND 64),
	measured_at TEXT NOT NULL
		CHECK (length(measured_at) = 24 AND measured_at GLOB
		       '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9].[0-9][0-9][0-9]Z'),
	created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
		CHECK (length(created_at) = 24 AND created_at GLOB
		       '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9].[0-9][0-9][0-9]Z'),
	CHECK (prefill_tokens_per_s IS NOT NULL OR decode_tokens_per_s IS NOT NULL)
) STRICT;

-- The history of hardware scans (GET /api/hardware/history). AUTOINCREMENT so that an id is
-- never reused after old rows are trimmed: ids are the pagination cursor.
CREATE TABLE scans (
	id INTEGER PRIMARY KEY AUTOINCREMENT,
	scanned_at_ms INTEGER NOT NULL CHECK (scanned_at_ms >= 0),
	scan_duration_ms REAL NOT NULL CHECK (scan_duration_ms >= 0),
	hardware_json TEXT NOT NULL CHECK (json_valid(hardware_json))
) STRICT;
