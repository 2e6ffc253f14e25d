package controlplane

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

const (
	// KubernetesVersion is the version of the binaries the control plane runs.
	KubernetesVersion = "v1.33.13"

	// BinDirEnv names a directory holding etcd, kube-apiserver and kubectl; it overrides the cache.
	BinDirEnv = "SEALION_KUBE_BIN_DIR"
	// CacheEnv names sealion's cache root; it defaults to <user cache dir>/sealion.
	CacheEnv = "SEALION_CACHE"
)

// ErrBinariesMissing is returned (wrapped) when a needed binary is not installed.
var ErrBinariesMissing = errors.New("kubernetes binaries missing: run `make kube-binaries`")

// binaries are the absolute paths of the executables the control plane needs.
type binaries struct {
	dir, etcd, apiserver, kubectl string
	// controllerManager is empty when the folder has none: only Options.ControllerManager needs it.
	controllerManager string
}

// BinDir returns the directory the binaries are taken from: $SEALION_KUBE_BIN_DIR, else
// $SEALION_CACHE/kubernetes/<version>/bin.
func BinDir() (string, error) {
	if dir := os.Getenv(BinDirEnv); dir != "" {
		return dir, nil
	}
	cache := os.Getenv(CacheEnv)
	if cache == "" {
		userCache, err := os.UserCacheDir()
		if err != nil {
			return "", fmt.Errorf("finding the user cache directory (set %s or %s): %w", BinDirEnv, CacheEnv, err)
		}
		cache = filepath.Join(userCache, "sealion")
	}
	return filepath.Join(cache, "kubernetes", KubernetesVersion, "bin"), nil
}

func findBinaries() (*binaries, error) {
	dir, err := BinDir()
	if err != nil {
		return nil, err
	}
	b := &binaries{
		dir:       dir,
		etcd:      filepath.Join(dir, "etcd"),
		apiserver: filepath.Join(dir, "kube-apiserver"),
		kubectl:   filepath.Join(dir, "kubectl"),
	}
	if kcm := filepath.Join(dir, "kube-controller-manager"); isExecutable(kcm) {
		b.controllerManager = kcm
	}
	for _, path := range []string{b.etcd, b.apiserver, b.kubectl} {
		info, err := os.Stat(path)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrBinariesMissing, err)
		}
		if info.IsDir() || info.Mode().Perm()&0o111 == 0 {
			return nil, fmt.Errorf("%w: %s is not an executable file", ErrBinariesMissing, path)
		}
	}
	return b, nil
}

func isExecutable(path string) bool {
	info, err := os.Stat(path)
	return err == nil && !info.IsDir() && info.Mode().Perm()&0o111 != 0
}
