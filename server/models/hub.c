/*
 * The Hub lookup (see hub.h) with libcurl's easy interface, one handle per lookup so that the
 * requests of one lookup share a connection.
 *
 * Bounds: one deadline for the whole lookup (each request gets what is left of it, for
 * connecting too), a cap on every body (config.json 1 MiB, the index 16 MiB, all headers
 * together 64 MiB, as for folders on disk), at most 3 redirects and only to the Hub's own
 * scheme (the Hub redirects resolve URLs to its CDN), TLS verification left on. A server that
 * ignores the Range header is cut off once the bytes asked for have arrived. The token is sent
 * as a Bearer header, which libcurl does not forward when a redirect leaves the Hub's host.
 *
 * Lookups of the daemon's requests run on the thread pool, many at once. They share a flight
 * per id: one request goes to the Hub and the others for the same id wait for its answer
 * (then read it from the store). A failed lookup is remembered for FAILURE_TTL_MS, so a model
 * the Hub refuses or a Hub that is down costs one lookup, not one per request. A lookup that
 * no request waits for any more (every client went away) is cut off at libcurl's next
 * progress report.
 */
#include "server/models/hub.h"

#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/model_folder.h"
#include "core/checked.h"
#include "core/content_range.h"
#include "core/err.h"
#include "server/config.h"
#include "server/log.h"
#include "server/models/hf_folders.h"
#include "server/store/store_hub.h"

#define CONFIG_CAP ((size_t)1 << 20)
#define INDEX_CAP ((size_t)16 << 20)
#define HEADERS_CAP ((size_t)64 << 20)
#define ID_MAX 200
#define MAX_REDIRS 3L
#define AUTH_MAX (RF_TOKEN_MAX + 32) /* "Authorization: Bearer " and the token */
#define FAILURE_SLOTS 32
#define FAILURE_TTL_MS 10000
#define WAIT_TICK_MS 100
#define MSG_MAX 512

/* One request waiting on a flight; cancelled (NULL: never) is set when its client left. */
struct waiter {
	const atomic_bool *cancelled;
	struct waiter *next;
};

/* The lookup of one id under way: its waiters (the leader, who asks the Hub, among them), and
 * once done its outcome. Freed by the last waiter to leave it. */
struct flight {
	char id[ID_MAX + 1];
	struct waiter *waiters;
	bool done;
	int rc;
	char msg[MSG_MAX];
	struct flight *next;
};

/* A lookup that failed, remembered until until_ms. */
struct failure {
	char id[ID_MAX + 1];
	int rc;
	char msg[MSG_MAX];
	int64_t until_ms;
};

struct rf_hub {
	char url[RF_HUB_URL_MAX]; /* without a trailing '/' */
	char auth[AUTH_MAX];
	bool https;
	int timeout_ms;
	struct rf_store *store;
	atomic_bool stopping; /* rf_hub_stop: lookups under way give up */
	pthread_mutex_t mu;   /* guards flights and failures */
	pthread_cond_t cv;    /* a flight is done */
	struct flight *flights;
	struct failure failures[FAILURE_SLOTS];
};

static void set_msg(char *msg, size_t msglen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void set_msg(char *msg, size_t msglen, const char *fmt, ...)
{
	va_list ap;

	if (!msg || !msglen)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, msglen, fmt, ap);
	va_end(ap);
}

static int64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int64_t wall_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* libcurl is loaded when a Hub is configured (--hub, off by default), not linked: with the TLS,
 * LDAP, Kerberos and SSH libraries under it, it put 3.4 MB into every daemon's resident memory
 * that only --hub uses. The functions this file calls, from the library loaded once. */
#define CURL_SONAME "libcurl.so.4"
static struct {
	CURLcode (*global_init)(long flags);
	CURL *(*easy_init)(void);
	CURLcode (*easy_setopt)(CURL *easy, CURLoption option, ...);
	CURLcode (*easy_perform)(CURL *easy);
	CURLcode (*easy_getinfo)(CURL *easy, CURLINFO info, ...);
	void (*easy_reset)(CURL *easy);
	void (*easy_cleanup)(CURL *easy);
	const char *(*easy_strerror)(CURLcode code);
	struct curl_slist *(*slist_append)(struct curl_slist *list, const char *s);
	void (*slist_free_all)(struct curl_slist *list);
} lc;

/* libcurl (and the TLS library under it) is loaded and initialized once per process and never
 * cleaned up: a TLS library cannot always be initialized again after its cleanup, and its fork
 * handlers must stay valid for the commands the daemon runs. */
