/*
 * The bench commands (see cli_bench.h). record reads the input (a file or standard input),
 * scans this machine only when the hardware fingerprint is needed (neither --hardware nor the
 * body's hardware_fingerprint gives it), and calls the POST handler; list turns its options
 * into the GET handler's query. Both open the store at --db, $RIGFIT_DB or ./var/rigfit.db,
 * the daemon's default.
 */
#include "server/cli/cli_bench.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/api.h"
#include "api/benchmarks.h"
#include "api/hardware_json.h"
#include "core/err.h"
#include "core/hw/hw_fingerprint.h"
#include "core/hw/hw_profile.h"
#include "core/numparse.h"
#include "server/cli/cli_priv.h"
#include "server/detect/detect.h"
#include "server/embedded.h"
#include "server/hostbench.h"
#include "server/profiles/profiles.h"
#include "server/store/store.h"
#include "server/store/store_hostbench.h"

#define BENCH_QUERY_MAX 2048

const char rf_cli_bench_usage[] =
	"usage: rigfit bench record [-|FILE] [--model M] [--precision P] [--hardware FP]\n"
	"                           [--db PATH] [--profiles DIR] [--root DIR] [--format F]\n"
	"       rigfit bench list [--model M] [--hardware FP] [--since T] [--limit N]\n"
	"                         [--cursor C] [--db PATH] [--format F]\n"
	"       rigfit bench host [--threads N] [--budget-ms MS] [--save] [--db PATH]\n"
	"record stores measured speeds (llama-bench -o json, llama-server timings, or a run as\n"
	"POST /api/benchmarks takes it) under this machine's hardware fingerprint; list prints\n"
	"the history, newest first, as GET /api/benchmarks does. --db defaults to RIGFIT_DB,\n"
	"then ./var/rigfit.db (the daemon's database may be shared: SQLite WAL mode).\n"
	"--format is json (default), table or summary. host measures this machine's memory\n"
	"read bandwidth (one thread per physical core), its int8 and f32 dot-product rates\n"
	"per thread and, per quant class (q4_0, q8_0, f16, bf16), the block dot llama.cpp's\n"
	"CPU backend runs (its instructions on this CPU, and AVX2's), in about 2 s, and prints\n"
	"them as JSON with the hardware fingerprint;\n"
	"--save keeps them in the store for that fingerprint, replacing what the daemon measured\n"
	"(it reads them at its next start): measure again on a quiet host when the first\n"
	"measurement ran while the machine was busy.\n";

/* What one bench command holds open. */
struct bench_cli {
	const char *db;
	const char *profiles;
	const char *root;
	const char *input;
	char query[BENCH_QUERY_MAX];
	size_t query_len;
	bool has_hardware; /* --hardware was given */
	enum cli_format format;
	struct rf_profiles *set;
	struct rf_catalogs *cat;
	struct api_snapshot *snap;
	struct rf_store *store;
	struct api_env env;
};

/* Appends name=value, percent-encoded, to the query. Returns 0 or 2 after a message. */
static int query_add(struct bench_cli *b, const char *name, const char *value)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t need = strlen(name) + 2 + 3 * strlen(value);
	char *q = b->query + b->query_len;

	if (b->query_len + need >= sizeof(b->query))
		return cli_usage_error("bench: --%s is too long", name);
	q += snprintf(q, sizeof(b->query) - b->query_len, "%s%s=", b->query_len ? "&" : "", name);
	for (const unsigned char *p = (const unsigned char *)value; *p; p++) {
		if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		    (*p >= '0' && *p <= '9') || strchr("-._~", *p)) {
			*q++ = (char)*p;
		} else {
			*q++ = '%';
			*q++ = hex[*p >> 4];
			*q++ = hex[*p & 15];
		}
	}
	*q = '\0';
	b->query_len = (size_t)(q - b->query);
	return 0;
}

