// SPDX-License-Identifier: GPL-2.0
/* out.c - text/JSON writer (see out.h). */
#include <stdarg.h>
#include <string.h>
#include "out.h"

#define MAX_DEPTH 16

static struct {
	FILE *f;
	bool json, pretty;
	int depth;
	bool first[MAX_DEPTH]; /* no member written yet at this depth */
} o;

void out_init(FILE *f, bool json, bool pretty)
{
	memset(&o, 0, sizeof(o));
	o.f = f;
	o.json = json;
	o.pretty = pretty;
	o.first[0] = true;
}

bool out_is_json(void)
{
	return o.json;
}

void json_escape(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char c = *s;

		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c == '\n')
			fputs("\\n", f);
		else if (c == '\t')
			fputs("\\t", f);
		else if (c < 0x20)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

/* Separator, indentation and key before a JSON member. */
static void member(const char *key)
{
	if (!o.first[o.depth])
		fputc(',', o.f);
	o.first[o.depth] = false;
	if (o.pretty && o.depth > 0)
		fprintf(o.f, "\n%*s", 2 * o.depth, "");
	if (key) {
		json_escape(o.f, key);
		fputs(o.pretty ? ": " : ":", o.f);
	}
}

static void open(const char *key, char c)
{
	if (!o.json)
		return;
	member(key);
	fputc(c, o.f);
	if (o.depth < MAX_DEPTH - 1)
		o.first[++o.depth] = true;
}

static void close_(char c)
{
	bool empty;

	if (!o.json)
		return;
	empty = o.first[o.depth];
	if (o.depth > 0)
		o.depth--;
	if (o.pretty && !empty)
		fprintf(o.f, "\n%*s", 2 * o.depth, "");
	fputc(c, o.f);
}

void out_obj_open(const char *key)  { open(key, '{'); }
void out_obj_close(void)            { close_('}'); }
void out_arr_open(const char *key)  { open(key, '['); }
void out_arr_close(void)            { close_(']'); }

void out_u64(const char *key, const char *fmt, uint64_t v)
{
	if (o.json) {
		member(key);
		fprintf(o.f, "%llu", (unsigned long long)v);
	} else if (fmt) {
		fprintf(o.f, fmt, (unsigned long long)v);
	}
}

void out_str(const char *key, const char *fmt, const char *v)
{
	if (o.json) {
		member(key);
		json_escape(o.f, v);
	} else if (fmt) {
		fprintf(o.f, fmt, v);
	}
}

void out_bool(const char *key, const char *fmt, bool v)
{
	if (o.json) {
		member(key);
		fputs(v ? "true" : "false", o.f);
	} else if (fmt) {
		fprintf(o.f, fmt, v ? "yes" : "no");
	}
}

void out_double(const char *key, const char *fmt, double v)
{
	if (o.json) {
		member(key);
		fprintf(o.f, "%.3f", v);
	} else if (fmt) {
		fprintf(o.f, fmt, v);
	}
}

void out_text(const char *fmt, ...)
{
	va_list ap;

	if (o.json)
		return;
	va_start(ap, fmt);
	vfprintf(o.f, fmt, ap);
	va_end(ap);
}

void out_flush_doc(void)
{
	if (o.json) {
		fputc('\n', o.f);
		o.depth = 0;
		o.first[0] = true;
	}
	fflush(o.f);
}
