// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * test_tz_preload - liburcu-rseq-tz.so against glibc, in one process: the
 * preload answers through the interposed names, glibc through its own
 * definitions found in libc.so.6 with dlsym(). Run under LD_PRELOAD by
 * test_tz_preload.sh.
 *
 * Differential part: every zone file under the zone directory, the second
 * before, at and after each of its transitions, past the last transition
 * (the footer rule) with every change found by bisection, far past and
 * future (32-bit, 64-bit and struct tm year limits), POSIX TZ strings, TZ
 * unset, empty and invalid, TZ changed at run time, tzname/timezone/
 * daylight after tzset(), timegm() and mktime() on out-of-range fields.
 * Each comparison is every struct tm field, tm_zone by content, the return
 * value and errno. URCU_RSEQ_TZ_FULL=1 (make regtest) samples more densely
 * and adds right/ and posix/.
 *
 * Lifecycle part: readers racing TZ changes (each answer must be one of
 * the two zones' answers, byte for byte; ASan builds catch use after
 * free), fork() while threads convert and change the zone, short-lived
 * threads.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "tap.h"

#define ZONEDIR	"/usr/share/zoneinfo"

static struct {
	struct tm *(*localtime_r)(const time_t *, struct tm *);
	struct tm *(*gmtime_r)(const time_t *, struct tm *);
	struct tm *(*localtime)(const time_t *);
	struct tm *(*gmtime)(const time_t *);
	time_t (*mktime)(struct tm *);
	time_t (*timegm)(struct tm *);
	void (*tzset)(void);
} glibc;

static int full;
static int (*uses_glibc)(void);
static unsigned long nr_delegated;
static char delegated_first[4096];
static unsigned long nr_cmp, nr_bad;
static char bad_first[512];

static void note_bad(const char *what, const char *tz, long long t,
		const char *field)
{
	if (!nr_bad++)
		snprintf(bad_first, sizeof(bad_first),
			"%s TZ=%s t=%lld: %s differs", what,
			tz ? tz : "(unset)", t, field);
	if (nr_bad <= 5)
		diag("%s TZ=%s t=%lld: %s differs", what, tz ? tz : "(unset)",
			t, field);
}

#define PATTERN 0x5a

static const char *tm_diff(const struct tm *a, const struct tm *b)
{
	static const char pat[sizeof(char *)] = { PATTERN, PATTERN, PATTERN,
		PATTERN, PATTERN, PATTERN, PATTERN, PATTERN };
#define F(f) if (a->f != b->f) return #f
	F(tm_sec); F(tm_min); F(tm_hour); F(tm_mday); F(tm_mon);
	F(tm_year); F(tm_wday); F(tm_yday); F(tm_isdst); F(tm_gmtoff);
#undef F
	if (a->tm_zone == b->tm_zone)
		return NULL;
	if (!memcmp(&a->tm_zone, pat, sizeof(pat))
		|| !memcmp(&b->tm_zone, pat, sizeof(pat))
		|| !a->tm_zone || !b->tm_zone
		|| strcmp(a->tm_zone, b->tm_zone))
		return "tm_zone";
	return NULL;
}

/* One time through both localtime_r() and gmtime_r(); 0 if they agree. */
static int cmp_time(const char *tz, time_t t)
{
	struct tm a, b;
	struct tm *ra, *rb;
	int ea, eb, k, bad = 0;
	const char *d;

	for (k = 0; k < 2; k++) {
		memset(&a, PATTERN, sizeof(a));
		memset(&b, PATTERN, sizeof(b));
		errno = 0;
		ra = k ? glibc.gmtime_r(&t, &a) : glibc.localtime_r(&t, &a);
		ea = errno;
		errno = 0;
		rb = k ? gmtime_r(&t, &b) : localtime_r(&t, &b);
		eb = errno;
		nr_cmp++;
		d = NULL;
		if ((ra == NULL) != (rb == NULL))
			d = "return value";
		else if (ea != eb)
			d = "errno";
		else
			d = tm_diff(&a, &b);
		if (d) {
			note_bad(k ? "gmtime_r" : "localtime_r", tz, t, d);
			bad = 1;
		}
	}
	return bad;
}

