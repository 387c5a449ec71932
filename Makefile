# heapprof -- jemalloc heap profiling from SQL (PGXS build)
#
#   make && make install        build and install the extension
#   tests/run                   the whole test suite (see README)

MODULE_big = heapprof
EXTENSION  = heapprof
DATA       = heapprof--1.0.sql
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

PG_CPPFLAGS = -I$(srcdir)/src -isystem $(shell $(PG_CONFIG) --includedir-server) -DHEAPPROF_JEMALLOC_SO='"$(JEMALLOC_SO)"'
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

# PGXS tracks no header dependencies; a changed struct must rebuild its users.
HEADERS_ALL = $(wildcard $(srcdir)/src/*.h $(srcdir)/src/engine/*.h $(srcdir)/src/pg/*.h)
$(OBJS) src/cli/heapprof-report.o: $(HEADERS_ALL)

# heapprof-report: the engine as an offline command (same objects, no server).
REPORT = heapprof-report
all: $(REPORT)
$(REPORT): src/cli/heapprof-report.o src/fold_names.o $(ENGINE_OBJS)
	$(CC) $(CFLAGS) $^ $(LDFLAGS) -ldw -lelf -lz -lm -o $@

# pg_heapprof: the libpq client; --merge renders with the engine's graph and renderers.
CLIENT = pg_heapprof
CLIENT_ENGINE = $(ENGINE_OBJS)
all: $(CLIENT)
$(CLIENT): src/cli/pg_heapprof.c $(CLIENT_ENGINE) $(HEADERS_ALL)
	$(CC) $(CFLAGS) -I$(srcdir)/src -I$(includedir) $< $(CLIENT_ENGINE) $(LDFLAGS) -L$(libdir) -lpq -ldw -lelf -lz -lm -pthread -o $@

install: install-report
install-report: $(REPORT) $(CLIENT)
	$(INSTALL_PROGRAM) $(REPORT) '$(DESTDIR)$(bindir)/$(REPORT)'
	$(INSTALL_PROGRAM) $(CLIENT) '$(DESTDIR)$(bindir)/$(CLIENT)'
uninstall: uninstall-report
uninstall-report:
	rm -f '$(DESTDIR)$(bindir)/$(REPORT)' '$(DESTDIR)$(bindir)/$(CLIENT)'
EXTRA_CLEAN = $(REPORT) $(CLIENT) src/cli/heapprof-report.o src/engine/build
.PHONY: install-report uninstall-report check-ubsan

# The regression suite over an UndefinedBehaviorSanitizer build (see the test).
check-ubsan:
	HP_TOP=$(CURDIR) bash tests/t_ubsan.sh
