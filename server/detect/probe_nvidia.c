/*
 * The NVIDIA probe (see probes.h): discrete NVIDIA GPUs through NVML, else nvidia-smi.
 *
 * NVML is loaded in a forked child (nvml.c) whose line record the parent parses with core's
 * parser, so a library that hangs is cut off by the probe timeout and one that crashes costs
 * only the child; either way the scan falls back to nvidia-smi. nvidia-smi is run with an argv,
 * the same timeout and an output cap; drivers older than a field are asked again without it
 * (compute_cap arrived around R510, mig.mode.current with R450). On a machine without NVIDIA
 * hardware the probe is silent, and it never makes a GPU out of output it does not understand.
 * Jetson boards are left to the Jetson probe: their GPU is the SoC's, and has no NVML.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/err.h"
#include "core/hw/hw_parse_nvidia.h"
#include "server/detect/nvml.h"
#include "server/detect/probes.h"
#include "server/detect/run.h"
#include "server/log.h"

const char *const rf_nvidia_smi_queries[RF_NVIDIA_SMI_QUERIES] = {
	"index,name,uuid,pci.bus_id,pci.device_id,memory.total,memory.used,memory.free,"
	"driver_version,clocks.max.memory,mig.mode.current,compute_cap",
	"index,name,uuid,pci.bus_id,pci.device_id,memory.total,memory.used,memory.free,"
	"driver_version,clocks.max.memory,mig.mode.current",
	"index,name,uuid,pci.bus_id,pci.device_id,memory.total,memory.used,memory.free,"
	"driver_version,clocks.max.memory",
};

/* Returns true when the Jetson probe already reported the SoC's GPU. */
static bool nv_has_jetson(const struct hw_snapshot *s)
{
	for (int i = 0; i < s->n_gpus; i++)
		if (strcmp(s->gpus[i].vendor, "nvidia") == 0 && s->gpus[i].unified_memory)
			return true;
	return false;
}

/* Returns true when the NVIDIA kernel driver shows itself under root: then a missing NVML or
 * nvidia-smi is worth a warning, not a silent "no GPU". */
static bool nv_driver_present(const char *root)
{
	static const char *const paths[] = {"/proc/driver/nvidia/version", "/dev/nvidiactl",
					    "/dev/nvidia0"};
	const char *r = root && strcmp(root, "/") != 0 ? root : "";
	char p[4096];

	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		if (snprintf(p, sizeof(p), "%s%s", r, paths[i]) >= (int)sizeof(p))
			continue;
		if (access(p, F_OK) == 0)
			return true;
	}
	return false;
}

/* Copies the first line of out into buf, printable bytes only, for a warning. */
static void nv_first_line(const char *out, size_t len, char *buf, size_t buflen)
{
	size_t n = 0;

	for (size_t i = 0; i < len && n + 1 < buflen; i++) {
		unsigned char c = (unsigned char)out[i];
		if (c == '\n' || c == '\r')
			break;
		buf[n++] = (c < 0x20 || c == 0x7f) ? '?' : (char)c;
	}
	buf[n] = '\0';
}

/* Appends the report's GPUs to s. Returns how many were added. */
static int nv_add_gpus(struct hw_snapshot *s, const struct hw_nvidia_report *rep)
{
	int added = 0;

	for (int i = 0; i < rep->n_gpus; i++) {
		struct hw_gpu *g = rf_snapshot_add_gpu(s);
		int index;
		if (!g)
			break;
		index = g->index;
		*g = rep->gpus[i];
		g->index = index;
		added++;
	}
	return added;
}

/* Warns once about GPUs whose bandwidth could not be computed. */
static void nv_warn_bandwidth(struct hw_snapshot *s, const struct hw_nvidia_report *rep,
			      const char *why)
{
	int n = 0;

	for (int i = 0; i < rep->n_gpus; i++)
		if (rep->gpus[i].memory_bandwidth_gbs < 0)
			n++;
	if (n)
		hw_warn(s, "gpu: memory bandwidth unknown for %d NVIDIA GPU(s): %s", n, why);
}

/* ---- NVML ---------------------------------------------------------------------------------- */

/* The child's whole job. */
static int nv_nvml_child(void *arg, int out_fd)
{
	return rf_nvml_write_record(arg, out_fd) < 0 ? 1 : 0;
}

/* Warns about the optional NVML functions this library lacks, except MIG's: a driver too old
 * for MIG drives no GPU that has it. */
static void nv_warn_missing(struct hw_snapshot *s, const struct hw_nvidia_report *rep)
{
	char list[HW_WARNING_LEN / 2] = "";
	size_t used = 0;
	int n = 0, kept = rep->n_missing < 8 ? rep->n_missing : 8;

	for (int i = 0; i < kept; i++) {
		int w;
		/* Without the MIG calls the GPU has no MIG; the device profile names the
		 * architecture of a driver too old to. */
		if (strncmp(rep->missing[i], "nvmlDeviceGetMig", 16) == 0 ||
		    strncmp(rep->missing[i], "nvmlDeviceGetMaxMig", 19) == 0 ||
		    strcmp(rep->missing[i], "nvmlDeviceGetArchitecture") == 0)
			continue;
		w = snprintf(list + used, sizeof(list) - used, "%s%s", n ? ", " : "",
			     rep->missing[i]);
		if (w < 0 || (size_t)w >= sizeof(list) - used)
			break;
		used += (size_t)w;
		n++;
	}
	if (n)
		hw_warn(s, "gpu: this NVML lacks %s; what they report is unknown", list);
}

