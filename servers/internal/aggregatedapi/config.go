// Package aggregatedapi holds what the Concierge's and the Supervisor's aggregated API servers
// share: the generic server configuration (authentication and authorization delegated to the
// cluster, admission, OpenAPI, a rotating serving certificate) and the handler chain.
package aggregatedapi

import (
	"fmt"
	"maps"
	"net"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	mutatingadmissionpolicy "k8s.io/apiserver/pkg/admission/plugin/policy/mutating"
	validatingadmissionpolicy "k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	openapinamer "k8s.io/apiserver/pkg/endpoints/openapi"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	genericoptions "k8s.io/apiserver/pkg/server/options"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/discovery"
	"k8s.io/component-base/compatibility"
	basetracing "k8s.io/component-base/tracing"
	baseversion "k8s.io/component-base/version"

	generatedopenapi "sealion.dev/core/generated/openapi"
	"sealion.dev/servers/internal/tlsprofile"
)

// effectiveVersion is the Kubernetes version the generic API server emulates: that of the
// Kubernetes libraries it is built from, whatever our own release's version is. The library's
// default takes the build's version stamp, our release's (v0.1.0), and would emulate Kubernetes
// 0.1, where every feature gate is pre-alpha and setting one fails at start; only an unstamped
// build (v0.0.0) falls back to the libraries'. /version still reports the build's gitVersion.
func effectiveVersion() compatibility.MutableEffectiveVersion {
	return compatibility.NewEffectiveVersionFromString(baseversion.DefaultKubeBinaryVersion, "", "")
}

// SetFeatureGates sets the process's feature gates as our aggregated API servers need them, before
// their configuration is completed: they emulate the Kubernetes version of effectiveVersion (the
// library registered them at init with the build's stamp).
func SetFeatureGates() error {
	if err := utilfeature.DefaultMutableFeatureGate.SetEmulationVersion(effectiveVersion().EmulationVersion()); err != nil {
		return fmt.Errorf("feature gates: %w", err)
	}
	return nil
}

// Options configure RecommendedConfig.
type Options struct {
	// BindAddress and Port are where the server listens.
	BindAddress net.IP
	Port        int
	// Kubeconfig reaches the cluster for delegated authentication, authorization and admission;
	// the in-cluster configuration when empty.
	Kubeconfig string
	// DisableAdmissionPlugins turns off some of the generic server's admission plugins.
	DisableAdmissionPlugins []string
	// Discovery is the cluster's: the admission plugins of the policy kinds it does not serve
	// are turned off too (unservedPolicyPlugins).
	Discovery discovery.ServerResourcesInterface
	// Title names the server in its OpenAPI documents.
	Title string
	// Scheme and Codecs hold the served types, under Versions.
	Scheme   *runtime.Scheme
	Codecs   serializer.CodecFactory
	Versions []schema.GroupVersion
	// Cert is the serving certificate; the server follows its rotations.
	Cert dynamiccertificates.CertKeyContentProvider
	// TLS is the server's TLS profile.
	TLS tlsprofile.Profile
	// Tracer, when the server traces, makes the spans of its requests, continuing the traces the
	// kube-apiserver's aggregator passes on; nil, the library's default, traces nothing.
	Tracer basetracing.TracerProvider
}

// RecommendedConfig builds a generic API server configuration for o. Nothing is stored (no etcd),
// and health endpoints need no authorization, so that probes work.
func RecommendedConfig(o Options) (*genericapiserver.RecommendedConfig, error) {
	if o.Cert == nil {
		return nil, fmt.Errorf("aggregated API server %q: no serving certificate", o.Title)
	}
	if o.Discovery == nil {
		return nil, fmt.Errorf("aggregated API server %q: no discovery client for the cluster", o.Title)
	}
	unserved, err := unservedPolicyPlugins(o.Discovery)
	if err != nil {
		return nil, fmt.Errorf("aggregated API server %q: %w", o.Title, err)
	}
	recommended := genericoptions.NewRecommendedOptions("", o.Codecs.LegacyCodec(o.Versions...))
	recommended.Etcd = nil
	recommended.SecureServing.BindAddress = o.BindAddress
	recommended.SecureServing.BindPort = o.Port
	applyTLS(recommended.SecureServing.SecureServingOptions, o.TLS)
	disabled := append(slices.Clone(o.DisableAdmissionPlugins), unserved...)
	slices.Sort(disabled)
	recommended.Admission.DisablePlugins = slices.Compact(disabled)
	recommended.Authorization.AlwaysAllowPaths = []string{"/healthz", "/readyz", "/livez"}
	if o.Kubeconfig != "" {
		recommended.Authentication.RemoteKubeConfigFile = o.Kubeconfig
		recommended.Authorization.RemoteKubeConfigFile = o.Kubeconfig
		recommended.CoreAPI.CoreAPIKubeconfigPath = o.Kubeconfig
	}

	c := genericapiserver.NewRecommendedConfig(o.Codecs)
	// Before ApplyTo: priority and fairness takes its concurrency from the in-flight limits there.
	limit(&c.Config)
	c.EffectiveVersion = effectiveVersion()
	namer := openapinamer.NewDefinitionNamer(o.Scheme)
	c.OpenAPIConfig = genericapiserver.DefaultOpenAPIConfig(generatedopenapi.GetOpenAPIDefinitions, namer)
	c.OpenAPIConfig.Info.Title = o.Title
	c.OpenAPIV3Config = genericapiserver.DefaultOpenAPIV3Config(generatedopenapi.GetOpenAPIDefinitions, namer)
	c.OpenAPIV3Config.Info.Title = o.Title
	if err := recommended.ApplyTo(c); err != nil {
		return nil, fmt.Errorf("configuring the API server: %w", err)
	}
	c.SecureServing.Cert = o.Cert
	if o.Tracer != nil {
		c.TracerProvider = o.Tracer
	}
	// A stopping replica leaves its Service's endpoints at once, but the aggregator and
	// kube-proxy follow only within seconds: from the start of its shutdown the server fails
	// /readyz and keeps serving for ShutdownDelay, then finishes the requests in flight.
	c.ShutdownDelayDuration = ShutdownDelay
	return c, nil
}