/* glibc's local offset, DST flag and abbreviation at t, packed to compare. */
static int same_zone(time_t t1, time_t t2)
{
	struct tm a, b;

	if (!glibc.localtime_r(&t1, &a) || !glibc.localtime_r(&t2, &b))
		return 1;
	return a.tm_gmtoff == b.tm_gmtoff && a.tm_isdst == b.tm_isdst
		&& !strcmp(a.tm_zone, b.tm_zone);
}

/* t + d, clamped to time_t's range (no signed overflow). */
static time_t add_sat(time_t t, long long d)
{
	time_t r;

	if (__builtin_add_overflow(t, d, &r))
		return d > 0 ? (time_t)LLONG_MAX : (time_t)LLONG_MIN;
	return r;
}

static void cmp_around(const char *tz, time_t t)
{
	cmp_time(tz, add_sat(t, -1));
	cmp_time(tz, t);
	cmp_time(tz, add_sat(t, 1));
}

static unsigned long nr_mk, nr_mk_bad;

/*
 * Where the zone is left to glibc, both calls below are glibc's mktime(),
 * and its memory of the last answer (which decides in a fold) is one
 * variable: the second call would start from the first one's answer.
 * Bring both memories to the same answer before each.
 */
static void mk_prime(void)
{
	struct tm p = { .tm_year = 100, .tm_mday = 1 }, q = p;

	glibc.mktime(&p);
	mktime(&q);
}

/* One mktime() through glibc, then through the preload; 0 if they agree. */
static int cmp_mk_tm(const char *tz, const struct tm *in)
{
	struct tm a = *in, b = *in;
	time_t ta, tb;
	int ea, eb, shared = uses_glibc() == 1;
	const char *d = NULL;

	if (shared)
		mk_prime();
	errno = 0;
	ta = glibc.mktime(&a);
	ea = errno;
	if (shared)
		mk_prime();
	errno = 0;
	tb = mktime(&b);
	eb = errno;
	nr_mk++;
	if (ta != tb)
		d = "mktime() return value";
	else if (ea != eb)
		d = "mktime() errno";
	else if (tm_diff(&a, &b))
		d = tm_diff(&a, &b);
	if (!d)
		return 0;
	if (!nr_mk_bad++ || nr_mk_bad <= 5)
		diag("mktime TZ=%s %d-%02d-%02d %02d:%02d:%02d isdst %d: %s "
			"differs (%lld vs %lld)", tz ? tz : "(unset)",
			in->tm_year + 1900, in->tm_mon + 1, in->tm_mday,
			in->tm_hour, in->tm_min, in->tm_sec, in->tm_isdst, d,
			(long long)ta, (long long)tb);
	return 1;
}

/*
 * mktime() of the wall-clock times on both sides of a change at t (under
 * the offsets before and after it, so inside the gap or the fold), with
 * each tm_isdst, and once more with -1 after each (mktime's first guess is
 * the offset of its previous answer, which decides in a fold).
 */
static void cmp_mk_change(const char *tz, time_t t)
{
	struct tm before, after;
	time_t tb = add_sat(t, -1);
	long offs[2];
	int i, j, k;

	if (!glibc.localtime_r(&tb, &before) || !glibc.localtime_r(&t, &after))
		return;
	offs[0] = before.tm_gmtoff;
	offs[1] = after.tm_gmtoff;
	for (i = -1; i <= 1; i++) {
		for (j = 0; j < 2; j++) {
			time_t w = add_sat(add_sat(t, i), offs[j]);
			struct tm in;

			if (!glibc.gmtime_r(&w, &in))
				continue;
			for (k = -1; k <= 1; k++) {
				in.tm_isdst = k;
				cmp_mk_tm(tz, &in);
				in.tm_isdst = -1;
				cmp_mk_tm(tz, &in);
			}
		}
	}
}

/*
 * Samples [t0, t1) every step seconds; where glibc's zone changes between
 * two samples, bisects to the change and compares around it.
 */
