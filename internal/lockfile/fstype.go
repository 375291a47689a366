package lockfile

// Filesystem types by statfs f_type (Linux). Local types are accepted; every
// other type, listed here or not, is refused (fail closed): locks on network,
// cluster, FUSE and union filesystems may be emulated, host-local, split
// across mounts, or hang (docs/locking.md section 5).
var localFS = map[uint32]string{
	0x0000ef53: "ext4", // also ext2 and ext3
	0x58465342: "xfs",
	0x9123683e: "btrfs",
	0x2fc12fc1: "zfs",
	0x01021994: "tmpfs",
	0x858458f6: "ramfs",
	0xf2f52010: "f2fs",
	0xca451a4e: "bcachefs",
	0x2011bab0: "exfat",
	0x00004d44: "vfat",
	0x3153464a: "jfs",
	0x52654973: "reiserfs",
	0x00003434: "nilfs2",
	0x0000482b: "hfsplus",
	0x5346544e: "ntfs",
	0x73717368: "squashfs",
	0xe0f5e1e2: "erofs",
	0x00009660: "iso9660",
	0x15013346: "udf",
}

var remoteFS = map[uint32]string{
	0x00006969: "nfs",
	0x65735546: "fuse",
	0x794c7630: "overlayfs",
	0xff534d42: "cifs",
	0xfe534d42: "smb2",
	0x0000517b: "smb",
	0x01021997: "9p",
	0x00c36400: "ceph",
	0x5346414f: "afs",
	0x6b414653: "kafs",
	0x73757245: "coda",
	0x0000564c: "ncp",
	0x7461636f: "ocfs2",
	0x01161970: "gfs2",
	0x47504653: "gpfs",
	0x0bd00bd0: "lustre",
	0x19830326: "beegfs",
	0xaad7aaea: "panfs",
	0x013111a8: "ibrix",
	0x61636673: "acfs",
	0x61756673: "aufs",
	0x786f4256: "vboxsf",
	0xbacbacbc: "vmhgfs",
	0x7c7c6673: "prl_fs",
	0xbeefdead: "snfs",
	0xa501fcf5: "vxfs",
	0x6e667364: "nfsd",
}

// classifyFS names a filesystem type and says whether it is accepted.
func classifyFS(magic uint32) (name string, local bool) {
	if n, ok := localFS[magic]; ok {
		return n, true
	}
	if n, ok := remoteFS[magic]; ok {
		return n, false
	}
	return "unknown", false
}
