# SPDX-License-Identifier: GPL-2.0
# filter_swap_udp.py - UDP traffic for filter_swap.t (run with python3 in a namespace):
#
#   flood CPU SRC_FIRST DST DPORT STOP_FILE SECONDS
#       pinned to CPU, sends UDP datagrams to DST:DPORT, every one a new
#       flow: source SRC_FIRST with ports 1024-65535, then the next address,
#       and so on (a raw socket writes the headers, checksums included).  Runs
#       until STOP_FILE exists (or SECONDS pass).  A datagram counts as sent
#       only when the kernel took it: IP_RECVERR makes a drop on the way out
#       (ENOBUFS, a full veth ring) an error instead of a silent success.
#       Prints "cpuN on cpuM sent K from A addresses nobufs E errors F".
#   count PORT OUT_FILE
#       receives on PORT; every 0.5 s, after 0.2 s of silence and on SIGTERM, writes
#       "received N duplicates D foreign F" to OUT_FILE (duplicates: the same
#       sender's sequence number twice; foreign: not a flood datagram).
#   race NFLOWS PORT0 DST DPORT WAIT
#       NFLOWS UDP sockets bound to PORT0, PORT0+1, ...; forks: the parent
#       on CPU 0, the child on CPU 1.  Both send one datagram on each socket
#       in turn, flow k at start + k * 100 us, the same flow from both CPUs
#       at the same instant.  The parent then reads the answers (WAIT s at
#       most) and prints "cpuN on cpuM sent K" for both, then
#       "answers A flows F" (F: sockets that got two answers).
import errno, os, select, signal, socket, struct, sys, time


def csum_fold(s):
    while s >> 16:
        s = (s & 0xffff) + (s >> 16)
    return s


def last_cpu():
    return open("/proc/self/stat").read().rsplit(")", 1)[1].split()[36]  # field 39: last CPU


def flood(cpu, src_first, dst, dport, stop, secs):
    os.sched_setaffinity(0, {cpu})
    s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW)  # IP_HDRINCL
    s.setsockopt(socket.IPPROTO_IP, 11, 1)  # IP_RECVERR
    s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 22)
    src0 = struct.unpack("!I", socket.inet_aton(src_first))[0]
    daddr = socket.inet_aton(dst)
    # payload: "fswap", the CPU, a sequence number (the receiver spots duplicates)
    plen = 5 + 1 + 4
    ulen = 8 + plen
    pkt = bytearray(20 + ulen)
    struct.pack_into("!BBHHHBBH4s4s", pkt, 0, 0x45, 0, 20 + ulen, 0, 0x4000, 64, 17, 0, b"\0" * 4, daddr)
    struct.pack_into("!HHHH5sB", pkt, 20, 0, dport, ulen, 0, b"fswap", cpu)
    # UDP checksum: pseudo header and the constant words, then what changes
    fixed = sum(struct.unpack("!2H", daddr)) + 17 + ulen + dport + ulen
    fixed += sum(struct.unpack("!2H", b"fswa")) + (ord("p") << 8 | cpu)
    sent = nobufs = errors = seq = 0
    addr = src0
    sport = 1024
    end = time.monotonic() + secs
    while True:
        if (seq & 255) == 0 and (os.path.exists(stop) or time.monotonic() > end):
            break
        struct.pack_into("!4s", pkt, 12, struct.pack("!I", addr))
        c = fixed + (addr >> 16) + (addr & 0xffff) + sport + (seq >> 16) + (seq & 0xffff)
        c = 0xffff - csum_fold(c)
        struct.pack_into("!H", pkt, 20, sport)
        struct.pack_into("!H", pkt, 26, c or 0xffff)
        struct.pack_into("!I", pkt, 34, seq)
        try:
            s.sendto(pkt, (dst, 0))
            sent += 1
        except OSError as e:
            if e.errno == errno.ENOBUFS:
                nobufs += 1
            else:
                errors += 1
                if errors == 1:
                    sys.stderr.write("cpu%d: %s\n" % (cpu, e))
        seq += 1  # a datagram not taken is not sent again: every flow is new
        sport += 1
        if sport > 65535:
            sport = 1024
            addr += 1
    print("cpu%d on cpu%s sent %d from %d addresses nobufs %d errors %d" %
          (cpu, last_cpu(), sent, addr - src0 + 1, nobufs, errors), flush=True)


def count(port, out):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, 33, 256 << 20)  # SO_RCVBUFFORCE
    s.bind(("0.0.0.0", port))
    s.settimeout(0.2)
    seen = [bytearray(1 << 20), bytearray(1 << 20)]  # a bit per sequence number and CPU
    st = {"n": 0, "dup": 0, "foreign": 0}

    def report(*_):
        with open(out + ".tmp", "w") as f:
            f.write("received %d duplicates %d foreign %d\n" % (st["n"], st["dup"], st["foreign"]))
        os.rename(out + ".tmp", out)

    def term(*_):
        report()
        os._exit(0)

    signal.signal(signal.SIGTERM, term)
    report()
    buf = bytearray(2048)
    due = time.monotonic() + 0.5
    while True:
        try:
            n = s.recv_into(buf)
        except socket.timeout:
            report()
            continue
        st["n"] += 1
        if (st["n"] & 1023) == 0 and time.monotonic() > due:
            report()
            due = time.monotonic() + 0.5
        if n != 10 or buf[:5] != b"fswap" or buf[5] > 1:
            st["foreign"] += 1
            continue
        q = struct.unpack_from("!I", buf, 6)[0]
        m = seen[buf[5]]
        if q >> 3 >= len(m):
            m.extend(bytearray((q >> 3) - len(m) + (1 << 20)))
        if m[q >> 3] & (1 << (q & 7)):
            st["dup"] += 1
        m[q >> 3] |= 1 << (q & 7)


def race(nflows, port0, dst, dport, wait):
    socks = []
    for k in range(nflows):
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.bind(("0.0.0.0", port0 + k))
        socks.append(s)
    start = time.monotonic() + 0.3
    pid = os.fork()
    cpu = 1 if pid == 0 else 0
    os.sched_setaffinity(0, {cpu})
    n = 0
    for k, s in enumerate(socks):
        t = start + k * 0.0001
        while time.monotonic() < t:
            pass
        s.sendto(b"race flow %d cpu%d" % (k, cpu), (dst, dport))
        n += 1
    line = b"cpu%d on cpu%s sent %d\n" % (cpu, last_cpu().encode(), n)
    if pid == 0:
        os.write(1, line)
        os._exit(0)
    _, st = os.waitpid(pid, 0)
    os.write(1, line)
    got = [0] * nflows
    end = time.monotonic() + wait
    while sum(got) < 2 * nflows:
        left = end - time.monotonic()
        if left <= 0:
            break
        for s in select.select(socks, [], [], left)[0]:
            s.recv(2048)
            got[socks.index(s)] += 1
    print("answers %d flows %d" % (sum(got), sum(1 for g in got if g == 2)), flush=True)
    sys.exit(os.waitstatus_to_exitcode(st))


a = sys.argv[1:]
if a[0] == "flood":
    flood(int(a[1]), a[2], a[3], int(a[4]), a[5], float(a[6]))
elif a[0] == "count":
    count(int(a[1]), a[2])
elif a[0] == "race":
    race(int(a[1]), int(a[2]), a[3], int(a[4]), float(a[5]))
else:
    sys.exit("usage: filter_swap_udp.py { flood | count | race } ...")
