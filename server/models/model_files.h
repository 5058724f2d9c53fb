/*
 * Reading GGUF model files that a request names by path ({"gguf": "/models/x.gguf"}). A client
 * may only make the daemon read files that lie under one of the directories given with
 * --models-dir; everything else, including symlinks and ".." that lead out of them, is refused
 * with RF_E_FORBIDDEN. Only the start of a file (its header) is ever read.
 */
#ifndef RIGFIT_SERVER_MODELS_MODEL_FILES_H
#define RIGFIT_SERVER_MODELS_MODEL_FILES_H

#include <stddef.h>
#include <stdint.h>

/* The most bytes of a GGUF file read for its header: the metadata (a tokenizer's vocabulary
 * arrays alone can take tens of MB) and the tensor infos. The tensor data is never read. */
#define RF_MODEL_HEADER_CAP ((size_t)64 << 20)

/* Reads the start of the GGUF file at path for header parsing: its header (the metadata and
 * tensor infos), read in growing steps until it is whole, and at most cap bytes; the tensor
 * data is never read, nor more of the file than a step past the header. dirs[0..n_dirs) are
 * the models directories (as configured; each is resolved here).
 *
 * Returns 0 and a malloc'd buffer in *buf (length *len, not NUL-terminated; the caller frees
 * it), the whole file's size in *file_size, or:
 *   RF_E_FORBIDDEN      no models dir is configured, or the file (after resolving every
 *                       symlink and "..") is not inside one of them (also when a dir itself
 *                       does not exist); a missing file outside every dir is FORBIDDEN too, so
 *                       that the answer never tells whether a path outside exists;
 *   RF_E_NOT_FOUND      the file does not exist (inside a models dir);
 *   RF_E_INVALID_VALUE  the path is empty, relative or longer than PATH_MAX, it is not a
 *                       regular file (a directory, a FIFO...), or it does not start with "GGUF";
 *   RF_E_NOMEM, RF_E_IO otherwise.
 * path is a C string: a caller holding a counted string (a JSON value) must itself reject an
 * embedded NUL with RF_E_INVALID_VALUE. The outputs are written only on success. msg (size
 * msglen; NULL allowed) gets one line for the client that never names a path. */
int rf_model_file_read(const char *const *dirs, int n_dirs, const char *path, size_t cap,
		       char **buf /* OUT */, size_t *len /* OUT */, uint64_t *file_size /* OUT */,
		       char *msg, size_t msglen);

/* Opens the regular file at path for reading under the same confinement as
 * rf_model_file_read (noun names the kind of file in messages: "gguf", "model"). Returns 0
 * with the descriptor in *fd (the caller closes it) and the file's size in *size, or a
 * negative rf_err with one line for the client in msg. */
int rf_model_file_open(const char *const *dirs, int n_dirs, const char *path, const char *noun,
		       int *fd /* OUT */, uint64_t *size /* OUT */, char *msg, size_t msglen);

/* Reads up to want bytes at offset off of fd into b. Returns the count (short at the end of
 * the file) or -1 on an error. */
long rf_model_file_pread(int fd, char *b, size_t want, uint64_t off);

#endif
