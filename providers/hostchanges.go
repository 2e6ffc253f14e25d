package providers

import (
	"errors"
	"fmt"
	"os"
	"strings"
)

const (
	// AllowHostChangesEnv set to "true" allows providers that change this machine to run.
	AllowHostChangesEnv = "SEALION_ALLOW_HOST_CHANGES"
	// ciEnv is set to "true" by most CI systems, where the machine is disposable.
	ciEnv = "CI"
)

// ErrHostChangesNotAllowed is returned (wrapped) by Create of a provider that changes this
// machine when the caller did not opt in.
var ErrHostChangesNotAllowed = errors.New("host changes not allowed")

// CheckHostChangesAllowed returns nil when a provider that changes this machine may run: the
// caller opted in explicitly, or the environment says so through CI=true or
// SEALION_ALLOW_HOST_CHANGES=true. Otherwise the error says what would change and how to opt in.
// getenv is os.Getenv outside tests.
func CheckHostChangesAllowed(provider string, explicit bool, getenv func(string) string) error {
	if getenv == nil {
		getenv = os.Getenv
	}
	if explicit || isTrue(getenv(AllowHostChangesEnv)) || isTrue(getenv(ciEnv)) {
		return nil
	}
	return fmt.Errorf("%w: the %s provider starts containerd and a kubelet on this machine and writes "+
		"/etc/kubernetes, /var/lib/kubelet, /etc/cni/net.d and iptables rules (all removed on delete); "+
		"opt in with the caller's allow-host-changes option, %s=true or %s=true",
		ErrHostChangesNotAllowed, provider, AllowHostChangesEnv, ciEnv)
}

func isTrue(v string) bool { return strings.EqualFold(strings.TrimSpace(v), "true") }
