# heapprof -- jemalloc heap profiling from SQL (PGXS build)
#
#   make && make install        build and install the extension
#   tests/run                   the whole test suite (see README)

MODULE_big = heapprof
EXTENSION  = heapprof
DATA       = heapprof--1.0.sql heapprof--1.0--1.1.sql heapprof--1.1--1.2.sql heapprof--1.2--1.3.sql heapprof--1.3--1.4.sql
PGFILEDESC = "heapprof - jemalloc heap profiling from SQL"

# The layers: the jemalloc binding and PostgreSQL's allocator names (plain C),
# the engine (src/engine: a library of plain C without PostgreSQL headers,
# see its own Makefile for its tests), then the PostgreSQL layer (src/pg).
COMMON_OBJS = src/jemalloc.o src/fold_names.o
ENGINE_OBJS = $(patsubst %.c,%.o,$(sort $(wildcard src/engine/*.c)))
PG_OBJS     = $(patsubst %.c,%.o,$(sort $(wildcard src/pg/*.c)))
OBJS        = $(COMMON_OBJS) $(ENGINE_OBJS) $(PG_OBJS)

# Named in error hints; the file jemalloc is preloaded from on this machine.
JEMALLOC_SO ?= $(firstword $(wildcard /usr/lib/*/libjemalloc.so.2 /usr/lib64/libjemalloc.so.2 /usr/lib/libjemalloc.so.2) libjemalloc.so.2)

# heapprof.control's version, which pg_heapprof --version prints.
HP_VERSION := $(shell sed -n "s/^default_version = '\(.*\)'/\1/p" $(dir $(firstword $(MAKEFILE_LIST)))heapprof.control)

PG_CPPFLAGS = -I$(srcdir)/src -isystem $(shell $(PG_CONFIG) --includedir-server) -DHEAPPROF_JEMALLOC_SO='"$(JEMALLOC_SO)"' \
	-DHEAPPROF_VERSION='"$(HP_VERSION)"'
PG_CFLAGS   = -Wall -Wextra -Wno-unused-parameter -Wno-missing-field-initializers
SHLIB_LINK  = -ldw -lelf -lz -lm -ldl

REGRESS      = control reports leaks remote permissions
REGRESS_OPTS = --dbname=heapprof_regress

# No LLVM bitcode: the JIT has nothing to gain from inlining heapprof.
override with_llvm = no

PG_CONFIG ?= pg_config
PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

# Debian's PGXS flags are gcc's; clang knows some only under other names.
ifneq (,$(findstring clang,$(CC)))
override CFLAGS := $(filter-out -fexcess-precision=standard -Wimplicit-fallthrough=3 \
	-Wno-format-truncation -Wno-stringop-truncation -Wshadow=compatible-local,$(CFLAGS)) -Wimplicit-fallthrough
endif

# owner.c's wrappers run on every palloc of a sampling process: a store and a
# jump, without the frame -fno-omit-frame-pointer would give them under clang.
src/pg/owner.o: override CFLAGS += -fomit-frame-pointer

# PGXS tracks no header dependencies; a changed struct must rebuild its users.
HEADERS_ALL = $(wildcard $(srcdir)/src/*.h $(srcdir)/src/engine/*.h $(srcdir)/src/pg/*.h $(srcdir)/src/cli/*.h)

# The command-line tools link the engine (same objects, no server) and the
# driver they share (cli_engine.c: symbolizer, debuginfod, regexes).
CLI_ENGINE = src/cli/cli_engine.o src/cli/fetch.o src/fold_names.o $(ENGINE_OBJS)

# heapprof-report: the engine as an offline command.
REPORT = heapprof-report
all: $(REPORT)
$(REPORT): src/cli/heapprof-report.o $(CLI_ENGINE)
	$(CC) $(CFLAGS) $^ $(LDFLAGS) -ldw -lelf -lz -lm -ldl -o $@

# pg_heapprof: the libpq client, in stages (see src/cli/pg_heapprof.h);
# --merge and --client-symbols render with the engine.
CLIENT = pg_heapprof
CLIENT_OBJS = $(patsubst %.c,%.o,$(addprefix src/cli/,pg_heapprof.c common.c options.c hints.c connect.c fleet.c merge.c output.c write.c))
$(CLIENT_OBJS): override CPPFLAGS += -I$(includedir)
all: $(CLIENT)
$(CLIENT): $(CLIENT_OBJS) $(CLI_ENGINE)
	$(CC) $(CFLAGS) $^ $(LDFLAGS) -L$(libdir) -lpq -ldw -lelf -lz -lm -ldl -pthread -o $@

$(OBJS) src/cli/heapprof-report.o $(CLI_ENGINE) $(CLIENT_OBJS): $(HEADERS_ALL)
src/cli/options.o: heapprof.control

install: install-report
install-report: $(REPORT) $(CLIENT)
	$(MKDIR_P) '$(DESTDIR)$(bindir)'
	$(INSTALL_PROGRAM) $(REPORT) '$(DESTDIR)$(bindir)/$(REPORT)'
	$(INSTALL_PROGRAM) $(CLIENT) '$(DESTDIR)$(bindir)/$(CLIENT)'
uninstall: uninstall-report
uninstall-report:
	rm -f '$(DESTDIR)$(bindir)/$(REPORT)' '$(DESTDIR)$(bindir)/$(CLIENT)'
EXTRA_CLEAN = $(REPORT) $(CLIENT) src/cli/*.o src/engine/build
.PHONY: install-report uninstall-report check-ubsan

# The regression suite over an UndefinedBehaviorSanitizer build (see the test).
check-ubsan:
	HP_TOP=$(CURDIR) bash tests/t_ubsan.sh

# Release archives from the tracked files as they are in the work tree.  The
# version is heapprof.control's; PGXN's META.json spells it in semver
# (1.0 -> 1.0.0) and must agree.
VERSION := $(HP_VERSION)
SEMVER  := $(VERSION)$(if $(word 3,$(subst ., ,$(VERSION))),,.0)
DIST    := heapprof-$(VERSION)
DEB_OUT ?= debs
DEB_BUILD ?= build/deb
EXTRA_CLEAN += $(DIST).tar.gz build/deb
.PHONY: dist deb

dist:
	@v=$$(sed '/"meta-spec"/,/}/d' META.json | sed -n 's/.*"version": "\(.*\)".*/\1/p' | sort -u); \
		test "$$v" = "$(SEMVER)" || \
		{ echo "META.json: the versions must be $(SEMVER) (heapprof.control says $(VERSION))" >&2; exit 1; }
	git ls-files -z | tar --null -T - --transform 's,^,$(DIST)/,' -czf $(DIST).tar.gz
	@echo "$(DIST).tar.gz"

# One postgresql-NN-heapprof per server version debian/pgversions allows and
# postgresql-server-dev-NN provides, built from the dist archive; the .debs
# land in $(DEB_OUT) (built under $(DEB_BUILD)).
deb: dist
	rm -rf '$(DEB_BUILD)' && mkdir -p '$(DEB_BUILD)' '$(DEB_OUT)'
	tar -xzf $(DIST).tar.gz -C '$(DEB_BUILD)'
	cd '$(DEB_BUILD)/$(DIST)' && dpkg-buildpackage -b -us -uc
	mv '$(DEB_BUILD)'/*.deb '$(DEB_OUT)'/
	@ls '$(DEB_OUT)'/*.deb
