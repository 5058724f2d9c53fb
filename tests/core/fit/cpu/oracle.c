/*
 * The llama.cpp oracle's runner and rigfit's side of the comparison (see oracle.h).
 */
#include "tests/core/fit/cpu/oracle.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#if defined(__linux__) && defined(__x86_64__)
#include <sys/syscall.h>
#endif

#include "core/fit/gguf.h"
#include "core/fit/speed.h"
#include "core/hw/hw.h"
#include "core/hw/hw_parse.h"

#define ORACLE_HEADER_MAX (64u << 20) /* a GGUF header with a 260k-token vocabulary fits */

static char *join(const char *a, const char *b)
{
	size_t n = strlen(a) + strlen(b) + 2;
	char *p = malloc(n);
	if (p)
		snprintf(p, n, "%s/%s", a, b);
	return p;
}

/* Reads up to cap bytes of path; returns them (malloc'd) with the count in *len and the
 * file's size in *size, or NULL. */
static char *read_head(const char *path, size_t cap, size_t *len, size_t *size)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	long end;

	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (end = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0) {
		*size = (size_t)end;
		*len = *size < cap ? *size : cap;
		buf = malloc(*len + 1);
		if (buf && fread(buf, 1, *len, f) != *len) {
			free(buf);
			buf = NULL;
		}
		if (buf)
			buf[*len] = '\0';
	}
	fclose(f);
	return buf;
}

char *oracle_run(const char *src_dir, const char *llama_dir, const char *dir, const char *jobs_path,
		 int *exit_code)
{
	char *out_path = join(dir, "oracle.out");
	char *script = join(src_dir, "tests/llama/oracle.mjs");
	char *ldir_def = llama_dir ? strdup(llama_dir) : join(src_dir, "build/llama");
	const char *ldir = getenv("RIGFIT_LLAMA_DIR");
	char *text = NULL;
	size_t len, size;
	int st = 0;
	pid_t pid;

	*exit_code = -1;
	if (!out_path || !script || !ldir_def)
		goto out;
	fflush(NULL); /* the child must not write the parent's buffered output again */
	pid = fork();
	if (pid < 0)
		goto out;
	if (pid == 0) {
		if (!freopen(out_path, "w", stdout))
			_exit(126);
		setenv("RIGFIT_LLAMA_DIR", !llama_dir && ldir && *ldir ? ldir : ldir_def, 1);
		execlp("node", "node", script, jobs_path, (char *)NULL);
		fprintf(stderr, "oracle: cannot run node (install Node.js 20; make deps)\n");
		_exit(127);
	}
	if (waitpid(pid, &st, 0) != pid)
		goto out;
	*exit_code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
	if (*exit_code == 0)
		text = read_head(out_path, (size_t)1 << 30, &len, &size);
out:
	free(out_path);
	free(script);
	free(ldir_def);
	return text;
}

/* Runs argv (no shell); returns its exit status, or -1. */
static int run_argv(char *const argv[])
{
	int st = 0;
	pid_t pid;

	fflush(NULL);
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		execvp(argv[0], argv);
		_exit(127);
	}
	if (waitpid(pid, &st, 0) != pid)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* The prebuilt's folder of libraries: node_modules/@node-llama-cpp/<platform>/bins/<platform>. */
static char *bins_dir(const char *llama_dir)
{
	const char *plat = "linux-x64";
	size_t n = strlen(llama_dir) + 128;
	char *p = malloc(n);

#if defined(__aarch64__)
	plat = "linux-arm64";
#endif
	if (p)
		snprintf(p, n, "%s/node_modules/@node-llama-cpp/%s/bins/%s", llama_dir, plat, plat);
	return p;
}

