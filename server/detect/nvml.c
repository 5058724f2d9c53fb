/*
 * The NVML client (see nvml.h). Every entry point is looked up with dlsym; the record says which
 * optional ones the library lacks, so the parent can tell "this driver is too old to say" from
 * "this GPU said no". The types below are rigfit's own declarations of NVML's documented ABI:
 * opaque device handles, nvmlReturn_t as int (0 is success), and the three structs we read.
 */
#include "server/detect/nvml.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "core/err.h"
#include "core/hw/hw.h"
#include "core/hw/hw_parse_nvidia.h"

/* nvmlDevice_t: a handle NVML hands out and takes back; never dereferenced. */
struct nvml_device;

/* nvmlMemory_t (nvmlDeviceGetMemoryInfo): bytes. */
struct nvml_memory {
	unsigned long long total;
	unsigned long long free;
	unsigned long long used;
};

/* nvmlMemory_v2_t (nvmlDeviceGetMemoryInfo_v2): version must be set by the caller. */
struct nvml_memory_v2 {
	unsigned int version;
	unsigned long long total;
	unsigned long long reserved;
	unsigned long long free;
	unsigned long long used;
};

/* NVML_STRUCT_VERSION(Memory, 2): the struct's size with the version in the top byte. */
#define NVML_MEMORY_V2_VERSION ((unsigned int)(sizeof(struct nvml_memory_v2) | (2u << 24)))

/* nvmlPciInfo_t as nvmlDeviceGetPciInfo_v2/_v3 fill it. The first version of the call wrote a
 * shorter struct whose 16-byte bus id sits where bus_id_legacy is. */
struct nvml_pci_info {
	char bus_id_legacy[16];
	unsigned int domain;
	unsigned int bus;
	unsigned int device;
	unsigned int pci_device_id; /* device id << 16 | vendor id */
	unsigned int pci_subsystem_id;
	char bus_id[32];
};

#define NVML_CLOCK_MEM 2         /* nvmlClockType_t */
#define NVML_DEVICE_MIG_ENABLE 1 /* nvmlDeviceGetMigMode's "current" */
#define NVML_ERROR_ARGUMENT_VERSION_MISMATCH 25
#define NVML_NAME_LEN 96   /* NVML_DEVICE_NAME_V2_BUFFER_SIZE */
#define NVML_UUID_LEN 96   /* NVML_DEVICE_UUID_V2_BUFFER_SIZE */
#define NVML_DRIVER_LEN 80 /* NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE */

_Static_assert(sizeof(void (*)(void)) == sizeof(void *), "dlsym needs data-sized code pointers");

/* The entry points used; NULL where the library lacks them. */
struct nvml_api {
	int (*init)(void);
	int (*shutdown)(void);
	int (*driver_version)(char *version, unsigned int len);
	int (*cuda_version)(int *version);
	int (*count)(unsigned int *count);
	int (*handle)(unsigned int index, struct nvml_device **dev);
	int (*name)(struct nvml_device *dev, char *name, unsigned int len);
	int (*uuid)(struct nvml_device *dev, char *uuid, unsigned int len);
	int (*pci)(struct nvml_device *dev, struct nvml_pci_info *pci);
	bool pci_legacy; /* pci is the first version: the bus id is in bus_id_legacy */
	int (*memory_v2)(struct nvml_device *dev, struct nvml_memory_v2 *mem);
	int (*memory)(struct nvml_device *dev, struct nvml_memory *mem);
	int (*compute_capability)(struct nvml_device *dev, int *major, int *minor);
	int (*mig_mode)(struct nvml_device *dev, unsigned int *current, unsigned int *pending);
	int (*mig_max)(struct nvml_device *dev, unsigned int *count);
	int (*mig_handle)(struct nvml_device *dev, unsigned int index, struct nvml_device **mig);
	int (*bus_width)(struct nvml_device *dev, unsigned int *bits);
	int (*max_clock)(struct nvml_device *dev, int type, unsigned int *mhz);
	/* nvmlDeviceArchitecture_t is an unsigned int (2 Kepler ... 9 Hopper, 10 Blackwell). */
	int (*arch)(struct nvml_device *dev, unsigned int *arch);
};

