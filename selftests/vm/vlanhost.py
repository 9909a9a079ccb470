#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""vlanhost.py - the host's end of an 802.1Q trunk, for selftests/vm/vlan.t.

The host kernel here has no 802.1Q support, so this script terminates VLANs
in user space, on the tap that is the QEMU backend of a guest trunk port.
Frames are read with an AF_PACKET socket: the host kernel moves an in-band
tag into skb metadata on receive, PACKET_AUXDATA gives it back (TPID and
TCI), and every frame is handled with its tags in-band again.

  relay   VID <-> untagged tap for a few VIDs (the taps are moved into host
          namespaces by the caller: real Linux stacks on those VLANs); for
          every other VID of the list, a minimal host that answers ARP,
          IPv6 neighbour solicitations and ICMP/ICMPv6 echo requests.
  sweep   one tagged echo request per VLAN (to an address behind the guest's
          untagged port, or VLAN i -> VLAN i+1 on the same trunk), every
          reply and every forwarded request checked byte-wise: TPID 0x8100,
          the VID, DEI 0, PCP as the guest kernel sets it, TTL / hop limit
          decremented, addresses.
  inject  echo requests with any stack of tags (unknown VIDs, VID 0,
          802.1ad, two 802.1Q tags).
  pcap    summary of a tcpdump -w file (tags read from the bytes).

