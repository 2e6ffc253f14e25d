package deploycheck

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"helm.sh/helm/v3/pkg/chart/loader"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/validation"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	"sigs.k8s.io/yaml"

	authenticationv1alpha1 "sealion.dev/core/apis/concierge/authentication/v1alpha1"
	configv1alpha1 "sealion.dev/core/apis/concierge/config/v1alpha1"
	supervisorconfigv1alpha1 "sealion.dev/core/apis/supervisor/config/v1alpha1"
	"sealion.dev/core/reservednames"
	"sealion.dev/core/testing/controlplane"
	conciergeconfig "sealion.dev/servers/concierge/config"
	supervisorconfig "sealion.dev/servers/supervisor/config"
)

// Folders, relative to this package.
const (
	repoRoot         = "../.."
	conciergeDeploy  = repoRoot + "/servers/concierge/deploy"
	conciergeCRDs    = conciergeDeploy + "/crds"
	signerComponent  = conciergeDeploy + "/components/signer-secret"
	conciergeChart   = conciergeDeploy + "/chart"
	usersDeploy      = repoRoot + "/servers/local-user-authenticator/deploy"
	usersChart       = usersDeploy + "/chart"
	supervisorDeploy = repoRoot + "/servers/supervisor/deploy"
	supervisorCRDs   = supervisorDeploy + "/crds"
	supervisorChart  = supervisorDeploy + "/chart"

	// signerSecret is the Secret the signer-secret component mounts.
	signerSecret = "pinniped-concierge-signer"

	// caCertificateKey is where the servers keep the CA of their aggregated API's serving
	// certificate in its Secret: servingcert.SecretKeyCACertificate, whose package would bring
	// dependencies into this module that nothing else here needs.
	caCertificateKey = "caCertificate"

	// releaseNamespace is where render installs the charts: Helm's namespace without --namespace,
	// and so the servers' namespace unless the value namespace names another.
	releaseNamespace = "default"
)

func kustomize(t *testing.T, dir string) []*unstructured.Unstructured {
	t.Helper()
	objects, err := Kustomize(dir)
	if err != nil {
		t.Fatal(err)
	}
	return objects
}

// withComponent builds, as a user would, a kustomization of its own with base as its resources
// and component as its component.
func withComponent(t *testing.T, base, component string) []*unstructured.Unstructured {
	t.Helper()
	dir := t.TempDir()
	rel := func(p string) string {
		abs, err := filepath.Abs(p)
		if err != nil {
			t.Fatal(err)
		}
		r, err := filepath.Rel(dir, abs)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	k := "resources: [" + rel(base) + "]\ncomponents: [" + rel(component) + "]\n"
	if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(k), 0o600); err != nil {
		t.Fatal(err)
	}
	return kustomize(t, dir)
}

func render(t *testing.T, chart string, values map[string]any) []*unstructured.Unstructured {
	t.Helper()
	objects, err := RenderChartInNamespace(chart, releaseNamespace, values)
	if err != nil {
		t.Fatal(err)
	}
	return objects
}

// everyOption returns values that make chart render every object it can: those made on request,
// and the Namespace (another than the release's).
func everyOption(chart string) map[string]any {
	values := map[string]any{
		"namespace":     "tuna",
		"networkPolicy": map[string]any{"enabled": true},
	}
	if chart != usersChart { // the local-user-authenticator's metrics need no ServiceMonitor
		values["serviceMonitor"] = map[string]any{"enabled": true}
		values["prometheusRule"] = map[string]any{"enabled": true}
		values["grafanaDashboard"] = map[string]any{"enabled": true}
	}
	return values
}

func byKey(t *testing.T, objects []*unstructured.Unstructured) map[Key]*unstructured.Unstructured {
	t.Helper()
	m, err := ByKey(objects)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// The plain manifests install into a namespace of their own, which they create: the chart does the
// same when its value namespace names one, and that is the only value these set but for the
// signer's (the chart's default namespace is the release's). The comparison ignores what only Helm
// needs (Normalize): its annotations and HelmLabels, which the plain manifests must not have, so
// that ignoring them hides no difference.
func TestChartMatchesPlainManifests(t *testing.T) {
	tests := []struct {
		name   string
		plain  []*unstructured.Unstructured
		chart  string
		values map[string]any
	}{
		{name: "concierge", plain: kustomize(t, conciergeDeploy), chart: conciergeChart, values: map[string]any{"namespace": "pinniped-concierge"}},
		{
			name: "concierge with a signer Secret", plain: withComponent(t, conciergeDeploy, signerComponent), chart: conciergeChart,
			values: map[string]any{"namespace": "pinniped-concierge", "signer": map[string]any{"secretName": signerSecret}},
		},
		{name: "local-user-authenticator", plain: kustomize(t, usersDeploy), chart: usersChart, values: map[string]any{"namespace": "local-user-authenticator"}},
		{name: "supervisor", plain: kustomize(t, supervisorDeploy), chart: supervisorChart, values: map[string]any{"namespace": "pinniped-supervisor"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			plain := byKey(t, tt.plain)
			chart := byKey(t, render(t, tt.chart, tt.values))
			if diff := cmp.Diff(sortedKeys(plain), sortedKeys(chart)); diff != "" {
				t.Fatalf("objects differ (-plain +chart):\n%s", diff)
			}
			for k, p := range plain {
				for _, label := range HelmLabels {
					if _, ok := p.GetLabels()[label]; ok {
						t.Errorf("%s: the plain manifest has Helm's label %s", k, label)
					}
				}
				if diff := cmp.Diff(Normalize(p).Object, Normalize(chart[k]).Object); diff != "" {
					t.Errorf("%s differs (-plain +chart):\n%s", k, diff)
				}
			}
		})
	}
}

func sortedKeys(m map[Key]*unstructured.Unstructured) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k.String())
	}
	sort.Strings(keys)
	return keys
}

// `helm install --namespace` puts the objects into that namespace, which exists before the chart is
// installed; the value namespace, when it names another, puts them there, and the chart creates
// that one (labelled for the server's pods) and keeps it on uninstall.
func TestChartNamespace(t *testing.T) {
	charts := []struct {
		name, dir string
		labels    map[string]string
	}{
		{"concierge", conciergeChart, map[string]string{"app": "pinniped-concierge", "pod-security.kubernetes.io/enforce": "privileged"}},
		{"local-user-authenticator", usersChart, map[string]string{"app": "local-user-authenticator"}},
		{"supervisor", supervisorChart, map[string]string{"app": "pinniped-supervisor", "pod-security.kubernetes.io/enforce": "restricted"}},
	}
	tests := []struct {
		name, release, value, want string
		creates                    bool
	}{
		{name: "release namespace", release: "my-ns", want: "my-ns"},
		{name: "value naming the release namespace", release: "my-ns", value: "my-ns", want: "my-ns"},
		{name: "value naming another", release: "my-ns", value: "tuna", want: "tuna", creates: true},
	}
	for _, c := range charts {
		for _, tt := range tests {
			t.Run(c.name+"/"+tt.name, func(t *testing.T) {
				objects, err := RenderChartInNamespace(c.dir, tt.release, map[string]any{"namespace": tt.value})
				if err != nil {
					t.Fatal(err)
				}
				var created []*unstructured.Unstructured
				for _, obj := range objects {
					if obj.GetKind() == "Namespace" {
						created = append(created, obj)
						continue
					}
					for _, ns := range namespaceRefs(obj) {
						if ns != tt.want {
							t.Errorf("%s is in or names namespace %q, want %q", KeyOf(obj), ns, tt.want)
						}
					}
				}
				if !tt.creates {
					if len(created) != 0 {
						t.Errorf("the chart creates %v, the release's namespace exists already", created)
					}
					return
				}
				if len(created) != 1 || created[0].GetName() != tt.want {
					t.Fatalf("the chart creates %v, want the namespace %s", created, tt.want)
				}
				if diff := cmp.Diff(c.labels, Normalize(created[0]).GetLabels()); diff != "" {
					t.Errorf("labels of the namespace (-want +got):\n%s", diff)
				}
				if policy := created[0].GetAnnotations()["helm.sh/resource-policy"]; policy != "keep" {
					t.Errorf("resource policy %q, want keep: uninstalling would delete what users made in the namespace", policy)
				}
			})
		}
	}
}

// namespaceRefs returns the namespaces obj is in or names: its own, its subjects', its backend
// Service's and its containers' --namespace flags; but kube-system and kube-public, where the
// servers read what the cluster publishes.
func namespaceRefs(obj *unstructured.Unstructured) []string {
	refs := []string{obj.GetNamespace()}
	subjects, _, _ := unstructured.NestedSlice(obj.Object, "subjects")
	for _, s := range subjects {
		if ns, ok := s.(map[string]any)["namespace"].(string); ok {
			refs = append(refs, ns)
		}
	}
	if ns, ok, _ := unstructured.NestedString(obj.Object, "spec", "service", "namespace"); ok {
		refs = append(refs, ns)
	}
	containers, _, _ := unstructured.NestedSlice(obj.Object, "spec", "template", "spec", "containers")
	for _, c := range containers {
		command, _, _ := unstructured.NestedStringSlice(c.(map[string]any), "command")
		for _, arg := range command {
			if ns, ok := strings.CutPrefix(arg, "--namespace="); ok {
				refs = append(refs, ns)
			}
		}
	}
	return slices.DeleteFunc(refs, func(ns string) bool { return ns == "" || ns == "kube-system" || ns == "kube-public" })
}