/* Where the record goes: one write per line, and the first failure remembered. */
struct nvml_out {
	int fd;
	int failed;
};

static void nvml_write_all(struct nvml_out *w, const char *p, size_t n)
{
	while (n > 0 && !w->failed) {
		ssize_t r = write(w->fd, p, n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			w->failed = 1;
			return;
		}
		p += r;
		n -= (size_t)r;
	}
}

/* Writes one line of the record. A value that would break the line format (a newline in a
 * GPU name) has its control bytes turned into spaces. */
__attribute__((format(printf, 2, 3))) static void nvml_line(struct nvml_out *w, const char *fmt,
							    ...)
{
	char line[512];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line) - 1, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n > sizeof(line) - 2)
		n = (int)sizeof(line) - 2;
	for (int i = 0; i < n; i++)
		if ((unsigned char)line[i] < 0x20 || line[i] == 0x7f)
			line[i] = ' ';
	line[n++] = '\n';
	nvml_write_all(w, line, (size_t)n);
}

/* Looks name up in the library; writes the code pointer to *fp. */
static bool nvml_sym(void *lib, const char *name, void *fp)
{
	void *p = dlsym(lib, name);

	if (!p)
		return false;
	memcpy(fp, &p, sizeof(p));
	return true;
}

/* Looks up the first of two names that exists (the versioned one first). */
static bool nvml_sym2(void *lib, const char *versioned, const char *plain, void *fp)
{
	return nvml_sym(lib, versioned, fp) || (plain && nvml_sym(lib, plain, fp));
}

/* Resolves the API; says which optional functions are missing. Returns false when one that
 * nothing can be done without is missing. */
static bool nvml_resolve(void *lib, struct nvml_api *api, struct nvml_out *w)
{
	static const struct {
		const char *name;
		size_t off;
	} optional[] = {
		{"nvmlSystemGetDriverVersion", offsetof(struct nvml_api, driver_version)},
		{"nvmlDeviceGetName", offsetof(struct nvml_api, name)},
		{"nvmlDeviceGetUUID", offsetof(struct nvml_api, uuid)},
		{"nvmlDeviceGetCudaComputeCapability",
		 offsetof(struct nvml_api, compute_capability)},
		{"nvmlDeviceGetMigMode", offsetof(struct nvml_api, mig_mode)},
		{"nvmlDeviceGetMaxMigDeviceCount", offsetof(struct nvml_api, mig_max)},
		{"nvmlDeviceGetMigDeviceHandleByIndex", offsetof(struct nvml_api, mig_handle)},
		{"nvmlDeviceGetMemoryBusWidth", offsetof(struct nvml_api, bus_width)},
		{"nvmlDeviceGetMaxClockInfo", offsetof(struct nvml_api, max_clock)},
		{"nvmlDeviceGetArchitecture", offsetof(struct nvml_api, arch)},
	};
	bool ok = true;

	memset(api, 0, sizeof(*api));
	if (!nvml_sym2(lib, "nvmlInit_v2", "nvmlInit", &api->init)) {
		nvml_line(w, "missing=nvmlInit");
		ok = false;
	}
	if (!nvml_sym2(lib, "nvmlDeviceGetCount_v2", "nvmlDeviceGetCount", &api->count)) {
		nvml_line(w, "missing=nvmlDeviceGetCount");
		ok = false;
	}
	if (!nvml_sym2(lib, "nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex",
		       &api->handle)) {
		nvml_line(w, "missing=nvmlDeviceGetHandleByIndex");
		ok = false;
	}
	nvml_sym(lib, "nvmlShutdown", &api->shutdown);
	if (!nvml_sym2(lib, "nvmlSystemGetCudaDriverVersion_v2", "nvmlSystemGetCudaDriverVersion",
		       &api->cuda_version))
		nvml_line(w, "missing=nvmlSystemGetCudaDriverVersion");
	if (!nvml_sym2(lib, "nvmlDeviceGetPciInfo_v3", "nvmlDeviceGetPciInfo_v2", &api->pci)) {
		api->pci_legacy = nvml_sym(lib, "nvmlDeviceGetPciInfo", &api->pci);
		if (!api->pci_legacy)
			nvml_line(w, "missing=nvmlDeviceGetPciInfo");
	}
	nvml_sym(lib, "nvmlDeviceGetMemoryInfo_v2", &api->memory_v2);
	nvml_sym(lib, "nvmlDeviceGetMemoryInfo", &api->memory);
	if (!api->memory_v2 && !api->memory)
		nvml_line(w, "missing=nvmlDeviceGetMemoryInfo");
	for (size_t i = 0; i < sizeof(optional) / sizeof(optional[0]); i++)
		if (!nvml_sym(lib, optional[i].name, (char *)api + optional[i].off))
			nvml_line(w, "missing=%s", optional[i].name);
	return ok;
}

