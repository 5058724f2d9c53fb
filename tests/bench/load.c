/*
 * Load helpers for make bench and make soak (built by those scripts with cc; not part of the
 * product or of make test):
 *
 *   load fill DB FINGERPRINT N     stores N benchmark runs of machine FINGERPRINT in DB (the
 *                                  daemon's database), in one transaction
 *   load writer PORT SECS          POSTs benchmark runs (each a new run_id) one after another
 *                                  on a keep-alive connection for SECS seconds; prints
 *                                  "WRITER <answered> <errors>" (errors: not 201, or a socket
 *                                  error)
 *   load slow PORT N SECS          holds N connections that each send one byte of a request's
 *                                  headers per second, reconnecting when the server closes
 *                                  one; prints "SLOW <connections opened>"
 *   load readers PORT N PATH SECS  holds N connections that each GET PATH and read its first
 *                                  bytes, then nothing more (a 4 KiB receive buffer), for
 *                                  SECS seconds; prints "READERS <that got bytes>"
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Parses a positive decimal argument or exits. */
static long arg_num(const char *s)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || *end || v <= 0) {
		fprintf(stderr, "load: not a positive number: %s\n", s);
		exit(2);
	}
	return v;
}

static int connect_port(int port)
{
	struct sockaddr_in sa;
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	if (fd < 0)
		return -1;
	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_port = htons((uint16_t)port);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		close(fd);
		return -1;
	}
	return fd;
}

static int fill(const char *path, const char *fp, long n)
{
	static const char sql[] =
		"INSERT INTO benchmarks (run_id, hardware_fingerprint, model, precision, backend, "
		"runtime, prompt_tokens, generated_tokens, decode_tokens_per_s, source, "
		"measured_at) VALUES (?1, ?2, 'qwen2.5-7b', 'Q4_K_M', 'cuda', 'llama.cpp', 512, 128, "
		"?3, 'manual', strftime('%Y-%m-%dT%H:%M:%fZ', 'now', ?4))";
	sqlite3 *db = NULL;
	sqlite3_stmt *s = NULL;
	int rc = 1;

	if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK ||
	    sqlite3_busy_timeout(db, 10000) != SQLITE_OK ||
	    sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(db, sql, -1, &s, NULL) != SQLITE_OK)
		goto out;
	for (long i = 0; i < n; i++) {
		char id[64], ago[64];

		snprintf(id, sizeof(id), "fill-%d-%ld", (int)getpid(), i);
		snprintf(ago, sizeof(ago), "-%ld seconds", i);
		sqlite3_bind_text(s, 1, id, -1, SQLITE_TRANSIENT);
		sqlite3_bind_text(s, 2, fp, -1, SQLITE_STATIC);
		sqlite3_bind_double(s, 3, 40.0 + (double)(i % 17));
		sqlite3_bind_text(s, 4, ago, -1, SQLITE_TRANSIENT);
		if (sqlite3_step(s) != SQLITE_DONE)
			goto out;
		sqlite3_reset(s);
	}
	rc = sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) == SQLITE_OK ? 0 : 1;
out:
	if (rc)
		fprintf(stderr, "load fill: %s\n", sqlite3_errmsg(db));
	sqlite3_finalize(s);
	sqlite3_close(db);
	return rc;
}

/* Reads one reply on fd; returns its status, or -1 on a socket error or a close. */
static int read_status(int fd)
{
	char buf[8192];
	size_t n = 0;
	char *end, *cl;

	for (;;) {
		ssize_t got = recv(fd, buf + n, sizeof(buf) - 1 - n, 0);

		if (got <= 0)
			return -1;
		n += (size_t)got;
		buf[n] = '\0';
		end = strstr(buf, "\r\n\r\n");
		if (!end)
			continue;
		cl = strstr(buf, "Content-Length: ");
		if (cl && n >= (size_t)(end + 4 - buf) + strtoul(cl + 16, NULL, 10))
			return (int)strtol(buf + 9, NULL, 10);
		if (n >= sizeof(buf) - 1)
			return -1;
	}
}