// Every object the charts render carries the labels Helm and Kubernetes recommend, with the chart's
// and the release's names and versions; pod templates and selectors do not, so that upgrading from
// a chart without them changes no Deployment's immutable selector.
func TestChartLabels(t *testing.T) {
	for name, dir := range map[string]string{"concierge": conciergeChart, "local-user-authenticator": usersChart, "supervisor": supervisorChart} {
		t.Run(name, func(t *testing.T) {
			chrt, err := loader.Load(dir)
			if err != nil {
				t.Fatal(err)
			}
			want := map[string]string{
				"app.kubernetes.io/name":       chrt.Metadata.Name,
				"app.kubernetes.io/instance":   "sealion",
				"app.kubernetes.io/version":    chrt.Metadata.AppVersion,
				"app.kubernetes.io/managed-by": "Helm",
				"helm.sh/chart":                chrt.Metadata.Name + "-" + chrt.Metadata.Version,
			}
			if len(want) != len(HelmLabels) {
				t.Fatalf("want %v, HelmLabels %v", want, HelmLabels)
			}
			for _, obj := range render(t, dir, everyOption(dir)) {
				labels := obj.GetLabels()
				for _, k := range HelmLabels {
					if labels[k] != want[k] {
						t.Errorf("%s: label %s %q, want %q", KeyOf(obj), k, labels[k], want[k])
					}
					if problems := validation.IsValidLabelValue(labels[k]); len(problems) > 0 {
						t.Errorf("%s: label %s: %v", KeyOf(obj), k, problems)
					}
				}
				for _, path := range [][]string{{"spec", "selector", "matchLabels"}, {"spec", "template", "metadata", "labels"}} {
					inner, _, _ := unstructured.NestedStringMap(obj.Object, path...)
					for _, k := range HelmLabels {
						if _, ok := inner[k]; ok {
							t.Errorf("%s: %s has label %s", KeyOf(obj), strings.Join(path, "."), k)
						}
					}
				}
			}
		})
	}
}

// `helm uninstall` deletes every object of its release but those Helm's resource policy keeps: the
// CRDs must be kept, for deleting one deletes every object of its kind, made by users.
func TestChartsKeepCRDsOnUninstall(t *testing.T) {
	for name, chart := range map[string]string{"concierge": conciergeChart, "supervisor": supervisorChart} {
		t.Run(name, func(t *testing.T) {
			crds := 0
			for _, obj := range render(t, chart, nil) {
				if obj.GetKind() != "CustomResourceDefinition" {
					continue
				}
				crds++
				if policy := obj.GetAnnotations()["helm.sh/resource-policy"]; policy != "keep" {
					t.Errorf("%s: resource policy %q, want keep", KeyOf(obj), policy)
				}
			}
			if crds == 0 {
				t.Error("no CRDs")
			}
		})
	}
}

// `kubectl apply -f <folder>` and `kubectl apply -k <folder>` must install the same objects.
func TestKustomizationListsEveryFile(t *testing.T) {
	for dir, subfolders := range map[string][]string{
		conciergeDeploy:  {"crds"},
		conciergeCRDs:    nil,
		usersDeploy:      nil,
		supervisorDeploy: {"crds"},
		supervisorCRDs:   nil,
	} {
		t.Run(strings.TrimPrefix(dir, repoRoot+"/"), func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join(dir, "Kustomization"))
			if err != nil {
				t.Fatal(err)
			}
			var k struct {
				Resources []string `json:"resources"`
			}
			if err := yaml.Unmarshal(data, &k); err != nil {
				t.Fatal(err)
			}
			files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			want := slices.Clone(subfolders)
			for _, f := range files {
				want = append(want, filepath.Base(f))
			}
			sort.Strings(want)
			got := slices.Clone(k.Resources)
			sort.Strings(got)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("Kustomization resources differ from the folder's files (-files +resources):\n%s", diff)
			}
		})
	}
}

// The copies of the CRDs must be those generated from the API types (tools/codegen/verify.sh
// checks the same after regenerating; this catches hand edits cheaply).
func TestCRDCopiesMatchGenerated(t *testing.T) {
	for component, dirs := range map[string][]string{
		"concierge":  {conciergeCRDs, conciergeChart + "/files/crds"},
		"supervisor": {supervisorCRDs, supervisorChart + "/files/crds"},
	} {
		t.Run(component, func(t *testing.T) { checkCRDCopies(t, component, dirs) })
	}
}

func checkCRDCopies(t *testing.T, component string, dirs []string) {
	generated, err := filepath.Glob(filepath.Join(repoRoot, "core/generated/crds/*."+component+".pinniped.dev_*.yaml"))
	if err != nil || len(generated) == 0 {
		t.Fatalf("no generated %s CRDs found (%v)", component, err)
	}
	for _, dir := range dirs {
		copies, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		if len(copies) != len(generated) {
			t.Errorf("%s has %d CRDs, core/generated/crds has %d: run `make generate`", dir, len(copies), len(generated))
		}
		for _, src := range generated {
			want, err := os.ReadFile(src)
			if err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(filepath.Join(dir, filepath.Base(src)))
			if err != nil || !bytes.Equal(got, want) {
				t.Errorf("%s is not a copy of %s (%v): run `make generate`", filepath.Join(dir, filepath.Base(src)), src, err)
			}
		}
	}
}

// strictDecoder decodes every kind the manifests contain and fails on unknown or duplicate fields.
func strictDecoder(t *testing.T) runtime.Decoder {
	t.Helper()
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		clientgoscheme.AddToScheme, apiextensionsv1.AddToScheme, apiregistrationv1.AddToScheme,
		configv1alpha1.AddToScheme, authenticationv1alpha1.AddToScheme, supervisorconfigv1alpha1.AddToScheme,
	} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	return serializer.NewCodecFactory(scheme, serializer.EnableStrict).UniversalDeserializer()
}

func decodeStrict(decoder runtime.Decoder, obj *unstructured.Unstructured) error {
	data, err := json.Marshal(obj.Object)
	if err != nil {
		return err
	}
	_, err = runtime.Decode(decoder, data)
	return err
}

func TestManifestsDecodeStrictly(t *testing.T) {
	decoder := strictDecoder(t)
	sets := map[string][]*unstructured.Unstructured{
		"concierge":                                    kustomize(t, conciergeDeploy),
		"concierge signer component":                   withComponent(t, conciergeDeploy, signerComponent),
		"local-user-authenticator":                     kustomize(t, usersDeploy),
		"supervisor":                                   kustomize(t, supervisorDeploy),
		"concierge chart":                              render(t, conciergeChart, nil),
		"local-user-authenticator chart":               render(t, usersChart, nil),
		"supervisor chart":                             render(t, supervisorChart, nil),
		"concierge chart, every option":                render(t, conciergeChart, everyOption(conciergeChart)),
		"local-user-authenticator chart, every option": render(t, usersChart, everyOption(usersChart)),
		"supervisor chart, every option":               render(t, supervisorChart, everyOption(supervisorChart)),
	}
	for name, objects := range sets {
		t.Run(name, func(t *testing.T) {
			if len(objects) == 0 {
				t.Fatal("no objects")
			}
			for _, obj := range objects {
				switch obj.GetKind() { // not in the scheme: the Prometheus Operator's
				case "ServiceMonitor":
					decodeServiceMonitor(t, obj)
					continue
				case "PrometheusRule":
					decodePrometheusRule(t, obj)
					continue
				}
				if err := decodeStrict(decoder, obj); err != nil {
					t.Errorf("%s: %v", KeyOf(obj), err)
				}
			}
		})
	}
}

// The decoder used above must reject what the API server would drop or refuse.
func TestStrictDecoderRejectsUnknownFields(t *testing.T) {
	decoder := strictDecoder(t)
	tests := []struct {
		name, doc string
	}{
		{name: "Deployment", doc: "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\nspec: {replica: 2}\n"},
		{name: "APIService", doc: "apiVersion: apiregistration.k8s.io/v1\nkind: APIService\nmetadata: {name: x}\nspec: {groupPriority: 1}\n"},
		{name: "CredentialIssuer", doc: "apiVersion: config.concierge.pinniped.dev/v1alpha1\nkind: CredentialIssuer\nmetadata: {name: x}\nspec: {impersonationProxy: {mode: auto, externalEndPoint: x}}\n"},
		{name: "CRD", doc: "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: x}\nspec: {scop: Cluster}\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objects, err := Decode([]byte(tt.doc))
			if err != nil || len(objects) != 1 {
				t.Fatalf("decoding the test document: %v (%d objects)", err, len(objects))
			}
			if err := decodeStrict(decoder, objects[0]); !runtime.IsStrictDecodingError(err) {
				t.Errorf("got %v, want a strict decoding error", err)
			}
		})
	}
}

// conciergeConfig parses the Concierge configuration in the ConfigMap among objects, as the
// server does.
func conciergeConfig(t *testing.T, objects []*unstructured.Unstructured, namespace string) *conciergeconfig.Config {
	t.Helper()
	m := byKey(t, objects)
	cm, ok := m[Key{APIVersion: "v1", Kind: "ConfigMap", Namespace: namespace, Name: "pinniped-concierge-config"}]
	if !ok {
		t.Fatal("no ConfigMap pinniped-concierge-config")
	}
	text, _, _ := unstructured.NestedString(cm.Object, "data", "pinniped.yaml")
	cfg, err := conciergeconfig.Parse([]byte(text))
	if err != nil {
		t.Fatalf("the Concierge would reject its configuration: %v", err)
	}
	return cfg
}

// supervisorConfig parses the Supervisor configuration in the ConfigMap among objects, as the
// server does.
func supervisorConfig(t *testing.T, objects []*unstructured.Unstructured, namespace string) *supervisorconfig.Config {
	t.Helper()
	cm, ok := byKey(t, objects)[Key{APIVersion: "v1", Kind: "ConfigMap", Namespace: namespace, Name: "pinniped-supervisor-static-config"}]
	if !ok {
		t.Fatal("no ConfigMap pinniped-supervisor-static-config")
	}
	text, _, _ := unstructured.NestedString(cm.Object, "data", "pinniped.yaml")
	cfg, err := supervisorconfig.Parse([]byte(text))
	if err != nil {
		t.Fatalf("the Supervisor would reject its configuration: %v", err)
	}
	return cfg
}

func TestConciergeConfiguration(t *testing.T) {
	tests := []struct {
		name       string
		objects    []*unstructured.Unstructured
		namespace  string
		wantSuffix string
		wantLevel  string
		wantSigner *conciergeconfig.Signer
	}{
		{name: "plain", objects: kustomize(t, conciergeDeploy), namespace: "pinniped-concierge", wantSuffix: "pinniped.dev", wantLevel: "info"},
		{
			name: "signer component", objects: withComponent(t, conciergeDeploy, signerComponent), namespace: "pinniped-concierge", wantSuffix: "pinniped.dev", wantLevel: "info",
			wantSigner: &conciergeconfig.Signer{CertificateFile: "/etc/pinniped/signer/tls.crt", PrivateKeyFile: "/etc/pinniped/signer/tls.key"},
		},
		{
			name: "chart with values",
			objects: render(t, conciergeChart, map[string]any{
				"namespace": "tuna", "apiGroupSuffix": "tuna.io", "logLevel": "debug",
			}),
			namespace: "tuna", wantSuffix: "tuna.io", wantLevel: "debug",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := conciergeConfig(t, tt.objects, tt.namespace)
			if *cfg.APIGroupSuffix != tt.wantSuffix || cfg.Log.Level != tt.wantLevel {
				t.Errorf("apiGroupSuffix %q, log level %q; want %q, %q", *cfg.APIGroupSuffix, cfg.Log.Level, tt.wantSuffix, tt.wantLevel)
			}
			if diff := cmp.Diff(tt.wantSigner, cfg.Signer); diff != "" {
				t.Errorf("signer (-want +got):\n%s", diff)
			}
			if got := time.Duration(*cfg.API.ServingCertificate.DurationSeconds) * time.Second; got != 30*24*time.Hour {
				t.Errorf("serving certificate lifetime %v, want 30 days", got)
			}
		})
	}
}

