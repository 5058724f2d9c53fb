/*
 * Known accelerators and hosts: the facts that the memory and speed estimates need (memory,
 * bandwidth, FP16/FP32 throughput, unified or not), loaded from profiles/devices.json by
 * api/device_json.c into a struct device_table, and the rules that turn a name reported by
 * nvidia-smi, rocm-smi, sysctl or a user ("NVIDIA GeForce RTX 4090", "RTX 4090", "Apple M2 Max")
 * into one of those entries. Matching is exact after normalisation, never by substring, so
 * "RTX 4090 D" never becomes an "RTX 4090" and "A100 40GB" never an "A100 80GB". Pure: no I/O.
 */
#ifndef RIGFIT_CORE_DEVICE_H
#define RIGFIT_CORE_DEVICE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define DEVICE_TABLE_MAX 1024 /* entries in one devices.json */
#define DEVICE_ID_LEN 48      /* kebab-case id, NUL included */
#define DEVICE_NAME_LEN 96    /* name and each alias */
#define DEVICE_MAX_ALIASES 16 /* aliases per entry */
#define DEVICE_SHORT_LEN 48   /* vendor, class, architecture */
#define DEVICE_CC_LEN 8       /* "12.0" */
#define DEVICE_TEXT_LEN 1024  /* source and notes */
#define DEVICE_KEY_LEN 160    /* a normalised name */

/* Bandwidth assumed for a GPU that is neither in the table nor reports its bus width and memory
 * clock; listed as an assumption wherever it is used. */
#define DEVICE_ASSUMED_GPU_BANDWIDTH_GBS 256.0

enum device_kind {
	DEVICE_KIND_GPU = 0, /* discrete accelerator with its own memory */
	DEVICE_KIND_SOC,     /* GPU sharing the host's memory (Apple, Jetson) */
	DEVICE_KIND_CPU,     /* a host: only memory bandwidth and core counts matter */
};

enum device_fp16_kind {
	DEVICE_FP16_UNKNOWN = 0,
	DEVICE_FP16_TENSOR, /* dense tensor/matrix-core rate */
	DEVICE_FP16_VECTOR, /* shader/vector rate (no tensor cores, or tensor rate not sourced) */
};

/* What device_compute_tflops() found. */
enum device_compute_kind {
	DEVICE_COMPUTE_UNKNOWN = 0,
	DEVICE_COMPUTE_TENSOR,          /* the dense tensor FP16 rate */
	DEVICE_COMPUTE_VECTOR,          /* the best vector rate: the device has no tensor units */
	DEVICE_COMPUTE_VECTOR_NO_TENSOR /* vector rate of a part that has tensor units whose rate
					   is not in the table: an estimate from it is low */
};

/* The GPU's share of unified memory: fraction_at_or_below of RAM up to up_to_gib, fraction_above
 * beyond (Apple's recommendedMaxWorkingSetSize). All zero when the entry has no such rule. */
struct device_working_set {
	double up_to_gib;
	double fraction_at_or_below;
	double fraction_above;
};

/* One entry of devices.json. A number that the file does not give is negative (unknown); a
 * string it does not give is empty. Plain data: copy freely. */