/* Memory: the v2 struct first (it separates reserved memory, as nvidia-smi shows it), the
 * first version when v2 is absent or refuses the struct version. */
static void nvml_gpu_memory(const struct nvml_api *api, struct nvml_device *dev, struct nvml_out *w)
{
	int rc = HW_NVML_ERROR_FUNCTION_NOT_FOUND;

	if (api->memory_v2) {
		struct nvml_memory_v2 m;
		memset(&m, 0, sizeof(m));
		m.version = NVML_MEMORY_V2_VERSION;
		rc = api->memory_v2(dev, &m);
		if (rc == HW_NVML_SUCCESS) {
			nvml_line(w, "memory_total=%llu", m.total);
			nvml_line(w, "memory_free=%llu", m.free);
			nvml_line(w, "memory_used=%llu", m.used);
			return;
		}
	}
	if (api->memory && (rc == HW_NVML_ERROR_FUNCTION_NOT_FOUND ||
			    rc == NVML_ERROR_ARGUMENT_VERSION_MISMATCH)) {
		struct nvml_memory m;
		memset(&m, 0, sizeof(m));
		rc = api->memory(dev, &m);
		if (rc == HW_NVML_SUCCESS) {
			nvml_line(w, "memory_total=%llu", m.total);
			nvml_line(w, "memory_free=%llu", m.free);
			nvml_line(w, "memory_used=%llu", m.used);
			return;
		}
	}
	nvml_line(w, "memory_error=%d", rc);
}

/* MIG: the mode, and when it is on, how many MIG devices exist (a slot without one answers
 * "not found"). No line at all when the GPU cannot do MIG. */
static void nvml_gpu_mig(const struct nvml_api *api, struct nvml_device *dev, struct nvml_out *w)
{
	unsigned int current = 0, pending = 0, max = 0, n = 0;

	if (!api->mig_mode || api->mig_mode(dev, &current, &pending) != HW_NVML_SUCCESS)
		return;
	nvml_line(w, "mig_mode=%d", current == NVML_DEVICE_MIG_ENABLE ? 1 : 0);
	if (current != NVML_DEVICE_MIG_ENABLE || !api->mig_max || !api->mig_handle ||
	    api->mig_max(dev, &max) != HW_NVML_SUCCESS)
		return;
	if (max > 1024)
		max = 1024;
	for (unsigned int i = 0; i < max; i++) {
		struct nvml_device *mig = NULL;
		if (api->mig_handle(dev, i, &mig) == HW_NVML_SUCCESS && mig)
			n++;
	}
	nvml_line(w, "mig_instances=%u", n);
}

