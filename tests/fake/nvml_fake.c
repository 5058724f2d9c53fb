/*
 * A fake libnvidia-ml.so.1 for the tests: it exports the NVML functions rigfit's NVML client
 * calls and answers them from a description file named by the environment variable
 * RIGFIT_FAKE_NVML, so the dlopen path runs for real without an NVIDIA driver. Built by the
 * Makefile twice from this file: as $(B)/fake/libnvidia-ml.so.1, and with -DNO_V2 as
 * $(B)/fake/libnvidia-ml-nov2.so.1, a library as old drivers ship it, without the versioned
 * entry points (nvmlInit_v2, nvmlDeviceGetMemoryInfo_v2, nvmlDeviceGetPciInfo_v3...) and without
 * nvmlDeviceGetArchitecture, which older drivers lack.
 *
 * The description is read at nvmlInit; one directive per line, '#' starts a comment:
 *
 *   init fail <code>        nvmlInit returns <code> (e.g. 9: driver not loaded)
 *   init hang               nvmlInit never returns (the probe's timeout must fire)
 *   init crash              nvmlInit aborts the process
 *   count fail <code>       nvmlDeviceGetCount returns <code>
 *   driver <version>        nvmlSystemGetDriverVersion
 *   cuda <n>                nvmlSystemGetCudaDriverVersion(_v2), e.g. 12070 for 12.7
 *   gpu                     starts the next GPU; the lines below describe it:
 *     name <text>             uuid <text>
 *     pci <bus id> <0xDEVVEND> e.g. "pci 00000000:18:00.0 0x233010DE"
 *     memory <total> <reserved> <used> <free>   in MiB, as nvidia-smi -q prints them
 *     memory fail <code>      the memory queries return <code>
 *     memory crash | hang     the memory queries abort the process / never return (a driver
 *                             that dies in the middle of a scan, after init and earlier GPUs)
 *     handle fail <code>      nvmlDeviceGetHandleByIndex returns <code> for this GPU
 *     cc <major> <minor>      nvmlDeviceGetCudaComputeCapability
 *     bus_width <bits>        nvmlDeviceGetMemoryBusWidth (absent: not supported)
 *     mem_clock <MHz>         nvmlDeviceGetMaxClockInfo(NVML_CLOCK_MEM) (absent: not supported)
 *     arch <n>                nvmlDeviceGetArchitecture: nvmlDeviceArchitecture_t (9 Hopper;
 *                             absent: not supported)
 *     mig unsupported | disabled | enabled <instances>
 *
 * Without RIGFIT_FAKE_NVML, nvmlInit fails with "driver not loaded".
 */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FAKE_SUCCESS 0
#define FAKE_ERROR_UNINITIALIZED 1
#define FAKE_ERROR_INVALID_ARGUMENT 2
#define FAKE_ERROR_NOT_SUPPORTED 3
#define FAKE_ERROR_NOT_FOUND 6
#define FAKE_ERROR_INSUFFICIENT_SIZE 7
#define FAKE_ERROR_DRIVER_NOT_LOADED 9
#define FAKE_ERROR_ARGUMENT_VERSION_MISMATCH 25
#define FAKE_MAX_GPUS 80
/* memory_fail values that are not NVML codes: the query crashes or hangs. */
#define MEMORY_CRASH (-1)
#define MEMORY_HANG (-2)
#define FAKE_MAX_MIG 7

struct fake_memory {
	unsigned long long total, free, used;
};

struct fake_memory_v2 {
	unsigned int version;
	unsigned long long total, reserved, free, used;
};

struct fake_pci {
	char bus_id_legacy[16];
	unsigned int domain, bus, device, pci_device_id, pci_subsystem_id;
	char bus_id[32];
};

/* The first version of nvmlPciInfo_t: a 16-byte bus id, then the ids and four reserved words. */
struct fake_pci_v1 {
	char bus_id[16];
	unsigned int domain, bus, device, pci_device_id, pci_subsystem_id;
	unsigned int reserved[4];
};

struct fake_mig {
	int slot;
};

