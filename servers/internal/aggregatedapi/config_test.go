package aggregatedapi

import (
	"crypto/tls"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/version"
	genericapiserver "k8s.io/apiserver/pkg/server"
	genericoptions "k8s.io/apiserver/pkg/server/options"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	fakediscovery "k8s.io/client-go/discovery/fake"
	k8stesting "k8s.io/client-go/testing"
	baseversion "k8s.io/component-base/version"

	"sealion.dev/servers/internal/tlsprofile"
)

// The configuration against a real cluster is exercised by the Supervisor's aggregated API test
// (servers/supervisor/apiserver) and the Concierge's integration tests.
func TestRecommendedConfigNeedsACertificate(t *testing.T) {
	_, err := RecommendedConfig(Options{Title: "Pinniped Test"})
	if err == nil || !strings.Contains(err.Error(), "no serving certificate") {
		t.Fatalf("error %v, want one about the missing certificate", err)
	}
}

// The limits are ours, whatever the library's defaults become.
func TestLimits(t *testing.T) {
	c := genericapiserver.NewConfig(serializer.NewCodecFactory(runtime.NewScheme()))
	limit(c)
	if c.MaxRequestsInFlight != 400 || c.MaxMutatingRequestsInFlight != 200 || c.RequestTimeout != time.Minute || c.MaxRequestBodyBytes != 1<<20 {
		t.Errorf("in flight %d and %d, request timeout %v, body %d bytes; want 400 and 200, 1m and 1 MiB",
			c.MaxRequestsInFlight, c.MaxMutatingRequestsInFlight, c.RequestTimeout, c.MaxRequestBodyBytes)
	}
	if c.ShutdownDelayDuration != 5*time.Second {
		t.Errorf("shutdown delay %v, want 5s", c.ShutdownDelayDuration)
	}
}

// The generic server takes the TLS profile's ciphers, and leaves HTTP/2 out when they cannot
// carry it.
func TestApplyTLS(t *testing.T) {
	// Ciphers that would allow HTTP/2: the servers speak HTTP/1.1 all the same (handlerchain.go).
	profile, err := tlsprofile.New([]string{"TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384", "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384", "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256"})
	if err != nil {
		t.Fatal(err)
	}
	s := genericoptions.NewSecureServingOptions()
	applyTLS(s, profile)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.Listener = ln
	var info *genericapiserver.SecureServingInfo
	if err := s.ApplyTo(&info); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = info.Listener.Close() }()
	want := []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384, tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384}
	if !slices.Equal(info.CipherSuites, want) || info.MinTLSVersion != tls.VersionTLS12 || !info.DisableHTTP2 {
		t.Errorf("ciphers %v, min version %x, HTTP/2 disabled %v; want %v, TLS 1.2 and disabled",
			info.CipherSuites, info.MinTLSVersion, info.DisableHTTP2, want)
	}
}

// A cluster that does not serve a policy kind in admissionregistration.k8s.io/v1 gets its
// admission plugin switched off: its informer would never sync, and the server never be ready
// (MutatingAdmissionPolicy before Kubernetes 1.36, ValidatingAdmissionPolicy before 1.30).
func TestUnservedPolicyPlugins(t *testing.T) {
	for _, c := range []struct {
		name  string
		kinds []string
		want  []string
	}{
		{"1.36 and later", []string{"MutatingWebhookConfiguration", "ValidatingAdmissionPolicy", "MutatingAdmissionPolicy"}, nil},
		{"1.30 to 1.35", []string{"MutatingWebhookConfiguration", "ValidatingAdmissionPolicy"}, []string{"MutatingAdmissionPolicy"}},
		{"before 1.30", []string{"MutatingWebhookConfiguration"}, []string{"MutatingAdmissionPolicy", "ValidatingAdmissionPolicy"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			list := &metav1.APIResourceList{GroupVersion: "admissionregistration.k8s.io/v1"}
			for _, k := range c.kinds {
				list.APIResources = append(list.APIResources, metav1.APIResource{Kind: k, Name: strings.ToLower(k) + "s"})
			}
			d := &fakediscovery.FakeDiscovery{Fake: &k8stesting.Fake{Resources: []*metav1.APIResourceList{list}}}
			got, err := unservedPolicyPlugins(d)
			if err != nil || !slices.Equal(got, c.want) {
				t.Errorf("unservedPolicyPlugins() = %q, %v; want %q", got, err, c.want)
			}
		})
	}
	// Without an answer the server does not start rather than guess.
	d := &fakediscovery.FakeDiscovery{Fake: &k8stesting.Fake{}}
	if _, err := unservedPolicyPlugins(d); err == nil {
		t.Error("no error when the cluster does not answer for admissionregistration.k8s.io/v1")
	}
}

// The servers emulate the Kubernetes version of their libraries, whatever version our release is
// stamped with, so that the feature gate they set at start exists there (at our v0.1.0, taken as
// Kubernetes 0.1, setting it failed and no server started). A unit test binary is unstamped; the
// integration tests' builds are stamped (core/testing/serverbuild) and start the servers.
func TestSetFeatureGates(t *testing.T) {
	if err := SetFeatureGates(); err != nil {
		t.Fatal(err)
	}
	want := version.MustParse(baseversion.DefaultKubeBinaryVersion)
	if v := effectiveVersion(); !v.EmulationVersion().EqualTo(want) || !v.BinaryVersion().EqualTo(want) {
		t.Errorf("the servers emulate %s (binary %s), want %s", v.EmulationVersion(), v.BinaryVersion(), want)
	}
	if got := utilfeature.DefaultMutableFeatureGate.EmulationVersion(); !got.EqualTo(want) {
		t.Errorf("the feature gates emulate %s, want %s", got, want)
	}
}
