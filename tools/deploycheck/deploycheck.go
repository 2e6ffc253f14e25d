// Package deploycheck loads the install manifests as objects: the plain YAML folders through
// kustomize (what `kubectl apply -k` builds) and the Helm charts through Helm's own chart loader
// and template engine (what `helm install` renders). Tests use it to check that the two install
// paths agree and that every object is valid, and that every YAML example of docs/ is accepted by
// a real kube-apiserver with strict validation.
package deploycheck

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"path"
	"sort"
	"strings"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// Kustomize builds the kustomization in dir.
func Kustomize(dir string) ([]*unstructured.Unstructured, error) {
	resources, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		return nil, fmt.Errorf("building kustomization %s: %w", dir, err)
	}
	out, err := resources.AsYaml()
	if err != nil {
		return nil, fmt.Errorf("encoding kustomization %s: %w", dir, err)
	}
	return Decode(out)
}

// RenderChart renders the chart in dir as `helm template` would, with values over the chart's
// defaults, and returns every object of every template, hooks included. The release's namespace is
// "default", Helm's when no --namespace is given.
func RenderChart(dir string, values map[string]any) ([]*unstructured.Unstructured, error) {
	return RenderChartInNamespace(dir, "default", values)
}

// RenderChartInNamespace renders the chart in dir as `helm template --namespace namespace` would.
func RenderChartInNamespace(dir, namespace string, values map[string]any) ([]*unstructured.Unstructured, error) {
	_, files, err := renderFiles(dir, namespace, values)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	var objects []*unstructured.Unstructured
	for _, name := range names {
		if strings.HasPrefix(path.Base(name), "_") || !strings.HasSuffix(name, ".yaml") {
			continue // partials and notes
		}
		decoded, err := Decode([]byte(files[name]))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		objects = append(objects, decoded...)
	}
	return objects, nil
}

// RenderNotes renders the chart's templates/NOTES.txt: what `helm install --namespace namespace`
// prints once it has installed the chart in dir.
func RenderNotes(dir, namespace string, values map[string]any) (string, error) {
	chrt, files, err := renderFiles(dir, namespace, values)
	if err != nil {
		return "", err
	}
	notes, ok := files[chrt.Name()+"/templates/NOTES.txt"]
	if !ok {
		return "", fmt.Errorf("chart %s has no templates/NOTES.txt", dir)
	}
	return notes, nil
}

// renderFiles loads the chart in dir and renders its templates for a release in namespace, with
// values over the chart's defaults, to their text by name.
func renderFiles(dir, namespace string, values map[string]any) (*chart.Chart, map[string]string, error) {
	chrt, err := loader.Load(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("loading chart %s: %w", dir, err)
	}
	release := chartutil.ReleaseOptions{Name: "sealion", Namespace: namespace, Revision: 1, IsInstall: true}
	// ToRenderValues also checks the values against the chart's values.schema.json.
	renderValues, err := chartutil.ToRenderValues(chrt, values, release, chartutil.DefaultCapabilities)
	if err != nil {
		return nil, nil, fmt.Errorf("preparing values of chart %s: %w", dir, err)
	}
	files, err := engine.Render(chrt, renderValues)
	if err != nil {
		return nil, nil, fmt.Errorf("rendering chart %s: %w", dir, err)
	}
	return chrt, files, nil
}

// Decode splits a multi-document YAML stream into objects, skipping empty documents.
func Decode(data []byte) ([]*unstructured.Unstructured, error) {
	decoder := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var objects []*unstructured.Unstructured
	for {
		var obj map[string]any
		if err := decoder.Decode(&obj); err != nil {
			if errors.Is(err, io.EOF) {
				return objects, nil
			}
			return nil, fmt.Errorf("decoding YAML document %d: %w", len(objects)+1, err)
		}
		if obj != nil {
			objects = append(objects, &unstructured.Unstructured{Object: obj})
		}
	}
}

// Key identifies an object within an installation.
type Key struct {
	APIVersion, Kind, Namespace, Name string
}

func (k Key) String() string {
	return fmt.Sprintf("%s %s %s/%s", k.APIVersion, k.Kind, k.Namespace, k.Name)
}

// KeyOf returns obj's key.
func KeyOf(obj *unstructured.Unstructured) Key {
	return Key{APIVersion: obj.GetAPIVersion(), Kind: obj.GetKind(), Namespace: obj.GetNamespace(), Name: obj.GetName()}
}

// ByKey indexes objects by key, failing on duplicates.
func ByKey(objects []*unstructured.Unstructured) (map[Key]*unstructured.Unstructured, error) {
	m := make(map[Key]*unstructured.Unstructured, len(objects))
	for _, obj := range objects {
		k := KeyOf(obj)
		if _, dup := m[k]; dup {
			return nil, fmt.Errorf("duplicate object %s", k)
		}
		m[k] = obj
	}
	return m, nil
}

// HelmLabels are the labels the charts add to every object's metadata and the plain manifests do
// not: those Helm and Kubernetes recommend, naming the chart, its version and the release.
var HelmLabels = []string{
	"app.kubernetes.io/name",
	"app.kubernetes.io/instance",
	"app.kubernetes.io/version",
	"app.kubernetes.io/managed-by",
	"helm.sh/chart",
}

// createdByHelmHook is the line of the Concierge's configuration that only the chart writes: its
// hook creates the CredentialIssuer, which the Concierge must then leave to it.
const createdByHelmHook = "credentialIssuerCreatedByInstall: true\n"

// Normalize returns a copy of obj without what only Helm needs: its helm.sh/ annotations (hooks,
// resource policies), HelmLabels in its metadata, and the configuration line createdByHelmHook.
// Labels elsewhere (selectors, pod templates) stay.
func Normalize(obj *unstructured.Unstructured) *unstructured.Unstructured {
	out := obj.DeepCopy()
	if config, ok, _ := unstructured.NestedString(out.Object, "data", "pinniped.yaml"); ok && out.GetKind() == "ConfigMap" {
		_ = unstructured.SetNestedField(out.Object, strings.Replace(config, createdByHelmHook, "", 1), "data", "pinniped.yaml")
	}
	annotations := out.GetAnnotations()
	for k := range annotations {
		if strings.HasPrefix(k, "helm.sh/") {
			delete(annotations, k)
		}
	}
	if len(annotations) == 0 {
		unstructured.RemoveNestedField(out.Object, "metadata", "annotations")
	} else {
		out.SetAnnotations(annotations)
	}
	labels := out.GetLabels()
	for _, k := range HelmLabels {
		delete(labels, k)
	}
	if len(labels) == 0 {
		unstructured.RemoveNestedField(out.Object, "metadata", "labels")
	} else {
		out.SetLabels(labels)
	}
	return out
}
