# gmux: plain make.  Targets: all, test, unit, regress, fuzz, bench, demo,
# install, clean.  SANITIZE=address,undefined builds with sanitizers; O=DIR
# puts objects elsewhere (several builds of one tree side by side).

O ?= build
# Quiet: one line per file built; V=1 shows the commands.
Q = @
ifneq ($(V),)
Q =
endif
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
CFLAGS += -fsanitize=$(SANITIZE) -fno-sanitize-recover=all \
	-fno-omit-frame-pointer
LDFLAGS += -fsanitize=$(SANITIZE)
endif

# Sources, grouped by area; each area keeps its own lines (so parallel work
# merges cleanly).
# -- core
SRCS = src/xmalloc.c src/log.c src/util.c src/paths.c src/clock.c
SRCS += src/threads.c
SRCS += src/frame.c src/jobreq.c src/proc.c src/db.c

# -- client side
SRCS += src/cmd.c src/client.c src/http.c src/output.c src/stream.c

# -- daemon
SRCS += src/sched.c src/server.c src/server-api.c src/api-job.c
SRCS += src/api-card.c src/job.c src/keeper.c src/state.c src/follow.c
SRCS += src/config.c src/retention.c src/server-sched.c

# -- cards
SRCS += src/card.c src/card-fake.c src/card-nvidia.c src/card-amd.c
SRCS += src/card-intel.c src/enforce.c
SRCS += src/card-json.c src/card-tool.c

# -- commands
SRCS += src/cmd-serve.c src/cmd-run.c src/cmd-ps.c src/cmd-logs.c
SRCS += src/cmd-stop.c src/cmd-cards.c src/cmd-version.c src/cmd-help.c
SRCS += src/cmd-resize.c src/cmd-explain.c

# -- scheduler (issue 3)
SRCS += src/sched-queue.c src/sched-card.c src/sched-pass.c
SRCS += src/sched-preempt.c src/sched-explain.c
BENCHES += $(O)/bench/sched-admission

# A pattern rule (not the default goal): $(O)/bench/NAME from bench/NAME.c,
# linked like the unit tests; bench/run-* run them.
$(O)/bench/%: bench/%.c src/gmux.h $(O)/libgmuxcore.a
	@mkdir -p $(@D)
	@echo "  CC      $@"
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $< $(O)/libgmuxcore.a $(LDLIBS)

# -- ledger (issue 4)
SRCS += src/ledger.c src/ledger-interval.c src/ledger-chain.c
SRCS += src/ledger-query.c
SRCS += src/usage.c src/metrics.c src/top.c src/api-usage.c
SRCS += src/cmd-usage.c src/cmd-top.c
BENCHES += $(O)/bench/bench-ledger

# -- enforcement (issue 5)
SRCS += src/region.c src/mps.c src/cumask.c src/audit.c
SRCS += src/proc-async.c src/card-query.c
# libgmux.so, the preload library: its own flags (no sanitizers, no
# third-party headers), hidden visibility and an explicit export list.
SHIM_SRCS = shim/dl.c shim/account.c shim/track.c shim/cuda.c shim/pool.c \
	shim/pacer.c shim/nvml.c shim/hsa.c
SHIM_HDRS = shim/shim.h shim/syms.h shim/region.h shim/cuda-types.h
SHIM_CFLAGS = -O2 -g -std=c11 -D_GNU_SOURCE $(WARN) -fPIC \
	-fvisibility=hidden -Ishim
SHIM_OBJS = $(SHIM_SRCS:%.c=$(O)/%.o)
FAKE_CFLAGS = -O2 -g -std=c11 -D_GNU_SOURCE $(WARN) -fPIC -Ishim
# Test-only: the fake driver, NVML and the programs the shim tests drive.
FAKE_CUDA = $(O)/fake-cuda/libcuda.so.1 $(O)/fake-cuda/libnvidia-ml.so.1
SHIM_TESTS = $(O)/shim-tests/cudash $(O)/shim-tests/cudash-dl \
	$(O)/shim-tests/hsa-host $(O)/shim-tests/test-shim

