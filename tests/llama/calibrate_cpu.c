/*
 * make calibrate-cpu: rigfit's host memory against the real llama.cpp on full-size shapes of
 * catalog models that the unit tests do not load. For each model and quantization it writes a
 * GGUF file of the real shape (profiles/models.json; random finite weights), has llama.cpp's
 * CPU build load it under a few settings (tests/llama/oracle.mjs), prints llama.cpp's buffers
 * beside rigfit's and writes the rows, with the llama.cpp build, to
 * tests/llama/cpu_memory_calibration.csv, in place of this host's CPU variant's rows (other
 * variants' rows, from other hosts, are kept). It exits 1 when a row's model + KV + compute +
 * output is more than 3% off.
 *
 *   build/calibrate_cpu [SRC_DIR] [TMP_DIR]
 *   build/calibrate_cpu SRC_DIR TMP_DIR --speed     (make bench-cpu: rigfit's CPU speed
 *                                                    beside llama.cpp's measured pp and tg)
 *   build/calibrate_cpu SRC_DIR TMP_DIR --speed-inputs   (rigfit's side alone: what the
 *                                                    model is given and answers, no run)
 */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/model_json.h"
#include "core/fit/cpu/repack.h"
#include "core/fit/cpu/speed_cpu.h"
#include "core/fit/estimate.h"
#include "core/hw/hw.h"
#include "core/fit/model.h"
#include "core/fit/quant.h"
#include "core/fit/speed.h"
#include "server/detect/detect.h"
#include "server/hostbench.h"
#include "tests/core/fit/cpu/gguf_synth.h"
#include "tests/core/fit/cpu/oracle.h"
#include "tests/csv.h"

#define MIB (1024.0 * 1024.0)
#define TOLERANCE 0.03
#define SPEED_REPS 3 /* runs of each speed measurement */

static const struct {
	const char *id;
	const char *quant;
} models[] = {
	{"llama-3.2-1b", "Q4_0"},        {"llama-3.2-1b", "Q8_0"},
	{"qwen2.5-0.5b", "Q4_K_M"},      {"Qwen/Qwen2.5-1.5B", "Q4_0"},
	{"Qwen/Qwen3-0.6B", "Q8_0"},     {"google/gemma-3-1b-it", "Q4_0"},
	{"google/gemma-2-2b", "Q4_K_M"}, {"microsoft/Phi-3-mini-4k-instruct", "Q4_0"},
};

static const struct oracle_settings settings[] = {
	{4096, 512, 512, true, "F16", true, false},
	{8192, 256, 256, false, "F16", false, false},
	{8192, 512, 512, true, "Q8_0", true, false},
};

#define N(a) (sizeof(a) / sizeof((a)[0]))

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	long n;

	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) > 0 && fseek(f, 0, SEEK_SET) == 0 &&
	    (buf = malloc((size_t)n + 1)) != NULL) {
		if (fread(buf, 1, (size_t)n, f) != (size_t)n) {
			free(buf);
			buf = NULL;
		} else {
			buf[n] = '\0';
		}
	}
	fclose(f);
	return buf;
}

static double sum_obj(const cJSON *o)
{
	const cJSON *it;
	double s = 0;
	cJSON_ArrayForEach(it, o) s += cJSON_IsNumber(it) ? it->valuedouble : 0;
	return s;
}

static double sum_kv(const cJSON *kv)
{
	const cJSON *it;
	double s = 0;
	cJSON_ArrayForEach(it, kv) s += oracle_num(it, "mib");
	return s;
}

static const char *str_or(const cJSON *v, const char *dflt)
{
	return cJSON_IsString(v) ? v->valuestring : dflt;
}

/* The file as it was before this run (tests/csv.h), kept by close_csv for the rows of CPU
 * variants this run wrote none of. */
static struct t_csv *csv_before;

/* Opens folder/name for writing with its header line; returns it (path in path), or NULL with
 * a message. */
static FILE *open_csv(const char *folder, const char *name, const char *header, char *path,
		      size_t pathlen)
{
	FILE *f;

	snprintf(path, pathlen, "%s/%s", folder, name);
	t_csv_free(csv_before);
	csv_before = t_csv_read(path);
	f = fopen(path, "w");
	if (!f)
		fprintf(stderr, "calibrate-cpu: cannot write %s\n", path);
	else
		fprintf(f, "%s\n", header);
	return f;
}

