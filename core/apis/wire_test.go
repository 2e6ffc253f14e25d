package apis_test

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	runtimeserializer "k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/utils/ptr"

	"sealion.dev/core/apis/concierge/identity"
	identityinstall "sealion.dev/core/apis/concierge/identity/install"
	identityv1alpha1 "sealion.dev/core/apis/concierge/identity/v1alpha1"
	"sealion.dev/core/apis/concierge/login"
	logininstall "sealion.dev/core/apis/concierge/login/install"
	loginv1alpha1 "sealion.dev/core/apis/concierge/login/v1alpha1"
)

// TestNoCreationTimestampOnTheWire encodes the virtual resources' responses with the codec the
// servers use: since v0.43 upstream sends "metadata":{}, with no "creationTimestamp":null, and
// JSON and YAML clients (pinniped whoami -o yaml) see that.
func TestNoCreationTimestampOnTheWire(t *testing.T) {
	scheme := runtime.NewScheme()
	for _, install := range []func(*runtime.Scheme) error{logininstall.Install, identityinstall.Install} {
		if err := install(scheme); err != nil {
			t.Fatal(err)
		}
	}
	codecs := runtimeserializer.NewCodecFactory(scheme)
	tests := []struct {
		name string
		obj  runtime.Object
		gv   schema.GroupVersion
		want string
	}{
		{
			name: "TokenCredentialRequest",
			obj:  &login.TokenCredentialRequest{Status: login.TokenCredentialRequestStatus{Message: ptr.To("authentication failed")}},
			gv:   loginv1alpha1.SchemeGroupVersion,
			want: `{"kind":"TokenCredentialRequest","apiVersion":"login.concierge.pinniped.dev/v1alpha1","metadata":{},"spec":{"authenticator":{"apiGroup":null,"kind":"","name":""}},"status":{"message":"authentication failed"}}` + "\n",
		},
		{
			name: "named TokenCredentialRequest",
			obj:  &login.TokenCredentialRequest{ObjectMeta: metav1.ObjectMeta{Name: "x", Labels: map[string]string{"a": "b"}}},
			gv:   loginv1alpha1.SchemeGroupVersion,
			want: `{"kind":"TokenCredentialRequest","apiVersion":"login.concierge.pinniped.dev/v1alpha1","metadata":{"name":"x","labels":{"a":"b"}},"spec":{"authenticator":{"apiGroup":null,"kind":"","name":""}},"status":{}}` + "\n",
		},
		{
			name: "WhoAmIRequest",
			obj:  &identity.WhoAmIRequest{Status: identity.WhoAmIRequestStatus{KubernetesUserInfo: identity.KubernetesUserInfo{User: identity.UserInfo{Username: "pinny"}}}},
			gv:   identityv1alpha1.SchemeGroupVersion,
			want: `{"kind":"WhoAmIRequest","apiVersion":"identity.concierge.pinniped.dev/v1alpha1","metadata":{},"spec":{},"status":{"kubernetesUserInfo":{"user":{"username":"pinny"}}}}` + "\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := runtime.Encode(codecs.LegacyCodec(tt.gv), tt.obj)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}