static void nvml_gpu(const struct nvml_api *api, unsigned int i, struct nvml_out *w)
{
	struct nvml_device *dev = NULL;
	char text[NVML_NAME_LEN > NVML_UUID_LEN ? NVML_NAME_LEN : NVML_UUID_LEN];
	struct nvml_pci_info pci;
	int major = -1, minor = -1, rc;
	unsigned int v = 0;

	nvml_line(w, "gpu=%u", i);
	rc = api->handle(i, &dev);
	if (rc != HW_NVML_SUCCESS || !dev) {
		nvml_line(w, "handle_error=%d", rc != HW_NVML_SUCCESS ? rc : 999);
		return;
	}
	memset(text, 0, sizeof(text));
	if (api->name && api->name(dev, text, NVML_NAME_LEN) == HW_NVML_SUCCESS && text[0]) {
		text[sizeof(text) - 1] = '\0';
		nvml_line(w, "name=%s", text);
	}
	memset(text, 0, sizeof(text));
	if (api->uuid && api->uuid(dev, text, NVML_UUID_LEN) == HW_NVML_SUCCESS && text[0]) {
		text[sizeof(text) - 1] = '\0';
		nvml_line(w, "uuid=%s", text);
	}
	memset(&pci, 0, sizeof(pci));
	if (api->pci && api->pci(dev, &pci) == HW_NVML_SUCCESS) {
		const char *bus = api->pci_legacy ? pci.bus_id_legacy : pci.bus_id;
		size_t cap = api->pci_legacy ? sizeof(pci.bus_id_legacy) : sizeof(pci.bus_id);
		if (memchr(bus, '\0', cap) && bus[0])
			nvml_line(w, "pci_bus_id=%s", bus);
		if (pci.pci_device_id)
			nvml_line(w, "pci_device_id=%u", pci.pci_device_id);
	}
	nvml_gpu_memory(api, dev, w);
	if (api->compute_capability &&
	    api->compute_capability(dev, &major, &minor) == HW_NVML_SUCCESS && major >= 0 &&
	    minor >= 0)
		nvml_line(w, "compute_capability=%d.%d", major, minor);
	if (api->bus_width && api->bus_width(dev, &v) == HW_NVML_SUCCESS && v > 0)
		nvml_line(w, "memory_bus_width=%u", v);
	v = 0;
	if (api->max_clock && api->max_clock(dev, NVML_CLOCK_MEM, &v) == HW_NVML_SUCCESS && v > 0)
		nvml_line(w, "max_memory_clock=%u", v);
	v = 0;
	if (api->arch && api->arch(dev, &v) == HW_NVML_SUCCESS)
		nvml_line(w, "architecture=%u", v);
	nvml_gpu_mig(api, dev, w);
}

int rf_nvml_write_record(const char *lib, int fd)
{
	struct nvml_out w = {fd, 0};
	struct nvml_api api;
	void *h;
	int rc;

	nvml_line(&w, "%s", HW_NVML_RECORD_MAGIC);
	h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		const char *why = dlerror();
		nvml_line(&w, "dlopen_error=%.200s", why ? why : "dlopen failed");
		goto end;
	}
	if (!nvml_resolve(h, &api, &w)) {
		nvml_line(&w, "init_error=%d", HW_NVML_ERROR_FUNCTION_NOT_FOUND);
		goto close;
	}
	rc = api.init();
	if (rc != HW_NVML_SUCCESS) {
		nvml_line(&w, "init_error=%d", rc);
		goto close;
	}
	{
		char driver[NVML_DRIVER_LEN];
		int cuda = 0;
		unsigned int count = 0;

		memset(driver, 0, sizeof(driver));
		if (api.driver_version &&
		    api.driver_version(driver, sizeof(driver)) == HW_NVML_SUCCESS && driver[0]) {
			driver[sizeof(driver) - 1] = '\0';
			nvml_line(&w, "driver_version=%s", driver);
		}
		if (api.cuda_version && api.cuda_version(&cuda) == HW_NVML_SUCCESS && cuda > 0)
			nvml_line(&w, "cuda_version=%d", cuda);
		rc = api.count(&count);
		if (rc != HW_NVML_SUCCESS) {
			nvml_line(&w, "count_error=%d", rc);
		} else {
			nvml_line(&w, "count=%u", count);
			/* Past HW_MAX_GPUS the parent keeps nothing; do not ask. */
			for (unsigned int i = 0; i < count && i < HW_MAX_GPUS + 1; i++)
				nvml_gpu(&api, i, &w);
		}
	}
	if (api.shutdown)
		api.shutdown();
close:
	dlclose(h);
end:
	nvml_line(&w, "end");
	return w.failed ? RF_E_IO : 0;
}
