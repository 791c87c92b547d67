# gmux: plain make.  Targets: all, test, unit, regress, fuzz, bench, demo,
# install, clean.  SANITIZE=address,undefined builds with sanitizers; O=DIR
# puts objects elsewhere (several builds of one tree side by side).

O ?= build
PREFIX ?= /usr/local
PYTHON ?= /usr/bin/python3
VERSION := $(shell cat VERSION 2>/dev/null || echo 0.0.0)

CC ?= cc
PKGS = libevent libevent_openssl openssl libcurl sqlite3 jansson libseccomp
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS := $(shell pkg-config --libs $(PKGS) 2>/dev/null)

WARN = -Wall -Wextra -Wshadow -Wmissing-prototypes -Wstrict-prototypes \
	-Wpointer-arith -Wno-unused-parameter -Werror
CFLAGS ?= -O2 -g
CFLAGS += -std=c11 -D_GNU_SOURCE -DGMUX_VERSION='"$(VERSION)"' $(WARN) \
	$(PKG_CFLAGS) -Isrc
LDLIBS += $(PKG_LIBS) -lm -lpthread

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

# -- daemon
SRCS += src/sched.c

# -- cards
SRCS += src/card.c src/card-fake.c src/card-nvidia.c src/card-amd.c
SRCS += src/card-intel.c src/enforce.c

# -- commands

# -- scheduler (issue 3)

# -- ledger (issue 4)

# -- enforcement (issue 5)

# -- fence (issue 6)

# -- remote (issue 7)
SRCS += src/digest.c src/hmap.c src/tls.c src/token.c src/ratelimit.c
SRCS += src/target.c src/cas.c src/confine.c src/ignore.c src/manifest.c
SRCS += src/statcache.c src/sync.c src/tree.c src/batch.c src/progress.c
SRCS += src/remote.c src/remote-host.c src/remote-local.c src/remotes.c

MAIN = src/gmux.c
OBJS = $(SRCS:%.c=$(O)/%.o)
LIB = $(O)/libgmuxcore.a

UNIT_SRCS = $(wildcard tests/unit/test-*.c)
UNITS = $(UNIT_SRCS:tests/unit/%.c=$(O)/tests/%)

all: $(O)/gmux

$(O)/%.o: %.c src/gmux.h
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -c -o $@ $<

$(LIB): $(OBJS)
	rm -f $@
	ar rcs $@ $(OBJS)

$(O)/gmux: $(O)/src/gmux.o $(LIB)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(O)/tests/%: tests/unit/%.c tests/unit/unit.h $(LIB)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -Itests/unit $(LDFLAGS) -o $@ $< $(LIB) $(LDLIBS)

units: $(UNITS)

unit: $(UNITS)
	@tests/run-units $(UNITS)

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