// The Supervisor accepts the configuration it is installed with, runs twice, and its Service
// reaches the HTTPS listener.
func TestSupervisorConfiguration(t *testing.T) {
	objects := kustomize(t, supervisorDeploy)
	m := byKey(t, objects)
	cm, ok := m[Key{APIVersion: "v1", Kind: "ConfigMap", Namespace: "pinniped-supervisor", Name: "pinniped-supervisor-static-config"}]
	if !ok {
		t.Fatal("no ConfigMap pinniped-supervisor-static-config")
	}
	text, _, _ := unstructured.NestedString(cm.Object, "data", "pinniped.yaml")
	cfg, err := supervisorconfig.Parse([]byte(text))
	if err != nil {
		t.Fatalf("the Supervisor would reject its configuration: %v", err)
	}
	if *cfg.APIGroupSuffix != "pinniped.dev" || cfg.Names.DefaultTLSCertificateSecret != "pinniped-supervisor-default-tls-certificate" ||
		cfg.Endpoints.HTTPS.Address != ":8443" || cfg.Endpoints.HTTP.Enabled() {
		t.Errorf("unexpected configuration %+v, endpoints %+v %+v", cfg, cfg.Endpoints.HTTPS, cfg.Endpoints.HTTP)
	}
	deployment := m[Key{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "pinniped-supervisor", Name: "pinniped-supervisor"}]
	if deployment == nil {
		t.Fatal("no Deployment")
	}
	// Numbers decode as float64 or int64 depending on the path; compare them as text.
	if replicas, _, _ := unstructured.NestedFieldNoCopy(deployment.Object, "spec", "replicas"); fmt.Sprint(replicas) != "2" {
		t.Errorf("%v replicas", replicas)
	}
	service := m[Key{APIVersion: "v1", Kind: "Service", Namespace: "pinniped-supervisor", Name: "pinniped-supervisor-clusterip"}]
	ports, _, _ := unstructured.NestedSlice(service.Object, "spec", "ports")
	if len(ports) != 1 || fmt.Sprint(ports[0].(map[string]any)["targetPort"]) != "8443" {
		t.Errorf("Service ports %v", ports)
	}
}