static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_rc = CURLE_FAILED_INIT;

/* Sets *fn to symbol name of lib; returns whether it was found. */
static bool curl_sym(void *lib, const char *name, void *fn)
{
	void *p = dlsym(lib, name);

	memcpy(fn, &p, sizeof(p));
	return p != NULL;
}

static void curl_init(void)
{
	void *lib = dlopen(CURL_SONAME, RTLD_NOW | RTLD_LOCAL);

	if (!lib || !curl_sym(lib, "curl_global_init", &lc.global_init) ||
	    !curl_sym(lib, "curl_easy_init", &lc.easy_init) ||
	    !curl_sym(lib, "curl_easy_setopt", &lc.easy_setopt) ||
	    !curl_sym(lib, "curl_easy_perform", &lc.easy_perform) ||
	    !curl_sym(lib, "curl_easy_getinfo", &lc.easy_getinfo) ||
	    !curl_sym(lib, "curl_easy_reset", &lc.easy_reset) ||
	    !curl_sym(lib, "curl_easy_cleanup", &lc.easy_cleanup) ||
	    !curl_sym(lib, "curl_easy_strerror", &lc.easy_strerror) ||
	    !curl_sym(lib, "curl_slist_append", &lc.slist_append) ||
	    !curl_sym(lib, "curl_slist_free_all", &lc.slist_free_all))
		return; /* curl_init_rc stays CURLE_FAILED_INIT; the library stays loaded */
	curl_init_rc = lc.global_init(CURL_GLOBAL_DEFAULT);
}

int rf_hub_new(const struct rf_hub_opts *o, struct rf_store *store, struct rf_hub **out, char *err,
	       size_t errlen)
{
	struct rf_hub *h;
	size_t n;

	*out = NULL;
	n = o && o->url ? strlen(o->url) : 0;
	while (n > 0 && o->url[n - 1] == '/')
		n--;
	if (!o || !o->url ||
	    (strncmp(o->url, "http://", 7) != 0 && strncmp(o->url, "https://", 8) != 0) || n <= 8 ||
	    n >= RF_HUB_URL_MAX) {
		set_msg(err, errlen,
			"--hub: expected an http:// or https:// URL of at most %d "
			"characters",
			RF_HUB_URL_MAX - 1);
		return RF_E_INVALID_VALUE;
	}
	if (o->token && strlen(o->token) >= RF_TOKEN_MAX) {
		set_msg(err, errlen, "--hub-token-file: the token is too long");
		return RF_E_INVALID_VALUE;
	}
	pthread_once(&curl_once, curl_init);
	if (curl_init_rc != CURLE_OK) {
		set_msg(err, errlen, "cannot load or initialize libcurl (" CURL_SONAME ")");
		return RF_E_NOMEM;
	}
	h = calloc(1, sizeof(*h));
	if (!h) {
		set_msg(err, errlen, "out of memory");
		return RF_E_NOMEM;
	}
	memcpy(h->url, o->url, n);
	h->url[n] = '\0';
	h->https = strncmp(h->url, "https://", 8) == 0;
	if (o->token && o->token[0])
		snprintf(h->auth, sizeof(h->auth), "Authorization: Bearer %s", o->token);
	/* The token is a credential: over plain HTTP anyone on the path reads it. Allowed (a
	 * mirror on this host or a test Hub), but never silently. */
	if (h->auth[0] && !h->https)
		rf_log_warn("--hub %s is plain http://: the Hub token (--hub-token-file) is sent "
			    "unencrypted with every lookup; use an https:// URL",
			    h->url);
	h->timeout_ms = o->timeout_ms > 0 ? o->timeout_ms : RF_HUB_TIMEOUT_MS_DEFAULT;
	h->store = store;
	atomic_init(&h->stopping, false);
	pthread_mutex_init(&h->mu, NULL);
	pthread_cond_init(&h->cv, NULL);
	*out = h;
	return 0;
}

void rf_hub_free(struct rf_hub *h)
{
	if (!h)
		return;
	explicit_bzero(h->auth, sizeof(h->auth));
	pthread_mutex_destroy(&h->mu);
	pthread_cond_destroy(&h->cv);
	free(h);
}

/* An id as the Hub names a model: ORG/NAME of letters, digits, '.', '_' and '-', neither part
 * empty or starting with '.' or '-'. */
