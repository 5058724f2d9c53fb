/*
 * Profile discovery (see profiles_find.h). A flag or the environment is taken as given, so a
 * mistyped directory is reported by the loader with its name rather than replaced by another
 * one; only the defaults are searched.
 */
#include "server/profiles/profiles_find.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "core/err.h"

/* Returns true when dir holds a readable models.json, the file every question needs. */
static bool holds_profiles(const char *dir)
{
	char path[4200];

	if (snprintf(path, sizeof(path), "%s/models.json", dir) >= (int)sizeof(path))
		return false;
	return access(path, R_OK) == 0;
}

static int put(char *out, size_t outlen, const char *v, char *err, size_t errlen)
{
	if (snprintf(out, outlen, "%s", v) >= (int)outlen) {
		snprintf(err, errlen, "profiles directory path is too long");
		return RF_E_INVALID_VALUE;
	}
	return 0;
}

/* Writes <dir of exe>/rel to buf (empty when exe has no directory or it does not fit); returns
 * whether that folder holds profiles. */
static bool beside_exe(const char *exe, const char *rel, char *buf, size_t len)
{
	const char *slash = exe ? strrchr(exe, '/') : NULL;

	buf[0] = '\0';
	if (!slash || snprintf(buf, len, "%.*s/%s", (int)(slash - exe), exe, rel) >= (int)len) {
		buf[0] = '\0';
		return false;
	}
	return holds_profiles(buf);
}

int rf_profiles_find(const char *given, const char *env, const char *exe, char *out, size_t outlen,
		     char *err, size_t errlen)
{
	char beside[4200] = "", tree[4200] = "";

	if (given && *given)
		return put(out, outlen, given, err, errlen);
	if (env && *env)
		return put(out, outlen, env, err, errlen);
	if (beside_exe(exe, RF_PROFILES_REL_TO_BIN, beside, sizeof(beside)))
		return put(out, outlen, beside, err, errlen);
	/* A binary left in a checkout's build/ (make, make run) reads the checkout's profiles
	 * from whatever folder it is started in. */
	if (beside_exe(exe, RF_PROFILES_BUILD_TREE, tree, sizeof(tree)))
		return put(out, outlen, tree, err, errlen);
	if (holds_profiles("./profiles"))
		return put(out, outlen, "./profiles", err, errlen);
	snprintf(err, errlen,
		 "no profiles found (tried %.300s, %.300s and ./profiles); pass --profiles DIR or "
		 "set RIGFIT_PROFILES",
		 beside[0] ? beside : RF_PROFILES_REL_TO_BIN " beside the binary",
		 tree[0] ? tree : RF_PROFILES_BUILD_TREE " beside the binary");
	return RF_E_NOT_FOUND;
}

int rf_self_exe(char *out, size_t outlen)
{
	ssize_t n = readlink("/proc/self/exe", out, outlen - 1);

	if (n <= 0 || (size_t)n >= outlen - 1) {
		out[0] = '\0';
		return -1;
	}
	out[n] = '\0';
	return 0;
}