/* Writes one CSV field, quoted where it holds a comma, a quote or a newline (RFC 4180). */
static void csv_field(FILE *f, const char *v, bool last)
{
	if (strpbrk(v, ",\"\n")) {
		fputc('"', f);
		for (; *v; v++) {
			if (*v == '"')
				fputc('"', f);
			fputc(*v, f);
		}
		fputc('"', f);
	} else {
		fputs(v, f);
	}
	fputc(last ? '\n' : ',', f);
}

/* Whether table t has a row whose cpu_variant is v. */
static bool has_variant(const struct t_csv *t, const char *v)
{
	for (int r = 0; t && r < t->n_rows; r++)
		if (strcmp(t_csv_get(t, r, "cpu_variant"), v) == 0)
			return true;
	return false;
}

/* Closes f and, with keep_others, adds back the rows of other CPU variants it held before: a
 * memory run on one host replaces its own variant's rows and keeps the other hosts' (an AVX2
 * host's haswell rows beside an AMX host's sapphirerapids ones). Speed rows are compared with
 * the haswell row of their own run, so a speed run replaces the file whole. */
static void close_csv(FILE *f, const char *path, bool keep_others)
{
	struct t_csv *now;

	fclose(f);
	now = keep_others && csv_before ? t_csv_read(path) : NULL;
	f = now && t_csv_col(now, "cpu_variant") >= 0 && now->n_cols == csv_before->n_cols ?
		    fopen(path, "a") :
		    NULL;
	for (int r = 0; f && r < csv_before->n_rows; r++) {
		if (has_variant(now, t_csv_get(csv_before, r, "cpu_variant")))
			continue;
		for (int c = 0; c < csv_before->n_cols; c++)
			csv_field(f, csv_before->rows[r][c], c == csv_before->n_cols - 1);
	}
	if (f)
		fclose(f);
	t_csv_free(now);
	t_csv_free(csv_before);
	csv_before = NULL;
}

/* Writes the jobs of file under settings set[0..n) (with a bench object when given) to
 * dir/jobs.json and runs the oracle on them. Returns its output (malloc'd) or NULL. */
static char *run_jobs(const char *src, const char *llama_dir, const char *dir, const char *file,
		      const struct oracle_settings *set, size_t n, int threads, int pp, int tg)
{
	char jobs_path[4200];
	cJSON *jobs = cJSON_CreateArray();
	char *json, *out;
	FILE *f;
	int code = 0;

	for (size_t s = 0; s < n; s++) {
		cJSON *j = cJSON_CreateObject();
		cJSON_AddStringToObject(j, "file", file);
		cJSON_AddNumberToObject(j, "n_ctx", (double)set[s].n_ctx);
		cJSON_AddNumberToObject(j, "n_batch", (double)set[s].n_batch);
		cJSON_AddBoolToObject(j, "flash_attn", set[s].flash_attn);
		cJSON_AddStringToObject(j, "type_k", set[s].kv);
		cJSON_AddStringToObject(j, "type_v", set[s].kv);
		cJSON_AddBoolToObject(j, "use_mmap", set[s].use_mmap);
		if (pp > 0) {
			cJSON *b = cJSON_AddObjectToObject(j, "bench");
			cJSON_AddNumberToObject(j, "threads", threads);
			cJSON_AddNumberToObject(b, "pp", pp);
			cJSON_AddNumberToObject(b, "tg", tg);
			cJSON_AddNumberToObject(b, "reps", SPEED_REPS);
		}
		cJSON_AddItemToArray(jobs, j);
	}
	json = cJSON_PrintUnformatted(jobs);
	cJSON_Delete(jobs);
	snprintf(jobs_path, sizeof(jobs_path), "%s/jobs.json", dir);
	f = fopen(jobs_path, "w");
	if (!json || !f || fputs(json, f) < 0) {
		if (f)
			fclose(f);
		free(json);
		fprintf(stderr, "calibrate-cpu: cannot write %s\n", jobs_path);
		return NULL;
	}
	fclose(f);
	free(json);
	out = oracle_run(src, llama_dir, dir, jobs_path, &code);
	if (!out)
		fprintf(stderr, "calibrate-cpu: the oracle failed (exit %d; make deps)\n", code);
	return out;
}

/* make bench-cpu: rigfit's CPU speed beside llama.cpp's measured prefill and decode. Three
 * models (their vocabularies make the head a large share of the small ones) in the kernel
 * families that matter: repacked Q4_0, Q8_0, a K-quant mix and F16. */