static bool id_ok(const char *id)
{
	size_t n = strlen(id), slashes = 0;

	if (n < 3 || n > ID_MAX || id[0] == '.' || id[0] == '-' || strstr(id, ".."))
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = id[i];
		if (c == '/') {
			if (++slashes > 1 || i + 1 >= n || id[i + 1] == '.' || id[i + 1] == '-')
				return false;
		} else if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			     (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-')) {
			return false;
		}
	}
	return slashes == 1 && id[0] != '/';
}

/* A file name that goes into a URL as it is. */
static bool file_ok(const char *f)
{
	for (const char *p = f; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		      (*p >= '0' && *p <= '9') || *p == '.' || *p == '_' || *p == '-'))
			return false;
	return rf_model_shard_name_ok(f);
}

/* One lookup: the handle, the deadline and what the requests have in common. */
struct call {
	struct rf_hub *h;
	struct flight *f; /* the flight it answers (NULL: a lookup of its own) */
	const char *id;
	CURL *easy;
	struct curl_slist *headers;
	int64_t deadline_ms;
	char *msg;
	size_t msglen;
};

/* Whether every waiter of f has been cancelled (h->mu held). */
static bool abandoned(const struct flight *f)
{
	for (const struct waiter *w = f->waiters; w; w = w->next)
		if (!w->cancelled || !atomic_load(w->cancelled))
			return false;
	return true;
}

/* libcurl's progress callback: a lookup gives up as soon as the daemon stops, or when no
 * request waits for its answer any more. */
static int on_progress(void *ud, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
		       curl_off_t ulnow)
{
	struct call *c = ud;
	bool gone = false;

	(void)dltotal;
	(void)dlnow;
	(void)ultotal;
	(void)ulnow;
	if (atomic_load(&c->h->stopping))
		return 1;
	if (c->f) {
		pthread_mutex_lock(&c->h->mu);
		gone = abandoned(c->f);
		pthread_mutex_unlock(&c->h->mu);
	}
	return gone ? 1 : 0;
}

/* One response body: at most want bytes are kept; more is cut off (over). A server that
 * answers a range request with 200 and the whole file has its first skip bytes dropped. */
struct body {
	char *p;
	size_t len, want, room;
	uint64_t skip;
	long status; /* of the response being received (the last one after redirects) */
	bool over;
	uint64_t total; /* the file's size from Content-Range (or Content-Length of a 200) */
	bool has_total;
};

static size_t on_body(char *data, size_t size, size_t nmemb, void *ud)
{
	struct body *b = ud;
	size_t n = size * nmemb, take = n;

	if (b->status == 200 && b->skip > 0) {
		size_t drop = b->skip < n ? (size_t)b->skip : n;
		b->skip -= drop;
		data += drop;
		take -= drop;
	}
	if (b->len + take > b->want) {
		take = b->want - b->len;
		b->over = true;
	}
	if (take > 0) {
		if (b->len + take + 1 > b->room) {
			/* Grows toward want (+1 for the NUL), so a small file costs little. */
			size_t room = b->room ? b->room : 16384, need = b->len + take + 1;
			char *p;
			while (room < need)
				room *= 2;
			if (room > b->want + 1)
				room = b->want + 1;
			p = realloc(b->p, room);
			if (!p) {
				b->over = false;
				return 0;
			}
			b->p = p;
			b->room = room;
		}
		memcpy(b->p + b->len, data, take);
		b->len += take;
	}
	return b->over ? 0 : n; /* 0 stops the transfer: what was asked for is here */
}

static size_t on_header(char *data, size_t size, size_t nmemb, void *ud)
{
	struct body *b = ud;
	size_t n = size * nmemb;
	struct rf_content_range cr;

	if (n >= 5 && strncmp(data, "HTTP/", 5) == 0) {
		const char *sp = memchr(data, ' ', n);
		b->has_total = false; /* a new response (after a redirect) */
		b->status = sp && (size_t)(sp - data) + 4 <= n && sp[1] >= '1' && sp[1] <= '5' ?
				    (sp[1] - '0') * 100 + (sp[2] - '0') * 10 + (sp[3] - '0') :
				    0;
		return n;
	}
	/* A total that is malformed or above RF_CONTENT_RANGE_MAX is no total: the shard is
	 * then refused as a file of unknown size. */
	if (rf_content_range_line(data, n, &cr) == 0 && cr.has_total) {
		b->total = cr.total;
		b->has_total = true;
	}
	return n;
}