// The chart renames the Supervisor's namespace, API groups and cluster-wide objects together.
func TestSupervisorChartValues(t *testing.T) {
	objects := render(t, supervisorChart, map[string]any{"namespace": "tuna-supervisor", "apiGroupSuffix": "tuna.io", "logLevel": "debug"})
	m := byKey(t, objects)
	cm, ok := m[Key{APIVersion: "v1", Kind: "ConfigMap", Namespace: "tuna-supervisor", Name: "pinniped-supervisor-static-config"}]
	if !ok {
		t.Fatal("no ConfigMap pinniped-supervisor-static-config in tuna-supervisor")
	}
	text, _, _ := unstructured.NestedString(cm.Object, "data", "pinniped.yaml")
	cfg, err := supervisorconfig.Parse([]byte(text))
	if err != nil {
		t.Fatalf("the Supervisor would reject its configuration: %v", err)
	}
	if *cfg.APIGroupSuffix != "tuna.io" || cfg.Log.Level != "debug" || cfg.Names.APIService != "pinniped-supervisor-api" {
		t.Errorf("configuration %+v", cfg)
	}
	apiService := m[Key{APIVersion: "apiregistration.k8s.io/v1", Kind: "APIService", Name: "v1alpha1.clientsecret.supervisor.tuna.io"}]
	if ns, _, _ := unstructured.NestedString(apiService.Object, "spec", "service", "namespace"); apiService == nil || ns != "tuna-supervisor" {
		t.Errorf("APIService %v", apiService)
	}
	for _, k := range []Key{
		{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition", Name: "oidcidentityproviders.idp.supervisor.tuna.io"},
		{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole", Name: "tuna-supervisor"},
		{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRoleBinding", Name: "tuna-supervisor-auth-delegator"},
		{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "RoleBinding", Namespace: "kube-system", Name: "tuna-supervisor-extension-apiserver-authentication-reader"},
	} {
		if m[k] == nil {
			t.Errorf("no %s", k)
		}
	}
}

// The charts' tracing values become the servers' tracing key, which the servers accept; off by
// default, the key is absent.
func TestChartsRenderTracing(t *testing.T) {
	on := map[string]any{"tracing": map[string]any{"enabled": true, "endpoint": "otel-agent.monitoring.svc:4317", "samplingRatePerMillion": 250}}
	// Each server's tracing key, as JSON: null when absent.
	for name, tracing := range map[string]func(values map[string]any) string{
		"concierge": func(values map[string]any) string {
			return toJSON(t, conciergeConfig(t, render(t, conciergeChart, values), releaseNamespace).Tracing)
		},
		"supervisor": func(values map[string]any) string {
			return toJSON(t, supervisorConfig(t, render(t, supervisorChart, values), releaseNamespace).Tracing)
		},
	} {
		if got := tracing(nil); got != "null" {
			t.Errorf("%s: traces by default: %s", name, got)
		}
		if got, want := tracing(on), `{"endpoint":"otel-agent.monitoring.svc:4317","samplingRatePerMillion":250}`; got != want {
			t.Errorf("%s: tracing %s, want %s", name, got, want)
		}
	}
}

func toJSON(t *testing.T, v any) string {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func TestChartRendersKubeCertAgentSettings(t *testing.T) {
	objects := render(t, conciergeChart, map[string]any{"kubeCertAgent": map[string]any{
		"image": "example.com/agent:1", "imagePullSecrets": []any{"pull"}, "priorityClassName": "system-cluster-critical",
	}})
	cfg := conciergeConfig(t, objects, releaseNamespace)
	want := conciergeconfig.KubeCertAgent{
		NamePrefix: cfg.KubeCertAgent.NamePrefix, Image: "example.com/agent:1",
		ImagePullSecrets: []string{"pull"}, PriorityClassName: "system-cluster-critical",
	}
	if diff := cmp.Diff(want, cfg.KubeCertAgent); diff != "" {
		t.Errorf("kubeCertAgent (-want +got):\n%s", diff)
	}
	// The ServiceAccount the Concierge names in the agent Deployment exists.
	if name := cfg.Names.AgentServiceAccount; byKey(t, objects)[Key{APIVersion: "v1", Kind: "ServiceAccount", Namespace: releaseNamespace, Name: name}] == nil {
		t.Errorf("no ServiceAccount %s for the kube cert agent", name)
	}
}

// Reserved names are refused by default; the charts' exceptions reach both servers' configurations.
func TestChartRendersAllowedReservedNames(t *testing.T) {
	cfg := conciergeConfig(t, render(t, conciergeChart, nil), releaseNamespace)
	if got := cfg.AllowedReservedNames.Refused("pinny", []string{"system:masters"}); got == "" {
		t.Error("the default chart lets a credential carry system:masters")
	}
	values := map[string]any{"allowedReservedNames": map[string]any{"usernames": []any{"system:robot"}, "groups": []any{"system:monitoring"}}}
	want := reservednames.Exceptions{Usernames: []string{"system:robot"}, Groups: []string{"system:monitoring"}}
	cfg = conciergeConfig(t, render(t, conciergeChart, values), releaseNamespace)
	if diff := cmp.Diff(want, cfg.AllowedReservedNames); diff != "" {
		t.Errorf("Concierge allowedReservedNames (-want +got):\n%s", diff)
	}

	supervisor := func(values map[string]any) *supervisorconfig.Config {
		cm := byKey(t, render(t, supervisorChart, values))[Key{APIVersion: "v1", Kind: "ConfigMap", Namespace: releaseNamespace, Name: "pinniped-supervisor-static-config"}]
		if cm == nil {
			t.Fatal("no ConfigMap pinniped-supervisor-static-config")
		}
		text, _, _ := unstructured.NestedString(cm.Object, "data", "pinniped.yaml")
		c, err := supervisorconfig.Parse([]byte(text))
		if err != nil {
			t.Fatalf("the Supervisor would reject its configuration: %v", err)
		}
		return c
	}
	if got := supervisor(nil).AllowedReservedNames.Refused("pinny", []string{"system:masters"}); got == "" {
		t.Error("the default Supervisor chart lets an identity carry system:masters")
	}
	if diff := cmp.Diff(want, supervisor(values).AllowedReservedNames); diff != "" {
		t.Errorf("Supervisor allowedReservedNames (-want +got):\n%s", diff)
	}
}

func TestAPIGroupSuffix(t *testing.T) {
	objects := render(t, conciergeChart, map[string]any{"namespace": "tuna-concierge", "apiGroupSuffix": "tuna.io"})
	m := byKey(t, objects)

	for _, want := range []Key{
		{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition", Name: "jwtauthenticators.authentication.concierge.tuna.io"},
		{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition", Name: "webhookauthenticators.authentication.concierge.tuna.io"},
		{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition", Name: "credentialissuers.config.concierge.tuna.io"},
		{APIVersion: "apiregistration.k8s.io/v1", Kind: "APIService", Name: "v1alpha1.login.concierge.tuna.io"},
		{APIVersion: "apiregistration.k8s.io/v1", Kind: "APIService", Name: "v1alpha1.identity.concierge.tuna.io"},
		{APIVersion: "config.concierge.tuna.io/v1alpha1", Kind: "CredentialIssuer", Name: "pinniped-concierge-config"},
	} {
		obj, ok := m[want]
		if !ok {
			t.Errorf("missing %s", want)
			continue
		}
		if group, found, _ := unstructured.NestedString(obj.Object, "spec", "group"); found && !strings.HasSuffix(want.Name, "."+group) {
			t.Errorf("%s: spec.group %q does not match its name", want, group)
		}
	}

	var groups []string
	for _, obj := range objects {
		rules, _, _ := unstructured.NestedSlice(obj.Object, "rules")
		for _, r := range rules {
			apiGroups, _, _ := unstructured.NestedStringSlice(r.(map[string]any), "apiGroups")
			groups = append(groups, apiGroups...)
		}
	}
	for _, g := range []string{"authentication.concierge.tuna.io", "config.concierge.tuna.io", "login.concierge.tuna.io", "identity.concierge.tuna.io"} {
		if !slices.Contains(groups, g) {
			t.Errorf("no RBAC rule for API group %s; rules name %v", g, groups)
		}
	}

	// Nothing may still name a default group; the Pod selector label is a label, not a group.
	out, err := yaml.Marshal(objects)
	if err != nil {
		t.Fatal(err)
	}
	if text := strings.ReplaceAll(string(out), "deployment.pinniped.dev", ""); strings.Contains(text, "pinniped.dev") {
		for _, line := range strings.Split(text, "\n") {
			if strings.Contains(line, "pinniped.dev") {
				t.Errorf("default API group left in the rendered chart: %s", strings.TrimSpace(line))
			}
		}
	}
}

func TestChartRendersImpersonationProxySettings(t *testing.T) {
	objects := render(t, conciergeChart, map[string]any{"impersonationProxy": map[string]any{
		"mode":             "enabled",
		"externalEndpoint": "proxy.example.com:8443",
		"service": map[string]any{
			"type":           "ClusterIP",
			"loadBalancerIP": "10.0.0.9",
			"annotations":    map[string]any{"a": "b"},
		},
	}})
	ci := byKey(t, objects)[Key{APIVersion: "config.concierge.pinniped.dev/v1alpha1", Kind: "CredentialIssuer", Name: "pinniped-concierge-config"}]
	if ci == nil {
		t.Fatal("no CredentialIssuer")
	}
	var got configv1alpha1.CredentialIssuer
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(ci.Object, &got, true); err != nil {
		t.Fatal(err)
	}
	want := configv1alpha1.ImpersonationProxySpec{
		Mode:             configv1alpha1.ImpersonationProxyModeEnabled,
		ExternalEndpoint: "proxy.example.com:8443",
		Service: configv1alpha1.ImpersonationProxyServiceSpec{
			Type:           configv1alpha1.ImpersonationProxyServiceTypeClusterIP,
			LoadBalancerIP: "10.0.0.9",
			// Helm merges maps: the default annotation stays unless set to null.
			Annotations: map[string]string{"a": "b", "service.beta.kubernetes.io/aws-load-balancer-connection-idle-timeout": "4000"},
		},
	}
	if diff := cmp.Diff(&want, got.Spec.ImpersonationProxy); diff != "" {
		t.Errorf("impersonation proxy spec (-want +got):\n%s", diff)
	}
}

// impersonationProxy.tls reaches the CredentialIssuer's spec.impersonationProxy.tls, field by field,
// from our values, from the community chart's, or from both, the latter over the former.
func TestChartRendersImpersonationProxyTLS(t *testing.T) {
	ours := func(tls map[string]any) map[string]any {
		return map[string]any{"impersonationProxy": map[string]any{"tls": tls}}
	}
	tests := []struct {
		name   string
		values map[string]any
		want   *configv1alpha1.ImpersonationProxyTLSSpec
	}{
		{name: "defaults", values: nil, want: nil},
		{name: "empty", values: ours(map[string]any{"secretName": "", "certificateAuthorityData": ""}), want: nil},
		{name: "a Secret", values: ours(map[string]any{"secretName": "proxy-cert"}), want: &configv1alpha1.ImpersonationProxyTLSSpec{SecretName: "proxy-cert"}},
		{
			name:   "a Secret and a CA bundle",
			values: ours(map[string]any{"secretName": "proxy-cert", "certificateAuthorityData": "Q0E="}),
			want:   &configv1alpha1.ImpersonationProxyTLSSpec{SecretName: "proxy-cert", CertificateAuthorityData: "Q0E="},
		},
		{
			name: "community Secret over our CA bundle",
			values: map[string]any{
				"impersonationProxy": map[string]any{"tls": map[string]any{"secretName": "ours", "certificateAuthorityData": "Q0E="}},
				"concierge":          map[string]any{"credentialIssuerConfig": "impersonationProxy:\n  tls:\n    secretName: theirs\n"},
			},
			want: &configv1alpha1.ImpersonationProxyTLSSpec{SecretName: "theirs", CertificateAuthorityData: "Q0E="},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, credentialIssuerSpec(t, tt.values).ImpersonationProxy.TLS); diff != "" {
				t.Errorf("spec.impersonationProxy.tls (-want +got):\n%s", diff)
			}
		})
	}
}

// credentialIssuerSpec renders the Concierge chart with values and returns its CredentialIssuer's spec.
func credentialIssuerSpec(t *testing.T, values map[string]any) configv1alpha1.CredentialIssuerSpec {
	t.Helper()
	ci := byKey(t, render(t, conciergeChart, values))[Key{APIVersion: "config.concierge.pinniped.dev/v1alpha1", Kind: "CredentialIssuer", Name: "pinniped-concierge-config"}]
	if ci == nil {
		t.Fatal("no CredentialIssuer")
	}
	var got configv1alpha1.CredentialIssuer
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(ci.Object, &got, true); err != nil {
		t.Fatal(err)
	}
	return got.Spec
}

// TestChartAcceptsCommunityChartValues installs values written for the community (Bitnami)
// Pinniped chart, as the Talos write-up does (the CredentialIssuer spec under
// concierge.credentialIssuerConfig, as YAML text or as a map): they give the spec that the same
// settings in our own values give.
func TestChartAcceptsCommunityChartValues(t *testing.T) {
	const talos = `impersonationProxy:
  mode: enabled
  externalEndpoint: pinniped-proxy.example.com
  service:
    type: ClusterIP
`
	ours := map[string]any{"impersonationProxy": map[string]any{
		"mode": "enabled", "externalEndpoint": "pinniped-proxy.example.com", "service": map[string]any{"type": "ClusterIP"},
	}}
	want := credentialIssuerSpec(t, ours)
	if diff := cmp.Diff(&configv1alpha1.ImpersonationProxySpec{
		Mode:             configv1alpha1.ImpersonationProxyModeEnabled,
		ExternalEndpoint: "pinniped-proxy.example.com",
		Service: configv1alpha1.ImpersonationProxyServiceSpec{
			Type:        configv1alpha1.ImpersonationProxyServiceTypeClusterIP,
			Annotations: map[string]string{"service.beta.kubernetes.io/aws-load-balancer-connection-idle-timeout": "4000"},
		},
	}, want.ImpersonationProxy); diff != "" {
		t.Fatalf("our own values give (-want +got):\n%s", diff)
	}
	var asMap map[string]any
	if err := yaml.Unmarshal([]byte(talos), &asMap); err != nil {
		t.Fatal(err)
	}
	for name, config := range map[string]any{
		"text":              talos,
		"map":               asMap,
		"text with a value": "impersonationProxy:\n  mode: enabled\n  externalEndpoint: {{ printf \"pinniped-proxy.%s\" \"example.com\" }}\n  service: {type: ClusterIP}\n",
	} {
		t.Run(name, func(t *testing.T) {
			got := credentialIssuerSpec(t, map[string]any{"concierge": map[string]any{"credentialIssuerConfig": config}})
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("spec from concierge.credentialIssuerConfig (-ours +got):\n%s", diff)
			}
		})
	}

	t.Run("tls", func(t *testing.T) {
		tls := map[string]any{"secretName": "proxy-cert", "certificateAuthorityData": "Q0E="}
		want := &configv1alpha1.ImpersonationProxyTLSSpec{SecretName: "proxy-cert", CertificateAuthorityData: "Q0E="}
		for name, values := range map[string]map[string]any{
			"ours":      {"impersonationProxy": map[string]any{"tls": tls}},
			"community": {"concierge": map[string]any{"credentialIssuerConfig": map[string]any{"impersonationProxy": map[string]any{"tls": tls}}}},
		} {
			if diff := cmp.Diff(want, credentialIssuerSpec(t, values).ImpersonationProxy.TLS); diff != "" {
				t.Errorf("%s values: tls (-want +got):\n%s", name, diff)
			}
		}
	})
}

func TestChartRejectsInvalidValues(t *testing.T) {
	tests := []struct {
		name   string
		values map[string]any
		want   string
	}{
		{name: "suffix without a dot", values: map[string]any{"apiGroupSuffix": "tuna"}, want: "apiGroupSuffix"},
		{name: "unknown log level", values: map[string]any{"logLevel": "verbose"}, want: "logLevel"},
		{
			name:   "a reserved-name exception that is a pattern",
			values: map[string]any{"allowedReservedNames": map[string]any{"groups": []any{"system:*"}}},
			want:   "allowedReservedNames",
		},
		{name: "unknown proxy mode", values: map[string]any{"impersonationProxy": map[string]any{"mode": "on"}}, want: "mode"},
		{
			name:   "service None without an external endpoint",
			values: map[string]any{"impersonationProxy": map[string]any{"service": map[string]any{"type": "None"}}},
			want:   "externalEndpoint is required",
		},
		{
			name:   "community values that are not YAML",
			values: map[string]any{"concierge": map[string]any{"credentialIssuerConfig": "impersonationProxy: [mode"}},
			want:   "concierge.credentialIssuerConfig is not a YAML map",
		},
		{
			name:   "community values with a field a CredentialIssuer spec lacks",
			values: map[string]any{"concierge": map[string]any{"credentialIssuerConfig": "impersonationProxy: {mode: auto}\nkubeCertAgent: {}\n"}},
			want:   `concierge.credentialIssuerConfig: "kubeCertAgent" is not a field of a CredentialIssuer spec`,
		},
		{
			name:   "community values with an unknown proxy mode",
			values: map[string]any{"concierge": map[string]any{"credentialIssuerConfig": "impersonationProxy: {mode: sometimes}\n"}},
			want:   `impersonationProxy.mode "sometimes": must be auto, enabled or disabled`,
		},
		{
			name:   "community values with service None and no external endpoint",
			values: map[string]any{"concierge": map[string]any{"credentialIssuerConfig": "impersonationProxy: {service: {type: None}}\n"}},
			want:   "externalEndpoint is required",
		},
		{
			name:   "community values of the wrong type",
			values: map[string]any{"concierge": map[string]any{"credentialIssuerConfig": 3}},
			want:   "credentialIssuerConfig",
		},
		{
			name:   "renewal after expiry",
			values: map[string]any{"servingCertificate": map[string]any{"durationSeconds": 100, "renewBeforeSeconds": 100}},
			want:   "renewBeforeSeconds must be smaller",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := RenderChart(conciergeChart, tt.values)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got error %v, want one mentioning %q", err, tt.want)
			}
		})
	}
}

// A misspelt value is refused, at any depth, with the key and where it is: ignored, it would
// install something else than its author meant.
func TestChartsRefuseUnknownValues(t *testing.T) {
	tests := []struct {
		name   string
		chart  string
		values map[string]any
		want   []string
	}{
		{name: "concierge top level", chart: conciergeChart, values: map[string]any{"replica": 3}, want: []string{"at ''", "'replica'"}},
		{name: "concierge nested", chart: conciergeChart, values: map[string]any{"image": map[string]any{"tagg": "v1"}}, want: []string{"'/image'", "'tagg'"}},
		{
			name: "concierge deeper", chart: conciergeChart,
			values: map[string]any{"impersonationProxy": map[string]any{"service": map[string]any{"typ": "None"}}},
			want:   []string{"'/impersonationProxy/service'", "'typ'"},
		},
		{
			name: "concierge resources", chart: conciergeChart,
			values: map[string]any{"resources": map[string]any{"limit": map[string]any{"cpu": "1"}}},
			want:   []string{"'/resources'", "'limit'"},
		},
		{
			name: "community values as a map", chart: conciergeChart,
			values: map[string]any{"concierge": map[string]any{"credentialIssuerConfig": map[string]any{"impersonationProxy": map[string]any{"mod": "enabled"}}}},
			want:   []string{"'/concierge/credentialIssuerConfig/impersonationProxy'", "'mod'"},
		},
		{
			name: "community values as text", chart: conciergeChart,
			values: map[string]any{"concierge": map[string]any{"credentialIssuerConfig": "impersonationProxy: {mod: enabled}\n"}},
			want:   []string{`concierge.credentialIssuerConfig: "mod" is not a field of impersonationProxy`},
		},
		{
			name: "community values as text, nested", chart: conciergeChart,
			values: map[string]any{"concierge": map[string]any{"credentialIssuerConfig": "impersonationProxy: {tls: {secret: proxy-tls}}\n"}},
			want:   []string{`concierge.credentialIssuerConfig: "secret" is not a field of impersonationProxy.tls`},
		},
		{name: "local-user-authenticator top level", chart: usersChart, values: map[string]any{"replica": 1}, want: []string{"at ''", "'replica'"}},
		{name: "local-user-authenticator nested", chart: usersChart, values: map[string]any{"image": map[string]any{"pullpolicy": "Always"}}, want: []string{"'/image'", "'pullpolicy'"}},
		{name: "supervisor top level", chart: supervisorChart, values: map[string]any{"loglevel": "debug"}, want: []string{"at ''", "'loglevel'"}},
		{
			name: "supervisor nested", chart: supervisorChart,
			values: map[string]any{"allowedReservedNames": map[string]any{"users": []any{"system:robot"}}},
			want:   []string{"'/allowedReservedNames'", "'users'"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := RenderChart(tt.chart, tt.values)
			for _, want := range tt.want {
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Errorf("got error %v, want one mentioning %s", err, want)
				}
			}
		})
	}
}

// The values schemas refuse every key they do not declare, at every level: each object schema
// either declares its properties and refuses others, or is a map whose values it types. Only
// global, Helm's values shared with parent charts, is left open.
func TestChartSchemasAreStrict(t *testing.T) {
	for name, chart := range map[string]string{"concierge": conciergeChart, "local-user-authenticator": usersChart, "supervisor": supervisorChart} {
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join(chart, "values.schema.json"))
			if err != nil {
				t.Fatal(err)
			}
			var schema map[string]any
			if err := json.Unmarshal(data, &schema); err != nil {
				t.Fatal(err)
			}
			checkStrict(t, "", schema)
		})
	}
}

