# rigfit — one binary ($(B)/rigfit), its tests and its checks.
#
#   make            build build/rigfit (optimised, warnings are errors)
#   make run        install what building and serving need, build, serve on 127.0.0.1:8080
#                   (RIGFIT_LISTEN or LISTEN= to change it; db under ./var)
#   make test       install missing packages, build the tests with ASan+UBSan, run them all
#   make mcp-test   MCP against the official conformance suite and SDK client (node, npm)
#   make valgrind   the same tests, built without sanitizers, under valgrind
#   make lint       banned functions, include rules, clang-format, OpenAPI lint
#   make deps       install the Debian packages the build and the tests need
#   make install    install under PREFIX (/usr/local) and DESTDIR; make deb: a Debian package

CC       ?= cc
B        ?= build
PKGS     := libmicrohttpd libcjson libuv sqlite3 libcurl yaml-0.1
VERSION  := $(shell cat VERSION 2>/dev/null || echo 0.0.0)
# Parallel compile jobs for make test and make run (one per CPU).
JOBS     ?= $(shell nproc 2>/dev/null || echo 2)

WARN     := -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wformat=2 \
            -Wpointer-arith -Wvla -Werror
BASEFLAGS := -std=c11 -D_DEFAULT_SOURCE -D_POSIX_C_SOURCE=200809L -I. -I$(B)/gen $(WARN) \
             -DRIGFIT_VERSION='"$(VERSION)"' -fno-strict-aliasing -pthread
PKG_CFLAGS = $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
# libcurl is loaded by server/models/hub.c when --hub asks for it (dlopen), not linked: its
# headers only.
PKG_LIBS   = $(shell pkg-config --libs $(filter-out libcurl,$(PKGS)) 2>/dev/null) -ldl -lm -pthread
CHECK_LIBS = $(shell pkg-config --libs check 2>/dev/null || echo -lcheck -lsubunit -lrt -lm)

CFLAGS_REL  := -O2 -g -D_FORTIFY_SOURCE=2 -fstack-protector-strong
CFLAGS_ASAN := -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined
CFLAGS_PLAIN := -O0 -g