static void scan(const char *tz, time_t t0, time_t t1, time_t step)
{
	time_t t, prev = t0;

	cmp_time(tz, t0);
	for (t = add_sat(t0, step); t < t1 && t > prev;
			prev = t, t = add_sat(t, step)) {
		cmp_time(tz, t);
		if (!same_zone(prev, t)) {
			time_t lo = prev, hi = t;

			while (hi - lo > 1) {
				time_t mid = lo + (hi - lo) / 2;

				if (same_zone(lo, mid))
					lo = mid;
				else
					hi = mid;
			}
			cmp_around(tz, hi);
			cmp_mk_change(tz, hi);
		}
	}
}

#define YEAR_SECS	31556952LL	/* 365.2425 days */

static time_t year_start(long long y)
{
	return (time_t)((y - 1970) * YEAR_SECS);
}

/* Times every zone is asked about, whatever its rules. */
static void cmp_fixed(const char *tz)
{
	static const long long edges[] = {
		0, -1, 1, INT32_MAX, INT32_MIN, (long long)INT32_MAX + 1,
		(long long)INT32_MIN - 1, UINT32_MAX, -(long long)UINT32_MAX,
		LLONG_MAX, LLONG_MIN, LLONG_MAX - 1, LLONG_MIN + 1,
		/* struct tm's year overflows int around here. */
		67768036191676799LL, 67768036191676800LL,
		67768036191676799LL - 14 * 3600, 67768036191676799LL + 14 * 3600,
		-67768040609740800LL, -67768040609740801LL,
		-67768040609740800LL + 14 * 3600, -67768040609740800LL - 14 * 3600,
		/* 10^11 days: the preload's date arithmetic changes method. */
		8640000000000000LL, -8640000000000000LL,
	};
	static const long long years[] = {
		-100000, 1, 1800, 1900, 1969, 1970, 1971, 2000, 2038, 2100, 2400,
		9999, 10000, 100000, 4999999, 5000000, 5000001, 5100000,
		1000000000LL,
	};
	size_t i;

	for (i = 0; i < sizeof(edges) / sizeof(edges[0]); i++) {
		cmp_around(tz, (time_t)edges[i]);
		cmp_around(tz, add_sat(edges[i], 12 * 3600));
		cmp_around(tz, add_sat(edges[i], -12 * 3600));
	}
	for (i = 0; i < sizeof(years) / sizeof(years[0]); i++) {
		time_t t = year_start(years[i]);

		scan(tz, t - YEAR_SECS / 2, t + YEAR_SECS,
			full ? 86400 : 15 * 86400);
	}
}

static int64_t be_read(const unsigned char *p, int n)
{
	uint64_t v = 0;
	int i;

	for (i = 0; i < n; i++)
		v = v << 8 | p[i];
	return n == 4 ? (int64_t)(int32_t)v : (int64_t)v;
}

/* The transition times of a TZif file (a small reader of its own). */
static size_t zone_transitions(const char *path, int64_t **out)
{
	FILE *f = fopen(path, "rb");
	unsigned char h[44], *buf = NULL;
	long cnt[6], skip;
	size_t n = 0, i;
	int ts = 4;

	*out = NULL;
	if (!f)
		return 0;
	if (fread(h, 1, 44, f) != 44 || memcmp(h, "TZif", 4))
		goto out;
	for (i = 0; i < 6; i++)
		cnt[i] = (long)be_read(h + 20 + 4 * i, 4);
	if (h[4] >= '2') {
		skip = cnt[3] * 5 + cnt[4] * 6 + cnt[5] + cnt[2] * 8
			+ cnt[1] + cnt[0];
		if (fseek(f, skip, SEEK_CUR) || fread(h, 1, 44, f) != 44)
			goto out;
		for (i = 0; i < 6; i++)
			cnt[i] = (long)be_read(h + 20 + 4 * i, 4);
		ts = 8;
	}
	n = cnt[3];
	buf = malloc(n * ts + 1);
	*out = malloc(sizeof(**out) * (n + 1));
	if (!buf || !*out || fread(buf, ts, n, f) != n) {
		n = 0;
		goto out;
	}
	for (i = 0; i < n; i++)
		(*out)[i] = be_read(buf + i * ts, ts);
out:
	free(buf);
	fclose(f);
	return n;
}

