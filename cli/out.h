/* SPDX-License-Identifier: GPL-2.0 */
/*
 * out.h - one code path for text and JSON output.
 *
 * Every value is printed with a key (used in JSON) and a printf format (used
 * in text); objects and arrays open and close in JSON and vanish in text.
 */
#ifndef XDPR_OUT_H
#define XDPR_OUT_H

#include <stdbool.h>
#include <stdio.h>
#include <stdint.h>

void out_init(FILE *f, bool json, bool pretty);
bool out_is_json(void);

void out_obj_open(const char *key);   /* key NULL inside arrays / at top level */
void out_obj_close(void);
void out_arr_open(const char *key);
void out_arr_close(void);

void out_u64(const char *key, const char *fmt, uint64_t v);
void out_str(const char *key, const char *fmt, const char *v);
void out_bool(const char *key, const char *fmt, bool v);
void out_double(const char *key, const char *fmt, double v);
/* Text only (headers, separators, newlines). */
void out_text(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* End of one JSON document (newline; used by streaming output). */
void out_flush_doc(void);

/* JSON string escaping, exposed for tests. */
void json_escape(FILE *f, const char *s);

#endif
