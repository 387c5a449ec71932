/*
 * objects.c -- heapprof_objects(): does this machine hold the debug info
 * that turns "postgres+0x..." labels into names, lines and inline frames?
 *
 * The objects that matter are the server's executable and the libraries it
 * loaded from its pkglibdir (extensions, PL handlers), as loaded in the
 * calling backend.  Only local files are looked at: the server never asks
 * the network (pg_heapprof and heapprof-report can, with debuginfod).
 */
#include "postgres.h"

#include <link.h>

#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"

#include "compat.h"
#include "objects.h"
#include "sqltext.h"
#include "engine/debuginfo.h"

#define MAX_OBJECTS 256

PG_FUNCTION_INFO_V1(heapprof_objects);

typedef struct object_list
{
	const char *paths[MAX_OBJECTS];
	int			n;
} object_list;

/* dl_iterate_phdr runs this under the loader's lock: it only takes pointers */
static int
add_object(struct dl_phdr_info *info, size_t size, void *arg)
{
	object_list *list = arg;
	size_t		len = strlen(pkglib_path);

	if (list->n < MAX_OBJECTS && strncmp(info->dlpi_name, pkglib_path, len) == 0 &&
		info->dlpi_name[len] == '/')
		list->paths[list->n++] = info->dlpi_name;
	return 0;
}

/* The objects and what was found for each, in *info (palloc'ed); how many. */
static int
probe_objects(const char ***paths, hp_debuginfo **info)
{
	object_list *list = palloc(sizeof(*list));
	int			n = 0;

	list->paths[0] = my_exec_path;
	list->n = 1;
	dl_iterate_phdr(add_object, list);
	*paths = palloc(sizeof(char *) * list->n);
	*info = palloc(sizeof(hp_debuginfo) * list->n);
	for (int i = 0; i < list->n; i++)
		if (hp_debuginfo_probe(list->paths[i], &(*info)[n]))
			(*paths)[n++] = pstrdup(list->paths[i]);
	pfree(list);
	return n;
}

static const char *
base_name(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

/* Debian's release name, for the debug archive's line; NULL elsewhere. */
static char *
debian_codename(void)
{
	FILE	   *f = fopen("/etc/os-release", "r");
	char		line[256];
	char	   *name = NULL;
	bool		debian = false;

	if (f == NULL)
		return NULL;
	while (fgets(line, sizeof(line), f))
	{
		line[strcspn(line, "\n")] = '\0';
		if (strcmp(line, "ID=debian") == 0)
			debian = true;
		else if (strncmp(line, "VERSION_CODENAME=", 17) == 0 && name == NULL &&
				 line[17 + strspn(line + 17, "abcdefghijklmnopqrstuvwxyz")] == '\0' && line[17])
			name = pstrdup(line + 17);
	}
	fclose(f);
	return debian ? name : NULL;
}

Datum
hpg_missing_debug_info(const char **hint)
{
	const char **paths;
	hp_debuginfo *info;
	int			n = probe_objects(&paths, &info);
	ArrayBuildState *names = initArrayResult(TEXTOID, CurrentMemoryContext, false);
	StringInfoData list;
	StringInfoData refused;
	int			first = -1;
	bool		server = false;
	bool		self = false;
	char	   *codename;
	const char *package;

	initStringInfo(&list);
	initStringInfo(&refused);
	for (int i = 0; i < n; i++)
	{
		if (info[i].found)
			continue;
		/* a debug file of another build is there: said, so that it is replaced */
		if (info[i].refused)
			appendStringInfo(&refused, " Debug file for %s refused: %s (%s).", base_name(paths[i]),
							 info[i].refused, info[i].refused_file);
		accumArrayResult(names, HpgTextDatum(base_name(paths[i])), false, TEXTOID,
						 CurrentMemoryContext);
		appendStringInfo(&list, "%s%s", list.len ? ", " : "", base_name(paths[i]));
		if (first < 0)
			first = i;
		server |= i == 0;
		self |= strcmp(base_name(paths[i]), "heapprof.so") == 0;
	}
	*hint = NULL;
	if (first >= 0)
	{
		/* Debian's layout: /usr/lib/postgresql/MAJOR/bin/postgres */
		codename = server && strncmp(my_exec_path, "/usr/lib/postgresql/", 20) == 0 ? debian_codename() : NULL;
		if (codename)
			package = psprintf("postgresql-%s-dbgsym from Debian's debug archive "
							   "(deb http://deb.debian.org/debian-debug %s-debug main)",
							   PG_MAJORVERSION, codename);
		else if (server)
			package = "the server's debug symbols (its -dbgsym or -debuginfo package)";
		else
			package = "their debug symbols (the extensions' -dbgsym or -debuginfo packages)";
		*hint = psprintf("No debug info for %s: reports label their code by address (%s+0x...). "
						 "Install %s%s; heapprof looks for %s (heapprof_objects() lists every object), "
						 "or symbolize on a client with debuginfod (heapprof-report, pg_heapprof).%s",
						 list.data, base_name(paths[first]), package,
						 self ? psprintf(", and for heapprof.so postgresql-%s-heapprof-dbgsym "
										 "(make deb builds it next to postgresql-%s-heapprof)",
										 PG_MAJORVERSION, PG_MAJORVERSION) : "",
						 info[first].file[0] ? info[first].file : "a .gnu_debuglink or /usr/lib/debug file",
						 refused.data);
	}
	return makeArrayResult(names, CurrentMemoryContext);
}

/* heapprof_objects(): object, build_id, debug_info, debug_file */
Datum
heapprof_objects(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	const char **paths;
	hp_debuginfo *info;
	int			n;

	InitMaterializedSRF(fcinfo, 0);
	n = probe_objects(&paths, &info);
	for (int i = 0; i < n; i++)
	{
		Datum		values[4];
		bool		nulls[4] = {0};

		values[0] = HpgTextDatum(paths[i]);
		values[1] = CStringGetTextDatum(info[i].build_id);
		nulls[1] = info[i].build_id[0] == '\0';
		values[2] = BoolGetDatum(info[i].found);
		values[3] = HpgTextDatum(info[i].file);
		nulls[3] = info[i].file[0] == '\0';
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}

