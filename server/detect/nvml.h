/*
 * The NVML client: loads libnvidia-ml with dlopen (never linked, so rigfit runs where there is
 * no NVIDIA driver), asks it about the system and each GPU, and writes what it learnt as the
 * line record that core/hw/hw_parse_nvidia.h describes. It is meant to run in a child process
 * (rf_run_fork_capture): a library that hangs or crashes then takes only the child with it, and
 * the parent parses the record with the pure parser. Versioned entry points are preferred
 * (nvmlInit_v2, nvmlDeviceGetMemoryInfo_v2, nvmlDeviceGetPciInfo_v3...), with the older ones as
 * fallbacks for old drivers. NVML's types are declared here from its documented API; nvml.h is
 * not needed to build.
 */
#ifndef RIGFIT_SERVER_DETECT_NVML_H
#define RIGFIT_SERVER_DETECT_NVML_H

/* The library loaded on a live scan. */
#define RF_NVML_DEFAULT_LIB "libnvidia-ml.so.1"

/* Loads the NVML library lib (a path, or a name the dynamic loader looks up), queries it, and
 * writes the complete record, `end` line included, to fd; a library that cannot be loaded or
 * initialised is reported inside the record (dlopen_error=, init_error=). Returns 0 once the
 * record is written, or RF_E_IO when writing to fd failed. NVML is shut down and unloaded before
 * it returns. Call it in a child process only (the library may hang, crash or start threads). */
int rf_nvml_write_record(const char *lib, int fd);

#endif