// ShutdownDelay is how long a stopping server keeps serving new requests: the seconds endpoints
// take to converge, well inside the pods' termination grace period of 30 seconds.
const ShutdownDelay = 5 * time.Second

// policyKinds are the admission plugins of policy kinds, by kind, that clusters serve in
// admissionregistration.k8s.io/v1 only from some Kubernetes version on: ValidatingAdmissionPolicy
// from 1.30, MutatingAdmissionPolicy from 1.36.
var policyKinds = map[string]string{
	"ValidatingAdmissionPolicy": validatingadmissionpolicy.PluginName,
	"MutatingAdmissionPolicy":   mutatingadmissionpolicy.PluginName,
}

// unservedPolicyPlugins names the plugins of the policy kinds the cluster does not serve. Such a
// plugin's informer never syncs there, and the server would never be ready; it is switched off,
// as Pinniped switches it off.
func unservedPolicyPlugins(d discovery.ServerResourcesInterface) ([]string, error) {
	const gv = "admissionregistration.k8s.io/v1"
	resources, err := d.ServerResourcesForGroupVersion(gv)
	if err != nil {
		return nil, fmt.Errorf("discovering the cluster's %s kinds: %w", gv, err)
	}
	served := map[string]bool{}
	for _, r := range resources.APIResources {
		served[r.Kind] = true
	}
	var off []string
	for _, kind := range slices.Sorted(maps.Keys(policyKinds)) {
		if !served[kind] {
			off = append(off, policyKinds[kind])
		}
	}
	return off, nil
}

// applyTLS gives the server the TLS profile's versions and ciphers, and HTTP/1.1 only, which lets
// a stopping server hand its connections over without failing a request (handlerchain.go).
func applyTLS(s *genericoptions.SecureServingOptions, p tlsprofile.Profile) {
	s.MinTLSVersion = "VersionTLS12"
	s.CipherSuites = p.CipherNames()
	s.DisableHTTP2Serving = true
}

// Limits of the generic server, set here rather than left to the library's defaults.
const (
	// maxRequestsInFlight and maxMutatingRequestsInFlight add up to the concurrency that priority
	// and fairness shares among the cluster's priority levels: the kube-apiserver's defaults, as
	// every request through the aggregation layer was admitted by it under the same shares.
	maxRequestsInFlight         = 400
	maxMutatingRequestsInFlight = 200
	// requestTimeout ends a request that is still running: TokenCredentialRequests wait for a
	// webhook or an issuer's keys at most 10s each; nothing else we serve waits for anything.
	requestTimeout = 60 * time.Second
	// maxRequestBodyBytes bounds a request's body, where the library allows 3 MiB, an object
	// stored in etcd. Ours are never stored: the largest is a TokenCredentialRequest, whose token
	// has no reason to be larger than the 1 MiB the impersonation proxy accepts for it.
	maxRequestBodyBytes = 1 << 20
	// shutdownDelay is how long a stopping replica keeps serving, with /readyz failing, while
	// the kube-apiserver's aggregator and kube-proxy stop sending it requests; the library's
	// default, none, refuses the requests that still come in that time.
	shutdownDelay = 5 * time.Second
)

func limit(c *genericapiserver.Config) {
	c.MaxRequestsInFlight = maxRequestsInFlight
	c.MaxMutatingRequestsInFlight = maxMutatingRequestsInFlight
	c.RequestTimeout = requestTimeout
	c.MaxRequestBodyBytes = maxRequestBodyBytes
	c.ShutdownDelayDuration = shutdownDelay
}
