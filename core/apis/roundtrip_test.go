package apis_test

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/apitesting/roundtrip"
	"k8s.io/apimachinery/pkg/runtime"
	runtimeserializer "k8s.io/apimachinery/pkg/runtime/serializer"

	identityinstall "sealion.dev/core/apis/concierge/identity/install"
	logininstall "sealion.dev/core/apis/concierge/login/install"
	clientsecretinstall "sealion.dev/core/apis/supervisor/clientsecret/install"
)

// TestRoundTrip fuzzes every kind of the aggregated API groups and checks that converting it
// from the hub to v1alpha1, encoding, decoding and converting back loses nothing.
func TestRoundTrip(t *testing.T) {
	t.Parallel()
	installs := map[string]func(*runtime.Scheme) error{
		"login.concierge":         logininstall.Install,
		"identity.concierge":      identityinstall.Install,
		"clientsecret.supervisor": clientsecretinstall.Install,
	}
	noExtraFuzzers := func(runtimeserializer.CodecFactory) []interface{} { return nil }
	for name, install := range installs {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			roundtrip.RoundTripTestForAPIGroup(t, func(scheme *runtime.Scheme) {
				if err := install(scheme); err != nil {
					t.Fatalf("installing the API group: %v", err)
				}
			}, noExtraFuzzers)
		})
	}
}