struct device_profile {
	char id[DEVICE_ID_LEN];
	char vendor[DEVICE_SHORT_LEN];
	char name[DEVICE_NAME_LEN];
	int n_aliases;
	char aliases[DEVICE_MAX_ALIASES][DEVICE_NAME_LEN];
	enum device_kind kind;
	char device_class[DEVICE_SHORT_LEN]; /* consumer, laptop, workstation, datacenter... */
	double memory_gib;                   /* nominal; < 0 unknown */
	bool memory_configurable;            /* unified SoC sold with several RAM sizes */
	bool unified;
	double memory_bandwidth_gbs;          /* theoretical peak, GB/s; < 0 unknown */
	double memory_bandwidth_measured_gbs; /* a published measurement; < 0 none */
	double fp16_tflops;                   /* dense; < 0 unknown */
	enum device_fp16_kind fp16_kind;
	double fp32_tflops; /* < 0 unknown */
	/* Dense bf16 matrix peak with fp32 accumulate, what mixed-precision training runs at
	 * (fp16 with fp32 accumulate on parts without bf16; the ALU rate on Apple GPUs), kept
	 * apart from fp16_tflops, which for GeForce cards is the FP16-accumulate rate; < 0
	 * unknown. */
	double bf16_tflops;
	/* The rate a continuous large dense fp16 GEMM was measured at, where the board's power
	 * limit holds the clocks far below the boost the peaks are quoted at (a 70 W T4: 24 of
	 * 65 TFLOPS); < 0 not known, the card holds its clocks. device_held_tflops uses it. */
	double sustained_gemm_tflops;
	/* An SoC's GPU behind a memory controller it shares with the CPU (a Jetson's): the share
	 * of its theoretical bandwidth it decodes at, against what a discrete card reaches of
	 * its own under the same kernels; < 0: as a discrete card. The speed model reads the
	 * bandwidth at this share. */
	double decode_bandwidth_share;
	char architecture[DEVICE_SHORT_LEN];
	char compute_capability[DEVICE_CC_LEN]; /* NVIDIA "8.9"; empty otherwise */
	int gpu_cores;                          /* Apple GPU cores; 0 unknown */
	int cpu_cores;                          /* 0 unknown */
	/* CPUs: the cores of the part each alias names, where one entry covers a family of parts
	 * ("EPYC 9554": 64 of the Genoa entry); 0 unknown. */
	int alias_cores[DEVICE_MAX_ALIASES];
	/* CPUs: of those, the performance cores of a hybrid part (Intel's P-cores: "Core
	 * i9-13900K": 8 of 24), the threads llama.cpp runs by default; 0: not hybrid or
	 * unknown. */
	int alias_performance_cores[DEVICE_MAX_ALIASES];
	/* CPUs: the instruction sets the chip has (hw.h HW_ISA() bits), which pick llama.cpp's
	 * kernels and buffers; 0 unknown. A CPU described by name takes them from here. */
	uint32_t isa;
	double usd_per_hour; /* < 0 unknown */
	struct device_working_set working_set;
	char source[DEVICE_TEXT_LEN];
	char notes[DEVICE_TEXT_LEN];
};

/* The cores of the part model names: the entry's cpu_cores, else those of the longest alias
 * with a core count that model contains as a whole word (case ignored), else 0. With
 * performance, also writes that part's performance cores there (0: not hybrid, or the split
 * is not known). */
int device_cpu_cores(const struct device_profile *p, const char *model,
		     int *performance /* OUT, may be NULL */);

/* One name of an entry (its id, name or an alias) as device_normalize keys it. */
struct device_name_key {
	int entry;     /* index into devices */
	int size_gib;  /* the memory size the name carries; 0: none */
	size_t off;    /* the key: a NUL-terminated string at name_keys_pool + off */
	uint32_t hash; /* of the key (FNV-1a): a lookup compares strings only where it matches */
	uint32_t tail_hash; /* of the key after its first word ("4090" of "rtx 4090"); 0: one word */
	/* The next name (a higher index) with the same hash, and with the same tail_hash;
	 * DEVICE_KEY_NONE: none. A lookup walks these from device_table's buckets. */
	uint32_t next_same_hash, next_same_tail;
};

#define DEVICE_KEY_NONE UINT32_MAX

/* A loaded devices.json: n entries in devices (malloc'd by the loader, freed by
 * device_table_clear). name_keys, when device_table_index built them, hold every entry's
 * normalised names in entry order, so that resolving a name normalises only that name. */