struct fake_gpu {
	char name[96];
	char uuid[96];
	char bus_id[32];
	unsigned int pci_device_id;
	unsigned long long mib_total, mib_reserved, mib_used, mib_free;
	int has_memory;
	int memory_fail;
	int handle_fail;
	int cc_major, cc_minor; /* -1: not supported */
	unsigned int bus_width, mem_clock;
	unsigned int arch; /* nvmlDeviceArchitecture_t; 0: not supported */
	int mig;           /* -1 unsupported, 0 disabled, 1 enabled */
	unsigned int mig_instances;
	struct fake_mig migs[FAKE_MAX_MIG];
};

static struct fake_state {
	int loaded;
	int init_fail, init_hang, init_crash, count_fail;
	char driver[80];
	int cuda;
	int n_gpus;
	struct fake_gpu gpus[FAKE_MAX_GPUS];
} fake;

static const char *fake_rest(const char *line, const char *word)
{
	size_t n = strlen(word);

	if (strncmp(line, word, n) != 0 || (line[n] != ' ' && line[n] != '\0'))
		return NULL;
	line += n;
	while (*line == ' ')
		line++;
	return line;
}

static void fake_copy(char *dst, size_t cap, const char *src)
{
	snprintf(dst, cap, "%s", src);
}

static void fake_load(void)
{
	const char *path = getenv("RIGFIT_FAKE_NVML");
	struct fake_gpu *g = NULL;
	char line[512];
	FILE *f;

	memset(&fake, 0, sizeof(fake));
	fake.loaded = 1;
	fake.cuda = -1;
	if (!path || !(f = fopen(path, "r"))) {
		fake.init_fail = FAKE_ERROR_DRIVER_NOT_LOADED;
		return;
	}
	while (fgets(line, sizeof(line), f)) {
		const char *v;
		size_t n = strlen(line);
		while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r' || line[n - 1] == ' '))
			line[--n] = '\0';
		if (line[0] == '#' || line[0] == '\0')
			continue;
		if ((v = fake_rest(line, "init"))) {
			if (strncmp(v, "fail", 4) == 0)
				fake.init_fail = (int)strtol(v + 4, NULL, 10);
			else if (strcmp(v, "hang") == 0)
				fake.init_hang = 1;
			else if (strcmp(v, "crash") == 0)
				fake.init_crash = 1;
		} else if ((v = fake_rest(line, "count"))) {
			if (strncmp(v, "fail", 4) == 0)
				fake.count_fail = (int)strtol(v + 4, NULL, 10);
		} else if ((v = fake_rest(line, "driver"))) {
			fake_copy(fake.driver, sizeof(fake.driver), v);
		} else if ((v = fake_rest(line, "cuda"))) {
			fake.cuda = (int)strtol(v, NULL, 10);
		} else if (fake_rest(line, "gpu")) {
			if (fake.n_gpus >= FAKE_MAX_GPUS) {
				g = NULL;
				continue;
			}
			g = &fake.gpus[fake.n_gpus++];
			memset(g, 0, sizeof(*g));
			g->cc_major = g->cc_minor = -1;
			g->mig = -1;
		} else if (!g) {
			continue;
		} else if ((v = fake_rest(line, "name"))) {
			fake_copy(g->name, sizeof(g->name), v);
		} else if ((v = fake_rest(line, "uuid"))) {
			fake_copy(g->uuid, sizeof(g->uuid), v);
		} else if ((v = fake_rest(line, "pci"))) {
			char bus[32] = "";
			unsigned int id = 0;
			if (sscanf(v, "%31s %x", bus, &id) >= 1) {
				fake_copy(g->bus_id, sizeof(g->bus_id), bus);
				g->pci_device_id = id;
			}
		} else if ((v = fake_rest(line, "memory"))) {
			if (strncmp(v, "fail", 4) == 0)
				g->memory_fail = (int)strtol(v + 4, NULL, 10);
			else if (strcmp(v, "crash") == 0)
				g->memory_fail = MEMORY_CRASH;
			else if (strcmp(v, "hang") == 0)
				g->memory_fail = MEMORY_HANG;
			else if (sscanf(v, "%llu %llu %llu %llu", &g->mib_total, &g->mib_reserved,
					&g->mib_used, &g->mib_free) == 4)
				g->has_memory = 1;
		} else if ((v = fake_rest(line, "handle"))) {
			if (strncmp(v, "fail", 4) == 0)
				g->handle_fail = (int)strtol(v + 4, NULL, 10);
		} else if ((v = fake_rest(line, "cc"))) {
			sscanf(v, "%d %d", &g->cc_major, &g->cc_minor);
		} else if ((v = fake_rest(line, "bus_width"))) {
			g->bus_width = (unsigned int)strtoul(v, NULL, 10);
		} else if ((v = fake_rest(line, "arch"))) {
			g->arch = (unsigned int)strtoul(v, NULL, 10);
		} else if ((v = fake_rest(line, "mem_clock"))) {
			g->mem_clock = (unsigned int)strtoul(v, NULL, 10);
		} else if ((v = fake_rest(line, "mig"))) {
			if (strcmp(v, "disabled") == 0)
				g->mig = 0;
			else if (strncmp(v, "enabled", 7) == 0) {
				g->mig = 1;
				g->mig_instances = (unsigned int)strtoul(v + 7, NULL, 10);
				if (g->mig_instances > FAKE_MAX_MIG)
					g->mig_instances = FAKE_MAX_MIG;
			}
		}
	}
	fclose(f);
}

