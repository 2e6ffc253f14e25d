package oidcidp

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	idpv1alpha1 "sealion.dev/core/apis/supervisor/idp/v1alpha1"
)

// ClientCredentialsSecretValid is worded as upstream's, for each way the Secret can be wrong.
func TestClientSecretCondition(t *testing.T) {
	secret := func(typ corev1.SecretType, data map[string]string) *corev1.Secret {
		s := &corev1.Secret{Type: typ, Data: map[string][]byte{}}
		for k, v := range data {
			s.Data[k] = []byte(v)
		}
		return s
	}
	tests := []struct {
		name       string
		secret     *corev1.Secret
		wantReason string
		wantMsg    string
	}{
		{name: "valid", secret: secret(ClientSecretType, map[string]string{ClientIDKey: "id", ClientSecretKey: "shh"}),
			wantReason: "Success", wantMsg: "loaded client credentials"},
		{name: "absent", wantReason: "SecretNotFound", wantMsg: `secret "client" not found`},
		{name: "wrong type", secret: secret(corev1.SecretTypeOpaque, map[string]string{ClientIDKey: "id", ClientSecretKey: "shh"}),
			wantReason: "SecretWrongType", wantMsg: `referenced Secret "client" has wrong type "Opaque" (should be "secrets.pinniped.dev/oidc-client")`},
		{name: "no client secret", secret: secret(ClientSecretType, map[string]string{ClientIDKey: "id"}),
			wantReason: "SecretMissingKeys", wantMsg: `referenced Secret "client" is missing required keys ["clientID" "clientSecret"]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, c := clientSecretCondition("client", tt.secret)
			want := metav1.Condition{Type: idpv1alpha1.ConditionClientCredentialsSecretValid, Status: metav1.ConditionFalse, Reason: tt.wantReason, Message: tt.wantMsg}
			if tt.wantReason == "Success" {
				want.Status = metav1.ConditionTrue
			}
			if diff := cmp.Diff(want, c); diff != "" {
				t.Errorf("condition (-want +got):\n%s", diff)
			}
		})
	}
}
