// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * src/tz-preload.c - liburcu-rseq-tz.so: localtime_r() and friends without
 * glibc's global tzset_lock, for LD_PRELOAD into unmodified programs.
 *
 * The zone rules in effect are an immutable snapshot published under the
 * urcu-rseq RCU flavor: a conversion is a read-side section (no lock, no
 * atomic instruction with rseq) around a binary search in the snapshot's
 * transition table or an evaluation of its POSIX rule. A change (TZ changed,
 * then tzset(), localtime() or mktime(); with TZ unset, /etc/localtime
 * replaced) builds a new snapshot under an update mutex, publishes it, and
 * retires the old one with call_rcu().
 *
 * What glibc computes is followed field by field, including what it leaves
 * in *tp when a conversion fails with EOVERFLOW, so that the differential
 * test (tests/unit/test_tz_preload.c) can ask for byte-identical results.
 * Where that would mean copying one of glibc's accidents, the call goes to
 * glibc (doc/tz-preload.md lists the cases): zones with leap seconds,
 * POSIX TZ strings outside the strict grammar or with a DST name but no
 * rules (glibc then loads "posixrules"), years beyond +-5000000 under a
 * POSIX rule (glibc's rule arithmetic overflows int there), and set-uid
 * programs. mktime() and timelocal() invert the snapshot's localtime by
 * glibc's own probing (see snap_mktime()).
 *
 * tzname, timezone and daylight belong to glibc: every snapshot build first
 * calls glibc's tzset(), which sets them exactly as it would have. Unlike
 * glibc, the conversions here do not rewrite tzname as a side effect of
 * the time they convert (glibc's localtime_r() does, for zone files).
 *
 * Abbreviations (tm_zone) are interned for the life of the process, as
 * glibc's are: a struct tm filled from a retired snapshot stays valid.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#define _LGPL_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <urcu/urcu-rseq.h>

#define PRELOAD_API	__attribute__((visibility("default")))

#define SECS_PER_HOUR	(60 * 60)
#define SECS_PER_DAY	(SECS_PER_HOUR * 24)
#define TZ_DEFAULT_FILE	"/etc/localtime"
#define TZ_DEFAULT_DIR	"/usr/share/zoneinfo"
/* |year| past which a POSIX rule goes to glibc (its int arithmetic). */
#define TZ_RULE_YEAR_MAX	5000000

typedef struct tm *(*conv_r_fn)(const time_t *, struct tm *);
typedef struct tm *(*conv_fn)(const time_t *);
typedef time_t (*mk_fn)(struct tm *);

static struct {
	conv_r_fn localtime_r, gmtime_r;
	conv_fn localtime, gmtime;
	mk_fn mktime, timegm, timelocal;
	void (*tzset)(void);
} real;

/* glibc's buffer shared by localtime(), gmtime(), ctime() and asctime(). */
static struct tm *tm_static;

enum rule_type { RULE_J0, RULE_J1, RULE_M };

struct tz_rule {
	const char *name;	/* interned */
	long offset;		/* seconds east of UTC */
	enum rule_type type;
	unsigned int d, m, n;
	long secs;		/* local time of day of the change */
};

struct tz_posix {
	struct tz_rule r[2];	/* standard, daylight */
	int has_dst;		/* rules parsed; else always standard */
};

struct tz_type {
	long utoff;
	int isdst;
	const char *abbr;	/* interned */
};

enum snap_kind {
	SNAP_GLIBC,	/* every call goes to glibc */
	SNAP_FILE,	/* TZif data, optional footer rule */
	SNAP_POSIX,	/* a POSIX TZ string, or no zone at all (UTC, "") */
};

struct tz_snap {
	struct rcu_head rcu;
	enum snap_kind kind;
	char *key;		/* TZ as glibc compares it; NULL if unset */
	int file_ok;		/* st_* below identify the file read */
	dev_t dev;
	ino_t ino;
	time_t mtime;
	size_t nr_trans;
	int64_t *trans;
	unsigned char *trans_type;
	size_t nr_types;
	struct tz_type *types;
	int has_footer;
	struct tz_posix posix;	/* the footer of SNAP_FILE, or the zone */
};

static struct tz_snap *tz_current;	/* RCU */
static pthread_mutex_t tz_update_lock = PTHREAD_MUTEX_INITIALIZER;

static const unsigned short mon_yday[2][13] = {
	{ 0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334, 365 },
	{ 0, 31, 60, 91, 121, 152, 182, 213, 244, 274, 305, 335, 366 },
};

static int is_leap(int64_t y)
{
	return y % 4 == 0 && (y % 100 != 0 || y % 400 == 0);
}

/*
 * Interned strings, never freed: tm_zone pointers outlive snapshots.
 * Written only under tz_update_lock.
 */
struct istr {
	struct istr *next;
	char s[];
};
static struct istr *istr_head;

static const char *intern(const char *s, size_t len)
{
	struct istr *p;

	for (p = istr_head; p; p = p->next)
		if (strlen(p->s) == len && !memcmp(p->s, s, len))
			return p->s;
	p = malloc(sizeof(*p) + len + 1);
	if (!p)
		return NULL;
	memcpy(p->s, s, len);
	p->s[len] = '\0';
	p->next = istr_head;
	istr_head = p;
	return p->s;
}

static void resolve_real(void)
{
	real.localtime_r = (conv_r_fn)dlsym(RTLD_NEXT, "localtime_r");
	real.gmtime_r = (conv_r_fn)dlsym(RTLD_NEXT, "gmtime_r");
	real.localtime = (conv_fn)dlsym(RTLD_NEXT, "localtime");
	real.gmtime = (conv_fn)dlsym(RTLD_NEXT, "gmtime");
	real.mktime = (mk_fn)dlsym(RTLD_NEXT, "mktime");
	real.timegm = (mk_fn)dlsym(RTLD_NEXT, "timegm");
	real.timelocal = (mk_fn)dlsym(RTLD_NEXT, "timelocal");
	real.tzset = (void (*)(void))dlsym(RTLD_NEXT, "tzset");
}

/*
 * Days within +-10^11 of 1970 (some 270 million years): the year fits int,
 * and the date follows from the 400-year cycle without a loop.
 */
#define OFFTIME_FAST_DAYS	100000000000LL

static int offtime_fast(int64_t days, struct tm *tp)
{
	int64_t z = days + 719468;	/* days since 0000-03-01 */
	int64_t era = (z >= 0 ? z : z - 146096) / 146097;
	int64_t doe = z - era * 146097;
	int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	int64_t mp = (5 * doy + 2) / 153;
	int mday = doy - (153 * mp + 2) / 5 + 1;
	int mon = mp < 10 ? mp + 2 : mp - 10;	/* 0-based, from January */
	int64_t y = yoe + era * 400 + (mon <= 1);

	tp->tm_year = y - 1900;
	tp->tm_yday = mon_yday[is_leap(y)][mon] + mday - 1;
	tp->tm_mon = mon;
	tp->tm_mday = mday;
	return 1;
}

/*
 * Broken-down time of t + offset, as glibc's __offtime() computes it,
 * including the fields it has written when the year overflows int.
 */
static int offtime(int64_t t, long offset, struct tm *tp)
{
	int64_t days = t / SECS_PER_DAY, rem = t % SECS_PER_DAY, y = 1970;
	const unsigned short *ip;

	rem += offset;
	while (rem < 0) {
		rem += SECS_PER_DAY;
		--days;
	}
	while (rem >= SECS_PER_DAY) {
		rem -= SECS_PER_DAY;
		++days;
	}
	tp->tm_hour = rem / SECS_PER_HOUR;
	rem %= SECS_PER_HOUR;
	tp->tm_min = rem / 60;
	tp->tm_sec = rem % 60;
	tp->tm_wday = (4 + days) % 7;
	if (tp->tm_wday < 0)
		tp->tm_wday += 7;
	if (caa_likely(days > -OFFTIME_FAST_DAYS && days < OFFTIME_FAST_DAYS))
		return offtime_fast(days, tp);
#define DIV(a, b) ((a) / (b) - ((a) % (b) < 0))
#define LEAPS_THRU_END_OF(y) (DIV(y, 4) - DIV(y, 100) + DIV(y, 400))
	while (days < 0 || days >= (is_leap(y) ? 366 : 365)) {
		int64_t yg = y + days / 365 - (days % 365 < 0);

		days -= (yg - y) * 365 + LEAPS_THRU_END_OF(yg - 1)
			- LEAPS_THRU_END_OF(y - 1);
		y = yg;
	}
	tp->tm_year = (int)(uint32_t)(uint64_t)(y - 1900);
	if (tp->tm_year != y - 1900) {
		errno = EOVERFLOW;
		return 0;
	}
	tp->tm_yday = days;
	ip = mon_yday[is_leap(y)];
	for (y = 11; days < ip[y]; --y)
		continue;
	tp->tm_mon = y;
	tp->tm_mday = days - ip[y] + 1;
	return 1;
}

/* UTC time of a rule's change in year (|year| <= TZ_RULE_YEAR_MAX). */
static int64_t rule_change(const struct tz_rule *r, int year)
{
	int64_t t = 0;

	/* glibc counts every year up to 1970 from 1 January 1970. */
	if (year > 1970)
		t = ((int64_t)(year - 1970) * 365
			+ ((year - 1) / 4 - 1970 / 4)
			- ((year - 1) / 100 - 1970 / 100)
			+ ((year - 1) / 400 - 1970 / 400)) * SECS_PER_DAY;
	switch (r->type) {
	case RULE_J1:
		t += (int64_t)(r->d - 1) * SECS_PER_DAY;
		if (r->d >= 60 && is_leap(year))
			t += SECS_PER_DAY;
		break;
	case RULE_J0:
		t += (int64_t)r->d * SECS_PER_DAY;
		break;
	case RULE_M: {
		const unsigned short *myday = &mon_yday[is_leap(year)][r->m];
		int m1 = (r->m + 9) % 12 + 1;
		int yy0 = r->m <= 2 ? year - 1 : year;
		int yy1 = yy0 / 100, yy2 = yy0 % 100;
		int dow, d;
		unsigned int i;

		t += (int64_t)myday[-1] * SECS_PER_DAY;
		/* Zeller's congruence: weekday of the month's first day. */
		dow = ((26 * m1 - 2) / 10 + 1 + yy2 + yy2 / 4 + yy1 / 4
			- 2 * yy1) % 7;
		if (dow < 0)
			dow += 7;
		d = (int)r->d - dow;
		if (d < 0)
			d += 7;
		for (i = 1; i < r->n; i++) {
			if (d + 7 >= (int)myday[0] - myday[-1])
				break;
			d += 7;
		}
		t += (int64_t)d * SECS_PER_DAY;
		break;
	}
	}
	return t - r->offset + r->secs;
}

/*
 * Daylight or standard at t under a POSIX rule; tp holds offtime(t, 0).
 * Returns -1 where glibc's arithmetic would overflow.
 */
static int posix_isdst(const struct tz_posix *p, int64_t t,
		const struct tm *tp)
{
	int64_t c0, c1;
	int64_t year = 1900 + (int64_t)tp->tm_year;

	if (!p->has_dst)
		return 0;
	if (year > TZ_RULE_YEAR_MAX || year < -TZ_RULE_YEAR_MAX)
		return -1;
	c0 = rule_change(&p->r[0], year);
	c1 = rule_change(&p->r[1], year);
	/* Southern hemisphere: daylight time spans the new year. */
	if (c0 > c1)
		return t < c1 || t >= c0;
	return t >= c0 && t < c1;
}

static void set_zone(struct tm *tp, int isdst, long off, const char *abbr)
{
	tp->tm_isdst = isdst;
	tp->tm_zone = abbr;
	tp->tm_gmtoff = off;
}

/* Index of the type in effect before the first transition. */
static size_t first_type(const struct tz_snap *s)
{
	size_t i = 0;

	while (i < s->nr_types && s->types[i].isdst)
		i++;
	return i == s->nr_types ? 0 : i;
}

/* Returns 1 done, 0 failed (errno set), -1 ask glibc. */
static int snap_localtime(const struct tz_snap *s, int64_t t, struct tm *tp)
{
	const struct tz_type *ty;
	int dst;

	if (s->kind == SNAP_POSIX) {
		if (!offtime(t, 0, tp))
			return 0;
		dst = posix_isdst(&s->posix, t, tp);
		if (dst < 0)
			return -1;
		set_zone(tp, dst, s->posix.r[dst].offset, s->posix.r[dst].name);
		return offtime(t, tp->tm_gmtoff, tp);
	}
	if (s->nr_trans == 0 || t < s->trans[0]) {
		ty = &s->types[first_type(s)];
	} else if (t >= s->trans[s->nr_trans - 1]) {
		ty = &s->types[s->trans_type[s->nr_trans - 1]];
		if (s->has_footer && offtime(t, 0, tp)) {
			dst = posix_isdst(&s->posix, t, tp);
			if (dst < 0)
				return -1;
			set_zone(tp, dst, s->posix.r[dst].offset,
				s->posix.r[dst].name);
			return offtime(t, tp->tm_gmtoff, tp);
		}
	} else {
		size_t lo = 0, hi = s->nr_trans - 1;

		/* trans[lo] <= t < trans[hi] */
		while (lo + 1 < hi) {
			size_t mid = lo + (hi - lo) / 2;

			if (t < s->trans[mid])
				hi = mid;
			else
				lo = mid;
		}
		ty = &s->types[s->trans_type[lo]];
	}
	set_zone(tp, ty->isdst, ty->utoff, ty->abbr);
	return offtime(t, ty->utoff, tp);
}

static int snap_gmtime(const struct tz_snap *s, int64_t t, struct tm *tp)
{
	/* glibc converts once before setting the zone for POSIX rules. */
	if (s->kind == SNAP_POSIX && !offtime(t, 0, tp))
		return 0;
	set_zone(tp, 0, 0, "GMT");
	return offtime(t, 0, tp);
}

static void snap_free(struct tz_snap *s)
{
	if (!s)
		return;
	free(s->key);
	free(s->trans);
	free(s->trans_type);
	free(s->types);
	free(s);
}

static void snap_free_rcu(struct rcu_head *head)
{
	snap_free(caa_container_of(head, struct tz_snap, rcu));
}

/* ---- POSIX TZ strings: the strict grammar, else glibc ---- */

enum parse_res { P_OK, P_FAIL, P_GLIBC };

static int is_alpha(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static int is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static enum parse_res parse_name(const char **sp, const char **name)
{
	const char *p = *sp, *start = p;
	size_t len;

	while (is_alpha(*p))
		p++;
	len = p - start;
	if (len < 3) {
		p = *sp;
		if (*p++ != '<')
			return P_FAIL;
		start = p;
		while (is_alpha(*p) || is_digit(*p) || *p == '+' || *p == '-')
			p++;
		len = p - start;
		if (*p++ != '>' || len < 3)
			return P_FAIL;
	}
	*name = intern(start, len);
	if (!*name)
		return P_GLIBC;
	*sp = p;
	return P_OK;
}

/* Up to 4 digits: sscanf("%hu") cannot wrap, and no white space or sign. */
static enum parse_res parse_num(const char **sp, unsigned int *v)
{
	const char *p = *sp;
	unsigned int n = 0;
	int i;

	for (i = 0; is_digit(*p); i++, p++) {
		if (i == 4)
			return P_GLIBC;
		n = n * 10 + (*p - '0');
	}
	if (i == 0)
		return P_FAIL;
	*v = n;
	*sp = p;
	return P_OK;
}

/* hh[:mm[:ss]]; a ':' not followed by a digit is left to glibc. */
static enum parse_res parse_hms(const char **sp, unsigned int v[3])
{
	int i;

	v[1] = v[2] = 0;
	if (parse_num(sp, &v[0]) != P_OK)
		return is_digit(**sp) ? P_GLIBC : P_FAIL;
	for (i = 1; i < 3 && **sp == ':'; i++) {
		(*sp)++;
		if (parse_num(sp, &v[i]) != P_OK)
			return P_GLIBC;
	}
	if (**sp == ':')
		return P_GLIBC;
	return P_OK;
}

static unsigned int umin(unsigned int a, unsigned int b)
{
	return a < b ? a : b;
}

static enum parse_res parse_offset(const char **sp, long *off)
{
	const char *p = *sp;
	long sign = -1;
	unsigned int v[3];
	enum parse_res r;

	if (*p == '+' || *p == '-')
		sign = *p++ == '-' ? 1 : -1;
	if (!is_digit(*p))
		return (*p == ' ' || (*p >= '\t' && *p <= '\r') || *p == '+'
			|| *p == '-') ? P_GLIBC : P_FAIL;
	r = parse_hms(&p, v);
	if (r != P_OK)
		return P_GLIBC;
	*off = sign * (long)(umin(v[2], 59) + umin(v[1], 59) * 60
		+ umin(v[0], 24) * 60 * 60);
	*sp = p;
	return P_OK;
}

static enum parse_res parse_rule(const char **sp, struct tz_rule *r)
{
	const char *p = *sp;
	unsigned int v[3];

	if (*p++ != ',')
		return P_GLIBC;
	if (*p == 'J' || is_digit(*p)) {
		r->type = *p == 'J' ? RULE_J1 : RULE_J0;
		p += r->type == RULE_J1;
		if (parse_num(&p, &r->d) != P_OK || r->d > 365
			|| (r->type == RULE_J1 && r->d == 0))
			return P_GLIBC;
	} else if (*p == 'M') {
		p++;
		r->type = RULE_M;
		if (parse_num(&p, &r->m) != P_OK || *p++ != '.'
			|| parse_num(&p, &r->n) != P_OK || *p++ != '.'
			|| parse_num(&p, &r->d) != P_OK)
			return P_GLIBC;
		if (r->m < 1 || r->m > 12 || r->n < 1 || r->n > 5 || r->d > 6)
			return P_GLIBC;
	} else {
		return P_GLIBC;
	}
	r->secs = 2 * SECS_PER_HOUR;
	if (*p == '/') {
		int neg;

		p++;
		neg = *p == '-';
		p += neg;
		if (!is_digit(*p) || parse_hms(&p, v) != P_OK)
			return P_GLIBC;
		r->secs = (neg ? -1 : 1) * (long)(v[0] * SECS_PER_HOUR
			+ v[1] * 60 + v[2]);
	}
	*sp = p;
	return P_OK;
}

/*
 * What glibc's __tzset_parse_tz() makes of s, where the grammar is strict
 * enough to be sure; P_GLIBC otherwise.
 */
static enum parse_res parse_posix(const char *s, struct tz_posix *z)
{
	enum parse_res r;
	const char *empty = intern("", 0);

	if (!empty)
		return P_GLIBC;
	memset(z, 0, sizeof(*z));
	z->r[0].name = z->r[1].name = empty;
	r = parse_name(&s, &z->r[0].name);
	if (r != P_OK)
		return r == P_FAIL ? P_OK : r;	/* unnamed UTC */
	r = parse_offset(&s, &z->r[0].offset);
	if (r != P_OK) {
		z->r[0].offset = 0;
		return r == P_FAIL ? P_OK : r;	/* named, offset 0 */
	}
	if (*s == '\0') {
		z->r[1].name = z->r[0].name;
		z->r[1].offset = z->r[0].offset;
		return P_OK;
	}
	if (parse_name(&s, &z->r[1].name) != P_OK)
		return P_GLIBC;
	z->r[1].offset = z->r[0].offset + SECS_PER_HOUR;
	if (*s != ',' && parse_offset(&s, &z->r[1].offset) != P_OK)
		return P_GLIBC;
	/* No rules: glibc reads "posixrules". */
	if (*s == '\0' || (s[0] == ',' && s[1] == '\0'))
		return P_GLIBC;
	if (parse_rule(&s, &z->r[0]) != P_OK
		|| parse_rule(&s, &z->r[1]) != P_OK || *s != '\0')
		return P_GLIBC;
	z->has_dst = 1;
	return P_OK;
}

/* ---- TZif files ---- */

static uint32_t be32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16
		| (uint32_t)p[2] << 8 | p[3];
}

static int64_t be64(const unsigned char *p)
{
	return (int64_t)((uint64_t)be32(p) << 32 | be32(p + 4));
}

struct tzif_counts {
	uint32_t isut, isstd, leap, time, type, chars;
};

static int tzif_header(const unsigned char *p, size_t len, size_t off,
		struct tzif_counts *c, int *version)
{
	if (off + 44 > len || memcmp(p + off, "TZif", 4))
		return -1;
	*version = p[off + 4];
	c->isut = be32(p + off + 20);
	c->isstd = be32(p + off + 24);
	c->leap = be32(p + off + 28);
	c->time = be32(p + off + 32);
	c->type = be32(p + off + 36);
	c->chars = be32(p + off + 40);
	if (c->time > 1 << 24 || c->type > 256 || c->chars > 1 << 16
		|| c->leap > 1 << 16 || c->isut > 256 || c->isstd > 256)
		return -1;
	return 0;
}

static size_t tzif_block_len(const struct tzif_counts *c, int tsize)
{
	return (size_t)c->time * tsize + c->time + c->type * 6 + c->chars
		+ (size_t)c->leap * (tsize + 4) + c->isstd + c->isut;
}

/* 0: s filled (SNAP_FILE); -1: not usable by us (ask glibc). */
static int tzif_parse(struct tz_snap *s, const unsigned char *p, size_t len)
{
	struct tzif_counts c;
	int version, tsize = 4;
	size_t off = 0, i;
	const unsigned char *q;
	const char *chars;

	if (tzif_header(p, len, 0, &c, &version))
		return -1;
	if (version >= '2') {
		off = 44 + tzif_block_len(&c, 4);
		if (tzif_header(p, len, off, &c, &version))
			return -1;
		tsize = 8;
	}
	off += 44;
	if (off + tzif_block_len(&c, tsize) > len)
		return -1;
	/* Leap seconds shift every field: left to glibc. */
	if (c.leap || c.type == 0 || c.chars == 0)
		return -1;
	s->nr_trans = c.time;
	s->nr_types = c.type;
	s->trans = malloc(sizeof(*s->trans) * (c.time + 1));
	s->trans_type = malloc(c.time + 1);
	s->types = calloc(c.type, sizeof(*s->types));
	if (!s->trans || !s->trans_type || !s->types)
		return -1;
	q = p + off;
	for (i = 0; i < c.time; i++, q += tsize)
		s->trans[i] = tsize == 8 ? be64(q) : (int32_t)be32(q);
	for (i = 0; i < c.time; i++, q++) {
		if (*q >= c.type)
			return -1;
		s->trans_type[i] = *q;
	}
	for (i = 1; i < c.time; i++)
		if (s->trans[i] <= s->trans[i - 1])
			return -1;
	chars = (const char *)q + c.type * 6;
	if (chars[c.chars - 1] != '\0')
		return -1;
	for (i = 0; i < c.type; i++, q += 6) {
		unsigned int ai = q[5];

		if (q[4] > 1 || ai >= c.chars)
			return -1;
		s->types[i].utoff = (int32_t)be32(q);
		s->types[i].isdst = q[4];
		s->types[i].abbr = intern(chars + ai, strlen(chars + ai));
		if (!s->types[i].abbr)
			return -1;
	}
	s->kind = SNAP_FILE;
	if (version < '2')
		return 0;
	off += tzif_block_len(&c, tsize);
	if (off < len && p[off] == '\n') {
		const char *f = (const char *)p + off + 1;
		const char *nl = memchr(f, '\n', len - off - 1);
		char *spec;
		enum parse_res r;

		if (!nl)
			return -1;
		if (nl == f)
			return 0;
		spec = strndup(f, nl - f);
		if (!spec)
			return -1;
		r = parse_posix(spec, &s->posix);
		free(spec);
		/* Unnamed or offset-less footers: unusual, glibc's. */
		if (r != P_OK || s->posix.r[0].name[0] == '\0'
			|| (!s->posix.has_dst
				&& s->posix.r[1].name != s->posix.r[0].name))
			return -1;
		s->has_footer = 1;
		return 0;
	}
	return off == len ? 0 : -1;
}

/* 1: read a TZif file into s; 0: no such file; -1: glibc's. */
static int tzif_load(struct tz_snap *s, const char *path)
{
	struct stat st;
	unsigned char *buf;
	ssize_t n;
	int fd, ret = -1;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_size > (1 << 24)
		|| st.st_size < 44) {
		close(fd);
		return -1;
	}
	buf = malloc(st.st_size);
	if (buf) {
		n = pread(fd, buf, st.st_size, 0);
		if (n == st.st_size && !tzif_parse(s, buf, n)) {
			s->file_ok = 1;
			s->dev = st.st_dev;
			s->ino = st.st_ino;
			s->mtime = st.st_mtime;
			ret = 1;
		}
		free(buf);
	}
	close(fd);
	return ret;
}

/* TZ as glibc's tzset_internal() sees it: "" is "Universal", ':' skipped. */
static const char *tz_env(void)
{
	const char *tz = getenv("TZ");

	if (tz && *tz == '\0')
		tz = "Universal";
	if (tz && *tz == ':')
		tz++;
	return tz;
}

static struct tz_snap *snap_build(const char *tz)
{
	struct tz_snap *s = calloc(1, sizeof(*s));
	const char *file = tz ? tz : TZ_DEFAULT_FILE;
	char *path = NULL;
	int r;

	if (!s)
		return NULL;
	s->kind = SNAP_GLIBC;
	if (tz && !(s->key = strdup(tz)))
		goto glibc;
	if (getauxval(AT_SECURE))
		goto glibc;
	if (*file != '/') {
		const char *dir = getenv("TZDIR");

		if (!dir || !*dir)
			dir = TZ_DEFAULT_DIR;
		if (asprintf(&path, "%s/%s", dir, file) < 0)
			goto glibc;
		file = path;
	}
	r = tzif_load(s, file);
	free(path);
	if (r > 0)
		return s;
	free(s->trans);
	free(s->trans_type);
	free(s->types);
	s->trans = NULL;
	s->trans_type = NULL;
	s->types = NULL;
	s->nr_trans = s->nr_types = 0;
	s->has_footer = 0;
	if (r < 0)
		goto glibc;
	s->kind = SNAP_POSIX;
	if (!tz || !strcmp(tz, TZ_DEFAULT_FILE)) {
		/* No zone at all: UTC, unnamed. */
		if (parse_posix("", &s->posix) != P_OK)
			goto glibc;
		return s;
	}
	if (parse_posix(tz, &s->posix) == P_OK)
		return s;
glibc:
	s->kind = SNAP_GLIBC;
	return s;
}

/* Would glibc's tzset_internal(1) read the rules again? */
static int snap_stale(const struct tz_snap *s, const char *tz)
{
	struct stat st;

	if (tz)
		return !s->key || strcmp(tz, s->key);
	if (s->key)
		return 1;
	/* TZ unset: glibc checks the default file on every call. */
	if (stat(TZ_DEFAULT_FILE, &st))
		return s->file_ok;
	return !s->file_ok || st.st_ino != s->ino || st.st_dev != s->dev
		|| st.st_mtime != s->mtime;
}

/* Caller is outside any read-side section. */
static void tz_update(int always)
{
	struct tz_snap *old, *s;
	const char *tz;

	pthread_mutex_lock(&tz_update_lock);
	old = tz_current;
	tz = tz_env();
	if (old && (!always || !snap_stale(old, tz))) {
		pthread_mutex_unlock(&tz_update_lock);
		return;
	}
	if (!real.tzset)
		resolve_real();
	/* glibc's own state (tzname, timezone, daylight) follows TZ too. */
	real.tzset();
	s = snap_build(tz);
	if (!s) {
		pthread_mutex_unlock(&tz_update_lock);
		return;
	}
	rcu_assign_pointer(tz_current, s);
	pthread_mutex_unlock(&tz_update_lock);
	if (old)
		urcu_rseq_call_rcu(&old->rcu, snap_free_rcu);
}

/* Brings the snapshot up to date as glibc's tzset_internal(1) would. */
static void tz_refresh(void)
{
	struct tz_snap *s;
	int stale;

	urcu_rseq_read_lock();
	s = rcu_dereference(tz_current);
	stale = !s || snap_stale(s, tz_env());
	urcu_rseq_read_unlock();
	if (stale)
		tz_update(1);
}

static void tz_prepare(void)
{
	pthread_mutex_lock(&tz_update_lock);
}

static void tz_unlock(void)
{
	pthread_mutex_unlock(&tz_update_lock);
}

__attribute__((constructor))
static void tz_preload_init(void)
{
	resolve_real();
	pthread_atfork(tz_prepare, tz_unlock, tz_unlock);
}

/*
 * One conversion in a read-side section. The snapshot is created on first
 * use, as glibc reads the rules on its first conversion.
 */
static struct tm *convert(const time_t *t, struct tm *tp, int local,
		int in_static)
{
	const struct tz_snap *s;
	int64_t v = *t;
	int r;

	if (caa_unlikely(!CMM_LOAD_SHARED(tz_current)))
		tz_update(0);
	urcu_rseq_read_lock();
	s = rcu_dereference(tz_current);
	if (caa_unlikely(!s || s->kind == SNAP_GLIBC))
		r = -1;
	else if (local)
		r = snap_localtime(s, v, tp);
	else
		r = snap_gmtime(s, v, tp);
	urcu_rseq_read_unlock();
	if (caa_likely(r > 0))
		return tp;
	if (r == 0)
		return NULL;
	if (!real.localtime_r)
		resolve_real();
	/* localtime() and gmtime() fill the same buffer through glibc. */
	if (in_static)
		return local ? real.localtime(t) : real.gmtime(t);
	return local ? real.localtime_r(t, tp) : real.gmtime_r(t, tp);
}

PRELOAD_API struct tm *localtime_r(const time_t *t, struct tm *tp)
{
	return convert(t, tp, 1, 0);
}

PRELOAD_API struct tm *gmtime_r(const time_t *t, struct tm *tp)
{
	return convert(t, tp, 0, 0);
}

static struct tm *static_buf(void)
{
	if (caa_unlikely(!tm_static)) {
		time_t zero = 0;

		if (!real.gmtime)
			resolve_real();
		/* glibc returns its one static buffer: share it. */
		tm_static = real.gmtime(&zero);
	}
	return tm_static;
}

PRELOAD_API struct tm *localtime(const time_t *t)
{
	struct tm *tp = static_buf();

	tz_refresh();
	return convert(t, tp, 1, 1);
}

PRELOAD_API struct tm *gmtime(const time_t *t)
{
	return convert(t, static_buf(), 0, 1);
}

/* What glibc's tzset() does, also at the start of mktime(). */
static void tz_sync(void)
{
	struct tz_snap *s;
	int glibc;

	tz_refresh();
	/* glibc's tzset() always reloads tzname for POSIX rules. */
	urcu_rseq_read_lock();
	s = rcu_dereference(tz_current);
	glibc = !s || s->kind == SNAP_GLIBC;
	if (s && s->kind == SNAP_POSIX) {
		/* Written only when they differ, like mk_guess. */
		if (tzname[0] != s->posix.r[0].name)
			tzname[0] = (char *)s->posix.r[0].name;
		if (tzname[1] != s->posix.r[1].name)
			tzname[1] = (char *)s->posix.r[1].name;
	}
	urcu_rseq_read_unlock();
	/* glibc may reread every time (after "posixrules"): let it. */
	if (glibc) {
		if (!real.tzset)
			resolve_real();
		real.tzset();
	}
}

PRELOAD_API void tzset(void)
{
	tz_sync();
}

/*
 * mktime() inverts snap_localtime() by probing, as glibc's mktime() inverts
 * its localtime_r() (time/mktime.c, since the 2.36 stable branch: Debian
 * 12's 2.36-9, 13's 2.41, sid's 2.43): the same guesses in the same order,
 * so that a time in a spring-forward gap, in a fall-back fold, or with a
 * tm_isdst the zone does not have at that date comes out as glibc's.
 *
 * Where a fold makes two answers possible (tm_isdst < 0), the first guess
 * decides, and glibc's first guess is the UTC offset of its previous
 * result: mk_guess keeps the same memory, so that a sequence of calls
 * gives glibc's sequence of answers.
 */
static long mk_guess;

/* Stores only a change: threads converting alike share the line. */
static void mk_guess_set(long v)
{
	if (CMM_LOAD_SHARED(mk_guess) != v)
		CMM_STORE_SHARED(mk_guess, v);
}

/* Floor division by 2^b (an arithmetic shift, as gcc and clang do). */
static int64_t shr(int64_t a, int b)
{
	return a >> b;
}

/*
 * Seconds from (year0, yday0, hh0:mm0:ss0) to (year1, ...), years counted
 * from 1900 as tm_year, fields not necessarily in range, with no clock
 * change between them.
 */
static int64_t tm_secs_between(int64_t year1, int64_t yday1, int hour1,
		int min1, int sec1, int64_t year0, int64_t yday0, int hour0,
		int min0, int sec0)
{
	/* Leap days before each year, from an origin 1900 years back. */
	int64_t a4 = shr(year1, 2) + 1900 / 4 - !(year1 & 3);
	int64_t b4 = shr(year0, 2) + 1900 / 4 - !(year0 & 3);
	int64_t a100 = (a4 + (a4 < 0)) / 25 - (a4 < 0);
	int64_t b100 = (b4 + (b4 < 0)) / 25 - (b4 < 0);
	int64_t leaps = (a4 - b4) - (a100 - b100)
		+ (shr(a100, 2) - shr(b100, 2));
	int64_t days = 365 * (year1 - year0) + yday1 - yday0 + leaps;

	return ((24 * days + hour1 - hour0) * 60 + min1 - min0) * 60
		+ sec1 - sec0;
}

static int64_t secs_to_tm(int64_t year, int64_t yday, int hour, int min,
		int sec, const struct tm *tm)
{
	return tm_secs_between(year, yday, hour, min, sec, tm->tm_year,
		tm->tm_yday, tm->tm_hour, tm->tm_min, tm->tm_sec);
}

/*
 * snap_localtime() of *t; where *t is beyond what a struct tm can hold,
 * of the representable time nearest to it between it and 0, found by
 * bisection, as glibc narrows an overflowing guess. Same returns as
 * snap_localtime().
 */
static int mk_localtime(const struct tz_snap *s, int64_t *t, struct tm *tp)
{
	int64_t bad = *t, good = 0, mid;
	struct tm good_tm;
	int r = snap_localtime(s, *t, tp);

	if (r != 0 || errno != EOVERFLOW)
		return r;
	good_tm.tm_sec = -1;
	for (;;) {
		/* The mean, rounded up, without overflow. */
		mid = shr(good, 1) + shr(bad, 1) + ((good | bad) & 1);
		if (mid == good || mid == bad)
			break;
		r = snap_localtime(s, mid, tp);
		if (r < 0)
			return r;
		if (r > 0) {
			good = mid;
			good_tm = *tp;
		} else if (errno != EOVERFLOW) {
			return 0;
		} else {
			bad = mid;
		}
	}
	if (good_tm.tm_sec < 0)
		return 0;
	*t = good;
	*tp = good_tm;
	return 1;
}

/*
 * The year (from 1900, months beyond 11 or below 0 carried into it) and
 * the day of that year (not necessarily in range) of *tp's fields.
 */
static void tm_year_yday(const struct tm *tp, int64_t *year, int64_t *yday)
{
	int mon = tp->tm_mon;
	int mon_rem = mon % 12 + (mon % 12 < 0 ? 12 : 0);

	*year = (int64_t)tp->tm_year + mon / 12 - (mon % 12 < 0);
	*yday = mon_yday[is_leap(*year + 1900)][mon_rem] - 1
		+ (int64_t)tp->tm_mday;
}

/* tm_isdst values that disagree: one zero, the other positive. */
static int isdst_differ(int a, int b)
{
	return !a != !b && a >= 0 && b >= 0;
}

/*
 * Looks, 601200 s apart (the shortest DST period and the shortest
 * standard period between two DST periods of the zone database) and
 * up to half of 457243209 s (the longest period without a one-hour DST
 * difference) either way of t, for a time whose DST flag is the one
 * asked for, and takes that time's offset; else assumes a one-hour
 * difference. Returns as snap_mktime().
 */
static int mk_other_dst(const struct tz_snap *s, int isdst, int64_t year,
		int64_t yday, int hour, int min, int sec, int64_t *t,
		struct tm *tm)
{
	const int stride = 601200, bound = 457243209 / 2 + 601200;
	int dst_difference = (isdst == 0) - (tm->tm_isdst == 0);
	int delta, dir, r;

	for (delta = stride; delta < bound; delta += stride) {
		for (dir = -1; dir <= 1; dir += 2) {
			int64_t ot, gt;
			struct tm otm;

			if (__builtin_add_overflow(*t, (int64_t)delta * dir,
					&ot))
				continue;
			r = mk_localtime(s, &ot, &otm);
			if (r <= 0)
				return r;
			if (isdst_differ(isdst, otm.tm_isdst))
				continue;
			gt = ot + secs_to_tm(year, yday, hour, min, sec, &otm);
			r = snap_localtime(s, gt, tm);
			if (r > 0) {
				*t = gt;
				return 1;
			}
			if (r < 0 || errno != EOVERFLOW)
				return r;
		}
	}
	*t = (int64_t)((uint64_t)*t + (uint64_t)(int64_t)(3600 * dst_difference));
	r = snap_localtime(s, *t, tm);
	if (r == 0)
		errno = EOVERFLOW;
	return r;
}

/*
 * The time whose local broken-down time under s is *tp. Returns 1 with
 * *res and *tp set, 0 failed (errno set, *tp untouched), -1 leave the
 * call to glibc.
 */
static int snap_mktime(const struct tz_snap *s, struct tm *tp, time_t *res)
{
	int sec = tp->tm_sec, min = tp->tm_min, hour = tp->tm_hour;
	int isdst = tp->tm_isdst, sec_requested = sec;
	int64_t year, yday;
	long guess = CMM_LOAD_SHARED(mk_guess);
	/* glibc keeps the guess's negation in an int: wrap as it does. */
	int neg_guess = (int)(uint32_t)(0 - (uint64_t)guess);
	int probes = 6, prev_dst = 0, r;
	int64_t t0, t, t1, t2, dt;
	struct tm tm;

	tm_year_yday(tp, &year, &yday);
	/* Every minute has 60 seconds in the arithmetic; see the end. */
	if (sec < 0)
		sec = 0;
	if (sec > 59)
		sec = 59;
	t0 = tm_secs_between(year, yday, hour, min, sec, 70, 0, 0, 0,
		neg_guess);
	t = t1 = t2 = t0;
	for (;;) {
		r = mk_localtime(s, &t, &tm);
		if (r <= 0)
			return r;
		dt = secs_to_tm(year, yday, hour, min, sec, &tm);
		if (dt == 0)
			break;
		/*
		 * Two guesses that send each other back: the time is in a
		 * gap. Take this side if its DST flag is the one not asked
		 * for (or, with none asked for, if it is daylight time or
		 * the other side was not).
		 */
		if (t == t1 && t != t2
			&& (tm.tm_isdst < 0
				|| (isdst < 0 ? prev_dst <= (tm.tm_isdst != 0)
					: (isdst != 0) != (tm.tm_isdst != 0))))
			goto found;
		if (--probes == 0) {
			errno = EOVERFLOW;
			return 0;
		}
		t1 = t2;
		t2 = t;
		t = (int64_t)((uint64_t)t + (uint64_t)dt);
		prev_dst = tm.tm_isdst != 0;
	}
	if (isdst_differ(isdst, tm.tm_isdst)) {
		r = mk_other_dst(s, isdst, year, yday, hour, min, sec, &t, &tm);
		if (r <= 0)
			return r;
	}
found:
	/* glibc's next guess: the offset found, whatever comes after. */
	guess = (long)((uint64_t)t - (uint64_t)t0
		- (uint64_t)(int64_t)neg_guess);
	if (sec_requested != tm.tm_sec) {
		/* The seconds asked for, out of range ones included. */
		int64_t adj = (int64_t)(sec == 0 && tm.tm_sec == 60) - sec
			+ sec_requested;
		int64_t ta;

		if (__builtin_add_overflow(t, adj, &ta)) {
			errno = EOVERFLOW;
			r = 0;
		} else {
			r = snap_localtime(s, ta, &tm);
		}
		if (r < 0)
			return r;	/* glibc answers, and sets its guess */
		mk_guess_set(guess);
		if (r == 0)
			return 0;
		t = ta;
	} else {
		mk_guess_set(guess);
	}
	if ((time_t)t != t) {
		errno = EOVERFLOW;
		return 0;
	}
	*tp = tm;
	*res = (time_t)t;
	return 1;
}

/*
 * After glibc's mktime() answered in our place: its guess is now the
 * offset of its answer from the fields' naive UTC time; keep the same.
 */
static void mk_guess_from(const struct tm *in, time_t res,
		const struct tm *out)
{
	int64_t year, yday;

	/* -1 with *tp untouched is a failure, which leaves the guess. */
	if (res == (time_t)-1 && !memcmp(in, out, sizeof(*in)))
		return;
	tm_year_yday(in, &year, &yday);
	mk_guess_set((long)((uint64_t)(int64_t)res
		- (uint64_t)tm_secs_between(year, yday, in->tm_hour,
			in->tm_min, in->tm_sec, 70, 0, 0, 0, 0)));
}

static time_t mk_local(struct tm *tp, mk_fn glibc_fn)
{
	const struct tz_snap *s;
	struct tm in;
	time_t res = -1;
	int r, e;

	tz_sync();
	e = errno;
	urcu_rseq_read_lock();
	s = rcu_dereference(tz_current);
	r = s && s->kind != SNAP_GLIBC ? snap_mktime(s, tp, &res) : -1;
	urcu_rseq_read_unlock();
	if (caa_likely(r >= 0))
		return r ? res : -1;
	/* Left to glibc: as if we had not started. */
	errno = e;
	in = *tp;
	res = glibc_fn(tp);
	mk_guess_from(&in, res, tp);
	return res;
}

PRELOAD_API time_t mktime(struct tm *tp)
{
	return mk_local(tp, real.mktime);
}

PRELOAD_API time_t timelocal(struct tm *tp)
{
	return mk_local(tp, real.timelocal);
}

/*
 * timegm(): exact arithmetic on the normalized fields, then the broken-down
 * time of the result; EOVERFLOW where the result is no time_t or its year
 * no int, as glibc's.
 */
PRELOAD_API time_t timegm(struct tm *tp)
{
	__int128 mon = tp->tm_mon, year = (__int128)tp->tm_year + 1900;
	__int128 days, secs, ymon;
	int64_t y;
	time_t t;
	struct tm out;

	/* glibc's timegm() clears the hint first, whatever the outcome. */
	tp->tm_isdst = 0;
	ymon = mon >= 0 ? mon / 12 : -((11 - mon) / 12);
	year += ymon;
	mon -= ymon * 12;
	y = (int64_t)year;
	/* Days from 1970-01-01 to y-01-01, proleptic Gregorian. */
	days = (__int128)(y - 1970) * 365
		+ (DIV(y - 1, 4) - DIV((int64_t)1969, 4))
		- (DIV(y - 1, 100) - DIV((int64_t)1969, 100))
		+ (DIV(y - 1, 400) - DIV((int64_t)1969, 400));
	days += mon_yday[is_leap(y)][mon] + (__int128)tp->tm_mday - 1;
	secs = days * SECS_PER_DAY + (__int128)tp->tm_hour * 3600
		+ (__int128)tp->tm_min * 60 + tp->tm_sec;
	t = (time_t)secs;
	if (secs != t || !offtime(t, 0, &out)) {
		errno = EOVERFLOW;
		return -1;
	}
	set_zone(&out, 0, 0, "GMT");
	*tp = out;
	return t;
}

/* Tests find this with dlsym() to know the preload is in effect. */
PRELOAD_API const char urcu_rseq_tz_preload[] = "liburcu-rseq-tz";

/*
 * For tests: 1 if the zone in effect is left to glibc, 0 if served from a
 * snapshot, -1 before the first conversion or tzset().
 */
PRELOAD_API int urcu_rseq_tz_preload_uses_glibc(void)
{
	struct tz_snap *s;
	int r;

	urcu_rseq_read_lock();
	s = rcu_dereference(tz_current);
	r = s ? s->kind == SNAP_GLIBC : -1;
	urcu_rseq_read_unlock();
	return r;
}