func checkStrict(t *testing.T, path string, schema map[string]any) {
	t.Helper()
	if path == "/properties/global" {
		return
	}
	if admitsObject(schema["type"]) {
		switch additional := schema["additionalProperties"].(type) {
		case bool:
			if additional || schema["properties"] == nil {
				t.Errorf("%s: additionalProperties %v with properties %v", path, additional, schema["properties"])
			}
		case map[string]any:
			if schema["properties"] != nil {
				t.Errorf("%s: a map with fixed properties too", path)
			}
		default:
			t.Errorf("%s: an object schema that accepts any key", path)
		}
	}
	for _, key := range []string{"properties", "definitions"} {
		children, _ := schema[key].(map[string]any)
		for name, child := range children {
			checkStrict(t, path+"/"+key+"/"+name, child.(map[string]any))
		}
	}
	for _, key := range []string{"items", "additionalProperties"} {
		if child, ok := schema[key].(map[string]any); ok {
			checkStrict(t, path+"/"+key, child)
		}
	}
	branches, _ := schema["allOf"].([]any)
	for i, branch := range branches {
		checkStrict(t, fmt.Sprintf("%s/allOf/%d", path, i), branch.(map[string]any))
	}
}

// admitsObject tells whether a schema's type admits an object.
func admitsObject(typ any) bool {
	switch typ := typ.(type) {
	case string:
		return typ == "object"
	case []any:
		return slices.Contains(typ, any("object"))
	}
	return false
}

// Once installed, each chart tells what it installed and where, and what to do next; the object
// its notes have the user create is one the API accepts, named as the chart's own objects are.
func TestChartNotes(t *testing.T) {
	decoder := strictDecoder(t)
	// example returns the object that the notes have the user apply with `kubectl apply -f - <<EOF`.
	example := func(t *testing.T, notes string, into runtime.Object) {
		t.Helper()
		_, rest, ok := strings.Cut(notes, "<<EOF\n")
		body, _, closed := strings.Cut(rest, "\nEOF\n")
		if !ok || !closed {
			t.Fatalf("no object to apply in the notes:\n%s", notes)
		}
		objects, err := Decode([]byte(body))
		if err != nil || len(objects) != 1 {
			t.Fatalf("the notes' object: %v (%d objects)\n%s", err, len(objects), body)
		}
		if err := decodeStrict(decoder, objects[0]); err != nil {
			t.Fatalf("the notes' object: %v", err)
		}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(objects[0].Object, into); err != nil {
			t.Fatal(err)
		}
	}
	notes := func(t *testing.T, chart, release string, values map[string]any) string {
		t.Helper()
		text, err := RenderNotes(chart, release, values)
		if err != nil {
			t.Fatal(err)
		}
		namespace := release
		if ns, ok := values["namespace"].(string); ok {
			namespace = ns
		}
		if !strings.Contains(text, "installed in the namespace "+namespace) {
			t.Errorf("the notes do not say where the server is installed:\n%s", text)
		}
		return text
	}
	const label = "kubectl label namespace my-ns pod-security.kubernetes.io/enforce=privileged"

	t.Run("concierge", func(t *testing.T) {
		text := notes(t, conciergeChart, "my-ns", nil)
		var authenticator authenticationv1alpha1.JWTAuthenticator
		example(t, text, &authenticator)
		for _, want := range []string{"pinniped get kubeconfig >", label} {
			if !strings.Contains(text, want) {
				t.Errorf("the notes lack %q:\n%s", want, text)
			}
		}
	})
	t.Run("concierge with a signer or a namespace of its own", func(t *testing.T) {
		// The kube cert agent does not run, or runs in a namespace the chart labelled.
		for _, values := range []map[string]any{{"signer": map[string]any{"secretName": "signer"}}, {"namespace": "tuna"}} {
			if text := notes(t, conciergeChart, "my-ns", values); strings.Contains(text, "pod-security") {
				t.Errorf("%v: the notes have the user label the namespace:\n%s", values, text)
			}
		}
	})
	t.Run("concierge with another API group suffix", func(t *testing.T) {
		text := notes(t, conciergeChart, "my-ns", map[string]any{"apiGroupSuffix": "tuna.io"})
		for _, want := range []string{"pinniped get kubeconfig --concierge-api-group-suffix tuna.io >", "apiVersion: authentication.concierge.tuna.io/v1alpha1"} {
			if !strings.Contains(text, want) {
				t.Errorf("the notes lack %q:\n%s", want, text)
			}
		}
	})
	t.Run("supervisor", func(t *testing.T) {
		text := notes(t, supervisorChart, "my-ns", nil)
		var federationDomain supervisorconfigv1alpha1.FederationDomain
		example(t, text, &federationDomain)
		if federationDomain.Namespace != "my-ns" {
			t.Errorf("the notes' FederationDomain is in namespace %q", federationDomain.Namespace)
		}
		objects, err := RenderChartInNamespace(supervisorChart, "my-ns", nil)
		if err != nil {
			t.Fatal(err)
		}
		secret := supervisorConfig(t, objects, "my-ns").Names.DefaultTLSCertificateSecret
		if !strings.Contains(text, "kubectl create secret tls "+secret+" -n my-ns") {
			t.Errorf("the notes do not have the user create the Secret %s:\n%s", secret, text)
		}
		if _, ok := byKey(t, objects)[Key{APIVersion: "v1", Kind: "Service", Namespace: "my-ns", Name: "pinniped-supervisor-clusterip"}]; !ok || !strings.Contains(text, "Service pinniped-supervisor-clusterip") {
			t.Errorf("the notes name no Service of the chart to expose:\n%s", text)
		}
	})
	t.Run("local-user-authenticator", func(t *testing.T) {
		text := notes(t, usersChart, "my-ns", nil)
		var authenticator authenticationv1alpha1.WebhookAuthenticator
		example(t, text, &authenticator)
		objects, err := RenderChartInNamespace(usersChart, "my-ns", nil)
		if err != nil {
			t.Fatal(err)
		}
		var service corev1.Service
		fromObject(t, byKey(t, objects), Key{APIVersion: "v1", Kind: "Service", Namespace: "my-ns", Name: "local-user-authenticator"}, &service)
		want := "https://" + service.Name + "." + service.Namespace + ".svc/authenticate"
		if authenticator.Spec.Endpoint != want || len(service.Spec.Ports) != 1 || service.Spec.Ports[0].Port != 443 {
			t.Errorf("the notes' endpoint %s, the Service %s:%v; want %s on port 443", authenticator.Spec.Endpoint, service.Name, service.Spec.Ports, want)
		}
	})
}

