/*
 * The systemd notification protocol without libsystemd (see notify.h). A state is one
 * SOCK_DGRAM datagram to the AF_UNIX address in $NOTIFY_SOCKET; systemd reads the sender's
 * credentials from the socket, so nothing but the text travels. The socket is opened per call:
 * notifications are rare (start, reload, stop, a watchdog ping every few seconds), and a fresh
 * socket needs no state to keep across fork or exec.
 */
#include "server/daemon/notify.h"

#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "core/err.h"
#include "core/numparse.h"

/* Fills *sa from a $NOTIFY_SOCKET value and writes the address length to *salen. Returns 0, or
 * RF_E_INVALID_VALUE for a name that is neither '@abstract' nor '/absolute/path', or that does
 * not fit in sun_path. */
static int notify_addr(const char *name, struct sockaddr_un *sa /* OUT */,
		       socklen_t *salen /* OUT */)
{
	size_t len = strlen(name);

	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	if (name[0] == '@') {
		/* Abstract namespace: sun_path starts with a NUL and the length, not a terminator,
		 * says where the name ends. */
		if (len < 2 || len > sizeof(sa->sun_path))
			return RF_E_INVALID_VALUE;
		memcpy(sa->sun_path + 1, name + 1, len - 1);
		*salen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len);
		return 0;
	}
	/* A relative path would depend on the daemon's working directory; systemd only ever
	 * hands out absolute ones (and vsock: addresses, which rigfit does not speak). */
	if (name[0] != '/' || len >= sizeof(sa->sun_path))
		return RF_E_INVALID_VALUE;
	memcpy(sa->sun_path, name, len + 1);
	*salen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len + 1);
	return 0;
}

int rf_notify(const char *state)
{
	const char *name = getenv("NOTIFY_SOCKET");
	struct sockaddr_un sa;
	socklen_t salen = 0;
	size_t len;
	ssize_t sent;
	int fd = -1, rc, saved;

	if (!state || !*state)
		return RF_E_INVALID_VALUE;
	if (!name || !*name)
		return 0;
	rc = notify_addr(name, &sa, &salen);
	if (rc < 0)
		return rc;
	len = strlen(state);

	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return RF_E_IO;
	/* MSG_NOSIGNAL: a vanished manager must show up as an error, not kill the daemon. */
	do
		sent = sendto(fd, state, len, MSG_NOSIGNAL, (const struct sockaddr *)&sa, salen);
	while (sent < 0 && errno == EINTR);
	rc = sent == (ssize_t)len ? 0 : RF_E_IO;
	saved = errno;
	close(fd);
	errno = saved;
	return rc;
}

int rf_notifyf(const char *fmt, ...)
{
	char buf[RF_NOTIFY_MAX_STATE];
	va_list ap;
	int n;

	if (!fmt)
		return RF_E_INVALID_VALUE;
	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n < 0)
		return RF_E_INVALID_VALUE;
	if ((size_t)n >= sizeof(buf))
		return RF_E_TOO_LARGE;
	return rf_notify(buf);
}

int rf_notify_reloading(void)
{
	struct timespec ts;
	unsigned long long usec;

	if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0)
		return RF_E_IO;
	usec = (unsigned long long)ts.tv_sec * 1000000ULL +
	       (unsigned long long)ts.tv_nsec / 1000ULL;
	return rf_notifyf("RELOADING=1\nMONOTONIC_USEC=%llu", usec);
}

int rf_notify_watchdog_usec(uint64_t *out)
{
	const char *usec_s = getenv("WATCHDOG_USEC");
	const char *pid_s = getenv("WATCHDOG_PID");
	uint64_t usec = 0, pid = 0;

	if (!out || !usec_s)
		return 0;
	if (rf_parse_u64_str(usec_s, UINT64_MAX, &usec) < 0 || usec == 0)
		return 0;
	/* systemd sets WATCHDOG_PID to the main process; a helper we fork inherits the
	 * environment and must not ping in its parent's name. */
	if (pid_s) {
		if (rf_parse_u64_str(pid_s, (uint64_t)INT32_MAX, &pid) < 0 ||
		    pid != (uint64_t)getpid())
			return 0;
	}
	*out = usec;
	return 1;
}