all: $(O)/libgmux.so

$(O)/src/region.o: shim/region.h

$(O)/shim/%.o: shim/%.c $(SHIM_HDRS)
	@mkdir -p $(@D)
	@echo "  CC      $@"
	$(Q)$(CC) $(SHIM_CFLAGS) -c -o $@ $<

$(O)/libgmux.so: $(SHIM_OBJS) shim/libgmux.map
	@echo "  CC      $@"
	$(Q)$(CC) -shared -o $@ $(SHIM_OBJS) -Wl,--version-script=shim/libgmux.map \
	    -Wl,-z,defs -ldl -lpthread

$(O)/fake-cuda/lib%.so.1: tests/fake-cuda/lib%.c shim/cuda-types.h
	@mkdir -p $(@D)
	@echo "  CC      $@"
	$(Q)$(CC) $(FAKE_CFLAGS) -shared -Wl,-soname,lib$*.so.1 \
	    -Wl,-Bsymbolic-functions -o $@ $< -lpthread
	ln -sf lib$*.so.1 $(@D)/lib$*.so

$(O)/shim-tests/cudash: tests/shim/cudash.c $(FAKE_CUDA)
	@mkdir -p $(@D)
	@echo "  CC      $@"
	$(Q)$(CC) $(FAKE_CFLAGS) -o $@ $< -L$(O)/fake-cuda -lcuda -lnvidia-ml -ldl

$(O)/shim-tests/cudash-dl: tests/shim/cudash.c shim/cuda-types.h
	@mkdir -p $(@D)
	@echo "  CC      $@"
	$(Q)$(CC) $(FAKE_CFLAGS) -DVIA_DLSYM -o $@ $< -ldl

$(O)/shim-tests/hsa-host: tests/shim/hsa-host.c
	@mkdir -p $(@D)
	@echo "  CC      $@"
	$(Q)$(CC) $(FAKE_CFLAGS) -o $@ $< -ldl

$(O)/shim-tests/test-shim: tests/shim/test-shim.c tests/unit/unit.h \
	$(O)/libgmuxcore.a
	@mkdir -p $(@D)
	@echo "  CC      $@"
	$(Q)$(CC) $(CFLAGS) -Itests/unit $(LDFLAGS) -o $@ $< $(LIB) $(LDLIBS)

# The shim's tests: the real library in front of the fake driver.
shim-tests: $(O)/libgmux.so $(FAKE_CUDA) $(SHIM_TESTS)

unit-shim: shim-tests
	@tests/run-shim $(O)

install: install-shim
install-shim: $(O)/libgmux.so
	install -d $(DESTDIR)$(PREFIX)/lib/gmux
	install -m 0644 $(O)/libgmux.so $(DESTDIR)$(PREFIX)/lib/gmux/libgmux.so

.PHONY: unit-shim shim-tests install-shim

# -- fence (issue 6)
SRCS += src/fence.c src/fence-policy.c src/fence-names.c src/fence-super.c
SRCS += src/fence-unix.c src/fence-out.c src/fence-call.c src/dns.c
FENCE_TOOLS = $(O)/tests/fence-run $(O)/tests/fence-escape $(O)/bench/fence-connect
all: $(FENCE_TOOLS)
$(O)/tests/fence-%: tests/fence-%.c src/gmux.h $(O)/libgmuxcore.a
	@mkdir -p $(@D)
	@echo "  CC      $@"
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $< $(O)/libgmuxcore.a $(LDLIBS)
$(O)/bench/fence-%: bench/fence-%.c src/gmux.h $(O)/libgmuxcore.a
	@mkdir -p $(@D)
	@echo "  CC      $@"
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $< $(O)/libgmuxcore.a $(LDLIBS)