/* get's transfer, which may leave a partial body in b->p on error. */
static int get_once(struct call *c, const char *file, uint64_t from, uint64_t len, size_t cap,
		    struct body *b)
{
	char url[RF_HUB_URL_MAX + ID_MAX + 300], range[64];
	int64_t left = c->deadline_ms - mono_ms();
	long status = 0;
	CURLcode cc;

	memset(b, 0, sizeof(*b));
	b->want = len > 0 ? (size_t)len : cap + 1;
	b->skip = len > 0 ? from : 0;
	if (left <= 0) {
		set_msg(c->msg, c->msglen,
			"the Hugging Face Hub at %.200s did not answer within %d ms", c->h->url,
			c->h->timeout_ms);
		return RF_E_TIMEOUT;
	}
	snprintf(url, sizeof(url), "%s/%s/resolve/main/%s", c->h->url, c->id, file);
	lc.easy_reset(c->easy);
	lc.easy_setopt(c->easy, CURLOPT_URL, url);
	lc.easy_setopt(c->easy, CURLOPT_NOSIGNAL, 1L);
	lc.easy_setopt(c->easy, CURLOPT_PROTOCOLS_STR, c->h->https ? "https" : "http");
	lc.easy_setopt(c->easy, CURLOPT_REDIR_PROTOCOLS_STR, c->h->https ? "https" : "http");
	lc.easy_setopt(c->easy, CURLOPT_FOLLOWLOCATION, 1L);
	lc.easy_setopt(c->easy, CURLOPT_MAXREDIRS, MAX_REDIRS);
	lc.easy_setopt(c->easy, CURLOPT_TIMEOUT_MS, (long)left);
	lc.easy_setopt(c->easy, CURLOPT_CONNECTTIMEOUT_MS, (long)left);
	lc.easy_setopt(c->easy, CURLOPT_USERAGENT, "rigfit/" RIGFIT_VERSION);
	lc.easy_setopt(c->easy, CURLOPT_WRITEFUNCTION, on_body);
	lc.easy_setopt(c->easy, CURLOPT_WRITEDATA, b);
	lc.easy_setopt(c->easy, CURLOPT_HEADERFUNCTION, on_header);
	lc.easy_setopt(c->easy, CURLOPT_HEADERDATA, b);
	lc.easy_setopt(c->easy, CURLOPT_NOPROGRESS, 0L);
	lc.easy_setopt(c->easy, CURLOPT_XFERINFOFUNCTION, on_progress);
	lc.easy_setopt(c->easy, CURLOPT_XFERINFODATA, c);
	if (c->headers)
		lc.easy_setopt(c->easy, CURLOPT_HTTPHEADER, c->headers);
	if (len > 0) {
		snprintf(range, sizeof(range), "%llu-%llu", (unsigned long long)from,
			 (unsigned long long)(from + len - 1));
		lc.easy_setopt(c->easy, CURLOPT_RANGE, range);
	}
	cc = lc.easy_perform(c->easy);
	lc.easy_getinfo(c->easy, CURLINFO_RESPONSE_CODE, &status);
	if (cc == CURLE_WRITE_ERROR && b->over && len > 0)
		cc = CURLE_OK; /* a 200 with the whole file: the bytes asked for are here */
	if (cc == CURLE_WRITE_ERROR && !b->over) {
		set_msg(c->msg, c->msglen, "out of memory");
		return RF_E_NOMEM;
	}
	if (cc == CURLE_WRITE_ERROR) {
		set_msg(c->msg, c->msglen, "%s on the Hugging Face Hub is larger than %zu MiB",
			file, cap >> 20);
		return RF_E_TOO_LARGE;
	}
	if (cc == CURLE_ABORTED_BY_CALLBACK) {
		set_msg(c->msg, c->msglen, "%s",
			atomic_load(&c->h->stopping) ? "the daemon is stopping" :
						       "no request waits for this lookup any more");
		return RF_E_UNAVAILABLE;
	}
	if (cc == CURLE_OPERATION_TIMEDOUT) {
		set_msg(c->msg, c->msglen,
			"the Hugging Face Hub at %.200s did not answer within %d ms", c->h->url,
			c->h->timeout_ms);
		return RF_E_TIMEOUT;
	}
	if (cc != CURLE_OK) {
		set_msg(c->msg, c->msglen, "cannot reach the Hugging Face Hub at %.200s: %s",
			c->h->url, lc.easy_strerror(cc));
		return RF_E_UNAVAILABLE;
	}
	if (status == 404)
		return RF_E_NOT_FOUND;
	if (status == 401 || status == 403) {
		set_msg(c->msg, c->msglen,
			"the Hugging Face Hub refused '%.160s' (HTTP %ld): it is private, gated or "
			"missing; a token (--hub-token-file) may be needed",
			c->id, status);
		return RF_E_INVALID_VALUE;
	}
	if (status != 200 && status != 206) {
		set_msg(c->msg, c->msglen,
			"the Hugging Face Hub at %.200s answered HTTP %ld for %s", c->h->url,
			status, file);
		return RF_E_UNAVAILABLE;
	}
	if (status == 200) {
		curl_off_t cl = -1;
		lc.easy_getinfo(c->easy, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &cl);
		b->has_total = cl >= 0;
		b->total = cl >= 0 ? (uint64_t)cl : 0;
	}
	if (b->p)
		b->p[b->len] = '\0';
	return 0;
}