PCP as the kernel sets it on a VLAN egress (vlan_dev_hard_start_xmit): the
egress VLAN's egress-qos-map applied to skb->priority.  IPv4 forwarding
sets skb->priority = rt_tos2priority(tos) (ip_forward); IPv6 forwarding
keeps the priority the ingress VLAN's ingress-qos-map gave the ingress PCP
(vlan_do_receive), 0 for a frame that came untagged.  Which VLANs have
which map is the guest's configuration, given here as --egress-map MAP
--egress-every K (VLANs whose index is a multiple of K have MAP) and
--ingress-map / --ingress-every likewise.
"""

import argparse
import fcntl
import ipaddress
import os
import select
import socket
import struct
import sys
import time

ETH_P_ALL = 0x0003
ETH_P_IP = 0x0800
ETH_P_ARP = 0x0806
ETH_P_IPV6 = 0x86DD
ETH_P_8021Q = 0x8100
ETH_P_8021AD = 0x88A8
SOL_PACKET = 263
PACKET_AUXDATA = 8
PACKET_OUTGOING = 4
TP_STATUS_VLAN_VALID = 1 << 4
TP_STATUS_VLAN_TPID_VALID = 1 << 6
SO_RCVBUFFORCE = 33
TUNSETIFF = 0x400454CA
IFF_TAP = 0x0002
IFF_NO_PI = 0x1000

# ip_tos2prio[] of net/ipv4/route.c, indexed by IPTOS_TOS(tos) >> 1
TOS2PRIO = [0, 0, 0, 0, 2, 2, 2, 2, 6, 6, 6, 6, 4, 4, 4, 4]
# TOS / traffic class and PCP the sweep sends, by VLAN index modulo 4 (with
# ECN bits in two of them: rt_tos2priority must ignore them)
SWEEP_TOS = [0x00, 0x08, 0x11, 0x1A]
SWEEP_PCP = [0, 3, 5, 7]


def rt_tos2priority(tos):
    return TOS2PRIO[(tos & 0x1E) >> 1]


def parse_vids(text):
    vids = []
    for part in text.split(","):
        if "-" in part:
            lo, hi = part.split("-")
            vids.extend(range(int(lo), int(hi) + 1))
        elif part:
            vids.append(int(part))
    return vids


def parse_map(text):
    """'0:1,2:3' -> {0: 1, 2: 3}"""
    m = {}
    for part in filter(None, (text or "").split(",")):
        a, b = part.split(":")
        m[int(a)] = int(b)
    return m


def mac_bytes(text):
    return bytes(int(x, 16) for x in text.split(":"))


def mac_text(b):
    return ":".join("%02x" % x for x in b)


def host_mac(vid):
    """The MAC of the simulated host on VID (locally administered)."""
    return bytes([0x02, 0x76, 0x6C, 0x00, vid >> 8, vid & 0xFF])


def csum(data):
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack("!%dH" % (len(data) // 2), data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return (~s) & 0xFFFF


def tag_bytes(tpid, vid, pcp=0, dei=0):
    return struct.pack("!HH", tpid, (pcp << 13) | (dei << 12) | vid)


def ipv4_packet(src, dst, proto, payload, ttl=64, tos=0, ident=0):
    hdr = struct.pack("!BBHHHBBH4s4s", 0x45, tos, 20 + len(payload), ident, 0x4000,
                      ttl, proto, 0, src, dst)
    hdr = hdr[:10] + struct.pack("!H", csum(hdr)) + hdr[12:]
    return hdr + payload


def icmp4(typ, ident, seq, data):
    msg = struct.pack("!BBHHH", typ, 0, 0, ident, seq) + data
    return msg[:2] + struct.pack("!H", csum(msg)) + msg[4:]


def ipv6_packet(src, dst, nh, payload, hlim=64, tclass=0):
    hdr = struct.pack("!IHBB16s16s", (6 << 28) | (tclass << 20), len(payload), nh, hlim, src, dst)
    return hdr + payload


def icmp6(src, dst, body):
    """body: the ICMPv6 message with a zero checksum field."""
    pseudo = src + dst + struct.pack("!IxxxB", len(body), 58)
    c = csum(pseudo + body)
    return body[:2] + struct.pack("!H", c) + body[4:]


def echo6(typ, src, dst, ident, seq, data):
    return icmp6(src, dst, struct.pack("!BBHHH", typ, 0, 0, ident, seq) + data)


def eth(dst, src, ethertype, payload, tags=()):
    """tags: (tpid, vid, pcp) outermost first."""
    return dst + src + b"".join(tag_bytes(t, v, p) for t, v, p in tags) + \
        struct.pack("!H", ethertype) + payload


class Frame:
    """A parsed Ethernet frame: tags [(tpid, tci)], L3 fields when IPv4/IPv6."""

    def __init__(self, data):
        self.data = data
        self.dst, self.src = data[0:6], data[6:12]
        self.tags = []
        off = 12
        while off + 4 <= len(data):
            et = struct.unpack_from("!H", data, off)[0]
            if et in (ETH_P_8021Q, ETH_P_8021AD) and off + 8 <= len(data):
                self.tags.append((et, struct.unpack_from("!H", data, off + 2)[0]))
                off += 4
            else:
                break
        self.ethertype = struct.unpack_from("!H", data, off)[0] if off + 2 <= len(data) else 0
        self.l3 = off + 2
        self.fam = None
        self.proto = self.ttl = self.tos = None
        self.saddr = self.daddr = None
        self.icmp_type = self.icmp_id = self.icmp_seq = None
        p = data[self.l3:]
        if self.ethertype == ETH_P_IP and len(p) >= 20 and p[0] >> 4 == 4:
            ihl = (p[0] & 15) * 4
            self.fam, self.tos, self.ttl, self.proto = 4, p[1], p[8], p[9]
            self.saddr, self.daddr = p[12:16], p[16:20]
            self.l4 = self.l3 + ihl
            if self.proto == 1 and len(p) >= ihl + 8:
                self.icmp_type = p[ihl]
                self.icmp_id, self.icmp_seq = struct.unpack_from("!HH", p, ihl + 4)
        elif self.ethertype == ETH_P_IPV6 and len(p) >= 40 and p[0] >> 4 == 6:
            self.fam = 6
            self.tos = (struct.unpack_from("!I", p, 0)[0] >> 20) & 0xFF
            self.proto, self.ttl = p[6], p[7]
            self.saddr, self.daddr = p[8:24], p[24:40]
            self.l4 = self.l3 + 40
            if self.proto == 58 and len(p) >= 48:
                self.icmp_type = p[40]
                self.icmp_id, self.icmp_seq = struct.unpack_from("!HH", p, 44)

    def tag_text(self):
        if not self.tags:
            return "-"
        return "/".join("%04x:%d:%d:%d" % (t, tci & 0xFFF, tci >> 13, (tci >> 12) & 1)
                        for t, tci in self.tags)

    def untagged(self):
        """The frame without its outermost tag."""
        return self.data[:12] + self.data[16:]


def addr_text(fam, b):
    return str(ipaddress.ip_address(b)) if b is not None else "-"


class Trunk:
    """AF_PACKET on the trunk tap, frames with their tags in-band."""

    def __init__(self, dev):
        self.sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
        self.sock.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, 8 << 20)
        self.sock.setsockopt(SOL_PACKET, PACKET_AUXDATA, 1)
        self.sock.bind((dev, ETH_P_ALL))
        self.sock.setblocking(False)

    def fileno(self):
        return self.sock.fileno()

    def recv(self):
        """(bytes with tags in-band, outgoing?) or (None, None) when nothing waits."""
        try:
            data, anc, _flags, addr = self.sock.recvmsg(65536, socket.CMSG_SPACE(20))
        except BlockingIOError:
            return None, None
        for level, typ, cdata in anc:
            if level == SOL_PACKET and typ == PACKET_AUXDATA and len(cdata) >= 20:
                status, _l, _s, _m, _n, tci, tpid = struct.unpack("IIIHHHH", cdata[:20])
                if status & TP_STATUS_VLAN_VALID:
                    if not status & TP_STATUS_VLAN_TPID_VALID:
                        tpid = ETH_P_8021Q
                    data = data[:12] + struct.pack("!HH", tpid, tci) + data[12:]
        return data, addr[2] == PACKET_OUTGOING

    def send(self, frame):
        for _ in range(200):
            try:
                return self.sock.send(frame)
            except BlockingIOError:
                time.sleep(0.005)
        raise OSError("trunk send stalled")


def open_tap(name):
    fd = os.open("/dev/net/tun", os.O_RDWR | os.O_NONBLOCK)
    fcntl.ioctl(fd, TUNSETIFF, struct.pack("16sH", name.encode(), IFF_TAP | IFF_NO_PI))
    return fd


class Vlans:
    """The VID list and each VLAN's host addresses (index i: FMT % i)."""

    def __init__(self, args):
        self.vids = parse_vids(args.vids)
        self.index = {v: i for i, v in enumerate(self.vids)}
        self.addr4 = [ipaddress.IPv4Address(args.addr4 % i).packed for i in range(len(self.vids))]
        self.addr6 = [ipaddress.IPv6Address(args.addr6 % i).packed for i in range(len(self.vids))]
        self.emap, self.eevery = parse_map(args.egress_map), args.egress_every
        self.imap, self.ievery = parse_map(args.ingress_map), args.ingress_every

    def egress_pcp(self, i, prio):
        return self.emap.get(prio, 0) if i % self.eevery == 0 else 0

    def ingress_prio(self, i, pcp):
        return self.imap.get(pcp, 0) if i % self.ievery == 0 else 0