static const char *const speed_ids[] = {"qwen2.5-0.5b", "Qwen/Qwen3-0.6B", "llama-3.2-1b"};
static const char *const speed_quants[] = {"Q4_0", "Q8_0", "Q4_K_M", "F16"};

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double median(double *v, size_t n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return n == 0 ? 0 : (n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2);
}

/* The load average the others put on this host while it is measured. */
static void print_load(const char *when)
{
	FILE *f = fopen("/proc/loadavg", "r");
	char line[128] = "";

	if (f) {
		if (!fgets(line, sizeof(line), f))
			line[0] = '\0';
		fclose(f);
	}
	line[strcspn(line, "\n")] = '\0';
	printf("load average %s: %s\n", when, line[0] ? line : "unknown");
}

/* This host as the estimate sees it: threads (physical cores), ISA class, measured figures. */
static int bench_host(struct speed_host *host, int *repack)
{
	struct hw_snapshot *s = malloc(sizeof(*s));
	struct rf_detect_opts opts = {.root = "/", .nvml_lib = "", .nvidia_smi = ""};
	struct rf_hostbench h;
	int threads = 0;

	memset(host, 0, sizeof(*host));
	host->cpu_isa = SPEED_CPU_ISA_BASIC;
	*repack = RF_REPACK_NONE;
	if (s && rf_detect_scan(&opts, s) == 0) {
		threads = s->cpu.physical_cores;
		host->cpu_isa = speed_cpu_isa_from_bits(s->cpu.isa, s->cpu.arch);
		*repack = rf_repack_isa_from_bits(s->cpu.isa);
	}
	free(s);
	if (threads < 1)
		threads = 1;
	/* The best of three measurements, as llama.cpp's figures are the best of three runs: a
	 * shared host's other tenants only ever slow either down. */
	for (int i = 0; i < 3; i++) {
		struct rf_hostbench one;
		if (rf_hostbench_run(threads, 1500, &one) < 0) {
			fprintf(stderr, "bench-cpu: the host measurement failed\n");
			return -1;
		}
		if (i == 0)
			h = one;
		h.memory_bandwidth_gbs = fmax(h.memory_bandwidth_gbs, one.memory_bandwidth_gbs);
		h.int8_gops_per_thread = fmax(h.int8_gops_per_thread, one.int8_gops_per_thread);
		h.f32_gflops_per_thread = fmax(h.f32_gflops_per_thread, one.f32_gflops_per_thread);
		for (int k = 0; k < HW_KERNEL_N; k++) {
			h.kernel[k].gops_per_thread =
				fmax(h.kernel[k].gops_per_thread, one.kernel[k].gops_per_thread);
			h.kernel[k].avx2_gops_per_thread = fmax(h.kernel[k].avx2_gops_per_thread,
								one.kernel[k].avx2_gops_per_thread);
		}
	}
	for (int k = 0; k < HW_KERNEL_N; k++) {
		host->cpu_kernel[k].gops_per_thread = h.kernel[k].gops_per_thread;
		host->cpu_kernel[k].avx2_gops_per_thread = h.kernel[k].avx2_gops_per_thread;
		host->cpu_kernel[k].isa = speed_cpu_isa_of_kernel(h.kernel[k].isa);
		printf("host kernel %s: %.1f GOPS per thread (%s), %.1f with AVX2\n",
		       hw_kernel_name(k), h.kernel[k].gops_per_thread, h.kernel[k].isa,
		       h.kernel[k].avx2_gops_per_thread);
	}
	host->threads = threads;
	host->bandwidth_gbs = h.memory_bandwidth_gbs;
	host->bandwidth_measured = true;
	host->bandwidth_hostbench = true;
	host->int8_gops_per_thread = h.int8_gops_per_thread;
	host->f32_gflops_per_thread = h.f32_gflops_per_thread;
	printf("host: %d threads, %.1f GB/s read, %.1f int8 GOPS and %.1f f32 GFLOPS per thread "
	       "(kernels %s, ISA class %s, repack %s)\n",
	       threads, h.memory_bandwidth_gbs, h.int8_gops_per_thread, h.f32_gflops_per_thread,
	       h.kernel_isa, speed_cpu_isa_name(host->cpu_isa), rf_repack_isa_name(*repack));
	return 0;
}