// TestManifestsApplyToAPIServer installs everything into a real kube-apiserver (no nodes, so no
// Pod runs): the plain manifests with kubectl apply -f and -k, the overlay, and a second
// Concierge from the chart with another namespace and API group suffix next to the first.
func TestManifestsApplyToAPIServer(t *testing.T) {
	cp := controlplane.StartForTest(t, controlplane.Options{})
	kubectl := func(t *testing.T, stdin []byte, args ...string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, cp.KubectlPath, append([]string{"--kubeconfig", cp.KubeconfigPath}, args...)...)
		cmd.Stdin = bytes.NewReader(stdin)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		t.Logf("kubectl %s:\n%s", strings.Join(args, " "), out)
	}
	waitForCRDs := []string{"wait", "--for=condition=Established", "--timeout=30s", "crd", "--all"}

	t.Run("plain manifests", func(t *testing.T) {
		kubectl(t, nil, "apply", "-f", conciergeCRDs)
		kubectl(t, nil, waitForCRDs...)
		kubectl(t, nil, "apply", "-f", conciergeDeploy)
		kubectl(t, nil, "apply", "-f", usersDeploy)
		// Applying the same objects as a kustomization changes nothing and does not fail.
		kubectl(t, nil, "apply", "-k", conciergeDeploy)
		kubectl(t, nil, "apply", "-k", usersDeploy)
		kubectl(t, yamlStream(t, withComponent(t, conciergeDeploy, signerComponent)), "apply", "--dry-run=server", "-f", "-")
		// The CertificateSigningRequest strategy may approve requests for the one signer whose
		// certificates the API server accepts from clients, and for no other.
		const concierge = "system:serviceaccount:pinniped-concierge:pinniped-concierge"
		for _, access := range []string{
			"create certificatesigningrequests.certificates.k8s.io", "update certificatesigningrequests.certificates.k8s.io --subresource=approval",
		} {
			kubectl(t, nil, append([]string{"auth", "can-i", "--as=" + concierge}, strings.Fields(access)...)...)
		}
		// Signers are no resource kubectl auth can-i can name: ask the authorizer directly.
		mayApprove := func(signer string) string {
			review := fmt.Sprintf(`{"apiVersion":"authorization.k8s.io/v1","kind":"SubjectAccessReview","spec":{"user":%q,`+
				`"groups":["system:serviceaccounts","system:serviceaccounts:pinniped-concierge","system:authenticated"],`+
				`"resourceAttributes":{"group":"certificates.k8s.io","resource":"signers","name":%q,"verb":"approve"}}}`, concierge, signer)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, cp.KubectlPath, "--kubeconfig", cp.KubeconfigPath, "create", "-f", "-", "-o", "jsonpath={.status.allowed}")
			cmd.Stdin = strings.NewReader(review)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("asking whether the Concierge may approve for %s: %v\n%s", signer, err, out)
			}
			return strings.TrimSpace(string(out))
		}
		if got := mayApprove("kubernetes.io/kube-apiserver-client"); got != "true" {
			t.Errorf("the Concierge may approve for kubernetes.io/kube-apiserver-client: %q, want true", got)
		}
		for _, signer := range []string{"kubernetes.io/kube-apiserver-client-kubelet", "kubernetes.io/kubelet-serving", "example.com/any"} {
			if got := mayApprove(signer); got != "false" {
				t.Errorf("the Concierge may approve for %s: %q, want false", signer, got)
			}
		}
	})

	t.Run("Supervisor", func(t *testing.T) {
		kubectl(t, nil, "apply", "-f", supervisorCRDs)
		kubectl(t, nil, waitForCRDs...)
		kubectl(t, nil, "apply", "-f", supervisorDeploy)
		kubectl(t, nil, "apply", "-k", supervisorDeploy)
		// The Role lets the Supervisor do what it does.
		for _, access := range []string{
			"list federationdomains.config.supervisor.pinniped.dev", "update federationdomains.config.supervisor.pinniped.dev --subresource=status",
			"watch ldapidentityproviders.idp.supervisor.pinniped.dev", "create secrets", "update secrets",
			"update oidcidentityproviders.idp.supervisor.pinniped.dev --subresource=status", "watch configmaps",
			"get oidcclients.config.supervisor.pinniped.dev", "watch sessionrevocations.config.supervisor.pinniped.dev",
			"update sessionrevocations.config.supervisor.pinniped.dev --subresource=status", "update apiservices.apiregistration.k8s.io/v1alpha1.clientsecret.supervisor.pinniped.dev",
			"create subjectaccessreviews.authorization.k8s.io", "get configmaps/extension-apiserver-authentication -n kube-system",
		} {
			kubectl(t, nil, append([]string{"auth", "can-i", "-n", "pinniped-supervisor", "--as=system:serviceaccount:pinniped-supervisor:pinniped-supervisor"}, strings.Fields(access)...)...)
		}
	})

	t.Run("second installation from the chart", func(t *testing.T) {
		objects := render(t, conciergeChart, map[string]any{"namespace": "tuna-concierge", "apiGroupSuffix": "tuna.io"})
		var crds, rest []*unstructured.Unstructured
		for _, obj := range objects {
			if obj.GetKind() == "CustomResourceDefinition" {
				crds = append(crds, obj)
			} else {
				rest = append(rest, obj)
			}
		}
		kubectl(t, yamlStream(t, crds), "apply", "-f", "-")
		kubectl(t, nil, waitForCRDs...)
		kubectl(t, yamlStream(t, rest), "apply", "-f", "-")
		kubectl(t, nil, "get", "credentialissuers.config.concierge.tuna.io", "pinniped-concierge-config")
	})

	// Every chart with its optional objects on, in namespaces of their own, is validated by the
	// API server against its OpenAPI, strictly: an unknown or misplaced field fails. The
	// ServiceMonitor is left off, since this API server has no Prometheus Operator CRDs.
	t.Run("charts with every option, strict server-side validation", func(t *testing.T) {
		for _, c := range []struct {
			chart  string
			values map[string]any
		}{
			{conciergeChart, map[string]any{
				"namespace":          "strict-concierge",
				"networkPolicy":      map[string]any{"enabled": true},
				"signer":             map[string]any{"secretName": "signer"},
				"impersonationProxy": map[string]any{"mode": "enabled", "externalEndpoint": "proxy.example.com", "tls": map[string]any{"secretName": "proxy-tls", "certificateAuthorityData": "Y2E="}},
			}},
			{supervisorChart, map[string]any{"namespace": "strict-supervisor", "networkPolicy": map[string]any{"enabled": true}}},
			{usersChart, map[string]any{"namespace": "strict-users", "networkPolicy": map[string]any{"enabled": true}}},
		} {
			var first, rest []*unstructured.Unstructured
			namespaces := 0
			for _, obj := range render(t, c.chart, c.values) {
				switch obj.GetKind() {
				case "Namespace":
					namespaces++
					first = append(first, obj)
				case "CustomResourceDefinition":
					first = append(first, obj)
				default:
					rest = append(rest, obj)
				}
			}
			if namespaces != 1 {
				t.Fatalf("%s: %d Namespaces rendered, want the one of the namespace value", c.chart, namespaces)
			}
			// A dry run cannot create objects in a namespace, or of a kind, that does not exist yet.
			kubectl(t, yamlStream(t, first), "apply", "--validate=strict", "-f", "-")
			kubectl(t, nil, waitForCRDs...)
			kubectl(t, yamlStream(t, rest), "apply", "--dry-run=server", "--validate=strict", "-f", "-")
		}
	})
}

// yamlStream encodes objects as one YAML document each, Namespaces first as kubectl applies a
// stream in order (Helm sorts by kind itself).
func yamlStream(t *testing.T, objects []*unstructured.Unstructured) []byte {
	t.Helper()
	objects = slices.Clone(objects)
	slices.SortStableFunc(objects, func(a, b *unstructured.Unstructured) int {
		return compareBool(b.GetKind() == "Namespace", a.GetKind() == "Namespace")
	})
	var out bytes.Buffer
	for _, obj := range objects {
		data, err := yaml.Marshal(obj.Object)
		if err != nil {
			t.Fatal(err)
		}
		out.WriteString("---\n")
		out.Write(data)
	}
	return out.Bytes()
}

func compareBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

