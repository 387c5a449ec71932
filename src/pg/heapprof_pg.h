/*
 * heapprof_pg.h -- declarations shared by the PostgreSQL-facing files.
 */
#ifndef HEAPPROF_PG_H
#define HEAPPROF_PG_H

#include "fmgr.h"
#include "jemalloc.h"

/* Path named in hints; the Makefile finds it on the build machine. */
#ifndef HEAPPROF_JEMALLOC_SO
#define HEAPPROF_JEMALLOC_SO "libjemalloc.so.2"
#endif

#define HEAPPROF_MALLOC_CONF "prof:true,prof_active:false"

/* settings (heapprof.c defines them) */
extern int	hp_symbol_cache_limit_kb;
extern int	hp_dump_on_exit_threshold_kb;
extern int	hp_max_dumps;
extern int	hp_max_dump_bytes_kb;
extern bool hp_profile_self;

extern const char *hp_setup_hint(hpj_state state);
extern void hp_require_profiling(void);
extern void hp_check_mallctl(int rc, const char *what);

/* fold.c */
struct hp_options;
extern void hp_fold_postgres(struct hp_options *o);

/* store.c */
struct StringInfoData;
extern void hp_store_read(const char *name, struct StringInfoData *out);
extern void hp_store_register_exit(void);

/* dump.c */
extern void hp_take_dump(struct StringInfoData *out, bool identity);
extern void hp_take_remote_dump(int pid, struct StringInfoData *out);
extern bool hp_read_file(const char *path, struct StringInfoData *out, bool missing_ok);
extern int	hp_write_identity_file(const char *dump_path);
extern size_t hp_identity_text(char *buf, size_t size);
extern bool hp_write_all(int fd, const char *buf, size_t len);
extern void hp_remove_dump_files(const char *dump_path);

/* remote.c: requests to other server processes */
typedef enum hp_op
{
	HP_OP_STATUS,
	HP_OP_ENABLE,
	HP_OP_DISABLE,
	HP_OP_RESET,
	HP_OP_DUMP
} hp_op;

typedef struct hp_remote
{
	int			rc;				/* 0, a mallctl errno, or -1: profiling not usable there */
	hpj_status	status;			/* the target's, after the request (version NULL) */
	char		version[64];
} hp_remote;

extern int	hp_request_timeout_ms;
extern bool hp_remote_available(void);
extern void hp_remote_init(void);
extern void hp_publish_state(void);
extern void hp_remote_call(int pid, hp_op op, int arg, const char *path, hp_remote *out);
extern const char *hp_backend_type_of(int pid);

/* control.c */
extern void hp_check_remote(int pid, const hp_remote *r, const char *what);
extern bool hp_is_other(FunctionCallInfo fcinfo, int arg, int *pid);

#endif