/* Runs NVML in a child and adds its GPUs. Returns 0 when NVML answered (with or without GPUs),
 * or a negative code when the caller should fall back to nvidia-smi. */
static int nv_probe_nvml(const struct rf_detect_opts *o, struct hw_snapshot *s, const char *lib,
			 struct hw_nvidia_report *rep)
{
	struct rf_run_result res = {0};
	int rc, added;

	rc = rf_run_fork_capture(nv_nvml_child, (void *)lib, o->probe_timeout_ms,
				 HW_NVIDIA_OUTPUT_CAP, &res);
	if (rc < 0) {
		hw_warn(s, "gpu: the NVML probe could not be started (%s)", rf_err_message(rc));
		return rc;
	}
	if (res.timed_out) {
		hw_warn(s, "gpu: NVML probe timed out after %d ms", o->probe_timeout_ms);
		rc = RF_E_TIMEOUT;
		goto out;
	}
	if (hw_parse_nvml_record(res.out, res.len, rep) < 0 ||
	    (!rep->complete && !rep->library_missing)) {
		if (res.exit_status > 128)
			hw_warn(s, "gpu: the NVML probe crashed (signal %d)",
				res.exit_status - 128);
		else
			hw_warn(s, "gpu: the NVML probe ended without an answer (exit %d)",
				res.exit_status);
		rc = RF_E_IO;
		goto out;
	}
	if (rep->library_missing) {
		/* No NVML on a machine without NVIDIA hardware is the normal case, not news. */
		if (o->nvml_lib || nv_driver_present(o->root))
			hw_warn(s, "gpu: NVML (%s) could not be loaded: %s", lib,
				rep->library_error);
		else
			rf_log_debug("gpu: no NVML (%s): %s", lib, rep->library_error);
		rc = RF_E_NOT_FOUND;
		goto out;
	}
	if (rep->init_error || rep->count_error) {
		int code = rep->init_error ? rep->init_error : rep->count_error;
		hw_warn(s, "gpu: %s failed (NVML error %d: %s)",
			rep->init_error ? "nvmlInit" : "nvmlDeviceGetCount", code,
			hw_nvml_error_name(code));
		rc = RF_E_UNAVAILABLE;
		goto out;
	}
	nv_warn_missing(s, rep);
	added = nv_add_gpus(s, rep);
	for (int i = 0; i < added; i++) {
		if (rep->handle_error[i])
			hw_warn(s, "gpu %d: NVML could not open it (NVML error %d: %s)",
				s->n_gpus - added + i, rep->handle_error[i],
				hw_nvml_error_name(rep->handle_error[i]));
		else if (rep->memory_error[i])
			hw_warn(s, "gpu %d: memory unknown (NVML error %d: %s)",
				s->n_gpus - added + i, rep->memory_error[i],
				hw_nvml_error_name(rep->memory_error[i]));
	}
	if (rep->n_bad_values)
		hw_warn(s, "gpu: NVML gave %d malformed value(s), left unknown", rep->n_bad_values);
	if (rep->n_rejected)
		hw_warn(s, "gpu: the NVML probe wrote %d unreadable line(s)", rep->n_rejected);
	nv_warn_bandwidth(s, rep, "NVML did not report the memory bus width or clock");
	if (added > 0)
		hw_strlcpy(s->sources.gpu, "nvml", sizeof(s->sources.gpu));
	rc = 0;
out:
	rf_run_result_free(&res);
	return rc;
}

/* ---- nvidia-smi ---------------------------------------------------------------------------- */

/* Counts MIG devices per GPU with `nvidia-smi -L` for the GPUs that have MIG on. */
static void nv_smi_mig(const struct rf_detect_opts *o, struct hw_snapshot *s, const char *smi,
		       const struct hw_nvidia_report *rep, int first)
{
	const char *argv[] = {smi, "-L", NULL};
	struct rf_run_result res = {0};
	int counts[HW_MAX_GPUS];
	bool any = false;
	int rc;

	for (int i = 0; i < rep->n_gpus; i++)
		any = any || rep->gpus[i].mig.enabled;
	if (!any)
		return;
	/* Unknown (null) until `nvidia-smi -L` answers. */
	for (int i = first; i < s->n_gpus; i++)
		if (s->gpus[i].has_mig && s->gpus[i].mig.enabled)
			s->gpus[i].mig.instances = HW_UNKNOWN;
	rc = rf_run_capture(argv, o->probe_timeout_ms, HW_NVIDIA_OUTPUT_CAP, &res);
	if (rc < 0 || res.timed_out || res.exit_status != 0) {
		hw_warn(s, "gpu: MIG is on but `nvidia-smi -L` %s; MIG instance counts unknown",
			rc < 0        ? "could not run" :
			res.timed_out ? "timed out" :
					"failed");
		rf_run_result_free(&res);
		return;
	}
	if (hw_parse_nvidia_smi_list(res.out, res.len, counts, HW_MAX_GPUS) == 0) {
		hw_warn(s, "gpu: MIG is on but `nvidia-smi -L` listed no GPU; MIG instance counts "
			   "unknown");
		rf_run_result_free(&res);
		return;
	}
	for (int i = 0; i < rep->n_gpus && first + i < s->n_gpus; i++) {
		int nv = rep->nv_index[i] >= 0 ? rep->nv_index[i] : i;
		struct hw_gpu *g = &s->gpus[first + i];
		if (g->mig.enabled && nv < HW_MAX_GPUS)
			g->mig.instances = counts[nv];
	}
	rf_run_result_free(&res);
}