// Both servers run two replicas that elect, through a Lease named after their Deployment, the
// one whose controllers write: each knows its pod's name, may write that Lease, and a
// PodDisruptionBudget keeps a voluntary disruption from taking both at once.
func TestHighAvailability(t *testing.T) {
	sets := []struct {
		name, server, namespace string
		objects                 []*unstructured.Unstructured
	}{
		{"concierge", "concierge", "pinniped-concierge", kustomize(t, conciergeDeploy)},
		{"concierge chart", "concierge", "tuna", render(t, conciergeChart, map[string]any{"namespace": "tuna"})},
		{"supervisor", "supervisor", "pinniped-supervisor", kustomize(t, supervisorDeploy)},
		{"supervisor chart", "supervisor", "tuna", render(t, supervisorChart, map[string]any{"namespace": "tuna"})},
	}
	for _, set := range sets {
		t.Run(set.name, func(t *testing.T) {
			m := byKey(t, set.objects)
			name := "pinniped-" + set.server
			deployment := m[Key{APIVersion: "apps/v1", Kind: "Deployment", Namespace: set.namespace, Name: name}]
			if deployment == nil {
				t.Fatal("no Deployment")
			}
			if replicas, _, _ := unstructured.NestedFieldNoCopy(deployment.Object, "spec", "replicas"); fmt.Sprint(replicas) != "2" {
				t.Errorf("%v replicas, want 2", replicas)
			}
			containers, _, _ := unstructured.NestedSlice(deployment.Object, "spec", "template", "spec", "containers")
			env, _, _ := unstructured.NestedSlice(containers[0].(map[string]any), "env")
			var podName string
			for _, e := range env {
				if e := e.(map[string]any); e["name"] == "POD_NAME" {
					podName, _, _ = unstructured.NestedString(e, "valueFrom", "fieldRef", "fieldPath")
				}
			}
			if podName != "metadata.name" {
				t.Errorf("POD_NAME comes from %q, want the downward API's metadata.name", podName)
			}

			pdb := m[Key{APIVersion: "policy/v1", Kind: "PodDisruptionBudget", Namespace: set.namespace, Name: name}]
			if pdb == nil {
				t.Fatal("no PodDisruptionBudget named after the Deployment")
			}
			want, _, _ := unstructured.NestedMap(deployment.Object, "spec", "selector")
			got, _, _ := unstructured.NestedMap(pdb.Object, "spec", "selector")
			if !reflect.DeepEqual(got, want) {
				t.Errorf("the PodDisruptionBudget selects %v, the Deployment %v", got, want)
			}
			if maxUnavailable, _, _ := unstructured.NestedFieldNoCopy(pdb.Object, "spec", "maxUnavailable"); fmt.Sprint(maxUnavailable) != "1" {
				t.Errorf("maxUnavailable %v, want 1", maxUnavailable)
			}

			role := m[Key{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "Role", Namespace: set.namespace, Name: name}]
			if role == nil {
				t.Fatal("no Role in the server's namespace")
			}
			rules, _, _ := unstructured.NestedSlice(role.Object, "rules")
			verbs := map[string]bool{}
			for _, r := range rules {
				r := r.(map[string]any)
				if fmt.Sprint(r["apiGroups"]) == "[coordination.k8s.io]" && fmt.Sprint(r["resources"]) == "[leases]" {
					for _, v := range r["verbs"].([]any) {
						verbs[v.(string)] = true
					}
				}
			}
			if !verbs["get"] || !verbs["create"] || !verbs["update"] {
				t.Errorf("the Role grants %v on leases, want get, create and update", verbs)
			}
		})
	}
}

// The local-user-authenticator runs one replica by default, with no PodDisruptionBudget, which
// for one replica would either protect nothing or block every node drain. More replicas may run:
// they all sign with the one CA kept in api-serving-cert.
func TestLocalUserAuthenticatorReplicas(t *testing.T) {
	for _, objects := range [][]*unstructured.Unstructured{kustomize(t, usersDeploy), render(t, usersChart, nil)} {
		for _, obj := range objects {
			if obj.GetKind() == "PodDisruptionBudget" {
				t.Errorf("%s: a budget for one replica", KeyOf(obj))
			}
			if obj.GetKind() == "Deployment" {
				if replicas, _, _ := unstructured.NestedFieldNoCopy(obj.Object, "spec", "replicas"); fmt.Sprint(replicas) != "1" {
					t.Errorf("%s: %v replicas, want 1", KeyOf(obj), replicas)
				}
			}
		}
	}
	for _, obj := range render(t, usersChart, map[string]any{"replicas": 2}) {
		if obj.GetKind() == "Deployment" {
			if replicas, _, _ := unstructured.NestedFieldNoCopy(obj.Object, "spec", "replicas"); fmt.Sprint(replicas) != "2" {
				t.Errorf("%s with replicas 2: %v replicas", KeyOf(obj), replicas)
			}
		}
	}
}

// The opt-in NetworkPolicy, named after the Deployment, selects its pods and allows ingress to every
// port they serve, from anywhere, and to no other; it restricts no egress.
func TestChartNetworkPolicy(t *testing.T) {
	decoder := strictDecoder(t)
	for name, dir := range map[string]string{"pinniped-concierge": conciergeChart, "local-user-authenticator": usersChart, "pinniped-supervisor": supervisorChart} {
		t.Run(name, func(t *testing.T) {
			for _, obj := range render(t, dir, nil) {
				if obj.GetKind() == "NetworkPolicy" {
					t.Errorf("%s by default", KeyOf(obj))
				}
			}
			m := byKey(t, render(t, dir, map[string]any{"networkPolicy": map[string]any{"enabled": true}}))
			var deployment appsv1.Deployment
			fromObject(t, m, Key{APIVersion: "apps/v1", Kind: "Deployment", Namespace: releaseNamespace, Name: name}, &deployment)
			policyKey := Key{APIVersion: "networking.k8s.io/v1", Kind: "NetworkPolicy", Namespace: releaseNamespace, Name: name}
			var policy networkingv1.NetworkPolicy
			fromObject(t, m, policyKey, &policy)
			if err := decodeStrict(decoder, m[policyKey]); err != nil {
				t.Error(err)
			}
			if diff := cmp.Diff(*deployment.Spec.Selector, policy.Spec.PodSelector); diff != "" {
				t.Errorf("the policy selects other pods than the Deployment's (-Deployment +policy):\n%s", diff)
			}
			if want := []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}; !slices.Equal(policy.Spec.PolicyTypes, want) {
				t.Errorf("policy types %v, want %v", policy.Spec.PolicyTypes, want)
			}
			if len(policy.Spec.Ingress) != 1 || len(policy.Spec.Ingress[0].From) != 0 {
				t.Fatalf("ingress rules %+v, want one from anywhere", policy.Spec.Ingress)
			}
			var served, allowed []string
			for _, c := range deployment.Spec.Template.Spec.Containers {
				for _, p := range c.Ports {
					served = append(served, string(p.Protocol)+"/"+p.Name)
				}
			}
			for _, p := range policy.Spec.Ingress[0].Ports {
				protocol := corev1.ProtocolTCP // the API's default
				if p.Protocol != nil {
					protocol = *p.Protocol
				}
				allowed = append(allowed, string(protocol)+"/"+p.Port.String())
			}
			sort.Strings(served)
			sort.Strings(allowed)
			if diff := cmp.Diff(served, allowed); diff != "" {
				t.Errorf("ports the pods serve and the policy allows differ (-served +allowed):\n%s", diff)
			}
		})
	}
}

// The opt-in ServiceMonitor has Prometheus scrape /metrics where the server serves it, on its
// aggregated API's port, through that API's Service alone, verifying the certificate the server
// issues for that Service with the CA it publishes. The local-user-authenticator's metrics need no
// credential, and its chart has no ServiceMonitor.
func TestChartServiceMonitor(t *testing.T) {
	type names struct{ apiService, servingCertificateSecret string }
	for name, c := range map[string]struct {
		dir    string
		config func(t *testing.T, objects []*unstructured.Unstructured) (names, int64)
	}{
		"concierge": {conciergeChart, func(t *testing.T, objects []*unstructured.Unstructured) (names, int64) {
			cfg := conciergeConfig(t, objects, releaseNamespace)
			return names{cfg.Names.APIService, cfg.Names.ServingCertificateSecret}, *cfg.AggregatedAPIServerPort
		}},
		"supervisor": {supervisorChart, func(t *testing.T, objects []*unstructured.Unstructured) (names, int64) {
			cfg := supervisorConfig(t, objects, releaseNamespace)
			return names{cfg.Names.APIService, cfg.Names.ServingCertificateSecret()}, *cfg.AggregatedAPIServerPort
		}},
	} {
		t.Run(name, func(t *testing.T) {
			for _, obj := range render(t, c.dir, nil) {
				if obj.GetKind() == "ServiceMonitor" {
					t.Errorf("%s by default", KeyOf(obj))
				}
			}
			objects := render(t, c.dir, map[string]any{"serviceMonitor": map[string]any{
				"enabled": true, "labels": map[string]any{"release": "prometheus"}, "interval": "30s",
			}})
			var monitors []serviceMonitor
			for _, obj := range objects {
				if obj.GetAPIVersion() == "monitoring.coreos.com/v1" && obj.GetKind() == "ServiceMonitor" {
					monitors = append(monitors, decodeServiceMonitor(t, obj))
				}
			}
			if len(monitors) != 1 || len(monitors[0].Spec.Endpoints) != 1 {
				t.Fatalf("ServiceMonitors %+v, want one with one endpoint", monitors)
			}
			monitor, endpoint := monitors[0], monitors[0].Spec.Endpoints[0]
			want, port := c.config(t, objects)

			if monitor.Metadata.Namespace != releaseNamespace || !slices.Equal(monitor.Spec.NamespaceSelector.MatchNames, []string{releaseNamespace}) {
				t.Errorf("in namespace %q, watching %v; want %s", monitor.Metadata.Namespace, monitor.Spec.NamespaceSelector.MatchNames, releaseNamespace)
			}
			if monitor.Metadata.Labels["release"] != "prometheus" || monitor.Metadata.Labels["app.kubernetes.io/managed-by"] != "Helm" {
				t.Errorf("labels %v, want the chart's and serviceMonitor.labels", monitor.Metadata.Labels)
			}
			if endpoint.Scheme != "https" || endpoint.Path != "/metrics" || endpoint.Interval != "30s" || endpoint.BearerTokenFile == "" {
				t.Errorf("endpoint %+v, want /metrics over HTTPS every 30s with Prometheus' token", endpoint)
			}

			// The Services Prometheus scrapes: those the selector selects and the relabelings keep.
			selector, err := metav1.LabelSelectorAsSelector(&monitor.Spec.Selector)
			if err != nil {
				t.Fatal(err)
			}
			var scraped []corev1.Service
			for _, obj := range objects {
				if obj.GetKind() != "Service" || obj.GetNamespace() != releaseNamespace || !selector.Matches(labels.Set(obj.GetLabels())) {
					continue
				}
				kept := true
				for _, r := range endpoint.Relabelings {
					if r.Action == "keep" && slices.Equal(r.SourceLabels, []string{"__meta_kubernetes_service_name"}) {
						kept = kept && regexp.MustCompile("^(?:"+r.Regex+")$").MatchString(obj.GetName())
					}
				}
				if kept {
					var svc corev1.Service
					fromObject(t, map[Key]*unstructured.Unstructured{KeyOf(obj): obj}, KeyOf(obj), &svc)
					scraped = append(scraped, svc)
				}
			}
			if len(scraped) != 1 || scraped[0].Name != want.apiService {
				t.Fatalf("scrapes %d Services, want only %s", len(scraped), want.apiService)
			}
			var target *corev1.ServicePort
			for i, p := range scraped[0].Spec.Ports {
				if p.Name == endpoint.Port {
					target = &scraped[0].Spec.Ports[i]
				}
			}
			if target == nil || target.TargetPort.IntValue() != int(port) {
				t.Errorf("port %q of Service %s is %+v, want one to the aggregated API's port %d", endpoint.Port, want.apiService, target, port)
			}

			tls := endpoint.TLSConfig
			if wantName := want.apiService + "." + releaseNamespace + ".svc"; tls.ServerName != wantName {
				t.Errorf("verifies the name %q, the certificate is for %q", tls.ServerName, wantName)
			}
			if tls.CA.Secret.Name != want.servingCertificateSecret || tls.CA.Secret.Key != caCertificateKey {
				t.Errorf("CA from %+v, want key %s of Secret %s", tls.CA.Secret, caCertificateKey, want.servingCertificateSecret)
			}
		})
	}

	t.Run("interval that is not a duration", func(t *testing.T) {
		_, err := RenderChart(conciergeChart, map[string]any{"serviceMonitor": map[string]any{"enabled": true, "interval": "half a minute"}})
		if err == nil || !strings.Contains(err.Error(), "'/serviceMonitor/interval'") {
			t.Errorf("got error %v, want one naming serviceMonitor.interval", err)
		}
	})
	t.Run("local-user-authenticator", func(t *testing.T) {
		_, err := RenderChart(usersChart, map[string]any{"serviceMonitor": map[string]any{"enabled": true}})
		if err == nil || !strings.Contains(err.Error(), "'serviceMonitor'") {
			t.Errorf("got error %v, want serviceMonitor refused", err)
		}
	})
}

