package impersonationproxy

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	configv1alpha1 "sealion.dev/core/apis/concierge/config/v1alpha1"
)

// AnnotationKeysAnnotation records which annotations of a Service come from the CredentialIssuer,
// so that one removed from the spec is removed from the Service while others' annotations stay.
const AnnotationKeysAnnotation = "credentialissuer.pinniped.dev/annotation-keys"

// desiredService is the Service that exposes the proxy for spec, with the annotations it managed
// before (recorded on current, which may be nil) replaced by those of spec.
func (c *Controller) desiredService(name string, typ corev1.ServiceType, spec configv1alpha1.ImpersonationProxyServiceSpec, current *corev1.Service) *corev1.Service {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: c.cfg.Namespace, Labels: maps.Clone(c.cfg.Labels)},
		Spec: corev1.ServiceSpec{
			Type:     typ,
			Selector: maps.Clone(c.cfg.Selector),
			Ports: []corev1.ServicePort{{
				Name: "https", Protocol: corev1.ProtocolTCP, Port: 443, TargetPort: intstr.FromInt32(c.cfg.Port),
			}},
		},
	}
	if typ == corev1.ServiceTypeLoadBalancer {
		svc.Spec.LoadBalancerIP = spec.LoadBalancerIP
	}
	annotations := map[string]string{}
	if current != nil {
		maps.Copy(annotations, current.Annotations)
		var previous []string
		_ = json.Unmarshal([]byte(current.Annotations[AnnotationKeysAnnotation]), &previous) // unreadable: nothing to remove
		for _, k := range previous {
			delete(annotations, k)
		}
	}
	maps.Copy(annotations, spec.Annotations)
	delete(annotations, AnnotationKeysAnnotation)
	if keys := slices.Sorted(maps.Keys(spec.Annotations)); len(keys) > 0 {
		b, _ := json.Marshal(keys) // strings always marshal
		annotations[AnnotationKeysAnnotation] = string(b)
	}
	if len(annotations) > 0 {
		svc.Annotations = annotations
	}
	return svc
}

// ensureService creates the Service, or updates the fields the controller owns.
func (c *Controller) ensureService(ctx context.Context, name string, typ corev1.ServiceType, spec configv1alpha1.ImpersonationProxyServiceSpec) (*corev1.Service, error) {
	client := c.kube.CoreV1().Services(c.cfg.Namespace)
	current, err := c.services.Get(name)
	if apierrors.IsNotFound(err) {
		created, err := client.Create(ctx, c.desiredService(name, typ, spec, nil), metav1.CreateOptions{})
		if err != nil {
			return nil, fmt.Errorf("creating Service %s: %w", name, err)
		}
		logger(ctx).Info("created the impersonation proxy's Service", "service", name, "type", typ)
		return created, nil
	}
	if err != nil {
		return nil, err
	}
	want := c.desiredService(name, typ, spec, current)
	updated := current.DeepCopy()
	updated.Labels, updated.Annotations = want.Labels, want.Annotations
	updated.Spec.Type, updated.Spec.Selector, updated.Spec.LoadBalancerIP = want.Spec.Type, want.Spec.Selector, want.Spec.LoadBalancerIP
	updated.Spec.Ports = mergePorts(want.Spec.Ports, current.Spec.Ports)
	if equality.Semantic.DeepEqual(updated, current) {
		return current, nil
	}
	out, err := client.Update(ctx, updated, metav1.UpdateOptions{})
	if err != nil {
		return nil, fmt.Errorf("updating Service %s: %w", name, err)
	}
	return out, nil
}

// mergePorts keeps the node port the cluster allocated to an existing port of the same name.
func mergePorts(want, current []corev1.ServicePort) []corev1.ServicePort {
	out := slices.Clone(want)
	for i := range out {
		for _, p := range current {
			if p.Name == out[i].Name {
				out[i].NodePort = p.NodePort
			}
		}
	}
	return out
}

// deleteService deletes Service name if it exists.
func (c *Controller) deleteService(ctx context.Context, name string) error {
	if _, err := c.services.Get(name); apierrors.IsNotFound(err) {
		return nil
	}
	err := c.kube.CoreV1().Services(c.cfg.Namespace).Delete(ctx, name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting Service %s: %w", name, err)
	}
	logger(ctx).Info("deleted the impersonation proxy's Service", "service", name)
	return nil
}

// serviceAddress is the address clients reach a Service at: the load balancer's IP or hostname,
// or the cluster IP; "" while a load balancer has none.
func serviceAddress(svc *corev1.Service) string {
	if svc.Spec.Type != corev1.ServiceTypeLoadBalancer {
		if svc.Spec.ClusterIP == corev1.ClusterIPNone {
			return ""
		}
		return svc.Spec.ClusterIP
	}
	for _, in := range svc.Status.LoadBalancer.Ingress {
		if in.IP != "" {
			return in.IP
		}
		if in.Hostname != "" {
			return in.Hostname
		}
	}
	return ""
}