/* Parses the options of subcommand name (argv[0]): the common ones (--db, --profiles, --root,
 * --format), the query ones in `params` (each --NAME VALUE becomes NAME=VALUE) and, when
 * input is allowed, one FILE or "-". Returns 0 or the exit status after a message. */
static int bench_args(struct bench_cli *b, int argc, char **argv, const char *name,
		      const char *const *params, bool input)
{
	enum {
		O_DB = 1,
		O_PROFILES,
		O_ROOT,
		O_FORMAT,
		O_PARAM = 0x100
	};
	struct option longopts[16] = {
		{"db", required_argument, NULL, O_DB},
		{"profiles", required_argument, NULL, O_PROFILES},
		{"root", required_argument, NULL, O_ROOT},
		{"format", required_argument, NULL, O_FORMAT},
	};
	int n = 4, c, rc;

	for (int k = 0; params[k] && n < 15; k++, n++)
		longopts[n] = (struct option){params[k], required_argument, NULL, O_PARAM + k};
	if (cli_long_options_exact(name, argc, argv, longopts) != 0)
		return 2;
	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":", longopts, NULL)) != -1) {
		if (c == O_DB)
			b->db = optarg;
		else if (c == O_PROFILES)
			b->profiles = optarg;
		else if (c == O_ROOT)
			b->root = optarg;
		else if (c == O_FORMAT) {
			if ((rc = cli_format_parse(name, optarg, &b->format)) != 0)
				return rc;
		} else if (c >= O_PARAM && c < O_PARAM + n) {
			const char *p = params[c - O_PARAM];
			if ((rc = query_add(b, p, optarg)) != 0)
				return rc;
			if (strcmp(p, "hardware") == 0)
				b->has_hardware = true;
		} else {
			return cli_getopt_error(name, c, argv, longopts);
		}
	}
	for (int i = optind; i < argc; i++) {
		if (!input || b->input)
			return cli_usage_error("%s: unexpected argument '%.60s'", name, argv[i]);
		b->input = argv[i];
	}
	return 0;
}

/* The store's path: db, else $RIGFIT_DB, else ./var/rigfit.db. */
static const char *store_path(const char *db)
{
	if (!db) {
		db = getenv("RIGFIT_DB");
		if (!db || !*db)
			db = "./var/rigfit.db";
	}
	return db;
}

/* Loads the catalogs and opens the store. Returns 0 or 1 after a message. */
static int bench_open(struct bench_cli *b)
{
	char err[512];
	struct timespec ts;

	if (cli_catalogs(b->profiles, &b->set, &b->cat) != 0)
		return 1;
	b->db = store_path(b->db);
	if (rf_store_open(b->db, rf_embed_migrations, &b->store, err, sizeof(err)) < 0) {
		fprintf(stderr, "rigfit: store: %s\n", err);
		return 1;
	}
	clock_gettime(CLOCK_REALTIME, &ts);
	b->env.version = RIGFIT_VERSION;
	b->env.now_ms = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
	b->env.cat.models = b->cat->models;
	b->env.cat.devices = &b->cat->table;
	b->env.store = rf_store_api(b->store);
	return 0;
}

static void bench_close(struct bench_cli *b)
{
	rf_store_close(b->store);
	free(b->snap);
	rf_catalogs_unref(b->cat);
	rf_profiles_free(b->set);
}

/* Returns true when body is an object that names its own hardware_fingerprint. */
static bool body_has_fingerprint(const char *body, size_t len)
{
	cJSON *j = cJSON_ParseWithLength(body, len);
	bool has = cJSON_IsString(cJSON_GetObjectItemCaseSensitive(j, "hardware_fingerprint"));

	cJSON_Delete(j);
	return has;
}