# ------------------------------------------------------------------ relay

def respond(trunk, vl, vid, f):
    """The simulated host on VID answers ARP, NS and echo requests for its address."""
    i = vl.index[vid]
    me = host_mac(vid)
    tags = ((ETH_P_8021Q, vid, 0),)
    p = f.data[f.l3:]
    if f.ethertype == ETH_P_ARP and len(p) >= 28:
        op = struct.unpack_from("!H", p, 6)[0]
        sha, spa, tpa = p[8:14], p[14:18], p[24:28]
        if op == 1 and tpa == vl.addr4[i]:
            arp = struct.pack("!HHBBH6s4s6s4s", 1, ETH_P_IP, 6, 4, 2, me, tpa, sha, spa)
            trunk.send(eth(f.src, me, ETH_P_ARP, arp, tags))
    elif f.fam == 4 and f.icmp_type == 8 and f.daddr == vl.addr4[i]:
        data = f.data[f.l4 + 8:f.l3 + struct.unpack_from("!H", p, 2)[0]]
        ip = ipv4_packet(f.daddr, f.saddr, 1, icmp4(0, f.icmp_id, f.icmp_seq, data), tos=f.tos)
        trunk.send(eth(f.src, me, ETH_P_IP, ip, tags))
    elif f.fam == 6 and f.proto == 58 and len(p) >= 48:
        typ = p[40]
        plen = struct.unpack_from("!H", p, 4)[0]
        if typ == 135 and len(p) >= 64 and p[48:64] == vl.addr6[i] and f.saddr != bytes(16):
            body = struct.pack("!BBHI16sBB6s", 136, 0, 0, 0x60000000, vl.addr6[i], 2, 1, me)
            ip = ipv6_packet(vl.addr6[i], f.saddr, 58, icmp6(vl.addr6[i], f.saddr, body), hlim=255)
            trunk.send(eth(f.src, me, ETH_P_IPV6, ip, tags))
        elif typ == 128 and f.daddr == vl.addr6[i]:
            data = p[48:40 + plen]
            msg = echo6(129, f.daddr, f.saddr, f.icmp_id, f.icmp_seq, data)
            ip = ipv6_packet(f.daddr, f.saddr, 58, msg, tclass=f.tos)
            trunk.send(eth(f.src, me, ETH_P_IPV6, ip, tags))


