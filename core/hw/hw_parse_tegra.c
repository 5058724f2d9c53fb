/*
 * Device-tree and nv_tegra_release parsing (see hw_parse_tegra.h). The chip table holds what
 * NVIDIA publishes for each Tegra generation: the GPU architecture and the CUDA compute
 * capability of its integrated GPU.
 */
#include "core/hw/hw_parse_tegra.h"

#include <string.h>

#include "core/err.h"
#include "core/numparse.h"
#include "core/text.h"

static const struct {
	const char *chip;
	const char *family;
	const char *arch;
	const char *cc;
} tegra_chips[] = {
	{"tegra124", "Tegra K1", "Kepler", "3.2"},
	{"tegra210", "Tegra X1", "Maxwell", "5.3"},
	{"tegra186", "Tegra X2", "Pascal", "6.2"},
	{"tegra194", "Xavier", "Volta", "7.2"},
	{"tegra234", "Orin", "Ampere", "8.7"},
	/* Thor: sm_101 up to CUDA 12.9, renumbered sm_110 from CUDA 13.0, the CUDA that
	 * JetPack 7 (L4T R38) ships; rigfit reports the current number. */
	{"tegra264", "Thor", "Blackwell", "11.0"},
};

int hw_parse_dt_model(const char *buf, size_t len, char *out, size_t outlen)
{
	const char *nul = buf && len ? memchr(buf, '\0', len) : NULL;
	struct rf_span v = {buf, buf ? (nul ? (size_t)(nul - buf) : len) : 0};

	v = rf_span_trim(v);
	if (v.len == 0 || outlen == 0)
		return RF_E_PARSE;
	for (size_t i = 0; i < v.len; i++)
		if ((unsigned char)v.p[i] < 0x20 || v.p[i] == 0x7f)
			return RF_E_PARSE;
	rf_span_copy(v, out, outlen);
	return 0;
}

int hw_parse_dt_tegra_chip(const char *buf, size_t len, char *chip, size_t chiplen)
{
	static const char key[] = "nvidia,tegra";
	const size_t klen = sizeof(key) - 1;

	if (!buf)
		return RF_E_NOT_FOUND;
	for (size_t i = 0; i + klen < len; i++) {
		size_t d = 0;
		if (memcmp(buf + i, key, klen) != 0)
			continue;
		while (i + klen + d < len && d < 6 && buf[i + klen + d] >= '0' &&
		       buf[i + klen + d] <= '9')
			d++;
		if (d < 3)
			continue;
		if (5 + d + 1 > chiplen)
			return RF_E_NOT_FOUND;
		memcpy(chip, "tegra", 5);
		memcpy(chip + 5, buf + i + klen, d);
		chip[5 + d] = '\0';
		return 0;
	}
	return RF_E_NOT_FOUND;
}

bool hw_dt_compatible_has(const char *buf, size_t len, const char *prefix)
{
	size_t n = strlen(prefix);

	if (!buf || n == 0)
		return false;
	/* With NULs, an entry starts after a NUL; without them the entries run together, so a
	 * match anywhere is accepted. Both reduce to a substring search. */
	for (size_t i = 0; i + n <= len; i++)
		if (memcmp(buf + i, prefix, n) == 0)
			return true;
	return false;
}

/* Copies the value after "KEY: " in one ", "-separated field of the release line. */
static void release_field(struct rf_span f, const char *key, char *dst, size_t dstlen)
{
	struct rf_span k, v;

	if (!rf_split_kv(f, &k, &v) || !rf_span_eq(k, key) || v.len == 0)
		return;
	rf_span_copy(v, dst, dstlen);
}

int hw_parse_nv_tegra_release(const char *text, size_t len, struct hw_tegra *out)
{
	struct rf_lines it;
	struct rf_span line;

	rf_lines_init(&it, text, len);
	while (rf_lines_next(&it, &line)) {
		struct rf_span l = rf_span_trim(line);
		char rev[sizeof(out->l4t_revision)] = "", board[sizeof(out->l4t_board)] = "";
		uint64_t major;
		size_t d = 0, i;

		if (l.len < 4 || memcmp(l.p, "# R", 3) != 0)
			continue;
		while (3 + d < l.len && l.p[3 + d] >= '0' && l.p[3 + d] <= '9')
			d++;
		if (rf_parse_u64(l.p + 3, d, 999, &major) < 0)
			continue;
		/* The rest: ", REVISION: 2.0, GCID: 41844464, BOARD: generic, EABI: ..." */
		i = 3 + d;
		while (i < l.len) {
			size_t s = i;
			while (i < l.len && l.p[i] != ',')
				i++;
			release_field(rf_span_trim((struct rf_span){l.p + s, i - s}), "REVISION",
				      rev, sizeof(rev));
			release_field(rf_span_trim((struct rf_span){l.p + s, i - s}), "BOARD",
				      board, sizeof(board));
			i++;
		}
		out->l4t_major = (int)major;
		memcpy(out->l4t_revision, rev, sizeof(rev));
		memcpy(out->l4t_board, board, sizeof(board));
		return 0;
	}
	return RF_E_PARSE;
}

void hw_tegra_chip_info(struct hw_tegra *out)
{
	for (size_t i = 0; i < sizeof(tegra_chips) / sizeof(tegra_chips[0]); i++) {
		if (strcmp(out->chip, tegra_chips[i].chip) != 0)
			continue;
		hw_strlcpy(out->family, tegra_chips[i].family, sizeof(out->family));
		hw_strlcpy(out->gpu_architecture, tegra_chips[i].arch,
			   sizeof(out->gpu_architecture));
		hw_strlcpy(out->compute_capability, tegra_chips[i].cc,
			   sizeof(out->compute_capability));
		return;
	}
}

/* Case-insensitive search for an ASCII word in s. */
static bool has_word_ci(const char *s, const char *word)
{
	size_t n = strlen(word);

	for (; *s; s++) {
		size_t i = 0;
		while (i < n && s[i]) {
			char a = s[i], b = word[i];
			if (a >= 'A' && a <= 'Z')
				a = (char)(a - 'A' + 'a');
			if (b >= 'A' && b <= 'Z')
				b = (char)(b - 'A' + 'a');
			if (a != b)
				break;
			i++;
		}
		if (i == n)
			return true;
	}
	return false;
}

int hw_parse_tegra(const char *model, size_t model_len, const char *compat, size_t compat_len,
		   const char *release, size_t release_len, struct hw_tegra *out)
{
	struct hw_tegra r;
	bool released = false;

	memset(&r, 0, sizeof(r));
	r.l4t_major = HW_UNKNOWN;
	if (model && hw_parse_dt_model(model, model_len, r.model, sizeof(r.model)) < 0)
		r.model[0] = '\0';
	if (compat && hw_parse_dt_tegra_chip(compat, compat_len, r.chip, sizeof(r.chip)) == 0)
		hw_tegra_chip_info(&r);
	if (release && hw_parse_nv_tegra_release(release, release_len, &r) == 0)
		released = true;
	r.is_tegra = r.chip[0] || released || has_word_ci(r.model, "jetson");
	r.is_raspberry_pi = !r.is_tegra &&
			    ((strncmp(r.model, "Raspberry Pi", 12) == 0) ||
			     (compat && hw_dt_compatible_has(compat, compat_len, "raspberrypi,")));
	*out = r;
	return 0;
}