struct device_table {
	int n;
	struct device_profile *devices;
	struct device_name_key *name_keys; /* NULL: not indexed (names normalised per lookup) */
	size_t n_name_keys;
	char *name_keys_pool;
	/* Open-addressed tables of the names' hashes: a bucket holds the lowest index of the
	 * names with one hash (hash_buckets) or tail_hash (tail_buckets), DEVICE_KEY_NONE when
	 * empty; n_buckets is a power of two above twice n_name_keys. */
	uint32_t *hash_buckets, *tail_buckets;
	size_t n_buckets;
};

/* Sets every number of p to unknown and every string to empty. */
void device_profile_init(struct device_profile *p /* OUT */);

/* Frees t's entries (and its index) and sets t to empty. NULL is a no-op. */
void device_table_clear(struct device_table *t);

/* Normalises every name of t's entries once, into t->name_keys (freed by device_table_clear;
 * an index built before replaces nothing: call it once, after the entries are final). Lookups
 * answer the same with or without it. Returns 0 or RF_E_NOMEM (t is left unindexed). */
int device_table_index(struct device_table *t);

/* Normalises a device name for matching: lower case; "NVIDIA", "GeForce", "Tesla", "AMD",
 * "Radeon", "Apple", "Intel", "(R)", "(TM)", "GPU", "Graphics", "Generation", "Series" and
 * "Developer Kit" dropped; '-', '_', '(', ')' and spaces alike; letters and digits split
 * ("RTX4090" = "RTX 4090"); "PCIe"/"PCI-E" and "SXM2/4/5" folded to "pcie" and "sxm"; a memory
 * size ("80GB", "80 GB", "80GiB") removed from the key and returned in *size_gib (0 when none).
 * Returns 0, or RF_E_INVALID_VALUE for NULL or empty input, RF_E_TOO_LARGE for a name longer
 * than DEVICE_NAME_LEN - 1 or a key that does not fit keylen. [out] key: NUL-terminated. */
int device_normalize(const char *name, char *key /* OUT */, size_t keylen, int *size_gib /* OUT */);

/* Resolves reported_name to an entry of t: the entries whose id, name or an alias has the same
 * normalised key; a memory size in the name must match the entry (except for SoCs sold with
 * several RAM sizes). Returns 0 and the entry in *out (a pointer into t), RF_E_NOT_FOUND when
 * nothing matches, RF_E_CONFLICT when several entries match and the name cannot tell them
 * apart (use device_resolve_mem with the detected memory), or RF_E_INVALID_VALUE /
 * RF_E_TOO_LARGE for a bad name. */
int device_resolve(const struct device_table *t, const char *reported_name,
		   const struct device_profile **out /* OUT */);

/* The entries of t that name stands for when it cannot tell them apart (device_resolve's
 * RF_E_CONFLICT: "RTX 3060" is sold with 12 and 8 GB), or that a bare name stands for in its
 * form factors ("H100": the PCIe, SXM and NVL cards, which device_resolve does not take):
 * writes up to max of them to out and returns how many, or 0 when name resolves to one entry
 * or none. */
int device_variants(const struct device_table *t, const char *name,
		    const struct device_profile **out /* OUT */, int max);

/* The shortest of p's name and aliases ("RTX 3060 12GB"), for messages. */
const char *device_short_name(const struct device_profile *p);

/* Returns the id, name or alias of t closest to a mistyped name (core/suggest.h's typo rule),
 * or NULL when none is close or name is one of them; with accelerators_only, CPUs are not
 * offered (a mistyped GPU's name is not a processor's). */
const char *device_suggest(const struct device_table *t, const char *name, bool accelerators_only);

/* Like device_resolve, but when several entries match, memory_total_bytes (from detection;
 * <= 0 unknown) picks the one whose nominal memory is closest, if it is within 15%. */
int device_resolve_mem(const struct device_table *t, const char *reported_name,
		       int64_t memory_total_bytes, const struct device_profile **out /* OUT */);

