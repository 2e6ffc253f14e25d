package steps

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	aggregatorclient "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset"
	"sigs.k8s.io/e2e-framework/klient"
	"sigs.k8s.io/e2e-framework/pkg/env"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

	conciergeclientset "sealion.dev/core/generated/concierge/clientset/versioned"
	"sealion.dev/core/groupsuffix"
	"sealion.dev/e2e/installation"
)

// DiscoverInstallation is a setup step for installed mode: it finds the Concierge and Supervisor
// installed in the suite's cluster (Discover), records them on the cluster, and points
// the environment's client at their API group suffix, so that the suites' typed clients, written
// against the default groups, speak the installation's.
func DiscoverInstallation() env.Func {
	return func(ctx context.Context, cfg *envconf.Config) (context.Context, error) {
		c := ClusterFrom(ctx)
		inst, err := Discover(ctx, c.Kubeconfig)
		if err != nil {
			return ctx, err
		}
		c.Installation = inst
		for _, line := range inst.Summary() {
			fmt.Fprintf(os.Stderr, "e2e: installation: %s\n", line)
		}
		config := rest.CopyConfig(cfg.Client().RESTConfig())
		config.Wrap(groupsuffix.Transport(inst.APIGroupSuffix))
		client, err := klient.New(config)
		if err != nil {
			return ctx, err
		}
		cfg.WithClient(client)
		return ctx, nil
	}
}

// Discover finds the Concierge and Supervisor installed in the cluster of kubeconfig (Find).
func Discover(ctx context.Context, kubeconfig string) (installation.Installation, error) {
	config, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return installation.Installation{}, err
	}
	aggregator, err := aggregatorclient.NewForConfig(config)
	if err != nil {
		return installation.Installation{}, err
	}
	kube, err := kubernetes.NewForConfig(config)
	if err != nil {
		return installation.Installation{}, err
	}
	concierge := func(suffix string) (conciergeclientset.Interface, error) {
		config := rest.CopyConfig(config)
		config.Wrap(groupsuffix.Transport(suffix))
		return conciergeclientset.NewForConfig(config)
	}
	return Find(ctx, aggregator, kube, concierge)
}

// Find finds the Concierge and Supervisor of a cluster from what they serve rather than from
// names we chose: the APIService of the Concierge's login API gives the API group suffix and,
// through its Service's selector, the Concierge's Deployment; the Supervisor's clientsecret
// APIService under the same suffix gives the Supervisor's; the one CredentialIssuer, its strategies.
// Exactly one Concierge must be installed; a Supervisor may be absent. concierge is a client of
// the Concierge's API groups under a suffix.
func Find(ctx context.Context, aggregator aggregatorclient.Interface, kube kubernetes.Interface,
	concierge func(suffix string) (conciergeclientset.Interface, error)) (installation.Installation, error) {
	list, err := aggregator.ApiregistrationV1().APIServices().List(ctx, metav1.ListOptions{})
	if err != nil {
		return installation.Installation{}, fmt.Errorf("listing the APIServices: %w", err)
	}
	logins := servedUnder(list.Items, "v1alpha1.login.concierge.")
	if len(logins) != 1 {
		return installation.Installation{}, fmt.Errorf("found %d Concierges (APIServices v1alpha1.login.concierge.<suffix>: %v), want one", len(logins), names(logins))
	}
	inst := installation.Installation{Discovered: true, APIGroupSuffix: strings.TrimPrefix(logins[0].Name, "v1alpha1.login.concierge.")}
	if inst.Concierge, err = serverBehind(ctx, kube, logins[0]); err != nil {
		return installation.Installation{}, fmt.Errorf("the Concierge: %w", err)
	}
	for _, s := range servedUnder(list.Items, "v1alpha1.clientsecret.supervisor.") {
		if s.Name != "v1alpha1.clientsecret.supervisor."+inst.APIGroupSuffix {
			return installation.Installation{}, fmt.Errorf("the Supervisor (APIService %s) uses another API group suffix than the Concierge's %s, which the suites do not support", s.Name, inst.APIGroupSuffix)
		}
		supervisor, err := serverBehind(ctx, kube, s)
		if err != nil {
			return installation.Installation{}, fmt.Errorf("the Supervisor: %w", err)
		}
		inst.Supervisor = &supervisor
	}
	client, err := concierge(inst.APIGroupSuffix)
	if err != nil {
		return installation.Installation{}, err
	}
	issuers, err := client.ConfigV1alpha1().CredentialIssuers().List(ctx, metav1.ListOptions{})
	if err != nil {
		return installation.Installation{}, fmt.Errorf("listing the CredentialIssuers: %w", err)
	}
	if len(issuers.Items) != 1 {
		return installation.Installation{}, fmt.Errorf("found %d CredentialIssuers, want the Concierge's one", len(issuers.Items))
	}
	inst.CredentialIssuer = issuers.Items[0].Name
	for _, s := range issuers.Items[0].Status.Strategies {
		inst.Strategies = append(inst.Strategies, fmt.Sprintf("%s: %s (%s)", s.Type, s.Status, s.Reason))
	}
	return inst, nil
}

