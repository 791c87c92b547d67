# gmux: plain make.  Targets: all, test, unit, regress, fuzz, bench, demo,
# install, clean.  SANITIZE=address,undefined builds with sanitizers; O=DIR
# puts objects elsewhere (several builds of one tree side by side).

O ?= build
PREFIX ?= /usr/local
PYTHON ?= /usr/bin/python3
VERSION := $(shell cat VERSION 2>/dev/null || echo 0.0.0)

CC ?= cc
PKGS = libevent libevent_openssl openssl sqlite3 jansson libseccomp
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS := $(shell pkg-config --libs $(PKGS) 2>/dev/null)

WARN = -Wall -Wextra -Wshadow -Wmissing-prototypes -Wstrict-prototypes \
	-Wpointer-arith -Wno-unused-parameter -Werror
OPT ?= -O2 -g
CFLAGS += $(OPT) -std=c11 -D_GNU_SOURCE -DGMUX_VERSION='"$(VERSION)"' $(WARN) \
	$(PKG_CFLAGS) -Isrc
# Debian's static archives by default: the CLI starts in about half the time
# (no symbol resolution across six libraries at every command).  STATIC=0
# links the shared libraries instead.
STATIC ?= 1
ifeq ($(STATIC),1)
LDLIBS += -Wl,-Bstatic -levent_openssl -levent -lssl -lcrypto -lsqlite3 \
	-ljansson -lseccomp -Wl,-Bdynamic -ldl
else
LDLIBS += $(PKG_LIBS)
endif
LDLIBS += -lm -lpthread

ifneq ($(SANITIZE),)
CFLAGS += -fsanitize=$(SANITIZE) -fno-omit-frame-pointer
LDFLAGS += -fsanitize=$(SANITIZE)
endif

# Sources, grouped by area; each area keeps its own lines (so parallel work
# merges cleanly).
# -- core
SRCS = src/xmalloc.c src/log.c src/util.c src/paths.c src/clock.c
SRCS += src/frame.c src/jobreq.c src/proc.c src/db.c

# -- client side
SRCS += src/cmd.c src/client.c src/http.c src/output.c src/stream.c

# -- daemon
SRCS += src/sched.c src/server.c src/server-api.c src/api-job.c
SRCS += src/api-card.c src/job.c src/keeper.c src/state.c src/follow.c

# -- cards
SRCS += src/card.c src/card-fake.c src/card-nvidia.c src/card-amd.c
SRCS += src/card-intel.c src/enforce.c

# -- commands
SRCS += src/cmd-serve.c src/cmd-run.c src/cmd-ps.c src/cmd-logs.c
SRCS += src/cmd-stop.c src/cmd-cards.c src/cmd-version.c src/cmd-help.c

# -- scheduler (issue 3)

# -- ledger (issue 4)

# -- enforcement (issue 5)

# -- fence (issue 6)

# -- remote (issue 7)

MAIN = src/gmux.c
OBJS = $(SRCS:%.c=$(O)/%.o)
LIB = $(O)/libgmuxcore.a

UNIT_SRCS = $(wildcard tests/unit/test-*.c)
UNITS = $(UNIT_SRCS:tests/unit/%.c=$(O)/tests/%)

all: $(O)/gmux

Q = @
ifneq ($(V),)
Q =
endif

$(O)/%.o: %.c src/gmux.h
	@mkdir -p $(@D)
	@echo "  CC      $<"
	$(Q)$(CC) $(CFLAGS) -c -o $@ $<

$(LIB): $(OBJS)
	$(Q)rm -f $@
	$(Q)ar rcs $@ $(OBJS)

$(O)/gmux: $(O)/src/gmux.o $(LIB)
	@echo "  LD      $@"
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(O)/tests/%: tests/unit/%.c tests/unit/unit.h $(LIB)
	@mkdir -p $(@D)
	@echo "  CC      $<"
	$(Q)$(CC) $(CFLAGS) -Itests/unit $(LDFLAGS) -o $@ $< $(LIB) $(LDLIBS)

units: $(UNITS)

unit: $(UNITS)
	@ASAN_OPTIONS=detect_leaks=1 tests/run-units $(UNITS)

regress: all
	GMUX=$(CURDIR)/$(O)/gmux $(PYTHON) -m pytest -q tests/regress

# The whole suite: installs what the tests need, builds, runs units, units
# again under ASan+UBSan, then the end-to-end scenarios.
test:
	@tests/setup-deps
	@tests/run-all

fuzz:
	@tests/fuzz/run $(FUZZ_SECONDS)

bench: all
	@bench/run-latency

demo:
	@tests/setup-deps
	@$(MAKE) --no-print-directory all
	@scripts/demo

install: all
	install -d $(DESTDIR)$(PREFIX)/bin
	install -m 0755 $(O)/gmux $(DESTDIR)$(PREFIX)/bin/gmux

clean:
	rm -rf $(O) build-*

.PHONY: all units unit regress test fuzz bench demo install clean