/* The load average over the last minute (-1 unknown). */
static double load1(void)
{
	FILE *f = fopen("/proc/loadavg", "r");
	double v = -1;

	if (f) {
		if (fscanf(f, "%lf", &v) != 1)
			v = -1;
		fclose(f);
	}
	return v;
}

/* The weight types' kernel classes as "class:share:repacked" items joined by spaces. */
static void format_mix(const struct speed_cpu_mix *m, char *out, size_t len)
{
	size_t used = 0;

	out[0] = '\0';
	for (int c = 0; c < SPEED_CPU_CLASS_N && used < len; c++) {
		int k;
		if (!(m->share[c] > 0))
			continue;
		k = snprintf(out + used, len - used, "%s%s:%.4f:%.4f", used ? " " : "",
			     speed_cpu_class_name(c), m->share[c], m->repacked[c]);
		if (k < 0)
			break;
		used += (size_t)k;
	}
}

/* The CPU classes bench-cpu compares, each as one of the prebuilt's CPU backends (loaded
 * alone, tests/core/fit/cpu/oracle.h) and the ISA class rigfit is asked about for it
 * (hardware.cpu.isa as a user describes another machine): the host's measurement stands, its
 * kernels taken at the class's instructions (core/fit/cpu/speed_cpu.h). */
static const struct speed_class {
	const char *variant;
	int speed_isa; /* enum speed_cpu_isa */
	int repack;    /* enum rf_repack_isa */
	uint32_t needs;
} speed_classes[] = {
	{"sse42", SPEED_CPU_ISA_SSE42, RF_REPACK_NONE, 0},
	{"haswell", SPEED_CPU_ISA_AVX2, RF_REPACK_AVX2, HW_ISA(AVX2)},
	{"skylakex", SPEED_CPU_ISA_AVX512, RF_REPACK_AVX512, HW_ISA(AVX512F)},
	{"zen4", SPEED_CPU_ISA_AVX512_VNNI, RF_REPACK_AVX512, HW_ISA(AVX512_VNNI)},
	{"sapphirerapids", SPEED_CPU_ISA_AMX, RF_REPACK_AMX, HW_ISA(AMX)},
};

/* Whether name is in the comma-separated list (NULL: every class). */
static bool listed(const char *list, const char *name)
{
	size_t n = strlen(name);

	for (const char *p = list; p && *p; p += strcspn(p, ",") + (p[strcspn(p, ",")] ? 1 : 0))
		if (strncmp(p, name, n) == 0 && (p[n] == ',' || p[n] == '\0'))
			return true;
	return !list;
}

