# xdpr - XDP fast-path router.  `make V=1` shows the commands.
.DELETE_ON_ERROR:
.PHONY: all deps demo test test-unit test-bpf test-netns test-vm vmtest soak bench clean fuzz

BUILD   := build
CC      ?= gcc
CLANG   ?= clang
BPFTOOL ?= bpftool
ARCH_INC := /usr/include/$(shell $(CC) -dumpmachine)

CFLAGS   ?= -O2 -g
# libnftables, jansson, libip4tc/libip6tc: the netfilter guard (loader/nfguard.c); zlib: the
# kernel config (loader/core.c, xdpr_kernel_hz)
PKGS     := libxdp libbpf libnftables jansson libip4tc libip6tc libmnl zlib
CFLAGS   += -std=gnu11 -Wall -Wextra -Werror -Ibpf -Iloader -Icli -I$(BUILD)
CFLAGS   += $(shell pkg-config --cflags $(PKGS))
LDLIBS    = $(shell pkg-config --libs $(PKGS))
# the daemon's: rtnetlink (libmnl), the metrics server (libmicrohttpd), sd_notify (libsystemd)
DPKGS    := libmnl libmicrohttpd libsystemd
DLDLIBS   = $(shell pkg-config --libs $(DPKGS)) -lpthread
BPF_CFLAGS := -O2 -g -Wall -Werror -target bpf -mcpu=v3 -I$(ARCH_INC) -Ibpf

ifeq ($(V),1)
Q :=
msg :=
else
Q := @
msg = @printf '  %-8s %s\n' $(1) $(2);
endif