static int fake_copy_out(char *dst, unsigned int len, const char *src)
{
	if (!dst)
		return FAKE_ERROR_INVALID_ARGUMENT;
	if (strlen(src) + 1 > len)
		return FAKE_ERROR_INSUFFICIENT_SIZE;
	memcpy(dst, src, strlen(src) + 1);
	return FAKE_SUCCESS;
}

/* Returns the memory query's error for dev (0: none); crashes or hangs when told to. */
static int fake_memory_fault(const struct fake_gpu *dev)
{
	if (dev->memory_fail == MEMORY_CRASH)
		abort();
	while (dev->memory_fail == MEMORY_HANG)
		pause();
	return dev->memory_fail;
}

static int fake_init(void)
{
	fake_load();
	if (fake.init_crash)
		abort();
	while (fake.init_hang)
		pause();
	return fake.init_fail;
}

/* Every exported function is declared first so the file builds with -Wmissing-prototypes. */
int nvmlInit(void);
int nvmlShutdown(void);
int nvmlSystemGetDriverVersion(char *version, unsigned int len);
int nvmlSystemGetCudaDriverVersion(int *version);
int nvmlDeviceGetCount(unsigned int *count);
int nvmlDeviceGetHandleByIndex(unsigned int index, struct fake_gpu **dev);
int nvmlDeviceGetName(struct fake_gpu *dev, char *name, unsigned int len);
int nvmlDeviceGetUUID(struct fake_gpu *dev, char *uuid, unsigned int len);
int nvmlDeviceGetPciInfo(struct fake_gpu *dev, struct fake_pci_v1 *pci);
int nvmlDeviceGetMemoryInfo(struct fake_gpu *dev, struct fake_memory *mem);
int nvmlDeviceGetCudaComputeCapability(struct fake_gpu *dev, int *major, int *minor);
int nvmlDeviceGetMigMode(struct fake_gpu *dev, unsigned int *current, unsigned int *pending);
int nvmlDeviceGetMaxMigDeviceCount(struct fake_gpu *dev, unsigned int *count);
int nvmlDeviceGetMigDeviceHandleByIndex(struct fake_gpu *dev, unsigned int index,
					struct fake_mig **mig);