def cmd_relay(args):
    vl = Vlans(args)
    trunk = Trunk(args.dev)
    taps = {}
    for vid in parse_vids(args.taps or ""):
        if vid not in vl.index:
            sys.exit("tap VID %d is not in --vids" % vid)
        name = "%s%d" % (args.tap_prefix, vid)
        taps[vid] = open_tap(name)
        print("tap %s %d %d" % (name, vid, vl.index[vid]))
    by_fd = {fd: vid for vid, fd in taps.items()}
    print("ready", flush=True)
    poll = select.poll()
    poll.register(trunk.fileno(), select.POLLIN)
    for fd in by_fd:
        poll.register(fd, select.POLLIN)
    stats = {"to_tap": 0, "from_tap": 0, "answered": 0, "tap_drops": 0}
    while True:
        for fd, _ev in poll.poll(1000):
            if fd == trunk.fileno():
                for _ in range(64):
                    data, outgoing = trunk.recv()
                    if data is None:
                        break
                    if outgoing:
                        continue
                    f = Frame(data)
                    if len(f.tags) != 1 or f.tags[0][0] != ETH_P_8021Q:
                        continue
                    vid = f.tags[0][1] & 0xFFF
                    if vid in taps:
                        try:
                            os.write(taps[vid], f.untagged())
                            stats["to_tap"] += 1
                        except OSError:  # not up yet (EIO), full
                            stats["tap_drops"] += 1
                    elif vid in vl.index:
                        respond(trunk, vl, vid, Frame(f.untagged()))
                        stats["answered"] += 1
            else:
                vid = by_fd[fd]
                for _ in range(64):
                    try:
                        data = os.read(fd, 65536)
                    except BlockingIOError:
                        break
                    try:
                        trunk.send(data[:12] + tag_bytes(ETH_P_8021Q, vid) + data[12:])
                        stats["from_tap"] += 1
                    except OSError:
                        stats["tap_drops"] += 1


# ------------------------------------------------------------------ sweep

