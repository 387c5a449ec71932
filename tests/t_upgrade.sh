#!/usr/bin/env bash
# t_upgrade.sh -- a 1.0, 1.1, 1.2 or 1.3 database updated equals a fresh install
# (cluster (a)):
#  - the installed released scripts (heapprof--1.0.sql, heapprof--1.0--1.1.sql,
#    heapprof--1.1--1.2.sql, heapprof--1.2--1.3.sql) are the released ones, byte for byte (SHA-256 pinned here, and the release
#    commit's blob when HP_TOP is a git checkout): a released script is never
#    edited, every change is a new update script;
#  - every version the control file can reach has an update path from 1.0;
#  - in one database CREATE EXTENSION heapprof VERSION '1.0', then ALTER
#    EXTENSION heapprof UPDATE; in one the same from 1.1, in one from 1.2
#    (a workflow holder keeps its grants, and heapprof_grant(role) answers
#    with the workflows); in another a fresh CREATE EXTENSION heapprof;
#    then the catalogs are compared: the extension (version, schema,
#    requires, configuration tables), its members, functions with full
#    signatures, result types, language, symbol, volatility, strictness,
#    parallel safety, security, search_path, ACLs and comments, types'
#    attributes, tables' columns, ACLs and indexes, pg_init_privs -- equal,
#    or the difference is printed;
#  - a 1.0 database keeps working with the new library until it is updated
#    (heapprof_status() through its 1.0 entry point).
# Under tests/run with HP_FROM_PACKAGE=1 the scripts are the Debian package's,
# so this also proves that the package ships the update script.
set -euo pipefail
# every released script, the commit it was released in and its SHA-256:
# released scripts are never edited, every change is a new update script
released="heapprof--1.0.sql 7f8ab3f0cddcf049ab687d98c44afdc3913c18b9 b660d19cf92d49e7eb42e30cc553d35bacb1f748097a59c58f7df98be5bd6a7d
heapprof--1.0--1.1.sql 4680a73 1bab6e3e018e6ad09a06308e394436bb3afe23a4a16cf31672a3ee5b9c320540
heapprof--1.1--1.2.sql d28c18d 9b99f8c9219d59e7bd1f3ae894b849b729f3e88c9525d053f55aac6a9b2c432f
heapprof--1.2--1.3.sql e2657da 88dc9ceed520bf9ebc50e059a46c20734496df394add8dc820a1ac74788b0a12"
. "${HP_TOP:=$(cd "$(dirname "$0")/.." && pwd)}/tests/lib.sh"
w=$(scratch)
cleanup() {
	q -c "DROP DATABASE IF EXISTS hp_up_old" -c "DROP DATABASE IF EXISTS hp_up_mid" \
	  -c "DROP DATABASE IF EXISTS hp_up_12" -c "DROP DATABASE IF EXISTS hp_up_13" \
	  -c "DROP DATABASE IF EXISTS hp_up_new" -c "DROP ROLE IF EXISTS hp_up_role" \
	  -c "DROP ROLE IF EXISTS hp_up_role2" >/dev/null 2>&1 || true
	[ -n "${HP_KEEP:-}" ] && cp "$w/fresh" "$HP_KEEP"
}
at_exit cleanup

ext=$("${PG_CONFIG:-pg_config}" --sharedir)/extension
installed=$ext/heapprof--1.0.sql
while read -r script commit sum; do
	[ -f "$ext/$script" ] || fail "no $ext/$script"
	[ "$(sha256sum <"$ext/$script" | cut -d' ' -f1)" = "$sum" ] ||
		fail "$ext/$script is not the released one (SHA-256 differs): put the change in an update script"
	if git -C "$HP_TOP" rev-parse --git-dir >/dev/null 2>&1; then
		git -C "$HP_TOP" show "$commit:$script" >"$w/released.sql" ||
			fail "the release commit $commit is not in $HP_TOP's history"
		cmp -s "$w/released.sql" "$ext/$script" || fail "$ext/$script differs from $commit:$script"
	fi
done <<<"$released"
release=7f8ab3f0cddcf049ab687d98c44afdc3913c18b9
default=$(sed -n "s/^default_version = '\(.*\)'/\1/p" "$ext/heapprof.control")

q -c "CREATE DATABASE hp_up_old" -c "CREATE DATABASE hp_up_mid" -c "CREATE DATABASE hp_up_12" -c "CREATE DATABASE hp_up_13" \
	-c "CREATE DATABASE hp_up_new" >/dev/null