CORE_SRC   := $(sort $(wildcard core/*.c core/*/*.c core/*/*/*.c))
API_SRC    := $(sort $(wildcard api/*.c api/*/*.c))
SERVER_SRC := $(sort $(filter-out server/main.c,$(wildcard server/*.c server/*/*.c)))
LIB_SRC    := $(CORE_SRC) $(API_SRC) $(SERVER_SRC)
TEST_SRC   := $(sort $(wildcard tests/*.c tests/core/*.c tests/core/*/*.c tests/core/*/*/*.c tests/api/*.c tests/server/*.c \
                tests/fault/*.c))
MIGRATIONS := $(sort $(wildcard migrations/*.sql))
UI_FILES   := server/ui/index.html server/ui/app.js server/ui/app.css
EMBEDDED   := openapi.yaml $(MIGRATIONS) $(UI_FILES)

# Three build flavours share the sources: release (the product), asan (make test), plain
# (valgrind cannot run sanitized binaries). In each, core/ is a static library,
# $(B)/FLAVOUR/librigfit_core.a, that every binary and test program links after its own
# objects; flavour_objs are the rest: api/, server/ and the embedded files.
REL_OBJ    := $(API_SRC:%.c=$(B)/rel/%.o) $(SERVER_SRC:%.c=$(B)/rel/%.o) $(B)/rel/embed.o
REL_CORE   := $(B)/rel/librigfit_core.a
define flavour_objs
$(API_SRC:%.c=$(B)/$(1)/%.o) $(SERVER_SRC:%.c=$(B)/$(1)/%.o) $(B)/$(1)/embed.o
endef

.PHONY: all run test unit mcp-test valgrind lint deps deps-lint deps-run clean format check-format bench \
  accuracy calibrate-cpu bench-cpu core-link-check
all: $(B)/rigfit

$(B)/gen/embed.S: $(EMBEDDED) tests/tools/gen_embed.sh
	@mkdir -p $(dir $@)
	sh tests/tools/gen_embed.sh $@ openapi.yaml $(MIGRATIONS) --ui $(UI_FILES)

$(B)/gen/suites.h: $(TEST_SRC)
	@mkdir -p $(dir $@)
	@grep -ho '^Suite \*[a-z0-9_]*_suite(void)' $(TEST_SRC) | sed 's/^Suite \*\(.*\)(void)/SUITE(\1)/' > $@.tmp
	@mv $@.tmp $@

$(B)/rel/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(BASEFLAGS) $(CFLAGS_REL) $(PKG_CFLAGS) -MMD -MP -c $< -o $@
$(B)/asan/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(BASEFLAGS) $(CFLAGS_ASAN) $(PKG_CFLAGS) -MMD -MP -c $< -o $@
$(B)/plain/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(BASEFLAGS) $(CFLAGS_PLAIN) $(PKG_CFLAGS) -MMD -MP -c $< -o $@
$(B)/%/embed.o: $(B)/gen/embed.S
	@mkdir -p $(dir $@)
	$(CC) -c $< -o $@

# core/ is pure. Each flavour's library is made only after it links whole into an empty
# program with nothing but libc and libm: any call from core/ into api/, server/ or a library
# (cJSON, SQLite, libuv, microhttpd) is an undefined reference there, so no binary or test is
# ever built on a core/ that breaks the layering. make core-link-check makes the release one.
define core_lib
$(B)/$(1)/librigfit_core.a: $(CORE_SRC:%.c=$(B)/$(1)/%.o)
	@rm -f $$@ $$@.tmp
	$(AR) rcs $$@.tmp $$^
	@printf 'int main(void) { return 0; }\n' > $$@.check.c
	$(CC) $(2) -o $$@.check $$@.check.c -Wl,--whole-archive $$@.tmp -Wl,--no-whole-archive -lm
	@rm -f $$@.check $$@.check.c
	@mv $$@.tmp $$@
endef
$(eval $(call core_lib,rel,$(CFLAGS_REL)))
$(eval $(call core_lib,asan,$(CFLAGS_ASAN)))
$(eval $(call core_lib,plain,$(CFLAGS_PLAIN)))
core-link-check: $(REL_CORE)

$(B)/rigfit: $(REL_OBJ) $(B)/rel/server/main.o $(REL_CORE)
	$(CC) $(CFLAGS_REL) -o $@ $^ $(PKG_LIBS)

# The planner's micro-benchmark (make bench), on the release objects.
$(B)/plan_bench: $(REL_OBJ) $(REL_CORE) tests/bench/plan_bench.c
	$(CC) $(BASEFLAGS) $(CFLAGS_REL) $(PKG_CFLAGS) -o $@ tests/bench/plan_bench.c $(REL_OBJ) \
	  $(REL_CORE) $(PKG_LIBS)

$(B)/asan/rigfit: $(call flavour_objs,asan) $(B)/asan/server/main.o $(B)/asan/librigfit_core.a
	$(CC) $(CFLAGS_ASAN) -o $@ $^ $(PKG_LIBS)
$(B)/plain/rigfit: $(call flavour_objs,plain) $(B)/plain/server/main.o $(B)/plain/librigfit_core.a
	$(CC) $(CFLAGS_PLAIN) -o $@ $^ $(PKG_LIBS)

# The unit tests send every allocation through tests/fault/alloc_fault.c, which can fail the
# Nth one (the torture suite); the product binaries are linked without it.
WRAP_ALLOC := -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc,--wrap=strdup,--wrap=strndup
$(B)/asan/unit: $(call flavour_objs,asan) $(TEST_SRC:%.c=$(B)/asan/%.o) $(B)/asan/librigfit_core.a
	$(CC) $(CFLAGS_ASAN) $(WRAP_ALLOC) -o $@ $^ $(CHECK_LIBS) $(PKG_LIBS)
$(B)/plain/unit: $(call flavour_objs,plain) $(TEST_SRC:%.c=$(B)/plain/%.o) $(B)/plain/librigfit_core.a
	$(CC) $(CFLAGS_PLAIN) $(WRAP_ALLOC) -o $@ $^ $(CHECK_LIBS) $(PKG_LIBS)

# Test sources include the generated suite list.
$(TEST_SRC:%.c=$(B)/asan/%.o) $(TEST_SRC:%.c=$(B)/plain/%.o): $(B)/gen/suites.h

# Fixtures and helpers the tests build for themselves (fake libraries, fake commands).
$(B)/fake/libnvidia-ml.so.1: $(wildcard tests/fake/nvml_fake.c)
	@mkdir -p $(dir $@)
	@if [ -f tests/fake/nvml_fake.c ]; then $(CC) -std=c11 -shared -fPIC -O1 -o $@ tests/fake/nvml_fake.c; else touch $@; fi
# The same fake without the versioned (_v2/_v3) entry points, as old drivers ship NVML.
$(B)/fake/libnvidia-ml-nov2.so.1: $(wildcard tests/fake/nvml_fake.c)
	@mkdir -p $(dir $@)
	@if [ -f tests/fake/nvml_fake.c ]; then $(CC) -std=c11 -shared -fPIC -O1 -DNO_V2 -o $@ tests/fake/nvml_fake.c; else touch $@; fi

# The daemons the tests start do not measure the host (tests/server/test_hostbench.c does).
TEST_ENV = RIGFIT_SRC_DIR=$(CURDIR) RIGFIT_TEST_DATA=$(CURDIR)/tests/data RIGFIT_NO_HOST_BENCH=1 \
  RIGFIT_FAKE_NVML_LIB=$(CURDIR)/$(B)/fake/libnvidia-ml.so.1 \
  RIGFIT_FAKE_NVML_NOV2_LIB=$(CURDIR)/$(B)/fake/libnvidia-ml-nov2.so.1

# make run installs only what building and serving need, and listens on RIGFIT_LISTEN (or
# LISTEN=...) when set.
LISTEN ?= $(or $(RIGFIT_LISTEN),127.0.0.1:8080)
run: deps-run
	@$(MAKE) --no-print-directory -j$(JOBS) $(B)/rigfit
	@mkdir -p var
	./$(B)/rigfit serve --listen $(LISTEN) --db ./var/rigfit.db --profiles ./profiles

deps-run:
	@sh tests/tools/deps.sh --run

# Every step runs with TMPDIR in one fresh folder, removed at the end whatever the outcome, so
# that a run (a failing one too) leaves nothing in the temporary directory; the CLI's own
# store (XDG_STATE_HOME) goes there too, not into the user's home. It is open to all
# like /tmp: the store tests open databases as an unprivileged user.
test: deps
	@tmp=$$(mktemp -d "$${TMPDIR:-/tmp}/rigfit-make-test.XXXXXX") || exit 2; \
	chmod 1777 "$$tmp"; \
	export TMPDIR=$$tmp XDG_STATE_HOME=$$tmp/state; \
	$(MAKE) --no-print-directory -j$(JOBS) unit && \
	$(MAKE) --no-print-directory -j$(JOBS) mcp-test && \
	$(MAKE) --no-print-directory -j$(JOBS) fuzz-short; \
	rc=$$?; rm -rf "$$tmp"; exit $$rc

# The MCP transports against the official conformance suite and SDK client (node, from npm:
# installed by make deps under $(B)/mcp-npm).
mcp-test: $(B)/asan/rigfit
	B=$(B) RIGFIT_BIN=$(CURDIR)/$(B)/asan/rigfit sh tests/mcp/run.sh

unit: $(B)/asan/unit $(B)/asan/rigfit $(B)/rigfit $(B)/fake/libnvidia-ml.so.1 \
  $(B)/fake/libnvidia-ml-nov2.so.1
	$(TEST_ENV) RIGFIT_BIN=$(CURDIR)/$(B)/asan/rigfit RIGFIT_REL_BIN=$(CURDIR)/$(B)/rigfit \
	  ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1 \
	  sh tests/tools/run_unit.sh ./$(B)/asan/unit

valgrind: deps $(B)/plain/unit $(B)/plain/rigfit $(B)/rigfit $(B)/fake/libnvidia-ml.so.1 \
  $(B)/fake/libnvidia-ml-nov2.so.1
	$(TEST_ENV) RIGFIT_BIN=$(CURDIR)/$(B)/plain/rigfit RIGFIT_REL_BIN=$(CURDIR)/$(B)/rigfit RIGFIT_VALGRIND=1 CK_FORK=no CK_DEFAULT_TIMEOUT=120 \
	  valgrind --quiet --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite,indirect \
	  --show-leak-kinds=definite,indirect --trace-children=yes --trace-children-skip='*/sh,*/bash,*/sleep,*/node,*/systemd-analyze,*/nvidia-smi' \
	  ./$(B)/plain/unit

lint: deps deps-lint
	sh tests/tools/lint.sh

deps:
	@sh tests/tools/deps.sh

deps-lint:
	@sh tests/tools/deps.sh --lint

format:
	clang-format -i $(LIB_SRC) server/main.c $(TEST_SRC) \
	  $(wildcard core/*.h core/*/*.h core/*/*/*.h api/*.h api/*/*.h server/*.h server/*/*.h tests/*.h tests/*/*.h tests/*/*/*.h tests/*/*/*/*.h tests/accuracy/*.c)

# make accuracy: the estimator against the measured runs of tests/data/calibration (no network,
# no GPU): tables of row, measured, estimated, error and the medians. Built from the release
# core library, the api/ loaders in ACCURACY_API and the test CSV reader; exits 1 when a
# median misses its target.
ACCURACY_API  := api/device_json.c api/model_json.c $(sort $(wildcard api/catalog/*.c))
ACCURACY_SRC  := $(sort $(wildcard tests/accuracy/*.c)) tests/csv.c tests/test_util.c \
                 tests/memory_calib.c tests/train_calib.c
ACCURACY_OBJ  := $(ACCURACY_SRC:%.c=$(B)/rel/%.o) $(ACCURACY_API:%.c=$(B)/rel/%.o) $(REL_CORE)
ACCURACY_LIBS  = $(shell pkg-config --libs libcjson 2>/dev/null || echo -lcjson) $(CHECK_LIBS) -lm

$(ACCURACY_SRC:%.c=$(B)/rel/%.o): $(B)/gen/suites.h

$(B)/accuracy: $(ACCURACY_OBJ)
	$(CC) $(CFLAGS_REL) -o $@ $^ $(ACCURACY_LIBS)

# rigfit's host memory against the real llama.cpp (node-llama-cpp's CPU build, installed by
# make deps) on full-size shapes of catalog models; writes tests/llama/cpu_memory_calibration.csv.
CALIBRATE_CPU_SRC := tests/llama/calibrate_cpu.c tests/core/fit/cpu/gguf_synth.c tests/core/fit/cpu/oracle.c \
                     tests/csv.c tests/test_util.c
$(B)/calibrate_cpu: $(REL_OBJ) $(REL_CORE) $(CALIBRATE_CPU_SRC) $(B)/gen/suites.h
	$(CC) $(BASEFLAGS) $(CFLAGS_REL) $(PKG_CFLAGS) -o $@ $(CALIBRATE_CPU_SRC) $(REL_OBJ) \
	  $(REL_CORE) $(PKG_LIBS) $(CHECK_LIBS)
calibrate-cpu: deps $(B)/calibrate_cpu
	./$(B)/calibrate_cpu $(CURDIR) $${TMPDIR:-/tmp}
# rigfit's CPU decode and prefill beside llama.cpp's, measured on this host; its rows go to
# $TMPDIR/cpu_speed_by_class.csv (RIGFIT_BENCH_CPU_RECORD=1: over the suite's reference rows).
bench-cpu: deps $(B)/calibrate_cpu
	./$(B)/calibrate_cpu $(CURDIR) $${TMPDIR:-/tmp} --speed

accuracy: $(B)/accuracy
	RIGFIT_SRC_DIR=$(CURDIR) RIGFIT_TEST_DATA=$${RIGFIT_TEST_DATA:-$(CURDIR)/tests/data} ./$(B)/accuracy

# --- Fuzzing, benchmark, soak (issue 7) ------------------------------------------------------
# make fuzz        every libFuzzer target of tests/fuzz/ for FUZZ_SECONDS (default 60) each,
#                  FUZZ_JOBS (default 2) at a time; fails on a crash, leak, UB or a bad reply
# make fuzz-short  the pass make test runs: 10 s each, two at a time
# make bench       rigfit next to nginx under wrk (tests/bench/bench.sh); root installs wrk, nginx
# make soak        60 s at 256 connections: no errors, flat resident memory (tests/bench/soak.sh);
#                  300 slow readers of a 20 MiB static file: VmRSS under 64 MiB
#                  (tests/bench/static_readers.sh)
# Fuzz objects are built with clang (FUZZ_CC) and ASan+UBSan in $(B)/fuzz, from core/, api/ and
# the few server/ files the targets need (the scan of a fixture machine, the profile loader,
# the safetensors index, Ollama manifests, static paths).
FUZZ_CC      ?= clang
FUZZ_SECONDS ?= 60
FUZZ_JOBS    ?= 2
FUZZ_CFLAGS  := -O1 -g -fno-omit-frame-pointer -fsanitize=fuzzer-no-link,address,undefined \
                -fno-sanitize-recover=undefined
FUZZ_LDFLAGS := -fsanitize=fuzzer,address,undefined
FUZZ_LIB_SRC := $(CORE_SRC) $(API_SRC) server/profiles/profiles.c server/log.c \
                server/cli/mcp_stdio.c server/openapi_json.c $(sort $(wildcard server/detect/*.c)) \
                server/models/hf_folders.c server/models/model_files.c server/models/ollama_models.c \
                server/daemon/static_files.c
FUZZ_HELPERS := tests/fuzz/fuzz_env.c
FUZZ_TARGETS := $(patsubst tests/fuzz/fuzz_%.c,%,$(filter-out $(FUZZ_HELPERS), \
                  $(sort $(wildcard tests/fuzz/fuzz_*.c))))
FUZZ_BINS    := $(FUZZ_TARGETS:%=$(B)/fuzz/bin/%)

.PHONY: fuzz fuzz-short fuzz-build soak
# The target objects are ordinary build outputs, not intermediates to delete after linking.
.SECONDARY: $(FUZZ_TARGETS:%=$(B)/fuzz/tests/fuzz/fuzz_%.o)
$(B)/fuzz/%.o: %.c
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(BASEFLAGS) $(FUZZ_CFLAGS) $(PKG_CFLAGS) -MMD -MP -c $< -o $@
$(B)/fuzz/librigfit.a: $(FUZZ_LIB_SRC:%.c=$(B)/fuzz/%.o) $(FUZZ_HELPERS:%.c=$(B)/fuzz/%.o) \
  $(B)/fuzz/embed.o
	rm -f $@ && ar rcs $@ $^
$(B)/fuzz/bin/%: $(B)/fuzz/tests/fuzz/fuzz_%.o $(B)/fuzz/librigfit.a
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_LDFLAGS) -o $@ $^ $(PKG_LIBS)

fuzz-build: $(FUZZ_BINS)
fuzz: deps fuzz-build
	sh tests/fuzz/run.sh $(B)/fuzz $(FUZZ_SECONDS) $(FUZZ_JOBS) $(FUZZ_TARGETS)
fuzz-short: fuzz-build
	sh tests/fuzz/run.sh $(B)/fuzz 10 2 $(FUZZ_TARGETS)

bench: deps
	sh tests/bench/bench.sh

soak: deps
	sh tests/bench/soak.sh
	sh tests/bench/static_readers.sh

# --- Install and package -----------------------------------------------------------------
# make install   PREFIX (default /usr/local) and DESTDIR: the binary, the profiles under
#                share/rigfit/ (where the binary looks for them, relative to itself), the man
#                page, bash and zsh completions, and the systemd unit pointing at PREFIX/bin.
# make deb       a Debian package of the same files with PREFIX=/usr, made by dpkg-deb, with a
#                `rigfit` system user; build/rigfit_VERSION_ARCH.deb
PREFIX     ?= /usr/local
DESTDIR    ?=
BINDIR     ?= $(PREFIX)/bin
DATADIR    ?= $(PREFIX)/share
MANDIR     ?= $(DATADIR)/man
BASHCOMPDIR ?= $(DATADIR)/bash-completion/completions
ZSHCOMPDIR ?= $(DATADIR)/zsh/site-functions
UNITDIR    ?= $(PREFIX)/lib/systemd/system
PROFILES   := $(sort $(wildcard profiles/*.json))

.PHONY: install deb
install: $(B)/rigfit
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(DATADIR)/rigfit/profiles $(DESTDIR)$(MANDIR)/man1 \
	  $(DESTDIR)$(BASHCOMPDIR) $(DESTDIR)$(ZSHCOMPDIR) $(DESTDIR)$(UNITDIR)
	install -m 0755 $(B)/rigfit $(DESTDIR)$(BINDIR)/rigfit
	install -m 0644 $(PROFILES) $(DESTDIR)$(DATADIR)/rigfit/profiles/
	install -m 0644 server/doc/rigfit.1 $(DESTDIR)$(MANDIR)/man1/rigfit.1
	install -m 0644 server/completions/rigfit.bash $(DESTDIR)$(BASHCOMPDIR)/rigfit
	install -m 0644 server/completions/_rigfit $(DESTDIR)$(ZSHCOMPDIR)/_rigfit
	sed -e 's|/usr/local/bin/rigfit|$(BINDIR)/rigfit|g' \
	    -e 's|/usr/local/share/rigfit/|$(DATADIR)/rigfit/|g' systemd/rigfit.service \
	  > $(DESTDIR)$(UNITDIR)/rigfit.service
	chmod 0644 $(DESTDIR)$(UNITDIR)/rigfit.service

DEB_ARCH = $(shell dpkg --print-architecture 2>/dev/null || echo amd64)
DEB_ROOT = $(B)/deb/root
deb: $(B)/rigfit
	rm -rf $(B)/deb
	$(MAKE) --no-print-directory install DESTDIR=$(CURDIR)/$(DEB_ROOT) PREFIX=/usr \
	  UNITDIR=/lib/systemd/system ZSHCOMPDIR=/usr/share/zsh/vendor-completions
	sed -i 's|^DynamicUser=yes|User=rigfit\nGroup=rigfit\nDynamicUser=yes|' \
	  $(DEB_ROOT)/lib/systemd/system/rigfit.service
	install -d $(DEB_ROOT)/DEBIAN
	install -m 0755 systemd/debian/postinst systemd/debian/prerm systemd/debian/postrm \
	  $(DEB_ROOT)/DEBIAN/
	sh tests/tools/deb_control.sh $(B)/rigfit $(VERSION) $(DEB_ARCH) > $(DEB_ROOT)/DEBIAN/control
	dpkg-deb --root-owner-group --build $(DEB_ROOT) $(B)/rigfit_$(VERSION)_$(DEB_ARCH).deb

clean:
	rm -rf $(B)

-include $(shell find $(B) -name '*.d' 2>/dev/null)
