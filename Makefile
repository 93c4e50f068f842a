# SPDX-License-Identifier: GPL-2.0
#
# odsm: the module (kbuild), libodsm, odsmctl, tests, benchmarks, examples.
#
#   make            build everything against the newest installed kernel
#   make setup      install every Debian package the project needs
#   make check      setup, then host unit tests and VM suites on every
#                   supported kernel; ends with "N passed, M failed"
#   make demo       setup, then a guest running the example application
#   make bench      setup, then the benchmarks in guests (not a test); ends
#                   with a summary table, figures in build/bench/results.csv
#   make bench-plots  Documentation/odsm/bench-*.svg from those figures
#   make model      spin checks the coherence protocol's model (model/)
#   make fuzz       the ioctl and wire fuzzers in debug-booted guests for
#                   FUZZ_SECS seconds (default 600)
#   make check-debug  builds (once, cached) a KASAN + lockdep kernel and runs
#                   the VM, cluster and fuzz suites on it; not part of check
#   make install    library, headers, odsm.pc, odsmctl and the module
#                   (PREFIX=/usr/local, DESTDIR=)
#   make dkms-install   the module's source under /usr/src/odsm-VERSION,
#                   registered with DKMS and built for every kernel that
#                   has headers (dkms-uninstall removes both)
#   make deb        the Debian packages, into build/deb/ (tools/mkdeb.sh)
#
# Variables: KVER (kernel release), KDIR (its build tree), BUILD (output).

SHELL	:= /bin/bash
BUILD	?= build
# the release: odsm.pc, the DKMS source directory, the packages (whose
# debian/changelog must name the same version: debian/rules checks)
VERSION	:= 0.1
KVER	?= $(shell tools/rig/kernels.sh --newest 2>/dev/null)
# a Debian kernel's headers, or a debug kernel's build tree (kernels.sh)
kdir_of	= $(or $(shell tools/rig/kernels.sh --kdir $(1) 2>/dev/null),/lib/modules/$(1)/build)
KDIR	?= $(call kdir_of,$(KVER))
ifneq ($(origin KDIR),file)
# the release the tree was built as (Debian's kernel.release differs)
KVER	:= $(shell sed -n 's/.*UTS_RELEASE "\(.*\)"/\1/p' \
		$(KDIR)/include/generated/utsrelease.h 2>/dev/null)
endif

CC	?= gcc
CFLAGS	?= -O2 -g
WFLAGS	:= -Wall -Wextra -Werror -Wno-unused-parameter
UCFLAGS	:= $(CFLAGS) $(CPPFLAGS) $(WFLAGS) -D_GNU_SOURCE -Iuapi -Iuserlib
KSFT	:= $(BUILD)/ksft

LIB_A	:= $(BUILD)/lib/libodsm.a
LIB_SO	:= $(BUILD)/lib/libodsm.so.1
# delegation: the runtime, and the slot codec it shares with the module
DELEG_SRC := userlib/odsm_deleg_ops.c userlib/odsm_deleg_arena.c \
	     userlib/odsm_deleg_trustee.c userlib/odsm_deleg_client.c \
	     userlib/odsm_deleg_remote.c userlib/odsm_deleg_gateway.c \
	     userlib/odsm_deleg_wait.c
# names, start-up, barrier, mutex (odsm_sync.h)
SYNC_SRC := userlib/odsm_sync_util.c userlib/odsm_name.c userlib/odsm_app.c \
	    userlib/odsm_barrier.c userlib/odsm_mutex.c userlib/odsm_mutex_cas.c \
	    userlib/odsm_mutex_fifo.c userlib/odsm_mutex_deleg.c
# data structures (issue 17): the hash table, the queue, the cost model
DS_SRC := userlib/odsm_ds_model.c userlib/odsm_ds_hash.c userlib/odsm_ds_table.c \
	  userlib/odsm_ds_queue.c
# remote execution and channels, on the delegation runtime
SPAWN_SRC := userlib/odsm_spawn.c userlib/odsm_chan.c userlib/odsm_arc.c
# tied allocation (DRust's TBox): groups and their arenas
TBOX_SRC := userlib/odsm_tbox.c userlib/odsm_tbox_arena.c
# asynchronous operations through io_uring (raw system calls)
ASYNC_SRC := userlib/odsm_async.c
LIB_SRC	:= userlib/odsm.c userlib/odsm_check.c userlib/odsm_hits.c $(DELEG_SRC) \
	   $(SYNC_SRC) $(DS_SRC) $(SPAWN_SRC) $(TBOX_SRC) $(ASYNC_SRC) kmod/odsm_dslot.c