static void set_tz(const char *tz)
{
	if (tz)
		setenv("TZ", tz, 1);
	else
		unsetenv("TZ");
	tzset();
}

static void cmp_zone_file(const char *name, const char *path)
{
	int64_t *tr;
	size_t n, i;

	set_tz(name);
	/* Only zones with leap seconds are left to glibc. */
	if (uses_glibc() && strncmp(name, "right/", 6)) {
		if (!nr_delegated++)
			snprintf(delegated_first, sizeof(delegated_first),
				"%s", name);
	}
	n = zone_transitions(path, &tr);
	for (i = 0; i < n; i++) {
		cmp_around(name, (time_t)tr[i]);
		cmp_mk_change(name, (time_t)tr[i]);
		if (full) {
			cmp_around(name, (time_t)tr[i] - 86400);
			cmp_around(name, (time_t)tr[i] + 3600);
		}
	}
	/* The footer's rules, from the last transition on. */
	if (n)
		scan(name, (time_t)tr[n - 1], (time_t)tr[n - 1]
			+ (full ? 30 : 3) * YEAR_SECS, full ? 12 * 3600 : 86400);
	else
		scan(name, year_start(2020), year_start(2023), 86400);
	free(tr);
	cmp_fixed(name);
}

static int is_tzif(const char *path)
{
	FILE *f = fopen(path, "rb");
	char m[4];
	int ok;

	if (!f)
		return 0;
	ok = fread(m, 1, 4, f) == 4 && !memcmp(m, "TZif", 4);
	fclose(f);
	return ok;
}

static unsigned long nr_zones;

static void walk(const char *dir, const char *rel)
{
	DIR *d = opendir(dir);
	struct dirent *e;

	if (!d)
		return;
	while ((e = readdir(d))) {
		char path[4096], name[4096];

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		snprintf(name, sizeof(name), "%s%s%s", rel, *rel ? "/" : "",
			e->d_name);
		if (e->d_type == DT_DIR) {
			if (!full && !*rel && (!strcmp(e->d_name, "right")
					|| !strcmp(e->d_name, "posix")))
				continue;
			walk(path, name);
		} else if (is_tzif(path)) {
			cmp_zone_file(name, path);
			nr_zones++;
		}
	}
	closedir(d);
}

static const char *const posix_tz[] = {
	"UTC0", "JST-9", "EST5EDT,M3.2.0,M11.1.0", "CET-1CEST,M3.5.0,M10.5.0/3",
	"<+0330>-3:30", "<-03>3", "NZST-12NZDT,M9.5.0,M4.1.0/3",
	"AAA3BBB,J60/2,J300/-1:30", "AAA3BBB,59,300", "AAA3BBB,J1/0,J365/25",
	"AAA-24:59:59BBB+25,M1.1.0/0,M12.5.6/167", "ABC-14DEF-13,M1.1.0,M12.5.6",
	"ABC+5:3", "ABC5:30:15DEF4:1,M2.5.3/23:59:59,M10.1.1/0:0:1",
	"EST5EDT4,M3.2.0/-1,M11.1.0/26", "<+00>0<+01>-1,0/0,J365/25",
	"XXX5YYY", "XXX5YYY,", "AAA5BBB,M3.2.0", "AAA5BBB,M13.1.0,M11.1.0",
	"Foo/Bar", "Nonexistent/Zone", "12", "<ab>3", "ABC5:", "ABC 5",
	"ABC99999", "ABC24:60:60", "ABC-25", ":Europe/Paris", ":UTC", "America",
	"/usr/share/zoneinfo/Asia/Kolkata", "../../../../etc/localtime",
	"EST5EDT,M3.2.0,M11.1.0,junk", "AAA5BBB,J0,J1", "A", "<>",
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnop3",
};