char *oracle_variant_dir(const char *src_dir, const char *variant)
{
	char *base = join(src_dir, "build/llama"), *vroot = join(src_dir, "build/llama-variants");
	char *dest = NULL, *src_bins = NULL, *bins = NULL, *lib = NULL, *tmp = NULL;
	char name[96];
	struct stat st;

	if (!base || !vroot || strlen(variant) > 48)
		goto fail;
	snprintf(name, sizeof(name), "libggml-cpu-%s.so", variant);
	dest = join(vroot, variant);
	src_bins = bins_dir(base);
	if (!dest || !src_bins || !(lib = join(src_bins, name)) || stat(lib, &st) != 0)
		goto fail;
	free(lib);
	lib = NULL;
	bins = bins_dir(dest);
	if (!bins)
		goto fail;
	if (stat(bins, &st) != 0) {
		/* Built beside the final name and renamed, so that a run cut short leaves no
		 * half-made folder that a later run would take as complete. */
		char *mk[] = {"mkdir", "-p", vroot, NULL};
		char *rm[] = {"rm", "-rf", NULL, NULL};
		size_t n = strlen(dest) + 8;
		tmp = malloc(n);
		if (!tmp)
			goto fail;
		snprintf(tmp, n, "%s.new", dest);
		rm[2] = tmp;
		if (run_argv(mk) != 0 || run_argv(rm) != 0)
			goto fail;
		{
			char *cp[] = {"cp", "-al", base, tmp, NULL};
			if (run_argv(cp) != 0)
				goto fail;
		}
		{
			/* Every other CPU backend goes; the one wanted stays. */
			char *tbins = bins_dir(tmp);
			char *sh[] = {"sh",
				      "-c",
				      "cd \"$1\" && for f in libggml-cpu-*.so; do "
				      "[ \"$f\" = \"$2\" ] || rm -f \"$f\"; done",
				      "sh",
				      tbins,
				      name,
				      NULL};
			int rc = tbins ? run_argv(sh) : -1;
			free(tbins);
			if (rc != 0 || rename(tmp, dest) != 0) {
				run_argv(rm);
				goto fail;
			}
		}
	}
	free(base);
	free(vroot);
	free(src_bins);
	free(bins);
	free(tmp);
	return dest;
fail:
	free(base);
	free(vroot);
	free(dest);
	free(src_bins);
	free(bins);
	free(lib);
	free(tmp);
	return NULL;
}

bool oracle_amx_usable(void)
{
#if defined(__linux__) && defined(__x86_64__)
	/* ARCH_REQ_XCOMP_PERM for XFEATURE_XTILEDATA, as ggml asks before it uses AMX; it is
	 * refused on CPUs without AMX and by kernels older than 5.16. */
	return syscall(SYS_arch_prctl, 0x1023, 18) == 0;
#else
	return false;
#endif
}

uint32_t oracle_host_bits(void)
{
	size_t len, size;
	char *text = read_head("/proc/cpuinfo", 1 << 20, &len, &size);
	struct hw_cpu cpu;
	uint32_t bits = 0;

	/* /proc files report a size of 0: read them to the end. */
	if (!text || len == 0) {
		FILE *f = fopen("/proc/cpuinfo", "r");
		free(text);
		text = malloc(1 << 20);
		len = f && text ? fread(text, 1, (1 << 20) - 1, f) : 0;
		if (f)
			fclose(f);
	}
	memset(&cpu, 0, sizeof(cpu));
	if (text && hw_parse_cpuinfo(text, len, &cpu) == 0)
		bits = cpu.isa;
	free(text);
	return bits;
}

int oracle_host_isa(void)
{
	return rf_repack_isa_from_bits(oracle_host_bits());
}

double oracle_num(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
	return cJSON_IsNumber(v) ? v->valuedouble : -1;
}

void oracle_settings_from_log(const cJSON *ctx, struct oracle_settings *s)
{
	s->n_ctx = (int64_t)oracle_num(ctx, "n_ctx");
	s->n_batch = (int64_t)oracle_num(ctx, "n_batch");
	s->n_ubatch = (int64_t)oracle_num(ctx, "n_ubatch");
	s->flash_attn = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(ctx, "flash_attn"));
}

/* Reads the GGUF header at path into its architecture and weights. Returns the file (free with
 * gguf_free) or NULL with a reason in msg. */