def cmd_sweep(args):
    vl = Vlans(args)
    n = len(vl.vids)
    idx = parse_vids(args.idx) if args.idx else list(range(n))
    trunk = Trunk(args.dev)
    gw = mac_bytes(args.gw)
    fam = args.family
    ident = args.id
    if args.mode == "untagged":
        dst_fixed = ipaddress.ip_address(args.dst).packed
    want = {}  # (kind, seq) -> description of what must arrive
    for i in idx:
        vid = vl.vids[i]
        tos, pcp = SWEEP_TOS[i % 4], SWEEP_PCP[i % 4]
        src = vl.addr4[i] if fam == 4 else vl.addr6[i]
        if args.mode == "untagged":
            dst = dst_fixed
        else:
            j = (i + 1) % n
            dst = vl.addr4[j] if fam == 4 else vl.addr6[j]
            # the forwarded request, on VLAN j
            want[("req", i)] = (j, dst, src, None if fam == 4 else vl.egress_pcp(j, vl.ingress_prio(i, pcp)))
        # the reply comes back on VLAN i; an IPv6 reply comes untagged from the
        # server, or tagged PCP 0 from a host on VLAN j
        want[("rep", i)] = (i, src, dst, None if fam == 4 else vl.egress_pcp(
            i, 0 if args.mode == "untagged" else vl.ingress_prio((i + 1) % n, 0)))
        want[("send", i)] = (vid, tos, pcp, src, dst)
    seen = {}
    bad = []

    def check(f):
        if f.icmp_id != ident or f.fam != fam:
            return
        typ = f.icmp_type
        if typ == (0 if fam == 4 else 129):
            key = ("rep", f.icmp_seq)
        elif typ == (8 if fam == 4 else 128):
            key = ("req", f.icmp_seq)
        else:
            return
        if key not in want:
            if args.expect == "none" or key[0] == "rep":
                bad.append("unexpected %s seq %d %s" % (key[0], key[1], f.tag_text()))
            return
        if key in seen:
            bad.append("duplicate %s seq %d" % key)
            return
        k, daddr, saddr, pcp6 = want[key]
        pcp = rt_tos2priority(f.tos) if fam == 4 else None
        pcp = vl.egress_pcp(k, pcp) if fam == 4 else pcp6
        exp = "%04x:%d:%d:0" % (ETH_P_8021Q, vl.vids[k], pcp)
        got = f.tag_text()
        why = []
        if got != exp:
            why.append("tag %s want %s" % (got, exp))
        if f.ttl != 63:
            why.append("ttl %d want 63" % f.ttl)
        if f.daddr != daddr or f.saddr != saddr:
            why.append("%s > %s want %s > %s" % (addr_text(fam, f.saddr), addr_text(fam, f.daddr),
                                                 addr_text(fam, saddr), addr_text(fam, daddr)))
        if f.src != gw:
            why.append("source MAC %s is not the guest's" % mac_text(f.src))
        seen[key] = why
        if why:
            bad.append("%s seq %d (vid %d tos 0x%02x): %s" % (key[0], key[1], vl.vids[k], f.tos,
                                                             ", ".join(why)))

    def drain():
        while True:
            data, outgoing = trunk.recv()
            if data is None:
                return
            if not outgoing:
                check(Frame(data))

    payload = b"xdpr vlan sweep " + bytes(16)
    for i in idx:
        vid, tos, pcp, src, dst = want[("send", i)]
        me = host_mac(vid)
        tags = ((ETH_P_8021Q, vid, pcp),)
        if fam == 4:
            ip = ipv4_packet(src, dst, 1, icmp4(8, ident, i, payload), tos=tos, ident=i)
            trunk.send(eth(gw, me, ETH_P_IP, ip, tags))
        else:
            ip = ipv6_packet(src, dst, 58, echo6(128, src, dst, ident, i, payload), tclass=tos)
            trunk.send(eth(gw, me, ETH_P_IPV6, ip, tags))
        time.sleep(args.gap)
        drain()
    expected = [k for k in want if k[0] != "send"]
    deadline = time.monotonic() + args.timeout
    while time.monotonic() < deadline:
        if args.expect == "reply" and all(k in seen for k in expected):
            break
        select.select([trunk], [], [], 0.2)
        drain()
    reps = sum(1 for k in seen if k[0] == "rep")
    reqs = sum(1 for k in seen if k[0] == "req")
    missing = [k for k in expected if k not in seen]
    out = "sent=%d replies=%d" % (len(idx), reps)
    if args.mode == "vlan":
        out += " forwarded_requests=%d" % reqs
    if args.expect == "reply":
        out += " bad=%d missing=%d" % (len(bad), len(missing))
        ok = not bad and not missing
        if missing:
            out += " first_missing=%s:vid%d" % (missing[0][0], vl.vids[missing[0][1]])
    else:
        ok = not seen and not bad
    if bad:
        out += " first_bad=[%s]" % bad[0]
    print(out)
    return 0 if ok else 1


# ------------------------------------------------------------------ inject

def cmd_inject(args):
    trunk = Trunk(args.dev)
    tags = []
    for t in filter(None, args.tags.split(",")):
        parts = [int(x, 0) for x in t.split(":")]
        tags.append((parts[0], parts[1], parts[2] if len(parts) > 2 else 0))
    src = ipaddress.ip_address(args.src).packed
    dst = ipaddress.ip_address(args.dst).packed
    me = mac_bytes(args.mac)
    for seq in range(args.count):
        ip = ipv4_packet(src, dst, 1, icmp4(8, args.id, seq, b"xdpr vlan inject" + bytes(16)))
        trunk.send(eth(mac_bytes(args.gw), me, ETH_P_IP, ip, tags))
        time.sleep(0.02)
    print("sent=%d tags=%s" % (args.count, args.tags or "-"))
    return 0


# ------------------------------------------------------------------ pcap

def pcap_frames(path):
    with open(path, "rb") as fh:
        data = fh.read()
    if len(data) < 24:
        return
    magic = data[:4]
    if magic in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1"):
        end = "<"
    elif magic in (b"\xa1\xb2\xc3\xd4", b"\xa1\xb2\x3c\x4d"):
        end = ">"
    else:
        raise ValueError("%s is not a pcap file" % path)
    if struct.unpack(end + "I", data[20:24])[0] != 1:
        raise ValueError("%s is not an Ethernet capture" % path)
    off = 24
    while off + 16 <= len(data):
        incl, orig = struct.unpack_from(end + "II", data, off + 8)
        yield data[off + 16:off + 16 + incl], orig
        off += 16 + incl


