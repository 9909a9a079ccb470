/* SPDX-License-Identifier: GPL-2.0 */
/*
 * frame.h - a test frame, one BPF_PROG_TEST_RUN of it, and byte-exact
 * comparison with the first difference named; shared by the forwarding
 * and route-map tables.  Include after harness.h.
 */
#ifndef XDPR_TEST_FRAME_H
#define XDPR_TEST_FRAME_H

#include <bpf/libbpf.h>

#define FRAME_MAX 2048

struct frame {
	__u8 b[FRAME_MAX];
	int len;     /* Ethernet frame bytes */
	int linear;  /* bytes in the linear area the program sees; 0: all of them */
	int l3, l4;  /* header offsets */
};

/* One BPF_PROG_TEST_RUN of one frame; out gets the frame as the program left it. */
static int run_frame(int prog_fd, __u32 ifindex, const struct frame *f, struct frame *out, __u32 *verdict)
{
	struct xdp_md ctx = { .data_end = f->linear ?: f->len, .ingress_ifindex = ifindex };
	LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = f->b, .data_size_in = f->len,
		    .data_out = out->b, .data_size_out = sizeof(out->b), .ctx_in = &ctx,
		    .ctx_size_in = sizeof(ctx), .repeat = 1);

	if (bpf_prog_test_run_opts(prog_fd, &o))
		return -errno;
	*verdict = o.retval;
	out->len = o.data_size_out;
	out->l3 = f->l3;
	out->l4 = f->l4;
	return 0;
}

static const char *where(const struct frame *f, int off)
{
	static char s[32];

	if (off < 6)
		return "eth dst";
	if (off < 12)
		return "eth src";
	if (off < f->l3)
		return "eth type / tags";
	if (off < f->l4)
		snprintf(s, sizeof(s), "l3 header +%d", off - f->l3);
	else
		snprintf(s, sizeof(s), "l4 +%d", off - f->l4);
	return s;
}

/* Compare frames; note the first difference. */
static bool same_bytes(const struct frame *want, const struct frame *got)
{
	int n = want->len < got->len ? want->len : got->len;

	if (want->len != got->len)
		note("frame length: expected %d, got %d", want->len, got->len);
	for (int i = 0; i < n; i++)
		if (want->b[i] != got->b[i]) {
			note("first differing byte at offset %d (%s): expected 0x%02x, got 0x%02x", i,
			     where(want, i), want->b[i], got->b[i]);
			return false;
		}
	return want->len == got->len;
}

#endif /* XDPR_TEST_FRAME_H */