static struct gguf_file *load(const char *path, struct model_arch *a, struct rf_mem_weights *w,
			      char *msg, size_t msglen)
{
	size_t len = 0, size = 0;
	char *buf = read_head(path, ORACLE_HEADER_MAX, &len, &size);
	struct gguf_file *g = NULL;
	char field[96];

	if (!buf) {
		snprintf(msg, msglen, "cannot read %s", path);
		return NULL;
	}
	if (gguf_parse(buf, len, size, &g, msg, msglen) < 0)
		g = NULL;
	else if (gguf_to_arch(g, a, field, sizeof(field)) < 0) {
		snprintf(msg, msglen, "gguf_to_arch: %s", field);
		gguf_free(g);
		g = NULL;
	} else if (rf_weights_from_tensors(a, g->tensors, g->n_tensors, w) < 0) {
		snprintf(msg, msglen, "rf_weights_from_tensors failed");
		gguf_free(g);
		g = NULL;
	}
	free(buf);
	return g;
}

int oracle_estimate(const char *path, const struct oracle_settings *s, int isa,
		    struct rf_mem_estimate *m, char *msg, size_t msglen)
{
	struct model_arch a;
	struct rf_mem_weights *w = calloc(1, sizeof(*w));
	struct gguf_file *g = w ? load(path, &a, w, msg, msglen) : NULL;
	struct rf_infer_params p;
	struct rf_mem_host host = {.budget_bytes = -1, .repack_isa = isa};
	int rc = -1;

	if (!g)
		goto out;
	rf_infer_params_default(&p);
	p.n_ctx = s->n_ctx;
	p.n_batch = s->n_batch;
	p.n_ubatch = s->n_ubatch;
	p.flash_attn = s->flash_attn;
	p.type_k = p.type_v = rf_gtype_from_name(s->kv);
	p.use_mmap = s->use_mmap;
	p.swa_full = s->swa_full;
	p.n_gpu_layers = 0;
	if (rf_estimate_inference(&a, w, &p, NULL, 0, &host, m) < 0) {
		snprintf(msg, msglen, "rf_estimate_inference: %s",
			 m->error_field ? m->error_field : "?");
		goto out;
	}
	rc = 0;
out:
	gguf_free(g);
	free(w);
	return rc;
}

int oracle_speed(const char *path, const struct speed_host *host, int isa, double *decode,
		 double *prefill, struct oracle_speed_work *work, char *msg, size_t msglen)
{
	struct model_arch a;
	struct rf_mem_weights *w = calloc(1, sizeof(*w));
	struct gguf_file *g = w ? load(path, &a, w, msg, msglen) : NULL;
	struct model_params mp;
	struct speed_input in;
	struct speed_output o;
	double layer_bytes = 0, repacked = 0;
	int ft, rc = -1;

	if (!g || model_param_counts(&a, &mp) < 0)
		goto out;
	ft = gguf_file_type(g);
	memset(&in, 0, sizeof(in));
	in.backend = SPEED_BACKEND_CPU;
	for (int64_t l = 0; l < w->n_layer; l++) {
		layer_bytes += (double)w->layer_bytes[l];
		repacked += (double)w->layer_repack_bytes[isa][l];
	}
	repacked += (double)w->output_repack_bytes[isa];
	in.weight_bytes = (layer_bytes + (double)w->output_bytes) *
			  (mp.total > 0 ? (double)mp.active / (double)mp.total : 1);
	in.flops_per_token = 2.0 * (double)mp.active;
	in.n_layers = (int)w->n_layer;
	in.quantized = ft >= 0 && ft != RF_FT_F16 && ft != RF_FT_BF16 && ft != RF_FT_F32;
	in.weight_ftype = ft;
	in.weight_ftype_known = ft >= 0;
	in.repacked_share = fmin(1, repacked / (layer_bytes + (double)w->output_bytes));
	(void)rf_weights_cpu_mix(
		w, isa, a.n_experts > 0 ? (double)a.n_experts_per_tok / (double)a.n_experts : 1,
		&in.cpu_mix);
	in.host = *host;
	if (speed_estimate(&in, &o) < 0) {
		snprintf(msg, msglen, "speed_estimate failed");
		goto out;
	}
	*decode = o.decode_tokens_per_s;
	*prefill = o.prefill_tokens_per_s;
	if (work) {
		work->weight_bytes = in.weight_bytes;
		work->elements = in.flops_per_token / 2;
		work->repacked_share = in.repacked_share;
		work->n_layers = in.n_layers;
		work->mix = in.cpu_mix;
	}
	rc = 0;
out:
	gguf_free(g);
	free(w);
	return rc;
}