BPF_HDRS := $(wildcard bpf/*.h)
LOADER_SRCS := $(wildcard loader/*.c)
LOADER_OBJS := $(LOADER_SRCS:loader/%.c=$(BUILD)/loader/%.o)
CLI_SRCS := $(wildcard cli/*.c)
CLI_OBJS := $(CLI_SRCS:cli/%.c=$(BUILD)/cli/%.o)
CLI_LIB_OBJS := $(filter-out $(BUILD)/cli/main.o,$(CLI_OBJS))
UNIT_SRCS := $(wildcard selftests/unit/*.c)
UNIT_BINS := $(UNIT_SRCS:selftests/unit/%.c=$(BUILD)/selftests/%)
BPFT_SRCS := $(wildcard selftests/bpf/*.c)
BPFT_BINS := $(BPFT_SRCS:selftests/bpf/%.c=$(BUILD)/selftests/%)

all: $(BUILD)/xdpr $(BUILD)/xdprd $(UNIT_BINS) $(BPFT_BINS)

# What xdpr -V says: the package version (debian/changelog), the commit when
# built from git, and the datapath's build id (the BPF object's SHA-256,
# written into the program's .rodata at load: link show compares).  The
# header changes only when one of them does.
XDPR_VERSION := $(shell sed -n '1s/^[^(]*(\([^)]*\)).*/\1/p' debian/changelog)
GIT_DESC := $(shell git describe --tags --always --dirty 2>/dev/null)
.PHONY: FORCE
$(BUILD)/version.h: $(BUILD)/xdpr.bpf.o FORCE
	$(Q)mkdir -p $(@D)
	$(Q)printf '#define XDPR_VERSION "%s"\n#define XDPR_BPF_ID "%s"\n' \
		'$(XDPR_VERSION)$(if $(GIT_DESC), ($(GIT_DESC)))' "$$(sha256sum $< | cut -c1-16)" > $@.tmp
	$(Q)if cmp -s $@.tmp $@; then rm -f $@.tmp; else mv $@.tmp $@; fi

$(BUILD)/cli/main.o $(BUILD)/daemon/xdprd.o $(BUILD)/loader/core.o: $(BUILD)/version.h

$(BUILD)/xdpr.bpf.o: bpf/xdpr.bpf.c $(BPF_HDRS)
	$(call msg,BPF,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG) $(BPF_CFLAGS) -c $< -o $@

$(BUILD)/xdpr.skel.h: $(BUILD)/xdpr.bpf.o
	$(call msg,SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< name xdpr_bpf > $@

$(BUILD)/loader/%.o: loader/%.c $(BUILD)/xdpr.skel.h $(wildcard loader/*.h) $(BPF_HDRS)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) -c $< -o $@

$(BUILD)/libxdpr.a: $(LOADER_OBJS)
	$(call msg,AR,$@)
	$(Q)$(AR) rcs $@ $^

$(BUILD)/cli/%.o: cli/%.c $(wildcard cli/*.h) loader/libxdpr.h $(BPF_HDRS)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) -c $< -o $@

$(BUILD)/xdpr: $(CLI_OBJS) $(BUILD)/libxdpr.a
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) $^ -o $@ $(LDLIBS)

$(BUILD)/daemon/%.o: daemon/%.c $(wildcard daemon/*.h) $(wildcard cli/*.h) loader/libxdpr.h $(BPF_HDRS)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $(shell pkg-config --cflags $(DPKGS)) -c $< -o $@

# the daemon: the CLI's parsing and config engine, not its main
$(BUILD)/xdprd: $(BUILD)/daemon/xdprd.o $(BUILD)/daemon/export.o $(BUILD)/daemon/ddos.o \
		$(BUILD)/daemon/blackhole.o $(BUILD)/daemon/neigh.o $(CLI_LIB_OBJS) $(BUILD)/libxdpr.a
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) $^ -o $@ $(LDLIBS) $(DLDLIBS)

# the library alone: no CLI objects (they need the CLI's main)
$(BUILD)/selftests/test_rtindex: selftests/unit/test_rtindex.c $(BUILD)/libxdpr.a
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $^ -o $@ $(LDLIBS)

$(BUILD)/selftests/%: selftests/unit/%.c $(CLI_LIB_OBJS) $(BUILD)/libxdpr.a
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $^ -o $@ $(LDLIBS)

$(BUILD)/selftests/%: selftests/bpf/%.c $(wildcard selftests/bpf/*.h) $(BUILD)/libxdpr.a $(BUILD)/xdpr.skel.h
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $< $(BUILD)/libxdpr.a -o $@ $(LDLIBS)

# the exporter's test drives daemon/export.c with synthetic flows
$(BUILD)/selftests/test_export: $(BUILD)/daemon/export.o

# the fuzzer's replay table shares its oracle
$(BUILD)/selftests/test_fuzz: $(wildcard selftests/fuzz/*.h)

# The libFuzzer harness (clang 14's, libclang-rt-14-dev): selftests/fuzz/.
$(BUILD)/fuzz/xdpr_fuzz: selftests/fuzz/fuzz.c $(wildcard selftests/fuzz/*.h) $(wildcard selftests/bpf/*.h) $(BUILD)/libxdpr.a $(BUILD)/xdpr.skel.h
	$(call msg,FUZZ,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG) $(CFLAGS) -fsanitize=fuzzer $< $(BUILD)/libxdpr.a -o $@ $(LDLIBS)

# `make fuzz [FUZZ_S=seconds]`: new failures go to $(FUZZ_OUT)/failures (root; take the test lock).
FUZZ_S   ?= 180
FUZZ_OUT ?= $(BUILD)/fuzz
fuzz: $(BUILD)/fuzz/xdpr_fuzz
	$(Q)mkdir -p $(FUZZ_OUT)/corpus $(FUZZ_OUT)/failures
	$(Q)XDPR_FUZZ_SEEDS=$(FUZZ_OUT)/corpus XDPR_FUZZ_FAILURES=$(FUZZ_OUT)/failures \
		$(BUILD)/fuzz/xdpr_fuzz -max_total_time=$(FUZZ_S) -max_len=9600 -print_final_stats=1 \
		-artifact_prefix=$(FUZZ_OUT)/failures/ $(FUZZ_OUT)/corpus
	$(Q)echo "failures: $$(ls $(FUZZ_OUT)/failures | grep -c '\.bin$$\|^crash-\|^timeout-\|^oom-') in $(FUZZ_OUT)/failures (keep one: copy it to selftests/fuzz/regress/)"

# Set-up commands: each installs what is missing first (Debian 12, as root).
deps:
	$(Q)scripts/deps.sh

demo: deps
	$(Q)$(MAKE) --no-print-directory all
	$(Q)scripts/demo.sh

PROVE := prove --exec '' --timer

test: deps
	$(Q)$(MAKE) --no-print-directory all
	$(Q)$(PROVE) selftests/unit/*.t selftests/bpf/*.t selftests/netns/*.t $(wildcard selftests/vm/*.t)

test-unit: all
	$(Q)$(PROVE) selftests/unit/*.t
test-bpf: all
	$(Q)$(PROVE) selftests/bpf/*.t
test-netns: all
	$(Q)$(PROVE) selftests/netns/*.t

test-vm vmtest: all
	$(Q)$(PROVE) selftests/vm/*.t

# `make soak [SOAK_S=seconds]`: xdprd with every periodic path busy for ten
# minutes (default); its descriptors and memory must stay flat.
SOAK_S ?= 600
soak: all
	$(Q)XDPR_SOAK_S=$(SOAK_S) $(PROVE) -v selftests/netns/xdprd_resources.t

# Benchmarks are not tests: they print tables and never fail on a timing.
bench: deps
	$(Q)$(MAKE) --no-print-directory all
	$(Q)bench/run $(BENCH_ARGS)

clean:
	$(Q)rm -rf $(BUILD)

# ---- installing and packaging ----
.PHONY: bin install uninstall deb deb-test

# The two programs only (the BPF object is inside them): what a package builds.
bin: $(BUILD)/xdpr $(BUILD)/xdprd

PREFIX      ?= /usr/local
SYSCONFDIR  ?= /etc
SBINDIR     ?= $(PREFIX)/sbin
MANDIR      ?= $(PREFIX)/share/man
UNITDIR     ?= $(PREFIX)/lib/systemd/system
BASHCOMPDIR ?= $(PREFIX)/share/bash-completion/completions
INSTALL     ?= install
CONFDIR     := $(DESTDIR)$(SYSCONFDIR)/xdpr

# The unit's ExecStart is the sbin installed to.  The example always goes to
# xdpr.conf.example; xdpr.conf only when there is none (never overwritten).
install: bin
	$(call msg,INSTALL,$(DESTDIR)$(PREFIX))
	$(Q)$(INSTALL) -d $(DESTDIR)$(SBINDIR) $(DESTDIR)$(MANDIR)/man5 $(DESTDIR)$(MANDIR)/man8 \
		$(DESTDIR)$(UNITDIR) $(DESTDIR)$(BASHCOMPDIR) $(CONFDIR)
	$(Q)$(INSTALL) -m 0755 $(BUILD)/xdpr $(BUILD)/xdprd $(DESTDIR)$(SBINDIR)/
	$(Q)$(INSTALL) -m 0644 docs/xdpr.8 docs/xdprd.8 $(DESTDIR)$(MANDIR)/man8/
	$(Q)$(INSTALL) -m 0644 docs/xdpr.conf.5 $(DESTDIR)$(MANDIR)/man5/
	$(Q)$(INSTALL) -m 0644 cli/xdpr.bash-completion $(DESTDIR)$(BASHCOMPDIR)/xdpr
	$(Q)ln -sfn xdpr $(DESTDIR)$(BASHCOMPDIR)/xdprd
	$(Q)sed 's|@SBINDIR@|$(SBINDIR)|g' daemon/xdprd.service.in > $(DESTDIR)$(UNITDIR)/xdprd.service
	$(Q)chmod 0644 $(DESTDIR)$(UNITDIR)/xdprd.service
	$(Q)$(INSTALL) -m 0644 daemon/xdpr.conf $(CONFDIR)/xdpr.conf.example
	$(Q)[ -e $(CONFDIR)/xdpr.conf ] || $(INSTALL) -m 0644 daemon/xdpr.conf $(CONFDIR)/xdpr.conf

# What install put there: xdpr.conf only while it is still the example.
uninstall:
	$(call msg,UNINST,$(DESTDIR)$(PREFIX))
	$(Q)rm -f $(DESTDIR)$(SBINDIR)/xdpr $(DESTDIR)$(SBINDIR)/xdprd \
		$(DESTDIR)$(MANDIR)/man8/xdpr.8 $(DESTDIR)$(MANDIR)/man8/xdprd.8 \
		$(DESTDIR)$(MANDIR)/man5/xdpr.conf.5 $(DESTDIR)$(UNITDIR)/xdprd.service \
		$(DESTDIR)$(BASHCOMPDIR)/xdpr $(DESTDIR)$(BASHCOMPDIR)/xdprd
	$(Q)if cmp -s $(CONFDIR)/xdpr.conf $(CONFDIR)/xdpr.conf.example; then \
		rm -f $(CONFDIR)/xdpr.conf; fi
	$(Q)rm -f $(CONFDIR)/xdpr.conf.example
	$(Q)rmdir $(CONFDIR) 2>/dev/null || true

# The package is built in a copy of the tree (the files git knows, as they
# are now) under $(BUILD)/deb, so that dpkg-buildpackage writes its results
# there and nothing outside $(BUILD).
DEB_VERSION := $(shell sed -n '1s/^[^(]*(\([^)]*\)).*/\1/p' debian/changelog 2>/dev/null)
DEB_ARCH    := $(shell dpkg --print-architecture 2>/dev/null)
DEB_DIR     := $(BUILD)/deb
DEB         := $(DEB_DIR)/xdpr_$(DEB_VERSION)_$(DEB_ARCH).deb

deb:
	$(call msg,DEB,$(DEB))
	$(Q)rm -rf $(DEB_DIR)
	$(Q)mkdir -p $(DEB_DIR)/xdpr-$(DEB_VERSION)
	$(Q)if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then \
		git ls-files --cached --others --exclude-standard | \
			while IFS= read -r f; do [ -e "$$f" ] && printf '%s\n' "$$f"; done; \
	else \
		find . -path ./$(BUILD) -prune -o -path ./.git -prune -o \( -type f -o -type l \) -print; \
	fi | tar -cf - -T - | tar -xf - -C $(DEB_DIR)/xdpr-$(DEB_VERSION)
	$(Q)cd $(DEB_DIR)/xdpr-$(DEB_VERSION) && \
		if [ "$(V)" = 1 ]; then dpkg-buildpackage -us -uc -b -Jauto; \
		else dpkg-buildpackage -us -uc -b -Jauto > ../build.log 2>&1 || \
			{ tail -n 40 ../build.log; echo "Error: dpkg-buildpackage failed (all of it: $(DEB_DIR)/build.log)" >&2; exit 1; }; fi
	$(Q)test -f $(DEB)

# Build, lint, install, check, remove, purge, check nothing is left.  It
# installs the package on this machine (root), so it refuses to run where
# xdpr is installed already (or its configuration is left).
deb-test:
	$(Q)st=$$(dpkg-query -W -f='$${db:Status-Status}' xdpr 2>/dev/null); \
	if [ -n "$$st" ] && [ "$$st" != not-installed ]; then \
		echo "Error: xdpr is on this machine already (dpkg state \"$$st\"): deb-test installs and purges its own package; purge that one first (dpkg -P xdpr)" >&2; \
		exit 1; fi
	$(Q)[ "$$(id -u)" = 0 ] || { echo "Error: deb-test installs a package: run it as root" >&2; exit 1; }
	$(Q)$(MAKE) --no-print-directory deb
	$(Q)DEB=$(DEB) DEB_VERSION=$(DEB_VERSION) debian/deb-test