static void cmp_posix(void)
{
	size_t i;
	unsigned long before = nr_bad, before_mk = nr_mk_bad;

	for (i = 0; i < sizeof(posix_tz) / sizeof(posix_tz[0]); i++) {
		set_tz(posix_tz[i]);
		if (uses_glibc())
			diag("TZ=%s is left to glibc", posix_tz[i]);
		scan(posix_tz[i], year_start(1960), year_start(2045),
			full ? 3600 : 7 * 86400);
		cmp_fixed(posix_tz[i]);
	}
	ok(nr_bad == before && nr_mk_bad == before_mk,
		"POSIX TZ strings agree with glibc (mktime() too)");
	before = nr_bad;
	set_tz(NULL);
	scan(NULL, year_start(2000), year_start(2002), 86400);
	cmp_fixed(NULL);
	set_tz("");
	scan("", year_start(2000), year_start(2002), 86400);
	cmp_fixed("");
	ok(nr_bad == before, "TZ unset and TZ empty agree with glibc");
}

static int tm_same(const struct tm *a, const struct tm *b)
{
	return !tm_diff(a, b);
}

/* TZ changed without tzset(): localtime_r() keeps, localtime() reloads. */
static void cmp_runtime_change(void)
{
	time_t t = 1700000000;
	struct tm a, b, *ra, *rb;
	int ok_r, ok_s, ok_g;

	set_tz("Europe/Paris");
	setenv("TZ", "Asia/Tokyo", 1);
	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	glibc.localtime_r(&t, &a);
	localtime_r(&t, &b);
	ok_r = tm_same(&a, &b) && a.tm_gmtoff == 3600;
	ok(ok_r, "localtime_r() does not reread TZ (Paris after TZ=Tokyo)");
	rb = localtime(&t);
	b = *rb;
	ra = glibc.localtime(&t);
	a = *ra;
	ok_s = tm_same(&a, &b) && b.tm_gmtoff == 9 * 3600 && ra == rb;
	ok(ok_s, "localtime() rereads TZ, in glibc's static buffer");
	rb = gmtime(&t);
	ok_g = rb == ra && !strcmp(rb->tm_zone, "GMT");
	ok(ok_g, "gmtime() shares localtime()'s buffer");
	memset(&b, 0, sizeof(b));
	localtime_r(&t, &b);
	ok(b.tm_gmtoff == 9 * 3600, "localtime_r() follows localtime()'s reload");
	/* A zone left to glibc: localtime() still fills the one buffer. */
	set_tz("XXX5YYY");
	rb = localtime(&t);
	b = *rb;
	ra = glibc.localtime(&t);
	ok(ra == rb && tm_same(ra, &b) && uses_glibc() == 1,
		"localtime() of a zone left to glibc: glibc's answer and buffer");
	setenv("TZ", "America/New_York", 1);
	memset(&b, 0, sizeof(b));
	b.tm_year = 123;
	b.tm_mday = 1;
	b.tm_isdst = -1;
	a = b;
	/* glibc's too, so that both keep the same guess for the next. */
	glibc.mktime(&a);
	ok(mktime(&b) == 1672549200, "mktime() rereads TZ");
}

/* tzname, timezone and daylight after tzset(), as glibc alone sets them. */
static void cmp_tzvars(void)
{
	static const char *const zones[] = { "Europe/Paris", "Asia/Tokyo",
		"America/New_York", "UTC", "EST5EDT,M3.2.0,M11.1.0", "JST-9",
		"Australia/Lord_Howe", "Foo/Bar", "", "Africa/Casablanca",
		"XXX5YYY", "right/Europe/Paris",
	};
	size_t i;
	int bad = 0;

	for (i = 0; i < sizeof(zones) / sizeof(zones[0]); i++) {
		char n0[64], n1[64];
		long tzo;
		int dl;

		setenv("TZ", "UTC0", 1);
		glibc.tzset();
		setenv("TZ", zones[i], 1);
		glibc.tzset();
		snprintf(n0, sizeof(n0), "%s", tzname[0]);
		snprintf(n1, sizeof(n1), "%s", tzname[1]);
		tzo = timezone;
		dl = daylight;
		set_tz("UTC0");
		set_tz(zones[i]);
		if (strcmp(n0, tzname[0]) || strcmp(n1, tzname[1])
			|| tzo != timezone || dl != daylight) {
			diag("TZ=%s: glibc %s/%s %ld %d, preload %s/%s %ld %d",
				zones[i], n0, n1, tzo, dl, tzname[0],
				tzname[1], timezone, daylight);
			bad = 1;
		}
	}
	ok(!bad, "tzname, timezone and daylight after tzset() are glibc's");
}