# -- remote (issue 7)
SRCS += src/digest.c src/hmap.c src/tls.c src/token.c src/ratelimit.c
SRCS += src/target.c src/cas.c src/confine.c src/ignore.c src/manifest.c
SRCS += src/statcache.c src/sync.c src/tree.c src/batch.c src/progress.c
SRCS += src/remote.c src/remote-host.c src/remote-local.c src/remotes.c
SRCS += src/conn.c src/hosts.c src/server-tls.c src/api-remote.c
SRCS += src/api-token.c src/cmd-remote.c src/cmd-token.c
SRCS += src/remote-net.c src/run-remote.c src/run-cluster.c
SRCS += src/prepare.c src/server-guard.c

# -- seams
SRCS += src/job-state.c

# -- remote uploads, per owner (issue 11)
SRCS += src/remote-want.c
$(O)/src/remote-host.o $(O)/src/remote-want.o: src/remote-int.h

# -- remote jobs' jail
SRCS += src/landlock.c src/jail.c
BENCHES += $(O)/bench/jail-start

# -- remote jobs' trees: overlays over stored trees
SRCS += src/overlay.c src/worktree.c

# -- review fixes (issue 16): slow hosts, the books verified where kept
SRCS += src/hosts-slow.c src/api-verify.c src/remote-probe.c

# -- job files, directives, arrays (issue 15)
SRCS += src/array.c src/jobspec.c src/jobspec-host.c src/job-array.c
SRCS += src/job-array-store.c src/api-array.c src/api-queue.c src/runopt.c
SRCS += src/jobfile.c src/cmd-submit.c src/cmd-status.c src/cmd-queue.c

# -- cluster (issue 15): etcd and members (docs/cluster.md)
SRCS += src/etcd.c src/cluster.c src/cluster-mirror.c src/cluster-sched.c
SRCS += src/cluster-job.c src/api-cluster.c src/cmd-cluster.c
SRCS += src/cluster-ui.c
# -- cluster3 (issue 15): fit and room, gangs
SRCS += src/cluster-fit.c src/cluster-why.c
$(O)/src/cluster-fit.o $(O)/fuzz/src/cluster-fit.o: src/cluster-int.h
$(O)/src/cluster-why.o $(O)/fuzz/src/cluster-why.o: src/cluster-int.h
BENCHES += $(O)/bench/cluster-sim
# What includes cluster-int.h is built again when it changes.
CLUSTER_SRCS = src/etcd.c src/cluster.c src/cluster-mirror.c \
	src/cluster-sched.c src/cluster-job.c src/api-cluster.c \
	src/cluster-ui.c
$(CLUSTER_SRCS:%.c=$(O)/%.o) $(CLUSTER_SRCS:%.c=$(O)/fuzz/%.o): \
	src/cluster-int.h
$(O)/tests/test-etcd $(O)/tests/test-cluster $(O)/bench/cluster-sim \
	$(O)/fuzz/fuzz-etcd: src/cluster-int.h tests/unit/etcd-server.h

# -- overcommit (issue 15): admitted on measured use, nothing reserved
SRCS += src/server-over.c

# -- peer: members calling members (issue 15; docs/cluster.md)
SRCS += src/cluster-peer.c src/cluster-usage.c
$(O)/src/cluster-peer.o $(O)/fuzz/src/cluster-peer.o \
    $(O)/src/cluster-usage.o $(O)/fuzz/src/cluster-usage.o: src/cluster-int.h

# -- tenants (issue 14): accounts, quotas, retention (docs/tenants.md)
SRCS += src/tenant.c src/tenant-account.c src/tenant-uid.c
SRCS += src/tenant-quota.c src/tenant-disk.c src/tenant-retention.c
SRCS += src/api-tenant.c src/cmd-tenant.c src/tenant-publish.c
SRCS += src/tenant-datasets.c
# -- tenants' project quotas, work off the loop, orphan containers (quota)
SRCS += src/tenant-pquota.c src/tenant-end.c
BENCHES += $(O)/bench/tenant-disk