/* One class: every row, rigfit beside llama.cpp. Returns 0, 1 (a row failed) or 2. */
static int bench_class(const struct model_catalog *cat, const char *src, const char *dir,
		       const struct speed_class *sc, const char *ldir, struct speed_host host,
		       bool inputs_only, FILE *csv, double *err_tg, double *err_pp, size_t *n)
{
	static const struct oracle_settings one = {1024, 512, 512, true, "F16", true, false};

	host.cpu_isa = sc->speed_isa;
	for (size_t i = 0; i < N(speed_ids) * N(speed_quants); i++) {
		const char *id = speed_ids[i / N(speed_quants)];
		const char *quant = speed_quants[i % N(speed_quants)];
		const struct model_entry *e = model_catalog_find(cat, id);
		struct oracle_speed_work w;
		char file[4200], msg[200], mix[256];
		double tg = 0, pp = 0, mtg, mpp;
		char *out;
		cJSON *r, *sp;

		if (!e)
			return 2;
		snprintf(file, sizeof(file), "%s/model.gguf", dir);
		if (gguf_synth_write(file, &e->arch, rf_ftype_from_name(quant), 5, msg,
				     sizeof(msg)) < 0 ||
		    oracle_speed(file, &host, sc->repack, &tg, &pp, &w, msg, sizeof(msg)) < 0) {
			fprintf(stderr, "bench-cpu: %s: %s\n", e->id, msg);
			return 2;
		}
		if (inputs_only) {
			/* rigfit's side alone: what it is given and what it answers. */
			unlink(file);
			printf("%-9s %-24s %-6s %8.2f %8s %6s %8.2f %8s %6s %.0f %.0f %d %.4f\n",
			       sc->variant, e->id, quant, tg, "-", "-", pp, "-", "-",
			       w.weight_bytes, w.elements, w.n_layers, w.repacked_share);
			continue;
		}
		out = run_jobs(src, ldir, dir, file, &one, 1, host.threads, 128, 32);
		unlink(file);
		if (!out)
			return 2;
		r = cJSON_Parse(out);
		free(out);
		sp = cJSON_GetObjectItemCaseSensitive(r, "speed");
		if (!sp) {
			fprintf(stderr, "bench-cpu: %s: no speed measured\n", e->id);
			cJSON_Delete(r);
			return 2;
		}
		/* The best of the repetitions: the others' builds only ever slow a run down. */
		mtg = oracle_num(sp, "tg_best");
		mpp = oracle_num(sp, "pp_best");
		err_tg[*n] = fabs(tg - mtg) / mtg;
		err_pp[*n] = fabs(pp - mpp) / mpp;
		(*n)++;
		printf("%-9s %-24s %-6s %8.1f %8.1f %+5.0f%% %8.1f %8.1f %+5.0f%% %7.1f %7.1f %5.2f\n",
		       sc->variant, e->id, quant, tg, mtg, 100 * (tg - mtg) / mtg, pp, mpp,
		       100 * (pp - mpp) / mpp, w.weight_bytes / 1e6, w.elements / 1e6,
		       w.repacked_share);
		format_mix(&w.mix, mix, sizeof(mix));
		fprintf(csv,
			"%s,%s,%d,%d,%.2f,%.2f,%.2f,%s,%.0f,%.0f,%d,%.4f,%s,%.2f,%.2f,%d,%.2f,%s,%s\n",
			e->id, quant, rf_ftype_from_name(quant), host.threads, host.bandwidth_gbs,
			host.int8_gops_per_thread, host.f32_gflops_per_thread,
			speed_cpu_isa_name(host.cpu_isa), w.weight_bytes, w.elements, w.n_layers,
			w.repacked_share, mix, mtg, mpp, SPEED_REPS, load1(),
			str_or(cJSON_GetObjectItemCaseSensitive(r, "llama_cpp"), "unknown"),
			str_or(cJSON_GetObjectItemCaseSensitive(r, "cpu_variant"), "unknown"));
		fflush(stdout);
		fflush(csv);
		cJSON_Delete(r);
	}
	return 0;
}

/* make bench-cpu: every class this host runs (RIGFIT_BENCH_CLASSES: a comma-separated list of
 * the variants to run, for a shorter run), each with its own median errors. The rows go to
 * TMP_DIR/cpu_speed_by_class.csv; with RIGFIT_BENCH_CPU_RECORD=1 to
 * tests/llama/cpu_speed_by_class.csv, the reference rows the speed_cpu suite checks, which a
 * run on another host would otherwise replace (cpu_speed_calibration.csv, which the kernel
 * efficiencies were fitted on, is the AVX2 host's and stays as it is). */
