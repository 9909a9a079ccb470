#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# drivers.t - xdpr on real drivers: igb (native XDP) and e1000e (generic XDP)
# in a QEMU guest (TCG), with client, server and peer in host namespaces.
# The scenario itself is guest/drivers.sh; lib.sh builds and boots the guest.
#
# Needs root and Debian's package mirror the first time (QEMU from
# bookworm-backports, busybox-static, a Debian kernel); skips when the
# machine cannot have them.  XDPR_VM_TIMEOUT bounds the guest run (s).
. "$(dirname "$0")/lib.sh"

vm_init
vm_packages
vm_kernel
vm_initramfs drivers.sh
diag "guest kernel $VM_KVER, $("$VM_QEMU" --version | head -n 1)"
vm_boot
vm_run
done_testing