static void fill_tm(struct tm *tm, unsigned int seed)
{
	static const int vals[] = { 0, 1, -1, 59, 60, 61, 11, 12, 13, 24, 25,
		31, 32, 365, -365, 1000, INT_MAX, INT_MIN, INT_MAX - 1900,
		INT_MIN + 1900, 70, 138, 137, -1900 };
	int nv = sizeof(vals) / sizeof(vals[0]);

	memset(tm, 0, sizeof(*tm));
	tm->tm_sec = seed % 7 ? (int)(seed % 61) : vals[seed % nv];
	tm->tm_min = seed % 5 ? (int)(seed / 7 % 60) : vals[seed / 3 % nv];
	tm->tm_hour = seed % 11 ? (int)(seed / 13 % 24) : vals[seed / 5 % nv];
	tm->tm_mday = seed % 3 ? (int)(seed / 17 % 31 + 1) : vals[seed / 7 % nv];
	tm->tm_mon = seed % 4 ? (int)(seed / 19 % 12) : vals[seed / 11 % nv];
	tm->tm_year = seed % 9 ? (int)(seed / 23 % 200) : vals[seed / 13 % nv];
	tm->tm_isdst = (int)(seed % 3) - 1;
}

/* timegm() and mktime() on odd input: out-of-range fields, huge years. */
static void cmp_mk(void)
{
	static const char *const zones[] = { "Europe/Berlin",
		"Australia/Lord_Howe", "Africa/Casablanca", "Europe/Dublin",
		"America/Sao_Paulo", "Antarctica/Troll", "America/St_Johns",
		"Pacific/Apia", "UTC", "EST5EDT,M3.2.0,M11.1.0",
		"<+0330>-3:30", "AAA3BBB,J60/2,J300/-1:30", "XXX5YYY", NULL,
	};
	unsigned int seed, i, nz = sizeof(zones) / sizeof(zones[0]);
	int bad_gm = 0;
	unsigned int n = full ? 2000000 : 100000;
	unsigned long before = nr_mk_bad, calls = nr_mk;

	for (seed = 0; seed < n; seed++) {
		struct tm a, b;
		time_t ta, tb;
		int ea, eb;

		if (seed % (n / nz) == 0)
			set_tz(zones[seed / (n / nz) % nz]);
		fill_tm(&a, seed * 2654435761U);
		b = a;
		errno = 0;
		ta = glibc.timegm(&a);
		ea = errno;
		errno = 0;
		tb = timegm(&b);
		eb = errno;
		if (ta != tb || ea != eb || !tm_same(&a, &b)) {
			if (!bad_gm++)
				diag("timegm seed %u: %lld/%d vs %lld/%d", seed,
					(long long)ta, ea, (long long)tb, eb);
		}
		if (seed % 4)
			continue;
		fill_tm(&a, seed * 2246822519U);
		cmp_mk_tm(getenv("TZ"), &a);
	}
	ok(!bad_gm, "timegm() agrees with glibc on %u inputs", n);
	/* Fields one step beyond their range, around a change. */
	set_tz("America/New_York");
	for (i = 0; i < 64; i++) {
		struct tm a = { .tm_year = 123, .tm_mon = 2, .tm_mday = 12,
			.tm_hour = 2, .tm_min = 30 };

		a.tm_sec += (i & 1) ? 60 : -1;
		a.tm_min += (i & 2) ? 60 : -1;
		a.tm_hour += (i & 4) ? 24 : -1;
		a.tm_mday += (i & 8) ? 31 : -1;
		a.tm_mon += (i & 16) ? 12 : -1;
		a.tm_isdst = (int)(i % 3) - 1;
		cmp_mk_tm("America/New_York", &a);
	}
	ok(nr_mk_bad == before, "mktime() agrees with glibc on %lu odd "
		"inputs in %u zones", nr_mk - calls, nz);
}