/* GETs the file of the lookup's model, bytes [from, from + len) when len > 0, else the whole
 * file up to cap bytes (more: RF_E_TOO_LARGE). Returns 0 with the body in *b (the caller
 * frees b->p), RF_E_NOT_FOUND (HTTP 404) or another negative rf_err with msg set (b->p
 * NULL). */
static int get(struct call *c, const char *file, uint64_t from, uint64_t len, size_t cap,
	       struct body *b)
{
	int rc = get_once(c, file, from, len, cap, b);

	if (rc < 0) { /* what arrived before the error is not the caller's */
		free(b->p);
		b->p = NULL;
	}
	return rc;
}

/* The file's part [from, from + len): exactly len bytes, or a lying Hub. */
static int get_range(struct call *c, const char *file, uint64_t from, uint64_t len, struct body *b)
{
	int rc = get(c, file, from, len, 0, b);

	if (rc == 0 && b->len != len) {
		set_msg(c->msg, c->msglen,
			"the Hugging Face Hub sent %zu bytes of %s where %llu were asked for",
			b->len, file, (unsigned long long)len);
		rc = RF_E_INVALID_VALUE;
	}
	if (rc == RF_E_NOT_FOUND)
		set_msg(c->msg, c->msglen,
			"the Hugging Face Hub has no %.100s for '%.160s', which its index names",
			file, c->id);
	if (rc == RF_E_NOT_FOUND)
		rc = RF_E_INVALID_VALUE;
	return rc;
}

/* What read_shard needs: the lookup, the answer and the header bytes still allowed. */
struct walk {
	struct call *c;
	struct api_model_dir *d;
	size_t budget;
};

/* Reads one shard's header: its 8-byte length, then the JSON header. */
static int read_shard(void *ctx, const char *file)
{
	struct walk *w = ctx;
	struct api_model_dir *d = w->d;
	struct body b;
	uint64_t n = 0, total;
	int rc;

	if (!file_ok(file)) {
		set_msg(w->c->msg, w->c->msglen,
			"the Hugging Face Hub's index names '%.100s', not a safetensors file name",
			file);
		return RF_E_INVALID_VALUE;
	}
	if (d->n_shards >= API_MODEL_DIR_MAX_SHARDS) {
		set_msg(w->c->msg, w->c->msglen, "the model has more than %d safetensors files",
			API_MODEL_DIR_MAX_SHARDS);
		return RF_E_TOO_LARGE;
	}
	rc = get_range(w->c, file, 0, 8, &b);
	if (rc < 0)
		goto out;
	for (int i = 7; i >= 0; i--)
		n = n << 8 | (unsigned char)b.p[i];
	if (!b.has_total) {
		set_msg(w->c->msg, w->c->msglen,
			"the Hugging Face Hub sent %.100s without a file size to believe (a "
			"Content-Range total of at most 2^53 bytes)",
			file);
		rc = RF_E_INVALID_VALUE;
		goto out;
	}
	total = b.total;
	if (n < 2 || n > w->budget || total < 8 || n > total - 8) {
		set_msg(w->c->msg, w->c->msglen,
			"the Hugging Face Hub's %.100s: a safetensors header length of %llu is not "
			"possible for a %llu-byte file (or exceeds the %zu MiB read for headers)",
			file, (unsigned long long)n, (unsigned long long)total, HEADERS_CAP >> 20);
		rc = RF_E_INVALID_VALUE;
		goto out;
	}
	free(b.p);
	rc = get_range(w->c, file, 8, n, &b);
	if (rc < 0)
		goto out;
	if (b.p[0] != '{') {
		set_msg(w->c->msg, w->c->msglen,
			"the Hugging Face Hub's %.100s does not start with a JSON header", file);
		rc = RF_E_INVALID_VALUE;
		goto out;
	}
	if (rf_ckd_add_u64(&d->file_bytes, d->file_bytes, total) < 0) {
		set_msg(w->c->msg, w->c->msglen,
			"the Hugging Face Hub's sizes of the safetensors files add up past 2^64");
		rc = RF_E_INVALID_VALUE;
		goto out;
	}
	w->budget -= (size_t)n;
	d->headers[d->n_shards] = b.p;
	d->header_len[d->n_shards] = (size_t)n;
	d->shard_bytes[d->n_shards] = total;
	d->n_shards++;
	b.p = NULL;
out:
	free(b.p);
	return rc;
}