static int bench_speed(const struct model_catalog *cat, const char *src, const char *tmp,
		       const char *dir, bool inputs_only)
{
	enum {
		N_ROWS = N(speed_ids) * N(speed_quants)
	};
	const char *only = getenv("RIGFIT_BENCH_CLASSES");
	uint32_t bits = oracle_host_bits();
	struct speed_host host = {0};
	char csv_path[4200], folder[4200];
	FILE *csv = NULL;
	int repack, rc = 0;
	bool record;

	print_load("before");
	if (bench_host(&host, &repack) < 0)
		return 2;
	/* The suite's reference rows are one host's (tests/core/fit/cpu/test_speed_cpu.c): a run
	 * on another host writes beside the temporary files unless asked to replace them. */
	record = getenv("RIGFIT_BENCH_CPU_RECORD") &&
		 strcmp(getenv("RIGFIT_BENCH_CPU_RECORD"), "1") == 0;
	snprintf(folder, sizeof(folder), "%s%s", record ? src : tmp, record ? "/tests/llama" : "");
	if (!inputs_only &&
	    !(csv = open_csv(folder, "cpu_speed_by_class.csv",
			     "model,quant,ftype,threads,bandwidth_gbs,int8_gops_per_thread,"
			     "f32_gflops_per_thread,cpu_isa,weight_bytes,elements,n_layers,"
			     "repacked_share,mix,tg_llama,pp_llama,reps,load1,llama_cpp,cpu_variant",
			     csv_path, sizeof(csv_path))))
		return 2;
	printf("%-9s %-24s %-6s %8s %8s %6s %8s %8s %6s %7s %7s %5s\n", "class", "model", "quant",
	       "tg rigfit", "tg llama", "error", "pp rigfit", "pp llama", "error", "MB/tok",
	       "Melem", "rep");
	for (size_t c = 0; c < N(speed_classes) && rc == 0; c++) {
		const struct speed_class *sc = &speed_classes[c];
		double err_tg[N_ROWS], err_pp[N_ROWS];
		size_t n = 0;
		char *ldir;

		if ((bits & sc->needs) != sc->needs || !listed(only, sc->variant))
			continue;
		/* An AMX backend without the kernel's grant runs as the AVX-512 class. */
		if (sc->speed_isa == SPEED_CPU_ISA_AMX && !oracle_amx_usable())
			continue;
		ldir = oracle_variant_dir(src, sc->variant);
		if (!ldir) {
			printf("%-9s (not in the prebuilt)\n", sc->variant);
			continue;
		}
		rc = bench_class(cat, src, dir, sc, ldir, host, inputs_only, csv, err_tg, err_pp,
				 &n);
		free(ldir);
		if (n > 0)
			printf("%-9s median |error|: decode %.0f%%, prefill %.0f%% (%zu rows, "
			       "llama.cpp pp128 and tg32, best of %d, %d threads)\n",
			       sc->variant, 100 * median(err_tg, n), 100 * median(err_pp, n), n,
			       SPEED_REPS, host.threads);
	}
	if (csv) {
		close_csv(csv, csv_path, false);
		printf("rows: %s%s\n", csv_path,
		       record ?
			       "" :
			       " (RIGFIT_BENCH_CPU_RECORD=1 writes them to tests/llama/, the reference the "
			       "speed_cpu suite checks)");
	}
	print_load("after");
	(void)repack;
	return rc;
}

