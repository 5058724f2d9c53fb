-- NNNN_hub_models.sql: models looked up on a Hugging Face Hub (`--hub URL`), kept so that a
-- model looked up once keeps resolving offline. Keyed by (hub URL, model id, revision): the
-- same id on two Hubs (huggingface.co and a mirror named by HF_ENDPOINT) are two rows.
--
-- Independent of every other table: it references none and none references it, so it applies
-- the same whichever migrations come before it.
--
-- Plain SQL only: server/store/store.c wraps this file in one BEGIN IMMEDIATE ... COMMIT with
-- its PRAGMA user_version. Append-only once released.

-- config.json as the Hub served it, the shards' total size, when the Hub answered.
CREATE TABLE hub_models (
	hub TEXT NOT NULL CHECK (length(hub) BETWEEN 8 AND 511),
	model_id TEXT NOT NULL CHECK (length(model_id) BETWEEN 3 AND 200),
	revision TEXT NOT NULL CHECK (length(revision) BETWEEN 1 AND 64),
	config TEXT NOT NULL CHECK (json_valid(config) AND json_type(config) = 'object'),
	file_bytes INTEGER NOT NULL CHECK (file_bytes >= 0),
	n_shards INTEGER NOT NULL CHECK (n_shards BETWEEN 1 AND 512),
	fetched_at_ms INTEGER NOT NULL CHECK (fetched_at_ms >= 0),
	PRIMARY KEY (hub, model_id, revision)
) STRICT;

-- The JSON header of each safetensors shard (shard 0 .. n_shards - 1), never tensor data.
CREATE TABLE hub_model_shards (
	hub TEXT NOT NULL,
	model_id TEXT NOT NULL,
	revision TEXT NOT NULL,
	shard INTEGER NOT NULL CHECK (shard BETWEEN 0 AND 511),
	header TEXT NOT NULL CHECK (json_valid(header) AND json_type(header) = 'object'),
	PRIMARY KEY (hub, model_id, revision, shard),
	FOREIGN KEY (hub, model_id, revision) REFERENCES hub_models (hub, model_id, revision)
		ON DELETE CASCADE
) STRICT;