/* In a fold, mktime(tm_isdst = -1) answers with its previous offset. */
static void test_mk_memory(void)
{
	struct tm fold = { .tm_year = 123, .tm_mon = 9, .tm_mday = 29,
		.tm_hour = 2, .tm_min = 30, .tm_isdst = -1 };
	struct tm summer = { .tm_year = 123, .tm_mon = 6, .tm_mday = 1,
		.tm_isdst = -1 };
	struct tm winter = { .tm_year = 123, .tm_mon = 0, .tm_mday = 1,
		.tm_isdst = -1 };
	struct tm a;
	time_t after_summer, after_winter;
	unsigned long before = nr_mk_bad;

	set_tz("Europe/Berlin");
	cmp_mk_tm("Europe/Berlin", &summer);
	cmp_mk_tm("Europe/Berlin", &fold);
	a = fold;
	after_summer = mktime(&a);
	cmp_mk_tm("Europe/Berlin", &winter);
	cmp_mk_tm("Europe/Berlin", &fold);
	a = winter;
	mktime(&a);
	a = fold;
	after_winter = mktime(&a);
	ok(nr_mk_bad == before && after_winter - after_summer == 3600,
		"mktime() in a fold: the previous answer's offset decides, "
		"as in glibc (%lld, %lld)", (long long)after_summer,
		(long long)after_winter);
}

static int crashes(void (*fn)(void))
{
	int st;
	pid_t pid = fork();

	if (pid == 0) {
		fn();
		_exit(0);
	}
	if (waitpid(pid, &st, 0) != pid)
		return 0;
	/* A signal, or ASan's report of it. */
	return !WIFEXITED(st) || WEXITSTATUS(st) != 0;
}

static volatile void *sink;

static void null_localtime_r(void)
{
	struct tm tm;
	time_t *volatile p = NULL;

	sink = localtime_r(p, &tm);
}

static void null_tm(void)
{
	time_t t = 0;
	struct tm *volatile p = NULL;

	sink = localtime_r(&t, p);
}

/* ---- lifecycle ---- */

struct race {
	int stop;
	struct tm want[2];
	unsigned long iters, bad;
};

static void *race_reader(void *arg)
{
	struct race *r = arg;
	time_t t = 1700000000;
	unsigned long n = 0, bad = 0;

	while (!__atomic_load_n(&r->stop, __ATOMIC_RELAXED)) {
		struct tm tm;

		if (!localtime_r(&t, &tm)
			|| (!tm_same(&tm, &r->want[0])
				&& !tm_same(&tm, &r->want[1])))
			bad++;
		n++;
	}
	__atomic_add_fetch(&r->iters, n, __ATOMIC_RELAXED);
	__atomic_add_fetch(&r->bad, bad, __ATOMIC_RELAXED);
	return NULL;
}

static const char *const race_tz[2] = { "Europe/Paris", "JST-9" };

static void start_race(struct race *r, pthread_t *th, int n)
{
	time_t t = 1700000000;
	int i;

	memset(r, 0, sizeof(*r));
	for (i = 0; i < 2; i++) {
		set_tz(race_tz[i]);
		glibc.localtime_r(&t, &r->want[i]);
	}
	for (i = 0; i < n; i++)
		pthread_create(&th[i], NULL, race_reader, r);
}

static void stop_race(struct race *r, pthread_t *th, int n)
{
	int i;

	__atomic_store_n(&r->stop, 1, __ATOMIC_RELAXED);
	for (i = 0; i < n; i++)
		pthread_join(th[i], NULL);
}

#define NR_READERS 4

static void test_race(void)
{
	struct race r;
	pthread_t th[NR_READERS];
	int i, n = full ? 20000 : 2000;

	start_race(&r, th, NR_READERS);
	for (i = 0; i < n; i++)
		set_tz(race_tz[i & 1]);
	stop_race(&r, th, NR_READERS);
	ok(!r.bad, "readers racing %d zone changes: every answer whole "
		"(%lu reads)", n, r.iters);
}

