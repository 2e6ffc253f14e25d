package imagebuild

import "io/fs"

// NonrootUser is the unprivileged user our programs run as, in every image of ours.
const NonrootUser = "65532:65532"

// The users of distroless images: root, nobody, and nonroot.
const (
	passwd = "root:x:0:0:root:/root:/sbin/nologin\n" +
		"nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\n" +
		"nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n"
	group = "root:x:0:\nnobody:x:65534:\nnonroot:x:65532:\n"
)

// Base is what every image of ours shares: users, a writable /tmp and the public CA bundle, so that
// TLS clients inside trust public issuers. It is byte-identical across images, so containerd
// stores it once.
func Base(caBundle string) *Layer {
	return NewLayer().
		File("/etc/passwd", 0o644, []byte(passwd)).
		File("/etc/group", 0o644, []byte(group)).
		File("/etc/nsswitch.conf", 0o644, []byte("hosts: files dns\n")).
		CopyFile("/etc/ssl/certs/ca-certificates.crt", caBundle).
		Dir("/root", 0o700).
		OwnedDir("/home/nonroot", 0o700, 65532, 65532).
		Dir("/tmp", 0o777|fs.ModeSticky)
}