/* Runs nvidia-smi's CSV query (asking again without the fields an old driver rejects) and adds
 * its GPUs. */
static void nv_probe_smi(const struct rf_detect_opts *o, struct hw_snapshot *s, const char *smi,
			 struct hw_nvidia_report *rep)
{
	struct rf_run_result res = {0};
	char query[512], line[100];
	int rc, first, added;
	size_t q;

	for (q = 0; q < RF_NVIDIA_SMI_QUERIES; q++) {
		const char *argv[] = {smi, query, "--format=csv,noheader,nounits", NULL};

		snprintf(query, sizeof(query), "--query-gpu=%s", rf_nvidia_smi_queries[q]);
		rc = rf_run_capture(argv, o->probe_timeout_ms, HW_NVIDIA_OUTPUT_CAP, &res);
		if (rc == RF_E_NOT_FOUND) {
			if (o->nvidia_smi || nv_driver_present(o->root))
				hw_warn(s, "gpu: %s could not be run (not found)", smi);
			return;
		}
		if (rc < 0) {
			hw_warn(s, "gpu: %s could not be run (%s)", smi, rf_err_message(rc));
			return;
		}
		if (res.timed_out) {
			hw_warn(s, "gpu: nvidia-smi timed out after %d ms", o->probe_timeout_ms);
			goto out;
		}
		if (res.exit_status == 0)
			break;
		if (strstr(res.out, "not a valid field") && q + 1 < RF_NVIDIA_SMI_QUERIES) {
			rf_run_result_free(&res);
			continue;
		}
		nv_first_line(res.out, res.len, line, sizeof(line));
		hw_warn(s, "gpu: nvidia-smi failed (exit %d)%s%s", res.exit_status,
			line[0] ? ": " : "", line);
		goto out;
	}
	hw_parse_nvidia_smi_csv(res.out, res.len, rf_nvidia_smi_queries[q], rep);
	if (res.truncated)
		hw_warn(s, "gpu: nvidia-smi printed more than %d bytes; the rest was ignored",
			HW_NVIDIA_OUTPUT_CAP);
	if (rep->n_rejected)
		hw_warn(s, "gpu: nvidia-smi printed %d line(s) that are not GPU rows; ignored",
			rep->n_rejected);
	else if (rep->n_gpus == 0)
		hw_warn(s, "gpu: nvidia-smi answered but listed no GPU");
	if (rep->n_bad_values)
		hw_warn(s, "gpu: nvidia-smi gave %d malformed value(s), left unknown",
			rep->n_bad_values);
	first = s->n_gpus;
	added = nv_add_gpus(s, rep);
	for (int i = 0; i < added; i++)
		if (s->gpus[first + i].memory_total_bytes < 0)
			hw_warn(s, "gpu %d: nvidia-smi did not report its memory", first + i);
	if (added > 0) {
		hw_strlcpy(s->sources.gpu, "nvidia-smi", sizeof(s->sources.gpu));
		nv_warn_bandwidth(s, rep,
				  "nvidia-smi does not report the memory bus width (a device "
				  "profile fills it, see from_profile)");
		nv_smi_mig(o, s, smi, rep, first);
	}
out:
	rf_run_result_free(&res);
}

void rf_probe_nvidia(const struct rf_detect_opts *o, struct hw_snapshot *s)
{
	bool live = rf_detect_is_live(o);
	const char *lib = o->nvml_lib ? o->nvml_lib : (live ? RF_NVML_DEFAULT_LIB : NULL);
	const char *smi = o->nvidia_smi ? o->nvidia_smi : (live ? "nvidia-smi" : NULL);
	struct hw_nvidia_report *rep;

	if (nv_has_jetson(s) || (!lib && !smi))
		return;
	rep = malloc(sizeof(*rep));
	if (!rep) {
		hw_warn(s, "gpu: out of memory; NVIDIA GPUs not probed");
		return;
	}
	if (!lib || nv_probe_nvml(o, s, lib, rep) < 0) {
		if (smi)
			nv_probe_smi(o, s, smi, rep);
	}
	free(rep);
}
