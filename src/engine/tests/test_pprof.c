/*
 * test_pprof.c -- the pprof renderer: gunzip its output, decode the
 * protobuf just enough (sample values, mappings, functions, strings) and
 * check them against the graph.
 */
#include "test.h"

#include <zlib.h>

static const char dump[] =
	"heap_v2/1\n"
	"@ 0x401000 0x402001 0x403001\n"
	"t*: 3: 3000 [0: 0]\n"
	"@ 0x401000 0x403001\n"
	"t*: 5: 500 [0: 0]\n"
	"@ 0x7f0000001000 0x403001\n"
	"t*: 1: 64 [0: 0]\n"
	"MAPPED_LIBRARIES:\n"
	"00400000-00401000 r--p 00000000 08:01 42 /nonexistent/prog\n"
	"00401000-00404000 r-xp 00001000 08:01 42 /nonexistent/prog\n"
	"7f0000000000-7f0000002000 r-xp 00000000 08:01 43 /nonexistent/lib.so\n"
	"7ffc00000000-7ffc00021000 rw-p 00000000 00:00 0 [stack]\n";

static const char anon_maps[] =
	"00400000-00404000 r-xp 00000000 00:00 0 \n"
	"7effff000000-7f0000002000 r-xp 00000000 00:00 0 \n";

typedef struct decoded
{
	long		samples;
	long		mappings;
	long		functions;
	long		locations;
	long long	objs;
	long long	bytes;
	bool		has_space;
	bool		has_prog;
	bool		ok;
} decoded;

static bool
varint(const unsigned char **p, const unsigned char *end, uint64_t *v)
{
	int			shift = 0;

	*v = 0;
	while (*p < end && shift < 64)
	{
		unsigned char b = *(*p)++;

		*v |= (uint64_t) (b & 0x7f) << shift;
		if (!(b & 0x80))
			return true;
		shift += 7;
	}
	return false;
}

/* One sample message: sum its values (field 2, packed). */
static bool
sample(const unsigned char *p, const unsigned char *end, decoded *d)
{
	while (p < end)
	{
		uint64_t	key, len;

		if (!varint(&p, end, &key) || (key & 7) != 2 || !varint(&p, end, &len) || len > (uint64_t) (end - p))
			return false;
		if (key >> 3 == 2)
		{
			const unsigned char *q = p;
			uint64_t	v[2];

			if (!varint(&q, p + len, &v[0]) || !varint(&q, p + len, &v[1]))
				return false;
			d->objs += (long long) v[0];
			d->bytes += (long long) v[1];
		}
		p += len;
	}
	return true;
}

static void
decode(const unsigned char *p, const unsigned char *end, decoded *d)
{
	memset(d, 0, sizeof(*d));
	while (p < end)
	{
		uint64_t	key, len;

		if (!varint(&p, end, &key))
			return;
		if ((key & 7) == 0)
		{
			if (!varint(&p, end, &len))
				return;
			continue;
		}
		if ((key & 7) != 2 || !varint(&p, end, &len) || len > (uint64_t) (end - p))
			return;
		switch (key >> 3)
		{
			case 2:
				d->samples++;
				if (!sample(p, p + len, d))
					return;
				break;
			case 3:
				d->mappings++;
				break;
			case 4:
				d->locations++;
				break;
			case 5:
				d->functions++;
				break;
			case 6:
				d->has_space |= len == 11 && memcmp(p, "inuse_space", 11) == 0;
				d->has_prog |= len == 17 && memcmp(p, "/nonexistent/prog", 17) == 0;
				break;
		}
		p += len;
	}
	d->ok = true;
}

static unsigned char *
gunzip(const char *data, size_t len, size_t *outlen)
{
	z_stream	z;
	size_t		cap = 1 << 20;
	unsigned char *out = malloc(cap);
	int			rc;

	memset(&z, 0, sizeof(z));
	inflateInit2(&z, 15 + 16);
	z.next_in = (Bytef *) data;
	z.avail_in = (uInt) len;
	z.next_out = out;
	z.avail_out = (uInt) cap;
	rc = inflate(&z, Z_FINISH);
	*outlen = cap - z.avail_out;
	inflateEnd(&z);
	if (rc != Z_STREAM_END)
	{
		free(out);
		return NULL;
	}
	return out;
}

int
main(void)
{
	t_env		env;
	hp_arena	a;
	hp_profile	p;
	hp_profile	nomaps;
	hp_located	pl;
	hp_graph	g;
	hp_buf		out;
	hp_options	o = HP_OPTIONS_DEFAULT;
	hp_symbolizer *s = hp_symbolizer_new();
	char		err[256];
	unsigned char *raw;
	size_t		rawlen;
	decoded		d;
	long long	objs = 0;
	long long	bytes = 0;

	t_env_init(&env);
	hp_arena_init(&a, &env.env);
	if (t_parse(&a, dump, &p, err, sizeof(err)) != HP_OK)
		t_fail("pprof input", "%s", err);
	/*
	 * symbolized with anonymous maps (no file is opened), "[anon]+0x..."
	 * labels; the mappings still come from the dump's
	 */
	nomaps = p;
	nomaps.maps = anon_maps;
	nomaps.maps_len = sizeof(anon_maps) - 1;
	hp_symbolize_profile(&a, s, &nomaps, &pl);
	hp_build_graph(&a, &p, &pl, NULL, NULL, &o, &g);
	hp_buf_init(&out, &a);
	hp_render_pprof(&a, &p, &pl, &g, &o, &out);
	raw = gunzip(out.data, out.len, &rawlen);
	T_CHECK("pprof is gzip", raw != NULL, "inflate failed");
	if (raw == NULL)
		return t_exit();
	decode(raw, raw + rawlen, &d);
	for (size_t k = 0; k < g.npaths; k++)
	{
		objs += hp_whole(g.paths[k].objs);
		bytes += hp_whole(g.paths[k].bytes);
	}
	T_CHECK("pprof decodes", d.ok, "malformed protobuf");
	T_CHECK("pprof sample sums", d.samples == 3 && d.objs == objs && d.bytes == bytes && bytes == 3564,
			"%ld samples, %lld objects, %lld bytes (graph %lld %lld)", d.samples, d.objs, d.bytes, objs, bytes);
	T_CHECK("pprof executable mappings", d.mappings == 2 && d.has_prog, "%ld mappings", d.mappings);
	T_CHECK("pprof a function and a location each", d.functions == (long) g.nfuncs &&
			d.locations == (long) g.nfuncs && g.nfuncs == 4, "%ld functions", d.functions);
	T_CHECK("pprof sample types", d.has_space, "no inuse_space");
	free(raw);
	hp_arena_free(&a);
	hp_symbolizer_free(s);
	return t_exit();
}
