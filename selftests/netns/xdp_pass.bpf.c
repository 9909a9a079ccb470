// SPDX-License-Identifier: GPL-2.0
/*
 * xdp_pass.bpf.c - a foreign XDP program for the netns tests: passes every
 * frame to the kernel.  Built by the tests that need one (clang, into their
 * temporary folder); it is not part of xdpr.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

SEC("xdp")
int xdp_pass(struct xdp_md *ctx)
{
	return XDP_PASS;
}

char _license[] SEC("license") = "GPL";
