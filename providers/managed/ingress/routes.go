package ingress

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/client-go/tools/cache"

	"sealion.dev/providers/managed/internal/tcprelay"
)

// legacyClassAnnotation names an Ingress's class on Ingresses older than spec.ingressClassName;
// controllers still honour it, and it wins over the default class.
const legacyClassAnnotation = "kubernetes.io/ingress.class"

// backend is the Service port an Ingress rule sends its host's connections to.
type backend struct {
	namespace, service string
	port               networkingv1.ServiceBackendPort
}

// key names the backend for sharing its endpoints between hosts and across syncs.
func (b backend) key() string {
	return fmt.Sprintf("%s/%s:%d/%s", b.namespace, b.service, b.port.Number, b.port.Name)
}

// plan is what the Ingresses ask for: which host goes where, and what each Ingress is told.
type plan struct {
	routes   map[string]backend  // by host as written in the rule, wildcards included
	routed   map[string][]string // by Ingress key: the hosts it routes, sorted; only Ingresses routing one
	warnings map[string]warning  // by Ingress key: why (part of) it is not routed
}

type warning struct{ reason, message string }

// Warning Event reasons.
const (
	reasonPassthroughOnly = "PassthroughOnly"
	reasonRuleNotRouted   = "RuleNotRouted"
)

// handled says whether the Ingress belongs to ClassName: named by spec.ingressClassName or the
// legacy annotation, or naming no class while ClassName is the default.
func handled(ing *networkingv1.Ingress, classIsDefault bool) bool {
	if ing.Spec.IngressClassName != nil {
		return *ing.Spec.IngressClassName == ClassName
	}
	if class, ok := ing.Annotations[legacyClassAnnotation]; ok {
		return class == ClassName
	}
	return classIsDefault
}

// makePlan routes every host of the handled passthrough Ingresses. A host two Ingresses claim goes
// to the older one, as a host can lead to one backend only.
func makePlan(ingresses []*networkingv1.Ingress, classIsDefault bool) plan {
	p := plan{routes: map[string]backend{}, routed: map[string][]string{}, warnings: map[string]warning{}}
	ingresses = slices.Clone(ingresses)
	slices.SortFunc(ingresses, func(a, b *networkingv1.Ingress) int {
		if c := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); c != 0 {
			return c
		}
		return cmp.Or(strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Name, b.Name))
	})
	owner := map[string]string{} // host -> Ingress key
	for _, ing := range ingresses {
		if !handled(ing, classIsDefault) {
			continue
		}
		key, _ := cache.MetaNamespaceKeyFunc(ing)
		if ing.Annotations[PassthroughAnnotation] != "true" {
			p.warnings[key] = warning{reasonPassthroughOnly, fmt.Sprintf(
				"Not routed: IngressClass %s supports only TLS passthrough, which the annotation %s: \"true\" asks for", ClassName, PassthroughAnnotation)}
			continue
		}
		var problems, hosts []string
		for i, rule := range ing.Spec.Rules {
			if rule.Host == "" {
				problems = append(problems, fmt.Sprintf("rule %d has no host, and TLS passthrough routes by server name (SNI) only", i))
				continue
			}
			b, ok := ruleBackend(ing, rule)
			if !ok {
				problems = append(problems, fmt.Sprintf("host %s has no Service backend", rule.Host))
				continue
			}
			if other, taken := owner[rule.Host]; taken && other != key {
				problems = append(problems, fmt.Sprintf("host %s is routed by the older Ingress %s", rule.Host, other))
				continue
			}
			owner[rule.Host] = key
			p.routes[rule.Host] = b
			hosts = append(hosts, rule.Host)
		}
		if len(problems) > 0 {
			p.warnings[key] = warning{reasonRuleNotRouted, "Not routed: " + strings.Join(problems, "; ")}
		}
		if len(hosts) > 0 {
			slices.Sort(hosts)
			p.routed[key] = slices.Compact(hosts)
		}
	}
	return p
}

// ruleBackend is where a rule's connections go: passthrough sees no HTTP path, so the first path's
// Service, or the Ingress's default backend for a rule without paths.
func ruleBackend(ing *networkingv1.Ingress, rule networkingv1.IngressRule) (backend, bool) {
	var svc *networkingv1.IngressServiceBackend
	if rule.HTTP != nil && len(rule.HTTP.Paths) > 0 {
		svc = rule.HTTP.Paths[0].Backend.Service
	} else if ing.Spec.DefaultBackend != nil {
		svc = ing.Spec.DefaultBackend.Service
	}
	if svc == nil {
		return backend{}, false
	}
	return backend{namespace: ing.Namespace, service: svc.Name, port: svc.Port}, true
}

// table is what connections are routed by: the endpoints of each host's backend.
type table map[string]*route

type route struct {
	backend   backend
	endpoints *tcprelay.Endpoints
}

// match finds the route of a server name: the rule host equal to it, else the wildcard host
// "*.<rest>" when the name is one label followed by ".<rest>" (a wildcard covers exactly one
// label, as the Ingress API defines). Names compare case-insensitively, as DNS does.
func (t table) match(serverName string) *route {
	name := strings.ToLower(serverName)
	if name == "" || strings.Contains(name, "*") {
		return nil
	}
	if r, ok := t[name]; ok {
		return r
	}
	if _, rest, ok := strings.Cut(name, "."); ok && rest != "" {
		return t["*."+rest]
	}
	return nil
}
