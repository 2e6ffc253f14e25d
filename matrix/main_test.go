package matrix

import (
	"os"
	"testing"

	"sealion.dev/providers/all"
)

// TestMain calls all.Main as every test package linking the providers must, though none of its
// tests creates a cluster.
func TestMain(m *testing.M) {
	all.Main()
	os.Exit(m.Run())
}
