package all

import (
	"os"
	"testing"
)

// TestMain calls Main as every test package linking this one must, though none of its tests
// creates a cluster.
func TestMain(m *testing.M) {
	Main()
	os.Exit(m.Run())
}
