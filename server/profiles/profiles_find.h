/*
 * Where the profiles are. An installed binary finds the data installed beside it
 * (PREFIX/bin/rigfit reads PREFIX/share/rigfit/profiles) wherever it is run from, a checkout's
 * build/rigfit finds the checkout's profiles from any folder, a checkout finds ./profiles, and a binary that finds none says so instead of answering "unknown model"
 * to every question.
 */
#ifndef RIGFIT_SERVER_PROFILES_PROFILES_FIND_H
#define RIGFIT_SERVER_PROFILES_PROFILES_FIND_H

#include <stddef.h>

/* The profile directory's place relative to the binary's directory: installed, and in a
 * checkout's build tree (build/rigfit). */
#define RF_PROFILES_REL_TO_BIN "../share/rigfit/profiles"
#define RF_PROFILES_BUILD_TREE "../profiles"

/* Chooses the profile directory: given (a --profiles flag) when set, else env
 * (RIGFIT_PROFILES) when set, else the first of <dir of exe>/../share/rigfit/profiles,
 * <dir of exe>/../profiles (a checkout's build/rigfit) and ./profiles that holds a
 * models.json. given, env and exe may be NULL or empty. Writes the
 * chosen path to out (size outlen). Returns 0, or RF_E_NOT_FOUND with a one-line message
 * naming the places tried in err. */
int rf_profiles_find(const char *given, const char *env, const char *exe, char *out /* OUT */,
		     size_t outlen, char *err, size_t errlen);

/* Writes the path of the running binary (/proc/self/exe) to out; returns 0, or -1 leaving
 * out empty when it cannot be read. */
int rf_self_exe(char *out /* OUT */, size_t outlen);

#endif
