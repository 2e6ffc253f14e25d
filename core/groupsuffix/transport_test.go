package groupsuffix

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// fakeAPIServer serves our groups under the "tuna.io" suffix, like a cluster installed with that
// suffix, and records what the client sent.
type fakeAPIServer struct {
	release chan struct{} // lets the watch send its second event

	mu       sync.Mutex
	requests map[string]recordedRequest // by "METHOD path"
}

type recordedRequest struct {
	accept, contentType string
	body                map[string]any
}

func (s *fakeAPIServer) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	raw, _ := io.ReadAll(req.Body)
	rec := recordedRequest{accept: req.Header.Get("Accept"), contentType: req.Header.Get("Content-Type")}
	// A protobuf body is only recorded as sent: the transport passes it through unread.
	if len(raw) > 0 && !strings.HasPrefix(rec.contentType, mediaTypeProtobuf) {
		if err := json.Unmarshal(raw, &rec.body); err != nil {
			http.Error(w, "request body is not JSON", http.StatusUnsupportedMediaType)
			return
		}
	}
	s.mu.Lock()
	s.requests[req.Method+" "+req.URL.Path] = rec
	s.mu.Unlock()

	w.Header().Set("Content-Type", "application/json")
	switch {
	case req.URL.Path == "/apis":
		fmt.Fprint(w, `{"kind":"APIGroupList","apiVersion":"v1","groups":[
			{"name":"login.concierge.tuna.io","versions":[{"groupVersion":"login.concierge.tuna.io/v1alpha1","version":"v1alpha1"}],
			 "preferredVersion":{"groupVersion":"login.concierge.tuna.io/v1alpha1","version":"v1alpha1"}},
			{"name":"apps","versions":[{"groupVersion":"apps/v1","version":"v1"}],"preferredVersion":{"groupVersion":"apps/v1","version":"v1"}}]}`)
	case req.URL.Path == "/api":
		fmt.Fprint(w, `{"kind":"APIVersions","versions":["v1"]}`)
	case req.Method == http.MethodPost && req.URL.Path == "/apis/login.concierge.tuna.io/v1alpha1/tokencredentialrequests":
		rec.body["status"] = map[string]any{"message": "authentication failed"}
		_ = json.NewEncoder(w).Encode(rec.body)
	case req.Method == http.MethodPost && req.URL.Path == "/api/v1/namespaces/ns/secrets" && rec.body == nil:
		fmt.Fprint(w, `{"kind":"Secret","apiVersion":"v1","metadata":{"name":"plain","namespace":"ns"}}`)
	case req.Method == http.MethodPost && req.URL.Path == "/api/v1/namespaces/ns/secrets":
		_ = json.NewEncoder(w).Encode(rec.body)
	case req.URL.Path == "/apis/authentication.concierge.tuna.io/v1alpha1/jwtauthenticators" && req.URL.Query().Get("watch") == "true":
		flusher := w.(http.Flusher)
		fmt.Fprint(w, `{"type":"ADDED","object":{"apiVersion":"authentication.concierge.tuna.io/v1alpha1","kind":"JWTAuthenticator","metadata":{"name":"first","resourceVersion":"1"},"spec":{"audience":"authentication.concierge.tuna.io"}}}`+"\n")
		flusher.Flush()
		select {
		case <-s.release:
		case <-req.Context().Done():
			return
		}
		fmt.Fprint(w, `{"type":"MODIFIED","object":{"apiVersion":"authentication.concierge.tuna.io/v1alpha1","kind":"JWTAuthenticator","metadata":{"name":"second","resourceVersion":"2"}}}`+"\n")
		flusher.Flush()
		<-req.Context().Done()
	case req.URL.Path == "/apis/authentication.concierge.tuna.io/v1alpha1/jwtauthenticators":
		fmt.Fprint(w, `{"apiVersion":"authentication.concierge.tuna.io/v1alpha1","kind":"JWTAuthenticatorList","metadata":{"resourceVersion":"7"},"items":[
			{"apiVersion":"authentication.concierge.tuna.io/v1alpha1","kind":"JWTAuthenticator","metadata":{"name":"a"},"spec":{"issuer":"https://x"}}]}`)
	default:
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprint(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404,
			"message":"not found","details":{"group":"config.concierge.tuna.io","kind":"credentialissuers","name":"x"}}`)
	}
}

func (s *fakeAPIServer) request(t *testing.T, key string) recordedRequest {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	rec, ok := s.requests[key]
	if !ok {
		t.Fatalf("server never received %s; got %v", key, keys(s.requests))
	}
	return rec
}

func keys(m map[string]recordedRequest) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func newFakeAPIServer(t *testing.T) (*fakeAPIServer, *rest.Config) {
	t.Helper()
	fake := &fakeAPIServer{release: make(chan struct{}), requests: map[string]recordedRequest{}}
	server := httptest.NewServer(fake)
	t.Cleanup(server.Close)
	config := &rest.Config{Host: server.URL}
	config.Wrap(Transport("tuna.io"))
	return fake, config
}

var (
	jwtAuthenticators = schema.GroupVersionResource{Group: "authentication.concierge.pinniped.dev", Version: "v1alpha1", Resource: "jwtauthenticators"}
	tokenRequests     = schema.GroupVersionResource{Group: "login.concierge.pinniped.dev", Version: "v1alpha1", Resource: "tokencredentialrequests"}
	credentialIssuers = schema.GroupVersionResource{Group: "config.concierge.pinniped.dev", Version: "v1alpha1", Resource: "credentialissuers"}
)

func TestTransportCreate(t *testing.T) {
	t.Parallel()
	fake, config := newFakeAPIServer(t)
	client, err := dynamic.NewForConfig(config)
	if err != nil {
		t.Fatal(err)
	}
	request := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "login.concierge.pinniped.dev/v1alpha1",
		"kind":       "TokenCredentialRequest",
		"spec": map[string]any{
			"token":         "login.concierge.pinniped.dev",
			"authenticator": map[string]any{"apiGroup": "authentication.concierge.pinniped.dev", "kind": "WebhookAuthenticator", "name": "w"},
		},
	}}
	got, err := client.Resource(tokenRequests).Create(context.Background(), request, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create: %v", err)
	}

	sent := fake.request(t, "POST /apis/login.concierge.tuna.io/v1alpha1/tokencredentialrequests")
	if sent.body["apiVersion"] != "login.concierge.tuna.io/v1alpha1" {
		t.Errorf("server got apiVersion %v", sent.body["apiVersion"])
	}
	spec := sent.body["spec"].(map[string]any)
	if spec["token"] != "login.concierge.pinniped.dev" {
		t.Errorf("token was rewritten to %v", spec["token"])
	}
	if group := spec["authenticator"].(map[string]any)["apiGroup"]; group != "authentication.concierge.tuna.io" {
		t.Errorf("server got authenticator apiGroup %v", group)
	}

	if got.GetAPIVersion() != "login.concierge.pinniped.dev/v1alpha1" {
		t.Errorf("client got apiVersion %q", got.GetAPIVersion())
	}
	if group, _, _ := unstructured.NestedString(got.Object, "spec", "authenticator", "apiGroup"); group != "authentication.concierge.pinniped.dev" {
		t.Errorf("client got authenticator apiGroup %q", group)
	}
	if msg, _, _ := unstructured.NestedString(got.Object, "status", "message"); msg != "authentication failed" {
		t.Errorf("client got status message %q", msg)
	}
}

func TestTransportListAndNotFound(t *testing.T) {
	t.Parallel()
	_, config := newFakeAPIServer(t)
	client, err := dynamic.NewForConfig(config)
	if err != nil {
		t.Fatal(err)
	}
	list, err := client.Resource(jwtAuthenticators).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatalf("list: %v", err)
	}
	if len(list.Items) != 1 || list.Items[0].GetAPIVersion() != "authentication.concierge.pinniped.dev/v1alpha1" || list.Items[0].GetName() != "a" {
		t.Errorf("list items = %+v", list.Items)
	}

	_, err = client.Resource(credentialIssuers).Get(context.Background(), "x", metav1.GetOptions{})
	status, ok := err.(interface{ Status() metav1.Status })
	if !ok {
		t.Fatalf("get: want a status error, got %v", err)
	}
	if details := status.Status().Details; details == nil || details.Group != "config.concierge.pinniped.dev" {
		t.Errorf("status details = %+v", details)
	}
}

func TestTransportWatchStreamsEvents(t *testing.T) {
	t.Parallel()
	fake, config := newFakeAPIServer(t)
	client, err := dynamic.NewForConfig(config)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	w, err := client.Resource(jwtAuthenticators).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("watch: %v", err)
	}
	defer w.Stop()

	// The server holds back the second event until the first has arrived, so this only passes if
	// the transport forwards events as they come instead of buffering the stream.
	first := nextEvent(t, ctx, w)
	if first.Type != watch.Added || first.Object.GetName() != "first" {
		t.Fatalf("first event = %s %s", first.Type, first.Object.GetName())
	}
	if first.Object.GetAPIVersion() != "authentication.concierge.pinniped.dev/v1alpha1" {
		t.Errorf("first event apiVersion = %q", first.Object.GetAPIVersion())
	}
	if audience, _, _ := unstructured.NestedString(first.Object.Object, "spec", "audience"); audience != "authentication.concierge.tuna.io" {
		t.Errorf("user data in the event was rewritten: audience %q", audience)
	}
	close(fake.release)
	second := nextEvent(t, ctx, w)
	if second.Type != watch.Modified || second.Object.GetName() != "second" || second.Object.GetAPIVersion() != "authentication.concierge.pinniped.dev/v1alpha1" {
		t.Fatalf("second event = %s %s %s", second.Type, second.Object.GetName(), second.Object.GetAPIVersion())
	}
}

type unstructuredEvent struct {
	Type   watch.EventType
	Object *unstructured.Unstructured
}

func nextEvent(t *testing.T, ctx context.Context, w watch.Interface) unstructuredEvent {
	t.Helper()
	select {
	case event, ok := <-w.ResultChan():
		if !ok {
			t.Fatal("watch closed early")
		}
		obj, ok := event.Object.(*unstructured.Unstructured)
		if !ok {
			t.Fatalf("watch event %s carries %T", event.Type, event.Object)
		}
		return unstructuredEvent{Type: event.Type, Object: obj}
	case <-ctx.Done():
		t.Fatal("timed out waiting for a watch event")
	}
	return unstructuredEvent{}
}

// newSecretsClient is a kube clientset sending contentType (its default is protobuf) through the
// transport to a fake API server.
func newSecretsClient(t *testing.T, contentType string) (*fakeAPIServer, kubernetes.Interface) {
	t.Helper()
	fake, config := newFakeAPIServer(t)
	config.ContentType = contentType
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		t.Fatal(err)
	}
	return fake, client
}

// secretCreated is the Secret create the server received, checked to be sent as contentType and
// to ask for no protobuf back.
func (s *fakeAPIServer) secretCreated(t *testing.T, contentType string) recordedRequest {
	t.Helper()
	sent := s.request(t, "POST /api/v1/namespaces/ns/secrets")
	if !strings.HasPrefix(sent.contentType, contentType) {
		t.Errorf("request Content-Type = %q, want %s", sent.contentType, contentType)
	}
	if strings.Contains(sent.accept, "protobuf") {
		t.Errorf("request Accept = %q, want no protobuf", sent.accept)
	}
	return sent
}

// TestTransportProtobufClientForCoreObjects: a protobuf client's responses come as JSON, a body
// that does not name our groups passes as sent, and one that does is refused with a clear error
// rather than sent with groups the server does not serve.
func TestTransportProtobufClientForCoreObjects(t *testing.T) {
	t.Parallel()
	fake, client := newSecretsClient(t, "application/vnd.kubernetes.protobuf")
	plain := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "plain"}, StringData: map[string]string{"k": "v"}}
	if _, err := client.CoreV1().Secrets("ns").Create(context.Background(), plain, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create without our groups: %v", err)
	}
	fake.secretCreated(t, "application/vnd.kubernetes.protobuf")

	owned := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "owned", OwnerReferences: []metav1.OwnerReference{
		{APIVersion: "config.supervisor.pinniped.dev/v1alpha1", Kind: "FederationDomain", Name: "fd", UID: "u"},
	}}}
	_, err := client.CoreV1().Secrets("ns").Create(context.Background(), owned, metav1.CreateOptions{})
	if err == nil || !strings.Contains(err.Error(), "send JSON") {
		t.Errorf("create of a protobuf body naming our groups: got %v, want the refusal", err)
	}
}

// TestTransportJSONClientForCoreObjects: our groups in a built-in object's owner references are
// rewritten both ways, and the same string in its data is left alone.
func TestTransportJSONClientForCoreObjects(t *testing.T) {
	t.Parallel()
	fake, client := newSecretsClient(t, "application/json")
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name: "s",
			OwnerReferences: []metav1.OwnerReference{
				{APIVersion: "config.supervisor.pinniped.dev/v1alpha1", Kind: "FederationDomain", Name: "fd", UID: "u"},
			},
		},
		StringData: map[string]string{"apiVersion": "config.supervisor.pinniped.dev/v1alpha1"},
	}
	got, err := client.CoreV1().Secrets("ns").Create(context.Background(), secret, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create: %v", err)
	}

	sent := fake.secretCreated(t, "application/json")
	owner := sent.body["metadata"].(map[string]any)["ownerReferences"].([]any)[0].(map[string]any)
	if owner["apiVersion"] != "config.supervisor.tuna.io/v1alpha1" {
		t.Errorf("server got owner apiVersion %v", owner["apiVersion"])
	}
	if data := sent.body["stringData"].(map[string]any)["apiVersion"]; data != "config.supervisor.pinniped.dev/v1alpha1" {
		t.Errorf("secret data was rewritten to %v", data)
	}
	if got.OwnerReferences[0].APIVersion != "config.supervisor.pinniped.dev/v1alpha1" {
		t.Errorf("client got owner apiVersion %q", got.OwnerReferences[0].APIVersion)
	}
}

func TestTransportDiscovery(t *testing.T) {
	t.Parallel()
	_, config := newFakeAPIServer(t)
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		t.Fatal(err)
	}
	groups, err := client.Discovery().ServerGroups()
	if err != nil {
		t.Fatalf("discovery: %v", err)
	}
	found := map[string]string{}
	for _, g := range groups.Groups {
		found[g.Name] = g.PreferredVersion.GroupVersion
	}
	if len(found) != 3 || found[""] != "v1" || found["login.concierge.pinniped.dev"] != "login.concierge.pinniped.dev/v1alpha1" || found["apps"] != "apps/v1" {
		t.Errorf("discovered groups %v", found)
	}
}

func TestTransportDefaultSuffixIsIdentity(t *testing.T) {
	t.Parallel()
	next := http.DefaultTransport
	if got := Transport(Default)(next); got != next {
		t.Fatalf("Transport(%q) wrapped the transport", Default)
	}
}

func TestTransportInvalidSuffix(t *testing.T) {
	t.Parallel()
	rt := Transport("no_dots")(http.DefaultTransport)
	req := httptest.NewRequest(http.MethodGet, "https://example.com/apis", nil)
	if _, err := rt.RoundTrip(req); err == nil || !strings.Contains(err.Error(), "invalid API group suffix") {
		t.Fatalf("RoundTrip with an invalid suffix = %v", err)
	}
}

func TestPathRewrite(t *testing.T) {
	t.Parallel()
	r := newReplacer("tuna.io")
	tests := map[string]string{
		"/apis/login.concierge.pinniped.dev/v1alpha1/tokencredentialrequests":                  "/apis/login.concierge.tuna.io/v1alpha1/tokencredentialrequests",
		"/prefix/apis/idp.supervisor.pinniped.dev/v1alpha1/namespaces/n/oidcidentityproviders": "/prefix/apis/idp.supervisor.tuna.io/v1alpha1/namespaces/n/oidcidentityproviders",
		"/apis/apps/v1/namespaces/login.concierge.pinniped.dev/deployments":                    "/apis/apps/v1/namespaces/login.concierge.pinniped.dev/deployments",
		"/api/v1/namespaces/n/secrets/login.concierge.pinniped.dev":                            "/api/v1/namespaces/n/secrets/login.concierge.pinniped.dev",
		"/apis": "/apis",
		"/openapi/v3/apis/config.concierge.pinniped.dev/v1alpha1": "/openapi/v3/apis/config.concierge.tuna.io/v1alpha1",
	}
	for in, want := range tests {
		if got := r.path(in); got != want {
			t.Errorf("path(%s) = %s, want %s", in, got, want)
		}
	}
}
