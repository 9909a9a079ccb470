// SPDX-License-Identifier: GPL-2.0
/*
 * jitdump - write the x86 code the kernel's JIT made for one function of a
 * loaded BPF program (its main program or one of its subprograms), so that
 * objdump can show what a profile's sample addresses point at (bench only).
 *
 *   jitdump PROG_ID NAME FILE     0 on success; "Error: ..." and 1 (2: usage)
 *
 * NAME is the function's name as the kernel lists it (/proc/kallsyms, perf:
 * bpf_prog_<tag>_<name>), its whole symbol or just <name>.  Debian 12's
 * bpftool cannot disassemble ("No libbfd support") and the VM has no
 * /proc/kcore; this reads the image through BPF_OBJ_GET_INFO_BY_FD, whose
 * jited_prog_insns hold the functions one after another in jited_ksyms'
 * order, jited_func_lens long each.  Then:
 *
 *   objdump -D -b binary -mi386:x86-64 FILE
 *
 * and a sample at bpf_prog_..._NAME+0x1f6 (perf script -F ip,sym,symoff)
 * is the instruction at 1f6.  See bench/README, "Where an established
 * packet's time goes".
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>

/* Does the kernel symbol sym name the function want (its whole symbol, or the part after the tag)? */
static int names(const char *sym, const char *want)
{
	size_t n = strlen(sym), w = strlen(want);

	if (!strcmp(sym, want))
		return 1;
	/* bpf_prog_<16 hex digits>_<name> */
	return !strncmp(sym, "bpf_prog_", 9) && n == 9 + 16 + 1 + w && !strcmp(sym + 26, want);
}

/*
 * Which of the program's n functions (their addresses ksyms) is want?  One
 * pass over /proc/kallsyms: its index, with its symbol in sym; -1 if none.
 */
static int func_named(const unsigned long long *ksyms, __u32 n, const char *want, char *sym, size_t len)
{
	unsigned long long a;
	char line[512], name[256];
	FILE *f = fopen("/proc/kallsyms", "r");
	int found = -1;

	if (!f)
		return -1;
	while (found < 0 && fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%llx %*s %255s", &a, name) != 2 || !names(name, want))
			continue;
		for (__u32 i = 0; i < n && found < 0; i++)
			if (ksyms[i] == a) {
				snprintf(sym, len, "%s", name);
				found = i;
			}
	}
	fclose(f);
	return found;
}

int main(int argc, char **argv)
{
	struct bpf_prog_info info = {};
	__u32 len = sizeof(info), n, i;
	unsigned long long *ksyms = NULL, off = 0;
	__u32 *lens = NULL;
	unsigned char *img = NULL;
	char sym[256];
	int fd, f, rc = 1;
	FILE *out;

	if (argc != 4) {
		fprintf(stderr, "Usage: jitdump PROG_ID NAME FILE\n");
		return 2;
	}
	fd = bpf_prog_get_fd_by_id(atoi(argv[1]));
	if (fd < 0 || bpf_obj_get_info_by_fd(fd, &info, &len)) {
		fprintf(stderr, "Error: program %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	n = info.nr_jited_ksyms;
	if (!n || !info.jited_prog_len) {
		fprintf(stderr, "Error: program %s has no JIT image (JIT off, or no rights to read it)\n", argv[1]);
		goto out;
	}
	ksyms = calloc(n, sizeof(*ksyms));
	lens = calloc(n, sizeof(*lens));
	img = malloc(info.jited_prog_len);
	if (!ksyms || !lens || !img) {
		fprintf(stderr, "Error: out of memory\n");
		goto out;
	}
	{
		struct bpf_prog_info want = {
			.nr_jited_ksyms = n,
			.jited_ksyms = (__u64)(unsigned long)ksyms,
			.nr_jited_func_lens = n,
			.jited_func_lens = (__u64)(unsigned long)lens,
			.jited_prog_len = info.jited_prog_len,
			.jited_prog_insns = (__u64)(unsigned long)img,
		};

		len = sizeof(want);
		if (bpf_obj_get_info_by_fd(fd, &want, &len)) {
			fprintf(stderr, "Error: program %s: %s\n", argv[1], strerror(errno));
			goto out;
		}
	}
	f = func_named(ksyms, n, argv[2], sym, sizeof(sym));
	if (f >= 0) {
		for (i = 0; i < (__u32)f; i++)
			off += lens[i];
		if (off + lens[f] > info.jited_prog_len) {
			fprintf(stderr, "Error: the image is shorter than its functions\n");
			goto out;
		}
		out = fopen(argv[3], "wb");
		if (!out || fwrite(img + off, 1, lens[f], out) != lens[f] || fclose(out)) {
			fprintf(stderr, "Error: cannot write %s: %s\n", argv[3], strerror(errno));
			goto out;
		}
		printf("%s: %u bytes at 0x%llx\n", sym, lens[f], ksyms[f]);
		rc = 0;
		goto out;
	}
	fprintf(stderr, "Error: program %s has no function %s among its %u\n", argv[1], argv[2], n);
out:
	free(ksyms);
	free(lens);
	free(img);
	close(fd);
	return rc;
}