# -- tasks: the broker behind Python's @mesh (issue 13)
SRCS += src/task-broker.c src/task-spool.c src/task-conn.c src/api-task.c
SRCS += src/cmd-workers.c
# -- the mesh's remote workers run in the caller's synced tree (issue 13)
SRCS += src/cmd-sync.c
# -- cmesh: @mesh across a cluster's members (issues 13, 15)
SRCS += src/task-peer.c
$(O)/src/task-peer.o: src/task-int.h
# -- bigval: big values over TCP and to other members' workers (issue 13)
SRCS += src/task-value.c
$(O)/src/task-value.o: src/task-int.h
# -- terminals and published ports (issue 17): docs/terminals.md
SRCS += src/term.c src/term-wire.c src/term-relay.c src/term-port.c
SRCS += src/term-client.c src/api-term.c src/cmd-shell.c src/cmd-port.c
TERM_SRCS = src/term.c src/term-wire.c src/term-relay.c src/term-port.c \
	src/term-client.c src/api-term.c src/cmd-shell.c src/cmd-port.c \
	src/term-peer.c
$(TERM_SRCS:%.c=$(O)/%.o) $(TERM_SRCS:%.c=$(O)/fuzz/%.o): src/term-int.h
$(O)/src/task-broker.o $(O)/src/task-spool.o $(O)/src/task-conn.o \
    $(O)/src/api-task.o: src/task-int.h
# -- relay: a cluster job's terminal or port through any member (issue 15)
SRCS += src/term-peer.c
SRCS += src/api-cluster-relay.c
$(O)/src/api-cluster.o $(O)/fuzz/src/api-cluster.o \
    $(O)/src/api-cluster-relay.o $(O)/fuzz/src/api-cluster-relay.o: \
	src/cluster-int.h src/api-cluster-int.h
# -- relay: the MASTER_PORTs other programs hold, published (issue 15)
SRCS += src/cluster-ports.c
$(O)/src/cluster-ports.o $(O)/fuzz/src/cluster-ports.o: src/cluster-int.h
# -- remote workspaces (issue 17): a port in a remote container's network
SRCS += src/term-netns.c
$(O)/src/term-netns.o $(O)/fuzz/src/term-netns.o: src/term-int.h
# -- ws: a port's connect waited for on the loop, not in it (issue 17)
SRCS += src/term-dial.c
$(O)/src/term-dial.o $(O)/fuzz/src/term-dial.o: src/term-int.h
# -- ws: a workspace's images saved and listed through the daemon (issue 17)
SRCS += src/api-workspace.c