// servedUnder are the APIServices whose names begin with prefix and that a Service serves.
func servedUnder(all []apiregistrationv1.APIService, prefix string) []apiregistrationv1.APIService {
	var found []apiregistrationv1.APIService
	for _, s := range all {
		if strings.HasPrefix(s.Name, prefix) && s.Spec.Service != nil {
			found = append(found, s)
		}
	}
	return found
}

func names(services []apiregistrationv1.APIService) []string {
	var n []string
	for _, s := range services {
		n = append(n, s.Name)
	}
	return n
}

// serverBehind is the Deployment whose pods the APIService's Service selects.
func serverBehind(ctx context.Context, kube kubernetes.Interface, api apiregistrationv1.APIService) (installation.Server, error) {
	ns, name := api.Spec.Service.Namespace, api.Spec.Service.Name
	svc, err := kube.CoreV1().Services(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return installation.Server{}, fmt.Errorf("the Service %s/%s of APIService %s: %w", ns, name, api.Name, err)
	}
	deployments, err := kube.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return installation.Server{}, err
	}
	selector := labels.SelectorFromSet(svc.Spec.Selector)
	var found []appsv1.Deployment
	for _, d := range deployments.Items {
		if len(svc.Spec.Selector) > 0 && selector.Matches(labels.Set(d.Spec.Template.Labels)) {
			found = append(found, d)
		}
	}
	if len(found) != 1 {
		return installation.Server{}, fmt.Errorf("%d Deployments in %s run the pods of Service %s (selector %v), want one", len(found), ns, name, svc.Spec.Selector)
	}
	return serverOf(found[0]), nil
}

func serverOf(d appsv1.Deployment) installation.Server {
	s := installation.Server{Namespace: d.Namespace, Deployment: d.Name, Version: d.Labels["app.kubernetes.io/version"]}
	if d.Spec.Selector != nil {
		s.Pods = d.Spec.Selector.MatchLabels
	}
	if containers := d.Spec.Template.Spec.Containers; len(containers) > 0 {
		s.Image = containers[0].Image
		if i := slices.IndexFunc(containers[0].Ports, func(p corev1.ContainerPort) bool { return p.Name == "https" }); i >= 0 {
			s.HTTPSPort = containers[0].Ports[i].ContainerPort
		}
	}
	if s.Version == "" {
		s.Version = imageTag(s.Image)
	}
	return s
}

// imageTag is the tag of an image reference, empty when it has none or names a digest.
func imageTag(image string) string {
	if strings.Contains(image, "@") {
		return ""
	}
	last := image[strings.LastIndex(image, "/")+1:]
	if _, tag, ok := strings.Cut(last, ":"); ok {
		return tag
	}
	return ""
}

// SaveInstallation writes the cluster's installation to dir/<cluster name>/installation.File at the
// end of a suite, next to its CredentialIssuers (SaveCredentialIssuers). Without a cluster or a
// dir it does nothing.
func SaveInstallation(dir string) env.Func {
	return func(ctx context.Context, _ *envconf.Config) (context.Context, error) {
		c := ClusterFrom(ctx)
		if c == nil || dir == "" {
			return ctx, nil
		}
		data, err := json.MarshalIndent(c.Installation, "", "  ")
		if err != nil {
			return ctx, err
		}
		dir := filepath.Join(dir, c.Name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return ctx, err
		}
		return ctx, os.WriteFile(filepath.Join(dir, installation.File), data, 0o644)
	}
}