// serviceMonitor holds the fields of the Prometheus Operator's ServiceMonitor (monitoring.coreos.com/v1)
// that the charts set, named as in that API; decodeServiceMonitor refuses any other, such as a
// misspelt one, which the Operator's CRD would prune.
type serviceMonitor struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Metadata   metav1.ObjectMeta `json:"metadata"`
	Spec       struct {
		NamespaceSelector struct {
			MatchNames []string `json:"matchNames"`
		} `json:"namespaceSelector"`
		Selector  metav1.LabelSelector `json:"selector"`
		Endpoints []struct {
			Port            string `json:"port"`
			Path            string `json:"path"`
			Scheme          string `json:"scheme"`
			Interval        string `json:"interval"`
			BearerTokenFile string `json:"bearerTokenFile"`
			TLSConfig       struct {
				ServerName string `json:"serverName"`
				CA         struct {
					Secret corev1.SecretKeySelector `json:"secret"`
				} `json:"ca"`
			} `json:"tlsConfig"`
			Relabelings []struct {
				SourceLabels []string `json:"sourceLabels"`
				Regex        string   `json:"regex"`
				Action       string   `json:"action"`
			} `json:"relabelings"`
		} `json:"endpoints"`
	} `json:"spec"`
}

func decodeServiceMonitor(t *testing.T, obj *unstructured.Unstructured) serviceMonitor {
	t.Helper()
	data, err := json.Marshal(obj.Object)
	if err != nil {
		t.Fatal(err)
	}
	decoder := json.NewDecoder(bytes.NewReader(data))
	decoder.DisallowUnknownFields()
	var monitor serviceMonitor
	if err := decoder.Decode(&monitor); err != nil {
		t.Fatalf("%s: %v", KeyOf(obj), err)
	}
	return monitor
}

// fromObject converts the object with key k among m into a typed object, failing on unknown fields.
func fromObject(t *testing.T, m map[Key]*unstructured.Unstructured, k Key, into any) {
	t.Helper()
	obj, ok := m[k]
	if !ok {
		t.Fatalf("no %s", k)
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(obj.Object, into, true); err != nil {
		t.Fatalf("%s: %v", k, err)
	}
}

// The Supervisor reads its Deployment, the owner of its CSRF cookie key's Secret, as upstream's.
func TestSupervisorReadsItsDeployment(t *testing.T) {
	for name, set := range map[string]struct {
		namespace string
		objects   []*unstructured.Unstructured
	}{
		"plain": {"pinniped-supervisor", kustomize(t, supervisorDeploy)},
		"chart": {"tuna", render(t, supervisorChart, map[string]any{"namespace": "tuna"})},
	} {
		t.Run(name, func(t *testing.T) {
			role := byKey(t, set.objects)[Key{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "Role", Namespace: set.namespace, Name: "pinniped-supervisor"}]
			if role == nil {
				t.Fatal("no Role in the Supervisor's namespace")
			}
			rules, _, _ := unstructured.NestedSlice(role.Object, "rules")
			for _, r := range rules {
				r := r.(map[string]any)
				if fmt.Sprint(r["apiGroups"]) == "[apps]" && fmt.Sprint(r["resources"]) == "[deployments]" && fmt.Sprint(r["verbs"]) == "[get]" {
					return
				}
			}
			t.Errorf("the Role grants no get on apps deployments: %v", rules)
		})
	}
}

// The impersonation proxy forwards with its own ServiceAccount, which may impersonate and do
// nothing else; the Concierge's own may not impersonate, and may request tokens for that one
// ServiceAccount only, the one its configuration names.
func TestImpersonationProxyRBAC(t *testing.T) {
	tests := []struct {
		name, namespace, clusterRole string
		objects                      []*unstructured.Unstructured
	}{
		{name: "plain", namespace: "pinniped-concierge", clusterRole: "pinniped-concierge", objects: kustomize(t, conciergeDeploy)},
		{name: "chart", namespace: "tuna", clusterRole: "tuna", objects: render(t, conciergeChart, map[string]any{"namespace": "tuna"})},
	}
	const proxySA = "pinniped-concierge-impersonation-proxy"
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := byKey(t, tt.objects)
			get := func(kind, namespace, name string, into any) {
				t.Helper()
				apiVersion := "rbac.authorization.k8s.io/v1"
				if kind == "ServiceAccount" {
					apiVersion = "v1"
				}
				o, ok := m[Key{APIVersion: apiVersion, Kind: kind, Namespace: namespace, Name: name}]
				if !ok {
					t.Fatalf("no %s %s/%s", kind, namespace, name)
				}
				if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, into); err != nil {
					t.Fatal(err)
				}
			}
			if cfg := conciergeConfig(t, tt.objects, tt.namespace); cfg.Names.ImpersonationProxyServiceAccount != proxySA {
				t.Errorf("the configuration names ServiceAccount %q for the proxy", cfg.Names.ImpersonationProxyServiceAccount)
			}
			var sa corev1.ServiceAccount
			get("ServiceAccount", tt.namespace, proxySA, &sa)

			var proxyRole rbacv1.ClusterRole
			get("ClusterRole", "", tt.clusterRole+"-impersonation-proxy", &proxyRole)
			want := []rbacv1.PolicyRule{
				{APIGroups: []string{""}, Resources: []string{"users", "groups", "serviceaccounts"}, Verbs: []string{"impersonate"}},
				{APIGroups: []string{"authentication.k8s.io"}, Resources: []string{"*"}, Verbs: []string{"impersonate"}},
			}
			if diff := cmp.Diff(want, proxyRole.Rules); diff != "" {
				t.Errorf("the proxy's ClusterRole (-want +got):\n%s", diff)
			}
			var binding rbacv1.ClusterRoleBinding
			get("ClusterRoleBinding", "", tt.clusterRole+"-impersonation-proxy", &binding)
			wantSubjects := []rbacv1.Subject{{Kind: "ServiceAccount", Name: proxySA, Namespace: tt.namespace}}
			if binding.RoleRef.Name != proxyRole.Name || !reflect.DeepEqual(binding.Subjects, wantSubjects) {
				t.Errorf("the proxy's ClusterRole is bound to %+v as %q", binding.Subjects, binding.RoleRef.Name)
			}

			var concierge rbacv1.ClusterRole
			get("ClusterRole", "", tt.clusterRole, &concierge)
			var role rbacv1.Role
			get("Role", tt.namespace, "pinniped-concierge", &role)
			tokenRules := 0
			for _, r := range slices.Concat(concierge.Rules, role.Rules) {
				if slices.Contains(r.Verbs, "impersonate") || slices.Contains(r.Verbs, "*") {
					t.Errorf("the Concierge's own ServiceAccount may %v %v", r.Verbs, r.Resources)
				}
				if slices.Contains(r.Resources, "serviceaccounts/token") {
					tokenRules++
					if !slices.Equal(r.ResourceNames, []string{proxySA}) || !slices.Equal(r.Verbs, []string{"create"}) {
						t.Errorf("the Concierge may %v tokens of %v, want create of %s only", r.Verbs, r.ResourceNames, proxySA)
					}
				}
			}
			if tokenRules != 1 {
				t.Errorf("%d rules for serviceaccounts/token in the Concierge's Role, want 1", tokenRules)
			}
		})
	}
}

// Every server's Go runtime knows its container's memory limit (GOMEMLIMIT from the downward
// API), so that it collects garbage harder near the limit instead of being killed at it.
func TestServersKnowTheirMemoryLimit(t *testing.T) {
	for name, objects := range map[string][]*unstructured.Unstructured{
		"concierge":                      kustomize(t, conciergeDeploy),
		"local-user-authenticator":       kustomize(t, usersDeploy),
		"supervisor":                     kustomize(t, supervisorDeploy),
		"concierge chart":                render(t, conciergeChart, nil),
		"local-user-authenticator chart": render(t, usersChart, nil),
		"supervisor chart":               render(t, supervisorChart, nil),
	} {
		deployments := 0
		for _, obj := range objects {
			if obj.GetKind() != "Deployment" {
				continue
			}
			deployments++
			var d appsv1.Deployment
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, &d); err != nil {
				t.Fatal(err)
			}
			for _, c := range d.Spec.Template.Spec.Containers {
				if c.Resources.Limits.Memory().IsZero() {
					t.Errorf("%s: container %s has no memory limit", name, c.Name)
				}
				i := slices.IndexFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == "GOMEMLIMIT" })
				if i < 0 || c.Env[i].ValueFrom == nil || c.Env[i].ValueFrom.ResourceFieldRef == nil || c.Env[i].ValueFrom.ResourceFieldRef.Resource != "limits.memory" {
					t.Errorf("%s: container %s does not set GOMEMLIMIT from limits.memory", name, c.Name)
				}
			}
		}
		if deployments == 0 {
			t.Errorf("%s: no Deployment", name)
		}
	}
}