# -- dashboard (issue 12): the page's files (ui/) are built into the
# program as a generated header that only src/ui.c includes.
SRCS += src/ui.c src/ui-events.c src/ui-usage.c src/ui-forward.c
SRCS += src/cmd-ui.c src/ledger-series.c
UI_ASSETS = $(sort $(wildcard ui/*.html ui/*.js ui/*.css ui/*.svg))
$(O)/ui/embed: ui/embed.c
	@mkdir -p $(@D)
	@echo "  CC      $@"
	$(Q)$(CC) -O2 -std=c11 $(WARN) -o $@ $<
$(O)/gen/ui-assets.h: $(O)/ui/embed $(UI_ASSETS)
	@mkdir -p $(@D)
	@echo "  GEN     $@"
	$(Q)$(O)/ui/embed $@ $(UI_ASSETS)
$(O)/src/ui.o $(O)/fuzz/src/ui.o: $(O)/gen/ui-assets.h src/ui-int.h
$(O)/src/ui.o: CFLAGS += -I$(O)/gen
$(O)/fuzz/src/ui.o: FUZZ_CFLAGS += -I$(O)/gen
$(O)/src/ui-events.o $(O)/src/ui-usage.o $(O)/src/ui-forward.o: src/ui-int.h
$(O)/src/cmd-ui.o: src/ui-int.h

# -- last mile (issue 12): completions, the manual page
SRCS += src/cmd-flags.c src/cmd-completion.c src/manpage.c
SRCS += src/doctor.c src/doctor-host.c src/doctor-remote.c src/cmd-doctor.c
SRCS += src/setup.c src/cmd-setup.c

# -- containers and workspaces (issue 17, docs/containers.md)
SRCS += src/container.c src/cmd-workspace.c src/cmd-workspace-dev.c
SRCS += src/devcontainer.c src/container-env.c src/api-build.c

# -- the fence inside containers, containers as the owner (issue 17)
SRCS += src/tenant-subid.c src/container-account.c src/fdpass.c
SRCS += src/fence-install.c
# gmux-fence-exec, a fenced container's first process: static (an image
# may have no C library), nothing of gmux's linked in.
all: $(O)/gmux-fence-exec
FENCE_EXEC_SRCS = shim/fence-exec.c src/fdpass.c src/fence-install.c
$(O)/gmux-fence-exec: $(FENCE_EXEC_SRCS) src/gmux.h
	@mkdir -p $(@D)
	@echo "  CC      $@"
	$(Q)$(CC) -O2 -g -std=c11 -D_GNU_SOURCE $(WARN) -Isrc -static -o $@ \
	    $(FENCE_EXEC_SRCS)
install: install-fence-exec
install-fence-exec: $(O)/gmux-fence-exec
	install -d $(DESTDIR)$(PREFIX)/lib/gmux
	install -m 0755 $(O)/gmux-fence-exec \
	    $(DESTDIR)$(PREFIX)/lib/gmux/gmux-fence-exec
.PHONY: install-fence-exec

# -- containers for remote jobs, images that travel (issue 17)
SRCS += src/imageref.c src/image.c src/api-image.c src/run-image.c
SRCS += src/image-shared.c
# -- workspaces' shells, templates, mounts (issue 17, ws2)
SRCS += src/workspace.c src/workspace-mount.c src/container-config.c
all: $(O)/gmux.1
$(O)/gmux.1: $(O)/gmux
	@echo "  MAN     $@"
	$(Q)$(O)/gmux help --man > $@.tmp && mv $@.tmp $@
install: install-extras
install-extras: $(O)/gmux $(O)/gmux.1
	install -d $(DESTDIR)$(PREFIX)/share/man/man1
	install -m 0644 $(O)/gmux.1 $(DESTDIR)$(PREFIX)/share/man/man1/gmux.1
	install -d $(DESTDIR)$(PREFIX)/share/bash-completion/completions
	$(O)/gmux completion bash > \
	    $(DESTDIR)$(PREFIX)/share/bash-completion/completions/gmux
	install -d $(DESTDIR)$(PREFIX)/share/zsh/site-functions
	$(O)/gmux completion zsh > $(DESTDIR)$(PREFIX)/share/zsh/site-functions/_gmux
	install -d $(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d
	$(O)/gmux completion fish > \
	    $(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d/gmux.fish
.PHONY: install-extras

# -- discovery (issue 12): serve --announce, remote discover
SRCS += src/announce.c src/server-announce.c src/cmd-discover.c

# -- grant: a token's clusters (issue 15; docs/cluster.md)
SRCS += src/token-grant.c src/cluster-grant.c
SRCS += src/cluster-array.c src/cluster-tree.c

# -- mentry: the mesh's workers merged over the members (issue 13)
SRCS += src/cluster-workers.c
$(O)/src/cluster-workers.o $(O)/fuzz/src/cluster-workers.o: src/cluster-int.h
# -- cedge: the cluster's edges (issue 15): stops no job is left to take
SRCS += src/cluster-stops.c
$(O)/src/cluster-stops.o $(O)/fuzz/src/cluster-stops.o \
    $(O)/src/cluster-array.o $(O)/fuzz/src/cluster-array.o: src/cluster-int.h
# -- the members that left, as gmux cluster ls -a lists them (issue 15)
SRCS += src/cluster-gone.c
$(O)/src/cluster-gone.o $(O)/fuzz/src/cluster-gone.o: src/cluster-int.h

MAIN = src/gmux.c
OBJS = $(SRCS:%.c=$(O)/%.o)
LIB = $(O)/libgmuxcore.a

UNIT_SRCS = $(wildcard tests/unit/test-*.c)
UNITS = $(UNIT_SRCS:tests/unit/%.c=$(O)/tests/%)

all: $(O)/gmux

$(O)/%.o: %.c src/gmux.h $(wildcard src/*-int.h)
	@mkdir -p $(@D)
	@echo "  CC      $<"
	$(Q)$(CC) $(CFLAGS) -c -o $@ $<

$(LIB): $(OBJS)
	$(Q)rm -f $@
	$(Q)ar rcs $@ $(OBJS)

# Not position-independent: the static archives bring 18,782 relative
# relocations that a PIE applies (and so dirties its data pages) at every
# start, 0.4-0.6 ms of each command and of each job's keeper (measured:
# bench/run-latency).  libc, the heap and the stack are still randomized.
# PIE=1 builds a PIE.
ifeq ($(PIE),1)
GMUX_LDFLAGS =
else
GMUX_LDFLAGS = -no-pie
endif

$(O)/gmux: $(O)/src/gmux.o $(LIB)
	@echo "  LD      $@"
	$(Q)$(CC) $(LDFLAGS) $(GMUX_LDFLAGS) -o $@ $^ $(LDLIBS)

$(O)/tests/%: tests/unit/%.c tests/unit/unit.h $(LIB)
	@mkdir -p $(@D)
	@echo "  CC      $<"
	$(Q)$(CC) $(CFLAGS) -Itests/unit $(LDFLAGS) -o $@ $< $(LIB) $(LDLIBS)

units: $(UNITS)

unit: $(UNITS)
	@ASAN_OPTIONS=detect_leaks=1 tests/run-units $(UNITS)

regress: all shim-tests
	GMUX=$(CURDIR)/$(O)/gmux $(PYTHON) -m pytest -q tests/regress

# The whole suite: installs what the tests need, builds, runs units, units
# again under ASan+UBSan, then the end-to-end scenarios.
test:
	@tests/setup-deps
	@tests/run-all

# Fuzzing: each tests/fuzz/fuzz-*.c is built by clang with libFuzzer and
# the sanitizers against the sources, compiled again into $(O)/fuzz (the
# gcc objects are not fit to link with it); tests/fuzz/run runs each for
# FUZZ_SECONDS and fails if one finds a crash.
FUZZ_CC = clang
FUZZ_CFLAGS = -g -O1 -std=c11 -D_GNU_SOURCE -DGMUX_VERSION='"$(VERSION)"' \
	$(WARN) $(PKG_CFLAGS) -Isrc -fno-omit-frame-pointer \
	-fsanitize=address,undefined -fno-sanitize-recover=undefined
FUZZ_SRCS = $(wildcard tests/fuzz/fuzz-*.c)
FUZZERS = $(FUZZ_SRCS:tests/fuzz/%.c=$(O)/fuzz/%)
FUZZ_LIB = $(O)/fuzz/libgmuxcore.a

$(O)/fuzz/%.o: %.c src/gmux.h $(wildcard src/*-int.h)
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -c -o $@ $<

$(FUZZ_LIB): $(SRCS:%.c=$(O)/fuzz/%.o)
	rm -f $@
	ar rcs $@ $^

$(O)/fuzz/fuzz-%: tests/fuzz/fuzz-%.c tests/fuzz/fuzz.h $(FUZZ_LIB)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer -o $@ $< $(FUZZ_LIB) \
	    $(LDLIBS)

fuzzers: $(FUZZERS)

fuzz: fuzzers
	@O=$(O) tests/fuzz/run $(FUZZ_SECONDS)

# Every benchmark: each prints its figures and ratios against a baseline
# measured in the same run (bench/README.md).
bench: all
	@for b in bench/run-*; do echo "== $$b"; $$b || exit 1; done

demo:
	@tests/setup-deps
	@$(MAKE) --no-print-directory all
	@scripts/demo

install: all
	install -d $(DESTDIR)$(PREFIX)/bin
	install -m 0755 $(O)/gmux $(DESTDIR)$(PREFIX)/bin/gmux

clean:
	rm -rf $(O) build-*

.PHONY: all units unit regress test fuzz fuzzers bench demo install clean
