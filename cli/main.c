// SPDX-License-Identifier: GPL-2.0
/*
 * xdpr - command line of the xdpr XDP router.
 *
 *   xdpr [OPTIONS] OBJECT COMMAND [ARGS]
 */
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "cli.h"
#include "conf.h"
#include "out.h"

#include "version.h" /* XDPR_VERSION, XDPR_BPF_ID (Makefile) */

struct cli_opts opts;

int fail(int code, const char *fmt, ...)
{
	char msg[8192];
	va_list ap;

	fflush(stdout);
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	/* one line, whatever the user typed: control characters as \xNN */
	fputs("Error: ", stderr);
	for (const unsigned char *p = (const unsigned char *)msg; *p; p++)
		if (*p < 0x20 || *p == 0x7f)
			fprintf(stderr, "\\x%02x", *p);
		else
			fputc(*p, stderr);
	fputc('\n', stderr);
	return code;
}

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: xdpr [OPTIONS] OBJECT COMMAND [ARGS]\n"
		"       xdpr [OPTIONS] link attach DEV [DEV ...] [mode {native|skb}] [force]\n"
		"       xdpr [OPTIONS] link detach { DEV [DEV ...] | all } [force]\n"
		"       xdpr [OPTIONS] link show [DEV]\n"
		"       xdpr [OPTIONS] link sync      (VLANs, MACs and forwards' addresses as the kernel has them)\n"
		"       xdpr [OPTIONS] stats [show] [dev DEV] [interval SECS [count N]]\n"
		"       xdpr [OPTIONS] stats -o { prometheus | text }\n"
		"       xdpr [OPTIONS] nat { add | replace | del | show | sessions | flush | gc | timeout | limit } ...\n"
		"       xdpr [OPTIONS] route { add | replace | del | flush | show | load } ...\n"
		"       xdpr [OPTIONS] filter { add | insert | del | flush | policy | load | show | flows } ...\n"
		"       xdpr [OPTIONS] set { add | del | flush | show } ...\n"
		"       xdpr [OPTIONS] flow { meter { on [sample N] | off } | show | flush }\n"
		"       xdpr [OPTIONS] ddos { on | off | protect | show | ban | unban | flush } ...\n"
		"       xdpr [OPTIONS] top [n N] [by { pps | bps }] [interval SECS] [count N]\n"
		"       xdpr save                     (the running state, in the words restore reads)\n"
		"       xdpr restore { FILE | - }     (make the running state that file's, all or nothing)\n"
		"       xdpr help\n"
		"OPTIONS := { -j|--json  -p|--pretty  -s|--stats (twice: per CPU)  -V|--version  -h|--help }\n");
}

static const struct {
	const char *name;
	int (*fn)(int argc, char **argv);
} objects[] = {
	{ "link",  do_link },
	{ "stats", do_stats },
	{ "nat",   do_nat },
	{ "route", do_route },
	{ "filter", do_filter },
	{ "set",   do_set },
	{ "flow",  do_flow },
	{ "ddos",  do_ddos },
	{ "top",   do_top },
	{ "save",  do_save },
	{ "restore", do_restore },
};

int main(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "json",    no_argument, NULL, 'j' },
		{ "pretty",  no_argument, NULL, 'p' },
		{ "stats",   no_argument, NULL, 's' },
		{ "version", no_argument, NULL, 'V' },
		{ "help",    no_argument, NULL, 'h' },
		{ 0 }
	};
	int c, ret;

	opterr = 0;
	while ((c = getopt_long(argc, argv, "+jpsVh", lopts, NULL)) != -1) {
		switch (c) {
		case 'j': opts.json = true; break;
		case 'p': opts.json = opts.pretty = true; break;
		case 's': opts.detail++; break;
		case 'V': printf("xdpr %s\ndatapath build %s\n", XDPR_VERSION, XDPR_BPF_ID); return EXIT_OK;
		case 'h': usage(stdout); return EXIT_OK;
		default:
			return fail(EXIT_USAGE, "unknown option \"%s\"", argv[optind - 1]);
		}
	}
	argc -= optind;
	argv += optind;
	if (argc < 1) {
		return fail(EXIT_USAGE, "missing OBJECT");
	}
	if (!strcmp(argv[0], "help")) {
		usage(stdout);
		return EXIT_OK;
	}
	out_init(stdout, opts.json, opts.pretty);
	for (size_t i = 0; i < sizeof(objects) / sizeof(objects[0]); i++) {
		if (!strcmp(argv[0], objects[i].name)) {
			ret = objects[i].fn(argc - 1, argv + 1);
			fflush(stdout);
			return ret;
		}
	}
	return fail(EXIT_USAGE, "unknown object \"%s\"", argv[0]);
}
