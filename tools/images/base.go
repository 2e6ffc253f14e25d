package main

import (
	"io/fs"

	"sealion.dev/tools/internal/imagebuild"
)

// The users of distroless images: root, nobody, and the unprivileged nonroot our servers run as.
const (
	nonrootUser = "65532:65532"
	passwd      = "root:x:0:0:root:/root:/sbin/nologin\n" +
		"nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\n" +
		"nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n"
	group = "root:x:0:\nnobody:x:65534:\nnonroot:x:65532:\n"
)

// baseLayer is what every image shares: users, a writable /tmp and the public CA bundle, so that
// TLS clients inside trust public issuers. It is byte-identical across images, so containerd
// stores it once.
func baseLayer(caBundle string) *imagebuild.Layer {
	return imagebuild.NewLayer().
		File("/etc/passwd", 0o644, []byte(passwd)).
		File("/etc/group", 0o644, []byte(group)).
		File("/etc/nsswitch.conf", 0o644, []byte("hosts: files dns\n")).
		CopyFile("/etc/ssl/certs/ca-certificates.crt", caBundle).
		Dir("/root", 0o700).
		OwnedDir("/home/nonroot", 0o700, 65532, 65532).
		Dir("/tmp", 0o777|fs.ModeSticky)
}