/* The lookup proper, on c's handle. */
static int fetch(struct call *c, struct api_model_dir *d)
{
	struct walk w = {c, d, HEADERS_CAP};
	struct body cfg, idx = {0};
	cJSON *doc;
	int rc = get(c, "config.json", 0, 0, CONFIG_CAP, &cfg);

	if (rc == RF_E_NOT_FOUND) {
		set_msg(c->msg, c->msglen, "the Hugging Face Hub at %.200s has no model '%.160s'",
			c->h->url, c->id);
		return RF_E_INVALID_VALUE;
	}
	if (rc < 0)
		return rc;
	doc = cfg.p ? cJSON_ParseWithLength(cfg.p, cfg.len) : NULL;
	if (!cJSON_IsObject(doc)) {
		cJSON_Delete(doc);
		free(cfg.p);
		set_msg(c->msg, c->msglen,
			"the Hugging Face Hub's config.json for '%.160s' is not a JSON object",
			c->id);
		return RF_E_INVALID_VALUE;
	}
	cJSON_Delete(doc);
	d->config = cfg.p;
	d->config_len = cfg.len;
	rc = get(c, "model.safetensors.index.json", 0, 0, INDEX_CAP, &idx);
	if (rc == RF_E_NOT_FOUND) {
		rc = read_shard(&w, "model.safetensors");
		if (rc == RF_E_INVALID_VALUE && d->n_shards == 0 && strstr(c->msg, "has no"))
			set_msg(c->msg, c->msglen,
				"the Hugging Face Hub has no safetensors weights for '%.160s'",
				c->id);
		return rc;
	}
	if (rc == 0 && !idx.p) {
		set_msg(c->msg, c->msglen,
			"the Hugging Face Hub's model.safetensors.index.json for '%.160s' is empty",
			c->id);
		rc = RF_E_INVALID_VALUE;
	} else if (rc == 0) {
		rc = rf_model_index_shards(idx.p, idx.len, read_shard, &w, c->msg, c->msglen);
	}
	free(idx.p);
	return rc;
}

/* rf_hub_fetch for flight f (NULL: none), whose waiters may abandon it. */
static int fetch_for(struct rf_hub *h, struct flight *f, const char *id, struct api_model_dir *out,
		     char *msg, size_t msglen)
{
	struct api_model_dir *d;
	struct call c = {h, f, id, NULL, NULL, 0, msg, msglen};
	int rc;

	if (msg && msglen)
		msg[0] = '\0';
	if (!h || !id || !id_ok(id)) {
		set_msg(msg, msglen, "'%.160s' is not a Hugging Face model id (ORG/NAME)",
			id ? id : "");
		return RF_E_INVALID_VALUE;
	}
	d = calloc(1, sizeof(*d));
	c.easy = lc.easy_init();
	if (h->auth[0])
		c.headers = lc.slist_append(NULL, h->auth);
	if (!d || !c.easy || (h->auth[0] && !c.headers)) {
		set_msg(msg, msglen, "out of memory");
		rc = RF_E_NOMEM;
		goto out;
	}
	c.deadline_ms = mono_ms() + h->timeout_ms;
	rc = fetch(&c, d);
	if (rc == 0) {
		snprintf(d->where, sizeof(d->where), "hub");
		snprintf(d->revision, sizeof(d->revision), "main");
		d->fetched_at_ms = wall_ms();
		*out = *d;
		free(d);
		d = NULL;
	}
out:
	api_model_dir_free(d);
	free(d);
	lc.slist_free_all(c.headers);
	lc.easy_cleanup(c.easy);
	return rc;
}

int rf_hub_fetch(struct rf_hub *h, const char *id, struct api_model_dir *out, char *msg,
		 size_t msglen)
{
	return fetch_for(h, NULL, id, out, msg, msglen);
}

