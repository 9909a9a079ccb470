/* SPDX-License-Identifier: GPL-2.0 */
/*
 * ddos.h - DDoS detection in xdprd (daemon/ddos.c): the file's "ddos"
 * lines applied to the fast path's meters, and a tick a second that reads
 * them, averages each host's packet and bit rate over the window, bans the
 * hosts above a threshold for the ban time, removes ended bans, forgets
 * idle hosts and keeps the blackhole routes equal to the live bans that
 * carry XDPR_DDOS_F_BLACKHOLE.
 */
#ifndef XDPR_DDOS_D_H
#define XDPR_DDOS_D_H

#include <stdio.h>
#include "conf.h"
#include "blackhole.h"

#define DDOS_IDLE_S 60 /* a host silent this long is deleted from the meters */

/* The file's lines, x opened and locked: prefixes, meters, sample.  Logs through log. */
void ddos_configure(struct xdpr *x, const struct conf_ddos *want, const char *why);
/* One tick, x opened and locked. */
void ddos_tick(struct xdpr *x);
/* Stopping: the blackhole routes withdrawn (the bans stay in the fast path and end there). */
void ddos_stop(void);
bool ddos_active(void);
void ddos_metrics(FILE *f);
/* xdprd's logger (daemon/xdprd.c). */
void ddos_log(int prio, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