# a DBA's grant on a function the update changes survives it
q -c "CREATE ROLE hp_up_role" -c "CREATE ROLE hp_up_role2" >/dev/null
DB=hp_up_old q -c "CREATE EXTENSION heapprof VERSION '1.0'" \
	-c "GRANT EXECUTE ON FUNCTION heapprof_status(integer) TO hp_up_role" >/dev/null
[ "$(DB=hp_up_old q -c "SELECT extversion FROM pg_extension WHERE extname = 'heapprof'")" = 1.0 ] ||
	fail "CREATE EXTENSION heapprof VERSION '1.0' did not install 1.0"
# the new library serves a database still at 1.0
r=$(DB=hp_up_old q -c "SELECT count(*) FROM heapprof_status()" 2>&1) && [ "$r" = 1 ] ||
	fail "heapprof_status() of a 1.0 database with the new library: $r"
paths=$(DB=hp_up_old q -c "SELECT target FROM pg_extension_update_paths('heapprof')
	WHERE source = '1.0' AND path IS NULL AND target <> '1.0'")
[ -z "$paths" ] || fail "no update path from 1.0 to: $paths"
# the client asks a 1.0 server for what 1.0 has, and names what it lacks
"$HP_TOP/pg_heapprof" -d hp_up_old --backend-type checkpointer --merge --report top >/dev/null 2>&1 ||
	fail "pg_heapprof --merge against a 1.0 database"
r=$("$HP_TOP/pg_heapprof" -d hp_up_old --backend-type checkpointer --merge --group-by query 2>&1) &&
	fail "--group-by against a 1.0 database succeeded: $r"
grep -q 'needs heapprof 1.2 on the server; database "hp_up_old" has 1.0' <<<"$r" &&
	grep -q 'ALTER EXTENSION heapprof UPDATE' <<<"$r" || fail "--group-by against 1.0: $r"
DB=hp_up_old q -c "ALTER EXTENSION heapprof UPDATE" >/dev/null
[ "$(DB=hp_up_old q -c "SELECT has_function_privilege('hp_up_role', 'heapprof_status(integer)', 'EXECUTE')")" = t ] ||
	fail "the update lost a DBA's grant on heapprof_status()"
DB=hp_up_old q -c "REVOKE EXECUTE ON FUNCTION heapprof_status(integer) FROM hp_up_role" >/dev/null
# 1.2 re-creates the reports (an argument's name changed): a DBA's own grant
# and a workflow holder's survive, and the holder gets what 1.2 adds; so do a
# grant to PUBLIC and one made by a holder of the grant option, by that holder
DB=hp_up_mid q -c "CREATE EXTENSION heapprof VERSION '1.1'" \
	-c "GRANT EXECUTE ON FUNCTION heapprof_top TO hp_up_role WITH GRANT OPTION" \
	-c "GRANT EXECUTE ON FUNCTION heapprof_dump_text TO PUBLIC" \
	-c "SET ROLE hp_up_role" -c "GRANT EXECUTE ON FUNCTION heapprof_top TO hp_up_role2" -c "RESET ROLE" \
	-c "SELECT count(*) FROM heapprof_grant('hp_up_role', 'history')" -c "ALTER EXTENSION heapprof UPDATE" >/dev/null
[ "$(DB=hp_up_mid q -c "SELECT string_agg(a.grantor::regrole || '>' || a.grantee::regrole, ' ' ORDER BY p.proname, 2)
	FROM pg_proc p, aclexplode(p.proacl) a
	WHERE p.proname IN ('heapprof_top', 'heapprof_dump_text') AND a.grantee IN (0, 'hp_up_role2'::regrole)")" = \
	"postgres>- hp_up_role>hp_up_role2" ] ||
	fail "1.1 -> 1.2 lost a grant to PUBLIC, or made a grant by a holder of the grant option the owner's"
DB=hp_up_mid q -c "REVOKE EXECUTE ON FUNCTION heapprof_dump_text FROM PUBLIC" >/dev/null
[ "$(DB=hp_up_mid q -c "SELECT string_agg(has_function_privilege('hp_up_role', oid, p)::text, '|' ORDER BY o)
	FROM (VALUES (1, 'heapprof_top', 'EXECUTE WITH GRANT OPTION'), (2, 'heapprof_dump_flamegraph', 'EXECUTE'),
	             (3, 'heapprof_stored', 'EXECUTE'), (4, 'heapprof_dump_pprof', 'EXECUTE')) v(o, f, p)
	JOIN pg_proc ON proname = f")" = "true|true|true|false" ] ||
	fail "1.1 -> 1.2 lost a grant on a re-created report or did not give a workflow holder heapprof_stored()"
DB=hp_up_mid q -c "REVOKE ALL ON FUNCTION heapprof_top FROM hp_up_role CASCADE" \
	-c "SELECT count(*) FROM heapprof_revoke('hp_up_role')" >/dev/null
# 1.3 replaces heapprof_grant() in place: a workflow holder keeps its grants,
# and the role alone answers with the workflows
DB=hp_up_12 q -c "CREATE EXTENSION heapprof VERSION '1.2'" \
	-c "SELECT count(*) FROM heapprof_grant('hp_up_role', 'own')" -c "ALTER EXTENSION heapprof UPDATE" >/dev/null
[ "$(DB=hp_up_12 q -c "SELECT has_function_privilege('hp_up_role', 'heapprof_enable(integer)', 'EXECUTE')")" = t ] ||
	fail "1.2 -> 1.3 lost a workflow holder's grant"
r=$(DB=hp_up_12 q -c "SELECT heapprof_grant('hp_up_role')" 2>&1) && fail "heapprof_grant(role) granted: $r"
grep -q "no heapprof workflow given" <<<"$r" && grep -q "own (profile one's own sessions), leaks" <<<"$r" &&
	grep -q "heapprof_grant('hp_up_role', 'own')" <<<"$r" || fail "heapprof_grant(role) after 1.2 -> 1.3: $r"
DB=hp_up_12 q -c "SELECT count(*) FROM heapprof_revoke('hp_up_role')" >/dev/null
# 1.4 adds the heap history: a holder of the history workflow gets its
# functions; the monitor workflow is new
DB=hp_up_13 q -c "CREATE EXTENSION heapprof VERSION '1.3'" \
	-c "SELECT count(*) FROM heapprof_grant('hp_up_role', 'history')" -c "ALTER EXTENSION heapprof UPDATE" >/dev/null
[ "$(DB=hp_up_13 q -c "SELECT has_function_privilege('hp_up_role', 'heapprof_growth(interval, boolean, bigint, text)', 'EXECUTE')")" = t ] ||
	fail "1.3 -> 1.4 did not give a history workflow holder heapprof_growth()"
[ "$(DB=hp_up_13 q -c "SELECT count(*) FROM heapprof_grant('hp_up_role2', 'monitor')")" -ge 4 ] ||
	fail "the monitor workflow after 1.3 -> 1.4"
DB=hp_up_13 q -c "SELECT count(*) FROM heapprof_revoke('hp_up_role')" -c "SELECT count(*) FROM heapprof_revoke('hp_up_role2')" >/dev/null
DB=hp_up_new q -c "CREATE EXTENSION heapprof" >/dev/null

# everything an install leaves in the catalog, one line per fact, sorted;
# no oids, which differ between the databases
cat >"$w/catalog.sql" <<'SQL'
WITH x AS (SELECT * FROM pg_extension WHERE extname = 'heapprof'),
m AS (SELECT d.classid, d.objid, d.objsubid FROM pg_depend d, x
      WHERE d.refclassid = 'pg_extension'::regclass AND d.refobjid = x.oid AND d.deptype = 'e')
SELECT 'extension ' || extversion || ' schema ' || extnamespace::regnamespace || ' relocatable ' || extrelocatable
       || ' config ' || coalesce((SELECT string_agg(c::regclass::text, ',' ORDER BY c::regclass::text)
                                   FROM unnest(extconfig) c), '-')
       || ' conditions ' || coalesce(array_to_string(extcondition, ','), '-')
FROM x
UNION ALL
SELECT 'requires ' || r.extname FROM pg_depend d, x, pg_extension r
WHERE d.classid = 'pg_extension'::regclass AND d.objid = x.oid AND d.refclassid = 'pg_extension'::regclass
  AND r.oid = d.refobjid
UNION ALL
SELECT 'member ' || pg_describe_object(classid, objid, objsubid)
       || coalesce(' comment ' || obj_description(objid, classid::regclass::name), '') FROM m
UNION ALL
SELECT 'function ' || p.oid::regprocedure || ' (' || pg_get_function_arguments(p.oid) || ') returns '
       || pg_get_function_result(p.oid) || ' kind ' || p.prokind::text || ' language ' || l.lanname
       || ' volatile ' || p.provolatile::text || ' strict ' || p.proisstrict || ' parallel ' || p.proparallel::text
       || ' secdef ' || p.prosecdef || ' leakproof ' || p.proleakproof || ' cost ' || p.procost
       || ' rows ' || p.prorows || ' config ' || coalesce(array_to_string(p.proconfig, ','), '-')
       || ' acl ' || coalesce(p.proacl::text, '-') || ' symbol ' || coalesce(p.probin, '-') || ':'
       || CASE WHEN l.lanname = 'c' THEN p.prosrc ELSE md5(p.prosrc) END
FROM m JOIN pg_proc p ON m.classid = 'pg_proc'::regclass AND p.oid = m.objid
JOIN pg_language l ON l.oid = p.prolang
UNION ALL
SELECT 'attribute ' || c.oid::regclass || '.' || a.attname || ' ' || a.attnum || ' '
       || format_type(a.atttypid, a.atttypmod) || ' notnull ' || a.attnotnull
       || coalesce(' default ' || pg_get_expr(ad.adbin, ad.adrelid), '')
FROM m JOIN pg_class c ON (m.classid = 'pg_type'::regclass AND c.reltype = m.objid AND c.relkind = 'c')
                       OR (m.classid = 'pg_class'::regclass AND c.oid = m.objid)
JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
LEFT JOIN pg_attrdef ad ON ad.adrelid = c.oid AND ad.adnum = a.attnum
UNION ALL
SELECT 'relation ' || c.oid::regclass || ' kind ' || c.relkind::text || ' acl ' || coalesce(c.relacl::text, '-')
       || coalesce(' view ' || pg_get_viewdef(c.oid), '')
FROM m JOIN pg_class c ON m.classid = 'pg_class'::regclass AND c.oid = m.objid
UNION ALL
SELECT 'index ' || pg_get_indexdef(i.indexrelid) || ' ' || coalesce(pg_get_constraintdef(k.oid), '')
FROM m JOIN pg_index i ON m.classid = 'pg_class'::regclass AND i.indrelid = m.objid
LEFT JOIN pg_constraint k ON k.conindid = i.indexrelid
UNION ALL
SELECT 'init_privs ' || pg_describe_object(ip.classoid, ip.objoid, ip.objsubid) || ' ' || ip.privtype::text
       || ' ' || ip.initprivs::text
FROM pg_init_privs ip JOIN m ON ip.classoid = m.classid AND ip.objoid = m.objid
ORDER BY 1;
SQL
DB=hp_up_old q -f "$w/catalog.sql" >"$w/updated"
DB=hp_up_mid q -f "$w/catalog.sql" >"$w/mid"
DB=hp_up_12 q -f "$w/catalog.sql" >"$w/12"
DB=hp_up_13 q -f "$w/catalog.sql" >"$w/13"
DB=hp_up_new q -f "$w/catalog.sql" >"$w/fresh"
diff -u --label "1.1 + ALTER EXTENSION UPDATE" --label "CREATE EXTENSION (fresh)" "$w/mid" "$w/fresh" ||
	fail "an updated 1.1 differs from a fresh install (above)"
diff -u --label "1.2 + ALTER EXTENSION UPDATE" --label "CREATE EXTENSION (fresh)" "$w/12" "$w/fresh" ||
	fail "an updated 1.2 differs from a fresh install (above)"
diff -u --label "1.3 + ALTER EXTENSION UPDATE" --label "CREATE EXTENSION (fresh)" "$w/13" "$w/fresh" ||
	fail "an updated 1.3 differs from a fresh install (above)"
diff -u --label "1.0 + ALTER EXTENSION UPDATE" --label "CREATE EXTENSION (fresh)" "$w/updated" "$w/fresh" ||
	fail "an updated 1.0 differs from a fresh install (above)"
[ "$(grep '^extension ' "$w/fresh")" = "extension $default schema public relocatable false config heapprof_grants conditions " ] ||
	fail "unexpected extension row: $(grep '^extension ' "$w/fresh")"
n=$(grep -c '^function ' "$w/fresh")
[ "$n" -ge 28 ] || fail "only $n functions compared"
grep -q '^requires plpgsql$' "$w/fresh" || fail "no dependency on plpgsql recorded"
echo "1.0 (the release $release, $(wc -l <"$installed") lines) + update = fresh $default: $(wc -l <"$w/fresh") catalog lines equal, $n functions"
