// Package testdeps decides what a test does when something it needs from the machine is missing:
// a program (slapd, Samba, Chromium), a Docker engine, root, permission to change the host. On a
// developer's machine the test skips and says what is missing; in CI (CI=true), where the Makefile
// installs and starts all of it, the test fails, so that a CI run cannot pass without running it.
package testdeps

import (
	"os"
	"testing"
)

// InCI reports whether the tests run in CI, which sets CI=true.
func InCI() bool { return os.Getenv("CI") == "true" }

// Require stops t when err, the answer of a check for a dependency, is not nil: a skip outside
// CI, a failure in CI. A nil err lets the test go on.
func Require(t testing.TB, err error) {
	t.Helper()
	if err == nil {
		return
	}
	if InCI() {
		t.Fatalf("a dependency of this test is missing, and under CI=true that fails the test (the Makefile installs it): %v", err)
	}
	t.Skipf("skipping: %v (under CI=true this fails)", err)
}