int nvmlDeviceGetMemoryBusWidth(struct fake_gpu *dev, unsigned int *bits);
int nvmlDeviceGetMaxClockInfo(struct fake_gpu *dev, int type, unsigned int *mhz);
#ifndef NO_V2
int nvmlDeviceGetArchitecture(struct fake_gpu *dev, unsigned int *arch);
int nvmlInit_v2(void);
int nvmlSystemGetCudaDriverVersion_v2(int *version);
int nvmlDeviceGetCount_v2(unsigned int *count);
int nvmlDeviceGetHandleByIndex_v2(unsigned int index, struct fake_gpu **dev);
int nvmlDeviceGetPciInfo_v2(struct fake_gpu *dev, struct fake_pci *pci);
int nvmlDeviceGetPciInfo_v3(struct fake_gpu *dev, struct fake_pci *pci);
int nvmlDeviceGetMemoryInfo_v2(struct fake_gpu *dev, struct fake_memory_v2 *mem);
#endif

int nvmlInit(void)
{
	return fake_init();
}

int nvmlShutdown(void)
{
	return fake.loaded ? FAKE_SUCCESS : FAKE_ERROR_UNINITIALIZED;
}

int nvmlSystemGetDriverVersion(char *version, unsigned int len)
{
	if (!fake.driver[0])
		return FAKE_ERROR_NOT_SUPPORTED;
	return fake_copy_out(version, len, fake.driver);
}

int nvmlSystemGetCudaDriverVersion(int *version)
{
	if (!version)
		return FAKE_ERROR_INVALID_ARGUMENT;
	if (fake.cuda < 0)
		return FAKE_ERROR_NOT_SUPPORTED;
	*version = fake.cuda;
	return FAKE_SUCCESS;
}

int nvmlDeviceGetCount(unsigned int *count)
{
	if (!count)
		return FAKE_ERROR_INVALID_ARGUMENT;
	if (fake.count_fail)
		return fake.count_fail;
	*count = (unsigned int)fake.n_gpus;
	return FAKE_SUCCESS;
}

int nvmlDeviceGetHandleByIndex(unsigned int index, struct fake_gpu **dev)
{
	if (!dev || index >= (unsigned int)fake.n_gpus)
		return FAKE_ERROR_INVALID_ARGUMENT;
	if (fake.gpus[index].handle_fail)
		return fake.gpus[index].handle_fail;
	*dev = &fake.gpus[index];
	return FAKE_SUCCESS;
}

int nvmlDeviceGetName(struct fake_gpu *dev, char *name, unsigned int len)
{
	return fake_copy_out(name, len, dev->name);
}

int nvmlDeviceGetUUID(struct fake_gpu *dev, char *uuid, unsigned int len)
{
	return fake_copy_out(uuid, len, dev->uuid);
}

int nvmlDeviceGetPciInfo(struct fake_gpu *dev, struct fake_pci_v1 *pci)
{
	/* The short form drops the domain's upper half: "0000:18:00.0". */
	const char *bus = strlen(dev->bus_id) == 16 ? dev->bus_id + 4 : dev->bus_id;

	memset(pci, 0, sizeof(*pci));
	fake_copy(pci->bus_id, sizeof(pci->bus_id), bus);
	pci->pci_device_id = dev->pci_device_id;
	return FAKE_SUCCESS;
}

int nvmlDeviceGetMemoryInfo(struct fake_gpu *dev, struct fake_memory *mem)
{
	if (fake_memory_fault(dev))
		return dev->memory_fail;
	if (!dev->has_memory)
		return FAKE_ERROR_NOT_SUPPORTED;
	/* The first version counts reserved memory as used: used = total - free. */
	mem->total = dev->mib_total << 20;
	mem->free = dev->mib_free << 20;
	mem->used = (dev->mib_total - dev->mib_free) << 20;
	return FAKE_SUCCESS;
}

int nvmlDeviceGetCudaComputeCapability(struct fake_gpu *dev, int *major, int *minor)
{
	if (dev->cc_major < 0)
		return FAKE_ERROR_NOT_SUPPORTED;
	*major = dev->cc_major;
	*minor = dev->cc_minor;
	return FAKE_SUCCESS;
}