LIB_OBJ	:= $(patsubst %.c,$(BUILD)/lib/%.o,$(notdir $(LIB_SRC)))
LIB_HDR	:= userlib/odsm.h userlib/odsm_deleg.h userlib/odsm_sync.h userlib/odsm_ds.h \
	   userlib/odsm_spawn.h userlib/odsm_chan.h userlib/odsm_arc.h \
	   userlib/odsm_tbox.h userlib/odsm_async.h uapi/linux/odsm.h uapi/linux/odsm_deleg.h
# what the library's own sources include besides
LIB_IHDR := userlib/odsm_deleg_int.h userlib/odsm_sync_int.h userlib/odsm_mutex_int.h \
	    userlib/odsm_mutex_dq.h \
	    userlib/odsm_ds_int.h userlib/odsm_spawn_int.h userlib/odsm_hits_int.h \
	    userlib/odsm_tbox_int.h \
	    kmod/odsm_dslot.h kmod/odsm_portable.h \
	    tools/include/odsm_kshim.h

# pure logic shared with the module, linked into host programs
CORE_SRC := kmod/odsm_palloc.c kmod/odsm_sizeclass.c kmod/odsm_wire.c kmod/odsm_cindex.c \
	    kmod/odsm_dslot.c
CORE_HDR := kmod/odsm_addr.h kmod/odsm_window.h kmod/odsm_credit.h kmod/odsm_palloc.h kmod/odsm_pubword.h kmod/odsm_sizeclass.h kmod/odsm_wire.h kmod/odsm_cindex.h \
	    kmod/odsm_dslot.h uapi/linux/odsm_deleg.h \
	    kmod/odsm_portable.h tools/include/odsm_kshim.h uapi/linux/odsm.h

