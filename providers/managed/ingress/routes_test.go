package ingress

import (
	"reflect"
	"strings"
	"testing"
	"time"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

type ingressOption func(*networkingv1.Ingress)

func withClass(class string) ingressOption {
	return func(ing *networkingv1.Ingress) { ing.Spec.IngressClassName = ptr.To(class) }
}

func withAnnotation(key, value string) ingressOption {
	return func(ing *networkingv1.Ingress) { ing.Annotations[key] = value }
}

func withoutPassthrough(ing *networkingv1.Ingress) { delete(ing.Annotations, PassthroughAnnotation) }

func createdAt(minute int) ingressOption {
	return func(ing *networkingv1.Ingress) {
		ing.CreationTimestamp = metav1.NewTime(time.Date(2026, 1, 1, 0, minute, 0, 0, time.UTC))
	}
}

// withRule adds a rule sending host to port 443 of service; an empty service gives a rule
// without paths.
func withRule(host, service string) ingressOption {
	return func(ing *networkingv1.Ingress) {
		rule := networkingv1.IngressRule{Host: host}
		if service != "" {
			rule.HTTP = &networkingv1.HTTPIngressRuleValue{Paths: []networkingv1.HTTPIngressPath{{
				Path:     "/",
				PathType: ptr.To(networkingv1.PathTypePrefix),
				Backend:  serviceBackend(service, networkingv1.ServiceBackendPort{Number: 443}),
			}}}
		}
		ing.Spec.Rules = append(ing.Spec.Rules, rule)
	}
}

func withDefaultBackend(service string, port networkingv1.ServiceBackendPort) ingressOption {
	return func(ing *networkingv1.Ingress) {
		b := serviceBackend(service, port)
		ing.Spec.DefaultBackend = &b
	}
}

func serviceBackend(service string, port networkingv1.ServiceBackendPort) networkingv1.IngressBackend {
	return networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: service, Port: port}}
}

// newIngress is a passthrough Ingress naming no class, in testNamespace.
func newIngress(name string, opts ...ingressOption) *networkingv1.Ingress {
	ing := &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{
		Name: name, Namespace: testNamespace,
		Annotations: map[string]string{PassthroughAnnotation: "true"},
	}}
	for _, opt := range opts {
		opt(ing)
	}
	return ing
}

func TestHandled(t *testing.T) {
	tests := []struct {
		name           string
		ing            *networkingv1.Ingress
		classIsDefault bool
		want           bool
	}{
		{"our class", newIngress("a", withClass(ClassName)), false, true},
		{"another class, ours the default", newIngress("a", withClass("nginx")), true, false},
		{"no class, ours the default", newIngress("a"), true, true},
		{"no class, ours not the default", newIngress("a"), false, false},
		{"legacy annotation naming ours", newIngress("a", withAnnotation(legacyClassAnnotation, ClassName)), false, true},
		{"legacy annotation naming another, ours the default", newIngress("a", withAnnotation(legacyClassAnnotation, "nginx")), true, false},
		{"the field wins over the legacy annotation", newIngress("a", withClass(ClassName), withAnnotation(legacyClassAnnotation, "nginx")), false, true},
	}
	for _, tt := range tests {
		if got := handled(tt.ing, tt.classIsDefault); got != tt.want {
			t.Errorf("%s: handled() = %v; want %v", tt.name, got, tt.want)
		}
	}
}

func TestMakePlan(t *testing.T) {
	https := networkingv1.ServiceBackendPort{Number: 443}
	named := networkingv1.ServiceBackendPort{Name: "https"}
	key := func(name string) string { return testNamespace + "/" + name }
	to := func(service string, port networkingv1.ServiceBackendPort) backend {
		return backend{namespace: testNamespace, service: service, port: port}
	}
	ingresses := []*networkingv1.Ingress{
		// Listed before the older one that claims the same host: age decides, not order.
		newIngress("younger", createdAt(2), withRule("proxy.example.test", "other"), withRule("own.example.test", "other")),
		newIngress("proxy", createdAt(1), withRule("proxy.example.test", "impersonation-proxy"), withRule("*.apps.example.test", "apps")),
		newIngress("no-passthrough", createdAt(1), withoutPassthrough, withRule("plain.example.test", "web")),
		newIngress("passthrough-false", createdAt(1), withAnnotation(PassthroughAnnotation, "false"), withRule("false.example.test", "web")),
		newIngress("other-class", createdAt(1), withClass("nginx"), withRule("nginx.example.test", "web")),
		newIngress("default-backend", createdAt(1), withRule("bare.example.test", ""), withDefaultBackend("fallback", named)),
		newIngress("hostless", createdAt(1), withRule("", "web"), withRule("nobackend.example.test", "")),
	}
	p := makePlan(ingresses, true)

	wantRoutes := map[string]backend{
		"proxy.example.test":  to("impersonation-proxy", https),
		"*.apps.example.test": to("apps", https),
		"own.example.test":    to("other", https),
		"bare.example.test":   to("fallback", named),
	}
	if !reflect.DeepEqual(p.routes, wantRoutes) {
		t.Errorf("routes = %v;\nwant %v", p.routes, wantRoutes)
	}
	wantRouted := map[string][]string{
		key("proxy"):           {"*.apps.example.test", "proxy.example.test"},
		key("younger"):         {"own.example.test"},
		key("default-backend"): {"bare.example.test"},
	}
	if !reflect.DeepEqual(p.routed, wantRouted) {
		t.Errorf("routed = %v; want %v", p.routed, wantRouted)
	}
	wantWarnings := map[string]struct{ reason, part string }{
		key("younger"):           {reasonRuleNotRouted, "proxy.example.test is routed by the older Ingress " + key("proxy")},
		key("no-passthrough"):    {reasonPassthroughOnly, "supports only TLS passthrough"},
		key("passthrough-false"): {reasonPassthroughOnly, "supports only TLS passthrough"},
		key("hostless"):          {reasonRuleNotRouted, "rule 0 has no host, and TLS passthrough routes by server name (SNI) only; host nobackend.example.test has no Service backend"},
	}
	if len(p.warnings) != len(wantWarnings) {
		t.Errorf("warnings = %v; want ones for %d Ingresses", p.warnings, len(wantWarnings))
	}
	for k, want := range wantWarnings {
		got := p.warnings[k]
		if got.reason != want.reason || !strings.Contains(got.message, want.part) {
			t.Errorf("warning for %s = %+v; want reason %s containing %q", k, got, want.reason, want.part)
		}
	}

	if p := makePlan(ingresses, false); len(p.routed) != 0 || len(p.warnings) != 0 {
		t.Errorf("with the class not the default, plan = %+v; want nothing, as every Ingress names no class or another", p)
	}
}

func TestMatch(t *testing.T) {
	exact, wildcard, deeper := &route{}, &route{}, &route{}
	routes := table{
		"proxy.example.test":       exact,
		"*.example.test":           wildcard,
		"*.deep.apps.sealion.test": deeper,
	}
	tests := []struct {
		serverName string
		want       *route
	}{
		{"proxy.example.test", exact},
		{"PROXY.Example.TEST", exact},
		{"other.example.test", wildcard},
		{"x.deep.apps.sealion.test", deeper},
		{"a.b.example.test", nil}, // a wildcard covers one label only
		{"example.test", nil},     // nor the bare domain
		{"*.example.test", nil},   // a server name is never a pattern
		{"unknown.test", nil},
		{"", nil},
	}
	for _, tt := range tests {
		if got := routes.match(tt.serverName); got != tt.want {
			t.Errorf("match(%q) = %p; want %p", tt.serverName, got, tt.want)
		}
	}
}
