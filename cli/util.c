// SPDX-License-Identifier: GPL-2.0
/* util.c - small parsing and formatting helpers. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "cli.h"

int parse_uint(const char *s, unsigned long min, unsigned long max, unsigned long *out)
{
	unsigned long v;
	char *end;

	if (!s || *s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || v < min || v > max)
		return -ERANGE;
	*out = v;
	return 0;
}

void fmt_time(unsigned long long t, char *buf, size_t len)
{
	time_t tt = (time_t)t;
	struct tm tm;

	gmtime_r(&tt, &tm);
	strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* Each line of text on stderr after prefix. */
static void print_lines(const char *prefix, const char *text)
{
	const char *nl;

	fflush(stdout);
	for (; text && *text; text = nl ? nl + 1 : text + strlen(text)) {
		nl = strchr(text, '\n');
		fprintf(stderr, "%s%.*s\n", prefix, nl ? (int)(nl - text) : (int)strlen(text), text);
	}
}

void print_warnings(const char *note)
{
	print_lines("warning: ", note);
}

void print_info(const char *info)
{
	print_lines("note: ", info);
}

int sync_vlans(struct xdpr *x)
{
	static char note[sizeof(x->note)], info[sizeof(x->info)];
	int n = xdpr_vlan_sync(x);

	if (n > 0) { /* the view with the VLANs as they are now (xdpr_open clears x) */
		memcpy(note, x->note, sizeof(note));
		memcpy(info, x->info, sizeof(info));
		n = xdpr_refresh(x);
		memcpy(x->note, note, sizeof(note));
		memcpy(x->info, info, sizeof(info));
	}
	return n;
}

int open_router(struct xdpr *x, unsigned int flags)
{
	int err = xdpr_open(x, flags);

	/* under the lock: finish or undo what a killed command left, VLANs as the kernel has them */
	if (!err && (flags & XDPR_O_LOCK))
		err = xdpr_nat_repair(x, NULL, 0);
	if (!err && (flags & XDPR_O_LOCK)) {
		err = sync_vlans(x);
		print_warnings(x->note);
		print_info(x->info);
		x->note[0] = x->info[0] = 0;
	}
	if (err) {
		xdpr_close(x);
		return fail(EXIT_FAIL, "%s", x->err);
	}
	return 0;
}