/* Copies the message of the error envelope in r into msg. */
static void reply_message(const struct api_reply *r, char *msg, size_t msglen)
{
	cJSON *doc = r->body ? cJSON_ParseWithLength(r->body, r->len) : NULL;
	const cJSON *m = cJSON_GetObjectItemCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(doc, "error"), "message");

	set_msg(msg, msglen, "the Hugging Face Hub's answer is not a model: %s",
		cJSON_IsString(m) ? m->valuestring : "invalid");
	cJSON_Delete(doc);
}

/* The store's answer for id: 0, RF_E_NOT_FOUND when only the Hub can answer (nothing stored,
 * or no store), or RF_E_INVALID_VALUE (not an id) with msg set. */
static int hub_stored(struct rf_hub *h, const char *id, struct api_model_dir *out, char *msg,
		      size_t msglen)
{
	int rc;

	if (!h || !id || !id_ok(id)) {
		set_msg(msg, msglen, "'%.160s' is not a Hugging Face model id (ORG/NAME)",
			id ? id : "");
		return RF_E_INVALID_VALUE;
	}
	rc = rf_store_hub_get(h->store, h->url, id, "main", out);
	return rc == RF_E_STORE_UNAVAILABLE ? RF_E_NOT_FOUND : rc;
}

int rf_hub_read_stored(void *ctx, int kind, const char *id, struct api_model_dir *out, char *msg,
		       size_t msglen)
{
	(void)kind;
	return hub_stored(ctx, id, out, msg, msglen);
}

void rf_hub_set_store(struct rf_hub *h, struct rf_store *store)
{
	if (h)
		h->store = store;
}

void rf_hub_stop(struct rf_hub *h)
{
	if (h)
		atomic_store(&h->stopping, true);
}

/* Looks id up on the Hub for flight f (NULL: none), checks the answer (api_model_folder) and
 * keeps it in the store. Returns as rf_hub_read does. */
static int lookup_and_keep(struct rf_hub *h, struct flight *f, const char *id,
			   struct api_model_dir *out, char *msg, size_t msglen)
{
	struct api_reply reply = {0};
	struct api_checkpoint ck;
	struct model_arch *arch;
	int rc = fetch_for(h, f, id, out, msg, msglen);

	if (rc < 0)
		return rc;
	/* Only a model that maps is kept: a lying Hub must not poison the offline copy. */
	arch = malloc(sizeof(*arch));
	if (!arch) {
		api_model_dir_free(out);
		set_msg(msg, msglen, "out of memory");
		return RF_E_NOMEM;
	}
	rc = api_model_folder(out, "model.id", arch, &ck, &reply);
	free(arch);
	if (rc < 0) {
		reply_message(&reply, msg, msglen);
		api_reply_reset(&reply);
		api_model_dir_free(out);
		return rc == RF_E_NOMEM ? rc : RF_E_INVALID_VALUE;
	}
	if (rf_store_hub_put(h->store, h->url, id, "main", out) < 0 && h->store)
		rf_log_warn("hub: could not store the answer for %s; it will be looked up again",
			    id);
	return 0;
}

/* The failure remembered for id, or NULL (h->mu held). */
static struct failure *failure_of(struct rf_hub *h, const char *id, int64_t now)
{
	for (int i = 0; i < FAILURE_SLOTS; i++)
		if (h->failures[i].until_ms > now && strcmp(h->failures[i].id, id) == 0)
			return &h->failures[i];
	return NULL;
}

/* Remembers that id failed with rc and msg, in the slot that expires first (h->mu held). */
static void failure_keep(struct rf_hub *h, const char *id, int rc, const char *msg)
{
	struct failure *slot = &h->failures[0];

	for (int i = 1; i < FAILURE_SLOTS; i++)
		if (h->failures[i].until_ms < slot->until_ms)
			slot = &h->failures[i];
	snprintf(slot->id, sizeof(slot->id), "%s", id);
	snprintf(slot->msg, sizeof(slot->msg), "%s", msg);
	slot->rc = rc;
	slot->until_ms = mono_ms() + FAILURE_TTL_MS;
}

/* Takes w off f's waiters and frees f when it was the last of a done flight (h->mu held). */
static void flight_leave(struct rf_hub *h, struct flight *f, struct waiter *w)
{
	struct waiter **pp = &f->waiters;

	(void)h;
	while (*pp && *pp != w)
		pp = &(*pp)->next;
	if (*pp)
		*pp = w->next;
	if (f->done && !f->waiters)
		free(f);
}

