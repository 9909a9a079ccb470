/* SPDX-License-Identifier: GPL-2.0 */
/* cli.h - shared pieces of the xdpr command. */
#ifndef XDPR_CLI_H
#define XDPR_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include "libxdpr.h"

enum { EXIT_OK = 0, EXIT_FAIL = 1, EXIT_USAGE = 2 };

struct cli_opts {
	bool json;
	bool pretty;
	int detail; /* -s count: 1 all reasons, 2 per CPU */
};
extern struct cli_opts opts;

/* Print "Error: ..." as one line on stderr and return the exit code. */
int fail(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Each line of a library note as "warning: ..." on stderr. */
void print_warnings(const char *note);
/* x->info lines as "note: ..." on stderr. */
void print_info(const char *info);
/* xdpr_vlan_sync, and the view refreshed when it changed something: 0, or -errno with x->err. */
int sync_vlans(struct xdpr *x);
/*
 * xdpr_open, and under the lock (XDPR_O_LOCK) finish or undo what a killed
 * NAT command left (xdpr_nat_repair): 0, or the exit code of the one
 * "Error:" line it printed (the handle closed).
 */
int open_router(struct xdpr *x, unsigned int flags);

/* Parsed command lines (pure functions: unit-tested without privileges). */
struct attach_args {
	char *devs[XDPR_MAX_IFACES];
	int ndev;
	enum xdpr_mode mode;
	bool force;
};

struct detach_args {
	char *devs[XDPR_MAX_IFACES];
	int ndev; /* 0: all */
	bool force;
};

struct stats_args {
	const char *dev;     /* NULL: every interface */
	unsigned int interval; /* seconds, 0: one snapshot */
	unsigned long count;   /* samples in interval mode, 0: until Ctrl-C */
	bool prom, prom_given; /* -o prometheus */
};

/* 0, or EXIT_USAGE with the message in err. */
int parse_attach(int argc, char **argv, struct attach_args *a, char *err, size_t len);
int parse_detach(int argc, char **argv, struct detach_args *a, char *err, size_t len);
/*
 * Before attaching devs: netfilter rules that packets forwarded by XDP
 * would bypass (with those already attached); refused unless force.
 * EXIT_OK (nf says what was found) or EXIT_FAIL with the message in err.
 */
struct xdpr_nf_report;
/*
 * 1 while forwarded traffic goes through the kernel because netfilter has
 * rules XDP would bypass (added after the attach), what they are in list;
 * 0 when XDP forwards (list "").
 */
int nft_fallback(struct xdpr *x, char *list, size_t len);
int attach_guard(struct xdpr *x, char *const *devs, int n, bool force, struct xdpr_nf_report *nf,
		 char *err, size_t len);
int parse_stats(int argc, char **argv, struct stats_args *a, char *err, size_t len);
/* Whole number in [min, max]; 0 on success. */
int parse_uint(const char *s, unsigned long min, unsigned long max, unsigned long *out);

struct nat_rule_args {
	const char *dev;
	struct xdpr_nat_rule r; /* flags, src, pool, ports */
	bool addr_zero;         /* forwards: "addr 0.0.0.0" given (0 means "DEV's" in r) */
};

int parse_prefix4(const char *s, __be32 *net, __be32 *mask, char *err, size_t len);
int parse_nat_rule(int argc, char **argv, struct nat_rule_args *a, char *err, size_t len);
/* "in DEV [proto tcp|udp] [addr ADDR] dport P[-P] to ADDR[:P[-P]]"; del: without "to" */
int parse_nat_fwd(int argc, char **argv, struct nat_rule_args *a, bool del, char *err, size_t len);
int parse_knobs(const char *cmd, int argc, char **argv, struct xdpr_cfg *c, char *err, size_t len);

int do_link(int argc, char **argv);
int do_stats(int argc, char **argv);
int do_nat(int argc, char **argv);
int do_route(int argc, char **argv);
int parse_prefix(const char *s, struct xdpr_route_spec *rs, char *err, size_t len);
/* 0, EXIT_USAGE (bad words) or EXIT_FAIL (unknown device), message in err */
int parse_route(int argc, char **argv, struct xdpr_route_spec *rs, char *err, size_t len);
struct xdpr;
int print_nat_rules(struct xdpr *x, bool counters_only);

/* 1:1 NAT (cli/binat.c): "nat add binat DEV inside PREFIX outside PREFIX", "nat del binat DEV [inside PREFIX]" */
struct binat_args {
	const char *dev;
	__be32 in_net, out_net;
	int plen;               /* del without "inside": -1 (every rule of DEV) */
};
/* The words after "binat": 0 or EXIT_USAGE with the message in err. */
int parse_binat(int argc, char **argv, struct binat_args *a, bool del, char *err, size_t len);
int do_binat(const char *cmd, int argc, char **argv);
/* The rule in the words "nat add" reads back (after "nat add "). */
void fmt_binat(const struct xdpr_binat_rule *r, char *buf, size_t len);
/* Rules as objects of the array print_nat_rules opened: 0 or -errno. */
int print_binat_rules(struct xdpr *x);

int do_filter(int argc, char **argv);
int do_set(int argc, char **argv);
int do_flow(int argc, char **argv); /* cli/flow.c */
int do_ddos(int argc, char **argv); /* cli/ddos.c */
int do_top(int argc, char **argv);  /* cli/ddos.c */
/* "[to|from] ADDR [time S|forever] [blackhole]" (unban: the address only); secs 0: forever. */
int parse_ddos_ban(int argc, char **argv, bool unban, struct xdpr_ddos_ban_info *b, __u64 *secs,
		   char *err, size_t len);
/* The words after "filter add": 0 or EXIT_USAGE with the message in err. */
int parse_filter_rule(int argc, char **argv, struct xdpr_flt_spec *r, char *err, size_t len);
/* A rule in canonical words, the ones parse_filter_rule reads back to it. */
void fmt_filter_rule(const struct xdpr_flt_spec *r, char *buf, size_t len);
/*
 * A "filter load" file: one rule a line, '#' comments, blank lines.  *out
 * and *lines (the line of each rule) malloc'd.  0, or EXIT_USAGE / EXIT_FAIL
 * with the message in err and the line in *errline.
 */
int parse_filter_file(FILE *f, struct xdpr_flt_spec **out, size_t **lines, size_t *n,
		      size_t *errline, char *err, size_t len);
/* Set names: 1-31 of [A-Za-z0-9_.-]. */
bool set_name_ok(const char *s);
/* A set member: PREFIX of either family, host bits zero. */
int parse_member(const char *s, struct xdpr_flt_member *m, char *err, size_t len);

/* "2026-11-30T04:15:26Z" */
void fmt_time(unsigned long long t, char *buf, size_t len);

#endif
