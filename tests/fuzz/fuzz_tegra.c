/*
 * Fuzz target: the device-tree and L4T files of Jetson / Raspberry Pi boards
 * (core/hw/hw_parse_tegra.c). The input stands for /proc/device-tree/model, .../compatible and
 * /etc/nv_tegra_release, separated by FUZZ_SEP (NULs inside a part are kept).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/hw/hw.h"
#include "core/hw/hw_parse_tegra.h"
#include "tests/fuzz/fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_part f[3];
	struct hw_tegra t;
	char model[HW_NAME_LEN], chip[16];

	fuzz_split(data, size, f, 3);
	(void)hw_parse_dt_model(f[0].p, f[0].len, model, sizeof(model));
	(void)hw_parse_dt_tegra_chip(f[1].p, f[1].len, chip, sizeof(chip));
	(void)hw_dt_compatible_has(f[1].p, f[1].len, "raspberrypi,");
	if (hw_parse_tegra(f[0].p, f[0].len, f[1].p, f[1].len, f[2].p, f[2].len, &t) < 0)
		abort(); /* documented to return 0 */
	hw_tegra_chip_info(&t);
	if (memchr(t.model, '\0', sizeof(t.model)) == NULL ||
	    memchr(t.chip, '\0', sizeof(t.chip)) == NULL)
		abort();
	return 0;
}