def cmd_pcap(args):
    n = 0
    vals = {"tags": set(), "ttl": set(), "src": set(), "dst": set(), "tos": set()}
    lens = []
    for raw, orig in pcap_frames(args.file):
        f = Frame(raw)
        if args.from_guest and not mac_text(f.src).startswith("52:54:00:78:64:"):
            continue
        if args.to_guest and not mac_text(f.dst).startswith("52:54:00:78:64:"):
            continue
        if f.fam is None:
            continue
        if args.kind == "echo" and f.icmp_type not in ((8,) if f.fam == 4 else (128,)):
            continue
        if args.kind == "reply" and f.icmp_type not in ((0,) if f.fam == 4 else (129,)):
            continue
        if args.kind == "tcp" and f.proto != 6:
            continue
        if args.id is not None and f.icmp_id != args.id:
            continue
        if args.src and addr_text(f.fam, f.saddr) != args.src:
            continue
        if args.dst and addr_text(f.fam, f.daddr) != args.dst:
            continue
        n += 1
        vals["tags"].add(f.tag_text())
        vals["ttl"].add(str(f.ttl))
        vals["src"].add(addr_text(f.fam, f.saddr))
        vals["dst"].add(addr_text(f.fam, f.daddr))
        vals["tos"].add("0x%02x" % f.tos)
        lens.append(orig)
    def values(v):
        return ",".join(sorted(v)) if len(v) <= 4 else "<%d values>" % len(v)
    out = "n=%d %s" % (n, " ".join("%s=%s" % (k, values(v)) for k, v in vals.items()))
    if args.lens and lens:
        out += " len=%d-%d" % (min(lens), max(lens))
    print(out)
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)

    def vlan_opts(p):
        p.add_argument("--dev", required=True, help="the trunk tap")
        p.add_argument("--vids", required=True, help="VID list, e.g. 100-353,4094 (index i = position)")
        p.add_argument("--addr4", required=True, help="the host address of VLAN i, e.g. 10.1.%%d.2")
        p.add_argument("--addr6", required=True, help="e.g. 2001:db8:1:%%d::2")
        p.add_argument("--egress-map", default="")
        p.add_argument("--egress-every", type=int, default=1)
        p.add_argument("--ingress-map", default="")
        p.add_argument("--ingress-every", type=int, default=1)

    p = sub.add_parser("relay")
    vlan_opts(p)
    p.add_argument("--taps", default="", help="VIDs relayed to an untagged tap")
    p.add_argument("--tap-prefix", default="xvlan")
    p = sub.add_parser("sweep")
    vlan_opts(p)
    p.add_argument("--gw", required=True, help="the guest trunk port's MAC")
    p.add_argument("--family", type=int, choices=(4, 6), default=4)
    p.add_argument("--mode", choices=("untagged", "vlan"), default="untagged")
    p.add_argument("--dst", help="untagged mode: the address behind the untagged port")
    p.add_argument("--idx", help="VLAN indexes to sweep (default all)")
    p.add_argument("--expect", choices=("reply", "none"), default="reply")
    p.add_argument("--id", type=lambda s: int(s, 0), default=0x7601)
    p.add_argument("--gap", type=float, default=0.004)
    p.add_argument("--timeout", type=float, default=15)
    p = sub.add_parser("inject")
    p.add_argument("--dev", required=True)
    p.add_argument("--gw", required=True)
    p.add_argument("--mac", default="02:76:6c:00:ff:ff")
    p.add_argument("--tags", default="", help="TPID:VID[:PCP],... outermost first")
    p.add_argument("--src", required=True)
    p.add_argument("--dst", required=True)
    p.add_argument("--count", type=int, default=10)
    p.add_argument("--id", type=lambda s: int(s, 0), default=0x7602)
    p = sub.add_parser("pcap")
    p.add_argument("file")
    p.add_argument("--kind", choices=("echo", "reply", "tcp", "any"), default="any")
    p.add_argument("--src")
    p.add_argument("--dst")
    p.add_argument("--id", type=lambda s: int(s, 0))
    p.add_argument("--from-guest", action="store_true")
    p.add_argument("--to-guest", action="store_true")
    p.add_argument("--lens", action="store_true", help="add the smallest and largest frame (bytes captured)")
    args = ap.parse_args()
    return {"relay": cmd_relay, "sweep": cmd_sweep, "inject": cmd_inject, "pcap": cmd_pcap}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