static int writer(int port, double secs)
{
	double end = now_s() + secs;
	long answered = 0, errors = 0, seq = 0;
	int fd = -1;

	while (now_s() < end) {
		char body[512], req[1024];
		int nb, nr, status;

		if (fd < 0 && (fd = connect_port(port)) < 0) {
			errors++;
			usleep(100000);
			continue;
		}
		nb = snprintf(
			body, sizeof(body),
			"{\"run_id\":\"soak-%d-%ld\",\"hardware_fingerprint\":\"soak-writer\","
			"\"model\":\"qwen2.5-7b\",\"precision\":\"Q4_K_M\",\"backend\":\"cpu\","
			"\"runtime\":\"llama.cpp\",\"generated_tokens\":128,"
			"\"decode_tokens_per_s\":12.5}",
			(int)getpid(), seq++);
		nr = snprintf(req, sizeof(req),
			      "POST /api/benchmarks HTTP/1.1\r\nHost: 127.0.0.1\r\n"
			      "Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
			      nb, body);
		if (send(fd, req, (size_t)nr, MSG_NOSIGNAL) != nr ||
		    (status = read_status(fd)) < 0) {
			errors++;
			close(fd);
			fd = -1;
			continue;
		}
		answered++;
		if (status != 201)
			errors++;
	}
	if (fd >= 0)
		close(fd);
	printf("WRITER %ld %ld\n", answered, errors);
	return 0;
}

static int slow(int port, int n, double secs)
{
	static const char head[] = "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: "
				   "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
	int *fds = calloc((size_t)n, sizeof(int));
	size_t *at = calloc((size_t)n, sizeof(size_t));
	double end = now_s() + secs;
	long opened = 0;

	if (!fds || !at)
		return 1;
	for (int i = 0; i < n; i++)
		fds[i] = -1;
	while (now_s() < end) {
		for (int i = 0; i < n; i++) {
			if (fds[i] < 0) {
				fds[i] = connect_port(port);
				at[i] = 0;
				if (fds[i] >= 0)
					opened++;
				continue;
			}
			if (send(fds[i], head + at[i] % (sizeof(head) - 1), 1, MSG_NOSIGNAL) != 1) {
				close(fds[i]);
				fds[i] = -1;
				continue;
			}
			at[i]++;
			{
				struct pollfd p = {fds[i], POLLIN, 0};
				char sink[512];
				if (poll(&p, 1, 0) > 0 &&
				    recv(fds[i], sink, sizeof(sink), 0) <= 0) {
					close(fds[i]);
					fds[i] = -1;
				}
			}
		}
		sleep(1);
	}
	for (int i = 0; i < n; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	printf("SLOW %ld\n", opened);
	free(fds);
	free(at);
	return 0;
}

static int readers(int port, int n, const char *path, double secs)
{
	int *fds = calloc((size_t)n, sizeof(int));
	char req[512];
	int len = snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", path);
	long answered = 0;

	if (!fds || len <= 0 || (size_t)len >= sizeof(req))
		return 1;
	for (int i = 0; i < n; i++) {
		int small = 4096;
		fds[i] = connect_port(port);
		if (fds[i] < 0)
			continue;
		setsockopt(fds[i], SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
		if (send(fds[i], req, (size_t)len, MSG_NOSIGNAL) != len) {
			close(fds[i]);
			fds[i] = -1;
		}
	}
	for (int i = 0; i < n; i++) {
		struct pollfd p = {fds[i], POLLIN, 0};
		char buf[64];
		if (fds[i] >= 0 && poll(&p, 1, 10000) == 1 && recv(fds[i], buf, sizeof(buf), 0) > 0)
			answered++;
	}
	for (double end = now_s() + secs; now_s() < end;)
		sleep(1);
	for (int i = 0; i < n; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	printf("READERS %ld\n", answered);
	free(fds);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 5 && strcmp(argv[1], "fill") == 0)
		return fill(argv[2], argv[3], arg_num(argv[4]));
	if (argc == 4 && strcmp(argv[1], "writer") == 0)
		return writer((int)arg_num(argv[2]), (double)arg_num(argv[3]));
	if (argc == 5 && strcmp(argv[1], "slow") == 0)
		return slow((int)arg_num(argv[2]), (int)arg_num(argv[3]), (double)arg_num(argv[4]));
	if (argc == 6 && strcmp(argv[1], "readers") == 0)
		return readers((int)arg_num(argv[2]), (int)arg_num(argv[3]), argv[4],
			       (double)arg_num(argv[5]));
	fprintf(stderr, "usage: load fill DB FINGERPRINT N | writer PORT SECS | slow PORT N SECS | "
			"readers PORT N PATH SECS\n");
	return 2;
}
