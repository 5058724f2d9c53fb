/*
 * Node-feature-discovery labels of a scan (see hardware_nfd.h).
 */
#include "api/hardware_nfd.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NFD_VALUE_MAX 63

/* Writes v as a valid label value into out: other characters become '-', the ends are trimmed
 * to alphanumerics, and the length is capped. Returns false when nothing is left. */
static bool nfd_value(const char *v, char *out, size_t outlen)
{
	size_t n = 0, start = 0, end;

	for (const char *p = v; *p && n < NFD_VALUE_MAX && n + 1 < outlen; p++) {
		char c = *p;
		bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			  (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
		out[n++] = ok ? c : '-';
	}
	out[n] = '\0';
	end = n;
	while (start < end && !((out[start] >= 'a' && out[start] <= 'z') ||
				(out[start] >= 'A' && out[start] <= 'Z') ||
				(out[start] >= '0' && out[start] <= '9')))
		start++;
	while (end > start && !((out[end - 1] >= 'a' && out[end - 1] <= 'z') ||
				(out[end - 1] >= 'A' && out[end - 1] <= 'Z') ||
				(out[end - 1] >= '0' && out[end - 1] <= '9')))
		end--;
	memmove(out, out + start, end - start);
	out[end - start] = '\0';
	return end > start;
}

struct nfd_buf {
	char *p;
	size_t len, cap;
	bool oom;
};

static void nfd_label(struct nfd_buf *b, const char *name, const char *value)
{
	char v[NFD_VALUE_MAX + 1];
	int n;

	if (b->oom || !value || !nfd_value(value, v, sizeof(v)))
		return;
	for (;;) {
		n = snprintf(b->p + b->len, b->cap - b->len, "rigfit.io/%s=%s\n", name, v);
		if (n < 0) {
			b->oom = true;
			return;
		}
		if ((size_t)n < b->cap - b->len)
			break;
		char *np = realloc(b->p, b->cap * 2);
		if (!np) {
			b->oom = true;
			return;
		}
		b->p = np;
		b->cap *= 2;
	}
	b->len += (size_t)n;
}

static void nfd_int(struct nfd_buf *b, const char *name, long long v)
{
	char s[32];

	if (v < 0)
		return;
	snprintf(s, sizeof(s), "%lld", v);
	nfd_label(b, name, s);
}

static long long gib_round(int64_t bytes)
{
	const int64_t gib = 1024LL * 1024 * 1024;
	return (long long)((bytes + gib / 2) / gib);
}

char *api_hardware_nfd(const struct hw_snapshot *s)
{
	struct nfd_buf b = {malloc(1024), 0, 1024, false};
	int64_t best = -1, total = 0;
	int counted = 0;
	const struct hw_gpu *largest = NULL;

	if (!b.p)
		return NULL;
	b.p[0] = '\0';
	for (int i = 0; i < s->n_gpus; i++) {
		const struct hw_gpu *g = &s->gpus[i];
		if (strcmp(g->vendor, "intel") == 0)
			continue;
		counted++;
		if (!largest || g->memory_total_bytes > best) {
			best = g->memory_total_bytes;
			largest = g;
		}
		if (g->memory_total_bytes > 0 && total >= 0)
			total += g->memory_total_bytes;
		else
			total = -1;
	}
	nfd_label(&b, "compute-profile", s->compute_profile[0] ? s->compute_profile : NULL);
	nfd_label(&b, "platform", s->platform);
	nfd_label(&b, "backend", s->backend);
	nfd_int(&b, "gpu-count", counted);
	if (largest) {
		/* Nearest whole GiB: drivers report a little less than the card's size (81559 MiB
		 * for an 80 GB H100), and the label names the card. */
		nfd_int(&b, "gpu-memory-gib", best >= 0 ? gib_round(best) : -1);
		nfd_int(&b, "gpu-memory-total-gib", total >= 0 ? gib_round(total) : -1);
		nfd_label(&b, "gpu-vendor", largest->vendor);
		nfd_label(&b, "gpu-name", largest->name);
		nfd_label(&b, "gpu-compute-capability", largest->compute_capability);
		nfd_label(&b, "gpu-unified-memory", largest->unified_memory ? "true" : "false");
	}
	nfd_label(&b, "profile-id", s->profile_id[0] ? s->profile_id : NULL);
	nfd_int(&b, "cpu-physical-cores", s->cpu.physical_cores);
	nfd_int(&b, "memory-gib",
		s->memory.total_bytes >= 0 ? gib_round(s->memory.total_bytes) : -1);
	if (b.oom) {
		free(b.p);
		return NULL;
	}
	return b.p;
}