/* Scans this machine into b->snap. Returns 0 or 1. */
static int bench_scan(struct bench_cli *b)
{
	struct rf_detect_opts opts = {0};

	b->snap = calloc(1, sizeof(*b->snap));
	if (!b->snap) {
		fprintf(stderr, "rigfit: out of memory\n");
		return 1;
	}
	opts.root = b->root && *b->root ? b->root : "/";
	cli_scan(&opts, &b->snap->hw);
	hw_apply_device_profiles(&b->snap->hw, &b->cat->table);
	b->snap->seq = 1;
	b->env.snapshot = b->snap;
	return 0;
}

static int bench_record(int argc, char **argv)
{
	static const char *const params[] = {"model", "precision", "hardware", NULL};
	struct bench_cli b;
	struct api_request req = {0};
	struct api_reply reply = {0};
	char *body = NULL;
	size_t len = 0;
	int rc;

	memset(&b, 0, sizeof(b));
	b.format = CLI_FMT_JSON;
	if ((rc = bench_args(&b, argc, argv, "bench record", params, true)) != 0)
		return rc;
	if (!b.input)
		b.input = "-";
	body = cli_read_input(b.input, &len);
	if (!body) {
		fprintf(stderr, "rigfit: bench record: cannot read %s: %s\n",
			strcmp(b.input, "-") == 0 ? "standard input" : b.input, strerror(errno));
		return 2;
	}
	if ((rc = bench_open(&b)) != 0)
		goto out;
	if (!b.has_hardware && !body_has_fingerprint(body, len) && (rc = bench_scan(&b)) != 0)
		goto out;
	req.method = API_POST;
	req.path = "/api/benchmarks";
	req.query = b.query;
	req.body = body;
	req.body_len = len;
	api_benchmarks_post(&b.env, &req, &reply);
	rc = cli_print_reply_as(&reply, b.format, "bench");
	api_reply_reset(&reply);
out:
	bench_close(&b);
	free(body);
	return rc;
}

static int bench_list(int argc, char **argv)
{
	static const char *const params[] = {"model", "hardware", "since", "limit", "cursor", NULL};
	struct bench_cli b;
	struct api_request req = {0};
	struct api_reply reply = {0};
	int rc;

	memset(&b, 0, sizeof(b));
	b.format = CLI_FMT_JSON;
	if ((rc = bench_args(&b, argc, argv, "bench list", params, false)) != 0)
		return rc;
	if ((rc = bench_open(&b)) != 0)
		goto out;
	req.method = API_GET;
	req.path = "/api/benchmarks";
	req.query = b.query;
	api_benchmarks_list(&b.env, &req, &reply);
	rc = cli_print_reply_as(&reply, b.format, "bench");
	api_reply_reset(&reply);
out:
	bench_close(&b);
	return rc;
}

/* rigfit bench host [--threads N] [--budget-ms MS]: measures this host (server/hostbench.h)
 * with one thread per physical core and prints the figures with the hardware fingerprint they
 * belong to, as JSON. */
/* Keeps h for fingerprint fp in the store at db. Returns 0 or 1 after a message. */
static int bench_host_save(const char *db, const char *fp, const struct rf_hostbench *h)
{
	struct rf_store *st = NULL;
	struct hw_host_bench b;
	char err[512];
	int rc;

	if (!fp[0]) {
		fprintf(stderr, "rigfit: bench host: no hardware fingerprint to file it under\n");
		return 1;
	}
	if (rf_store_open(db, rf_embed_migrations, &st, err, sizeof(err)) < 0) {
		fprintf(stderr, "rigfit: store: %s\n", err);
		return 1;
	}
	rf_hostbench_to_hw(h, (int64_t)time(NULL) * 1000, &b);
	rc = rf_store_host_bench_put(st, fp, &b);
	rf_store_close(st);
	if (rc < 0) {
		fprintf(stderr, "rigfit: bench host: not saved in %s: %s\n", db, rf_err_code(rc));
		return 1;
	}
	return 0;
}

