#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""filter_flows.py - random rule sets, flow corpora and the reference model
for filter_diff.t (xdpr's filter against nftables).

    gen SEED FAMILY ROUNDS DIR [NOISE]
        ROUNDS rule sets (DIR/K/rules.txt: `filter load` lines, the words
        after "filter add"; DIR/K/rules.nft: the same rules as an nft
        forward chain; DIR/K/policy) and one corpus of one-packet flows each
        (DIR/K/corpus.json), every flow's 5-tuple unique across all rounds.
        NOISE > 0 adds round "noise": NOISE drop rules that match no flow of
        any corpus, in front of a random rule set.
    send CORPUS IFACE=MAC...
        send every flow of CORPUS (scapy, L2, in the client namespace) out of
        its interface (c0 or c2) to the router's MAC given for it, 20 frames
        every 10 ms; prints how long that took (ms).
    seen CORPUS IFACE=PCAP... > SEEN
        which flows the captures hold, as JSON {"seen": {id: iface}, "bad": [...]}
        ("bad": frames from the corpus's address space that are no flow of
        it, arrive twice, on the wrong interface or with the wrong TTL).
    check DIR/K [nft=SEEN] [xdpr=SEEN] [nftctr=NFT_JSON] [show=SHOW_JSON]
        compare what reached the server under nft and under xdpr (DIFF
        lines), each with the model: first match wins, else the policy
        (MODEL_NFT, MODEL_XDPR); the per-rule packet counters of
        `nft -j list table inet xdpr_diff` (NFTCTR) and of
        `xdpr -j filter show` (COUNTERS) with the flows the model says each
        rule decided.  One line per difference, then "END N flows checked";
        exit 1 when there is a difference.
    model DIR/K
        print the model's counts: "accepted N dropped_rule N dropped_policy N
        rules_deciding N by_policy N states N" (by_policy: flows no rule
        matched; states: accepted flows that may start one, which get a
        flow state).
    decode6 PCAP
        the capture's IPv6 packets as JSON: src dst nh hlim, "csum_ok" (TCP,
        UDP, ICMPv6 checksum over the pseudo header), TCP sport dport
        tcp_flags, ICMPv6 icmp_type icmp_code and for errors "q", the quoted
        packet's src dst nh sport dport.
    packet DEV DST_MAC COUNT SCAPY_EXPR
        send COUNT copies of Ether(src=DEV's MAC, dst=DST_MAC) / SCAPY_EXPR
        (an expression over scapy's names, e.g. "IP(dst='10.0.2.2')/UDP()").
    stream DEV DST_MAC SECS INTERVAL_MS SCAPY_EXPR
        the same frame every INTERVAL_MS for SECS seconds; prints how many
        (and "sending" on stderr once the first is sent).

The topology (filter_lib.sh) routes the corpus's destinations: 172.16/13,
198.51.100/24 and 2001:db8:100::/40, 2001:db8:300::/48 out of r1;
172.24/13, 203.0.113/24 and 2001:db8:200::/40, 2001:db8:400::/48 out of r3.
Sources come in on r0 (from c0) or r2 (from c2).  Noise rules name
100.64/10, 198.18/15, 2001:db8:f000::/36, 2001:db8:e000::/36: no flow
uses those.
"""
import functools
import ipaddress
import json
import os
import random
import sys

FAM = {
    4: dict(
        bits=32,
        src=["10.10.0.0/16", "10.200.0.0/13", "192.168.0.0/16", "10.77.7.0/24"],
        dst=[("172.16.0.0/13", "r1"), ("198.51.100.0/24", "r1"),
             ("172.24.0.0/13", "r3"), ("203.0.113.0/24", "r3")],
        noise_src="100.64.0.0/10", noise_dst="198.18.0.0/15",
        icmp="icmp", icmp_num=1, itypes=[8, 0, 3, 11, 13, 8],
        # ICMP flows: (type, code, weight); echo request/reply carry an id
        icmp_kinds=[(8, 0, 65), (0, 0, 15), (3, 3, 5), (3, 1, 5), (13, 0, 10)],
        echo=(8, 0), errors=(3, 11)),
    6: dict(
        bits=128,
        src=["2001:db8:10::/48", "2001:db8:11:aa00::/56", "fd00:1::/32", "2001:db8:12::5:0/112"],
        dst=[("2001:db8:100::/40", "r1"), ("2001:db8:300::/48", "r1"),
             ("2001:db8:200::/40", "r3"), ("2001:db8:400::/48", "r3")],
        noise_src="2001:db8:f000::/36", noise_dst="2001:db8:e000::/36",
        icmp="icmpv6", icmp_num=58, itypes=[128, 129, 1, 3, 128],
        icmp_kinds=[(128, 0, 70), (129, 0, 15), (1, 4, 10), (1, 0, 5)],
        echo=(128, 129), errors=(1, 3)),
}
PROTO_NUM = {"tcp": 6, "udp": 17, "icmp": 1, "icmpv6": 58}
INS, OUTS = ["r0", "r2"], ["r1", "r3"]
# TCP flags of the corpus's segments: SYN and bare ACK may start a flow, the
# rest have no state (the rules see them all, as a stateless nft chain does)
TCP_FLAGS = [("S", 60), ("A", 15), ("SA", 8), ("R", 5), ("FA", 5), ("PA", 5), ("RA", 2)]
PORTS = [1, 2, 22, 53, 80, 443, 1023, 1024, 1025, 5201, 8080, 32767, 32768, 49152, 65534, 65535]


@functools.lru_cache(maxsize=None)
def net(s):
    return ipaddress.ip_network(s)


@functools.lru_cache(maxsize=None)
def addr(s):
    return ipaddress.ip_address(s)


def in_any(addr, nets):
    return any(addr in net(n) for n in nets)


# ---------------------------------------------------------------- the model

def proto_of(p):
    """A rule's protocol word as a number (None: no protocol)."""
    if p is None:
        return None
    return PROTO_NUM[p] if p in PROTO_NUM else int(p)


def members(r, k):
    """The prefixes a rule's src or dst names: one, or a set's members."""
    return r[k + "_set"] if r[k].startswith("@") else [r[k]]


def matches(r, f):
    if r.get("in") and r["in"] != f["in"]:
        return False
    if r.get("out") and r["out"] != f["out"]:
        return False
    for k in ("src", "dst"):
        if r.get(k) and not any(addr(f[k]) in net(m) for m in members(r, k)):
            return False
    if r.get("proto") is not None and proto_of(r["proto"]) != f["proto"]:
        return False
    for k in ("sport", "dport"):
        if r.get(k) and not r[k][0] <= f[k] <= r[k][1]:
            return False
    if r.get("itype") is not None and r["itype"] != f["itype"]:
        return False
    if r.get("icode") is not None and r["icode"] != f["icode"]:
        return False
    return True


def new_state(f):
    """May the packet start a flow (xdpr's "new"), with no state around?
    TCP SYN or ACK (PSH aside: a mid-stream pickup), UDP, ICMP echo,
    timestamp, information and address mask requests, ICMPv6 echo and node
    information queries, other protocols.  Else "invalid"."""
    if f["proto"] == 6:
        return f["flags"].replace("P", "") in ("S", "A")
    if f["proto"] == 1 and f["family"] == 4:
        return f["itype"] in (8, 13, 15, 17)
    if f["proto"] == 58 and f["family"] == 6:
        return f["itype"] in (128, 139)
    return True


def compile_rule(r):
    """A rule as a tuple of plain values (the model's inner loop at 30,000 rules)."""
    def nets(k):
        if not r.get(k):
            return None
        return tuple((net(m).version, int(net(m).network_address), int(net(m).netmask)) for m in members(r, k))
    return (r.get("in"), r.get("out"), nets("src"), nets("dst"), proto_of(r.get("proto")),
            tuple(r["sport"]) if r.get("sport") else None, tuple(r["dport"]) if r.get("dport") else None,
            r.get("itype"), r.get("icode"))


def fast_match(c, f, fs, fd, fv):
    cin, cout, src, dst, proto, sport, dport, itype, icode = c
    if proto is not None and proto != f["proto"]:
        return False
    if cin and cin != f["in"]:
        return False
    if cout and cout != f["out"]:
        return False
    if sport and not sport[0] <= f["sport"] <= sport[1]:
        return False
    if dport and not dport[0] <= f["dport"] <= dport[1]:
        return False
    if itype is not None and itype != f["itype"]:
        return False
    if icode is not None and icode != f["icode"]:
        return False
    if src and not any(v == fv and fs & m == n for v, n, m in src):
        return False
    if dst and not any(v == fv and fd & m == n for v, n, m in dst):
        return False
    return True


_COMPILED = {}


def decide(rules, policy, f):
    """(rule number from 1, or 0 for the policy; accepted?)"""
    key = id(rules)
    if key not in _COMPILED:
        _COMPILED[key] = (rules, [compile_rule(r) for r in rules])
    cs = _COMPILED[key][1]
    fs, fd = int(addr(f["src"])), int(addr(f["dst"]))
    fv = addr(f["src"]).version
    first = next((i for i, c in enumerate(cs) if fast_match(c, f, fs, fd, fv)), None)
    if len(cs) <= 1000:
        # the readable form agrees (the long lists are the short ones plus noise)
        assert first == next((i for i, r in enumerate(rules) if matches(r, f)), None)
    if first is None:
        return 0, policy == "accept"
    return first + 1, rules[first]["action"] == "accept"


# ---------------------------------------------------------------- text forms

def port_words(p):
    return str(p[0]) if p[0] == p[1] else "%d-%d" % tuple(p)


def xdpr_words(r):
    w = []
    for k in ("in", "out", "src", "dst"):
        if r.get(k):
            w += [k, r[k]]
    if r.get("proto") is not None:
        w += ["proto", str(r["proto"])]
    for k in ("sport", "dport"):
        if r.get(k):
            w += [k, port_words(r[k])]
    if r.get("itype") is not None:
        w += ["icmp-type", str(r["itype"])]
    if r.get("icode") is not None:
        w += ["icmp-code", str(r["icode"])]
    return " ".join(w + [r["action"]])


def nft_words(r, fam):
    w = []
    if r.get("in"):
        w.append('iifname "%s"' % r["in"])
    if r.get("out"):
        w.append('oifname "%s"' % r["out"])
    addr = {}
    for k in ("src", "dst"):
        if r.get(k):
            # the members of the corpus's family; if none, the others (they never match)
            addr[k] = [m for m in members(r, k) if net(m).version == fam] or members(r, k)
    if len({net(ms[0]).version for ms in addr.values()}) > 1:
        # one field of each family: nft has no such rule ("conflicting
        # protocols"); the other family's field alone never matches either
        addr = {k: ms for k, ms in addr.items() if net(ms[0]).version != fam}
    for k, n in (("src", "saddr"), ("dst", "daddr")):
        if k in addr:
            ms = addr[k]
            sel = "ip" if net(ms[0]).version == 4 else "ip6"
            if r[k].startswith("@"):
                w.append("%s %s { %s }" % (sel, n, ", ".join(ms)))
            else:
                w.append("%s %s %s" % (sel, n, ms[0]))
    p = proto_of(r.get("proto"))
    if p is not None:
        w.append("meta l4proto %d" % p)
    for k in ("sport", "dport"):
        if r.get(k):
            w.append("%s %s %s" % (r["proto"], k, port_words(r[k])))
    if r.get("itype") is not None:
        w.append("%s type %d" % (r["proto"], r["itype"]))
    if r.get("icode") is not None:
        w.append("%s code %d" % (r["proto"], r["icode"]))
    return " ".join(w + ["counter", r["action"]])


def nft_script(rules, policy, fam):
    out = ["table inet xdpr_diff {", "\tchain oracle {",
           "\t\ttype filter hook forward priority filter; policy %s;" % policy]
    out += ["\t\t" + nft_words(r, fam) for r in rules]
    out += ["\t}", "}"]
    return "\n".join(out) + "\n"


# ---------------------------------------------------------------- generation

class Gen:
    def __init__(self, seed, fam):
        self.rnd = random.Random(seed)
        self.fam = fam
        self.F = FAM[fam]
        self.used = set()
        self.next_id = 1

    def host(self, prefix):
        n = net(prefix)
        while True:
            a = n[self.rnd.randrange(n.num_addresses)]
            if self.fam == 4 and int(a) & 0xff in (0, 255):
                continue
            return str(a)

    def pools(self):
        F, r = self.F, self.rnd
        self.src_pool = [self.host(r.choice(F["src"])) for _ in range(24)]
        self.dst_pool = [self.host(r.choice(F["dst"])[0]) for _ in range(24)]

    def out_of(self, dst):
        a = ipaddress.ip_address(dst)
        for n, dev in self.F["dst"]:
            if a in net(n):
                return dev
        return None

    def valid_addr(self, k, a):
        a = ipaddress.ip_address(a)
        if k == "src":
            return in_any(a, self.F["src"])
        return self.out_of(str(a)) is not None

    def plen(self):
        b = self.F["bits"]
        return self.rnd.choice([0, b, b, b // 4, b // 2, b // 2 + b // 8, 3 * b // 4,
                                b - 1, self.rnd.randint(1, b), self.rnd.randint(b // 2, b)])

    def prefix_of(self, addr, plen):
        return str(ipaddress.ip_network("%s/%d" % (addr, plen), strict=False))

    def port_spec(self):
        r = self.rnd
        if r.random() < 0.5:
            p = r.choice(PORTS + [r.randint(1, 65535)])
            return (p, p)
        lo = r.choice(PORTS + [r.randint(1, 65534)] * 3)
        if lo == 65535:
            lo = 65534
        hi = r.choice([lo + 1, min(65535, lo + r.randint(1, 100)), r.randint(lo + 1, 65535), 65535])
        return (lo, hi)

    def make_sets(self, tag):
        """0-3 sets of 1-8 prefixes around the pools' addresses (overlaps
        allowed), one in five with a member of the other family."""
        r, other = self.rnd, FAM[10 - self.fam]
        self.sets = {}
        for i in range(r.randint(0, 3)):
            ms = {self.prefix_of(r.choice(self.src_pool + self.dst_pool), self.plen() or self.plen())
                  for _ in range(r.randint(1, 8))}
            if r.random() < 0.2:
                n = net(r.choice(other["src"] + [d for d, _ in other["dst"]]))
                ms.add(str(n))
            self.sets["f%d_%s_%d" % (self.fam, tag, i)] = sorted(ms)

    def addr_field(self, x, k, pool):
        r = self.rnd
        if self.sets and r.random() < 0.15:
            name = r.choice(sorted(self.sets))
            x[k], x[k + "_set"] = "@" + name, self.sets[name]
        else:
            x[k] = self.prefix_of(r.choice(pool), self.plen())

    def rule(self):
        r, F = self.rnd, self.F
        x = {}
        if r.random() < 0.2:
            x["in"] = r.choice(INS)
        if r.random() < 0.2:
            x["out"] = r.choice(OUTS)
        if r.random() < 0.45:
            self.addr_field(x, "src", self.src_pool)
        if r.random() < 0.45:
            self.addr_field(x, "dst", self.dst_pool)
        u = r.random()
        if u < 0.3:
            x["proto"] = "tcp"
        elif u < 0.55:
            x["proto"] = "udp"
        elif u < 0.7:
            x["proto"] = F["icmp"]
        elif u < 0.8:
            x["proto"] = r.choice([6, 17, F["icmp_num"], 47])
        if x.get("proto") in ("tcp", "udp"):
            if r.random() < 0.35:
                x["sport"] = self.port_spec()
            if r.random() < 0.5:
                x["dport"] = self.port_spec()
        elif x.get("proto") == F["icmp"]:
            if r.random() < 0.4:
                x["itype"] = r.choice(F["itypes"])
            if r.random() < 0.2:
                x["icode"] = r.choice([0, 0, 1])
        # few broad rules (catch-alls, protocol only): they end the list's meaning
        narrow = [k for k in x if not k.endswith("_set") and
                  (k not in ("src", "dst") or x[k].startswith("@") or net(x[k]).prefixlen)]
        if not narrow or (len(narrow) < 2 and r.random() < 0.8):
            return self.rule()
        if r.random() < 0.08 and proto_of(x.get("proto")) not in (1, 58):
            # a prefix of the other family: the rule never matches this corpus
            k = r.choice(["src", "dst"])
            o = 10 - self.fam
            n = net(r.choice(FAM[o]["src"] + [d for d, _ in FAM[o]["dst"]]))
            x[k] = str(ipaddress.ip_network("%s/%d" % (n[r.randrange(n.num_addresses)],
                                                        r.choice([0, n.prefixlen, FAM[o]["bits"]])),
                                            strict=False))
            x.pop(k + "_set", None)
            other = "dst" if k == "src" else "src"
            if x.get(other) and not x[other].startswith("@"):
                del x[other]
        x["action"] = "accept" if r.random() < 0.5 else "drop"
        return x

    def flow_random(self):
        r, F = self.rnd, self.F
        f = {"in": r.choice(INS), "src": r.choice(self.src_pool), "dst": r.choice(self.dst_pool)}
        if r.random() < 0.1:
            f["src"] = self.host(r.choice(F["src"]))
        if r.random() < 0.1:
            f["dst"] = self.host(r.choice(F["dst"])[0])
        u = r.random()
        f["proto"] = 6 if u < 0.4 else 17 if u < 0.75 else F["icmp_num"] if u < 0.95 else 47
        if f["proto"] in (6, 17):
            f["sport"] = r.choice(PORTS + [r.randint(1, 65535)] * 4 + [0])
            f["dport"] = r.choice(PORTS + [r.randint(1, 65535)] * 4)
        return f

    def flow_near(self, rule):
        """A flow that matches RULE, or misses it by one field, by a little."""
        r, F = self.rnd, self.F
        f = self.flow_random()
        for k in ("in", "out"):
            if rule.get(k):
                f[k] = rule[k]
        for k in ("src", "dst"):
            if rule.get(k):
                ms = [net(m) for m in members(rule, k) if net(m).version == self.fam]
                if not ms:
                    continue
                n = r.choice(ms)
                cands = [a for a in (self.src_pool if k == "src" else self.dst_pool)
                         if ipaddress.ip_address(a) in n]
                if r.random() < 0.5 or not cands:
                    a = int(n.network_address) | (r.getrandbits(F["bits"]) & int(n.hostmask))
                    a = str(ipaddress.ip_address(a))
                    if self.valid_addr(k, a):
                        cands.append(a)
                if cands:
                    f[k] = r.choice(cands)
        if rule.get("proto") is not None:
            f["proto"] = proto_of(rule["proto"])
            if f["proto"] in (6, 17) and "sport" not in f:
                f["sport"], f["dport"] = r.randint(1, 65535), r.randint(1, 65535)
        for k in ("sport", "dport"):
            if rule.get(k):
                lo, hi = rule[k]
                f[k] = r.choice([lo, hi, r.randint(lo, hi)])
        if rule.get("itype") is not None:
            f["itype"] = rule["itype"]
        if rule.get("icode") is not None:
            f["icode"] = rule["icode"]
        elif f.get("itype") is not None:
            f["icode"] = r.choice([0, 0, 1, 3, 4])
        if r.random() < 0.5:
            # miss by one field, at its edge
            ks = [k for k in ("in", "out", "src", "dst", "proto", "sport", "dport", "itype")
                  if rule.get(k) is not None]
            if ks:
                k = r.choice(ks)
                if k == "in":
                    f["in"] = INS[1 - INS.index(rule["in"])]
                elif k == "out":
                    f["out"] = OUTS[1 - OUTS.index(rule["out"])]
                elif k in ("src", "dst") and not rule[k].startswith("@") and \
                        net(rule[k]).version == self.fam:
                    # flip the last prefix bit (a miss) or the first host bit (still a match)
                    L, b = net(rule[k]).prefixlen, None
                    if L and (L == F["bits"] or r.random() < 0.7):
                        b = F["bits"] - L
                    elif L < F["bits"]:
                        b = F["bits"] - L - 1
                    if b is not None:
                        a = str(ipaddress.ip_address(int(ipaddress.ip_address(f[k])) ^ (1 << b)))
                        if self.valid_addr(k, a):
                            f[k] = a
                elif k == "proto":
                    f["proto"] = r.choice([p for p in (6, 17, F["icmp_num"], 47) if p != f["proto"]])
                elif k == "itype":
                    f["itype"] = r.choice([t for t in F["itypes"] if t != rule["itype"]])
                elif k in ("sport", "dport") and f["proto"] in (6, 17):
                    lo, hi = rule[k]
                    e = r.choice([lo - 1, hi + 1])
                    if 0 <= e <= 65535:
                        f[k] = e
        return f

    def finish(self, f):
        """Fill in the rest of a flow; None when its tuple is taken."""
        r, F = self.rnd, self.F
        f["family"] = self.fam
        f["out"] = self.out_of(f["dst"])
        if f["proto"] in (6, 17):
            f.setdefault("sport", r.randint(1, 65535))
            f.setdefault("dport", r.randint(1, 65535))
            if f["proto"] == 6:
                f["flags"] = pick(r, TCP_FLAGS)
            f.pop("itype", None)
            f.pop("icode", None)
        else:
            f.pop("sport", None)
            f.pop("dport", None)
            if f["proto"] == F["icmp_num"]:
                if f.get("itype") is None:
                    f["itype"], f["icode"] = pick(r, [((t, c), w) for t, c, w in F["icmp_kinds"]])
                f.setdefault("icode", 0)
                f["icmp_id"] = r.randrange(1, 65536)
                if f["itype"] in F["errors"]:
                    # an error quoting a UDP datagram from dst to src: no flow has state for it
                    f["quote"] = (r.randint(1024, 65535), r.randint(1024, 65535))
            else:
                f.pop("itype", None)
                f.pop("icode", None)
        f["id"] = self.next_id
        keys = [wire_key(f)] + state_keys(f)
        if any(k in self.used for k in keys):
            return None
        self.used.update(keys)
        self.next_id += 1
        # the model's view of ports: ICMP type/code, other protocols 0
        f.setdefault("sport", f.get("itype", 0))
        f.setdefault("dport", f.get("icode", 0))
        f.setdefault("itype", None)
        f.setdefault("icode", None)
        return f

    def corpus(self, rules, n):
        out = []
        while len(out) < n:
            if rules and self.rnd.random() < 0.7:
                f = self.flow_near(self.rnd.choice(rules))
            else:
                f = self.flow_random()
            f = self.finish(f)
            if f:
                out.append(f)
        return out

    def noise(self, n):
        r, F = self.rnd, self.F
        ns, nd = net(F["noise_src"]), net(F["noise_dst"])
        out, seen = [], set()
        while len(out) < n:
            u = r.random()
            x = {"action": "drop"}
            if u < 0.5:
                x["src"] = str(ns[r.randrange(ns.num_addresses)]) + "/%d" % F["bits"]
            elif u < 0.75:
                x["dst"] = str(nd[r.randrange(nd.num_addresses)]) + "/%d" % F["bits"]
            else:
                x["src"] = self.prefix_of(str(ns[r.randrange(ns.num_addresses)]), F["bits"] - 8)
                x["proto"] = r.choice(["tcp", "udp"])
                x["dport"] = self.port_spec()
            k = xdpr_words(x)
            if k not in seen:
                seen.add(k)
                out.append(x)
        return out


def pick(r, weighted):
    return r.choices([v for v, _ in weighted], [w for _, w in weighted])[0]


def wire_key(f):
    """What identifies a flow's packet on the wire: TCP/UDP ports, an ICMP
    echo's id, else the IPv4 id / IPv6 flow label (the flow's number)."""
    if f["proto"] in (6, 17):
        return (f["src"], f["dst"], f["proto"], f["sport"], f["dport"])
    if f["proto"] in (1, 58) and f.get("itype") in FAM[f["family"]]["echo"]:
        return (f["src"], f["dst"], f["proto"], "echo", f["icmp_id"])
    return (f["src"], f["dst"], f["proto"], "id", f["id"] & (0xffff if f["family"] == 4 else 0xfffff))


def state_keys(f):
    """The flow states xdpr could give this packet (one per endpoint pair,
    protocol and ports, ICMP echo: the id on both sides; portless
    protocols and other ICMP: ports 0), and for an ICMP error the state of
    the packet it quotes, which in the forward direction is a UDP flow from
    src to dst.  No two flows of a run share one: every flow is new to xdpr."""
    a, b = sorted([f["src"], f["dst"]])
    if f["proto"] in (6, 17):
        k = [(a, b, f["proto"]) + tuple(sorted([(f["src"], f["sport"]), (f["dst"], f["dport"])]))]
    elif f["proto"] in (1, 58) and f.get("itype") in FAM[f["family"]]["echo"]:
        k = [(a, b, f["proto"], "echo", f["icmp_id"])]
    else:
        k = [(a, b, f["proto"], "portless")]
    if f.get("quote"):
        q = {"sport": f["quote"][1], "dport": f["quote"][0], "proto": 17}
        k += state_keys(dict(f, quote=None, **q))
    return k


def write_round(d, fam, sets, rules, policy, corpus):
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "sets.txt"), "w") as fh:
        fh.write("".join("%s %s\n" % (k, " ".join(v)) for k, v in sorted(sets.items())))
    with open(os.path.join(d, "rules.txt"), "w") as fh:
        fh.write("".join(xdpr_words(x) + "\n" for x in rules))
    with open(os.path.join(d, "rules.nft"), "w") as fh:
        fh.write(nft_script(rules, policy, fam))
    with open(os.path.join(d, "policy"), "w") as fh:
        fh.write(policy + "\n")
    with open(os.path.join(d, "rules.json"), "w") as fh:
        json.dump(rules, fh)
    with open(os.path.join(d, "corpus.json"), "w") as fh:
        json.dump(corpus, fh)


def cmd_gen(seed, fam, rounds, top, noise=0):
    g = Gen("%s/%s" % (seed, fam), int(fam))
    for k in range(int(rounds)):
        g.pools()
        g.make_sets(str(k))
        rules = [g.rule() for _ in range(g.rnd.randint(20, 60))]
        policy = "accept" if k % 2 == 0 else "drop"
        write_round(os.path.join(top, str(k)), g.fam, g.sets, rules, policy, g.corpus(rules, 300))
    if int(noise):
        g.pools()
        g.make_sets("noise")
        rules = [g.rule() for _ in range(40)]
        write_round(os.path.join(top, "noise"), g.fam, g.sets, g.noise(int(noise)) + rules, "drop",
                    g.corpus(rules, 300))


# ---------------------------------------------------------------- traffic

def cmd_send(corpus, *ifmac):
    import logging
    logging.getLogger("scapy.runtime").setLevel(logging.ERROR)
    import time
    from scapy.all import conf, Ether, IP, IPv6, TCP, UDP, ICMP, Raw
    from scapy.all import ICMPv6EchoRequest, ICMPv6EchoReply, ICMPv6DestUnreach
    macs = dict(a.split("=", 1) for a in ifmac)
    socks, own = {}, {}
    for dev in ("c0", "c2"):
        socks[dev] = conf.L2socket(iface=dev)
        with open("/sys/class/net/%s/address" % dev) as fh:
            own[dev] = fh.read().strip()
    peer = {"r0": "c0", "r2": "c2"}
    flows = json.load(open(corpus))
    t0 = time.monotonic()
    for i, f in enumerate(flows):
        dev = peer[f["in"]]
        payload = Raw(b"xdpr-flow-%d" % f["id"])
        if f["family"] == 4:
            l3 = IP(src=f["src"], dst=f["dst"], ttl=64, id=f["id"] & 0xffff)
        else:
            l3 = IPv6(src=f["src"], dst=f["dst"], hlim=64, fl=f["id"] & 0xfffff)
        if f["proto"] == 6:
            l4 = TCP(sport=f["sport"], dport=f["dport"], flags=f["flags"], seq=f["id"],
                     ack=0 if "A" not in f["flags"] else 1000 + f["id"], window=1024)
            payload = Raw(b"")
        elif f["proto"] == 17:
            l4 = UDP(sport=f["sport"], dport=f["dport"])
        elif f["proto"] == 1:
            l4 = ICMP(type=f["itype"], code=f["icode"], id=f["icmp_id"], seq=1)
            if f.get("quote"):
                l4 = ICMP(type=f["itype"], code=f["icode"]) / IP(src=f["dst"], dst=f["src"], ttl=60) / \
                    UDP(sport=f["quote"][0], dport=f["quote"][1])
        elif f["proto"] == 58:
            if f.get("quote"):
                l4 = ICMPv6DestUnreach(type=f["itype"], code=f["icode"]) / IPv6(src=f["dst"], dst=f["src"], hlim=60) / \
                    UDP(sport=f["quote"][0], dport=f["quote"][1])
            elif f["itype"] == 128:
                l4 = ICMPv6EchoRequest(code=f["icode"], id=f["icmp_id"], seq=1)
            else:
                l4 = ICMPv6EchoReply(code=f["icode"], id=f["icmp_id"], seq=1)
        else:
            if f["family"] == 4:
                l3.proto = f["proto"]
            else:
                l3.nh = f["proto"]
            l4 = Raw(b"\x00\x00\x08\x00")   # a GRE header: no flags, IPv4
        socks[dev].send(Ether(src=own[dev], dst=macs[f["in"]]) / l3 / l4 / payload)
        if i % 20 == 19:
            time.sleep(0.01)
    print("%d" % ((time.monotonic() - t0) * 1000))
    for s in socks.values():
        s.close()


def cmd_decode6(path):
    import logging
    logging.getLogger("scapy.runtime").setLevel(logging.ERROR)
    from scapy.all import PcapReader, IPv6, TCP, UDP
    from scapy.layers.inet6 import in6_chksum
    out = []
    for p in PcapReader(path):
        if IPv6 not in p:
            continue
        ip = p[IPv6]
        d = {"src": ip.src, "dst": ip.dst, "nh": ip.nh, "hlim": ip.hlim}
        body = bytes(ip.payload)
        if ip.nh in (6, 17, 58):
            d["csum_ok"] = in6_chksum(ip.nh, ip, body) == 0
        if ip.nh == 6 and TCP in p:
            d.update(sport=p[TCP].sport, dport=p[TCP].dport, tcp_flags=int(p[TCP].flags))
        elif ip.nh == 58 and len(body) >= 8:
            d.update(icmp_type=body[0], icmp_code=body[1])
            if body[0] < 128 and len(body) >= 48:
                q = IPv6(body[8:])
                d["q"] = {"src": q.src, "dst": q.dst, "nh": q.nh}
                if UDP in q or TCP in q:
                    l4 = q[UDP] if UDP in q else q[TCP]
                    d["q"].update(sport=l4.sport, dport=l4.dport)
        out.append(d)
    json.dump(out, sys.stdout)


def cmd_packet(dev, dst_mac, count, expr):
    import logging
    logging.getLogger("scapy.runtime").setLevel(logging.ERROR)
    import scapy.all as sc
    with open("/sys/class/net/%s/address" % dev) as fh:
        own = fh.read().strip()
    frame = sc.Ether(src=own, dst=dst_mac) / eval(expr, vars(sc))   # pylint: disable=eval-used
    s = sc.conf.L2socket(iface=dev)
    for _ in range(int(count)):
        s.send(frame)
    s.close()


def cmd_stream(dev, dst_mac, secs, interval_ms, expr):
    """The frame every INTERVAL_MS for SECS seconds; prints how many were sent
    (and "sending" on stderr once the first is: scapy takes a while to load)."""
    import logging
    import time
    logging.getLogger("scapy.runtime").setLevel(logging.ERROR)
    import scapy.all as sc
    with open("/sys/class/net/%s/address" % dev) as fh:
        own = fh.read().strip()
    frame = sc.Ether(src=own, dst=dst_mac) / eval(expr, vars(sc))   # pylint: disable=eval-used
    s = sc.conf.L2socket(iface=dev)
    end, n = time.monotonic() + float(secs), 0
    while time.monotonic() < end:
        s.send(frame)
        n += 1
        if n == 1:
            print("sending", file=sys.stderr, flush=True)
        time.sleep(float(interval_ms) / 1000)
    s.close()
    print(n)


def cmd_seen(corpus, *ifcap):
    import logging
    logging.getLogger("scapy.runtime").setLevel(logging.ERROR)
    from scapy.all import PcapReader, IP, IPv6, TCP, UDP, ICMP, ICMPv6EchoRequest, ICMPv6EchoReply
    flows = json.load(open(corpus))
    fam = flows[0]["family"] if flows else 4
    F = FAM[fam]
    idx = {wire_key(f): f for f in flows}
    seen, bad = {}, []
    for a in ifcap:
        dev, path = a.split("=", 1)
        for p in PcapReader(path):
            if fam == 4 and IP in p:
                ip, proto, ttl = p[IP], p[IP].proto, p[IP].ttl
            elif fam == 6 and IPv6 in p:
                ip, proto, ttl = p[IPv6], p[IPv6].nh, p[IPv6].hlim
            else:
                continue
            if not in_any(ipaddress.ip_address(ip.src), F["src"]):
                continue      # not from the corpus's sources (neighbour discovery, ...)
            w = {"family": fam, "src": ip.src, "dst": ip.dst, "proto": proto,
                 "id": ip.id if fam == 4 else ip.fl}
            if proto in (6, 17) and (TCP in p or UDP in p):
                l4 = p[TCP] if TCP in p else p[UDP]
                w.update(sport=l4.sport, dport=l4.dport)
            elif proto == 1 and ICMP in p:
                w.update(itype=p[ICMP].type, icmp_id=p[ICMP].id)
            elif proto == 58 and (ICMPv6EchoRequest in p or ICMPv6EchoReply in p):
                e = p[ICMPv6EchoRequest] if ICMPv6EchoRequest in p else p[ICMPv6EchoReply]
                w.update(itype=e.type, icmp_id=e.id)
            k = wire_key(w)
            f = idx.get(k)
            if not f:
                bad.append("%s: frame of no flow: %s" % (dev, p.summary()))
                continue
            if str(f["id"]) in seen:
                bad.append("%s: flow %d seen twice" % (dev, f["id"]))
            seen[str(f["id"])] = dev
            if ttl != 63:
                bad.append("%s: flow %d arrived with TTL/hop limit %d, not 63" % (dev, f["id"], ttl))
            want = {"r1": "s0", "r3": "s2"}[f["out"]]
            if dev != want:
                bad.append("%s: flow %d arrived on %s, its route is via %s" % (dev, f["id"], dev, want))
    json.dump({"seen": seen, "bad": bad}, sys.stdout)


def flow_text(f):
    s = "flow %d: in %s out %s %s -> %s proto %d" % (f["id"], f["in"], f["out"], f["src"], f["dst"], f["proto"])
    if f["proto"] in (6, 17):
        s += " %d -> %d" % (f["sport"], f["dport"])
        if f["proto"] == 6:
            s += " flags %s" % f["flags"]
    elif f.get("itype") is not None:
        s += " type %d code %d id %d" % (f["itype"], f["icode"], f["icmp_id"])
        if f.get("quote"):
            s += " quoting udp %s:%d -> %s:%d" % (f["dst"], f["quote"][0], f["src"], f["quote"][1])
    return s


def load_round(d):
    rules = json.load(open(os.path.join(d, "rules.json")))
    policy = open(os.path.join(d, "policy")).read().strip()
    corpus = json.load(open(os.path.join(d, "corpus.json")))
    return rules, policy, corpus


def cmd_model(d):
    rules, policy, corpus = load_round(d)
    n = {"accepted": 0, "dropped_rule": 0, "dropped_policy": 0}
    hit = set()
    by_policy = states = 0
    for f in corpus:
        i, acc = decide(rules, policy, f)
        n["accepted" if acc else "dropped_rule" if i else "dropped_policy"] += 1
        hit.add(i)
        by_policy += not i
        states += acc and new_state(f)
    n["rules_deciding"] = len(hit - {0})
    n["by_policy"] = by_policy
    n["states"] = states
    print(" ".join("%s %d" % kv for kv in n.items()))


def cmd_check(d, *args):
    rules, policy, corpus = load_round(d)
    opt = dict(x.split("=", 1) for x in args)
    seen = {k: json.load(open(opt[k]))["seen"] for k in ("nft", "xdpr") if k in opt}
    out = []
    per_rule = {}
    for f in corpus:
        i, acc = decide(rules, policy, f)
        per_rule[i] = per_rule.get(i, 0) + 1
        why = ("rule %d (%s)" % (i, xdpr_words(rules[i - 1]))) if i else "policy %s" % policy
        got = {k: str(f["id"]) in v for k, v in seen.items()}
        if len(got) == 2 and got["nft"] != got["xdpr"]:
            out.append("DIFF %s: nft %s, xdpr %s; the model %s it by %s" % (
                flow_text(f), "passed" if got["nft"] else "dropped",
                "passed" if got["xdpr"] else "dropped", "passes" if acc else "drops", why))
        for k, v in got.items():
            if v != acc:
                out.append("MODEL_%s %s: %s %s it, the model %s it by %s" % (
                    k.upper(), flow_text(f), k, "passed" if v else "dropped",
                    "passes" if acc else "drops", why))
    if "nftctr" in opt:
        out += check_nft_counters(json.load(open(opt["nftctr"])), rules, per_rule)
    if "show" in opt:
        out += check_counters(json.load(open(opt["show"])), rules, per_rule)
    # the last line says the check ran to its end (a crash must not read as "no difference")
    print("\n".join(out + ["END %d flows checked" % len(corpus)]))
    return 1 if out else 0


def check_nft_counters(js, rules, per_rule):
    got = []
    for o in js.get("nftables", []):
        if "rule" in o:
            c = [e["counter"] for e in o["rule"]["expr"] if isinstance(e, dict) and "counter" in e]
            got.append(c[0]["packets"] if c else None)
    if len(got) != len(rules):
        return ["NFTCTR: nft lists %d rules, the set has %d" % (len(got), len(rules))]
    return ["NFTCTR: rule %d (%s): nft counted %s packets, the model says %d flows decided by it" % (
        i + 1, xdpr_words(rules[i]), g, per_rule.get(i + 1, 0))
        for i, g in enumerate(got) if g != per_rule.get(i + 1, 0)]


def show_rules(js):
    """The rule list of `xdpr -j filter show` (a list, or an object holding one)."""
    if isinstance(js, dict):
        js = js.get("rules", [])
    return js


def check_counters(js, rules, per_rule):
    out = []
    lst = show_rules(js)
    if len(lst) != len(rules):
        return ["COUNTERS: filter show lists %d rules, the set has %d" % (len(lst), len(rules))]
    for i, r in enumerate(lst):
        c = r.get("counters", r)
        got, want = c.get("packets"), per_rule.get(i + 1, 0)
        if got != want:
            out.append("COUNTERS: rule %d (%s): packets %s, the model says %d flows decided by it" % (
                i + 1, xdpr_words(rules[i]), got, want))
    return out


if __name__ == "__main__":
    cmds = {"gen": cmd_gen, "send": cmd_send, "seen": cmd_seen, "check": cmd_check, "model": cmd_model, "decode6": cmd_decode6,
            "packet": cmd_packet, "stream": cmd_stream}
    if len(sys.argv) < 2 or sys.argv[1] not in cmds:
        sys.exit(__doc__)
    sys.exit(cmds[sys.argv[1]](*sys.argv[2:]) or 0)
