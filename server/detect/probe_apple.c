/*
 * macOS and Apple Silicon through `sysctl -a` (see probes.h). One command gives everything a
 * Mac will tell without private frameworks: hw.* (memory, cores per performance level, ISA
 * flags), machdep.cpu.* (the chip's name), kern.* (the OS) and iogpu.wired_limit_mb (the
 * user's GPU memory limit, which is why the probe asks for -a rather than `hw machdep`). The
 * output is parsed by core/hw/hw_parse_sysctl.c. On Apple Silicon the GPU is one unified-memory
 * device whose size is the share of RAM Metal lets it wire.
 *
 * Runs only when opts->sysctl names a program (tests point it at a script that prints a
 * recorded output), or on a macOS build scanning this machine.
 */
#include <stdlib.h>
#include <string.h>

#include "core/err.h"
#include "core/hw/hw_parse_sysctl.h"
#include "server/detect/probes.h"
#include "server/detect/run.h"

/* `sysctl -a` prints about 100 KiB on a current Mac; anything past 4 MiB is not sysctl. */
#define SYSCTL_OUTPUT_CAP (4u << 20)

void rf_probe_apple(const struct rf_detect_opts *o, struct hw_snapshot *s)
{
	const char *prog = o->sysctl;
	struct rf_run_result res = {0};
	struct hw_sysctl_info *info = NULL;
	int rc;

#ifdef __APPLE__
	if (!prog && rf_detect_is_live(o))
		prog = "sysctl";
#endif
	if (!prog || !*prog)
		return;
	{
		const char *const argv[] = {prog, "-a", NULL};
		rc = rf_run_capture(argv, o->probe_timeout_ms, SYSCTL_OUTPUT_CAP, &res);
	}
	if (rc < 0) {
		hw_warn(s, "sysctl: cannot run %s (%s)", prog, rf_err_code(rc));
		return;
	}
	if (res.timed_out)
		hw_warn(s, "sysctl: %s did not finish within %d ms", prog, o->probe_timeout_ms);
	else if (res.truncated)
		hw_warn(s, "sysctl: output longer than %u bytes; the rest was ignored",
			SYSCTL_OUTPUT_CAP);
	info = malloc(sizeof(*info));
	if (!info) {
		hw_warn(s, "sysctl: out of memory");
		goto out;
	}
	if (hw_parse_sysctl(res.out, res.len, info) < 0) {
		hw_warn(s, "sysctl: %s printed no known key (exit status %d)", prog,
			res.exit_status);
		goto out;
	}
	hw_sysctl_fill_host(info, s);
	if (hw_sysctl_is_apple_silicon(info)) {
		struct hw_gpu *g = rf_snapshot_add_gpu(s);
		if (g) {
			hw_sysctl_fill_gpu(info, s, g);
			hw_strlcpy(s->sources.gpu, "sysctl", sizeof(s->sources.gpu));
		}
	}
out:
	free(info);
	rf_run_result_free(&res);
}