static int bench_host(int argc, char **argv)
{
	struct rf_detect_opts opts = {.root = "/"};
	struct hw_snapshot *s = malloc(sizeof(*s));
	struct rf_hostbench h;
	struct hw_host_bench hb;
	char fp[64] = "";
	const char *db = NULL;
	bool save = false;
	uint64_t v;
	int threads = 0, budget = 1500, rc;
	cJSON *o;
	char *text;

	for (int i = 0; i < argc; i++) {
		const char *val = i + 1 < argc ? argv[i + 1] : NULL;
		if (strcmp(argv[i], "--save") == 0) {
			save = true;
			continue;
		}
		if (strcmp(argv[i], "--threads") == 0 && val &&
		    rf_parse_u64_str(val, 1024, &v) == 0 && v >= 1)
			threads = (int)v;
		else if (strcmp(argv[i], "--budget-ms") == 0 && val &&
			 rf_parse_u64_str(val, 2500, &v) == 0 && v >= 300)
			budget = (int)v;
		else if (strcmp(argv[i], "--db") == 0 && val && *val)
			db = val;
		else {
			free(s);
			return cli_usage_error("bench host: unknown or bad option '%.60s' "
					       "(--threads 1..1024, --budget-ms 300..2500, --save, "
					       "--db PATH)",
					       argv[i]);
		}
		i++;
	}
	if (!s)
		return 1;
	/* The scan the daemon makes, so that the fingerprint is the one it files hardware under. */
	opts.nvml_lib = getenv("RIGFIT_NVML_LIB");
	opts.nvidia_smi = getenv("RIGFIT_NVIDIA_SMI");
	rf_detect_scan(&opts, s);
	if (hw_fingerprint(s, fp, sizeof(fp)) < 0)
		fp[0] = '\0';
	if (threads == 0)
		threads = s->cpu.physical_cores > 0 ? s->cpu.physical_cores :
			  s->cpu.logical_cores > 0  ? s->cpu.logical_cores :
						      1;
	free(s);
	rc = rf_hostbench_run(threads, budget, &h);
	if (rc < 0) {
		fprintf(stderr, "rigfit: bench host: %s\n", rf_err_code(rc));
		return 1;
	}
	db = store_path(db);
	if (save && bench_host_save(db, fp, &h) != 0)
		return 1;
	o = cJSON_CreateObject();
	if (!o)
		return 1;
	if (fp[0])
		cJSON_AddStringToObject(o, "fingerprint", fp);
	else
		cJSON_AddNullToObject(o, "fingerprint");
	cJSON_AddNumberToObject(o, "threads", h.threads);
	cJSON_AddNumberToObject(o, "memory_bandwidth_gbs", h.memory_bandwidth_gbs);
	cJSON_AddNumberToObject(o, "int8_gops_per_thread", h.int8_gops_per_thread);
	cJSON_AddNumberToObject(o, "f32_gflops_per_thread", h.f32_gflops_per_thread);
	cJSON_AddStringToObject(o, "kernel_isa", h.kernel_isa);
	rf_hostbench_to_hw(&h, 0, &hb);
	api_host_kernels_json(o, hb.kernel);
	cJSON_AddNumberToObject(o, "duration_ms", h.duration_ms);
	if (save)
		cJSON_AddStringToObject(o, "saved_to", db);
	text = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	if (!text)
		return 1;
	printf("%s\n", text);
	free(text);
	return 0;
}

int rf_cli_bench(int argc, char **argv)
{
	if (argc < 1)
		return cli_usage_error("bench: record, list or host? (see rigfit help bench)");
	if (strcmp(argv[0], "record") == 0)
		return bench_record(argc, argv);
	if (strcmp(argv[0], "list") == 0)
		return bench_list(argc, argv);
	if (strcmp(argv[0], "host") == 0)
		return bench_host(argc - 1, argv + 1);
	return cli_usage_error("bench: unknown subcommand '%.60s' (record, list or host)", argv[0]);
}