#ifndef NO_V2
int nvmlDeviceGetArchitecture(struct fake_gpu *dev, unsigned int *arch)
{
	if (!arch)
		return FAKE_ERROR_INVALID_ARGUMENT;
	if (dev->arch == 0)
		return FAKE_ERROR_NOT_SUPPORTED;
	*arch = dev->arch;
	return FAKE_SUCCESS;
}
#endif

int nvmlDeviceGetMigMode(struct fake_gpu *dev, unsigned int *current, unsigned int *pending)
{
	if (dev->mig < 0)
		return FAKE_ERROR_NOT_SUPPORTED;
	*current = (unsigned int)dev->mig;
	*pending = (unsigned int)dev->mig;
	return FAKE_SUCCESS;
}

int nvmlDeviceGetMaxMigDeviceCount(struct fake_gpu *dev, unsigned int *count)
{
	if (dev->mig < 0)
		return FAKE_ERROR_NOT_SUPPORTED;
	*count = FAKE_MAX_MIG;
	return FAKE_SUCCESS;
}

int nvmlDeviceGetMigDeviceHandleByIndex(struct fake_gpu *dev, unsigned int index,
					struct fake_mig **mig)
{
	if (dev->mig != 1)
		return FAKE_ERROR_NOT_SUPPORTED;
	if (index >= dev->mig_instances)
		return FAKE_ERROR_NOT_FOUND;
	dev->migs[index].slot = (int)index;
	*mig = &dev->migs[index];
	return FAKE_SUCCESS;
}

int nvmlDeviceGetMemoryBusWidth(struct fake_gpu *dev, unsigned int *bits)
{
	if (!dev->bus_width)
		return FAKE_ERROR_NOT_SUPPORTED;
	*bits = dev->bus_width;
	return FAKE_SUCCESS;
}

int nvmlDeviceGetMaxClockInfo(struct fake_gpu *dev, int type, unsigned int *mhz)
{
	if (type != 2 || !dev->mem_clock)
		return FAKE_ERROR_NOT_SUPPORTED;
	*mhz = dev->mem_clock;
	return FAKE_SUCCESS;
}

#ifndef NO_V2
int nvmlInit_v2(void)
{
	return fake_init();
}

int nvmlSystemGetCudaDriverVersion_v2(int *version)
{
	return nvmlSystemGetCudaDriverVersion(version);
}

int nvmlDeviceGetCount_v2(unsigned int *count)
{
	return nvmlDeviceGetCount(count);
}

int nvmlDeviceGetHandleByIndex_v2(unsigned int index, struct fake_gpu **dev)
{
	return nvmlDeviceGetHandleByIndex(index, dev);
}

int nvmlDeviceGetPciInfo_v3(struct fake_gpu *dev, struct fake_pci *pci)
{
	const char *legacy = strlen(dev->bus_id) == 16 ? dev->bus_id + 4 : dev->bus_id;

	memset(pci, 0, sizeof(*pci));
	fake_copy(pci->bus_id_legacy, sizeof(pci->bus_id_legacy), legacy);
	fake_copy(pci->bus_id, sizeof(pci->bus_id), dev->bus_id);
	pci->pci_device_id = dev->pci_device_id;
	return FAKE_SUCCESS;
}

int nvmlDeviceGetPciInfo_v2(struct fake_gpu *dev, struct fake_pci *pci)
{
	return nvmlDeviceGetPciInfo_v3(dev, pci);
}

int nvmlDeviceGetMemoryInfo_v2(struct fake_gpu *dev, struct fake_memory_v2 *mem)
{
	if (mem->version != (unsigned int)(sizeof(struct fake_memory_v2) | (2u << 24)))
		return FAKE_ERROR_ARGUMENT_VERSION_MISMATCH;
	if (fake_memory_fault(dev))
		return dev->memory_fail;
	if (!dev->has_memory)
		return FAKE_ERROR_NOT_SUPPORTED;
	mem->total = dev->mib_total << 20;
	mem->reserved = dev->mib_reserved << 20;
	mem->used = dev->mib_used << 20;
	mem->free = dev->mib_free << 20;
	return FAKE_SUCCESS;
}
#endif