int main(int argc, char **argv)
{
	const char *src = argc > 1 ? argv[1] : ".";
	const char *tmp = argc > 2 ? argv[2] : "/tmp";
	char path[4096], dir[4096], jobs_path[4200], csv_path[4200], err[256];
	struct model_catalog *cat = NULL;
	cJSON *doc;
	char *text;
	FILE *csv;
	int isa = oracle_host_isa(), bad = 0, rows = 0;
	double worst = 0;

	snprintf(path, sizeof(path), "%s/profiles/models.json", src);
	text = slurp(path);
	doc = text ? cJSON_Parse(text) : NULL;
	free(text);
	if (!doc || model_catalog_from_json(doc, &cat, err, sizeof(err)) < 0) {
		fprintf(stderr, "calibrate-cpu: cannot load %s\n", path);
		return 2;
	}
	cJSON_Delete(doc);
	snprintf(dir, sizeof(dir), "%s/rigfit-calibrate-XXXXXX", tmp);
	if (!mkdtemp(dir)) {
		fprintf(stderr, "calibrate-cpu: cannot make a folder under %s\n", tmp);
		return 2;
	}
	if (argc > 3 &&
	    (strcmp(argv[3], "--speed") == 0 || strcmp(argv[3], "--speed-inputs") == 0)) {
		int rc = bench_speed(cat, src, tmp, dir, strcmp(argv[3], "--speed-inputs") == 0);
		snprintf(jobs_path, sizeof(jobs_path), "%s/jobs.json", dir);
		unlink(jobs_path);
		snprintf(jobs_path, sizeof(jobs_path), "%s/oracle.out", dir);
		unlink(jobs_path);
		rmdir(dir);
		model_catalog_free(cat);
		return rc;
	}
	snprintf(path, sizeof(path), "%s/tests/llama", src);
	csv = open_csv(path, "cpu_memory_calibration.csv",
		       "model,quant,n_ctx,n_ubatch,flash_attn,kv_type,use_mmap,llama_cpp,"
		       "cpu_variant,model_mib,kv_mib,compute_mib,output_mib,total_mib,"
		       "rigfit_total_mib,error_pct",
		       csv_path, sizeof(csv_path));
	if (!csv)
		return 2;
	printf("%-34s %-7s %6s %5s %2s %-4s %4s %10s %10s %7s\n", "model", "quant", "n_ctx", "ubat",
	       "fa", "kv", "mmap", "llama.cpp", "rigfit", "error");
	for (size_t i = 0; i < N(models); i++) {
		const struct model_entry *e = model_catalog_find(cat, models[i].id);
		char file[4200], msg[200];
		char *out, *line, *next;
		size_t k = 0;

		if (!e) {
			fprintf(stderr, "calibrate-cpu: %s is not in the catalog\n", models[i].id);
			return 2;
		}
		snprintf(file, sizeof(file), "%s/model.gguf", dir);
		if (gguf_synth_write(file, &e->arch, rf_ftype_from_name(models[i].quant), 11, msg,
				     sizeof(msg)) < 0) {
			fprintf(stderr, "calibrate-cpu: %s: %s\n", models[i].id, msg);
			return 2;
		}
		out = run_jobs(src, NULL, dir, file, settings, N(settings), 0, 0, 0);
		if (!out)
			return 2;
		for (line = out; line && *line && k < N(settings); line = next, k++) {
			struct oracle_settings os = settings[k];
			struct rf_mem_estimate m;
			cJSON *r;
			double llama, ours, error;
			next = strchr(line, '\n');
			if (next)
				*next++ = '\0';
			r = cJSON_Parse(line);
			if (!r || cJSON_GetObjectItemCaseSensitive(r, "error")) {
				fprintf(stderr, "calibrate-cpu: %s: %s\n", models[i].id, line);
				return 2;
			}
			oracle_settings_from_log(cJSON_GetObjectItemCaseSensitive(r, "context"),
						 &os);
			if (oracle_estimate(file, &os, isa, &m, msg, sizeof(msg)) < 0) {
				fprintf(stderr, "calibrate-cpu: %s: %s\n", models[i].id, msg);
				return 2;
			}
			llama = sum_obj(cJSON_GetObjectItemCaseSensitive(r, "model")) +
				sum_kv(cJSON_GetObjectItemCaseSensitive(r, "kv")) +
				sum_obj(cJSON_GetObjectItemCaseSensitive(r, "compute")) +
				sum_obj(cJSON_GetObjectItemCaseSensitive(r, "output"));
			ours = (double)(m.weights_host_bytes + m.kv_cache_bytes +
					m.compute_host_bytes + m.output_buffer_bytes) /
			       MIB;
			error = (ours - llama) / llama;
			worst = fmax(worst, fabs(error));
			if (fabs(error) > TOLERANCE)
				bad++;
			rows++;
			printf("%-34s %-7s %6lld %5lld %2d %-4s %4d %10.2f %10.2f %+6.2f%%\n",
			       e->id, models[i].quant, (long long)os.n_ctx, (long long)os.n_ubatch,
			       os.flash_attn, os.kv, os.use_mmap, llama, ours, 100 * error);
			fprintf(csv,
				"%s,%s,%lld,%lld,%d,%s,%d,llama.cpp %s (node-llama-cpp %s),%s,%.2f,%.2f,%.2f,%.2f,%.2f,%.2f,%.3f\n",
				e->id, models[i].quant, (long long)os.n_ctx, (long long)os.n_ubatch,
				os.flash_attn, os.kv, os.use_mmap,
				cJSON_GetStringValue(
					cJSON_GetObjectItemCaseSensitive(r, "llama_cpp")),
				cJSON_GetStringValue(
					cJSON_GetObjectItemCaseSensitive(r, "node_llama_cpp")),
				str_or(cJSON_GetObjectItemCaseSensitive(r, "cpu_variant"),
				       "unknown"),
				sum_obj(cJSON_GetObjectItemCaseSensitive(r, "model")),
				sum_kv(cJSON_GetObjectItemCaseSensitive(r, "kv")),
				sum_obj(cJSON_GetObjectItemCaseSensitive(r, "compute")),
				sum_obj(cJSON_GetObjectItemCaseSensitive(r, "output")), llama, ours,
				100 * error);
			cJSON_Delete(r);
		}
		free(out);
		unlink(file);
		if (k != N(settings)) {
			fprintf(stderr, "calibrate-cpu: %s: %zu of %zu loads answered\n",
				models[i].id, k, N(settings));
			return 2;
		}
	}
	close_csv(csv, csv_path, true);
	snprintf(jobs_path, sizeof(jobs_path), "%s/jobs.json", dir);
	unlink(jobs_path);
	snprintf(jobs_path, sizeof(jobs_path), "%s/oracle.out", dir);
	unlink(jobs_path);
	rmdir(dir);
	model_catalog_free(cat);
	printf("%d rows, worst error %.2f%%, %d over %.0f%% (%s)\n", rows, 100 * worst, bad,
	       100 * TOLERANCE, csv_path);
	return bad ? 1 : 0;
}