/* Resolves a CPU's model string as the scan reports it ("AMD Ryzen 9 7950X 16-Core
 * Processor", "13th Gen Intel(R) Core(TM) i7-13700K", "Intel(R) Xeon(R) Platinum 8480+",
 * "Intel(R) Core(TM) i5-8250U CPU @ 1.60GHz") to an entry of kind cpu: what only decorates the
 * name (a core count, "Processor", "CPU @ ...", "with/w/ Radeon Graphics", "13th Gen") is
 * dropped, the rest resolved like device_resolve. Returns 0 and *out, RF_E_NOT_FOUND (no CPU
 * entry has that name), RF_E_CONFLICT, or RF_E_INVALID_VALUE (NULL or empty). */
int device_resolve_cpu(const struct device_table *t, const char *model,
		       const struct device_profile **out /* OUT */);

/* Checks that ids are unique and that no two entries can be reached by the same normalised name
 * and memory size. Returns 0, RF_E_CONFLICT with "entry N (id): ..." in err (1-based), or
 * RF_E_NOMEM (err says so). */
int device_table_check(const struct device_table *t, char *err, size_t errlen);

/* Returns the peak memory bandwidth in GB/s from a memory bus width and the memory clock that
 * NVML reports (MHz, data rate / 2): clock x 2 x bits / 8 / 1000 (RTX 4090: 10501 MHz x 2 x 384
 * / 8 / 1000 = 1008). Returns -1 when either input is not positive or absurd (> 65536 bits or
 * > 100000 MHz). */
double device_bandwidth_from_bus(int bus_width_bits, int mem_clock_mhz);

/* Returns the bandwidth to use for a GPU: the profile's (p may be NULL), else the one computed
 * from bus width and clock, else DEVICE_ASSUMED_GPU_BANDWIDTH_GBS. [out] basis: "profile",
 * "bus_width_and_clock" or "assumed" (static strings). */
double device_gpu_bandwidth(const struct device_profile *p, int bus_width_bits, int mem_clock_mhz,
			    const char **basis /* OUT */);

/* Returns the best documented dense compute rate of p in TFLOPS and what kind it is in *kind:
 * the tensor FP16 rate when known; else the FP32 rate (the vector FP16 rate when FP32 is not
 * known). Returns -1 and DEVICE_COMPUTE_UNKNOWN when p has neither. */
/* Returns true for a datacenter part with 1200 GB/s or more: HBM, which llama.cpp's decode
 * kernels draw from at a lower share of the peak than GDDR or LPDDR (speed.h mem_eff_hbm). */
bool device_hbm_class(const struct device_profile *p);

/* True for workstation and datacenter parts (RTX 6000 Ada, A100, H100): their listed tensor
 * peaks are reached at clocks that their power limits (250-350 W on the PCIe cards) do not hold
 * through a long GEMM, and Hopper's peak needs wgmma, which llama.cpp's kernels do not use, so
 * prefill reaches a smaller share of the peak than on GeForce parts (speed.h tensor_eff_pro). */
bool device_pro_class(const struct device_profile *p);

double device_compute_tflops(const struct device_profile *p,
			     enum device_compute_kind *kind /* OUT */);

/* The share of the tensor peak cuBLAS's large fp16 GEMMs reach on a card that holds its clocks
 * (an L20: 105-115 of 119.5 TFLOPS, DefTruth/CUDA-Learn-Notes hgemm/README.md). */
#define DEVICE_GEMM_SHARE_HELD 0.9

/* Returns the dense 16-bit peak, peak, that a long run of GEMMs (training) can be rated at on
 * p: peak itself, or, where a power limit holds the clocks down (sustained_gemm_tflops known),
 * the peak those clocks give, sustained_gemm_tflops / DEVICE_GEMM_SHARE_HELD, if lower. A
 * class utilisation fitted on cards that hold their clocks then applies to it alike. */
double device_held_tflops(const struct device_profile *p, double peak);

/* Returns the bytes of unified memory the GPU of p may use on a machine with ram_bytes of RAM
 * (the working-set rule), or -1 when p has no such rule or ram_bytes <= 0. */
int64_t device_gpu_working_set_bytes(const struct device_profile *p, int64_t ram_bytes);

#endif