/* Ends flight f with rc and msg: off the list, its waiters woken (h->mu held). */
static void flight_land(struct rf_hub *h, struct flight *f, int rc, const char *msg)
{
	struct flight **pp = &h->flights;

	while (*pp && *pp != f)
		pp = &(*pp)->next;
	if (*pp)
		*pp = f->next;
	f->done = true;
	f->rc = rc;
	snprintf(f->msg, sizeof(f->msg), "%s", msg);
	pthread_cond_broadcast(&h->cv);
}

/* Waits (h->mu held) until f is done, or the waiter's client leaves, or the daemon stops.
 * Returns f's outcome (0: the answer is in the store), or RF_E_UNAVAILABLE with msg set. */
static int flight_wait(struct rf_hub *h, struct flight *f, const struct waiter *w, char *msg,
		       size_t msglen)
{
	while (!f->done) {
		struct timespec until;

		if (atomic_load(&h->stopping) || (w->cancelled && atomic_load(w->cancelled))) {
			set_msg(msg, msglen, "%s",
				atomic_load(&h->stopping) ? "the daemon is stopping" :
							    "the client went away");
			return RF_E_UNAVAILABLE;
		}
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_nsec += WAIT_TICK_MS * 1000000L;
		if (until.tv_nsec >= 1000000000L) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&h->cv, &h->mu, &until);
	}
	if (f->rc < 0)
		set_msg(msg, msglen, "%s", f->msg);
	return f->rc;
}

/* The lookup of id shared by every request that asks for it at once (see the top of the
 * file); cancelled may be NULL (never cancelled). */
static int read_shared(struct rf_hub *h, const atomic_bool *cancelled, const char *id,
		       struct api_model_dir *out, char *msg, size_t msglen)
{
	struct waiter me = {cancelled, NULL};
	struct failure *fail;
	struct flight *f;
	int rc = hub_stored(h, id, out, msg, msglen);

	if (rc != RF_E_NOT_FOUND)
		return rc;
	pthread_mutex_lock(&h->mu);
	fail = failure_of(h, id, mono_ms());
	if (fail) {
		rc = fail->rc;
		set_msg(msg, msglen, "%s", fail->msg);
		pthread_mutex_unlock(&h->mu);
		return rc;
	}
	for (f = h->flights; f && strcmp(f->id, id) != 0; f = f->next)
		;
	if (f) {
		me.next = f->waiters;
		f->waiters = &me;
		rc = flight_wait(h, f, &me, msg, msglen);
		flight_leave(h, f, &me);
		pthread_mutex_unlock(&h->mu);
		/* The leader kept its answer in the store; without a store, ask for ourselves. */
		if (rc == 0 && (rc = hub_stored(h, id, out, msg, msglen)) == RF_E_NOT_FOUND)
			rc = lookup_and_keep(h, NULL, id, out, msg, msglen);
		return rc;
	}
	f = calloc(1, sizeof(*f));
	if (!f) {
		pthread_mutex_unlock(&h->mu);
		set_msg(msg, msglen, "out of memory");
		return RF_E_NOMEM;
	}
	snprintf(f->id, sizeof(f->id), "%s", id);
	f->waiters = &me;
	f->next = h->flights;
	h->flights = f;
	pthread_mutex_unlock(&h->mu);

	rc = lookup_and_keep(h, f, id, out, msg, msglen);

	pthread_mutex_lock(&h->mu);
	/* What the Hub said is remembered; giving up because everyone left or the daemon stops
	 * says nothing about the model, and neither does running out of memory. */
	if (rc < 0 && rc != RF_E_NOMEM && !atomic_load(&h->stopping) && !abandoned(f))
		failure_keep(h, id, rc, msg);
	flight_land(h, f, rc, rc < 0 ? msg : "");
	flight_leave(h, f, &me);
	pthread_mutex_unlock(&h->mu);
	return rc;
}

int rf_hub_read(void *ctx, int kind, const char *id, struct api_model_dir *out, char *msg,
		size_t msglen)
{
	(void)kind;
	return read_shared(ctx, NULL, id, out, msg, msglen);
}

int rf_hub_read_for(void *ctx, int kind, const char *id, struct api_model_dir *out, char *msg,
		    size_t msglen)
{
	struct rf_hub_reader *r = ctx;

	(void)kind;
	return read_shared(r->hub, &r->cancelled, id, out, msg, msglen);
}
