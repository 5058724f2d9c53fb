/*
 * The stdio reader of `rigfit mcp` (see mcp_stdio.h). One message per line: the buffer grows
 * to at most MCP_MAX_MESSAGE_BYTES, and a longer line is read to its end without being kept,
 * so a client cannot make the process hold more than that. Messages are handled in order, one
 * at a time, as the transport allows.
 */
#include "server/cli/mcp_stdio.h"

#include <stdlib.h>
#include <string.h>

#include "api/mcp.h"
#include "core/err.h"
#include "server/log.h"

/* Writes reply and a newline; returns -1 when out fails. */
static int write_line(FILE *out, const char *reply)
{
	if (fputs(reply, out) == EOF || fputc('\n', out) == EOF || fflush(out) == EOF)
		return -1;
	return 0;
}

/* Handles one complete line (without its newline). */
static int serve_line(const struct api_env *env, struct mcp_session *s, FILE *out, char *line,
		      size_t len)
{
	char *reply = NULL;
	int rc;

	while (len > 0 && (line[len - 1] == '\r' || line[len - 1] == ' ' || line[len - 1] == '\t'))
		len--;
	if (len == 0)
		return 0;
	rc = mcp_handle(env, s, line, len, &reply);
	if (rc < 0) {
		rf_log_error("mcp: out of memory while answering a message");
		return -1;
	}
	if (!reply)
		return 0;
	rc = write_line(out, reply);
	free(reply);
	return rc;
}

int rf_mcp_stdio_serve(const struct api_env *env, FILE *in, FILE *out)
{
	struct mcp_session s = {0};
	size_t cap = 4096, len = 0;
	char *buf = malloc(cap);
	bool skipping = false;
	int c, rc = 0;

	if (!buf)
		return -1;
	while (rc == 0 && (c = getc(in)) != EOF) {
		if (c == '\n') {
			if (skipping) {
				char *reply = mcp_error_text(MCP_INVALID_REQUEST,
							     "the message is larger than 1 MiB");
				rf_log_warn("mcp: skipped a message over %d bytes",
					    MCP_MAX_MESSAGE_BYTES);
				rc = reply ? write_line(out, reply) : -1;
				free(reply);
			} else {
				rc = serve_line(env, &s, out, buf, len);
			}
			len = 0;
			skipping = false;
			continue;
		}
		if (skipping)
			continue;
		if (len >= MCP_MAX_MESSAGE_BYTES) {
			skipping = true;
			continue;
		}
		if (len + 1 >= cap) {
			size_t ncap = cap * 2 > MCP_MAX_MESSAGE_BYTES + 1 ?
					      MCP_MAX_MESSAGE_BYTES + 1 :
					      cap * 2;
			char *nb = realloc(buf, ncap);
			if (!nb) {
				rc = -1;
				break;
			}
			buf = nb;
			cap = ncap;
		}
		buf[len++] = (char)c;
	}
	/* A last message without its newline is still a message. */
	if (rc == 0 && len > 0 && !skipping)
		rc = serve_line(env, &s, out, buf, len);
	free(buf);
	return rc;
}