static int child_works(void)
{
	time_t t = 1700000000;
	struct tm a, b;

	set_tz("America/Sao_Paulo");
	if (!localtime_r(&t, &a) || !glibc.localtime_r(&t, &b))
		return 1;
	return !tm_same(&a, &b) || a.tm_gmtoff != -3 * 3600;
}

static void test_fork(void)
{
	struct race r;
	pthread_t th[NR_READERS];
	int i, n = full ? 400 : 40, bad = 0;

	start_race(&r, th, NR_READERS);
	for (i = 0; i < n; i++) {
		pid_t pid;
		int st;

		set_tz(race_tz[i & 1]);
		pid = fork();
		if (pid == 0)
			_exit(child_works());
		if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st)
			|| WEXITSTATUS(st))
			bad++;
	}
	stop_race(&r, th, NR_READERS);
	ok(!bad && !r.bad, "%d forks while threads convert and change zones: "
		"children work", n);
}

static void *short_thread(void *arg)
{
	time_t t = 1700000000;
	struct tm tm;

	return localtime_r(&t, &tm) && tm.tm_gmtoff == 3600 ? NULL : arg;
}

static void test_thread_exit(void)
{
	int i, bad = 0;

	set_tz("Europe/Paris");
	for (i = 0; i < 500; i++) {
		pthread_t th;
		void *ret;

		pthread_create(&th, NULL, short_thread, &bad);
		pthread_join(th, &ret);
		bad += ret != NULL;
	}
	ok(!bad, "500 short-lived threads convert");
}

int main(void)
{
	void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
	const char *e = getenv("URCU_RSEQ_TZ_FULL");

	full = e && *e == '1';
	plan_no_plan();
	if (!libc || !dlsym(RTLD_DEFAULT, "urcu_rseq_tz_preload"))
		skip_all("liburcu-rseq-tz.so is not preloaded");
	if (access(ZONEDIR "/Europe/Paris", R_OK))
		skip_all("no zone files in " ZONEDIR " (Debian: tzdata)");
	uses_glibc = (int (*)(void))dlsym(RTLD_DEFAULT,
		"urcu_rseq_tz_preload_uses_glibc");
	glibc.localtime_r = dlsym(libc, "localtime_r");
	glibc.gmtime_r = dlsym(libc, "gmtime_r");
	glibc.localtime = dlsym(libc, "localtime");
	glibc.gmtime = dlsym(libc, "gmtime");
	glibc.mktime = dlsym(libc, "mktime");
	glibc.timegm = dlsym(libc, "timegm");
	glibc.tzset = dlsym(libc, "tzset");
	ok(glibc.localtime_r && glibc.localtime_r != localtime_r,
		"glibc's localtime_r is not the preload's");

	walk(ZONEDIR, "");
	ok(nr_zones >= 300 && !nr_bad, "%lu zone files agree with glibc "
		"(%lu comparisons)%s%s", nr_zones, nr_cmp, nr_bad ? ": " : "",
		nr_bad ? bad_first : "");
	ok(nr_zones >= 300 && !nr_mk_bad, "mktime() agrees with glibc "
		"across every change of every zone, gaps and folds, each "
		"tm_isdst (%lu calls)", nr_mk);
	ok(!nr_delegated, "every zone without leap seconds is served by the "
		"preload%s%s", nr_delegated ? ", not " : "", delegated_first);
	set_tz("right/UTC");
	if (access(ZONEDIR "/right/UTC", R_OK) == 0)
		ok(uses_glibc() == 1, "a zone with leap seconds goes to glibc");
	cmp_posix();
	cmp_runtime_change();
	cmp_tzvars();
	cmp_mk();
	test_mk_memory();
	ok(crashes(null_localtime_r) && crashes(null_tm),
		"NULL arguments fault, as in glibc");

	test_race();
	test_fork();
	test_thread_exit();
	return exit_status();
}