HOST_TESTS := $(patsubst selftests/host/%.c,$(BUILD)/tests/host/%,\
		$(wildcard selftests/host/*_test.c)) \
	      $(BUILD)/tests/host/bench_report_test $(BUILD)/tests/host/progress_test \
	      $(BUILD)/tests/host/checklib_test
VM_TESTS   := $(patsubst selftests/vm/%.c,$(BUILD)/tests/vm/%,\
		$(wildcard selftests/vm/*.c))
CLUSTER_TESTS := $(patsubst selftests/cluster/%.c,$(BUILD)/tests/cluster/%,\
		$(wildcard selftests/cluster/*_test.c))
# user-space RDMA-CM clients for the rdma-fuzz scenario (dynamic: rdma-core
# loads its device providers at run time)
RDMA_TESTS := $(patsubst selftests/rdma/%.c,$(BUILD)/tests/rdma/%,\
		$(wildcard selftests/rdma/*.c))
# libodsm itself on the host, against a fake /dev/odsm (selftests/lib)
LIB_TESTS  := $(patsubst selftests/lib/%.c,$(BUILD)/tests/lib/%,\
		$(wildcard selftests/lib/*_test.c))
# odsmctl, the benchmarks, the examples: build/bin/NAME from .../NAME.c
TOOL_SRC   := tools/odsmctl/odsmctl.c $(wildcard tools/bench/*.c) \
	      $(wildcard tools/examples/*.c)
TOOLS	   := $(patsubst %.c,$(BUILD)/bin/%,$(notdir $(TOOL_SRC)))
# odsm-hbench measures libodsm's own table of hits through its internal
# calls: linked with libodsm.a always, whatever TOOL_LINK says; built
# with the tests (make bench runs it), not with the packaged tools
HBENCH	   := $(BUILD)/bin/odsm-hbench
TOOLS	   := $(filter-out $(HBENCH),$(TOOLS))
# the fuzzers (selftests/fuzz/odsm_NAME.c -> build/bin/odsm-NAME): static,
# in build/bin so that every guest image has them
FUZZERS	   := $(patsubst selftests/fuzz/odsm_%.c,$(BUILD)/bin/odsm-%,\
		$(wildcard selftests/fuzz/odsm_*.c))

MODULE	:= $(BUILD)/kmod/$(KVER)/kmod/odsm.ko

.PHONY: all module lib tools tests setup check check-debug demo bench bench-plots model fuzz checkpatch install \
	clean install-lib print-version print-pub-headers dkms-src dkms-install dkms-uninstall deb FORCE

all: module lib tools tests

setup:
	@tools/setup.sh

# ---- the module -------------------------------------------------------------
# Each kernel gets its own copy of the sources, so builds for several
# kernels never share objects.
module: $(MODULE)

$(BUILD)/kmod/%/kmod/odsm.ko: FORCE
	@test -n "$*" -a -d "$(if $(filter $*,$(KVER)),$(KDIR),$(call kdir_of,$*))" || \
		{ echo "no kernel build tree for '$*': run 'make setup' or set KDIR" >&2; exit 1; }
	@mkdir -p $(BUILD)/kmod/$*/kmod $(BUILD)/kmod/$*/uapi/linux
	@cp -u Kbuild $(BUILD)/kmod/$*/
	@cp -u kmod/*.c kmod/*.h kmod/Kbuild $(BUILD)/kmod/$*/kmod/
	@cp -u uapi/linux/odsm.h uapi/linux/odsm_deleg.h $(BUILD)/kmod/$*/uapi/linux/
	@echo "  KMOD    $@"
	@set -o pipefail; \
	$(MAKE) -s -C $(if $(filter $*,$(KVER)),$(KDIR),$(call kdir_of,$*)) \
		M=$(abspath $(BUILD)/kmod/$*) W=1 modules 2>&1 | \
		{ grep -v 'Skipping BTF generation' || true; }

# ---- libodsm ----------------------------------------------------------------
lib: $(LIB_A) $(LIB_SO) $(BUILD)/lib/odsm.pc

$(BUILD)/lib/%.o: userlib/%.c $(LIB_HDR) $(LIB_IHDR)
	@mkdir -p $(@D)
	$(CC) $(UCFLAGS) -Ikmod -c $< -o $@

$(BUILD)/lib/%.pic.o: userlib/%.c $(LIB_HDR) $(LIB_IHDR)
	@mkdir -p $(@D)
	$(CC) $(UCFLAGS) -Ikmod -fPIC -c $< -o $@

$(BUILD)/lib/%.o: kmod/%.c $(LIB_HDR) $(LIB_IHDR)
	@mkdir -p $(@D)
	$(CC) $(UCFLAGS) -Ikmod -c $< -o $@

$(BUILD)/lib/%.pic.o: kmod/%.c $(LIB_HDR) $(LIB_IHDR)
	@mkdir -p $(@D)
	$(CC) $(UCFLAGS) -Ikmod -fPIC -c $< -o $@

$(LIB_A): $(LIB_OBJ)
	$(AR) rcs $@ $^

# the headers a program includes: what the library exports is what they
# declare (check-exports.sh), their structs' layout is debian/libodsm1.layout's
PUB_HDR := userlib/odsm.h userlib/odsm_deleg.h userlib/odsm_sync.h userlib/odsm_ds.h \
	userlib/odsm_spawn.h userlib/odsm_chan.h userlib/odsm_arc.h \
	userlib/odsm_tbox.h userlib/odsm_async.h

# exports only the API (userlib/libodsm.map), checked against odsm.h
$(LIB_SO): $(LIB_OBJ:.o=.pic.o) userlib/libodsm.map tools/check-exports.sh
	$(CC) $(LDFLAGS) -shared -Wl,-soname,libodsm.so.1 -Wl,--version-script=userlib/libodsm.map \
		-o $@ $(filter %.o,$^) -pthread
	@tools/check-exports.sh $@ $(PUB_HDR) || { rm -f $@; exit 1; }
	ln -sf libodsm.so.1 $(BUILD)/lib/libodsm.so

$(BUILD)/lib/odsm.pc: userlib/odsm.pc.in FORCE
	@mkdir -p $(@D)
	$(call make_pc,$<) > $@.tmp
	@cmp -s $@.tmp $@ && rm $@.tmp || mv $@.tmp $@

# ---- tools, benchmarks, examples (static: they also run in test guests) ------
# The packages link them with the shared library instead:
# TOOL_LINK="-L$(BUILD)/lib -lodsm" (debian/rules).
TOOL_LINK ?= -static $(LIB_A)

tools: $(TOOLS)

# One rule for every tool.  Its source: $(call tool_src,NAME), the NAME.c
# of TOOL_SRC (second expansion: the stem is known only per target).
# libodsm.a adds only what a tool calls (odsm-kvs and odsm-rbench speak
# the raw ioctls and take nothing from it).
tool_src = $(foreach s,$(TOOL_SRC),$(if $(filter $(1).c,$(notdir $(s))),$(s)))
.SECONDEXPANSION:
$(TOOLS): $(BUILD)/bin/%: $$(call tool_src,$$*) $(LIB_A) $(if $(findstring -lodsm,$(TOOL_LINK)),$(LIB_SO)) \
		$(LIB_HDR)
	@mkdir -p $(@D)
	$(CC) $(UCFLAGS) $(LDFLAGS) -o $@ $(filter %.c,$^) $(TOOL_LINK)

$(HBENCH): tools/bench/odsm-hbench.c tools/bench/bench.h $(LIB_A) $(LIB_HDR) $(LIB_IHDR)
	@mkdir -p $(@D)
	$(CC) $(UCFLAGS) $(LDFLAGS) -o $@ $< -static $(LIB_A)

# odsmctl's configuration file parser (pure logic: host-tested, conf_test)
CONF_SRC := tools/odsmctl/odsm_conf.c
$(BUILD)/bin/odsmctl $(BUILD)/tests/host/conf_test: $(CONF_SRC) tools/odsmctl/odsm_conf.h
# its counters' groups and formats (pure logic: host-tested, statfmt_test,
# which also runs odsmctl on a fake sysfs tree)
STATFMT_SRC := tools/odsmctl/odsm_statfmt.c
$(BUILD)/bin/odsmctl $(BUILD)/tests/host/statfmt_test: $(STATFMT_SRC) tools/odsmctl/odsm_statfmt.h
$(BUILD)/tests/host/statfmt_test: UCFLAGS += -DODSM_SRCDIR='"$(CURDIR)"' \
	-DODSM_ODSMCTL='"$(abspath $(BUILD))/bin/odsmctl"'

# the data structures' cost model and chooser (pure logic: ds_model_test)
$(BUILD)/tests/host/ds_model_test: userlib/odsm_ds_model.c userlib/odsm_ds.h userlib/odsm_ds_int.h \
	userlib/odsm_deleg.h

# tied allocation's arena logic (pure: tbox_test)
$(BUILD)/tests/host/tbox_test: userlib/odsm_tbox_arena.c userlib/odsm_tbox.h userlib/odsm_tbox_int.h

# the benchmarks' shared helpers
$(patsubst tools/bench/%.c,$(BUILD)/bin/%,$(wildcard tools/bench/*.c)): tools/bench/bench.h

# ---- tests ------------------------------------------------------------------
tests: $(HOST_TESTS) $(LIB_TESTS) $(VM_TESTS) $(CLUSTER_TESTS) $(RDMA_TESTS) $(FUZZERS) $(HBENCH)

$(BUILD)/bin/odsm-%: selftests/fuzz/odsm_%.c $(wildcard selftests/fuzz/*.h) selftests/vm/uring_raw.h \
		$(wildcard selftests/cluster/fake_peer.h) $(LIB_HDR)
	@mkdir -p $(@D)
	$(CC) $(UCFLAGS) -Iselftests/cluster -static -pthread -o $@ $<

$(KSFT)/kselftest_harness.h:
	@test -f /usr/src/linux-source-6.1.tar.xz || \
		{ echo "no linux-source-6.1: run 'make setup'" >&2; exit 1; }
	@mkdir -p $(KSFT)
	tar -C $(KSFT) -xJf /usr/src/linux-source-6.1.tar.xz --strip-components=4 \
		--wildcards 'linux-source-6.1/tools/testing/selftests/kselftest*.h'
	@touch $@

$(BUILD)/tests/host/%: selftests/host/%.c $(wildcard selftests/host/*.h) $(CORE_SRC) $(CORE_HDR) $(wildcard userlib/*.h) \
		$(KSFT)/kselftest_harness.h
	@mkdir -p $(@D)
	$(CC) $(UCFLAGS) -I$(KSFT) -Ikmod -Itools/odsmctl -fsanitize=address,undefined \
		-fno-sanitize-recover=all -o $@ $(filter %.c,$^)

# make bench's summary, CSV and plots on a saved bench output (a script:
# the source tree's path baked in, as the host suite runs it from anywhere)
$(BUILD)/tests/host/bench_report_test: selftests/bench/bench_report_test.sh \
		selftests/bench/bench-output.txt tools/bench-report.sh tools/bench-plots.sh \
		selftests/tools/tap-lib.sh
	@mkdir -p $(@D)
	sed 's|@SRCDIR@|$(CURDIR)|' $< >$@.tmp && chmod +x $@.tmp && mv $@.tmp $@

# the progress lines of make check and make bench (tools/progress-lib.sh)
$(BUILD)/tests/host/progress_test: selftests/tools/progress_test.sh tools/progress-lib.sh \
		selftests/tools/tap-lib.sh
	@mkdir -p $(@D)
	sed 's|@SRCDIR@|$(CURDIR)|' $< >$@.tmp && chmod +x $@.tmp && mv $@.tmp $@

# make check's judgement of a failed guest run (tools/check-lib.sh)
$(BUILD)/tests/host/checklib_test: selftests/tools/checklib_test.sh tools/check-lib.sh \
		tools/progress-lib.sh selftests/tools/tap-lib.sh
	@mkdir -p $(@D)
	sed 's|@SRCDIR@|$(CURDIR)|' $< >$@.tmp && chmod +x $@.tmp && mv $@.tmp $@

# the library's sources compiled in, their ioctl() answered by the fake
$(BUILD)/tests/lib/%: selftests/lib/%.c $(wildcard selftests/lib/*.h) $(LIB_SRC) $(LIB_HDR) \
		$(LIB_IHDR) selftests/host/ksft_host.h $(KSFT)/kselftest_harness.h
	@mkdir -p $(@D)
	$(CC) $(UCFLAGS) -I$(KSFT) -Iselftests/host -Ikmod -fsanitize=address,undefined \
		-fno-sanitize-recover=all -pthread -Dioctl=fake_ioctl \
		-Wl,--wrap=odsm__check -o $@ $< $(LIB_SRC)

$(BUILD)/tests/vm/%: selftests/vm/%.c $(wildcard selftests/vm/*.h) selftests/lib/check_capture.h \
		$(LIB_A) $(LIB_HDR) \
		$(KSFT)/kselftest_harness.h
	@mkdir -p $(@D)
	$(CC) $(UCFLAGS) -I$(KSFT) -static -pthread -o $@ $< $(LIB_A)

$(BUILD)/tests/cluster/%: selftests/cluster/%.c $(wildcard selftests/cluster/*.h) selftests/host/json_check.h \
		$(LIB_A) $(LIB_HDR) $(KSFT)/kselftest_harness.h
	@mkdir -p $(@D)
	$(CC) $(UCFLAGS) -I$(KSFT) -static -pthread -o $@ $< $(LIB_A)

$(BUILD)/tests/rdma/%: selftests/rdma/%.c $(LIB_A) $(LIB_HDR)
	@mkdir -p $(@D)
	$(CC) $(UCFLAGS) -pthread -o $@ $< $(LIB_A) -lrdmacm -libverbs

check: setup
	@tools/check.sh

# the VM suites on a kernel with KASAN and lockdep, built once into
# /var/cache/odsm/debug-kernel (tools/debug-kernel/build.sh, ~20 minutes);
# its guests are several times slower, so it is not part of check
check-debug: setup
	@tools/setup.sh --debug-kernel
	@tools/check-debug.sh

demo: setup
	@tools/demo.sh

bench: setup
	@tools/bench.sh

# the plots of Documentation/odsm/ (testing.rst), drawn again from the last
# make bench's figures (BENCH_CSV=FILE: from another run's)
BENCH_CSV ?= $(BUILD)/bench/results.csv
bench-plots:
	@tools/bench-plots.sh $(BENCH_CSV) Documentation/odsm

# the fuzzers in debug-booted guests, for FUZZ_SECS seconds (tools/fuzz/run.sh)
fuzz: setup
	@tools/fuzz/run.sh

# the coherence protocol's Promela model and its mutants (make check too)
model:
	@tools/model-check.sh

# checkpatch.pl from the linux-source package, on the kernel-side files
checkpatch: $(BUILD)/lsrc/scripts/checkpatch.pl
	perl $< --no-tree --strict --terse -f kmod/*.c kmod/*.h uapi/linux/odsm.h uapi/linux/odsm_deleg.h

$(BUILD)/lsrc/scripts/checkpatch.pl:
	@mkdir -p $(BUILD)/lsrc
	tar -C $(BUILD)/lsrc -xJf /usr/src/linux-source-6.1.tar.xz --strip-components=1 \
		--wildcards 'linux-source-6.1/scripts/checkpatch.pl' \
		'linux-source-6.1/scripts/spelling.txt' \
		'linux-source-6.1/scripts/const_structs.checkpatch'

# Install the library, headers, odsmctl and the module for KVER.  LIBDIR
# is where the library and pkgconfig/ go (the packages: the multiarch one).
PREFIX	?= /usr/local
LIBDIR	?= $(PREFIX)/lib
make_pc = sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$(LIBDIR)|' \
	      -e 's|@VERSION@|$(VERSION)|' $(1)
install: install-lib lib tools module
	install -D -m 755 $(BUILD)/bin/odsmctl $(DESTDIR)$(PREFIX)/bin/odsmctl
	install -D -m 644 $(MODULE) $(DESTDIR)/lib/modules/$(KVER)/extra/odsm.ko
	$(if $(DESTDIR),,depmod -a $(KVER))

# the library's part of it (the packages install this alone)
install-lib: lib
	install -D -m 644 $(LIB_A) $(DESTDIR)$(LIBDIR)/libodsm.a
	install -D -m 755 $(LIB_SO) $(DESTDIR)$(LIBDIR)/libodsm.so.1
	ln -sf libodsm.so.1 $(DESTDIR)$(LIBDIR)/libodsm.so
	install -D -m 644 userlib/odsm.h $(DESTDIR)$(PREFIX)/include/odsm.h
	install -D -m 644 userlib/odsm_deleg.h $(DESTDIR)$(PREFIX)/include/odsm_deleg.h
	install -D -m 644 userlib/odsm_sync.h $(DESTDIR)$(PREFIX)/include/odsm_sync.h
	install -D -m 644 userlib/odsm_ds.h $(DESTDIR)$(PREFIX)/include/odsm_ds.h
	install -D -m 644 userlib/odsm_spawn.h $(DESTDIR)$(PREFIX)/include/odsm_spawn.h
	install -D -m 644 userlib/odsm_chan.h $(DESTDIR)$(PREFIX)/include/odsm_chan.h
	install -D -m 644 userlib/odsm_arc.h $(DESTDIR)$(PREFIX)/include/odsm_arc.h
	install -D -m 644 userlib/odsm_tbox.h $(DESTDIR)$(PREFIX)/include/odsm_tbox.h
	install -D -m 644 userlib/odsm_async.h $(DESTDIR)$(PREFIX)/include/odsm_async.h
	install -D -m 644 uapi/linux/odsm.h $(DESTDIR)$(PREFIX)/include/linux/odsm.h
	install -D -m 644 uapi/linux/odsm_deleg.h $(DESTDIR)$(PREFIX)/include/linux/odsm_deleg.h
	install -d $(DESTDIR)$(LIBDIR)/pkgconfig
	$(call make_pc,userlib/odsm.pc.in) > $(DESTDIR)$(LIBDIR)/pkgconfig/odsm.pc

print-version:
	@echo $(VERSION)

print-pub-headers:
	@echo $(PUB_HDR)

# ---- DKMS and packages ------------------------------------------------------
# The module's source as DKMS builds it (dkms.conf says how), in
# $(DESTDIR)/usr/src/odsm-$(VERSION); the odsm-dkms package ships it.
DKMS_SRC = $(DESTDIR)/usr/src/odsm-$(VERSION)
dkms-src:
	install -d $(DKMS_SRC)/kmod $(DKMS_SRC)/uapi/linux
	install -m 644 Kbuild $(DKMS_SRC)/
	install -m 644 kmod/Kbuild kmod/*.c kmod/*.h $(DKMS_SRC)/kmod/
	install -m 644 uapi/linux/odsm.h uapi/linux/odsm_deleg.h $(DKMS_SRC)/uapi/linux/
	sed -e 's/#MODULE_VERSION#/$(VERSION)/' dkms.conf > $(DKMS_SRC)/dkms.conf

# Register with DKMS and build and install for every kernel with headers;
# DKMS rebuilds it for each kernel installed later.  Root.
# A version registered already is removed first: dkms would keep its
# built module ("already installed") although the sources changed.
dkms-install: dkms-src
	! dkms status -m odsm -v $(VERSION) | grep -q . || dkms remove -m odsm -v $(VERSION) --all
	dkms add -m odsm -v $(VERSION)
	for b in /lib/modules/*/build; do \
		[ -d "$$b" ] || continue; \
		k=$${b#/lib/modules/}; k=$${k%/build}; \
		dkms install -m odsm -v $(VERSION) -k "$$k" || exit 1; \
	done

dkms-uninstall:
	! dkms status -m odsm -v $(VERSION) | grep -q . || dkms remove -m odsm -v $(VERSION) --all
	rm -rf /usr/src/odsm-$(VERSION)

# odsm-dkms, libodsm1, libodsm-dev, odsm-tools in build/deb/
deb:
	@tools/mkdeb.sh $(VERSION)

clean:
	rm -rf $(BUILD)

FORCE:
