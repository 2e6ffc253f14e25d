package localusers

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/component-base/metrics/testutil"
)

func userSecret(t *testing.T, namespace, name, password string, groups *string) *corev1.Secret {
	t.Helper()
	hash, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	data := map[string][]byte{PasswordHashKey: hash}
	if groups != nil {
		data[GroupsKey] = []byte(*groups)
	}
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}, Data: data}
}

func ptr(s string) *string { return &s }

// newTestAuthenticator reads users through a synced informer on a fake clientset, as Serve does.
func newTestAuthenticator(t *testing.T, client kubernetes.Interface) *Authenticator {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(DefaultNamespace))
	secrets := factory.Core().V1().Secrets()
	lister := secrets.Lister().Secrets(DefaultNamespace)
	_ = secrets.Informer()
	factory.Start(ctx.Done())
	t.Cleanup(func() {
		cancel()
		factory.Shutdown()
	})
	for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			t.Fatalf("informer %v did not sync", typ)
		}
	}
	return NewAuthenticator(lister)
}

func testUsers(t *testing.T) kubernetes.Interface {
	return fake.NewClientset(
		userSecret(t, DefaultNamespace, "alice", "correct horse", ptr(" admins , ,devs,")),
		userSecret(t, DefaultNamespace, "bob", "pa:ss", ptr("")),
		userSecret(t, DefaultNamespace, "carol", "secret", nil),
		userSecret(t, "elsewhere", "dave", "secret", ptr("x")),
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: DefaultNamespace, Name: "nohash"}, Data: map[string][]byte{GroupsKey: []byte("g")}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: DefaultNamespace, Name: "badhash"}, Data: map[string][]byte{PasswordHashKey: []byte("secret")}},
	)
}

func TestHandler(t *testing.T) {
	t.Parallel()
	handler := NewHandler(newTestAuthenticator(t, testUsers(t)))

	type status struct {
		Authenticated bool
		Username      string
		Groups        []string
		Audiences     []string
	}
	tests := []struct {
		name       string
		apiVersion string
		token      string
		audiences  []string
		want       status
	}{
		{name: "right password", apiVersion: "v1", token: "alice:correct horse",
			want: status{Authenticated: true, Username: "alice", Groups: []string{"admins", "devs"}}},
		{name: "right password v1beta1", apiVersion: "v1beta1", token: "alice:correct horse",
			want: status{Authenticated: true, Username: "alice", Groups: []string{"admins", "devs"}}},
		{name: "audiences are echoed", apiVersion: "v1", token: "alice:correct horse", audiences: []string{"cluster-a"},
			want: status{Authenticated: true, Username: "alice", Groups: []string{"admins", "devs"}, Audiences: []string{"cluster-a"}}},
		{name: "password containing a colon", apiVersion: "v1", token: "bob:pa:ss", want: status{Authenticated: true, Username: "bob"}},
		{name: "empty groups", apiVersion: "v1beta1", token: "bob:pa:ss", want: status{Authenticated: true, Username: "bob"}},
		{name: "no groups key", apiVersion: "v1", token: "carol:secret", want: status{Authenticated: true, Username: "carol"}},
		{name: "wrong password", apiVersion: "v1", token: "alice:wrong"},
		{name: "wrong password v1beta1", apiVersion: "v1beta1", token: "alice:wrong"},
		{name: "unknown user", apiVersion: "v1", token: "mallory:secret"},
		{name: "user in another namespace", apiVersion: "v1", token: "dave:secret"},
		{name: "no colon", apiVersion: "v1", token: "alice"},
		{name: "empty password", apiVersion: "v1", token: "alice:"},
		{name: "empty username", apiVersion: "v1", token: ":correct horse"},
		{name: "empty token", apiVersion: "v1beta1", token: ""},
		{name: "Secret without a hash", apiVersion: "v1", token: "nohash:"},
		{name: "Secret with a hash that is not bcrypt", apiVersion: "v1", token: "badhash:secret"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			body, _ := json.Marshal(map[string]any{
				"apiVersion": "authentication.k8s.io/" + tt.apiVersion,
				"kind":       "TokenReview",
				"spec":       map[string]any{"token": tt.token, "audiences": tt.audiences},
			})
			rec := httptest.NewRecorder()
			handler.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, WebhookPath, strings.NewReader(string(body))))
			if rec.Code != http.StatusOK {
				t.Fatalf("status %d: %s", rec.Code, rec.Body)
			}
			if tt.token != "" && strings.Contains(rec.Body.String(), tt.token) {
				t.Errorf("response repeats the token: %s", rec.Body)
			}
			var got struct {
				APIVersion string `json:"apiVersion"`
				Kind       string `json:"kind"`
				Status     struct {
					Authenticated bool `json:"authenticated"`
					User          struct {
						Username string   `json:"username"`
						UID      string   `json:"uid"`
						Groups   []string `json:"groups"`
					} `json:"user"`
					Audiences []string `json:"audiences"`
					Error     string   `json:"error"`
				} `json:"status"`
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
				t.Fatalf("response is not JSON: %v: %s", err, rec.Body)
			}
			if got.APIVersion != "authentication.k8s.io/"+tt.apiVersion || got.Kind != "TokenReview" {
				t.Errorf("answered as %s %s", got.APIVersion, got.Kind)
			}
			if got.Status.Error != "" || got.Status.User.UID != "" {
				t.Errorf("response has error %q, uid %q", got.Status.Error, got.Status.User.UID)
			}
			gotStatus := status{Authenticated: got.Status.Authenticated, Username: got.Status.User.Username, Groups: got.Status.User.Groups, Audiences: got.Status.Audiences}
			if !reflect.DeepEqual(gotStatus, tt.want) {
				t.Errorf("status = %+v, want %+v", gotStatus, tt.want)
			}
		})
	}
}

func TestHandlerRejectsBadRequests(t *testing.T) {
	t.Parallel()
	handler := NewHandler(newTestAuthenticator(t, testUsers(t)))
	tests := []struct {
		name   string
		method string
		body   string
		want   int
	}{
		{name: "not JSON", method: http.MethodPost, body: "alice:correct horse", want: http.StatusBadRequest},
		{name: "empty body", method: http.MethodPost, body: "", want: http.StatusBadRequest},
		{name: "no kind", method: http.MethodPost, body: `{"spec":{"token":"alice:correct horse"}}`, want: http.StatusBadRequest},
		{name: "unknown version", method: http.MethodPost, body: `{"apiVersion":"authentication.k8s.io/v2","kind":"TokenReview"}`, want: http.StatusBadRequest},
		{name: "other kind", method: http.MethodPost, body: `{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}`, want: http.StatusBadRequest},
		{name: "too large", method: http.MethodPost, body: strings.Repeat(" ", maxRequestBytes+1), want: http.StatusBadRequest},
		{name: "GET", method: http.MethodGet, want: http.StatusMethodNotAllowed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rec := httptest.NewRecorder()
			handler.ServeHTTP(rec, httptest.NewRequest(tt.method, WebhookPath, strings.NewReader(tt.body)))
			if rec.Code != tt.want {
				t.Fatalf("status %d, want %d: %s", rec.Code, tt.want, rec.Body)
			}
		})
	}
}

func TestAuthenticatorSeesSecretChanges(t *testing.T) {
	t.Parallel()
	client := fake.NewClientset()
	authenticator := newTestAuthenticator(t, client)
	if _, ok := authenticator.AuthenticateToken("erin:pw"); ok {
		t.Fatal("authenticated a user that does not exist yet")
	}
	if _, err := client.CoreV1().Secrets(DefaultNamespace).Create(context.Background(), userSecret(t, DefaultNamespace, "erin", "pw", ptr("g")), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if user, ok := authenticator.AuthenticateToken("erin:pw"); ok {
			if user.Username != "erin" || !reflect.DeepEqual(user.Groups, []string{"g"}) {
				t.Fatalf("user = %+v", user)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("new user Secret never became visible")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestParseGroups(t *testing.T) {
	t.Parallel()
	tests := map[string][]string{
		"":                 nil,
		" , ,":             nil,
		"a":                {"a"},
		" a , b ,c,":       {"a", "b", "c"},
		"with space, x y ": {"with space", "x y"},
	}
	for in, want := range tests {
		if got := parseGroups(in); !reflect.DeepEqual(got, want) {
			t.Errorf("parseGroups(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestUnknownUserHashIsBcrypt(t *testing.T) {
	t.Parallel()
	cost, err := bcrypt.Cost(unknownUserHash)
	if err != nil || cost != bcrypt.DefaultCost {
		t.Fatalf("unknownUserHash cost = %d, %v; want %d", cost, err, bcrypt.DefaultCost)
	}
	if err := bcrypt.CompareHashAndPassword(unknownUserHash, []byte("secret")); err != bcrypt.ErrMismatchedHashAndPassword {
		t.Fatalf("comparing against unknownUserHash: %v", err)
	}
}

// Each answer is counted by result; not parallel, so that the counts are this test's.
func TestHandlerCountsReviews(t *testing.T) {
	RegisterMetrics() // component-base metrics count nothing until registered
	handler := NewHandler(newTestAuthenticator(t, testUsers(t)))
	count := func(result string) float64 {
		v, err := testutil.GetCounterMetricValue(reviews.WithLabelValues(result))
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	before := map[string]float64{}
	for _, r := range []string{resultAuthenticated, resultRefused, resultInvalid} {
		before[r] = count(r)
	}
	for _, body := range []string{
		`{"apiVersion":"authentication.k8s.io/v1","kind":"TokenReview","spec":{"token":"alice:correct horse"}}`,
		`{"apiVersion":"authentication.k8s.io/v1beta1","kind":"TokenReview","spec":{"token":"alice:correct horse"}}`,
		`{"apiVersion":"authentication.k8s.io/v1","kind":"TokenReview","spec":{"token":"alice:wrong"}}`,
		`not a review`,
	} {
		handler.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodPost, WebhookPath, strings.NewReader(body)))
	}
	for result, want := range map[string]float64{resultAuthenticated: 2, resultRefused: 1, resultInvalid: 1} {
		if got := count(result) - before[result]; got != want {
			t.Errorf("reviews{result=%s} grew by %v, want %v", result, got, want)
		}
	}
}
